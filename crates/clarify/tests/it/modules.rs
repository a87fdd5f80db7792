//! No two modules of a crate import each other, directly or around a circle.
//!
//! A circle makes every module on it part of the others: none can be read, moved or tested
//! alone, and a change anywhere on it may break any of them. [`assert_no_circles`] reads a
//! crate's `src/` and fails naming each circle, with the line of every import on it.
//!
//! What a module is: a file of `src/`. A folder's `mod.rs` (the crate's `lib.rs`) is the
//! folder's module; an inline `mod name { ... }` is part of its file. Tests are left out, inline
//! (`#[cfg(test)] mod tests { ... }`) or in a file of their own: they sit above the code they
//! test and may set it up with anything (a test of PostgreSQL's feed migrates a schema first)
//! without that code depending on it.
//!
//! What an import is: a path in code (read with proc-macro2's tokenizer, as the server's
//! structure test reads its rooms, so comments and strings do not count) that names a module of
//! the crate: `use crate::a::b` (with groups, `use crate::{a, b::c}`, expanded), an inline
//! `crate::a::f()`, `super::` and `self::` paths, and a path starting with one of the module's
//! own child modules (`pub use agent::Clarify` in `lib.rs`). A path reaches the longest module it
//! names: `crate::keys::ApiKey` reaches `keys`, `crate::keys::passkeys::StoredPasskey` reaches
//! `keys/passkeys.rs`. A name a module binds with `use` (a re-export, or an import its children
//! may read) is followed to its module: `crate::Actor`, re-exported by `lib.rs` from `record`,
//! reaches `record.rs`.
//!
//! One kind of import is left out: a module reaching one of its ancestors (`super::SqliteBackend`
//! from `sqlite/keys.rs`, `crate::Store` from anywhere). Rust lets a module's private items be
//! seen only by the module and its descendants, so this is the one way a folder's files share
//! what their `mod.rs` keeps private, such as the store's `Store` handle, whose fields every
//! concern's methods read. So a circle needs two modules neither of which contains the other;
//! a parent that imports its child, which reads the parent's items back, is not one.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::str::FromStr;

use clarify_testkit::source::{is_path_sep, path_at, sources, use_tree};
use proc_macro2::{Delimiter, TokenStream, TokenTree};

/// A module, as its path below the crate root: `[]` is the root, `["sqlite", "keys"]` is
/// `sqlite/keys.rs`.
type Module = Vec<String>;

/// One import: where it is written, the path as written, and the module it reaches.
#[derive(Debug, Clone)]
struct Import {
    file: String,
    line: usize,
    path: String,
    target: Module,
}

impl std::fmt::Display for Import {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "src/{}:{}: `{}`", self.file, self.line, self.path)
    }
}

/// The module of a file below `src/`: `lib.rs` is `[]`, `keys/mod.rs` is `["keys"]`,
/// `keys/passkeys.rs` is `["keys", "passkeys"]`.
fn module_of(file: &str) -> Module {
    let mut segments: Module = file
        .trim_end_matches(".rs")
        .split('/')
        .map(str::to_owned)
        .collect();
    if matches!(
        segments.last().map(String::as_str),
        Some("mod" | "lib" | "main")
    ) {
        segments.pop();
    }
    segments
}

/// What the tokens of one file are read against: the crate's modules, the names their `use`
/// lines bind, and which modules are tests.
struct Crate {
    modules: BTreeSet<Module>,
    /// (module, name it binds with `use`) → the path, from the crate root, of what it names.
    bindings: BTreeMap<(Module, String), Vec<String>>,
    /// Modules declared `#[cfg(test)] mod name;`, each a file of its own.
    tests: BTreeSet<Module>,
}

impl Crate {
    fn of(files: &[(String, String)]) -> Self {
        let mut krate = Crate {
            modules: files.iter().map(|(file, _)| module_of(file)).collect(),
            bindings: BTreeMap::new(),
            tests: BTreeSet::new(),
        };
        let (mut bindings, mut tests) = (BTreeMap::new(), BTreeSet::new());
        for (file, text) in files {
            walk(
                &krate,
                &module_of(file),
                tokens(file, text),
                &mut |found| match found {
                    Found::Binding { module, name, path } => {
                        bindings.insert((module, name), path);
                    }
                    Found::TestFile(module) => {
                        tests.insert(module);
                    }
                    Found::Path { .. } => {}
                },
            );
        }
        krate.bindings = bindings;
        krate.tests = tests;
        krate
    }

    /// Whether `module` is a test file, or in one.
    fn is_test(&self, module: &[String]) -> bool {
        self.tests.iter().any(|t| module.starts_with(t))
    }

    /// `segments` (as written in `module`) from the crate root, if it starts in this crate:
    /// with `crate`, `super`, `self`, or one of `module`'s own children.
    fn absolute(&self, module: &[String], segments: &[String]) -> Option<Vec<String>> {
        let first = segments.first()?;
        let (mut base, rest) = match first.as_str() {
            "crate" => (Vec::new(), &segments[1..]),
            "self" => (module.to_vec(), &segments[1..]),
            "super" => {
                let mut base = module.to_vec();
                let mut rest = segments;
                while rest.first().map(String::as_str) == Some("super") {
                    base.pop();
                    rest = &rest[1..];
                }
                (base, rest)
            }
            _ => {
                let mut child = module.to_vec();
                child.push(first.clone());
                if !self.modules.contains(&child) {
                    return None;
                }
                (module.to_vec(), segments)
            }
        };
        base.extend(rest.iter().filter(|s| *s != "self" && *s != "*").cloned());
        Some(base)
    }

    /// The module an absolute path reaches: the longest module it names, and where that module
    /// binds the next name with `use`, the module that name comes from.
    fn reach(&self, path: &[String]) -> Module {
        let mut path = path.to_vec();
        // A re-export of a re-export is followed too; a bound keeps a mistaken loop finite.
        for _ in 0..8 {
            let module = (0..=path.len())
                .rev()
                .map(|n| path[..n].to_vec())
                .find(|m| self.modules.contains(m))
                .unwrap_or_default();
            match path
                .get(module.len())
                .and_then(|name| self.bindings.get(&(module.clone(), name.clone())))
            {
                Some(source) if *source != path[..=module.len()] => {
                    let mut next = source.clone();
                    next.extend(path[module.len() + 1..].iter().cloned());
                    path = next;
                }
                _ => return module,
            }
        }
        Vec::new()
    }
}

fn tokens(file: &str, text: &str) -> TokenStream {
    TokenStream::from_str(text).unwrap_or_else(|e| panic!("src/{file} does not tokenize: {e:?}"))
}

/// What [`walk`] finds.
enum Found {
    /// A path that starts in the crate: its line, as written, and from the crate root.
    Path {
        line: usize,
        written: String,
        path: Vec<String>,
    },
    /// A name a `use` binds in `module`, and the path from the crate root it names.
    Binding {
        module: Module,
        name: String,
        path: Vec<String>,
    },
    /// A module declared `#[cfg(test)] mod name;`.
    TestFile(Module),
}

/// Reads `tokens` written in `module` (an inline `mod` block goes one deeper, an inline
/// `#[cfg(test)]` one is skipped), telling `found` what it finds.
fn walk(krate: &Crate, module: &[String], tokens: TokenStream, found: &mut dyn FnMut(Found)) {
    let tokens: Vec<TokenTree> = tokens.into_iter().collect();
    let mut i = 0;
    while i < tokens.len() {
        match &tokens[i] {
            TokenTree::Ident(m) if m == "mod" => {
                if let Some(TokenTree::Ident(name)) = tokens.get(i + 1) {
                    let mut inner = module.to_vec();
                    inner.push(name.to_string());
                    let test = is_cfg_test(&tokens[..i]);
                    match tokens.get(i + 2) {
                        Some(TokenTree::Group(body)) if body.delimiter() == Delimiter::Brace => {
                            if !test {
                                walk(krate, &inner, body.stream(), found);
                            }
                            i += 3;
                            continue;
                        }
                        _ if test => found(Found::TestFile(inner)),
                        _ => {}
                    }
                }
            }
            TokenTree::Ident(u) if u == "use" => {
                let end = (i..tokens.len())
                    .find(|&j| matches!(&tokens[j], TokenTree::Punct(p) if p.as_char() == ';'))
                    .unwrap_or(tokens.len());
                for (segments, name) in use_tree(&tokens[i + 1..end]) {
                    if let Some(path) = krate.absolute(module, &segments) {
                        found(Found::Binding {
                            module: module.to_vec(),
                            name,
                            path,
                        });
                    }
                }
            }
            TokenTree::Ident(start) if is_path_sep(&tokens, i + 1) => {
                let line = start.span().start().line;
                let (paths, next) = path_at(&tokens, i);
                for segments in paths {
                    if let Some(path) = krate.absolute(module, &segments) {
                        found(Found::Path {
                            line,
                            written: segments.join("::"),
                            path,
                        });
                    }
                }
                i = next;
                continue;
            }
            TokenTree::Group(group) => walk(krate, module, group.stream(), found),
            _ => {}
        }
        i += 1;
    }
}

/// Whether the attributes and visibility just before a `mod` include `#[cfg(test)]`.
fn is_cfg_test(before: &[TokenTree]) -> bool {
    let mut rest = before;
    loop {
        match rest {
            [head @ .., TokenTree::Ident(p)] if p == "pub" => rest = head,
            [head @ .., TokenTree::Ident(p), TokenTree::Group(g)]
                if p == "pub" && g.delimiter() == Delimiter::Parenthesis =>
            {
                rest = head;
            }
            [
                head @ ..,
                TokenTree::Punct(hash),
                TokenTree::Group(attribute),
            ] if hash.as_char() == '#' && attribute.delimiter() == Delimiter::Bracket => {
                let text: String = attribute
                    .stream()
                    .to_string()
                    .chars()
                    .filter(|c| !c.is_whitespace())
                    .collect();
                if text == "cfg(test)" {
                    return true;
                }
                rest = head;
            }
            _ => return false,
        }
    }
}

/// The import graph of `files`: for each module, the modules it imports, with one import each.
/// Test files are left out.
fn graph(files: &[(String, String)]) -> BTreeMap<Module, BTreeMap<Module, Import>> {
    let krate = Crate::of(files);
    let mut edges: BTreeMap<Module, BTreeMap<Module, Import>> = BTreeMap::new();
    for (file, text) in files {
        let module = module_of(file);
        if krate.is_test(&module) {
            continue;
        }
        let from = edges.entry(module.clone()).or_default();
        walk(&krate, &module, tokens(file, text), &mut |found| {
            let Found::Path {
                line,
                written,
                path,
            } = found
            else {
                return;
            };
            let target = krate.reach(&path);
            if !module.starts_with(&target) {
                from.entry(target.clone()).or_insert(Import {
                    file: file.clone(),
                    line,
                    path: written,
                    target,
                });
            }
        });
    }
    edges
}

/// One circle through each strongly connected component of the import graph, as the imports
/// that make it.
fn circles(edges: &BTreeMap<Module, BTreeMap<Module, Import>>) -> Vec<Vec<Import>> {
    clarify_testkit::graph::circles(edges)
}

/// A circle as its files in order, then the import that leads from each to the next.
fn describe(circle: &[Import]) -> String {
    let mut files: Vec<String> = circle.iter().map(|i| format!("src/{}", i.file)).collect();
    files.push(files.first().cloned().unwrap_or_default());
    let imports: Vec<String> = circle.iter().map(|i| format!("  {i}")).collect();
    format!("{}:\n{}", files.join(" → "), imports.join("\n"))
}

/// Fails naming every import circle among the modules of the crate in `crate_dir`.
fn assert_no_circles(crate_dir: &Path) {
    let found = circles(&graph(&sources(crate_dir)));
    assert!(
        found.is_empty(),
        "modules of {} import each other in a circle; move what both sides need into a module \
         below them, or split the module that holds it:\n{}",
        crate_dir.display(),
        found
            .iter()
            .map(|c| describe(c))
            .collect::<Vec<_>>()
            .join("\n")
    );
}

fn crate_dir(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(name)
}

#[test]
fn the_store_has_no_import_circle() {
    assert_no_circles(&crate_dir("clarify-store"));
}

#[test]
fn the_channels_have_no_import_circle() {
    assert_no_circles(&crate_dir("clarify-channels"));
}

/// The checker itself, on made-up sources, so the tests above can fail.
mod checker {
    use super::*;

    fn files(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(f, t)| ((*f).to_owned(), (*t).to_owned()))
            .collect()
    }

    /// Each import of `file` in `tree`, as `path → target file's module`.
    fn imports(tree: &[(String, String)], module: &[&str]) -> Vec<String> {
        let module: Module = module.iter().map(|s| (*s).to_owned()).collect();
        graph(tree)
            .remove(&module)
            .unwrap_or_default()
            .into_values()
            .map(|i| format!("{} → {}", i.path, i.target.join("/")))
            .collect()
    }

    #[test]
    fn every_way_of_writing_an_import_counts() {
        let tree = files(&[
            (
                "lib.rs",
                "mod a; mod b; mod c; mod d;\npub use d::Deep as Shallow;\n",
            ),
            (
                "a/mod.rs",
                "mod child;\n\
                 #[cfg(test)]\n\
                 mod checks;\n\
                 use crate::{b::{self, X}, c::Y};\n\
                 fn f() { tokio::select! { _ = crate::Shallow::go() => {} } }\n\
                 fn g() { child::run(); }\n\
                 // crate::e::not_code\n\
                 const S: &str = \"crate::e::not_a_path\";\n\
                 mod inline { use super::*; use super::super::e::Z; }\n\
                 #[cfg(test)]\n\
                 mod tests { use crate::f::W; }\n",
            ),
            ("a/child.rs", "use super::helper;\n"),
            ("a/checks.rs", "use crate::f::W;\n"),
            ("b.rs", ""),
            ("c.rs", ""),
            ("d.rs", ""),
            ("e.rs", ""),
            ("f.rs", ""),
        ]);
        assert_eq!(
            imports(&tree, &["a"]),
            [
                "child::run → a/child",
                "crate::b::self → b",
                "crate::c::Y → c",
                "crate::Shallow::go → d",
                "super::super::e::Z → e",
            ]
        );
        assert!(
            imports(&tree, &["a", "child"]).is_empty(),
            "a child reading its parent is not an import that makes a circle"
        );
        assert!(
            imports(&tree, &["a", "checks"]).is_empty(),
            "tests are left out"
        );
    }

    #[test]
    fn a_circle_is_named_with_its_imports() {
        let tree = files(&[
            (
                "lib.rs",
                "mod audit; mod codec; mod keys;\npub use keys::Role;\n",
            ),
            ("audit.rs", "use crate::codec::EventParts;\n"),
            ("codec.rs", "use crate::Role;\n"),
            ("keys/mod.rs", "fn digest() { crate::audit::link(); }\n"),
        ]);
        let found = circles(&graph(&tree));
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(
            describe(&found[0]),
            "src/audit.rs → src/codec.rs → src/keys/mod.rs → src/audit.rs:\n  \
             src/audit.rs:1: `crate::codec::EventParts`\n  \
             src/codec.rs:1: `crate::Role`\n  \
             src/keys/mod.rs:1: `crate::audit::link`"
        );
    }

    #[test]
    fn siblings_in_a_folder_make_a_circle_and_parents_do_not() {
        let tree = files(&[
            (
                "lib.rs",
                "mod sqlite; pub struct Store;\nuse sqlite::Backend;\n",
            ),
            (
                "sqlite/mod.rs",
                "mod insights; mod requests; pub struct Backend;\n",
            ),
            (
                "sqlite/insights.rs",
                "use super::requests::row_parts;\nuse crate::Store;\n",
            ),
            (
                "sqlite/requests.rs",
                "use super::Backend;\nfn f() { super::insights::count(); }\n",
            ),
        ]);
        let found = circles(&graph(&tree));
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(
            describe(&found[0]).starts_with("src/sqlite/insights.rs → src/sqlite/requests.rs"),
            "{}",
            describe(&found[0])
        );
    }
}
