//! The table "Figures the handbook quotes" of `BENCHMARKS.md`, read the one way both its readers
//! need: the test that holds the pages to it (`figures.rs`) and the `footprint` benchmark that
//! measures the release binary against it (`benches/http/footprint.rs` includes this file).

use std::collections::BTreeMap;

/// A row of the table: the figure as pages write it, and where it comes from.
#[derive(Debug)]
pub struct Figure {
    pub value: String,
    pub source: String,
    pub line: usize,
}

pub const TABLE_HEADING: &str = "## Figures the handbook quotes";

/// The table under [`TABLE_HEADING`]: `| name | figure | source |`.
pub fn table(benchmarks: &str) -> BTreeMap<String, Figure> {
    let mut rows = BTreeMap::new();
    let mut inside = false;
    for (index, line) in benchmarks.lines().enumerate() {
        if line.starts_with("## ") {
            inside = line.trim() == TABLE_HEADING;
            continue;
        }
        if !inside || !line.starts_with('|') {
            continue;
        }
        let cells: Vec<&str> = line
            .trim()
            .trim_matches('|')
            .split('|')
            .map(str::trim)
            .collect();
        let [name, value, source] = cells[..] else {
            panic!(
                "BENCHMARKS.md:{}: a figure's row has three cells",
                index + 1
            );
        };
        let name = name.trim_matches('`');
        if name == "name" || name.starts_with("---") {
            continue;
        }
        let previous = rows.insert(
            name.to_owned(),
            Figure {
                value: value.to_owned(),
                source: source.to_owned(),
                line: index + 1,
            },
        );
        assert!(
            previous.is_none(),
            "BENCHMARKS.md:{}: figure `{name}` is in the table twice",
            index + 1
        );
    }
    assert!(
        !rows.is_empty(),
        "BENCHMARKS.md has no table under \"{TABLE_HEADING}\""
    );
    rows
}

/// A figure's value as a number of bytes (`24 KiB`, `2.3 GiB`, `50.0 MB`), for the products.
pub fn bytes(value: &str) -> Option<f64> {
    let (number, unit) = value.trim().rsplit_once(' ')?;
    let number: f64 = number.replace(',', "").parse().ok()?;
    let scale = match unit {
        "KiB" => 1024.0,
        "MiB" => 1024.0 * 1024.0,
        "GiB" => 1024.0 * 1024.0 * 1024.0,
        "kB" => 1e3,
        "MB" => 1e6,
        "GB" => 1e9,
        _ => return None,
    };
    Some(number * scale)
}
