//! Display blocks and a summary derived from a tool call, for approvals whose agent sent none.
//!
//! One function, [`derive`], used by every path that raises an approval (HTTP and MCP through
//! validation, the hooks and the gate before they send): the person sees the change a coding
//! agent's file tools would make as a diff, a shell command as code, and any other tool's
//! arguments as facts and JSON. Reading the file a tool would change is the caller's business
//! (core does no I/O): the hooks pass a reader, the server passes none and the diff is then of
//! the edited text alone, titled so.

use std::path::Path;

use serde_json::{Map, Value};

use super::diff::{DiffView, LineKind, parse_diff, unified_diff};
use super::{Block, Content, Fact, MAX_SUMMARY_CHARS, cut, one_line};
use crate::model::{NewRequest, QuestionKind};

/// A derived diff's text, at most; past it the diff is cut at a line and the rest counted.
const MAX_DERIVED_DIFF_BYTES: usize = 128 * 1024;
/// A file read to diff against, at most; a larger one is not diffed (it would be slow to compute
/// and too long to read).
pub const MAX_FILE_BYTES: usize = 1024 * 1024;

/// A tool call to show a person.
#[derive(Debug, Clone, Copy)]
pub struct ToolCall<'a> {
    pub name: &'a str,
    pub arguments: &'a Value,
    /// The agent's working directory, so files are named relative to it.
    pub cwd: Option<&'a str>,
}

/// What the caller knows of a file on disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileState {
    /// Not read (the server, or a file too large or unreadable).
    Unknown,
    /// There is no such file.
    Missing,
    Content(String),
}

/// Blocks and a one-line summary for a tool call.
#[derive(Debug, Clone, PartialEq)]
pub struct Derived {
    pub blocks: Vec<Block>,
    pub summary: String,
}

/// Derives what to show for `call`; `read` gives a file's state by the path the tool names.
pub fn derive(call: &ToolCall<'_>, read: &dyn Fn(&str) -> FileState) -> Derived {
    let args = call.arguments;
    let s = |key: &str| args.get(key).and_then(Value::as_str);
    let name = call.name;
    if let Some(patch) = codex_patch(args) {
        return apply_patch(call, &patch, read);
    }
    match name {
        // Claude Code's `Edit`, and Gemini CLI's `replace` (`allow_multiple`: every occurrence).
        "Edit" | "replace" => {
            if let (Some(path), Some(old), Some(new)) =
                (s("file_path"), s("old_string"), s("new_string"))
            {
                let all = ["replace_all", "allow_multiple"]
                    .iter()
                    .any(|key| args.get(*key).and_then(Value::as_bool) == Some(true));
                return edit(call, path, &[(old, new, all)], read);
            }
        }
        "MultiEdit" => {
            if let (Some(path), Some(Value::Array(edits))) = (s("file_path"), args.get("edits")) {
                let edits: Option<Vec<(&str, &str, bool)>> = edits
                    .iter()
                    .map(|e| {
                        Some((
                            e.get("old_string")?.as_str()?,
                            e.get("new_string")?.as_str()?,
                            e.get("replace_all")
                                .and_then(Value::as_bool)
                                .unwrap_or(false),
                        ))
                    })
                    .collect();
                if let Some(edits) = edits.filter(|e| !e.is_empty()) {
                    return edit(call, path, &edits, read);
                }
            }
        }
        // Claude Code's `Write`, and Gemini CLI's `write_file`.
        "Write" | "write_file" => {
            if let (Some(path), Some(content)) = (s("file_path"), s("content")) {
                return write(call, path, content, read);
            }
        }
        "NotebookEdit" => {
            if let Some(path) = s("notebook_path") {
                return notebook_edit(call, path);
            }
        }
        "WebFetch" => {
            if let Some(url) = s("url") {
                return web_fetch(url, s("prompt"));
            }
        }
        _ => {}
    }
    if is_shell(name) {
        if let Some(command) = command_text(args) {
            return shell(name, &command, args);
        }
    }
    generic(name, args)
}

/// Tools that run a shell command, by the names coding agents give them.
fn is_shell(name: &str) -> bool {
    const SHELLS: [&str; 9] = [
        "bash",
        "shell",
        "exec_command",
        "run_shell_command",
        "run_in_terminal",
        "runinterminal",
        "local_shell",
        "unified_exec",
        "terminal",
    ];
    SHELLS.contains(&name.to_ascii_lowercase().as_str())
}

/// A shell tool's command: a string, or an argv list joined as a shell would read it.
fn command_text(args: &Value) -> Option<String> {
    match args.get("command").or_else(|| args.get("cmd"))? {
        Value::String(s) if !s.trim().is_empty() => Some(s.clone()),
        Value::Array(items) => {
            let words: Option<Vec<&str>> = items.iter().map(Value::as_str).collect();
            let words = words?;
            (!words.is_empty()).then(|| {
                words
                    .iter()
                    .map(|w| shell_word(w))
                    .collect::<Vec<_>>()
                    .join(" ")
            })
        }
        _ => None,
    }
}

/// A word as a shell reads it back: bare when safe, else single-quoted.
fn shell_word(word: &str) -> String {
    let safe = !word.is_empty()
        && word
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./=:,+@%".contains(&b));
    if safe {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

fn shell(name: &str, command: &str, args: &Value) -> Derived {
    let mut blocks = Vec::new();
    let explanation = ["description", "justification", "explanation"]
        .iter()
        .find_map(|k| args.get(*k).and_then(Value::as_str))
        .filter(|d| !d.trim().is_empty());
    if let Some(d) = explanation {
        blocks.push(Block::markdown(None, d.trim()));
    }
    blocks.push(Block::code(
        Some("Command"),
        Some("bash"),
        command.trim_end(),
    ));
    Derived {
        blocks,
        summary: summary_line(&format!("{name}: {}", one_line(command))),
    }
}

fn web_fetch(url: &str, prompt: Option<&str>) -> Derived {
    let mut blocks = Vec::new();
    match url::Url::parse(url) {
        Ok(u) if matches!(u.scheme(), "http" | "https") && u.host_str().is_some() => {
            blocks.push(Block::new(None, Content::Link { url: u.to_string() }));
        }
        _ => blocks.push(fields(vec![("url".to_owned(), url.to_owned())])),
    }
    if let Some(p) = prompt.filter(|p| !p.trim().is_empty()) {
        blocks.push(Block::markdown(Some("Prompt"), p.trim()));
    }
    Derived {
        blocks,
        summary: summary_line(&format!("WebFetch: {url}")),
    }
}

fn notebook_edit(call: &ToolCall<'_>, path: &str) -> Derived {
    let args = call.arguments;
    let s = |key: &str| args.get(key).and_then(Value::as_str);
    let shown = relative(path, call.cwd);
    let mode = s("edit_mode").unwrap_or("replace");
    let language = match s("cell_type") {
        Some("markdown") => "markdown",
        _ => "python",
    };
    let cell = s("cell_id").map_or(String::new(), |id| format!("cell {id} of "));
    let title = format!("{mode} {cell}{shown}");
    let blocks = match s("new_source") {
        Some(source) if mode != "delete" && !source.trim().is_empty() => {
            vec![Block::code(Some(&title), Some(language), source)]
        }
        Some(_) if mode != "delete" => vec![Block::markdown(Some(&title), "The cell is emptied.")],
        _ => vec![Block::markdown(Some(&title), "The cell is deleted.")],
    };
    Derived {
        blocks,
        summary: summary_line(&format!("NotebookEdit {shown} ({mode})")),
    }
}

/// `Edit`, `MultiEdit` and `replace`: the file's diff when the file could be read and every edit
/// applies to it; otherwise the edited text alone, which is all a reader of the arguments could
/// know.
fn edit(
    call: &ToolCall<'_>,
    path: &str,
    edits: &[(&str, &str, bool)],
    read: &dyn Fn(&str) -> FileState,
) -> Derived {
    let shown = relative(path, call.cwd);
    let verb = call.name;
    if let FileState::Content(before) = read(path) {
        if let Some(after) = apply_edits(&before, edits) {
            let (block, added, removed) = diff_block(None, &shown, &before, &after);
            return Derived {
                blocks: block,
                summary: summary_line(&format!("{verb} {shown} {}", counts(added, removed))),
            };
        }
    }
    let mut blocks = Vec::new();
    let (mut added, mut removed) = (0, 0);
    for (i, (old, new, _)) in edits.iter().enumerate() {
        let title = if edits.len() == 1 {
            format!("{shown} (the edited text; line numbers count within it)")
        } else {
            format!(
                "{shown}, edit {} of {} (line numbers count within it)",
                i + 1,
                edits.len()
            )
        };
        let (mut b, a, r) = diff_block(Some(title), &shown, old, new);
        blocks.append(&mut b);
        added += a;
        removed += r;
    }
    Derived {
        blocks,
        summary: summary_line(&format!("{verb} {shown} {}", counts(added, removed))),
    }
}

/// The file after the edits, or `None` when one of them does not apply (its old text is not
/// there), as the tool itself would refuse it.
fn apply_edits(before: &str, edits: &[(&str, &str, bool)]) -> Option<String> {
    let mut text = before.to_owned();
    for (old, new, all) in edits {
        if old.is_empty() || !text.contains(old) {
            return None;
        }
        text = if *all {
            text.replace(old, new)
        } else {
            text.replacen(old, new, 1)
        };
    }
    Some(text)
}

fn write(
    call: &ToolCall<'_>,
    path: &str,
    content: &str,
    read: &dyn Fn(&str) -> FileState,
) -> Derived {
    let shown = relative(path, call.cwd);
    let (before, title) = match read(path) {
        FileState::Content(before) => (before, None),
        FileState::Missing => (String::new(), Some(format!("{shown} (a new file)"))),
        FileState::Unknown => (
            String::new(),
            Some(format!(
                "{shown} (everything written; the file on disk was not compared)"
            )),
        ),
    };
    let (blocks, added, removed) = diff_block(title, &shown, &before, content);
    Derived {
        blocks,
        summary: summary_line(&format!("{} {shown} {}", call.name, counts(added, removed))),
    }
}

/// A diff block of `before` → `after` under `path`, bounded in size, with its counts.
fn diff_block(
    title: Option<String>,
    path: &str,
    before: &str,
    after: &str,
) -> (Vec<Block>, usize, usize) {
    if before == after {
        return (
            vec![Block::markdown(
                title.as_deref().or(Some(path)),
                "No change: the text would stay the same.",
            )],
            0,
            0,
        );
    }
    let text = unified_diff(Some(path), before, after);
    match parse_diff(&text) {
        Ok(view) => {
            let (added, removed) = totals(&view);
            (bounded(title, Some(path), view), added, removed)
        }
        // diffy reads back what it writes; should it not, the text is still worth showing.
        Err(_) => (
            vec![Block::code(title.as_deref(), Some("diff"), text)],
            0,
            0,
        ),
    }
}

fn totals(view: &DiffView) -> (usize, usize) {
    view.files
        .iter()
        .fold((0, 0), |(a, r), f| (a + f.added, r + f.removed))
}

/// A diff block for `view`, cut after [`MAX_DERIVED_DIFF_BYTES`] with a line saying how much was
/// left out.
fn bounded(title: Option<String>, path: Option<&str>, mut view: DiffView) -> Vec<Block> {
    // Room is kept for the file and hunk headers.
    let mut budget = MAX_DERIVED_DIFF_BYTES - 8 * 1024;
    let mut omitted = 0usize;
    for file in &mut view.files {
        for hunk in &mut file.hunks {
            let keep = hunk
                .lines
                .iter()
                .take_while(|l| {
                    let cost = l.text.len() + 2;
                    if cost > budget {
                        return false;
                    }
                    budget -= cost;
                    true
                })
                .count();
            omitted += hunk.lines.len() - keep;
            hunk.lines.truncate(keep);
        }
        file.hunks.retain(|h| !h.lines.is_empty());
    }
    let mut blocks = vec![Block::new(
        title,
        Content::Diff {
            path: path.map(str::to_owned),
            diff: view.to_unified(),
        },
    )];
    if omitted > 0 {
        blocks.push(Block::markdown(
            None,
            format!("The diff is cut here: {omitted} more lines are not shown."),
        ));
    }
    blocks
}

/// Codex's `apply_patch` text, wherever the call carries it (`input`, `patch`, `command`, or an
/// argv whose last word it is).
fn codex_patch(args: &Value) -> Option<String> {
    let is_patch = |s: &str| s.trim_start().starts_with("*** Begin Patch");
    let strings: Vec<&str> = match args {
        Value::String(s) => vec![s.as_str()],
        Value::Object(obj) => ["input", "patch", "command", "cmd"]
            .iter()
            .filter_map(|k| obj.get(*k))
            .flat_map(|v| match v {
                Value::String(s) => vec![s.as_str()],
                Value::Array(items) => items.iter().filter_map(Value::as_str).collect(),
                _ => Vec::new(),
            })
            .collect(),
        _ => Vec::new(),
    };
    strings.into_iter().find(|s| is_patch(s)).map(str::to_owned)
}

/// One file's change in a Codex patch.
#[derive(Debug)]
enum PatchOp {
    Add {
        path: String,
        lines: Vec<String>,
    },
    Delete {
        path: String,
    },
    Update {
        path: String,
        move_to: Option<String>,
        chunks: Vec<Vec<(LineKind, String)>>,
    },
}

/// Reads the `*** Begin Patch` … `*** End Patch` envelope of Codex's `apply_patch` tool. This
/// format has no crate of its own; it is a few line prefixes, read here leniently (a line that
/// fits nothing is kept as context) because it only feeds what a person is shown.
fn read_codex_patch(text: &str) -> Vec<PatchOp> {
    let mut ops = Vec::new();
    let mut current: Option<PatchOp> = None;
    for line in text.lines() {
        let header = |prefix: &str| line.strip_prefix(prefix).map(|p| p.trim().to_owned());
        if line.starts_with("*** Begin Patch") || line.starts_with("*** End of File") {
            continue;
        }
        if line.starts_with("*** End Patch") {
            break;
        }
        if let Some(path) = header("*** Add File:") {
            ops.extend(current.replace(PatchOp::Add {
                path,
                lines: Vec::new(),
            }));
        } else if let Some(path) = header("*** Delete File:") {
            ops.extend(current.replace(PatchOp::Delete { path }));
        } else if let Some(path) = header("*** Update File:") {
            ops.extend(current.replace(PatchOp::Update {
                path,
                move_to: None,
                chunks: Vec::new(),
            }));
        } else if let Some(to) = header("*** Move to:") {
            if let Some(PatchOp::Update { move_to, .. }) = &mut current {
                *move_to = Some(to);
            }
        } else {
            match &mut current {
                Some(PatchOp::Add { lines, .. }) => {
                    lines.push(line.strip_prefix('+').unwrap_or(line).to_owned());
                }
                Some(PatchOp::Update { chunks, .. }) => {
                    if line.starts_with("@@") {
                        chunks.push(Vec::new());
                        continue;
                    }
                    if chunks.is_empty() {
                        chunks.push(Vec::new());
                    }
                    let (kind, text) = match line.chars().next() {
                        Some('+') => (LineKind::Added, &line[1..]),
                        Some('-') => (LineKind::Removed, &line[1..]),
                        Some(' ') => (LineKind::Context, &line[1..]),
                        _ => (LineKind::Context, line),
                    };
                    if let Some(chunk) = chunks.last_mut() {
                        chunk.push((kind, text.to_owned()));
                    }
                }
                _ => {}
            }
        }
    }
    ops.extend(current);
    ops
}

fn apply_patch(call: &ToolCall<'_>, patch: &str, read: &dyn Fn(&str) -> FileState) -> Derived {
    let ops = read_codex_patch(patch);
    let mut blocks = Vec::new();
    let (mut added, mut removed) = (0, 0);
    let mut names = Vec::new();
    for op in &ops {
        match op {
            PatchOp::Add { path, lines } => {
                let shown = relative(path, call.cwd);
                let content: String = lines.iter().map(|l| format!("{l}\n")).collect();
                let (mut b, a, r) =
                    diff_block(Some(format!("{shown} (a new file)")), &shown, "", &content);
                blocks.append(&mut b);
                added += a;
                removed += r;
                names.push(shown);
            }
            PatchOp::Delete { path } => {
                let shown = relative(path, call.cwd);
                match read(path) {
                    FileState::Content(before) => {
                        let (mut b, a, r) =
                            diff_block(Some(format!("{shown} (deleted)")), &shown, &before, "");
                        blocks.append(&mut b);
                        added += a;
                        removed += r;
                    }
                    _ => blocks.push(Block::markdown(Some(&shown), "The file is deleted.")),
                }
                names.push(shown);
            }
            PatchOp::Update {
                path,
                move_to,
                chunks,
            } => {
                let shown = relative(path, call.cwd);
                let title_to = move_to
                    .as_ref()
                    .map(|to| format!("{shown} → {}", relative(to, call.cwd)));
                let whole = match read(path) {
                    FileState::Content(before) => {
                        apply_chunks(&before, chunks).map(|after| (before, after))
                    }
                    _ => None,
                };
                let (mut b, a, r) = match whole {
                    Some((before, after)) => diff_block(title_to, &shown, &before, &after),
                    None => {
                        let before: String = chunk_side(chunks, LineKind::Removed);
                        let after: String = chunk_side(chunks, LineKind::Added);
                        let title = format!(
                            "{} (the changed text; line numbers count within it)",
                            title_to.as_deref().unwrap_or(&shown)
                        );
                        diff_block(Some(title), &shown, &before, &after)
                    }
                };
                blocks.append(&mut b);
                added += a;
                removed += r;
                names.push(shown);
            }
        }
    }
    if blocks.is_empty() {
        return generic(call.name, call.arguments);
    }
    let files = match names.as_slice() {
        [one] => one.clone(),
        many => format!("{} files", many.len()),
    };
    Derived {
        blocks,
        summary: summary_line(&format!("{} {files} {}", call.name, counts(added, removed))),
    }
}

/// One side of a patch's chunks: the context with the removed lines (old) or the added ones
/// (new).
fn chunk_side(chunks: &[Vec<(LineKind, String)>], side: LineKind) -> String {
    chunks
        .iter()
        .flatten()
        .filter(|(k, _)| *k == LineKind::Context || *k == side)
        .map(|(_, t)| format!("{t}\n"))
        .collect()
}

/// The file after a patch's chunks, each found after the previous one as `apply_patch` finds
/// them (exactly, then ignoring trailing spaces); `None` when one cannot be placed.
fn apply_chunks(before: &str, chunks: &[Vec<(LineKind, String)>]) -> Option<String> {
    let mut lines: Vec<String> = before.lines().map(str::to_owned).collect();
    let mut from = 0;
    for chunk in chunks {
        let old: Vec<&str> = chunk
            .iter()
            .filter(|(k, _)| *k != LineKind::Added)
            .map(|(_, t)| t.as_str())
            .collect();
        let new: Vec<String> = chunk
            .iter()
            .filter(|(k, _)| *k != LineKind::Removed)
            .map(|(_, t)| t.clone())
            .collect();
        if old.is_empty() {
            // Pure insertion without context: at the end, as apply_patch does.
            let at = lines.len();
            lines.splice(at..at, new);
            continue;
        }
        let fits = |at: usize, exact: bool| {
            old.iter().enumerate().all(|(i, o)| {
                lines.get(at + i).is_some_and(|l| {
                    if exact {
                        l == o
                    } else {
                        l.trim_end() == o.trim_end()
                    }
                })
            })
        };
        let at = (from..=lines.len().saturating_sub(old.len()))
            .find(|&at| fits(at, true))
            .or_else(|| {
                (from..=lines.len().saturating_sub(old.len())).find(|&at| fits(at, false))
            })?;
        let len = new.len();
        lines.splice(at..at + old.len(), new);
        from = at + len;
    }
    let mut out = lines.join("\n");
    if before.ends_with('\n') || before.is_empty() {
        out.push('\n');
    }
    Some(out)
}

/// Any other tool: its top-level scalar arguments as facts, the rest as JSON.
fn generic(name: &str, args: &Value) -> Derived {
    let mut blocks = Vec::new();
    let mut scalars = Vec::new();
    let mut rest = Map::new();
    match args {
        Value::Object(obj) => {
            for (k, v) in obj {
                match v {
                    // A fact needs a label; an argument named by blanks goes with the JSON.
                    _ if k.trim().is_empty() => {
                        rest.insert(k.clone(), v.clone());
                    }
                    Value::String(s) if !s.contains('\n') && s.chars().count() <= 500 => {
                        scalars.push((k.clone(), s.trim().to_owned()));
                    }
                    Value::Number(_) | Value::Bool(_) => scalars.push((k.clone(), v.to_string())),
                    Value::Null => {}
                    other => {
                        rest.insert(k.clone(), other.clone());
                    }
                }
            }
        }
        Value::Null => {}
        other => {
            rest.insert("arguments".to_owned(), other.clone());
        }
    }
    let summary = match scalars.as_slice() {
        [] => name.to_owned(),
        facts => format!(
            "{name}: {}",
            facts
                .iter()
                .map(|(k, v)| format!("{k}={}", one_line(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    if !scalars.is_empty() {
        blocks.push(fields(scalars));
    }
    if !rest.is_empty() {
        let json = serde_json::to_string_pretty(&Value::Object(rest)).unwrap_or_default();
        blocks.push(Block::code(Some("Arguments"), Some("json"), json));
    }
    Derived {
        blocks,
        summary: summary_line(&summary),
    }
}

fn fields(items: Vec<(String, String)>) -> Block {
    Block::new(
        None,
        Content::Fields {
            items: items
                .into_iter()
                .map(|(label, value)| Fact {
                    label: cut(&one_line(&label), super::MAX_TITLE_CHARS),
                    value: cut(&value, crate::Limits::MAX_TEXT_CHARS),
                })
                .collect(),
        },
    )
}

/// `+N −M`, as a diff stat reads.
fn counts(added: usize, removed: usize) -> String {
    format!("(+{added} \u{2212}{removed})")
}

/// `path` relative to `cwd` when it lies inside it.
fn relative(path: &str, cwd: Option<&str>) -> String {
    cwd.and_then(|cwd| Path::new(path).strip_prefix(cwd).ok())
        .map(|p| p.to_string_lossy().into_owned())
        .filter(|p| !p.is_empty())
        .unwrap_or_else(|| path.to_owned())
}

fn summary_line(s: &str) -> String {
    cut(&one_line(s), MAX_SUMMARY_CHARS)
}

/// The agent's last words before the call, as the "Why" block the hooks add.
pub fn why(text: &str) -> Option<Block> {
    let text = text.trim();
    (!text.is_empty()).then(|| Block::markdown(Some("Why"), cut(text, 4_000)))
}

/// Fills what a request's sender left out: an approval's display from its action (the file a
/// tool would change is not read: see the module's docs), and the summary. Validation calls it,
/// and so does a store reading a request kept before display blocks existed.
pub fn complete(request: &mut NewRequest) {
    if request.display.is_empty() {
        let mut blocks = Vec::new();
        for q in &request.questions {
            if let QuestionKind::Approval(a) = &q.kind {
                let call = ToolCall {
                    name: &a.action.name,
                    arguments: &a.action.arguments,
                    cwd: None,
                };
                blocks.extend(derive(&call, &|_| FileState::Unknown).blocks);
            }
        }
        request.display = fit(blocks);
    }
    if request.summary.is_empty() {
        request.summary = summary_of(request);
    }
}

/// Derived blocks within the limits a sent display must keep: the first that fit, and a line
/// saying how many did not.
pub fn fit(mut blocks: Vec<Block>) -> Vec<Block> {
    let total = |b: &[Block]| b.iter().map(Block::text_bytes).sum::<usize>();
    if blocks.len() <= super::MAX_BLOCKS && total(&blocks) <= super::MAX_TEXT_BYTES {
        return blocks;
    }
    // Room is left for the line that says what was left out.
    let mut dropped = 0;
    while blocks.len() > super::MAX_BLOCKS - 1 || total(&blocks) > super::MAX_TEXT_BYTES - 1024 {
        if blocks.pop().is_none() {
            break;
        }
        dropped += 1;
    }
    {
        blocks.push(Block::markdown(
            None,
            format!(
                "{dropped} more blocks are not shown: together they pass the display's size limit."
            ),
        ));
    }
    blocks
}

/// The summary of a request that names none: its approval's action, or its first question's
/// header and text.
pub fn summary_of(request: &NewRequest) -> String {
    for q in &request.questions {
        if let QuestionKind::Approval(a) = &q.kind {
            let call = ToolCall {
                name: &a.action.name,
                arguments: &a.action.arguments,
                cwd: None,
            };
            return derive(&call, &|_| FileState::Unknown).summary;
        }
    }
    let Some(q) = request.questions.first() else {
        return String::new();
    };
    let line = match &q.header {
        Some(h) => format!("{h}: {}", q.text),
        None => q.text.clone(),
    };
    summary_line(&line)
}
