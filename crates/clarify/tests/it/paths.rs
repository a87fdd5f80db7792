//! Every repository path that ARCHITECTURE.md and the handbook's development page name exists.
//!
//! Both pages point into the tree rather than restate it, and a pointer is only as good as the
//! place it leads to: when a file moves, this test names every line that still points at the old
//! place. What counts as a path: a word of an inline code span, or a markdown link's target, that
//! starts with one of the tree's top-level folders (`crates/`, `docs/`, ...) or ends in a source
//! or document extension (`.rs`, `.md`, ...). Code spans are read from the repository root; a
//! link from its page's folder. In a path, a segment that is a `<placeholder>` (`<platform>`)
//! matches any folder in its folder (a placeholder names a crate, a platform, a room: never a
//! file), a placeholder within a name (`SCHEMA_<n>`) and `*` match any run of characters within
//! one segment;
//! a trailing `/` asks for a folder. Fenced code blocks are commands, not pointers, and are
//! skipped.

use std::path::{Path, PathBuf};

/// The pages checked, relative to the repository root.
const PAGES: &[&str] = &["ARCHITECTURE.md", "docs/src/development.md"];

/// Top-level folders a word must start with to be taken for a path.
const ROOTS: &[&str] = &[
    "crates/", "docs/", "scripts/", "sdks/", "fuzz/", "api/", "tools/", "deploy/", "tests/", ".ci/",
];

/// Extensions a word may end in to be taken for a path.
const EXTENSIONS: &[&str] = &[
    ".rs", ".md", ".toml", ".json", ".sh", ".py", ".ts", ".js", ".mjs", ".css", ".html", ".yml",
    ".yaml",
];

/// A path a page names, and where.
#[derive(Debug, PartialEq)]
struct Named {
    line: usize,
    path: String,
    /// The folder the path is read from, relative to the repository root.
    base: PathBuf,
}

fn repository_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Whether a word of a code span is meant as a path in the tree (not a route, a URL, a home
/// folder or a command's flag).
fn looks_like_path(word: &str) -> bool {
    if word.is_empty() || word.starts_with(['/', '~', '$', '-']) || word.contains("://") {
        return false;
    }
    ROOTS.iter().any(|root| word.starts_with(root))
        || EXTENSIONS
            .iter()
            .any(|ext| word.len() > ext.len() && word.ends_with(ext))
}

/// The words of an inline code span that look like paths, with the punctuation prose puts
/// around them removed.
fn code_paths(code: &str) -> impl Iterator<Item = String> + '_ {
    code.split_whitespace()
        .map(|word| {
            let word = word.trim_start_matches(['(', '"', '\'']);
            let word = word.trim_end_matches([',', ';', ':', ')', '"', '\'']);
            word.strip_prefix("./").unwrap_or(word).to_owned()
        })
        .filter(|word| looks_like_path(word))
}

/// The target of a markdown link, if it points into the tree: not a URL, not `mailto:`, not an
/// anchor of the same page. A `#fragment` is dropped.
fn link_path(target: &str) -> Option<String> {
    let target = target.split_whitespace().next()?;
    let target = target.split('#').next().unwrap_or_default();
    if target.is_empty() || target.contains(':') || target.starts_with('/') {
        return None;
    }
    Some(target.strip_prefix("./").unwrap_or(target).to_owned())
}

/// Every path `text` (the page at `page`, relative to the root) names, in order.
fn named_paths(page: &str, text: &str) -> Vec<Named> {
    let page_folder = Path::new(page)
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default();
    let mut named = Vec::new();
    let mut fenced = false;
    // A code span may go on past the end of a line, never past the end of a paragraph.
    let mut in_code = false;
    for (index, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            in_code = false;
            continue;
        }
        if fenced {
            continue;
        }
        if line.trim().is_empty() {
            in_code = false;
            continue;
        }
        let line_number = index + 1;
        // Alternate between prose and code spans at each backtick; a link counts only in prose.
        for (i, piece) in line.split('`').enumerate() {
            if i > 0 {
                in_code = !in_code;
            }
            if in_code {
                named.extend(code_paths(piece).map(|path| Named {
                    line: line_number,
                    path,
                    base: PathBuf::new(),
                }));
                continue;
            }
            let mut rest = piece;
            while let Some(start) = rest.find("](") {
                let after = &rest[start + 2..];
                let Some(end) = after.find(')') else { break };
                if let Some(path) = link_path(&after[..end]) {
                    named.push(Named {
                        line: line_number,
                        path,
                        base: page_folder.clone(),
                    });
                }
                rest = &after[end + 1..];
            }
        }
    }
    named
}

/// Whether `name` fits `pattern`, where `*` and a `<placeholder>` each stand for any run of
/// characters.
fn segment_matches(pattern: &str, name: &str) -> bool {
    let mut parts = Vec::new();
    let mut literal = String::new();
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        match c {
            '*' => parts.push(std::mem::take(&mut literal)),
            '<' => {
                parts.push(std::mem::take(&mut literal));
                for c in chars.by_ref() {
                    if c == '>' {
                        break;
                    }
                }
            }
            c => literal.push(c),
        }
    }
    parts.push(literal);
    let Some((first, rest)) = parts.split_first() else {
        return pattern == name;
    };
    let Some(mut remaining) = name.strip_prefix(first.as_str()) else {
        return false;
    };
    let Some((last, middle)) = rest.split_last() else {
        return remaining.is_empty();
    };
    for part in middle {
        match remaining.find(part.as_str()) {
            Some(at) => remaining = &remaining[at + part.len()..],
            None => return false,
        }
    }
    remaining.ends_with(last.as_str())
}

/// Whether `path` (read from `base`, under `root`) leads to something in the tree.
fn exists(root: &Path, base: &Path, path: &str) -> bool {
    let wants_folder = path.ends_with('/');
    let mut candidates = vec![root.join(base)];
    for segment in path.split('/').filter(|s| !s.is_empty()) {
        let mut next = Vec::new();
        for folder in &candidates {
            if segment == "." {
                next.push(folder.clone());
            } else if segment == ".." {
                next.push(folder.join(".."));
            } else if segment.contains(['*', '<']) {
                let Ok(entries) = std::fs::read_dir(folder) else {
                    continue;
                };
                let names_a_folder = segment.starts_with('<') && segment.ends_with('>');
                for entry in entries.flatten() {
                    if names_a_folder && !entry.path().is_dir() {
                        continue;
                    }
                    if segment_matches(segment, &entry.file_name().to_string_lossy()) {
                        next.push(entry.path());
                    }
                }
            } else {
                let candidate = folder.join(segment);
                if candidate.symlink_metadata().is_ok() {
                    next.push(candidate);
                }
            }
        }
        candidates = next;
    }
    candidates
        .iter()
        .any(|found| !wants_folder || found.is_dir())
}

/// The paths `page` names that lead nowhere, one line each: `page:line: path`.
fn missing(root: &Path, page: &str, text: &str) -> Vec<String> {
    named_paths(page, text)
        .into_iter()
        .filter(|named| !exists(root, &named.base, &named.path))
        .map(|named| format!("{page}:{}: {}", named.line, named.path))
        .collect()
}

#[test]
fn every_path_the_pages_name_exists() {
    let root = repository_root();
    let mut problems = Vec::new();
    let mut checked = 0;
    for page in PAGES {
        let text = std::fs::read_to_string(root.join(page))
            .unwrap_or_else(|e| panic!("cannot read {page}: {e}"));
        checked += named_paths(page, &text).len();
        problems.extend(missing(&root, page, &text));
    }
    assert!(
        checked > 20,
        "only {checked} paths found in {PAGES:?}: the reading of the pages is broken"
    );
    assert!(
        problems.is_empty(),
        "{} path(s) named in the pages lead nowhere (fix the page, or the path):\n{}",
        problems.len(),
        problems.join("\n")
    );
}

#[test]
fn a_missing_path_is_named_with_its_page_and_line() {
    let root = repository_root();
    let page = "docs/src/development.md";
    let text = "# A page\n\
        Real: `crates/clarify/Cargo.toml`, [book](../../book.toml), `./scripts/test`.\n\
        Gone: `crates/clarify/src/gone.rs` and (`Gone.md`), a span `WHERE x =\n\
        y` before a [link](reference/gone.md#part) from the page's folder.\n\
        ```sh\n\
        cargo run -p clarify -- crates/also-gone.rs\n\
        ```\n\
        Not paths: `/v1/events`, `https://example.com/x.rs`, `~/.cache/clarify/`, [a](#top).\n";
    assert_eq!(
        missing(&root, page, text),
        [
            "docs/src/development.md:3: crates/clarify/src/gone.rs",
            "docs/src/development.md:3: Gone.md",
            "docs/src/development.md:4: reference/gone.md",
        ]
    );
}

#[test]
fn placeholders_and_wildcards_match_entries_of_their_folder() {
    let root = repository_root();
    let page = "ARCHITECTURE.md";
    let text = "`crates/<crate>/Cargo.toml` `tools/ask_human.*.json` `crates/clarify-core/src/`\n\
        `crates/<crate>/no-such.toml` `tools/*.yaml` `crates/clarify/Cargo.toml/`\n\
        `tools/<tool>` `crates/clarify-channels/src/<platform>/`\n";
    // A `<placeholder>` segment is a folder: `tools/` holds only files, so `tools/<tool>` leads
    // nowhere, while every platform of the channels is a folder.
    assert_eq!(
        missing(&root, page, text),
        [
            "ARCHITECTURE.md:2: crates/<crate>/no-such.toml",
            "ARCHITECTURE.md:2: tools/*.yaml",
            "ARCHITECTURE.md:2: crates/clarify/Cargo.toml/",
            "ARCHITECTURE.md:3: tools/<tool>",
        ]
    );
    assert!(segment_matches("ask_human.*.json", "ask_human.mcp.json"));
    assert!(segment_matches("SCHEMA_<n>", "SCHEMA_12"));
    assert!(!segment_matches("ask_human.*.json", "ask_human.json5"));
}
