//! `clarify mcp`: the MCP server on stdio, for MCP clients that start it as a subprocess.
//!
//! By default it opens the store itself (`--db`, the same SQLite file `clarify serve` uses), so
//! a person answers through that server's inbox; with `CLARIFY_URL` set it sends every request
//! to that server instead, with the key in `CLARIFY_TOKEN`. On its own store it queues channel
//! announcements by the routes of `--config` (or `CLARIFY_CONFIG`), as the server would, for the
//! server's worker to send. stdout carries only MCP messages;
//! logs go to stderr (warnings and errors unless `RUST_LOG` says otherwise).

use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use clarify_client::Client;
use clarify_core::Limits;
use clarify_mcp::{ClarifyMcp, Embedded, Options, Upstream};

use crate::duration::parse_duration;

#[derive(Debug, Args)]
pub struct McpArgs {
    /// The store, when no server is named: sqlite://PATH (by default the file `clarify serve`
    /// uses in this directory), postgres://..., or memory:.
    #[arg(long, env = "CLARIFY_DB", default_value = "sqlite://clarify.db")]
    db: String,
    /// The tenant whose requests are created and read in the store.
    #[arg(long, default_value = "default")]
    tenant: String,
    /// The most options a question may have in the store (1 to 24).
    #[arg(long, default_value_t = 4)]
    max_options: usize,
    /// A clarify server to send requests to instead of opening a store.
    #[arg(long, env = "CLARIFY_URL")]
    url: Option<String>,
    /// The server's API key (an agent key), with --url.
    #[arg(long, env = "CLARIFY_TOKEN", hide_env_values = true)]
    token: Option<String>,
    /// How often a waiting ask_human sends a progress notification.
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    progress_interval: Duration,
    /// The configuration file of the server sharing the store: a request made here gets what
    /// that server would give it: its `[[routes]]`' channels (that server's worker sends them)
    /// and warning period, its `[[rules]]`, and its `oncall:` responders read through
    /// `[oncall]`.
    #[arg(long, env = "CLARIFY_CONFIG")]
    config: Option<std::path::PathBuf>,
}

pub async fn run(args: McpArgs) -> anyhow::Result<ExitCode> {
    crate::logs::init(crate::logs::LogFormat::Text, "warn");
    if args.progress_interval.is_zero() {
        anyhow::bail!("--progress-interval must be longer than 0, e.g. 10s");
    }
    let upstream = match args.url.as_deref().map(str::trim).filter(|u| !u.is_empty()) {
        Some(url) => {
            if args.token.as_deref().is_none_or(str::is_empty) {
                tracing::warn!(
                    "CLARIFY_TOKEN is not set; {url} will refuse requests without a key"
                );
            }
            Upstream::server(Client::new(url, args.token.clone())?)
        }
        None => {
            let limits = Limits::new(args.max_options, Limits::DEFAULT_TIMEOUT_SECONDS)
                .map_err(|e| anyhow::anyhow!("--max-options: {e}"))?;
            let (options, deadlines) = crate::serve::creating(args.config.as_deref())?;
            // Made when it is not there, as `clarify serve` makes it: an MCP client starts this
            // command on its own, before or without a server; stderr says which store it is.
            let store = crate::store_arg::open(
                &args.db,
                options,
                crate::store_arg::Missing::Create,
                crate::store_arg::Use::Write,
            )
            .await?;
            store.set_deadlines(deadlines);
            Upstream::Store(Embedded::new(store, args.tenant, limits))
        }
    };
    let options = Options {
        progress_interval: args.progress_interval,
        ..Options::default()
    };
    ClarifyMcp::new(upstream, options)
        .serve_stdio(crate::serve::shutdown_signal())
        .await?;
    Ok(ExitCode::SUCCESS)
}
