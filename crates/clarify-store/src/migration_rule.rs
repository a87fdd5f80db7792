//! The rule every schema migration keeps, checked on the migration SQL of both backends: a
//! migration only adds (tables, columns that are nullable or have a default, indexes), so the
//! previous release keeps working on a database the new one has migrated, which is what a
//! rolling upgrade runs for a while (both releases serving one PostgreSQL database).
//!
//! Taking something away (a `DROP`, a `RENAME`, a column made `NOT NULL` or given another type,
//! a `NOT NULL` column added without a default, which the previous release's inserts do not
//! fill) is the contracting step of an upgrade, and comes one release after the one that stopped
//! reading the thing: the release that stops reading it ships first, and only a later one drops
//! it, once no released binary still running reads it. Such a step is listed in [`CONTRACTIONS`]
//! with the release that stopped reading the name, and the check refuses it while that release
//! is the one being built (`CARGO_PKG_VERSION`). Anything else that takes away is refused.
//!
//! The check reads statements, not SQL's grammar: each statement of a migration (comments
//! removed, split at `;`, which no migration uses inside a string) is matched by its leading
//! words, which is all the migrations' plain DDL needs.

/// A contracting statement a migration may make, and why it is safe.
pub(crate) struct Contraction {
    /// `"sqlite"` or `"postgres"`.
    pub backend: &'static str,
    /// The schema version whose migration makes it.
    pub schema: i64,
    /// The table, column or index it drops or renames, as the statement spells it.
    pub name: &'static str,
    /// Why no running binary is hurt.
    pub safe: Safe,
}

/// Why a contraction hurts no binary still running.
pub(crate) enum Safe {
    /// A table rebuilt under its own name in one migration (SQLite's way of changing a table
    /// beyond `ADD COLUMN`): the copy is dropped or renamed, and every column stays, so the
    /// previous release reads and writes the rebuilt table as before.
    Rebuilt,
    /// A step made before the rule was written, kept because an applied migration never
    /// changes; says what a rolling upgrade across it meets, which the handbook's upgrades page
    /// repeats.
    Before(&'static str),
    /// No binary from this release on reads the name; the drop ships in a later release.
    Retired {
        /// The release (`[workspace.package] version`) that stopped reading it.
        unread_since: &'static str,
    },
}

/// The contracting steps the migrations make, each with why it is safe.
pub(crate) const CONTRACTIONS: &[Contraction] = &[
    // Schema 10 drops the event log's AUTOINCREMENT by copying `events` into `events_v10`,
    // dropping `events` and renaming the copy back, with every column kept.
    Contraction {
        backend: "sqlite",
        schema: 10,
        name: "events",
        safe: Safe::Rebuilt,
    },
    Contraction {
        backend: "sqlite",
        schema: 10,
        name: "events_v10",
        safe: Safe::Rebuilt,
    },
    // Schema 3 gives every grant an id and then requires one.
    Contraction {
        backend: "postgres",
        schema: 3,
        name: "clarify_grants",
        safe: Safe::Before(
            "a schema-2 instance's grant, written beside a schema-3 one, has no id and is refused; \
             upgrade across schema 3 with the older instances stopped",
        ),
    },
];

/// A statement that takes something away, found in a migration.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Taken {
    /// The schema version of the migration.
    pub schema: i64,
    /// What it does, in upper case (`DROP TABLE`, `RENAME`, `SET NOT NULL`, ...).
    pub what: &'static str,
    /// The name it takes away, lower case.
    pub name: String,
    /// The statement, its whitespace collapsed.
    pub statement: String,
}

impl std::fmt::Display for Taken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "schema {}: {} of `{}` in `{}`",
            self.schema, self.what, self.name, self.statement
        )
    }
}

/// Every statement of `migrations` (entry `i` bringing the schema to version `i + 1`) that takes
/// something away.
pub(crate) fn taken(migrations: &[&str]) -> Vec<Taken> {
    let mut found = Vec::new();
    for (schema, sql) in (1_i64..).zip(migrations) {
        let without_comments: String = sql
            .lines()
            .map(|line| line.split("--").next().unwrap_or_default())
            .collect::<Vec<_>>()
            .join(" ");
        for statement in without_comments.split(';') {
            // A comma is a word of its own: it ends one action of an `ALTER TABLE`.
            let spaced = statement.replace(',', " , ");
            let words: Vec<&str> = spaced.split_whitespace().collect();
            if words.is_empty() {
                continue;
            }
            for (what, name) in takes(&words) {
                found.push(Taken {
                    schema,
                    what,
                    name,
                    statement: words.join(" "),
                });
            }
        }
    }
    found
}

/// What one statement (its words) takes away: `(what, name)` pairs.
fn takes(words: &[&str]) -> Vec<(&'static str, String)> {
    let upper: Vec<String> = words.iter().map(|w| w.to_ascii_uppercase()).collect();
    let at = |i: usize| upper.get(i).map(String::as_str).unwrap_or_default();
    let name_after = |i: usize| {
        let i = if at(i) == "IF" && at(i + 1) == "EXISTS" {
            i + 2
        } else {
            i
        };
        words
            .get(i)
            .map(|w| w.trim_matches('"').to_ascii_lowercase())
            .unwrap_or_default()
    };
    let mut out = Vec::new();
    if at(0) == "DROP" {
        let what = match at(1) {
            "TABLE" => "DROP TABLE",
            "INDEX" => "DROP INDEX",
            "VIEW" => "DROP VIEW",
            "TRIGGER" => "DROP TRIGGER",
            "TYPE" => "DROP TYPE",
            "FUNCTION" => "DROP FUNCTION",
            _ => "DROP",
        };
        out.push((what, name_after(2)));
        return out;
    }
    if at(0) != "ALTER" || at(1) != "TABLE" {
        return out;
    }
    let table = name_after(2);
    // An ALTER TABLE may hold several actions, separated by commas (PostgreSQL).
    let mut i = 3;
    while i < upper.len() {
        match at(i) {
            "DROP" if at(i + 1) == "COLUMN" => out.push(("DROP COLUMN", name_after(i + 2))),
            "DROP" if at(i + 1) == "CONSTRAINT" => out.push(("DROP CONSTRAINT", name_after(i + 2))),
            "RENAME" if at(i + 1) == "TO" => out.push(("RENAME", table.clone())),
            "RENAME" if at(i + 1) == "COLUMN" => out.push(("RENAME", name_after(i + 2))),
            "TYPE" if at(i.saturating_sub(2)) == "ALTER" || at(i.saturating_sub(2)) == "COLUMN" => {
                out.push(("ALTER COLUMN TYPE", name_after(i - 1)))
            }
            "SET" if at(i + 1) == "NOT" && at(i + 2) == "NULL" => {
                out.push(("SET NOT NULL", table.clone()))
            }
            "ADD" => {
                // A column the previous release's inserts do not fill must be nullable or have
                // a default.
                let column = if at(i + 1) == "COLUMN" { i + 2 } else { i + 1 };
                let end = (i + 1..upper.len())
                    .find(|&j| matches!(at(j), "," | "ADD"))
                    .unwrap_or(upper.len());
                let clause = &upper[i..end];
                let not_null = clause.windows(2).any(|w| w[0] == "NOT" && w[1] == "NULL");
                let defaulted = clause.iter().any(|w| w == "DEFAULT");
                let constraint = matches!(
                    at(i + 1),
                    "CONSTRAINT" | "PRIMARY" | "UNIQUE" | "CHECK" | "FOREIGN"
                );
                if not_null && !defaulted && !constraint {
                    out.push(("ADD COLUMN NOT NULL without a default", name_after(column)));
                }
            }
            _ => {}
        }
        i += 1;
    }
    out
}

/// Checks one backend's migrations against the rule, failing with every statement that breaks
/// it.
pub(crate) fn check(backend: &str, migrations: &[&str]) -> Result<(), String> {
    check_at(backend, migrations, CONTRACTIONS, env!("CARGO_PKG_VERSION"))
}

fn check_at(
    backend: &str,
    migrations: &[&str],
    contractions: &[Contraction],
    release: &str,
) -> Result<(), String> {
    let mut problems = Vec::new();
    let taken = taken(migrations);
    // A listed step no migration makes any more would let a new one through unseen.
    for c in contractions.iter().filter(|c| c.backend == backend) {
        if !taken
            .iter()
            .any(|t| t.schema == c.schema && t.name == c.name)
        {
            problems.push(format!(
                "{backend} schema {}: `{}` is listed in migration_rule::CONTRACTIONS but no \
                 migration takes it away",
                c.schema, c.name
            ));
        }
    }
    for taken in taken {
        let listed = contractions
            .iter()
            .find(|c| c.backend == backend && c.schema == taken.schema && c.name == taken.name);
        match listed.map(|c| &c.safe) {
            None => problems.push(format!(
                "{backend} {taken}: a migration only adds (tables, nullable or defaulted columns, \
                 indexes); take a name away one release after the release that stopped reading \
                 it, listed in migration_rule::CONTRACTIONS"
            )),
            Some(Safe::Retired { unread_since }) if *unread_since == release => {
                problems.push(format!(
                    "{backend} {taken}: release {release} stopped reading `{}` and cannot also \
                     drop it, since the previous release, still running during a rolling \
                     upgrade, reads it; drop it in a later release",
                    taken.name
                ))
            }
            Some(Safe::Before(meets)) if meets.trim().is_empty() => problems.push(format!(
                "{backend} {taken}: say what a rolling upgrade across it meets"
            )),
            Some(_) => {}
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("\n"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check_one(sql: &str, contractions: &[Contraction], release: &str) -> Result<(), String> {
        // The offending migration comes as schema 2, after a first that creates.
        check_at(
            "postgres",
            &["CREATE TABLE t (a text, b text)", sql],
            contractions,
            release,
        )
    }

    #[test]
    fn migrations_that_only_add_pass() {
        for sql in [
            "CREATE TABLE u (a text NOT NULL); CREATE INDEX u_a ON u (a)",
            "ALTER TABLE t ADD COLUMN c text",
            "ALTER TABLE t ADD COLUMN n bigint NOT NULL DEFAULT 0",
            "ALTER TABLE t ADD COLUMN x text, ADD COLUMN y int DEFAULT 1 NOT NULL",
            "UPDATE t SET b = a WHERE b IS NULL",
            "-- DROP TABLE t is only a comment here\nCREATE INDEX t_b ON t (b)",
        ] {
            assert_eq!(check_one(sql, &[], "0.2.0"), Ok(()), "{sql}");
        }
    }

    #[test]
    fn a_migration_that_takes_away_is_refused_naming_what_it_takes() {
        for (sql, what, name) in [
            ("DROP TABLE t", "DROP TABLE", "t"),
            ("drop table if exists t", "DROP TABLE", "t"),
            ("ALTER TABLE t DROP COLUMN b", "DROP COLUMN", "b"),
            ("ALTER TABLE t RENAME COLUMN b TO c", "RENAME", "b"),
            ("ALTER TABLE t RENAME TO u", "RENAME", "t"),
            ("DROP INDEX t_b", "DROP INDEX", "t_b"),
            (
                "ALTER TABLE t ALTER COLUMN b TYPE bigint",
                "ALTER COLUMN TYPE",
                "b",
            ),
            (
                "ALTER TABLE t ALTER COLUMN b SET NOT NULL",
                "SET NOT NULL",
                "t",
            ),
            (
                "ALTER TABLE t ADD COLUMN c text NOT NULL",
                "ADD COLUMN NOT NULL without a default",
                "c",
            ),
        ] {
            let Err(problem) = check_one(sql, &[], "0.2.0") else {
                panic!("`{sql}` passed");
            };
            assert!(
                problem.contains(&format!("schema 2: {what} of `{name}`")),
                "`{sql}`: {problem}"
            );
        }
    }

    #[test]
    fn a_drop_in_the_release_that_stopped_reading_the_name_is_refused_and_passes_a_release_later() {
        let retired = [Contraction {
            backend: "postgres",
            schema: 2,
            name: "b",
            safe: Safe::Retired {
                unread_since: "0.2.0",
            },
        }];
        let sql = "ALTER TABLE t DROP COLUMN b";
        let Err(problem) = check_one(sql, &retired, "0.2.0") else {
            panic!("dropped in the release that stopped reading it");
        };
        assert!(problem.contains("cannot also drop it"), "{problem}");
        assert_eq!(check_one(sql, &retired, "0.3.0"), Ok(()));
        // Listed for another backend or another schema, it is not listed.
        assert!(check_at("sqlite", &["", sql], &retired, "0.3.0").is_err());
        assert!(check_one(&format!("SELECT 1; {sql}"), &retired, "0.3.0").is_ok());
        assert!(check_at("postgres", &["", "", sql], &retired, "0.3.0").is_err());
        // Listed, but no migration makes it any more.
        let Err(problem) = check_at("postgres", &["CREATE TABLE t (a text)"], &retired, "0.3.0")
        else {
            panic!("a listed step no migration makes passed");
        };
        assert!(problem.contains("no migration takes it away"), "{problem}");
    }
}
