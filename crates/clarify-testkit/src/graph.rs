//! Circles in a directed graph, for the tests that keep the code's imports one-way (the
//! server's rooms, the store's and the channels' modules): the strongly connected components
//! (Tarjan's algorithm, over at most a few hundred nodes), and one circle through each, named
//! by the edges that make it.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// One circle through each strongly connected component of `edges` with more than one node:
/// the labels of the edges of a shortest way from the component's first node back to it.
pub fn circles<N: Ord + Clone, E: Clone>(edges: &BTreeMap<N, BTreeMap<N, E>>) -> Vec<Vec<E>> {
    let mut found = Vec::new();
    for component in components(edges) {
        let Some(start) = component.iter().next().cloned() else {
            continue;
        };
        if component.len() < 2 {
            continue;
        }
        let mut came_from: BTreeMap<N, (N, E)> = BTreeMap::new();
        let mut queue = VecDeque::from([start.clone()]);
        let mut closing = None;
        'search: while let Some(node) = queue.pop_front() {
            for (next, edge) in edges.get(&node).into_iter().flatten() {
                if !component.contains(next) {
                    continue;
                }
                if *next == start {
                    closing = Some((node.clone(), edge.clone()));
                    break 'search;
                }
                if !came_from.contains_key(next) {
                    came_from.insert(next.clone(), (node.clone(), edge.clone()));
                    queue.push_back(next.clone());
                }
            }
        }
        // A component of two or more nodes always has a way back to each of them.
        let Some((mut from, edge)) = closing else {
            continue;
        };
        let mut circle = vec![edge];
        while from != start {
            let Some((previous, edge)) = came_from.get(&from).cloned() else {
                break;
            };
            circle.push(edge);
            from = previous;
        }
        circle.reverse();
        found.push(circle);
    }
    found
}

/// The strongly connected components of `edges`.
fn components<N: Ord + Clone, E>(edges: &BTreeMap<N, BTreeMap<N, E>>) -> Vec<BTreeSet<N>> {
    struct Tarjan<'a, N, E> {
        edges: &'a BTreeMap<N, BTreeMap<N, E>>,
        index: BTreeMap<N, usize>,
        low: BTreeMap<N, usize>,
        stack: Vec<N>,
        on_stack: BTreeSet<N>,
        found: Vec<BTreeSet<N>>,
    }
    impl<N: Ord + Clone, E> Tarjan<'_, N, E> {
        fn visit(&mut self, node: &N) {
            let n = self.index.len();
            self.index.insert(node.clone(), n);
            self.low.insert(node.clone(), n);
            self.stack.push(node.clone());
            self.on_stack.insert(node.clone());
            let nexts: Vec<N> = self
                .edges
                .get(node)
                .map(|e| e.keys().cloned().collect())
                .unwrap_or_default();
            for next in nexts {
                if !self.index.contains_key(&next) {
                    self.visit(&next);
                    let low = self.low[node].min(self.low[&next]);
                    self.low.insert(node.clone(), low);
                } else if self.on_stack.contains(&next) {
                    let low = self.low[node].min(self.index[&next]);
                    self.low.insert(node.clone(), low);
                }
            }
            if self.low[node] == self.index[node] {
                let mut component = BTreeSet::new();
                while let Some(top) = self.stack.pop() {
                    self.on_stack.remove(&top);
                    let done = top == *node;
                    component.insert(top);
                    if done {
                        break;
                    }
                }
                self.found.push(component);
            }
        }
    }
    let mut tarjan = Tarjan {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        found: Vec::new(),
    };
    for node in edges.keys() {
        if !tarjan.index.contains_key(node) {
            tarjan.visit(node);
        }
    }
    tarjan.found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn graph(
        pairs: &[(&'static str, &'static str)],
    ) -> BTreeMap<&'static str, BTreeMap<&'static str, String>> {
        let mut edges: BTreeMap<_, BTreeMap<_, _>> = BTreeMap::new();
        for (from, to) in pairs {
            edges
                .entry(*from)
                .or_default()
                .insert(*to, format!("{from}→{to}"));
        }
        edges
    }

    #[test]
    fn a_circle_is_found_by_its_edges_and_a_line_is_not() {
        assert!(circles(&graph(&[("a", "b"), ("b", "c")])).is_empty());
        assert_eq!(
            circles(&graph(&[("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")])),
            [["a→b", "b→c", "c→a"]]
        );
    }
}
