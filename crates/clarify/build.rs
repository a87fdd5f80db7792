//! Names the commit and its date that `clarify --version` prints: `clarify 0.1.0 (3f2a9c1e4b7d
//! 2026-11-28)`.
//!
//! A release script sets `CLARIFY_BUILD_COMMIT` and `CLARIFY_BUILD_DATE`; otherwise a release
//! build (any profile inheriting `release`) asks git, and says `unknown` when there is no git or
//! no repository (a source archive). Debug builds, which the tests use, do not ask git: watching
//! the repository's head would rebuild the binary and every test target of this package after
//! each commit, for a line nobody reads in a debug build.

use std::path::PathBuf;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=CLARIFY_BUILD_COMMIT");
    println!("cargo:rerun-if-env-changed=CLARIFY_BUILD_DATE");
    let given = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
    let release = std::env::var("PROFILE").is_ok_and(|p| p == "release");
    let from_git = if release { git_head() } else { None };
    let commit = given("CLARIFY_BUILD_COMMIT")
        .or_else(|| from_git.as_ref().map(|(c, _)| c.clone()))
        .unwrap_or_else(|| "unknown".to_owned());
    let date = given("CLARIFY_BUILD_DATE")
        .or_else(|| from_git.map(|(_, d)| d))
        .unwrap_or_else(|| "unknown".to_owned());
    println!("cargo:rustc-env=CLARIFY_COMMIT={}", commit.trim());
    println!("cargo:rustc-env=CLARIFY_COMMIT_DATE={}", date.trim());
}

/// The head commit (12 hex digits) and its date (YYYY-MM-DD), asking cargo to run this again
/// when the head moves.
fn git_head() -> Option<(String, String)> {
    let git = |args: &[&str]| {
        let out = Command::new("git").args(args).output().ok()?;
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
            .filter(|s| !s.is_empty())
    };
    let commit = git(&["rev-parse", "--short=12", "HEAD"])?;
    let date = git(&["log", "-1", "--format=%cs", "HEAD"])?;
    // HEAD names the branch; the branch's file (or packed-refs) names the commit. `--git-path`
    // finds each in a worktree too.
    let mut watched = vec!["HEAD".to_owned(), "packed-refs".to_owned()];
    if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
        watched.push(branch);
    }
    for name in watched {
        if let Some(path) = git(&["rev-parse", "--git-path", &name]) {
            let path = PathBuf::from(path);
            if path.exists() {
                println!("cargo:rerun-if-changed={}", path.display());
            }
        }
    }
    Some((commit, date))
}
