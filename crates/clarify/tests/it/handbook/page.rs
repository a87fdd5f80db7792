//! A handbook page read as the runner sees it: its command blocks, the output it shows for them,
//! and the `<!-- check: ... -->` directives (HTML comments, which mdBook does not render) that say
//! how to run them. The grammar is in the development page of the handbook ("Checked commands").

use pulldown_cmark::{CodeBlockKind, Event, Parser, Tag, TagEnd};

/// How a command block runs.
#[derive(Debug, Clone, PartialEq)]
pub enum Mode {
    /// Every command in turn, each finishing before the next.
    Foreground,
    /// The earlier commands in turn, then the last left running (named for `output of NAME`).
    Background(Option<String>),
    /// The earlier commands in turn, then the last left running as the page's server, which
    /// the runner waits for until it answers `/healthz`.
    Server,
}

/// One command of a block: a line, or several joined by a trailing `\`.
#[derive(Debug, Clone)]
pub struct Command {
    pub line: usize,
    pub text: String,
    /// In a `console` block, the output shown under the command (stdout and stderr as a terminal
    /// interleaves them), and the line it starts on.
    pub shown: Option<(usize, String)>,
}

/// Commands to run: a block the page shows, or hidden ones (`check: run`, `check: server CMD`).
#[derive(Debug, Clone)]
pub struct Block {
    pub line: usize,
    pub commands: Vec<Command>,
    pub mode: Mode,
    /// The exit status of the block's last command (the others must exit 0).
    pub exit: i32,
    /// Commands that play a person in another terminal, run beside the block.
    pub answered_by: Option<(usize, String)>,
    /// Whether the page shows the block (hidden commands are not counted as the page's).
    pub shown: bool,
}

/// Which stream of a block shown output is compared with.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Stream {
    Stdout,
    Stderr,
}

/// Output the page shows, to be compared with what a block printed.
#[derive(Debug, Clone)]
pub struct Expect {
    pub line: usize,
    pub stream: Stream,
    /// A background block's name; without it, the block just above.
    pub of: Option<String>,
    /// Compare only this field of the JSON the block printed.
    pub field: Option<String>,
    pub json: bool,
    pub text: String,
}

/// What the runner does for a page, in page order.
#[derive(Debug, Clone)]
pub enum Step {
    Block(Block),
    Expect(Expect),
    /// A block (a program the page shows) written, after its replacements, to a file of the
    /// page's folder, for the commands after it to run.
    File {
        line: usize,
        name: String,
        text: String,
    },
    /// A shown command block that is deliberately not run, and why.
    NotRun {
        line: usize,
        reason: String,
    },
}

/// Directives that wait for the next code block.
#[derive(Default)]
struct Pending {
    line: Option<usize>,
    mode: Option<Mode>,
    exit: Option<i32>,
    answered_by: Option<(usize, String)>,
    replaces: Vec<(String, String)>,
    not_run: Option<String>,
    file: Option<String>,
    expects: Vec<(usize, Stream, Option<String>, Option<String>)>,
}

impl Pending {
    fn is_for_commands(&self) -> bool {
        self.mode.is_some()
            || self.exit.is_some()
            || self.answered_by.is_some()
            || !self.replaces.is_empty()
            || self.not_run.is_some()
    }
}

/// Whether a fenced block's info string makes it commands.
fn is_commands(info: &str) -> bool {
    matches!(
        info.split_whitespace().next().unwrap_or(""),
        "sh" | "bash" | "shell" | "console"
    )
}

/// The page's steps, or every problem with its directives and blocks (`page:line: what`).
pub fn read(page: &str, text: &str) -> Result<Vec<Step>, Vec<String>> {
    let line_of = |offset: usize| text[..offset.min(text.len())].matches('\n').count() + 1;
    let mut steps = Vec::new();
    let mut problems = Vec::new();
    let mut pending = Pending::default();
    let mut code: Option<(String, usize, String)> = None;
    let mut html: Option<(usize, String)> = None;
    for (event, range) in Parser::new(text).into_offset_iter() {
        match event {
            Event::Start(Tag::CodeBlock(CodeBlockKind::Fenced(info))) => {
                code = Some((info.to_string(), line_of(range.start) + 1, String::new()));
            }
            Event::Start(Tag::CodeBlock(CodeBlockKind::Indented)) => {
                code = Some((String::new(), line_of(range.start), String::new()));
            }
            Event::Text(t) => {
                if let Some((_, _, body)) = &mut code {
                    body.push_str(&t);
                }
            }
            Event::End(TagEnd::CodeBlock) => {
                if let Some((info, first, body)) = code.take() {
                    let mut here = std::mem::take(&mut pending);
                    code_block(
                        page,
                        &info,
                        first,
                        &body,
                        &mut here,
                        &mut steps,
                        &mut problems,
                    );
                }
            }
            Event::Start(Tag::HtmlBlock) => html = Some((line_of(range.start), String::new())),
            Event::Html(h) => {
                if let Some((_, body)) = &mut html {
                    body.push_str(&h);
                }
            }
            Event::End(TagEnd::HtmlBlock) => {
                if let Some((line, body)) = html.take() {
                    for (line, directive) in directives(line, &body) {
                        if let Err(e) = directive_into(line, &directive, &mut pending, &mut steps) {
                            problems.push(format!("{page}:{line}: {e}"));
                        }
                    }
                }
            }
            Event::InlineHtml(h) if h.contains("check:") => problems.push(format!(
                "{page}:{}: a check directive must stand on lines of its own",
                line_of(range.start)
            )),
            _ => {}
        }
    }
    if let Some(line) = pending.line {
        problems.push(format!(
            "{page}:{line}: a check directive with no code block after it"
        ));
    }
    if problems.is_empty() {
        Ok(steps)
    } else {
        Err(problems)
    }
}

/// The `check:` comments of an HTML block: (line, the text after `check:`).
fn directives(first_line: usize, html: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut rest = html;
    let mut consumed = 0;
    while let Some(start) = rest.find("<!--") {
        let Some(len) = rest[start..].find("-->") else {
            break;
        };
        let comment = &rest[start + 4..start + len];
        let line = first_line + html[..consumed + start].matches('\n').count();
        if let Some(directive) = comment.trim_start().strip_prefix("check:") {
            out.push((line, directive.trim().to_owned()));
        }
        consumed += start + len + 3;
        rest = &rest[start + len + 3..];
    }
    out
}

/// Applies one directive: hidden commands become steps at once, the rest wait for a block.
fn directive_into(
    line: usize,
    directive: &str,
    pending: &mut Pending,
    steps: &mut Vec<Step>,
) -> Result<(), String> {
    let (word, rest) = directive
        .split_once(char::is_whitespace)
        .map_or((directive, ""), |(w, r)| (w, r.trim()));
    let hidden = |mode: Mode, body: &str| {
        let first = line + 1;
        Block {
            line: first,
            commands: commands(first, body),
            mode,
            exit: 0,
            answered_by: None,
            shown: false,
        }
    };
    match word {
        "not" => {
            let reason = rest.strip_prefix("run:").map(str::trim).unwrap_or("");
            if reason.is_empty() {
                return Err("write `not run: <why>`".into());
            }
            pending.not_run = Some(reason.split_whitespace().collect::<Vec<_>>().join(" "));
        }
        "run" => {
            let block = hidden(Mode::Foreground, rest);
            if block.commands.is_empty() {
                return Err("`run` with no commands under it".into());
            }
            steps.push(Step::Block(block));
            return Ok(());
        }
        "server" if !rest.is_empty() => {
            let mut block = hidden(Mode::Server, rest);
            block.line = line;
            for c in &mut block.commands {
                c.line = line;
            }
            steps.push(Step::Block(block));
            return Ok(());
        }
        "server" => pending.mode = Some(Mode::Server),
        "background" => {
            pending.mode = Some(Mode::Background(
                (!rest.is_empty()).then(|| rest.to_owned()),
            ))
        }
        "answered-by" => {
            if rest.is_empty() {
                return Err("`answered-by` needs the commands that answer".into());
            }
            pending.answered_by = Some((line, rest.to_owned()));
        }
        "file" => {
            let safe = !rest.is_empty()
                && !rest.contains(char::is_whitespace)
                && !rest.starts_with('/')
                && !rest.split('/').any(|part| part == "..");
            if !safe {
                return Err(format!(
                    "`file` takes a path inside the page's folder, not {rest:?}"
                ));
            }
            pending.file = Some(rest.to_owned());
        }
        "exit" => {
            pending.exit = Some(
                rest.parse()
                    .map_err(|_| format!("`exit` takes a status, not {rest:?}"))?,
            )
        }
        "replace" => {
            let parts: Vec<&str> = rest.split('`').collect();
            match parts.as_slice() {
                ["", from, " by ", to, ""] if !from.is_empty() => pending
                    .replaces
                    .push(((*from).to_owned(), (*to).to_owned())),
                _ => return Err("write replace `TEXT` by `TEXT`".into()),
            }
        }
        "output" | "stderr" => {
            let stream = if word == "output" {
                Stream::Stdout
            } else {
                Stream::Stderr
            };
            let mut of = None;
            let mut field = None;
            let mut words = rest.split_whitespace();
            while let Some(w) = words.next() {
                match (w, w.strip_prefix('.')) {
                    ("of", _) => {
                        of = Some(words.next().ok_or("`of` needs a name")?.to_owned());
                    }
                    (_, Some(f)) if !f.is_empty() => field = Some(f.to_owned()),
                    _ => return Err(format!("`{word}` takes `of NAME` and `.FIELD`, not {w:?}")),
                }
            }
            pending.expects.push((line, stream, of, field));
        }
        _ => return Err(format!("unknown check directive {word:?}")),
    }
    pending.line.get_or_insert(line);
    Ok(())
}

/// Handles one code block with the directives that precede it.
fn code_block(
    page: &str,
    info: &str,
    first: usize,
    body: &str,
    pending: &mut Pending,
    steps: &mut Vec<Step>,
    problems: &mut Vec<String>,
) {
    let here = pending.line.unwrap_or(first);
    if let Some(name) = pending.file.take() {
        if pending.mode.is_some()
            || pending.exit.is_some()
            || pending.answered_by.is_some()
            || pending.not_run.is_some()
            || !pending.expects.is_empty()
        {
            problems.push(format!(
                "{page}:{here}: `file` goes with `replace` only: the block is not run"
            ));
        }
        let text = replaced(page, here, body, &pending.replaces, problems);
        steps.push(Step::File {
            line: first,
            name,
            text,
        });
        return;
    }
    if !is_commands(info) {
        if pending.is_for_commands() {
            problems.push(format!(
                "{page}:{here}: a directive for commands, before a `{info}` block"
            ));
        }
        for (_, stream, of, field) in pending.expects.drain(..) {
            steps.push(Step::Expect(Expect {
                line: first,
                stream,
                of,
                field,
                json: info.split_whitespace().next() == Some("json"),
                text: body.to_owned(),
            }));
        }
        return;
    }
    if !pending.expects.is_empty() {
        problems.push(format!(
            "{page}:{here}: `output` or `stderr` goes before the block that shows the output"
        ));
    }
    if let Some(reason) = pending.not_run.take() {
        steps.push(Step::NotRun {
            line: first,
            reason,
        });
        return;
    }
    let text = replaced(page, here, body, &pending.replaces, problems);
    let console = info.split_whitespace().next() == Some("console");
    let commands = if console {
        match transcript(first, &text) {
            Ok(c) => c,
            Err((line, e)) => {
                problems.push(format!("{page}:{line}: {e}"));
                return;
            }
        }
    } else {
        commands(first, &text)
    };
    if commands.is_empty() {
        problems.push(format!("{page}:{first}: a command block with no command"));
        return;
    }
    steps.push(Step::Block(Block {
        line: first,
        commands,
        mode: pending.mode.take().unwrap_or(Mode::Foreground),
        exit: pending.exit.unwrap_or(0),
        answered_by: pending.answered_by.take(),
        shown: true,
    }));
}

/// A block's text with what the reader fills in replaced (each `replace` must find its text).
fn replaced(
    page: &str,
    here: usize,
    body: &str,
    replaces: &[(String, String)],
    problems: &mut Vec<String>,
) -> String {
    let mut text = body.to_owned();
    for (from, to) in replaces {
        if !text.contains(from.as_str()) {
            problems.push(format!(
                "{page}:{here}: the block has no {from:?} to replace"
            ));
        }
        text = text.replace(from.as_str(), to);
    }
    text
}

/// The commands of a shell block: each line, joined with the next while it ends in `\`;
/// blank lines and comment lines are skipped.
pub fn commands(first: usize, body: &str) -> Vec<Command> {
    let mut out: Vec<Command> = Vec::new();
    let mut open = false;
    for (i, line) in body.lines().enumerate() {
        if open && let Some(last) = out.last_mut() {
            last.text.push('\n');
            last.text.push_str(line);
        } else if line.trim().is_empty() || line.trim_start().starts_with('#') {
            continue;
        } else {
            out.push(Command {
                line: first + i,
                text: line.to_owned(),
                shown: None,
            });
        }
        open = line.ends_with('\\');
    }
    out
}

/// The commands of a `console` block: `$ ` lines (joined while they end in `\`), each with the
/// output shown under it.
fn transcript(first: usize, body: &str) -> Result<Vec<Command>, (usize, String)> {
    let mut out: Vec<Command> = Vec::new();
    let mut open = false;
    for (i, line) in body.lines().enumerate() {
        let line_no = first + i;
        if open && let Some(last) = out.last_mut() {
            last.text.push('\n');
            last.text.push_str(line);
            last.shown = Some((line_no + 1, String::new()));
            open = line.ends_with('\\');
        } else if let Some(command) = line.strip_prefix("$ ") {
            out.push(Command {
                line: line_no,
                text: command.to_owned(),
                shown: Some((line_no + 1, String::new())),
            });
            open = command.ends_with('\\');
        } else if let Some((_, shown)) = out.last_mut().and_then(|c| c.shown.as_mut()) {
            shown.push_str(line);
            shown.push('\n');
        } else {
            return Err((line_no, "a console block starts with a `$ ` command".into()));
        }
    }
    Ok(out)
}

mod tests {
    use super::*;

    #[test]
    fn directives_attach_to_the_block_after_them() {
        let page = "# Title\n\n<!-- check: server -->\n\n```sh\nclarify serve\n```\n\n\
                    <!-- check: stderr -->\n\n```text\nclarify: ...\n```\n\n\
                    <!-- check: not run: builds for minutes -->\n\n```sh\ncargo install\n```\n\n\
                    <!-- check: run\ntouch a\n-->\n\n```console\n$ ls \\\n  a\na\n```\n";
        let steps = read("p.md", page).expect("the page reads");
        let kinds: Vec<String> = steps
            .iter()
            .map(|s| match s {
                Step::Block(b) => format!("block {} {:?} {}", b.line, b.mode, b.shown),
                Step::Expect(e) => format!("expect {} {:?}", e.line, e.stream),
                Step::NotRun { line, reason } => format!("not run {line} {reason}"),
                Step::File { line, name, .. } => format!("file {line} {name}"),
            })
            .collect();
        assert_eq!(
            kinds,
            [
                "block 6 Server true",
                "expect 12 Stderr",
                "not run 18 builds for minutes",
                "block 22 Foreground false",
                "block 26 Foreground true",
            ]
        );
        let Step::Block(console) = &steps[4] else {
            panic!("a block")
        };
        assert_eq!(console.commands[0].text, "ls \\\n  a");
        assert_eq!(console.commands[0].shown, Some((28, "a\n".to_owned())));
    }

    #[test]
    fn a_file_block_is_written_with_its_replacements_not_run() {
        let page = "<!-- check: file app/main.py -->\n\
                    <!-- check: replace `model = \"gpt\"` by `model = scripted()` -->\n\n\
                    ```python\nmodel = \"gpt\"\nprint(model)\n```\n";
        let steps = read("p.md", page).expect("the page reads");
        let [Step::File { line, name, text }] = steps.as_slice() else {
            panic!("one file step, not {steps:?}")
        };
        assert_eq!((*line, name.as_str()), (5, "app/main.py"));
        assert_eq!(text, "model = scripted()\nprint(model)\n");

        let outside = "<!-- check: file ../x.py -->\n\n```python\nx\n```\n";
        let problems = read("p.md", outside).expect_err("a path out of the folder");
        assert_eq!(
            problems,
            ["p.md:1: `file` takes a path inside the page's folder, not \"../x.py\""]
        );
    }

    #[test]
    fn a_directive_that_cannot_apply_is_a_problem_naming_its_line() {
        let page = "<!-- check: background -->\n\n```text\nx\n```\n\n<!-- check: frobnicate -->\n";
        let problems = read("p.md", page).expect_err("problems");
        assert_eq!(
            problems,
            [
                "p.md:1: a directive for commands, before a `text` block",
                "p.md:7: unknown check directive \"frobnicate\"",
            ]
        );
    }
}
