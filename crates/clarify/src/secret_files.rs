//! Secrets from files for the environment variables that hold one: `CLARIFY_DB_FILE` names a
//! file holding what `CLARIFY_DB` would, `CLARIFY_TOKEN_FILE` one holding `CLARIFY_TOKEN`, as
//! Kubernetes and compose mount secrets (`/run/secrets/...`).
//!
//! clap reads each option's environment variable itself and knows no `_FILE` convention, so
//! before it parses, [`apply`] walks the command tree and, for every option whose variable is
//! in [`SECRET_VARIABLES`] and whose `_FILE` variable is set, makes the file's content (its
//! trailing line breaks trimmed) that option's default: a flag still wins, as it wins over its
//! variable. A variable set beside its `_FILE`, or a file that cannot be read or is empty, is an
//! error only for a command that reads the variable ([`FromFiles::failure`]): `clarify
//! healthcheck` in a container whose database file is missing still says whether the server
//! answers.

use std::collections::BTreeMap;
use std::ffi::OsString;

/// The environment variables that hold a secret, each of which may be given as a file by
/// `<NAME>_FILE`.
pub const SECRET_VARIABLES: [&str; 2] = ["CLARIFY_DB", "CLARIFY_TOKEN"];

/// What [`apply`] did: the options it gave a default from a file, and the options whose
/// variable's file failed, each under the path of the command that declares it.
#[derive(Debug, Default)]
pub struct FromFiles {
    /// (command path, option id) of each option given a default from a file.
    pub given: Vec<(Vec<String>, String)>,
    /// (command path, message) of each option whose file failed.
    failures: Vec<(Vec<String>, String)>,
}

impl FromFiles {
    /// The failure, if any, of an option the command at `path` (e.g. `["keys", "create"]`)
    /// reads: one declared on it or on a command above it.
    pub fn failure(&self, path: &[String]) -> Option<&str> {
        self.failures
            .iter()
            .find(|(at, _)| path.starts_with(at))
            .map(|(_, message)| message.as_str())
    }

    /// The ids of the options of the command at `path` given a default from a file.
    pub fn given_at<'a>(&'a self, path: &'a [&str]) -> impl Iterator<Item = &'a str> + 'a {
        self.given
            .iter()
            .filter(move |(at, _)| at.iter().map(String::as_str).eq(path.iter().copied()))
            .map(|(_, id)| id.as_str())
    }
}

/// `cmd` with every secret option whose `_FILE` variable is set (as `env` reads variables)
/// defaulting to its file's content; and what was done.
pub fn apply(
    cmd: clap::Command,
    env: &dyn Fn(&str) -> Option<OsString>,
) -> (clap::Command, FromFiles) {
    let mut read: BTreeMap<&'static str, Result<Option<&'static str>, String>> = BTreeMap::new();
    for name in SECRET_VARIABLES {
        read.insert(name, from_file(name, env));
    }
    let mut done = FromFiles::default();
    let cmd = walk(cmd, &mut Vec::new(), &read, &mut done);
    (cmd, done)
}

/// The secret the `_FILE` variable of `name` gives: `None` when it is not set. The text is
/// leaked to be `'static`, as clap's defaults are without its `string` feature: once per
/// variable in a process that holds the secret until it ends anyway.
fn from_file(
    name: &str,
    env: &dyn Fn(&str) -> Option<OsString>,
) -> Result<Option<&'static str>, String> {
    let file_var = format!("{name}_FILE");
    let Some(path) = env(&file_var).filter(|p| !p.is_empty()) else {
        return Ok(None);
    };
    if env(name).is_some() {
        return Err(format!(
            "{name} and {file_var} are both set; keep one (the file is for secrets mounted as files)"
        ));
    }
    let text = clarify_channels::config::read_secret_file(std::path::Path::new(&path))
        .map_err(|e| format!("{file_var}: {e}"))?;
    Ok(Some(Box::leak(text.into_boxed_str())))
}

fn walk(
    mut cmd: clap::Command,
    path: &mut Vec<String>,
    read: &BTreeMap<&'static str, Result<Option<&'static str>, String>>,
    done: &mut FromFiles,
) -> clap::Command {
    let secret_args: Vec<(String, &'static str)> = cmd
        .get_arguments()
        .filter_map(|arg| {
            let env = arg.get_env()?.to_str()?;
            let name = SECRET_VARIABLES.into_iter().find(|n| *n == env)?;
            Some((arg.get_id().as_str().to_owned(), name))
        })
        .collect();
    for (id, name) in secret_args {
        match read.get(name) {
            Some(Ok(Some(secret))) => {
                cmd = cmd.mut_arg(&id, |arg| {
                    arg.default_value(*secret).hide_default_value(true)
                });
                done.given.push((path.clone(), id));
            }
            Some(Err(message)) => done.failures.push((path.clone(), message.clone())),
            Some(Ok(None)) | None => {}
        }
    }
    let subcommands: Vec<String> = cmd
        .get_subcommands()
        .map(|s| s.get_name().to_owned())
        .collect();
    for name in subcommands {
        path.push(name.clone());
        cmd = cmd.mut_subcommand(&name, |sub| walk(sub, path, read, done));
        path.pop();
    }
    cmd
}

#[cfg(test)]
mod tests {
    use super::*;

    fn command() -> clap::Command {
        clap::Command::new("clarify")
            .subcommand(
                clap::Command::new("serve")
                    .arg(
                        clap::Arg::new("db")
                            .long("db")
                            .env("CLARIFY_DB")
                            .default_value("sqlite://clarify.db"),
                    )
                    .arg(
                        clap::Arg::new("listen")
                            .long("listen")
                            .env("CLARIFY_LISTEN"),
                    ),
            )
            .subcommand(
                clap::Command::new("keys")
                    .arg(
                        clap::Arg::new("db")
                            .long("db")
                            .env("CLARIFY_DB")
                            .global(true),
                    )
                    .subcommand(clap::Command::new("list")),
            )
            .subcommand(clap::Command::new("tools"))
    }

    fn parse(env: &[(&str, &str)], args: &[&str]) -> (FromFiles, Option<clap::ArgMatches>) {
        let vars: BTreeMap<String, OsString> = env
            .iter()
            .map(|(k, v)| ((*k).to_owned(), OsString::from(v)))
            .collect();
        let (cmd, done) = apply(command(), &|n| vars.get(n).cloned());
        // clap reads the process's own variables, which this test leaves alone: the defaults
        // from files are what it checks.
        (done, cmd.try_get_matches_from(args).ok())
    }

    #[test]
    fn a_file_becomes_the_options_default_and_a_flag_still_wins() {
        let dir = tempfile::tempdir().expect("temp dir");
        let file = dir.path().join("db");
        std::fs::write(&file, "postgres://u:pw@db/clarify\n").expect("write");
        let env = [("CLARIFY_DB_FILE", file.to_str().expect("utf-8"))];
        let (done, matches) = parse(&env, &["clarify", "serve"]);
        let m = matches.expect("parses");
        let serve = m.subcommand_matches("serve").expect("serve");
        assert_eq!(
            serve.get_one::<String>("db").map(String::as_str),
            Some("postgres://u:pw@db/clarify")
        );
        assert_eq!(done.given_at(&["serve"]).collect::<Vec<_>>(), ["db"]);
        let (_, matches) = parse(&env, &["clarify", "keys", "list"]);
        let m = matches.expect("parses");
        let list = m
            .subcommand_matches("keys")
            .and_then(|k| k.subcommand_matches("list"))
            .expect("keys list");
        assert_eq!(
            list.get_one::<String>("db").map(String::as_str),
            Some("postgres://u:pw@db/clarify"),
            "a global option takes it too"
        );
        let (_, matches) = parse(&env, &["clarify", "serve", "--db", "memory:"]);
        let m = matches.expect("parses");
        assert_eq!(
            m.subcommand_matches("serve")
                .and_then(|s| s.get_one::<String>("db"))
                .map(String::as_str),
            Some("memory:")
        );
    }

    #[test]
    fn a_failure_is_one_only_for_the_commands_that_read_the_variable() {
        let dir = tempfile::tempdir().expect("temp dir");
        let missing = dir.path().join("missing");
        let (done, _) = parse(
            &[("CLARIFY_DB_FILE", missing.to_str().expect("utf-8"))],
            &["clarify", "tools"],
        );
        let path = |p: &[&str]| p.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        let failure = done.failure(&path(&["serve"])).expect("serve reads it");
        assert!(
            failure.starts_with(&format!(
                "CLARIFY_DB_FILE: cannot read {}: ",
                missing.display()
            )),
            "{failure}"
        );
        assert!(done.failure(&path(&["keys", "list"])).is_some());
        assert_eq!(done.failure(&path(&["tools"])), None);

        let file = dir.path().join("db");
        std::fs::write(&file, "sqlite://x.db").expect("write");
        let (done, _) = parse(
            &[
                ("CLARIFY_DB_FILE", file.to_str().expect("utf-8")),
                ("CLARIFY_DB", "sqlite://y.db"),
            ],
            &["clarify", "tools"],
        );
        assert_eq!(
            done.failure(&path(&["serve"])),
            Some(
                "CLARIFY_DB and CLARIFY_DB_FILE are both set; keep one (the file is for secrets \
                 mounted as files)"
            )
        );
        let empty = dir.path().join("empty");
        std::fs::write(&empty, "\n\n").expect("write");
        let (done, _) = parse(
            &[("CLARIFY_DB_FILE", empty.to_str().expect("utf-8"))],
            &["clarify", "tools"],
        );
        assert_eq!(
            done.failure(&path(&["serve"])),
            Some(format!("CLARIFY_DB_FILE: {} is empty", empty.display()).as_str())
        );
    }
}
