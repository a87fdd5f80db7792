//! `clarify gate`: an approval gate in front of another MCP server, on stdio.
//!
//! Parses the flags and hands over to `clarify_mcp::gate`, where the proxy lives. Approvals go
//! to the clarify server at `CLARIFY_URL` with the key in `CLARIFY_TOKEN`; stdout carries only
//! MCP messages, logs go to stderr.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use clarify_client::Client;
use clarify_mcp::Upstream;
use clarify_mcp::gate::{GateOptions, GatedServer};

use crate::duration::parse_duration;

#[derive(Debug, Args)]
pub struct GateArgs {
    /// A TOML file with `allow` and `deny` lists of tool-name patterns; other calls ask a human.
    #[arg(long)]
    policy: Option<PathBuf>,
    /// A configuration file whose `[gate]` section is the policy, unless `--policy` is given.
    #[arg(long, env = "CLARIFY_CONFIG")]
    config: Option<PathBuf>,
    /// Gate the MCP server at this Streamable HTTP URL instead of starting COMMAND.
    #[arg(long, conflicts_with = "command")]
    url: Option<String>,
    /// The clarify server approvals go to.
    #[arg(long, env = "CLARIFY_URL", default_value = "http://127.0.0.1:7420")]
    clarify_url: String,
    /// Its API key (an agent key).
    #[arg(long, env = "CLARIFY_TOKEN", hide_env_values = true)]
    token: Option<String>,
    /// How often a call waiting for a human sends a progress notification.
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    progress_interval: Duration,
    /// The MCP server to start, speaking MCP on stdio.
    #[arg(last = true, value_name = "COMMAND")]
    command: Vec<String>,
}

pub async fn run(args: GateArgs) -> anyhow::Result<ExitCode> {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into()),
        )
        .with_ansi(crate::logs::colour_on(&std::io::stderr()))
        .init();
    if args.progress_interval.is_zero() {
        anyhow::bail!("--progress-interval must be longer than 0, e.g. 10s");
    }
    let policy =
        crate::policy::load_or_section(args.policy.as_deref(), args.config.as_deref(), |c| c.gate)?;
    let server = match (args.url, args.command.split_first()) {
        (Some(url), None) => GatedServer::Url(url),
        (None, Some((program, rest))) => GatedServer::Command {
            program: program.clone(),
            args: rest.to_vec(),
        },
        _ => anyhow::bail!(
            "name the MCP server to gate: `clarify gate -- COMMAND [ARGS...]` or `clarify gate --url URL`"
        ),
    };
    let approvals = Upstream::server(Client::new(&args.clarify_url, args.token)?);
    let options = GateOptions {
        policy,
        progress_interval: args.progress_interval,
    };
    clarify_mcp::gate::serve_stdio(server, approvals, options, crate::serve::shutdown_signal())
        .await?;
    Ok(ExitCode::SUCCESS)
}
