//! The handbook builds, and every link between its pages leads somewhere: each internal `href`
//! and `src` of the built HTML names a file that exists and, with a `#fragment`, an element with
//! that id. The README's index names every page.
//!
//! `CLARIFY_TEST_MDBOOK` names the mdBook to build with (`./scripts/test` sets it to the pinned
//! version `scripts/book` installs). Without it the test prints that it skips, or fails under
//! `CLARIFY_REQUIRE_SERVICES=1`, like the PostgreSQL tests.
//!
//! The check is written here rather than taken from a tool: mdbook-linkcheck does not run with
//! mdBook 0.5, its fork mdbook-linkcheck2 checks no `#fragment`, and lychee is a large install
//! for what is a walk over local files. The pages are read with html5gum, a WHATWG tokenizer.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Component, Path, PathBuf};
use std::process::Command;

use html5gum::{Token, Tokenizer};

fn mdbook() -> Option<PathBuf> {
    match std::env::var("CLARIFY_TEST_MDBOOK") {
        Ok(path) if !path.trim().is_empty() => Some(PathBuf::from(path.trim())),
        _ if std::env::var("CLARIFY_REQUIRE_SERVICES").as_deref() == Ok("1") => panic!(
            "CLARIFY_TEST_MDBOOK is not set, but CLARIFY_REQUIRE_SERVICES=1 requires the \
             handbook's test; set it to an mdBook (`scripts/book --install` prints one)"
        ),
        _ => {
            eprintln!(
                "skipped: the handbook's test needs CLARIFY_TEST_MDBOOK (./scripts/test sets it)"
            );
            None
        }
    }
}

/// One built page: the ids in it, and the links it makes (attribute value, as written).
#[derive(Default)]
struct Page {
    ids: BTreeSet<String>,
    links: Vec<String>,
}

fn read_page(html: &str) -> Page {
    let mut page = Page::default();
    for Ok(token) in Tokenizer::new(html) {
        let Token::StartTag(tag) = token else {
            continue;
        };
        let name = String::from_utf8_lossy(&tag.name).to_ascii_lowercase();
        for (attribute, value) in &tag.attributes {
            let attribute = String::from_utf8_lossy(attribute);
            let value = String::from_utf8_lossy(&value.value).into_owned();
            match (name.as_str(), attribute.as_ref()) {
                (_, "id") => {
                    page.ids.insert(value);
                }
                ("a", "name") => {
                    page.ids.insert(value);
                }
                ("a" | "link", "href") | ("img" | "script" | "iframe", "src") => {
                    page.links.push(value);
                }
                _ => {}
            }
        }
    }
    page
}

/// `base`/`relative`, with `.` and `..` applied; `None` when it climbs out of the book.
fn join(base: &Path, relative: &str) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for component in base.join(relative).components() {
        match component {
            Component::ParentDir => {
                if !out.pop() {
                    return None;
                }
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    Some(out)
}

/// Every broken internal link of the built book at `root`, as `page: link: what is wrong`.
fn broken_links(root: &Path) -> Vec<String> {
    let mut pages = BTreeMap::new();
    let mut stack = vec![PathBuf::new()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(root.join(&dir)).expect("the built book is readable") {
            let entry = entry.expect("a directory entry");
            let relative = dir.join(entry.file_name());
            if entry.file_type().expect("a file type").is_dir() {
                stack.push(relative);
            } else if relative.extension().is_some_and(|e| e == "html") {
                let html = std::fs::read_to_string(entry.path()).expect("a built page is UTF-8");
                pages.insert(relative, read_page(&html));
            }
        }
    }
    assert!(
        pages.len() > 10,
        "the book has only {} pages; did it build?",
        pages.len()
    );
    let mut broken = Vec::new();
    for (path, page) in &pages {
        let dir = path.parent().unwrap_or(Path::new(""));
        for link in &page.links {
            let external = link.starts_with("//")
                || link
                    .split_once(':')
                    .is_some_and(|(scheme, _)| !scheme.contains(['/', '#', '?', '.']));
            if external {
                continue;
            }
            let (target, fragment) = link.split_once('#').unwrap_or((link, ""));
            let target = target.split('?').next().unwrap_or_default();
            let file = if target.is_empty() {
                Some(path.clone())
            } else if let Some(absolute) = target.strip_prefix('/') {
                join(Path::new(""), absolute)
            } else {
                join(dir, target)
            };
            let Some(mut file) = file else {
                broken.push(format!("{}: {link}: leads out of the book", path.display()));
                continue;
            };
            if root.join(&file).is_dir() {
                file.push("index.html");
            }
            if !root.join(&file).is_file() {
                broken.push(format!("{}: {link}: no such file", path.display()));
                continue;
            }
            if fragment.is_empty() {
                continue;
            }
            match pages.get(&file) {
                Some(target) if target.ids.contains(fragment) => {}
                Some(_) => broken.push(format!(
                    "{}: {link}: {} has no element with id {fragment:?}",
                    path.display(),
                    file.display()
                )),
                None => {}
            }
        }
    }
    broken
}

#[test]
fn the_handbook_builds_and_its_links_lead_somewhere() {
    let Some(mdbook) = mdbook() else { return };
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let out = tempfile::tempdir().expect("a temporary directory");
    let build = Command::new(&mdbook)
        .arg("build")
        .arg("--dest-dir")
        .arg(out.path())
        .arg(&repo)
        .output()
        .unwrap_or_else(|e| panic!("running {}: {e}", mdbook.display()));
    let log = String::from_utf8_lossy(&build.stderr);
    assert!(build.status.success(), "mdbook build failed:\n{log}");
    // mdBook logs a missing include or a broken summary entry and goes on; here that fails.
    let complaints: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("WARN") || l.contains("ERROR"))
        .collect();
    assert!(
        complaints.is_empty(),
        "mdbook build complained:\n{}",
        complaints.join("\n")
    );
    let broken = broken_links(out.path());
    assert!(
        broken.is_empty(),
        "{} broken links in the handbook:\n{}",
        broken.len(),
        broken.join("\n")
    );
}

/// The check finds what it is for: a missing page, a missing anchor, a link out of the book.
#[test]
fn the_link_check_finds_broken_links() {
    let book = tempfile::tempdir().expect("a temporary directory");
    let page = |name: &str, body: &str| {
        let path = book.path().join(name);
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("a directory");
        std::fs::write(path, body).expect("a page");
    };
    for n in 0..10 {
        page(&format!("filler{n}.html"), "<p>filler</p>");
    }
    page(
        "index.html",
        r##"<h1 id="top">Top</h1>
            <a href="guide/page.html#usage">ok</a>
            <a href="guide/page.html#nowhere">bad anchor</a>
            <a href="missing.html">bad file</a>
            <a href="../outside.html">out</a>
            <a href="#top">ok, same page</a>
            <a href="https://example.com/x.html#y">external</a>
            <a href="mailto:a@example.com">external</a>
            <img src="images/inbox.png">"##,
    );
    page(
        "guide/page.html",
        r#"<h2 id="usage">Usage</h2><a href="../index.html#top">up</a>"#,
    );
    let broken = broken_links(book.path());
    assert_eq!(
        broken,
        [
            "index.html: guide/page.html#nowhere: guide/page.html has no element with id \"nowhere\"",
            "index.html: missing.html: no such file",
            "index.html: ../outside.html: leads out of the book",
            "index.html: images/inbox.png: no such file",
        ]
    );
}

/// The README's index of the handbook names every page the handbook's table of contents lists,
/// so a new page is found from the repository's front page too.
#[test]
fn the_readme_indexes_every_handbook_page() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let summary = std::fs::read_to_string(root.join("docs/src/SUMMARY.md")).expect("SUMMARY.md");
    let readme = std::fs::read_to_string(root.join("README.md")).expect("README.md");
    let missing: Vec<&str> = summary
        .split("](")
        .skip(1)
        .filter_map(|rest| rest.split_once(')').map(|(target, _)| target))
        .filter(|target| target.ends_with(".md"))
        .filter(|target| !readme.contains(&format!("(docs/src/{target})")))
        .collect();
    assert!(
        missing.is_empty(),
        "README.md's handbook index leaves out: {missing:?}"
    );
}
