//! The server's rooms keep their shape: `src/`'s folders import each other in one direction
//! only, `shared/` imports nothing else of the crate, and each folder's `mod.rs` opens with its
//! rule.
//!
//! The source is read with proc-macro2's tokenizer, so a path counts wherever it is written in
//! code (a `use` line, a `use crate::{a, b}` group, an expression, a macro's or an attribute's
//! arguments) and never in a comment or a string.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::str::FromStr;

use clarify_testkit::source::{is_path_sep, path_at};
use proc_macro2::{Delimiter, TokenStream, TokenTree};

/// What the crate root is called in the import graph: it assembles every room, so nothing may
/// refer back to it.
const ROOT: &str = "lib.rs";

/// One path from a file to a module of the crate outside the file's own folder.
#[derive(Debug, Clone)]
struct Reference {
    file: String,
    line: usize,
    /// As written, segments joined by `::` (a group shows the one item that leaves the folder).
    path: String,
    /// The top-level module it reaches (a folder, a file of `src/`, or [`ROOT`]).
    target: String,
}

impl std::fmt::Display for Reference {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "src/{}:{}: `{}`", self.file, self.line, self.path)
    }
}

/// The files of the server's `src/`, as (path below `src/`, text).
fn server_sources() -> Vec<(String, String)> {
    clarify_testkit::source::sources(Path::new(env!("CARGO_MANIFEST_DIR")))
}

/// The module path of a file below `src/`: `lib.rs` is `[]`, `api/mod.rs` is `["api"]`,
/// `api/requests.rs` is `["api", "requests"]`.
fn module_of(file: &str) -> Vec<String> {
    let stem = file.trim_end_matches(".rs");
    let mut segments: Vec<String> = stem.split('/').map(str::to_owned).collect();
    if matches!(segments.last().map(String::as_str), Some("mod" | "lib")) {
        segments.pop();
    }
    segments
}

/// The top-level module a file belongs to: its folder, its own name for a file of `src/`, or
/// [`ROOT`].
fn home_of(file: &str) -> String {
    module_of(file)
        .first()
        .cloned()
        .unwrap_or_else(|| ROOT.to_owned())
}

/// Every path in `source` (the file `file`) that reaches a top-level module other than the
/// file's own; `homes` are the crate's top-level modules, and a path to anything else of the
/// crate reaches the root.
fn references(file: &str, source: &str, homes: &BTreeSet<String>) -> Vec<Reference> {
    let tokens = TokenStream::from_str(source)
        .unwrap_or_else(|e| panic!("src/{file} does not tokenize: {e:?}"));
    let mut found = Vec::new();
    let at = Place {
        file,
        module: module_of(file),
        homes,
    };
    walk(&at, tokens, &mut found);
    let home = home_of(file);
    found.retain(|r| r.target != home);
    found
}

/// Where tokens are read: the file, the module (inline `mod` blocks included), the crate's
/// top-level modules.
struct Place<'a> {
    file: &'a str,
    module: Vec<String>,
    homes: &'a BTreeSet<String>,
}

fn walk(at: &Place<'_>, tokens: TokenStream, found: &mut Vec<Reference>) {
    let tokens: Vec<TokenTree> = tokens.into_iter().collect();
    let mut i = 0;
    while i < tokens.len() {
        match &tokens[i] {
            // `mod name { ... }`: what is inside is relative to `name`.
            TokenTree::Ident(m) if m == "mod" => {
                if let (Some(TokenTree::Ident(name)), Some(TokenTree::Group(body))) =
                    (tokens.get(i + 1), tokens.get(i + 2))
                    && body.delimiter() == Delimiter::Brace
                {
                    let mut module = at.module.clone();
                    module.push(name.to_string());
                    let inner = Place { module, ..*at };
                    walk(&inner, body.stream(), found);
                    i += 3;
                    continue;
                }
            }
            TokenTree::Ident(start)
                if (start == "crate" || start == "super") && is_path_sep(&tokens, i + 1) =>
            {
                let line = start.span().start().line;
                let (paths, next) = path_at(&tokens, i);
                for segments in paths {
                    found.push(Reference {
                        file: at.file.to_owned(),
                        line,
                        path: segments.join("::"),
                        target: resolve(&at.module, &segments, at.homes),
                    });
                }
                i = next;
                continue;
            }
            TokenTree::Group(group) => walk(at, group.stream(), found),
            _ => {}
        }
        i += 1;
    }
}

/// The top-level module `segments` (starting with `crate` or `super`, written in `module`)
/// reaches: one of `homes`, or the root for the root's own items.
fn resolve(module: &[String], segments: &[String], homes: &BTreeSet<String>) -> String {
    let mut base: Vec<String> = module.to_vec();
    let mut rest = segments;
    match rest.first().map(String::as_str) {
        Some("crate") => {
            base.clear();
            rest = &rest[1..];
        }
        _ => {
            while rest.first().map(String::as_str) == Some("super") {
                base.pop();
                rest = &rest[1..];
            }
        }
    }
    match (base.first(), rest.first()) {
        (Some(top), _) => top.clone(),
        (None, Some(first)) if homes.contains(first) => first.clone(),
        // `crate::AppState`, `crate::{self, ..}`, `crate::*`: the root's own items.
        (None, _) => ROOT.to_owned(),
    }
}

/// The top-level modules of the crate: each folder and file of `src/`, and the root.
fn homes(files: &[(String, String)]) -> BTreeSet<String> {
    files.iter().map(|(file, _)| home_of(file)).collect()
}

/// References from `shared/` to anything else of the crate.
fn shared_violations(files: &[(String, String)]) -> Vec<Reference> {
    let homes = homes(files);
    files
        .iter()
        .filter(|(file, _)| home_of(file) == "shared")
        .flat_map(|(file, text)| references(file, text, &homes))
        .collect()
}

/// The import graph between top-level modules, one example reference per edge; the root
/// reaches every module.
fn graph(files: &[(String, String)]) -> BTreeMap<String, BTreeMap<String, Reference>> {
    let homes = homes(files);
    let mut edges: BTreeMap<String, BTreeMap<String, Reference>> = BTreeMap::new();
    for home in &homes {
        edges.entry(home.clone()).or_default();
    }
    let modules: Vec<String> = edges.keys().filter(|h| *h != ROOT).cloned().collect();
    for module in modules {
        let implied = Reference {
            file: ROOT.to_owned(),
            line: 0,
            path: format!("mod {module}"),
            target: module.clone(),
        };
        edges
            .entry(ROOT.to_owned())
            .or_default()
            .entry(module)
            .or_insert(implied);
    }
    for (file, text) in files {
        for reference in references(file, text, &homes) {
            edges
                .entry(home_of(file))
                .or_default()
                .entry(reference.target.clone())
                .or_insert(reference);
        }
    }
    edges
}

/// Every circle in `edges`, each as the references that close it.
fn cycles(edges: &BTreeMap<String, BTreeMap<String, Reference>>) -> Vec<Vec<Reference>> {
    clarify_testkit::graph::circles(edges)
}

fn describe(circle: &[Reference]) -> String {
    let homes: Vec<String> = circle.iter().map(|r| home_of(&r.file)).collect();
    let lines: Vec<String> = circle.iter().map(|r| format!("  {r}")).collect();
    format!(
        "{} → {}:\n{}",
        homes.join(" → "),
        homes.first().cloned().unwrap_or_default(),
        lines.join("\n")
    )
}

#[test]
fn shared_uses_nothing_else_of_the_crate() {
    let violations = shared_violations(&server_sources());
    assert!(
        violations.is_empty(),
        "shared/ must use nothing else of the crate, so every room may use it; move what these \
         name into shared/ or leave it to the room that needs it:\n{}",
        violations
            .iter()
            .map(|r| format!("  {r}"))
            .collect::<Vec<_>>()
            .join("\n")
    );
}

#[test]
fn the_rooms_import_each_other_in_one_direction() {
    let circles = cycles(&graph(&server_sources()));
    assert!(
        circles.is_empty(),
        "src/'s folders import each other in a circle; move the piece both sides need down (into \
         shared/ or state/), or turn one reference around:\n{}",
        circles
            .iter()
            .map(|c| describe(c))
            .collect::<Vec<_>>()
            .join("\n")
    );
}

#[test]
fn each_folder_opens_with_its_rule() {
    let files = server_sources();
    let folders: BTreeSet<String> = files
        .iter()
        .filter_map(|(file, _)| file.split_once('/').map(|(dir, _)| dir.to_owned()))
        .collect();
    assert!(
        folders.len() >= 5,
        "expected the rooms as folders, found {folders:?}"
    );
    for folder in folders {
        let mod_rs = format!("{folder}/mod.rs");
        let text = files
            .iter()
            .find(|(file, _)| *file == mod_rs)
            .map(|(_, text)| text.as_str())
            .unwrap_or_else(|| panic!("src/{folder}/ has no mod.rs to state its rule"));
        let first = text.lines().next().unwrap_or_default();
        assert!(
            first.starts_with("//! ") && first.len() > 20,
            "src/{mod_rs} must open with a module doc whose first line is the room's rule, not {first:?}"
        );
    }
}

/// The checker itself, on made-up sources, so the tests above can fail.
mod checker {
    use super::*;

    fn files(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(f, t)| ((*f).to_owned(), (*t).to_owned()))
            .collect()
    }

    fn paths(found: &[Reference]) -> Vec<String> {
        found.iter().map(|r| r.to_string()).collect()
    }

    #[test]
    fn every_way_of_writing_a_path_counts() {
        let source = "use crate::{api::render, state::AppState};\n\
                      use crate::shared::{self, error::ApiError};\n\
                      fn f() {\n\
                      \x20   tokio::select! { () = crate::web::html::page() => {} }\n\
                      \x20   let _ = super::super::chat::answer::act;\n\
                      }\n\
                      #[utoipa::path(get, responses((status = 200, body = crate::protocols::Body)))]\n\
                      fn g() {}\n\
                      use crate::AppState;\n";
        let homes = [
            "api",
            "chat",
            "middleware",
            "protocols",
            "shared",
            "state",
            "web",
            ROOT,
        ]
        .map(str::to_owned)
        .into();
        let found = references("middleware/auth.rs", source, &homes);
        assert_eq!(
            paths(&found),
            [
                "src/middleware/auth.rs:1: `crate::api::render`",
                "src/middleware/auth.rs:1: `crate::state::AppState`",
                "src/middleware/auth.rs:2: `crate::shared::self`",
                "src/middleware/auth.rs:2: `crate::shared::error::ApiError`",
                "src/middleware/auth.rs:4: `crate::web::html::page`",
                "src/middleware/auth.rs:5: `super::super::chat::answer::act`",
                "src/middleware/auth.rs:7: `crate::protocols::Body`",
                "src/middleware/auth.rs:9: `crate::AppState`",
            ]
        );
        let targets: Vec<&str> = found.iter().map(|r| r.target.as_str()).collect();
        assert_eq!(
            targets,
            [
                "api",
                "state",
                "shared",
                "shared",
                "web",
                "chat",
                "protocols",
                ROOT
            ]
        );
    }

    #[test]
    fn comments_strings_own_folder_and_visibility_do_not_count() {
        let source = "//! See crate::api::render.\n\
                      /// Unlike [`crate::web::page`].\n\
                      pub(crate) fn f() -> &'static str { \"crate::chat::x\" }\n\
                      /* crate::api::y */\n\
                      use crate::shared::wire::time;\n\
                      use super::error::ApiError;\n\
                      mod tests { use super::*; use super::super::sign::hex; }\n";
        let homes = ["api", "chat", "shared", ROOT].map(str::to_owned).into();
        assert!(references("shared/extract.rs", source, &homes).is_empty());
    }

    #[test]
    fn shared_importing_a_sibling_is_named() {
        let tree = files(&[
            ("shared/mod.rs", "//! The rule.\npub mod error;\n"),
            (
                "shared/error.rs",
                "use crate::shared::wire::RecordBody;\nuse crate::{api::render, state};\n",
            ),
        ]);
        assert_eq!(
            paths(&shared_violations(&tree)),
            [
                "src/shared/error.rs:2: `crate::api::render`",
                "src/shared/error.rs:2: `crate::state`",
            ]
        );
    }

    #[test]
    fn a_circle_between_folders_is_named_with_its_references() {
        let tree = files(&[
            ("lib.rs", "pub mod api; pub mod web; pub mod shared;\n"),
            (
                "api/mod.rs",
                "use crate::shared::x;\nfn f() { crate::web::links::url(); }\n",
            ),
            ("web/mod.rs", "//! Rule.\n"),
            ("web/links.rs", "use crate::api::render;\n"),
            ("shared/mod.rs", ""),
        ]);
        let circles = cycles(&graph(&tree));
        assert_eq!(circles.len(), 1, "{circles:?}");
        assert_eq!(
            describe(&circles[0]),
            "api → web → api:\n  src/api/mod.rs:2: `crate::web::links::url`\n  \
             src/web/links.rs:1: `crate::api::render`"
        );
        let fine = files(&[
            ("lib.rs", "pub mod api; pub mod web;\n"),
            ("api/mod.rs", "use crate::shared::x;\n"),
            ("web/links.rs", "use crate::api::render;\n"),
            ("shared/mod.rs", ""),
        ]);
        assert!(cycles(&graph(&fine)).is_empty());
    }

    #[test]
    fn reaching_back_to_the_crate_root_is_a_circle() {
        let tree = files(&[
            ("lib.rs", "pub mod api;\npub struct AppState;\n"),
            ("api/mod.rs", "use crate::AppState;\n"),
        ]);
        let circles = cycles(&graph(&tree));
        assert_eq!(circles.len(), 1);
        assert!(
            describe(&circles[0]).contains("src/api/mod.rs:1: `crate::AppState`"),
            "{}",
            describe(&circles[0])
        );
    }
}
