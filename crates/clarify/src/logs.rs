//! The log: stderr, filtered by `RUST_LOG`, as text or as one JSON object per line.
//!
//! Text is coloured only when stderr is a terminal and `NO_COLOR` is unset (or empty), so a log
//! file or pipeline never receives escape codes. JSON lines (`--log-format json`) carry the
//! event's fields at the top level and, for HTTP requests, the `http` span (request id, method,
//! route) under `span`.

use std::io::IsTerminal as _;

/// How log lines are written.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line.
    Json,
}

/// Installs the process's log writer; `default_filter` applies when `RUST_LOG` is unset.
pub fn init(format: LogFormat, default_filter: &str) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| default_filter.into());
    let builder = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(filter);
    match format {
        LogFormat::Text => builder.with_ansi(coloured()).init(),
        LogFormat::Json => builder
            .json()
            .flatten_event(true)
            .with_current_span(true)
            .with_span_list(false)
            .init(),
    }
}

fn coloured() -> bool {
    std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()) && std::io::stderr().is_terminal()
}
