//! Where the database is: the hosts a URL names, which of them clarify may write to, and the
//! task that follows the primary when a standby is promoted.
//!
//! PostgreSQL failover (a managed service, Patroni, CloudNativePG) is reached the way libpq
//! reaches it: a URL naming every host, `postgres://h1:5432,h2:5432/db`, or `host=h1,h2` with
//! `port=p1,p2`, and `target_session_attrs=read-write`, so that a client tries the hosts in order
//! and refuses one that only reads (a standby). sqlx 0.8 reads one host per URL and ignores
//! `target_session_attrs`, so the store adds both here rather than changing drivers: [`Hosts`]
//! parses the list into one sqlx `PgConnectOptions` per host, and [`Hosts::connect`] walks them,
//! asking each server it reaches `SHOW transaction_read_only` (or `pg_is_in_recovery()` for
//! `primary`) as libpq does.
//!
//! The pool is not swapped when the primary moves; it is re-pointed. It connects to one host at a
//! time, and [`follow_primary`] walks the list again whenever the primary may have gone (the
//! LISTEN connection dropped, the pool reached a read-only server, or a periodic check failed)
//! and hands the host it finds to `Pool::set_connect_options`. Statements go on using the one
//! pool without a lock around it, dead connections are dropped by the pool's own check before a
//! connection is handed out, and an acquire already retrying a refused connection lands on the
//! new primary once it is set. A URL with one host and no `target_session_attrs` is read by sqlx
//! exactly as before, and no follower runs for it.

use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use sqlx::postgres::{PgConnectOptions, PgConnection, PgPool};
use sqlx::{ConnectOptions, Connection};
use tokio::sync::{Notify, oneshot};

use super::{CONNECT_TIMEOUT, describe};

/// How often the follower checks, through the pool, that the pool's host still takes writes
/// when nothing told it otherwise. One trivial statement.
const FOLLOW_CHECK: Duration = Duration::from_secs(5);
/// How long that check may take before the follower looks for the primary elsewhere.
const FOLLOW_PROBE: Duration = Duration::from_secs(2);
/// Bounds of the pause between two walks that found no primary: short, because during a
/// failover every statement waits for the promotion to be noticed.
const FOLLOW_BACKOFF_MIN: Duration = Duration::from_millis(50);
const FOLLOW_BACKOFF_MAX: Duration = Duration::from_millis(500);

/// Which servers a connection may stay on, libpq's `target_session_attrs`. clarify writes, so
/// only the values that can reach a writable server are accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum SessionAttrs {
    /// Any server that accepts the connection (libpq's default).
    Any,
    /// A server whose sessions are not read-only: `SHOW transaction_read_only` is `off`.
    ReadWrite,
    /// A server not in recovery: `pg_is_in_recovery()` is false.
    Primary,
}

impl SessionAttrs {
    fn parse(value: &str) -> Result<Self, String> {
        match value {
            "any" => Ok(Self::Any),
            "read-write" => Ok(Self::ReadWrite),
            "primary" => Ok(Self::Primary),
            "read-only" | "standby" | "prefer-standby" => Err(format!(
                "target_session_attrs={value} would connect to a standby, where clarify cannot \
                 write; use read-write"
            )),
            other => Err(format!(
                "unknown target_session_attrs \"{other}\"; use read-write (or any, or primary)"
            )),
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            Self::Any => "any",
            Self::ReadWrite => "read-write",
            Self::Primary => "primary",
        }
    }

    /// Whether the server `conn` is connected to is one these attributes accept.
    pub(super) async fn accepts(self, conn: &mut PgConnection) -> Result<bool, sqlx::Error> {
        match self {
            Self::Any => Ok(true),
            Self::ReadWrite => {
                let read_only: String = sqlx::query_scalar("SHOW transaction_read_only")
                    .fetch_one(conn)
                    .await?;
                Ok(read_only != "on")
            }
            Self::Primary => {
                let recovering: bool = sqlx::query_scalar("SELECT pg_is_in_recovery()")
                    .fetch_one(conn)
                    .await?;
                Ok(!recovering)
            }
        }
    }
}

/// The hosts of a database URL, in the order they are tried, and what a server must be to be
/// kept (see the module comment).
#[derive(Clone)]
pub(super) struct Hosts {
    /// One set of options per host, never empty; they differ only in host and port.
    each: Vec<PgConnectOptions>,
    attrs: SessionAttrs,
}

impl Hosts {
    /// Reads `url` (a `postgres://` or `postgresql://` URL); the error says what is wrong with it.
    pub(super) fn parse(url: &str) -> Result<Self, String> {
        let url = url.trim();
        let Some((scheme, rest)) = url.split_once("://") else {
            return Err("not a URL".to_owned());
        };
        let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
        let (authority, tail) = rest.split_at(authority_end);
        let (userinfo, host_list) = match authority.rsplit_once('@') {
            Some((userinfo, hosts)) => (format!("{userinfo}@"), hosts),
            None => (String::new(), authority),
        };
        let (path, query) = tail.split_once('?').unwrap_or((tail, ""));

        let mut attrs = None;
        let mut query_hosts = None;
        let mut ports = None;
        let mut kept = Vec::new();
        for pair in query.split('&').filter(|pair| !pair.is_empty()) {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            match key {
                "target_session_attrs" => attrs = Some(SessionAttrs::parse(value)?),
                "host" if value.contains(',') => query_hosts = Some(list(value, "host")?),
                "port" if value.contains(',') => ports = Some(list(value, "port")?),
                _ => kept.push(pair),
            }
        }
        if attrs.is_none() && query_hosts.is_none() && ports.is_none() && !host_list.contains(',') {
            // One host, nothing of libpq's beyond what sqlx reads: sqlx reads the URL itself.
            let options = PgConnectOptions::from_str(url).map_err(|e| e.to_string())?;
            return Ok(Self {
                each: vec![options],
                attrs: SessionAttrs::Any,
            });
        }

        // Each host gets a URL of its own, with the rest of the URL as written.
        let urls: Vec<String> = match query_hosts {
            Some(_) if host_list.contains(',') => {
                return Err(
                    "hosts are listed both before the path and in host=; list them \
                            in one place"
                        .to_owned(),
                );
            }
            Some(hosts) => hosts
                .iter()
                .map(|host| {
                    with_query(scheme, &userinfo, host_list, path, &kept, &[("host", host)])
                })
                .collect(),
            None => list(host_list, "host")?
                .iter()
                .map(|host| with_query(scheme, &userinfo, host, path, &kept, &[]))
                .collect(),
        };
        let urls: Vec<String> = match ports {
            None => urls,
            Some(ports) if ports.len() == 1 || ports.len() == urls.len() => urls
                .iter()
                .enumerate()
                .map(|(i, url)| {
                    let port = &ports[i.min(ports.len() - 1)];
                    let separator = if url.contains('?') { '&' } else { '?' };
                    format!("{url}{separator}port={port}")
                })
                .collect(),
            Some(ports) => {
                return Err(format!(
                    "{} ports for {} hosts; give one port for all or one for each",
                    ports.len(),
                    urls.len()
                ));
            }
        };
        let each = urls
            .iter()
            .map(|url| PgConnectOptions::from_str(url).map_err(|e| e.to_string()))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self {
            each,
            attrs: attrs.unwrap_or(SessionAttrs::Any),
        })
    }

    /// Sets `application_name` on every host's options unless the URL named one.
    pub(super) fn name_connections(&mut self, name: &str) {
        for options in &mut self.each {
            if options.get_application_name().is_none() {
                *options = options.clone().application_name(name);
            }
        }
    }

    pub(super) fn attrs(&self) -> SessionAttrs {
        self.attrs
    }

    /// Whether the URL named more than one host (only then is there a primary to follow).
    pub(super) fn several(&self) -> bool {
        self.each.len() > 1
    }

    /// The options of every host, in the order they are tried.
    pub(super) fn each(&self) -> &[PgConnectOptions] {
        &self.each
    }

    /// The options of the `index`th host (as [`Hosts::connect`] returns it), else the first's.
    pub(super) fn options(&self, index: usize) -> &PgConnectOptions {
        self.each.get(index).unwrap_or(&self.each[0])
    }

    /// `host:port,host:port/database` for messages; never the password.
    pub(super) fn describe(&self) -> String {
        let hosts: Vec<String> = self.each.iter().map(describe).collect();
        hosts.join(", ")
    }

    /// A connection to the first host, in the URL's order, that answers and that the session
    /// attributes accept, and that host's index; else what each host said, joined.
    pub(super) async fn connect(&self) -> Result<(PgConnection, usize), String> {
        let mut failures = Vec::new();
        for (index, options) in self.each.iter().enumerate() {
            let target = describe(options);
            let mut conn = match tokio::time::timeout(CONNECT_TIMEOUT, options.connect()).await {
                Ok(Ok(conn)) => conn,
                Ok(Err(e)) => {
                    failures.push(format!("PostgreSQL at {target}: {e}"));
                    continue;
                }
                Err(_) => {
                    failures.push(format!(
                        "PostgreSQL at {target} did not answer within {} s",
                        CONNECT_TIMEOUT.as_secs()
                    ));
                    continue;
                }
            };
            match self.attrs.accepts(&mut conn).await {
                Ok(true) => return Ok((conn, index)),
                Ok(false) => failures.push(format!(
                    "PostgreSQL at {target} is read-only (a standby?), and the URL asks for \
                     target_session_attrs={}",
                    self.attrs.as_str()
                )),
                Err(e) => failures.push(format!("PostgreSQL at {target}: {e}")),
            }
            // Closing is a courtesy to the server; the connection is refused either way.
            let _ = conn.close().await;
        }
        Err(failures.join("; "))
    }
}

/// The comma-separated entries of `value`, none of them empty.
fn list(value: &str, what: &str) -> Result<Vec<String>, String> {
    let entries: Vec<String> = value.split(',').map(str::to_owned).collect();
    if entries.iter().any(String::is_empty) {
        return Err(format!("an empty {what} in the list \"{value}\""));
    }
    Ok(entries)
}

/// One host's URL: `host` in the authority, the query pairs `kept` and then `extra`.
fn with_query(
    scheme: &str,
    userinfo: &str,
    host: &str,
    path: &str,
    kept: &[&str],
    extra: &[(&str, &str)],
) -> String {
    let mut pairs: Vec<String> = kept.iter().map(|pair| (*pair).to_owned()).collect();
    pairs.extend(extra.iter().map(|(key, value)| format!("{key}={value}")));
    let query = if pairs.is_empty() {
        String::new()
    } else {
        format!("?{}", pairs.join("&"))
    };
    format!("{scheme}://{userinfo}{host}{path}{query}")
}

/// Keeps `pool` on a host the session attributes accept, until the backend is dropped: looks
/// again whenever `lost` is notified or the periodic check fails, and re-points the pool when
/// the primary has moved (see the module comment). `current` is the host the pool starts on.
pub(super) async fn follow_primary(
    hosts: Hosts,
    pool: PgPool,
    mut current: usize,
    lost: Arc<Notify>,
    mut stop: oneshot::Receiver<()>,
) {
    loop {
        tokio::select! {
            _ = &mut stop => return,
            () = lost.notified() => {}
            () = tokio::time::sleep(FOLLOW_CHECK) => {
                if still_accepted(&pool, hosts.attrs()).await {
                    continue;
                }
            }
        }
        let mut backoff = FOLLOW_BACKOFF_MIN;
        loop {
            let found = tokio::select! {
                _ = &mut stop => return,
                found = hosts.connect() => found,
            };
            match found {
                Ok((conn, index)) => {
                    let _ = conn.close().await;
                    if index != current {
                        tracing::warn!(
                            host = %describe(hosts.options(index)),
                            "the database's primary moved; connecting there"
                        );
                        pool.set_connect_options(hosts.options(index).clone());
                        current = index;
                    }
                    break;
                }
                Err(e) => {
                    tracing::warn!(error = %e, "no database host takes writes; looking again");
                    tokio::select! {
                        _ = &mut stop => return,
                        () = tokio::time::sleep(backoff) => {}
                    }
                    backoff = (backoff * 2).min(FOLLOW_BACKOFF_MAX);
                }
            }
        }
    }
}

/// Whether a connection from `pool` is to a server `attrs` accepts, within [`FOLLOW_PROBE`].
async fn still_accepted(pool: &PgPool, attrs: SessionAttrs) -> bool {
    let probe = async {
        let mut conn = pool.acquire().await?;
        attrs.accepts(&mut conn).await
    };
    matches!(
        tokio::time::timeout(FOLLOW_PROBE, probe).await,
        Ok(Ok(true))
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hosts(url: &str) -> Vec<String> {
        let parsed = Hosts::parse(url).unwrap_or_else(|e| panic!("{url}: {e}"));
        parsed.each.iter().map(describe).collect()
    }

    #[test]
    fn a_url_names_its_hosts_in_the_authority_or_in_host_and_port() {
        assert_eq!(hosts("postgres://u:p@db:6543/app"), ["db:6543/app"]);
        assert_eq!(
            hosts("postgres://u:p@h1:5432,h2:5433/app?target_session_attrs=read-write"),
            ["h1:5432/app", "h2:5433/app"]
        );
        assert_eq!(
            hosts("postgresql://h1,h2:5433/app"),
            ["h1:5432/app", "h2:5433/app"],
            "a host without a port has PostgreSQL's"
        );
        assert_eq!(
            hosts("postgres:///app?host=h1,h2&port=5432,5433&sslmode=disable"),
            ["h1:5432/app", "h2:5433/app"]
        );
        assert_eq!(
            hosts("postgres://h1,h2/app?port=6000"),
            ["h1:6000/app", "h2:6000/app"],
            "one port for every host"
        );
    }

    #[test]
    fn the_session_attributes_and_the_rest_of_the_url_apply_to_every_host() {
        let parsed = Hosts::parse(
            "postgres://clarify:secret@h1,h2/app?target_session_attrs=read-write&application_name=x",
        )
        .expect("parses");
        assert_eq!(parsed.attrs(), SessionAttrs::ReadWrite);
        assert!(parsed.several());
        for options in parsed.each() {
            assert_eq!(options.get_username(), "clarify");
            assert_eq!(options.get_database(), Some("app"));
            assert_eq!(options.get_application_name(), Some("x"));
        }
        let single = Hosts::parse("postgres://db/app?target_session_attrs=primary").expect("one");
        assert_eq!(single.attrs(), SessionAttrs::Primary);
        assert!(!single.several());
        assert_eq!(
            Hosts::parse("postgres://h1,h2/app")
                .expect("parses")
                .attrs(),
            SessionAttrs::Any,
            "libpq's default"
        );
    }

    #[test]
    fn a_url_clarify_cannot_write_through_says_why() {
        for (url, says) in [
            (
                "postgres://h1,h2/app?target_session_attrs=standby",
                "cannot write",
            ),
            (
                "postgres://h1,h2/app?target_session_attrs=readwrite",
                "unknown target_session_attrs \"readwrite\"",
            ),
            ("postgres://h1,,h2/app", "an empty host"),
            ("postgres://h1,h2,h3/app?port=1,2", "2 ports for 3 hosts"),
            ("postgres://h1,h2/app?host=h3,h4", "in one place"),
            ("postgres://h1,h2:x/app", "invalid port"),
        ] {
            let error = Hosts::parse(url)
                .err()
                .unwrap_or_else(|| panic!("{url} parsed"));
            assert!(error.contains(says), "{url}: {error}");
        }
    }

    #[tokio::test]
    async fn connecting_says_what_each_host_answered() {
        // Two ports nothing listens on: both named, in order.
        let closed = [free_port(), free_port()];
        let parsed = Hosts::parse(&format!(
            "postgres://127.0.0.1:{},127.0.0.1:{}/app?target_session_attrs=read-write",
            closed[0], closed[1]
        ))
        .expect("parses");
        let Err(error) = parsed.connect().await else {
            panic!("nothing listens on those ports");
        };
        let first = error
            .find(&format!("127.0.0.1:{}", closed[0]))
            .expect("first named");
        let second = error
            .find(&format!("127.0.0.1:{}", closed[1]))
            .expect("second named");
        assert!(first < second, "{error}");
    }

    fn free_port() -> u16 {
        std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .map(|addr| addr.port())
            .expect("a free port")
    }
}
