//! One page's shell: a `bash` that lives as long as the page, in the page's own folder, so that
//! variables, `export`s and background jobs carry from one block to the next as they do in a
//! reader's terminal. Each command's stdout and stderr go to files of their own; the shell tells
//! the runner on its own stdout when a command is done and with what status.
//!
//! The shell runs under `flock` on a lock file shared by every run of the suite on the machine,
//! held by the shell and everything it starts: pages run their servers on clarify's default
//! address, so two runs (two checkouts' test suites) take turns instead of colliding.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::Duration;

/// Commands the page's shell knows besides the page's own: what hidden directives use.
const PRELUDE: &str = r#"
# check_answer ARGS...: as a person in the inbox, answers the oldest pending request with
# `clarify answer ARGS`, waiting for one to be pending (the admin key the server printed).
check_answer() {
    local id=""
    for _ in $(seq 1 300); do
        id=$(clarify list --status pending --json --token "$CHECK_ADMIN_KEY" | tail -n 1 | jq -r .id)
        if [ -n "$id" ] && [ "$id" != null ]; then
            clarify answer "$id" --token "$CHECK_ADMIN_KEY" "$@" >/dev/null
            return
        fi
        sleep 0.1
    done
    echo "check_answer: no request was pending" >&2
    return 1
}
"#;

/// What a finished command printed, and its status.
#[derive(Debug, Default, Clone)]
pub struct Ran {
    pub status: i32,
    pub stdout: String,
    pub stderr: String,
}

/// A command left running in the background.
#[derive(Debug, Clone)]
pub struct Job {
    pub pid: u32,
    stdout: PathBuf,
    stderr: PathBuf,
}

#[derive(Debug)]
pub struct Shell {
    child: Child,
    stdin: ChildStdin,
    done: Receiver<String>,
    /// Where the commands' scripts and outputs go: beside the page's folder, not in it.
    scratch: PathBuf,
    count: usize,
}

impl Shell {
    /// A `bash` in `work` whose `PATH` starts with `bin_dir`, with nothing of the test's own
    /// environment but `PATH` (and `CHECK_REPO`, the repository, and `CHECK_CACHE`, a folder
    /// for package caches), under the lock file `lock`.
    pub fn start(work: &Path, scratch: &Path, bin_dir: &Path, lock: &Path) -> Result<Self, String> {
        let path = std::env::var("PATH").unwrap_or_default();
        let mut child = Command::new("flock")
            .arg(lock)
            .args(["bash", "--noprofile", "--norc", "-s"])
            .current_dir(work)
            .env_clear()
            .env("PATH", format!("{}:{path}", bin_dir.display()))
            .env("HOME", work)
            // The repository, for a page that reads one of its files (the example configuration).
            .env(
                "CHECK_REPO",
                Path::new(env!("CARGO_MANIFEST_DIR")).join("../.."),
            )
            // Where a page's downloads are kept between runs (pip's and npm's caches), outside
            // the page's folder, which is new each run: the SDK pages install packages.
            .env("CHECK_CACHE", cache_dir())
            .env("TMPDIR", scratch)
            .env("LC_ALL", "C.UTF-8")
            .env("NO_COLOR", "1")
            .env("TERM", "dumb")
            .process_group(0)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("cannot start flock and bash (util-linux, bash): {e}"))?;
        let stdin = child.stdin.take().ok_or("no stdin for bash")?;
        let stdout = child.stdout.take().ok_or("no stdout for bash")?;
        let (tx, done) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut shell = Self {
            child,
            stdin,
            done,
            scratch: scratch.to_owned(),
            count: 0,
        };
        shell.run(PRELUDE, false, Duration::from_secs(600))?;
        Ok(shell)
    }

    fn script(&mut self, text: &str) -> Result<(usize, PathBuf, PathBuf, PathBuf), String> {
        self.count += 1;
        let n = self.count;
        let script = self.scratch.join(format!("{n}.sh"));
        std::fs::write(&script, format!("{text}\n"))
            .map_err(|e| format!("cannot write {}: {e}", script.display()))?;
        Ok((
            n,
            script,
            self.scratch.join(format!("{n}.out")),
            self.scratch.join(format!("{n}.err")),
        ))
    }

    fn send(&mut self, line: &str) -> Result<(), String> {
        writeln!(self.stdin, "{line}")
            .and_then(|()| self.stdin.flush())
            .map_err(|e| format!("the page's shell is gone: {e}"))
    }

    /// Waits for the shell to say `check-done N VALUE`; the value.
    fn reply(&mut self, n: usize, within: Duration) -> Result<i64, String> {
        let want = format!("check-done {n} ");
        loop {
            let line = self
                .done
                .recv_timeout(within)
                .map_err(|_| format!("did not finish within {} s", within.as_secs()))?;
            if let Some(value) = line.strip_prefix(&want) {
                return value
                    .trim()
                    .parse()
                    .map_err(|_| format!("the shell said {line:?}"));
            }
        }
    }

    /// Runs `text` in the shell, waiting for it; with `merge`, stderr goes where stdout goes,
    /// in the order a terminal shows them.
    pub fn run(&mut self, text: &str, merge: bool, within: Duration) -> Result<Ran, String> {
        let (n, script, out, err) = self.script(text)?;
        let redirect = if merge {
            format!(">'{}' 2>&1", out.display())
        } else {
            format!(">'{}' 2>'{}'", out.display(), err.display())
        };
        self.send(&format!(
            "source '{}' {redirect} </dev/null; echo \"check-done {n} $?\"",
            script.display()
        ))?;
        let status = self.reply(n, within)?;
        Ok(Ran {
            status: i32::try_from(status).unwrap_or(-1),
            stdout: read(&out),
            stderr: read(&err),
        })
    }

    /// Starts `text` in the background; the job.
    pub fn spawn(&mut self, text: &str) -> Result<Job, String> {
        let (n, script, out, err) = self.script(text)?;
        self.send(&format!(
            "source '{}' >'{}' 2>'{}' </dev/null & echo \"check-done {n} $!\"",
            script.display(),
            out.display(),
            err.display()
        ))?;
        let pid = self.reply(n, Duration::from_secs(60))?;
        Ok(Job {
            pid: u32::try_from(pid).map_err(|_| format!("no job id: {pid}"))?,
            stdout: out,
            stderr: err,
        })
    }

    /// Waits for a background job to end; its status and output.
    pub fn wait(&mut self, job: &Job, within: Duration) -> Result<Ran, String> {
        self.count += 1;
        let n = self.count;
        self.send(&format!("wait {}; echo \"check-done {n} $?\"", job.pid))?;
        let status = self.reply(n, within)?;
        let (stdout, stderr) = job.printed();
        Ok(Ran {
            status: i32::try_from(status).unwrap_or(-1),
            stdout,
            stderr,
        })
    }

    /// Sets a shell variable (not exported) to `value`.
    pub fn set(&mut self, name: &str, value: &str) -> Result<(), String> {
        let quoted = value.replace('\'', r"'\''");
        let ran = self.run(
            &format!("{name}='{quoted}'"),
            false,
            Duration::from_secs(60),
        )?;
        if ran.status == 0 {
            Ok(())
        } else {
            Err(format!("cannot set {name}: {}", ran.stderr))
        }
    }
}

impl Job {
    /// What the job printed so far: (stdout, stderr).
    pub fn printed(&self) -> (String, String) {
        (read(&self.stdout), read(&self.stderr))
    }

    /// Whether the job is still running (not gone, nor a zombie its shell has yet to reap).
    pub fn running(&self) -> bool {
        std::fs::read_to_string(format!("/proc/{}/stat", self.pid)).is_ok_and(|stat| {
            stat.rsplit_once(')')
                .is_some_and(|(_, rest)| !rest.trim_start().starts_with(['Z', 'X']))
        })
    }
}

/// `$XDG_CACHE_HOME/clarify/handbook`, else `~/.cache/clarify/handbook`, as the SDKs' own
/// scripts keep their virtual environments under `~/.cache/clarify`.
fn cache_dir() -> PathBuf {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cache")))
        .unwrap_or_else(std::env::temp_dir);
    base.join("clarify").join("handbook")
}

fn read(path: &Path) -> String {
    std::fs::read(path)
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .unwrap_or_default()
}

impl Drop for Shell {
    /// Ends the shell and everything it started (servers, waiting commands): its process group.
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", self.child.id())])
            .status();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
