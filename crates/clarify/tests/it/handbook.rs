//! The handbook's commands run as its pages show them, and print what the pages say they print.
//!
//! Each page of [`PAGES`] runs in a folder of its own, in one `bash` that lives as long as the
//! page (variables and background jobs carry over, as in a reader's terminal), with the `clarify`
//! this suite built first on `PATH`. Every `sh`, `bash`, `shell` and `console` block runs, in page
//! order, unless a `<!-- check: not run: why -->` comment before it says why not; the output a
//! page shows (a `console` transcript, or a block after `<!-- check: output -->`) is compared
//! with what the commands printed, with snapbox: `...` alone on a line stands for any lines,
//! `...` or `…` in a line for any text, `ck_...` for a key, and `[KEY]`, `[ID]` and `[TIME]` for
//! a key, a request id and an RFC 3339 time. A block after `<!-- check: file NAME -->` (a sample
//! program in any language) is written to NAME in the page's folder for the commands after it
//! to run, so the SDK pages' programs run as shown. A command that fails or prints something else
//! fails the test, naming the page and the line. The directives are described in the development
//! page (`docs/src/development.md`, "Checked commands"); [`page`] reads them.
//!
//! Pages start their servers on clarify's default address, 127.0.0.1:7420, as they say, so the
//! pages run one after another, under a lock file every run of the suite on the machine shares.
//!
//! The commands use `curl` and `jq` as the pages do, and `git` and `flock`; without them the
//! test says it skips, or fails under `CLARIFY_REQUIRE_SERVICES=1`. The SDK pages also need
//! Python or Node.js and npm (see [`PAGES`]); a page whose tools are missing is skipped the same
//! way. They install their packages as a reader does, with pip's and npm's caches kept in
//! `CHECK_CACHE` between runs.

mod page;
mod shell;

use std::collections::HashMap;
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use page::{Block, Expect, Mode, Step, Stream};
use shell::{Job, Ran, Shell};

/// The pages whose commands run, from `docs/src`, each with what it needs besides [`TOOLS`]
/// (the SDKs' pages install their packages with pip and npm, as a reader does).
const PAGES: &[(&str, &[&str])] = &[
    ("getting-started/installation.md", &[]),
    ("getting-started/first-request.md", &[]),
    ("agents/shell.md", &[]),
    ("agents/http.md", &[]),
    ("agents/python.md", &["python3"]),
    ("agents/langgraph.md", &["python3"]),
    ("agents/openai-agents.md", &["python3", "node", "npm"]),
    ("agents/typescript.md", &["node", "npm"]),
    ("agents/ai-sdk.md", &["node", "npm"]),
    ("people/terminal.md", &[]),
    ("operating/configuration.md", &[]),
    ("operating/backups.md", &[]),
    ("decisions/report.md", &[]),
    ("decisions/receipts.md", &[]),
];

/// Where a page's server listens: clarify's default, as the pages say.
const ADDRESS: &str = "127.0.0.1:7420";

/// How long one command may take: a page's `clarify ask` is answered within seconds, but an
/// SDK page's `pip install` or `npm ci` may download its packages first.
const WITHIN: Duration = Duration::from_secs(300);

/// What the handbook's commands need besides `clarify`.
const TOOLS: &[&str] = &["bash", "flock", "curl", "jq", "git"];

fn tools_present() -> bool {
    present(TOOLS, "the handbook's commands")
}

/// Whether `tools` are installed; when not, says so and skips (a failure under
/// `CLARIFY_REQUIRE_SERVICES=1`). `who` is what needs them, for the message.
fn present(tools: &[&str], who: &str) -> bool {
    let missing: Vec<&str> = tools
        .iter()
        .copied()
        .filter(|tool| {
            std::process::Command::new(tool)
                .arg("--version")
                .output()
                .is_err()
        })
        .collect();
    if missing.is_empty() {
        return true;
    }
    assert!(
        std::env::var("CLARIFY_REQUIRE_SERVICES").as_deref() != Ok("1"),
        "{who} need {missing:?}, which are not installed, and CLARIFY_REQUIRE_SERVICES=1 \
         requires them"
    );
    eprintln!("skipped: {who} need {missing:?}, which are not installed");
    false
}

/// What a page ran.
#[derive(Debug, Default)]
struct Summary {
    shown: usize,
    hidden: usize,
    not_run: Vec<(usize, String)>,
}

/// The output a shown output is compared with: a finished block's, or a job's.
#[derive(Debug, Clone)]
enum Printed {
    Done(Ran),
    Job { job: Job, server: bool },
}

struct Runner<'a> {
    page: &'a str,
    /// The page's folder, where its `file` blocks are written.
    work: PathBuf,
    shell: Shell,
    last: Option<Printed>,
    named: HashMap<String, Job>,
    /// Background jobs (not servers), each checked to have ended well by the page's end.
    jobs: Vec<(usize, Job)>,
    finished: HashMap<u32, Ran>,
    summary: Summary,
}

/// Runs one page (`name` as it is named in messages, `text` its Markdown) in a fresh folder.
fn check_page(name: &str, text: &str, lock: &Path) -> Result<Summary, Vec<String>> {
    let steps = page::read(name, text)?;
    let dir = tempfile::tempdir().map_err(|e| vec![format!("{name}: a temporary folder: {e}")])?;
    let (work, scratch) = (dir.path().join("work"), dir.path().join("scratch"));
    for folder in [&work, &scratch] {
        std::fs::create_dir(folder).map_err(|e| vec![format!("{name}: {e}")])?;
    }
    let bin = Path::new(crate::support::BIN)
        .parent()
        .ok_or_else(|| vec![format!("{name}: no folder for {}", crate::support::BIN)])?;
    let shell =
        Shell::start(&work, &scratch, bin, lock).map_err(|e| vec![format!("{name}: {e}")])?;
    let mut runner = Runner {
        page: name,
        work,
        shell,
        last: None,
        named: HashMap::new(),
        jobs: Vec::new(),
        finished: HashMap::new(),
        summary: Summary::default(),
    };
    for step in steps {
        runner.step(step).map_err(|e| vec![e])?;
    }
    runner.finish().map_err(|e| vec![e])?;
    Ok(runner.summary)
}

impl Runner<'_> {
    fn step(&mut self, step: Step) -> Result<(), String> {
        match step {
            Step::NotRun { line, reason } => self.summary.not_run.push((line, reason)),
            Step::Block(block) => {
                if block.shown {
                    self.summary.shown += 1;
                } else {
                    self.summary.hidden += 1;
                }
                self.block(&block)?;
            }
            Step::Expect(expect) => self.expect(&expect)?,
            Step::File { line, name, text } => {
                let path = self.work.join(&name);
                if let Some(parent) = path.parent() {
                    std::fs::create_dir_all(parent)
                        .map_err(|e| format!("{}:{line}: {}: {e}", self.page, parent.display()))?;
                }
                std::fs::write(&path, text)
                    .map_err(|e| format!("{}:{line}: cannot write {name}: {e}", self.page))?;
            }
        }
        Ok(())
    }

    fn block(&mut self, block: &Block) -> Result<(), String> {
        let page = self.page;
        let person = match &block.answered_by {
            Some((line, commands)) => Some((*line, self.shell.spawn(commands)?)),
            None => None,
        };
        let (run_now, left_running) = match block.mode {
            Mode::Foreground => (&block.commands[..], None),
            _ => match block.commands.split_last() {
                Some((last, first)) => (first, Some(last)),
                None => (&block.commands[..], None),
            },
        };
        let mut printed = Ran::default();
        for (i, command) in run_now.iter().enumerate() {
            let want = if i + 1 == block.commands.len() {
                block.exit
            } else {
                0
            };
            let merged = command.shown.is_some();
            let ran = self
                .shell
                .run(&command.text, merged, WITHIN)
                .map_err(|e| format!("{page}:{}: `{}` {e}", command.line, command.text))?;
            if ran.status != want {
                return Err(format!(
                    "{page}:{}: `{}` exited with {} (the page expects {want}):\n{}{}",
                    command.line, command.text, ran.status, ran.stdout, ran.stderr
                ));
            }
            if let Some((line, shown)) = &command.shown {
                compare(shown, &ran.stdout, false).map_err(|e| format!("{page}:{line}: {e}"))?;
            }
            printed.stdout.push_str(&ran.stdout);
            printed.stderr.push_str(&ran.stderr);
        }
        self.last = Some(Printed::Done(printed));
        if let Some(command) = left_running {
            let server = block.mode == Mode::Server;
            if server {
                self.address_free(command.line)?;
            }
            let job = self.shell.spawn(&command.text)?;
            if server {
                self.server_ready(command.line, &job)?;
            } else {
                self.jobs.push((command.line, job.clone()));
            }
            if let Mode::Background(Some(name)) = &block.mode {
                self.named.insert(name.clone(), job.clone());
            }
            self.last = Some(Printed::Job { job, server });
        }
        if let Some((line, person)) = person {
            let ran = self.shell.wait(&person, WITHIN)?;
            if ran.status != 0 {
                return Err(format!(
                    "{page}:{line}: the commands answering the block failed ({}):\n{}{}",
                    ran.status, ran.stdout, ran.stderr
                ));
            }
        }
        Ok(())
    }

    /// Nothing answers at the page's address (a previous page's server may take a moment to go).
    fn address_free(&self, line: usize) -> Result<(), String> {
        let deadline = Instant::now() + Duration::from_secs(10);
        while TcpStream::connect(ADDRESS).is_ok() {
            if Instant::now() > deadline {
                return Err(format!(
                    "{}:{line}: something already listens on {ADDRESS}, where the page's \
                     server is to listen; stop it to run the handbook's commands",
                    self.page
                ));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(())
    }

    /// Waits for the page's server to answer `/healthz`; keeps the admin key a first start
    /// prints in `CHECK_ADMIN_KEY`.
    fn server_ready(&mut self, line: usize, job: &Job) -> Result<(), String> {
        let deadline = Instant::now() + Duration::from_secs(30);
        while !healthy() {
            if !job.running() || Instant::now() > deadline {
                let (stdout, stderr) = job.printed();
                return Err(format!(
                    "{}:{line}: the server did not start:\n{stdout}{stderr}",
                    self.page
                ));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let key = regex::Regex::new(r"ck_[0-9a-z]+_[0-9a-z]+").expect("a regex");
        let deadline = Instant::now() + Duration::from_secs(2);
        loop {
            let (_, stderr) = job.printed();
            if let Some(found) = key.find(&stderr) {
                return self.shell.set("CHECK_ADMIN_KEY", found.as_str());
            }
            if Instant::now() > deadline {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn expect(&mut self, expect: &Expect) -> Result<(), String> {
        let page = self.page;
        let line = expect.line;
        let target = match &expect.of {
            Some(name) => {
                let job = self.named.get(name).ok_or_else(|| {
                    format!("{page}:{line}: no background block is named {name:?} above")
                })?;
                Printed::Job {
                    job: job.clone(),
                    server: false,
                }
            }
            None => self
                .last
                .clone()
                .ok_or_else(|| format!("{page}:{line}: shown output with no block above it"))?,
        };
        let pick = |ran: &Ran| -> Result<String, String> {
            let text = match expect.stream {
                Stream::Stdout => &ran.stdout,
                Stream::Stderr => &ran.stderr,
            };
            match &expect.field {
                None => Ok(text.clone()),
                Some(field) => serde_json::from_str::<serde_json::Value>(text)
                    .ok()
                    .and_then(|v| v.get(field).cloned())
                    .map(|v| v.to_string())
                    .ok_or_else(|| format!("no JSON with a field {field:?} in:\n{text}")),
            }
        };
        let outcome = match target {
            Printed::Done(ran) => pick(&ran).and_then(|a| compare(&expect.text, &a, expect.json)),
            Printed::Job { job, server: true } => {
                // A server prints as it goes: what it printed so far, until it matches.
                let deadline = Instant::now() + Duration::from_secs(5);
                loop {
                    let (stdout, stderr) = job.printed();
                    let so_far = Ran {
                        status: 0,
                        stdout,
                        stderr,
                    };
                    let result = pick(&so_far).and_then(|a| compare(&expect.text, &a, expect.json));
                    if result.is_ok() || Instant::now() > deadline {
                        break result;
                    }
                    std::thread::sleep(Duration::from_millis(50));
                }
            }
            Printed::Job { job, server: false } => {
                let ran = self.ended(&job)?;
                pick(&ran).and_then(|a| compare(&expect.text, &a, expect.json))
            }
        };
        outcome.map_err(|e| format!("{page}:{line}: {e}"))
    }

    /// A background job's end: it must end, and exit 0.
    fn ended(&mut self, job: &Job) -> Result<Ran, String> {
        if let Some(ran) = self.finished.get(&job.pid) {
            return Ok(ran.clone());
        }
        let line = self
            .jobs
            .iter()
            .find(|(_, j)| j.pid == job.pid)
            .map_or(0, |(line, _)| *line);
        let ran = self
            .shell
            .wait(job, WITHIN)
            .map_err(|e| format!("{}:{line}: the background command {e}", self.page))?;
        if ran.status != 0 {
            return Err(format!(
                "{}:{line}: the background command exited with {}:\n{}{}",
                self.page, ran.status, ran.stdout, ran.stderr
            ));
        }
        self.finished.insert(job.pid, ran.clone());
        Ok(ran)
    }

    /// Every background command that ended by the page's end ended well; those still running
    /// (a stream, a server) are stopped with the page, as a reader's Ctrl-C would.
    fn finish(&mut self) -> Result<(), String> {
        for (_, job) in self.jobs.clone() {
            if !job.running() {
                self.ended(&job)?;
            }
        }
        Ok(())
    }
}

/// Whether the page's server answers `GET /healthz` with 200.
fn healthy() -> bool {
    use std::io::{Read, Write};
    let Ok(mut stream) = TcpStream::connect(ADDRESS) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
    let request = format!("GET /healthz HTTP/1.0\r\nHost: {ADDRESS}\r\n\r\n");
    let mut reply = String::new();
    stream.write_all(request.as_bytes()).is_ok()
        && stream.read_to_string(&mut reply).is_ok()
        && reply.starts_with("HTTP/1.")
        && reply.split(' ').nth(1) == Some("200")
}

/// The page's way of eliding, in snapbox's: `ck_...` is a key; `...` or `…` inside a line is
/// any text (a `...` line, any lines, is snapbox's own). In JSON only `…` elides: `"..."` is
/// snapbox's key wildcard there.
fn pattern(shown: &str, json: bool) -> String {
    let shown = shown.replace("ck_...", "[KEY]").replace('…', "[..]");
    if json {
        return shown;
    }
    shown
        .lines()
        .map(|line| {
            if line.trim() == "..." {
                "...".to_owned()
            } else {
                line.replace("...", "[..]")
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
        + if shown.ends_with('\n') { "\n" } else { "" }
}

/// Compares what a command printed with what the page shows.
fn compare(shown: &str, actual: &str, json: bool) -> Result<(), String> {
    let mut redactions = snapbox::Redactions::new();
    let placeholders = [
        ("[KEY]", r"ck_[0-9a-z]{16}_[0-9a-z]{32}"),
        ("[ID]", r"\b[0-9a-hjkmnp-tv-z]{26}\b"),
        (
            "[TIME]",
            r"\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)",
        ),
    ];
    for (placeholder, regex) in placeholders {
        let regex = regex::Regex::new(regex).expect("a regex");
        redactions
            .insert(placeholder, regex)
            .expect("a placeholder in brackets");
    }
    let expected = pattern(shown, json);
    let (expected, actual) = if json {
        let parse = |text: &str, what: &str| {
            serde_json::from_str::<serde_json::Value>(text)
                .map_err(|e| format!("{what} is not JSON ({e}):\n{text}"))
        };
        (
            snapbox::Data::json(parse(&expected, "the page's output")?),
            snapbox::Data::json(parse(actual, "what the command printed")?),
        )
    } else {
        (snapbox::Data::text(expected), snapbox::Data::text(actual))
    };
    snapbox::Assert::new()
        .redact_with(redactions)
        .try_eq(Some(&"what the command printed"), actual, expected)
        .map_err(|e| format!("expected the output the page shows, got other output:\n{e}"))
}

#[test]
fn the_handbooks_commands_run_and_print_what_the_pages_show() {
    if !tools_present() {
        return;
    }
    let docs = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/src");
    let lock = std::env::temp_dir().join("clarify-handbook-7420.lock");
    let mut failures = Vec::new();
    let mut report = Vec::new();
    for (page, needs) in PAGES {
        let name = format!("docs/src/{page}");
        if !present(needs, &format!("the commands of {name}")) {
            continue;
        }
        let started = Instant::now();
        let text = std::fs::read_to_string(docs.join(page))
            .unwrap_or_else(|e| panic!("{name} cannot be read: {e}"));
        match check_page(&name, &text, &lock) {
            Ok(summary) => {
                report.push(format!(
                    "{name}: {} blocks run, {} hidden, {} not run, {:.1} s",
                    summary.shown,
                    summary.hidden,
                    summary.not_run.len(),
                    started.elapsed().as_secs_f64()
                ));
                for (line, reason) in summary.not_run {
                    report.push(format!("  {name}:{line}: not run: {reason}"));
                }
            }
            Err(problems) => failures.extend(problems),
        }
    }
    eprintln!("{}", report.join("\n"));
    assert!(
        failures.is_empty(),
        "the handbook's commands do not do what its pages say:\n{}",
        failures.join("\n\n")
    );
}

/// A page for the runner's own checks, run in its own folder like the handbook's.
fn check(text: &str) -> Result<Summary, Vec<String>> {
    let lock = scratch_lock();
    check_page("p.md", text, &lock)
}

fn scratch_lock() -> PathBuf {
    // The runner's own checks start no server: they need not wait for the handbook's pages.
    std::env::temp_dir().join(format!(
        "clarify-handbook-check-{}.lock",
        std::process::id()
    ))
}

/// The runner fails a page whose command fails or whose shown output differs, naming the line,
/// and lets placeholders and elisions stand for what changes from run to run.
#[test]
fn the_runner_names_the_line_of_a_wrong_page() {
    if !tools_present() {
        return;
    }
    let good = "<!-- check: run\nprintf 'ck_%s_%s\\n' 0123456789abcdef 0123456789abcdefghjkmnpqrstvwxyz >key\n-->\n\n\
                ```sh\nGREETING=hello\ncat key\necho '{\"id\": \"01h0000000000000000000000a\", \"n\": 1}' >r.json\n```\n\n\
                <!-- check: output -->\n\n```text\nck_...\n```\n\n\
                ```console\n$ echo \"$GREETING\"; echo world >&2\nhel...\nworld\n$ cat r.json\n{\"id\": \"[ID]\", \"n\": 1}\n```\n\n\
                <!-- check: not run: needs a network -->\n\n```sh\ncurl https://example.com\n```\n";
    let summary = check(good).unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(summary.shown, 2);
    assert_eq!(summary.hidden, 1);
    assert_eq!(summary.not_run, [(28, "needs a network".to_owned())]);

    let failing = "# A page\n\n```sh\ntrue\nfalse\n```\n";
    let problems = check(failing).expect_err("a failing command fails the page");
    assert!(
        problems[0].starts_with("p.md:5: `false` exited with 1"),
        "{problems:?}"
    );

    let wrong = "```sh\necho hello\n```\n\n<!-- check: output -->\n\n```text\ngoodbye\n```\n";
    let problems = check(wrong).expect_err("wrong output fails the page");
    assert!(
        problems[0].starts_with("p.md:8: expected the output the page shows, got other output"),
        "{problems:?}"
    );
    assert!(problems[0].contains("hello"), "{problems:?}");

    let json = "```sh\necho '{\"a\": 1, \"b\": 2}'\n```\n\n<!-- check: output -->\n\n```json\n{\"a\": 1}\n```\n";
    let problems = check(json).expect_err("a field the page leaves out fails it");
    assert!(problems[0].starts_with("p.md:8: "), "{problems:?}");

    let background = "<!-- check: background slow -->\n\n```sh\nX=1\nsleep 0.2; echo $X; exit 3\n```\n\n\
                      <!-- check: output of slow -->\n\n```text\n1\n```\n";
    let problems = check(background).expect_err("a background command that fails fails the page");
    assert!(
        problems[0].starts_with("p.md:5: the background command exited with 3"),
        "{problems:?}"
    );
}
