//! Paths in Rust source read as tokens (`proc-macro2`), for the tests that keep the code's
//! imports one-way: the server's rooms and the store's and channels' modules. Tokens rather than
//! text, so that comments and strings never count as an import.

use std::path::Path;

use proc_macro2::{Delimiter, Spacing, TokenStream, TokenTree};

/// The files of `crate_dir/src/`, as (path below `src/`, text), sorted.
pub fn sources(crate_dir: &Path) -> Vec<(String, String)> {
    let src = crate_dir.join("src");
    let mut files = Vec::new();
    let mut dirs = vec![src.clone()];
    while let Some(dir) = dirs.pop() {
        let entries = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{} is not readable: {e}", dir.display()));
        for entry in entries {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let name = path
                    .strip_prefix(&src)
                    .expect("below src/")
                    .to_string_lossy()
                    .replace('\\', "/");
                let text = std::fs::read_to_string(&path).expect("a source file is UTF-8");
                files.push((name, text));
            }
        }
    }
    files.sort();
    files
}

/// Whether `tokens[i..]` starts with `::`.
pub fn is_path_sep(tokens: &[TokenTree], i: usize) -> bool {
    matches!(
        (tokens.get(i), tokens.get(i + 1)),
        (Some(TokenTree::Punct(a)), Some(TokenTree::Punct(b)))
            if a.as_char() == ':' && a.spacing() == Spacing::Joint && b.as_char() == ':'
    )
}

/// The path starting at `tokens[i]`, expanded over `{...}` groups into one segment list per
/// item, and the index after it.
pub fn path_at(tokens: &[TokenTree], mut i: usize) -> (Vec<Vec<String>>, usize) {
    let mut prefix = Vec::new();
    loop {
        match tokens.get(i) {
            Some(TokenTree::Ident(ident)) => {
                prefix.push(ident.to_string());
                i += 1;
            }
            Some(TokenTree::Punct(p)) if p.as_char() == '*' => {
                prefix.push("*".to_owned());
                return (vec![prefix], i + 1);
            }
            Some(TokenTree::Group(group)) if group.delimiter() == Delimiter::Brace => {
                let paths = use_tree_items(group.stream())
                    .into_iter()
                    .map(|(item, _)| prefix.iter().cloned().chain(item).collect())
                    .collect();
                return (paths, i + 1);
            }
            _ => return (vec![prefix], i),
        }
        if is_path_sep(tokens, i) {
            i += 2;
        } else {
            return (vec![prefix], i);
        }
    }
}

/// The paths a `use` tree (the tokens between `use` and `;`) names, each with the name it binds:
/// its last segment, or its `as` alias.
pub fn use_tree(tokens: &[TokenTree]) -> Vec<(Vec<String>, String)> {
    let mut prefix: Vec<String> = Vec::new();
    let mut i = 0;
    while let Some(token) = tokens.get(i) {
        match token {
            TokenTree::Group(group) if group.delimiter() == Delimiter::Brace => {
                return use_tree_items(group.stream())
                    .into_iter()
                    .map(|(item, name)| {
                        // `a::{self}` binds `a`.
                        let name = match (name.as_str(), prefix.last()) {
                            ("self", Some(last)) => last.clone(),
                            _ => name,
                        };
                        (prefix.iter().cloned().chain(item).collect(), name)
                    })
                    .collect();
            }
            TokenTree::Ident(ident) if ident == "as" => {
                let alias = tokens
                    .get(i + 1)
                    .map(ToString::to_string)
                    .unwrap_or_default();
                return vec![(prefix, alias)];
            }
            TokenTree::Ident(ident) => prefix.push(ident.to_string()),
            TokenTree::Punct(p) if p.as_char() == '*' => prefix.push("*".to_owned()),
            _ => {}
        }
        i += 1;
    }
    let name = prefix.last().cloned().unwrap_or_default();
    vec![(prefix, name)]
}

/// The items of a `use` group's braces, each expanded over nested groups.
pub fn use_tree_items(stream: TokenStream) -> Vec<(Vec<String>, String)> {
    let tokens: Vec<TokenTree> = stream.into_iter().collect();
    tokens
        .split(|t| matches!(t, TokenTree::Punct(p) if p.as_char() == ','))
        .filter(|item| !item.is_empty())
        .flat_map(use_tree)
        .collect()
}
