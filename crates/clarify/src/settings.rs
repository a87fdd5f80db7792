//! Merging a clarify hook into a coding agent's settings file without disturbing the rest.
//!
//! A settings file holds the user's own keys and hooks, in their order and layout. Parsing it
//! into a `serde_json::Value` and writing it back would sort every object's keys, so the merge
//! keeps each value it does not change as the exact text it was ([`RawValue`]) and rewrites only
//! the lists of the events it registers (`hooks.PreToolUse`, `hooks.BeforeTool`, ...). The
//! clarify hook is recognised by its command (`... hook codex`), so installing twice leaves one
//! entry, updated to the newest matcher, command and timeout. Every agent's file has this shape
//! (`hooks` of event lists); they differ in what an entry holds.

use std::fmt;
use std::path::Path;

use serde::de::{Deserializer, MapAccess, Visitor};
use serde_json::Value;
use serde_json::value::RawValue;

/// A JSON object with its entries in file order, each value as its original text.
#[derive(Debug, Default)]
struct Ordered(Vec<(String, Box<RawValue>)>);

impl<'de> serde::Deserialize<'de> for Ordered {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Entries;
        impl<'de> Visitor<'de> for Entries {
            type Value = Ordered;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Ordered, A::Error> {
                let mut entries = Vec::new();
                while let Some((key, value)) = map.next_entry::<String, Box<RawValue>>()? {
                    entries.retain(|(k, _): &(String, Box<RawValue>)| *k != key);
                    entries.push((key, value));
                }
                Ok(Ordered(entries))
            }
        }
        deserializer.deserialize_map(Entries)
    }
}

/// One hook to register: the event it runs on and the value placed in that event's list (a
/// matcher group `{"matcher", "hooks": [...]}` or, for agents without groups, the hook entry
/// itself).
#[derive(Debug, Clone)]
pub struct Registration {
    pub event: String,
    pub entry: Value,
}

/// The settings text with `registrations` in place of any earlier clarify hooks for the same
/// events (recognised by `marker` in their command, such as ` hook codex`), and with the
/// top-level `defaults` a file needs (such as `"version": 1`) where it has none; `existing` is
/// the file's text, if there is one.
pub fn merge_hooks(
    existing: Option<&str>,
    defaults: &[(&str, Value)],
    registrations: &[Registration],
    marker: &str,
) -> Result<String, String> {
    let mut top = match existing.filter(|t| !t.trim().is_empty()) {
        None => Ordered::default(),
        Some(text) => serde_json::from_str::<Ordered>(text)
            .map_err(|e| format!("not a JSON object of settings ({e})"))?,
    };
    for (key, value) in defaults.iter().rev() {
        if !top.0.iter().any(|(k, _)| k == key) {
            let raw = RawValue::from_string(value.to_string()).map_err(|e| e.to_string())?;
            top.0.insert(0, ((*key).to_owned(), raw));
        }
    }
    let mut hooks = match top.0.iter().find(|(k, _)| k == "hooks") {
        None => Ordered::default(),
        Some((_, raw)) => serde_json::from_str::<Ordered>(raw.get())
            .map_err(|e| format!("`hooks` is not an object ({e})"))?,
    };
    for registration in registrations {
        let event = registration.event.as_str();
        let entries: Vec<Box<RawValue>> = match hooks.0.iter().find(|(k, _)| k == event) {
            None => Vec::new(),
            Some((_, raw)) => serde_json::from_str(raw.get())
                .map_err(|e| format!("`hooks.{event}` is not a list ({e})"))?,
        };
        let ours = &registration.entry;
        // Each entry as text at depth 3 (top > hooks > event > entry).
        let mut texts: Vec<String> = Vec::new();
        let mut placed = false;
        for raw in &entries {
            let mut entry: Value = serde_json::from_str(raw.get()).map_err(|e| e.to_string())?;
            if entry == *ours && !placed {
                placed = true;
                texts.push(raw.get().to_owned());
                continue;
            }
            if is_ours(&entry, marker) {
                continue;
            }
            let Some(group) = entry.get_mut("hooks").and_then(Value::as_array_mut) else {
                texts.push(raw.get().to_owned());
                continue;
            };
            let before = group.len();
            group.retain(|h| !is_ours(h, marker));
            if group.len() == before {
                texts.push(raw.get().to_owned());
            } else if !group.is_empty() {
                texts.push(pretty(&entry, 3));
            }
        }
        if !placed {
            texts.push(pretty(ours, 3));
        }
        set(&mut hooks, event, array(&texts, 2));
    }
    let hooks_text = object(&hooks, 1);
    set(&mut top, "hooks", hooks_text);
    let mut out = object(&top, 0);
    out.push('\n');
    Ok(out)
}

/// Whether a hook entry runs this clarify hook (`command`, or Copilot CLI's `bash`).
fn is_ours(hook: &Value, marker: &str) -> bool {
    ["command", "bash"].iter().any(|key| {
        hook[*key]
            .as_str()
            .is_some_and(|c| c.contains(marker) || c.starts_with(marker.trim_start()))
    })
}

/// Replaces (or appends) `key` with the JSON text `text`.
fn set(object: &mut Ordered, key: &str, text: String) {
    // The text was built from valid JSON parts, so it parses; if it somehow did not, keeping the
    // old value is the safe choice.
    let Ok(raw) = RawValue::from_string(text) else {
        return;
    };
    match object.0.iter_mut().find(|(k, _)| k == key) {
        Some((_, value)) => *value = raw,
        None => object.0.push((key.to_owned(), raw)),
    }
}

fn pad(depth: usize) -> String {
    "  ".repeat(depth)
}

/// `value` pretty-printed for a place at `depth`.
fn pretty(value: &Value, depth: usize) -> String {
    let text = serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string());
    text.lines()
        .enumerate()
        .map(|(i, line)| {
            if i == 0 {
                line.to_owned()
            } else {
                format!("{}{line}", pad(depth))
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn object(entries: &Ordered, depth: usize) -> String {
    if entries.0.is_empty() {
        return "{}".to_owned();
    }
    let body: Vec<String> = entries
        .0
        .iter()
        .map(|(k, v)| format!("{}{}: {}", pad(depth + 1), Value::from(k.as_str()), v.get()))
        .collect();
    format!("{{\n{}\n{}}}", body.join(",\n"), pad(depth))
}

fn array(items: &[String], depth: usize) -> String {
    if items.is_empty() {
        return "[]".to_owned();
    }
    let body: Vec<String> = items
        .iter()
        .map(|item| format!("{}{item}", pad(depth + 1)))
        .collect();
    format!("[\n{}\n{}]", body.join(",\n"), pad(depth))
}

/// Writes `text` to `path` through a temporary file in the same directory and a rename, so
/// the file is never half written; creates the directory when needed.
pub fn write_atomically(path: &Path, text: &str) -> std::io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => std::path::PathBuf::from("."),
    };
    std::fs::create_dir_all(&dir)?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "settings.json".to_owned());
    let temp = dir.join(format!(".{name}.clarify-{}", std::process::id()));
    std::fs::write(&temp, text)?;
    std::fs::rename(&temp, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&temp);
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const CMD: &str = "/usr/bin/clarify hook claude-code";

    /// Claude Code's registration: one matcher group under `PreToolUse`.
    fn merge_hook(
        existing: Option<&str>,
        matcher: &str,
        command: &str,
        timeout: u64,
    ) -> Result<String, String> {
        let entry = json!({
            "matcher": matcher,
            "hooks": [{"type": "command", "command": command, "timeout": timeout}],
        });
        let registration = Registration {
            event: "PreToolUse".to_owned(),
            entry,
        };
        merge_hooks(existing, &[], &[registration], " hook claude-code")
    }

    #[test]
    fn keeps_other_keys_and_hooks_in_order_and_is_idempotent() {
        let existing = r#"{
  "permissions": {"allow": ["Bash(npm test)"]},
  "hooks": {
    "PostToolUse": [{"matcher": "Write", "hooks": [{"type": "command", "command": "fmt"}]}],
    "PreToolUse": [
      {"matcher": "Bash", "hooks": [{"type": "command", "command": "audit"}]}
    ]
  },
  "model": "opus"
}
"#;
        let once = merge_hook(Some(existing), "Bash|mcp__.*", CMD, 900).expect("merged");
        let twice = merge_hook(Some(&once), "Bash|mcp__.*", CMD, 900).expect("merged");
        assert_eq!(once, twice, "installing again changes nothing");
        let v: Value = serde_json::from_str(&once).expect("valid JSON");
        assert_eq!(v["model"], "opus");
        assert_eq!(v["permissions"]["allow"][0], "Bash(npm test)");
        assert_eq!(v["hooks"]["PostToolUse"][0]["hooks"][0]["command"], "fmt");
        assert_eq!(v["hooks"]["PreToolUse"][0]["hooks"][0]["command"], "audit");
        assert_eq!(v["hooks"]["PreToolUse"][1]["matcher"], "Bash|mcp__.*");
        assert_eq!(v["hooks"]["PreToolUse"][1]["hooks"][0]["command"], CMD);
        assert_eq!(v["hooks"]["PreToolUse"][1]["hooks"][0]["timeout"], 900);
        let keys: Vec<&str> = ["\"permissions\"", "\"hooks\"", "\"model\""].to_vec();
        let positions: Vec<usize> = keys.iter().map(|k| once.find(k).expect("key")).collect();
        assert!(
            positions.is_sorted(),
            "top-level keys keep their order:\n{once}"
        );
        assert!(
            once.contains(
                r#"{"matcher": "Write", "hooks": [{"type": "command", "command": "fmt"}]}"#
            ),
            "untouched values keep their text:\n{once}"
        );
    }

    #[test]
    fn a_new_matcher_replaces_the_old_entry() {
        let once = merge_hook(None, "Bash", CMD, 900).expect("merged");
        let again = merge_hook(Some(&once), "Bash|Write", CMD, 900).expect("merged");
        let v: Value = serde_json::from_str(&again).expect("valid JSON");
        let groups = v["hooks"]["PreToolUse"].as_array().expect("groups");
        assert_eq!(groups.len(), 1, "{again}");
        assert_eq!(groups[0]["matcher"], "Bash|Write");
    }

    #[test]
    fn refuses_what_is_not_a_settings_object() {
        for bad in [
            "[1]",
            "{\"hooks\": 3}",
            "{\"hooks\": {\"PreToolUse\": {}}}",
            "{nope",
        ] {
            assert!(merge_hook(Some(bad), "Bash", CMD, 900).is_err(), "{bad}");
        }
    }

    #[test]
    fn flat_entries_and_defaults_for_agents_without_groups() {
        let existing = r#"{"hooks": {"beforeShellExecution": [{"command": "./audit.sh"}, {"command": "/old/clarify hook cursor", "timeout": 5}]}}"#;
        let ours =
            json!({"command": "/usr/bin/clarify hook cursor", "timeout": 900, "failClosed": true});
        let registrations = [
            Registration {
                event: "beforeShellExecution".to_owned(),
                entry: ours.clone(),
            },
            Registration {
                event: "beforeMCPExecution".to_owned(),
                entry: ours.clone(),
            },
        ];
        let defaults = [("version", json!(1))];
        let once =
            merge_hooks(Some(existing), &defaults, &registrations, " hook cursor").expect("merged");
        let twice =
            merge_hooks(Some(&once), &defaults, &registrations, " hook cursor").expect("merged");
        assert_eq!(once, twice, "installing again changes nothing");
        let v: Value = serde_json::from_str(&once).expect("valid JSON");
        assert_eq!(v["version"], 1);
        assert_eq!(
            v["hooks"]["beforeShellExecution"],
            json!([{"command": "./audit.sh"}, ours]),
            "the old clarify entry is replaced, the other kept: {once}"
        );
        assert_eq!(v["hooks"]["beforeMCPExecution"], json!([ours]));
        assert!(once.starts_with("{\n  \"version\": 1,"), "{once}");
    }

    #[test]
    fn another_agents_hook_is_left_alone() {
        let claude = merge_hook(None, "Bash", CMD, 900).expect("merged");
        let registration = Registration {
            event: "PreToolUse".to_owned(),
            entry: json!({"matcher": "Bash", "hooks": [{"type": "command", "command": "/usr/bin/clarify hook codex"}]}),
        };
        let both = merge_hooks(Some(&claude), &[], &[registration], " hook codex").expect("merged");
        let v: Value = serde_json::from_str(&both).expect("valid JSON");
        assert_eq!(
            v["hooks"]["PreToolUse"].as_array().map(Vec::len),
            Some(2),
            "{both}"
        );
    }
}
