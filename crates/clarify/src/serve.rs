//! `clarify serve`: the server and inbox on a store.

use std::process::ExitCode;

use anyhow::Context as _;
use clarify_server::{AppState, Config};
use clarify_store::{Store, StoreOptions};

use crate::ServeArgs;

/// Runs the server with `args`, where a setting not `given` as a flag (or its environment
/// variable) is taken from the configuration file when it has one.
/// Waiters allowed by default at most, and the open files kept for everything else.
const MOST_WAITERS: u64 = 100_000;
const FILES_KEPT: u64 = 1_024;

/// `--max-waiters` when not given: as many as the process may open files for, less
/// `FILES_KEPT` (the store, outbound calls and ordinary requests need files too), at most
/// `MOST_WAITERS`. Each waiter is one connection, so past the file limit new connections would
/// fail anyway; below it, the cap leaves a refusal a caller understands (`503 too_many_waiters`
/// with `Retry-After`) instead of a refused connection. The soft file limit is first raised to
/// the hard one, as a server expecting many connections should (the soft default of a shell is
/// often 1,024). A long-poll costs the server about 24 KiB (`BENCHMARKS.md`, "A fleet waiting
/// at once: every mode"), so the largest default, 100,000, is about 2.3 GiB; an MCP call about
/// 90 KiB, for which a small machine sets the flag lower (the handbook's performance page).
fn default_max_waiters() -> usize {
    let files = match rlimit::increase_nofile_limit(u64::MAX) {
        Ok(files) => files,
        Err(e) => {
            tracing::warn!(error = %e, "reading the open-file limit failed; allowing 1,024 waiters");
            return 1_024;
        }
    };
    let waiters = files.saturating_sub(FILES_KEPT).clamp(64, MOST_WAITERS);
    tracing::info!(
        open_files = files,
        max_waiters = waiters,
        "long-polls, event streams and /mcp calls open at once are capped by the open-file limit; raise it (LimitNOFILE, ulimit -n) for more"
    );
    usize::try_from(waiters).unwrap_or(usize::MAX)
}

pub async fn run(args: ServeArgs, given: &[String]) -> anyhow::Result<ExitCode> {
    let (args, channels, routes, mut people, rules, suggest, a2a, agui) = match &args.config {
        None => (
            args,
            Vec::new(),
            Vec::new(),
            People::default(),
            None,
            Default::default(),
            false,
            Vec::new(),
        ),
        Some(path) => {
            let mut file = crate::config::load(path).map_err(anyhow::Error::msg)?;
            let channels = std::mem::take(&mut file.channels);
            let routes = std::mem::take(&mut file.routes);
            let people = People {
                identities: std::mem::take(&mut file.identities),
                oidc: file.oidc.take(),
                groups: std::mem::take(&mut file.groups),
                forbid_self_approval: file.forbid_self_approval,
                push: std::mem::take(&mut file.push),
                receipts: std::mem::take(&mut file.receipts),
                oncall: std::mem::take(&mut file.oncall),
                step_up: file.step_up,
                max_extension: file.max_extension,
            };
            let rules = file.rules.take();
            let suggest = file.suggest;
            let agui = std::mem::take(&mut file.agui);
            (
                with_file(args, given, file.server),
                channels,
                routes,
                people,
                rules,
                suggest,
                file.a2a,
                agui,
            )
        }
    };
    crate::logs::init(args.log_format, "info");
    let retain_resolved = args
        .retain_resolved
        .map(chrono::TimeDelta::from_std)
        .transpose()
        .context("--retain-resolved is too long")?;
    if retain_resolved.is_some_and(|d| d.is_zero()) {
        anyhow::bail!("--retain-resolved must be longer than 0, e.g. 30d");
    }
    let deadlines = deadlines_by(&routes, people.max_extension);
    let announce = announce_by(routes);
    if let Some(rules) = &rules {
        tracing::info!(
            rules = rules.len(),
            "every new approval is decided by the rules first"
        );
    }
    let clock: std::sync::Arc<dyn clarify_store::Clock> =
        std::sync::Arc::new(clarify_store::SystemClock);
    let on_call = on_call_reader(
        std::mem::take(&mut people.oncall),
        &people.identities,
        &clock,
    )?;
    let options = StoreOptions {
        clock,
        on_call,
        retain_resolved,
        announce,
        rules,
        durability: match args.durability {
            Durability::Normal => clarify_store::Durability::Normal,
            Durability::Full => clarify_store::Durability::Full,
        },
        groups: std::sync::Arc::new(people.groups),
        forbid_self_approval: people.forbid_self_approval,
        step_up: people.step_up,
        ..StoreOptions::default()
    };
    let store = Store::open(&args.db, options)
        .await
        .with_context(|| format!("cannot open the store {}", args.db))?;
    store.set_deadlines(deadlines);
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .with_context(|| {
            format!(
                "cannot listen on {}; is another server running there?",
                args.listen
            )
        })?;
    let local = listener.local_addr()?;
    // Without a public URL, links name the listening address as this machine reaches it, so a
    // server on 0.0.0.0 (as in a container) prints links a browser here can open.
    let public_url = args
        .public_url
        .unwrap_or_else(|| crate::healthcheck::url_reaching(local));
    let mut config = Config::new(public_url.clone());
    config.limits = clarify_core::Limits::new(
        args.max_options,
        clarify_core::Limits::DEFAULT_TIMEOUT_SECONDS,
    )
    .map_err(|e| anyhow::anyhow!("--max-options: {e}"))?;
    config.webhooks.first_backoff = chrono::TimeDelta::from_std(args.webhook_first_retry)
        .context("--webhook-first-retry is too long")?;
    config.webhooks.timeout = args.webhook_timeout;
    config.max_waiters = match args.max_waiters {
        Some(n) => n,
        None => default_max_waiters(),
    };
    config.rate_limit = args.rate_limit;
    config.outbound = clarify_server::OutboundGuard::allowing(&args.outbound_allow)
        .map_err(|e| anyhow::anyhow!("--outbound-allow: {e}"))?;
    config.channels = channels;
    config.identities = people.identities;
    config.oidc = people.oidc;
    config.push = people.push;
    config.receipts = people.receipts;
    config.suggest = suggest;
    config.a2a = a2a;
    config.otlp = args
        .otlp_endpoint
        .as_deref()
        .map(clarify_server::OtlpConfig::new)
        .transpose()
        .map_err(|e| anyhow::anyhow!("--otlp-endpoint: {e}"))?;
    if let Some(otlp) = &config.otlp {
        tracing::info!(endpoint = %otlp.endpoint, "sending traces and metrics over OTLP/HTTP");
    }
    config.agui = agui.into_iter().map(std::sync::Arc::new).collect();
    if let Some(path) = &args.admin_key_file {
        admin_key_from(&store, path).await?;
    }
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

/// Stores the admin key in the file at `path` (`--admin-key-file`) unless it is stored already;
/// a file that cannot be read or holds no clarify key stops the start, naming the file.
async fn admin_key_from(store: &Store, path: &std::path::Path) -> anyhow::Result<()> {
    let named = || format!("the admin key file {}", path.display());
    let token = clarify_channels::config::read_secret_file(path)
        .map_err(|e| anyhow::anyhow!("--admin-key-file (CLARIFY_ADMIN_KEY_FILE): {e}"))?;
    match store.ensure_admin_key(&token).await {
        Ok(clarify_store::Ensured::Created(key)) => {
            tracing::info!(name = %key.name, file = %path.display(), "stored the admin key from the file");
        }
        Ok(clarify_store::Ensured::Present(_)) => {}
        Ok(clarify_store::Ensured::Revoked(key)) => {
            tracing::warn!(
                name = %key.name,
                file = %path.display(),
                "the admin key in the file was revoked and stays revoked; give a new one from `clarify keys generate`, or none"
            );
        }
        Err(clarify_store::AdminKeyError::Store(e)) => {
            return Err(anyhow::Error::new(e).context(format!("storing {}", named())));
        }
        Err(e) => anyhow::bail!("{}: {e}", named()),
    }
    Ok(())
}

/// Who answers, as the configuration file says: `[identities]`, `[oidc]`, `[groups]`,
/// `[decisions]`, and how they are notified: `[push]`; and where on-call schedules are read:
/// `[oncall]`.
#[derive(Default)]
struct People {
    identities: std::collections::BTreeMap<String, String>,
    oidc: Option<clarify_server::state::OidcConfig>,
    groups: std::collections::BTreeMap<String, Vec<String>>,
    forbid_self_approval: bool,
    push: clarify_server::state::push::PushConfig,
    receipts: clarify_server::state::receipts::ReceiptsConfig,
    /// `[oncall]`: where `oncall:` responders are read.
    oncall: clarify_server::state::oncall::OnCallConfig,
    step_up: Option<clarify_core::Risk>,
    /// `[decisions] max_extension`, in seconds.
    max_extension: Option<u64>,
}

/// Warnings and extensions as the configuration sets them: the routes' `warn_before` and
/// `[decisions] max_extension` (`seconds`).
fn deadlines_by(
    routes: &[clarify_channels::Route],
    seconds: Option<u64>,
) -> clarify_store::Deadlines {
    let mut deadlines = clarify_store::Deadlines::default();
    if routes.iter().any(|r| r.warn_before.is_some()) {
        let routes = routes.to_vec();
        deadlines.warn_before = Some(clarify_store::WarnBefore(std::sync::Arc::new(
            move |tenant: &str, request: &_| {
                clarify_channels::warn_before_for(&routes, tenant, request)
            },
        )));
    }
    if let Some(max) = seconds
        .and_then(|s| i64::try_from(s).ok())
        .and_then(chrono::TimeDelta::try_seconds)
    {
        deadlines.max_extension = max;
    }
    deadlines
}

/// The store's announcer for `routes`: none without routes.
fn announce_by(routes: Vec<clarify_channels::Route>) -> Option<clarify_store::Announce> {
    (!routes.is_empty()).then(|| {
        clarify_store::Announce(std::sync::Arc::new(move |tenant: &str, request: &_| {
            clarify_channels::channels_for(&routes, tenant, request)
        }))
    })
}

/// The reader of `oncall:` responders that `[oncall]` configures, naming people through
/// `identities`; `None` when no schedule service is configured.
fn on_call_reader(
    oncall: clarify_server::state::oncall::OnCallConfig,
    identities: &std::collections::BTreeMap<String, String>,
    clock: &std::sync::Arc<dyn clarify_store::Clock>,
) -> anyhow::Result<Option<clarify_store::OnCall>> {
    if !oncall.is_configured() {
        return Ok(None);
    }
    let directory = clarify_server::state::oncall::Directory::new(
        oncall,
        identities.clone(),
        std::sync::Arc::clone(clock),
    )
    .map_err(anyhow::Error::msg)?;
    Ok(Some(std::sync::Arc::new(directory).reader()))
}

/// What a request created in the store of a server configured by the file at `path` gets from
/// that file, as the server itself would give it: the channels its routes announce it on, the
/// rules that decide it first, its warning period (the routes' `warn_before`, `[decisions]
/// max_extension`), and its `oncall:` responders read through `[oncall]`. For a process other
/// than `clarify serve` that creates requests there (`clarify mcp` on the store).
pub(crate) fn creating(
    path: Option<&std::path::Path>,
) -> anyhow::Result<(StoreOptions, clarify_store::Deadlines)> {
    let Some(path) = path else {
        return Ok((StoreOptions::default(), clarify_store::Deadlines::default()));
    };
    let mut file = crate::config::load(path).map_err(anyhow::Error::msg)?;
    let routes = std::mem::take(&mut file.routes);
    let deadlines = deadlines_by(&routes, file.max_extension);
    let clock: std::sync::Arc<dyn clarify_store::Clock> =
        std::sync::Arc::new(clarify_store::SystemClock);
    let on_call = on_call_reader(std::mem::take(&mut file.oncall), &file.identities, &clock)?;
    let options = StoreOptions {
        clock,
        on_call,
        announce: announce_by(routes),
        rules: file.rules.take(),
        groups: std::sync::Arc::new(std::mem::take(&mut file.groups)),
        forbid_self_approval: file.forbid_self_approval,
        step_up: file.step_up,
        ..StoreOptions::default()
    };
    Ok((options, deadlines))
}

/// How a SQLite store makes its commits durable (`--durability`).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Durability {
    /// WAL with synchronous=NORMAL: survives a crash of the process.
    Normal,
    /// synchronous=FULL: each group commit is fsynced; survives a power loss too.
    Full,
}

/// `args` with the file's `[server]` keys for the settings no flag gave.
fn with_file(mut args: ServeArgs, given: &[String], file: crate::config::Server) -> ServeArgs {
    let flag = |id: &str| given.iter().any(|g| g == id);
    macro_rules! take {
        ($($field:ident),*) => {$(
            if !flag(stringify!($field)) {
                if let Some(v) = file.$field {
                    args.$field = v.into();
                }
            }
        )*};
    }
    take!(
        listen,
        db,
        public_url,
        max_options,
        webhook_first_retry,
        webhook_timeout,
        max_waiters,
        rate_limit,
        retain_resolved,
        durability,
        log_format,
        outbound_allow,
        otlp_endpoint
    );
    args
}

/// Completes on SIGTERM or Ctrl-C.
pub(crate) async fn shutdown_signal() {
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
