//! Unified diffs: read into files, hunks and numbered lines for the surfaces, and computed from a
//! text before and after a change.
//!
//! Parsing and diffing are diffy's (a maintained implementation of the unified and git formats);
//! this module only shapes its result into what every renderer needs: each line with its old and
//! new line numbers, and `+N −M` per file.

use std::fmt;

use diffy::patch_set::{FileOperation, ParseOptions, PatchKind, PatchSet};

/// A unified diff read into lines with their numbers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiffView {
    pub files: Vec<FileDiff>,
}

/// One file's part of a diff.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileDiff {
    /// The path before the change; `None` for a created file or a diff without headers.
    pub old_path: Option<String>,
    /// The path after the change; `None` for a deleted file or a diff without headers.
    pub new_path: Option<String>,
    pub hunks: Vec<Hunk>,
    /// Lines added and removed.
    pub added: usize,
    pub removed: usize,
    /// A binary change, shown without lines.
    pub binary: bool,
}

impl FileDiff {
    /// The path a person would name this file by: the new one, or the old one for a deletion.
    pub fn path(&self) -> Option<&str> {
        self.new_path.as_deref().or(self.old_path.as_deref())
    }
}

/// One `@@ -a,b +c,d @@` hunk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hunk {
    pub old_start: usize,
    pub old_len: usize,
    pub new_start: usize,
    pub new_len: usize,
    /// The text after the second `@@` (often the enclosing function).
    pub context: Option<String>,
    pub lines: Vec<DiffLine>,
}

impl Hunk {
    /// The hunk's header line, as in the diff.
    pub fn header(&self) -> String {
        let range = |start: usize, len: usize| {
            if len == 1 {
                start.to_string()
            } else {
                format!("{start},{len}")
            }
        };
        let mut out = format!(
            "@@ -{} +{} @@",
            range(self.old_start, self.old_len),
            range(self.new_start, self.new_len)
        );
        if let Some(context) = &self.context {
            out.push(' ');
            out.push_str(context);
        }
        out
    }
}

/// One line of a hunk, without its end of line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiffLine {
    pub kind: LineKind,
    /// Its number in the old file (context and removed lines).
    pub old: Option<usize>,
    /// Its number in the new file (context and added lines).
    pub new: Option<usize>,
    pub text: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineKind {
    Context,
    Added,
    Removed,
}

impl LineKind {
    /// The marker a unified diff puts before the line.
    pub fn marker(self) -> char {
        match self {
            Self::Context => ' ',
            Self::Added => '+',
            Self::Removed => '-',
        }
    }
}

impl DiffView {
    /// The view written back as a unified diff, each hunk's counts taken from its lines (so a
    /// view cut short is still a valid diff).
    pub fn to_unified(&self) -> String {
        let view = self;
        let mut out = String::new();
        for file in &view.files {
            if file.old_path.is_some() || file.new_path.is_some() {
                let name = |p: &Option<String>, prefix: &str| {
                    p.as_ref()
                        .map_or("/dev/null".to_owned(), |p| format!("{prefix}{p}"))
                };
                out.push_str(&format!(
                    "--- {}\n+++ {}\n",
                    name(&file.old_path, "a/"),
                    name(&file.new_path, "b/")
                ));
            }
            for hunk in &file.hunks {
                let count = |k: LineKind| {
                    hunk.lines
                        .iter()
                        .filter(|l| l.kind == k || l.kind == LineKind::Context)
                        .count()
                };
                let header = Hunk {
                    old_len: count(LineKind::Removed),
                    new_len: count(LineKind::Added),
                    lines: Vec::new(),
                    ..hunk.clone()
                }
                .header();
                out.push_str(&header);
                out.push('\n');
                for line in &hunk.lines {
                    out.push(line.kind.marker());
                    out.push_str(&line.text);
                    out.push('\n');
                }
            }
        }
        out
    }
}

/// Why a text is not a unified diff.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiffError(String);

impl fmt::Display for DiffError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "not a unified diff: {}", self.0)
    }
}

impl std::error::Error for DiffError {}

/// Reads a unified diff: a git diff (`diff --git` headers), one or more `---`/`+++` file patches,
/// or bare `@@` hunks.
pub fn parse_diff(text: &str) -> Result<DiffView, DiffError> {
    let starts = |prefix: &str| text.lines().any(|l| l.starts_with(prefix));
    let files = if starts("diff --git ") {
        patch_set(text, ParseOptions::gitdiff())?
    } else if starts("--- ") {
        patch_set(text, ParseOptions::unidiff())?
    } else {
        let patch = diffy::Patch::from_str(text).map_err(|e| DiffError(e.to_string()))?;
        vec![file(&patch, None, None, false)]
    };
    if files.is_empty() {
        return Err(DiffError(
            "no file header (---/+++) and no hunk (@@ -a,b +c,d @@)".to_owned(),
        ));
    }
    if files
        .iter()
        .all(|f| f.hunks.is_empty() && f.path().is_none())
    {
        return Err(DiffError("no hunk (@@ -a,b +c,d @@) found".to_owned()));
    }
    Ok(DiffView { files })
}

fn patch_set(text: &str, options: ParseOptions) -> Result<Vec<FileDiff>, DiffError> {
    let mut files = Vec::new();
    for item in PatchSet::parse(text, options) {
        let item = item.map_err(|e| DiffError(e.to_string()))?;
        let (old, new) = match item.operation() {
            FileOperation::Create(p) => (None, Some(p.to_string())),
            FileOperation::Delete(p) => (Some(p.to_string()), None),
            FileOperation::Modify { original, modified } => {
                (Some(original.to_string()), Some(modified.to_string()))
            }
            FileOperation::Rename { from, to } | FileOperation::Copy { from, to } => {
                (Some(from.to_string()), Some(to.to_string()))
            }
        };
        let (old, new) = without_git_prefixes(old, new);
        files.push(match item.patch() {
            PatchKind::Text(patch) => file(patch, old, new, false),
            PatchKind::Binary(_) => FileDiff {
                old_path: old,
                new_path: new,
                hunks: Vec::new(),
                added: 0,
                removed: 0,
                binary: true,
            },
        });
    }
    Ok(files)
}

/// `a/x` and `b/x` as git writes them are `x`; other paths are kept as written.
fn without_git_prefixes(
    old: Option<String>,
    new: Option<String>,
) -> (Option<String>, Option<String>) {
    let prefixed = old.as_deref().is_none_or(|p| p.starts_with("a/"))
        && new.as_deref().is_none_or(|p| p.starts_with("b/"))
        && (old.is_some() || new.is_some());
    if !prefixed {
        return (old, new);
    }
    let strip = |p: Option<String>| p.map(|p| p[2..].to_owned());
    (strip(old), strip(new))
}

fn file(
    patch: &diffy::Patch<'_, str>,
    old: Option<String>,
    new: Option<String>,
    binary: bool,
) -> FileDiff {
    let mut added = 0;
    let mut removed = 0;
    let hunks = patch
        .hunks()
        .iter()
        .map(|h| {
            let (old_range, new_range) = (h.old_range(), h.new_range());
            let (mut o, mut n) = (old_range.start(), new_range.start());
            let lines = h
                .lines()
                .iter()
                .map(|line| {
                    let (kind, text) = match line {
                        diffy::Line::Context(t) => (LineKind::Context, *t),
                        diffy::Line::Insert(t) => (LineKind::Added, *t),
                        diffy::Line::Delete(t) => (LineKind::Removed, *t),
                    };
                    let (old_no, new_no) = match kind {
                        LineKind::Context => (Some(o), Some(n)),
                        LineKind::Added => (None, Some(n)),
                        LineKind::Removed => (Some(o), None),
                    };
                    match kind {
                        LineKind::Context => {
                            o += 1;
                            n += 1;
                        }
                        LineKind::Added => {
                            n += 1;
                            added += 1;
                        }
                        LineKind::Removed => {
                            o += 1;
                            removed += 1;
                        }
                    }
                    DiffLine {
                        kind,
                        old: old_no,
                        new: new_no,
                        text: text.trim_end_matches(['\n', '\r']).to_owned(),
                    }
                })
                .collect();
            Hunk {
                old_start: old_range.start(),
                old_len: old_range.len(),
                new_start: new_range.start(),
                new_len: new_range.len(),
                context: h
                    .function_context()
                    .map(|c| c.trim().to_owned())
                    .filter(|c| !c.is_empty()),
                lines,
            }
        })
        .collect();
    let header_path = |p: Option<&str>| p.map(str::to_owned).filter(|p| p != "/dev/null");
    let (old, new) = match (old, new) {
        (None, None) => {
            without_git_prefixes(header_path(patch.original()), header_path(patch.modified()))
        }
        given => given,
    };
    FileDiff {
        old_path: old,
        new_path: new,
        hunks,
        added,
        removed,
        binary,
    }
}

/// The unified diff from `before` to `after` with 3 lines of context: with `path`, under
/// `a/<path>` and `b/<path>` headers; without, as bare hunks (empty when nothing changed).
pub fn unified_diff(path: Option<&str>, before: &str, after: &str) -> String {
    let mut options = diffy::DiffOptions::new();
    options.set_context_len(3);
    match path {
        Some(path) => {
            options
                .set_original_filename(format!("a/{path}"))
                .set_modified_filename(format!("b/{path}"));
            options.create_patch(before, after).to_string()
        }
        None => {
            let text = options.create_patch(before, after).to_string();
            // diffy always writes `--- original` and `+++ modified`; without a path they would
            // name files that do not exist.
            text.splitn(3, '\n').nth(2).unwrap_or_default().to_owned()
        }
    }
}
