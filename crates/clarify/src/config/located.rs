//! Where in the file a key is, so that each problem names its line and column; and the
//! variables `<key>_env` settings name, all checked at once before any table is read.
//!
//! The checks name a problem by its key's path (`channels[0].bot_token_env`,
//! `identities."slak:U1"`); [`Document::at`] finds the deepest part of that path the file holds
//! and gives its position. A path the file does not hold at all (a key that is missing) is placed
//! at the table that should hold it.

use toml::Spanned;
use toml::de::{DeTable, DeValue};

/// The file's text and, when it parses as TOML, its spanned document.
pub(super) struct Document<'i> {
    text: &'i str,
    root: Option<Spanned<DeTable<'i>>>,
}

impl<'i> Document<'i> {
    pub(super) fn new(text: &'i str) -> Self {
        Self {
            text,
            root: DeTable::parse(text).ok(),
        }
    }

    /// `:line:column` of the deepest part of `path` the file holds, or nothing.
    pub(super) fn at(&self, path: &str) -> String {
        let Some(root) = &self.root else {
            return String::new();
        };
        let mut table = Some(root.get_ref());
        let mut array: Option<&[Spanned<DeValue<'i>>]> = None;
        let mut found = None;
        for segment in segments(path) {
            let value = match segment {
                Segment::Key(key) => table.and_then(|t| {
                    t.iter()
                        .find(|(k, _)| k.get_ref() == key)
                        .map(|(k, v)| (k.span(), v))
                }),
                Segment::Index(i) => array.and_then(|a| a.get(i)).map(|v| (v.span(), v)),
            };
            let Some((span, value)) = value else { break };
            found = Some(span.start);
            table = None;
            array = None;
            match value.get_ref() {
                DeValue::Table(t) => table = Some(t),
                DeValue::Array(a) => array = Some(a),
                _ => {}
            }
        }
        found.map_or_else(String::new, |offset| position(self.text, offset))
    }

    /// Every `<key>_env = "NAME"` whose variable `env` does not give (or gives empty), as its
    /// path and the variable's name.
    pub(super) fn unset_variables(
        &self,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Vec<(String, String)> {
        let mut unset = Vec::new();
        if let Some(root) = &self.root {
            walk_table(root.get_ref(), "", env, &mut unset);
        }
        unset
    }
}

fn walk_table(
    table: &DeTable<'_>,
    at: &str,
    env: &dyn Fn(&str) -> Option<String>,
    unset: &mut Vec<(String, String)>,
) {
    for (key, value) in table.iter() {
        let key: &str = key.get_ref();
        let path = if at.is_empty() {
            key.to_owned()
        } else {
            format!("{at}.{key}")
        };
        match value.get_ref() {
            DeValue::String(name)
                if key.ends_with("_env") && env(name).is_none_or(|v| v.is_empty()) =>
            {
                unset.push((path, name.to_string()));
            }
            DeValue::Table(t) => walk_table(t, &path, env, unset),
            DeValue::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    if let DeValue::Table(t) = item.get_ref() {
                        walk_table(t, &format!("{path}[{i}]"), env, unset);
                    }
                }
            }
            _ => {}
        }
    }
}

/// `:line:column` (both from 1) of the byte `offset` of `text`.
pub(super) fn position(text: &str, offset: usize) -> String {
    let Some(before) = text.get(..offset) else {
        return String::new();
    };
    let line = before.matches('\n').count() + 1;
    let column = before
        .rsplit('\n')
        .next()
        .map_or(1, |l| l.chars().count() + 1);
    format!(":{line}:{column}")
}

enum Segment<'p> {
    Key(&'p str),
    Index(usize),
}

/// The parts of a key's path as the checks write it: `a.b[0].c`, `identities."slack:U1"`.
fn segments(path: &str) -> Vec<Segment<'_>> {
    let mut out = Vec::new();
    let mut rest = path;
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix('.') {
            rest = after;
        } else if let Some(after) = rest.strip_prefix('[') {
            let Some((index, after)) = after.split_once(']') else {
                break;
            };
            let Ok(index) = index.parse() else { break };
            out.push(Segment::Index(index));
            rest = after;
        } else if let Some(after) = rest.strip_prefix('"') {
            let Some((key, after)) = after.split_once('"') else {
                break;
            };
            out.push(Segment::Key(key));
            rest = after;
        } else {
            let end = rest.find(['.', '[']).unwrap_or(rest.len());
            out.push(Segment::Key(&rest[..end]));
            rest = &rest[end..];
        }
    }
    out
}
