//! The log: stderr, filtered by `RUST_LOG`, as text or as one JSON object per line.
//!
//! Text is coloured only when stderr is a terminal and `NO_COLOR` is unset (or empty), so a log
//! file or pipeline never receives escape codes; [`colour_on`] is that rule for every output of
//! the binary. JSON lines (`--log-format json`) carry the
//! event's fields at the top level and, for HTTP requests, the `http` span (request id, method,
//! route) under `span`.

use std::io::IsTerminal;

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
        LogFormat::Text => builder.with_ansi(colour_on(&std::io::stderr())).init(),
        LogFormat::Json => builder
            .json()
            .flatten_event(true)
            .with_current_span(true)
            .with_span_list(false)
            .init(),
    }
}

/// Whether to colour what goes to `stream`: it is a terminal and `NO_COLOR` does not ask for
/// none. The one rule the log, the terminal rendering and the gate's log all follow.
pub fn colour_on(stream: &impl IsTerminal) -> bool {
    !no_color() && stream.is_terminal()
}

/// Whether `NO_COLOR` asks for no colour: set and not empty, as no-color.org says.
fn no_color() -> bool {
    std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty())
}
