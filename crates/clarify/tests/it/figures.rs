//! Every size the handbook quotes (the binary, memory, limits, per-connection costs) is stated once,
//! in the table "Figures the handbook quotes" of `BENCHMARKS.md`, and each page that quotes one
//! marks it with `<!-- figure: NAME -->` right after the figure. This test holds the three
//! together:
//!
//! - a size written on a page (a number followed by KiB, MiB, GiB, kB, MB or GB) carries a marker,
//!   and the text just before the marker ends with the figure's value from the table;
//! - each row of the table says where its value comes from, and that source is checked: a section
//!   of `BENCHMARKS.md` (`§ Heading`) must contain the value as written (or, with
//!   `§ Heading states 23.9 KiB`, that text, which the value rounds within 5 %); a file of the repository
//!   (`` `path` contains `text` ``) must contain the text; a product of another figure
//!   (`N × name`) must come within 5 % of it; `external:` names a fact outside the project
//!   (PostgreSQL's defaults), which is only stated;
//! - no row is left unused, and no marker names a row that does not exist.
//!
//! The figures that drift with the code (the binary's size, its idle memory) are measured by
//! `cargo bench -p clarify --bench http -- footprint`, which compares each with this table and
//! fails when one is off by more than a quarter: that is when the table, and with it every page,
//! is brought up to date.
//!
//! `docs/src/development.md` is left out: it records dated build measurements of particular
//! changes, not figures a user plans with; so is `docs/src/reference/` (generated from the code,
//! whose limits its own tests check).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use regex::Regex;

use crate::figures_table::{Figure, TABLE_HEADING, bytes, table};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The text of the section of `markdown` whose heading (any level) is `heading`.
fn section<'a>(markdown: &'a str, heading: &str) -> Option<&'a str> {
    let mut start = None;
    let mut offset = 0;
    for line in markdown.split_inclusive('\n') {
        if line.starts_with('#') {
            if let Some(begin) = start {
                return Some(&markdown[begin..offset]);
            }
            if line.trim_start_matches('#').trim() == heading {
                start = Some(offset);
            }
        }
        offset += line.len();
    }
    start.map(|begin| &markdown[begin..])
}

/// Checks each row's source; returns the problems, one per line.
fn check_sources(figures: &BTreeMap<String, Figure>, benchmarks: &str) -> Vec<String> {
    let contains = Regex::new(r"^`([^`]+)` contains `([^`]+)`$").expect("pattern");
    let product = Regex::new(r"^([\d,]+) × ([a-z0-9-]+)$").expect("pattern");
    let mut problems = Vec::new();
    for (name, figure) in figures {
        let at = format!("BENCHMARKS.md:{}: figure `{name}`", figure.line);
        let source = figure.source.as_str();
        if let Some(heading) = source.strip_prefix("§ ") {
            // `§ Heading states 23.9 KiB`: the section gives the measurement more precisely
            // than the pages round it; the two agree within 5 %.
            let (heading, states) = match heading.rsplit_once(" states ") {
                Some((heading, states)) => (heading, states.trim_matches('`')),
                None => (heading, figure.value.as_str()),
            };
            match section(benchmarks, heading) {
                None => problems.push(format!("{at}: no section \"{heading}\" in BENCHMARKS.md")),
                Some(text) if !text.contains(states) => problems.push(format!(
                    "{at}: the section \"{heading}\" does not state {states}"
                )),
                Some(_) => match (bytes(states), bytes(&figure.value)) {
                    (Some(measured), Some(value)) if (value / measured - 1.0).abs() > 0.05 => {
                        problems.push(format!(
                            "{at}: {} is not {states} (as \"{heading}\" states) rounded",
                            figure.value
                        ))
                    }
                    _ => {}
                },
            }
        } else if let Some(found) = contains.captures(source) {
            let path = repo().join(&found[1]);
            match std::fs::read_to_string(&path) {
                Err(err) => problems.push(format!("{at}: cannot read {}: {err}", &found[1])),
                Ok(text) if !text.contains(&found[2]) => problems.push(format!(
                    "{at}: {} does not contain `{}`",
                    &found[1], &found[2]
                )),
                Ok(_) => {}
            }
        } else if let Some(found) = product.captures(source) {
            let times: f64 = found[1].replace(',', "").parse().unwrap_or(f64::NAN);
            let of = figures.get(&found[2]).and_then(|f| bytes(&f.value));
            match (of, bytes(&figure.value)) {
                (Some(of), Some(value)) if ((times * of) / value - 1.0).abs() <= 0.05 => {}
                (Some(of), Some(value)) => problems.push(format!(
                    "{at}: {} × {} is {:.2} GiB, not {} ({:.2} GiB)",
                    &found[1],
                    &found[2],
                    times * of / 1024f64.powi(3),
                    figure.value,
                    value / 1024f64.powi(3)
                )),
                _ => problems.push(format!(
                    "{at}: `{source}` needs a figure `{}` with a size, and a size of its own",
                    &found[2]
                )),
            }
        } else if !source.starts_with("external: ") {
            problems.push(format!(
                "{at}: its source `{source}` is none of `§ Heading`, `` `path` contains `text` ``, \
                 `N × name` or `external: why`"
            ));
        }
    }
    problems
}

/// The handbook's pages this test reads: `docs/src/**/*.md` but the development page and the
/// generated reference, and the README.
fn pages() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let mut entries: Vec<_> = std::fs::read_dir(dir)
            .expect("read docs/src")
            .filter_map(Result::ok)
            .map(|e| e.path())
            .collect();
        entries.sort();
        for path in entries {
            if path.is_dir() {
                if path.file_name().is_some_and(|n| n != "reference") {
                    walk(&path, out);
                }
            } else if path.extension().is_some_and(|e| e == "md")
                && path.file_name().is_some_and(|n| n != "development.md")
            {
                out.push(path);
            }
        }
    }
    let mut out = vec![repo().join("README.md")];
    walk(&repo().join("docs/src"), &mut out);
    out
}

/// Checks one page's sizes and markers, adding to `problems` and to the names `used`.
fn check_page(
    shown: &str,
    text: &str,
    figures: &BTreeMap<String, Figure>,
    problems: &mut Vec<String>,
    used: &mut BTreeSet<String>,
) {
    let size = Regex::new(r"\b\d[\d,]*(?:\.\d+)? ?(?:KiB|MiB|GiB|kB|MB|GB)\b").expect("pattern");
    let marker = Regex::new(r"^<!-- figure: ([a-z0-9-]+) -->").expect("pattern");
    let mut fenced = false;
    for (index, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        let at = format!("{shown}:{}", index + 1);
        for found in size.find_iter(line) {
            let Some(mark) = marker.captures(&line[found.end()..]) else {
                problems.push(format!(
                    "{at}: \"{}\" is a size not marked as a quoted figure: put it in \
                     BENCHMARKS.md's table \"{}\" and write <!-- figure: NAME --> after it",
                    found.as_str(),
                    TABLE_HEADING.trim_start_matches("## ")
                ));
                continue;
            };
            let name = mark[1].to_owned();
            match figures.get(&name) {
                None => problems.push(format!("{at}: no figure `{name}` in BENCHMARKS.md")),
                Some(figure) if found.as_str() != figure.value => problems.push(format!(
                    "{at}: says {} where BENCHMARKS.md has `{name}` = {}",
                    found.as_str(),
                    figure.value
                )),
                Some(_) => {}
            }
            used.insert(name);
        }
    }
}

#[test]
fn every_size_the_handbook_quotes_is_the_one_benchmarks_md_states() {
    let benchmarks =
        std::fs::read_to_string(repo().join("BENCHMARKS.md")).expect("read BENCHMARKS.md");
    let figures = table(&benchmarks);
    let mut problems = check_sources(&figures, &benchmarks);
    let mut used = BTreeSet::new();
    for path in pages() {
        let text = std::fs::read_to_string(&path).expect("read a page");
        let shown = path
            .strip_prefix(repo())
            .unwrap_or(&path)
            .display()
            .to_string();
        check_page(&shown, &text, &figures, &mut problems, &mut used);
    }
    for (name, figure) in &figures {
        if !used.contains(name) {
            problems.push(format!(
                "BENCHMARKS.md:{}: figure `{name}` is quoted by no page; remove its row",
                figure.line
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn a_drifted_or_unmarked_figure_is_found_with_its_page_and_line() {
    let benchmarks = "# B\n\n## Footprint\n\nidle: 26 MB here, 23.9 KiB a waiter\n\n## Figures the handbook quotes\n\n\
        | name | figure | source |\n|---|---|---|\n\
        | `idle-rss` | 26 MB | § Footprint |\n\
        | `precise` | 24 KiB | § Footprint states `23.9 KiB` |\n\
        | `rounded` | 30 KiB | § Footprint states `23.9 KiB` |\n\
        | `waiter` | 24 KiB | external: measured elsewhere |\n\
        | `crowd` | 2.3 GiB | 100,000 × waiter |\n\
        | `bad` | 1 GiB | 3 × waiter |\n\
        | `gone` | 9 MB | § Nowhere |\n";
    let figures = table(benchmarks);
    let problems = check_sources(&figures, benchmarks);
    assert_eq!(problems.len(), 3, "{problems:?}");
    assert!(problems[0].contains("figure `bad`"), "{problems:?}");
    assert!(
        problems[1].contains("no section \"Nowhere\""),
        "{problems:?}"
    );
    assert!(
        problems[2].contains("`rounded`: 30 KiB is not 23.9 KiB"),
        "{problems:?}"
    );
    let page = "About 26 MB<!-- figure: idle-rss --> idle.\n```\n99 MB in a block\n```\n\
        now 30 MB<!-- figure: idle-rss -->, 7 KiB, 5 MB<!-- figure: nothing -->\n";
    let (mut problems, mut used) = (Vec::new(), BTreeSet::new());
    check_page("docs/src/x.md", page, &figures, &mut problems, &mut used);
    assert_eq!(problems.len(), 3, "{problems:?}");
    assert!(
        problems[0].starts_with("docs/src/x.md:5: says 30 MB where"),
        "{problems:?}"
    );
    assert!(
        problems[1].starts_with("docs/src/x.md:5: \"7 KiB\" is a size not marked"),
        "{problems:?}"
    );
    assert!(
        problems[2].starts_with("docs/src/x.md:5: no figure `nothing`"),
        "{problems:?}"
    );
    assert_eq!(bytes("2.3 GiB").map(|b| b.round()), Some(2469606195.0));
    assert_eq!(section("# A\n## B\nb\n## C\n", "B"), Some("## B\nb\n"));
}
