//! The `clarify` command: parses flags and calls into the library crates.

use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context as _;
use clap::{Parser, Subcommand};
use clarify_core::tool::{Format, definition_text};
use clarify_server::{AppState, Config};
use clarify_store::{Role, Store, StoreOptions};

/// Ask a human and wait for the answer.
#[derive(Debug, Parser)]
#[command(name = "clarify", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the server and the web inbox.
    ///
    /// Example: clarify serve --listen 127.0.0.1:7420 --db sqlite://clarify.db
    Serve(ServeArgs),
    /// Manage API keys, directly on the store (also while a server runs).
    ///
    /// Example: clarify keys create --role agent --name ci-bot
    Keys {
        #[command(subcommand)]
        command: KeysCommand,
        #[arg(
            long,
            env = "CLARIFY_DB",
            default_value = "sqlite://clarify.db",
            global = true
        )]
        db: String,
    },
    /// Print the LLM tool definition of `ask_human`.
    ///
    /// Example: clarify tools --format anthropic
    Tools {
        #[arg(long, default_value = "openai", value_parser = ["openai", "anthropic", "mcp"])]
        format: String,
    },
}

#[derive(Debug, clap::Args)]
struct ServeArgs {
    /// Address to listen on.
    #[arg(long, env = "CLARIFY_LISTEN", default_value = "127.0.0.1:7420")]
    listen: SocketAddr,
    /// The store: sqlite://PATH (default), postgres://... to share state between instances,
    /// or memory: (nothing persists).
    #[arg(long, env = "CLARIFY_DB", default_value = "sqlite://clarify.db")]
    db: String,
    /// The URL people reach this server at, for answer and login links
    /// (default: http://<listen address>).
    #[arg(long, env = "CLARIFY_PUBLIC_URL")]
    public_url: Option<String>,
    /// The most options a question may have (1 to 24).
    #[arg(long, default_value_t = 4)]
    max_options: usize,
    /// The wait before a failed webhook is retried; it doubles after each failure, up to an
    /// hour, for 25 hours.
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    webhook_first_retry: Duration,
}

/// Parses `500ms`, `10s`, `5m`, `2h` or a bare number of seconds.
fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let n: u64 = number
        .parse()
        .map_err(|_| format!("{text:?} is not a duration; write e.g. 30s, 10m or 2h"))?;
    let unit_ms: u64 = match unit.trim() {
        "ms" => 1,
        "" | "s" => 1_000,
        "m" => 60_000,
        "h" => 3_600_000,
        "d" => 86_400_000,
        other => return Err(format!("unknown unit {other:?}; use ms, s, m, h or d")),
    };
    n.checked_mul(unit_ms)
        .map(Duration::from_millis)
        .ok_or_else(|| format!("{text:?} is too long"))
}

#[derive(Debug, Subcommand)]
enum KeysCommand {
    /// Create a key; prints the key alone on stdout.
    ///
    /// Example: clarify keys create --role responder --name alice
    Create {
        /// agent, responder or admin.
        #[arg(long, value_parser = ["agent", "responder", "admin"])]
        role: String,
        #[arg(long)]
        name: String,
        #[arg(long, default_value = "default")]
        tenant: String,
    },
    /// List keys (never their secrets).
    List,
    /// Revoke the active key with this name; it stops working at once.
    Revoke { name: String },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("clarify: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(cli)) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("clarify: {e:#}");
            ExitCode::FAILURE
        }
    }
}

async fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Serve(args) => serve(args).await,
        Command::Keys { command, db } => keys(command, &db).await,
        Command::Tools { format } => {
            let format = Format::parse(&format).context("unknown format")?;
            print!("{}", definition_text(format));
            Ok(ExitCode::SUCCESS)
        }
    }
}

async fn serve(args: ServeArgs) -> anyhow::Result<ExitCode> {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .with_ansi(std::env::var_os("NO_COLOR").is_none())
        .init();
    let store = Store::open(&args.db, StoreOptions::default())
        .await
        .with_context(|| format!("cannot open the store {}", args.db))?;
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .with_context(|| {
            format!(
                "cannot listen on {}; is another server running there?",
                args.listen
            )
        })?;
    let local = listener.local_addr()?;
    let public_url = args.public_url.unwrap_or_else(|| format!("http://{local}"));
    let mut config = Config::new(public_url.clone());
    config.limits = clarify_core::Limits::new(args.max_options, 3600)
        .map_err(|e| anyhow::anyhow!("--max-options: {e}"))?;
    config.webhooks.first_backoff = chrono::TimeDelta::from_std(args.webhook_first_retry)
        .context("--webhook-first-retry is too long")?;
    if let Some((key, login)) = clarify_server::bootstrap(&store, &public_url).await? {
        eprintln!("clarify: created the first admin key (shown once; keep it):");
        eprintln!("  {}", key.token);
        eprintln!("clarify: open the inbox with this one-time login link (valid 24 hours):");
        eprintln!("  {login}");
    }
    let state = AppState::new(store, config).await?;
    tracing::info!(%local, backend = state.store.backend_name(), "clarify is serving; the inbox is at {public_url}/");
    clarify_server::serve(listener, state, shutdown_signal()).await?;
    tracing::info!("clarify stopped");
    Ok(ExitCode::SUCCESS)
}

/// Completes on SIGTERM or Ctrl-C.
async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {}
        () = terminate => {}
    }
    tracing::info!("shutting down: finishing in-flight requests");
}

async fn keys(command: KeysCommand, db: &str) -> anyhow::Result<ExitCode> {
    let options = StoreOptions {
        reaper_interval: None,
        ..StoreOptions::default()
    };
    let store = Store::open(db, options)
        .await
        .with_context(|| format!("cannot open the store {db}"))?;
    match command {
        KeysCommand::Create { role, name, tenant } => {
            let role = Role::parse(&role).context("unknown role; use agent, responder or admin")?;
            let key = store.create_key(&name, role, &tenant).await?;
            println!("{}", key.token);
        }
        KeysCommand::List => {
            println!(
                "{:<24} {:<10} {:<16} {:<26} STATUS",
                "NAME", "ROLE", "TENANT", "CREATED"
            );
            for k in store.keys().await? {
                let status = match k.revoked_at {
                    Some(at) => format!("revoked {}", at.format("%Y-%m-%d %H:%M")),
                    None => "active".to_owned(),
                };
                println!(
                    "{:<24} {:<10} {:<16} {:<26} {status}",
                    k.name,
                    k.role,
                    k.tenant,
                    k.created_at.format("%Y-%m-%d %H:%M:%S UTC").to_string()
                );
            }
        }
        KeysCommand::Revoke { name } => {
            let key = store.revoke_key(&name).await?;
            eprintln!(
                "clarify: revoked key {:?} (tenant {})",
                key.name, key.tenant
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}
