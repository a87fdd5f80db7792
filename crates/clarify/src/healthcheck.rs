//! `clarify healthcheck`: asks a server whether it is alive (`/healthz`) or ready (`/readyz`)
//! and exits 0 or 1, for a container's `HEALTHCHECK` or a systemd watchdog script where no curl
//! is installed.
//!
//! Without `--url` it asks the server this environment configures: the address in
//! `CLARIFY_LISTEN` (an unspecified address, `0.0.0.0` or `::`, is reached on loopback), or
//! clarify's default `127.0.0.1:7420`.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;

/// How long the check waits for the whole answer: a health check that hangs is a failed one,
/// and orchestrators run their own, longer timeout around it.
const TIMEOUT: Duration = Duration::from_secs(3);

/// clarify's own listening address when `CLARIFY_LISTEN` is not set.
const DEFAULT_LISTEN: &str = "127.0.0.1:7420";

#[derive(Debug, Args)]
pub struct HealthcheckArgs {
    /// The server's base URL (default: http:// and the address in CLARIFY_LISTEN, 0.0.0.0
    /// reached as 127.0.0.1, or http://127.0.0.1:7420).
    #[arg(long)]
    url: Option<String>,
    /// Ask /readyz (the store answers and the server is not shutting down) instead of /healthz
    /// (the process answers).
    #[arg(long)]
    ready: bool,
}

/// Runs the check: exit 0 on `200`, else 1 with one line on stderr saying why.
pub async fn run(args: HealthcheckArgs) -> anyhow::Result<ExitCode> {
    let base = match args.url {
        Some(url) => url,
        None => match default_url(std::env::var("CLARIFY_LISTEN").ok().as_deref()) {
            Ok(url) => url,
            Err(e) => {
                eprintln!("clarify: healthcheck: {e}");
                return Ok(ExitCode::FAILURE);
            }
        },
    };
    let path = if args.ready { "/readyz" } else { "/healthz" };
    let url = format!("{}{path}", base.trim_end_matches('/'));
    match check(&url).await {
        Ok(()) => Ok(ExitCode::SUCCESS),
        Err(why) => {
            eprintln!("clarify: healthcheck: {url}: {why}");
            Ok(ExitCode::FAILURE)
        }
    }
}

/// `Ok` when `url` answers `200` within [`TIMEOUT`]; otherwise why not, in a few words.
async fn check(url: &str) -> Result<(), String> {
    // No proxy: a proxy set for the server's outbound calls must not stand between a health
    // check and the server beside it.
    let client = clarify_client::http::builder()
        .no_proxy()
        .timeout(TIMEOUT)
        .build()
        .map_err(|e| format!("cannot make an HTTP client: {e}"))?;
    let response = client.get(url).send().await.map_err(|e| {
        if e.is_timeout() {
            format!("no answer within {} s", TIMEOUT.as_secs())
        } else if e.is_builder() {
            "is not an http:// or https:// URL".to_owned()
        } else {
            format!("cannot connect ({})", root_cause(&e))
        }
    })?;
    let status = response.status();
    if status == reqwest::StatusCode::OK {
        return Ok(());
    }
    // The API's error body names the reason (`shutting_down`, `store_unavailable`).
    let body = response.text().await.unwrap_or_default();
    let code = serde_json::from_str::<serde_json::Value>(&body)
        .ok()
        .and_then(|v| v["error"]["code"].as_str().map(str::to_owned));
    Err(match code {
        Some(code) => format!("answered {status} ({code})"),
        None => format!("answered {status}"),
    })
}

/// The innermost error's message: reqwest's own says only "error sending request".
fn root_cause(e: &(dyn std::error::Error + 'static)) -> String {
    let mut cause = e;
    while let Some(inner) = cause.source() {
        cause = inner;
    }
    cause.to_string()
}

/// The URL of the server listening on `listen` (`CLARIFY_LISTEN`), or on clarify's default.
pub(crate) fn default_url(listen: Option<&str>) -> Result<String, String> {
    let text = listen
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .unwrap_or(DEFAULT_LISTEN);
    let addr: SocketAddr = text
        .parse()
        .map_err(|_| format!("CLARIFY_LISTEN={text:?} is not an address such as 0.0.0.0:7420"))?;
    Ok(url_reaching(addr))
}

/// The `http://` URL that reaches, from this machine, a server listening on `addr`: an
/// unspecified address (0.0.0.0, [::]) is one a server listens on but no browser or client can
/// open, so it is reached on loopback of the same family instead.
pub(crate) fn url_reaching(addr: SocketAddr) -> String {
    let ip = match addr.ip() {
        IpAddr::V4(ip) if ip.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
        IpAddr::V6(ip) if ip.is_unspecified() => IpAddr::V6(Ipv6Addr::LOCALHOST),
        ip => ip,
    };
    format!("http://{}", SocketAddr::new(ip, addr.port()))
}

#[cfg(test)]
mod tests {
    use super::default_url;

    #[test]
    fn the_default_url_follows_clarify_listen() {
        let check = |listen: Option<&str>, expected: &str| {
            assert_eq!(default_url(listen).as_deref(), Ok(expected), "{listen:?}");
        };
        check(None, "http://127.0.0.1:7420");
        check(Some(""), "http://127.0.0.1:7420");
        check(Some("0.0.0.0:7420"), "http://127.0.0.1:7420");
        check(Some("10.1.2.3:8080"), "http://10.1.2.3:8080");
        check(Some("[::]:9000"), "http://[::1]:9000");
        check(Some("[fd00::5]:9000"), "http://[fd00::5]:9000");
        let bad = default_url(Some("localhost")).expect_err("not an address");
        assert!(bad.contains("CLARIFY_LISTEN=\"localhost\""), "{bad}");
    }
}
