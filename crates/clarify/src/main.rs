//! The `clarify` command: parses flags and calls into the library crates.
//!
//! Server commands (`serve`, `keys`, `audit`, `backup`) work on a store; client commands (`ask`, `inbox`,
//! `answer`, `list`, `show`, `cancel`, `hook`, `acp`) talk HTTP to a running server at `CLARIFY_URL` with the key in
//! `CLARIFY_TOKEN`; `mcp` serves MCP on stdio over either. Errors are one line on stderr saying what went wrong and what to do.

mod acp;
mod agui;
mod audit;
mod client;
mod config;
mod duration;
mod gate;
mod healthcheck;
mod hook;
mod inbox;
mod keys;
mod logs;
mod mcp;
mod policy;
mod receipts;
#[cfg(test)]
mod reference;
mod render;
mod report;
mod secret_files;
mod serve;
mod settings;
mod store_arg;

use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand};
use clarify_core::tool::{Format, definition_text};

use crate::duration::parse_duration;

// The server allocates and frees many small buffers per request from two threads; glibc's
// allocator spent about a sixth of the server's CPU on that (consolidating and unmapping).
// Built without transparent huge pages (the `no_thp` feature): with them, mimalloc's arena was
// backed by 2 MiB pages and an idle server held 26 MB resident instead of 16 MB, with no
// throughput to show for it (BENCHMARKS.md, "Footprint"). Without the `mimalloc` feature the
// system's allocator serves, so that heap profilers which replace `malloc` see every allocation.
#[cfg(feature = "mimalloc")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// What `clarify --version` prints after the name: the version, the commit and its date (see
/// `build.rs`; `unknown` when the build did not know them).
const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (",
    env!("CLARIFY_COMMIT"),
    " ",
    env!("CLARIFY_COMMIT_DATE"),
    ")"
);

/// Ask a human and wait for the answer.
#[derive(Debug, Parser)]
#[command(name = "clarify", version = VERSION, about, max_term_width = 100)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the server and the web inbox.
    #[command(
        after_help = "Example:\n  clarify serve --listen 127.0.0.1:7420 --db sqlite://clarify.db"
    )]
    Serve(ServeArgs),
    /// Ask a question and wait for the answer; prints it (exit 0), or exits 3 skipped, 4 expired,
    /// 5 cancelled.
    #[command(
        after_help = "Examples:\n  clarify ask 'Deploy to prod?' -c yes -c no\n  if [ \"$(clarify ask 'Deploy to prod?' -c yes -c no)\" = yes ]; then ./deploy; fi\n  clarify ask 'Which regions?' -c eu -c us -c asia --multi --timeout 10m --json"
    )]
    Ask(client::AskArgs),
    /// Answer pending requests one after another, by typed replies; works with piped input.
    #[command(
        after_help = "Replies: 2 or b picks the second option; a label picks it by name; 1,3 picks several\non a multi question; other text is a free-text answer where allowed; s skips;\napprovals take approve or deny, optionally with a scope (approve session) or a\nreason (deny not on Fridays).\n\nExample:\n  printf '1\\n' | clarify inbox"
    )]
    Inbox(client::Connection),
    /// Answer one request.
    #[command(
        after_help = "Examples:\n  clarify answer 01j9... --option yes\n  clarify answer 01j9... --approve --scope session\n  clarify answer 01j9... --body '{\"answers\": {\"q1\": {\"text\": \"Friday\"}, \"q2\": {\"option\": \"eu\"}}}'"
    )]
    Answer(client::AnswerArgs),
    /// List requests, newest first.
    #[command(after_help = "Example:\n  clarify list --status pending --json")]
    List(client::ListArgs),
    /// Show one request and, once resolved, its outcome.
    #[command(after_help = "Example:\n  clarify show 01j9...")]
    Show(client::ShowArgs),
    /// Cancel a pending request.
    #[command(after_help = "Example:\n  clarify cancel 01j9...")]
    Cancel(client::CancelArgs),
    /// Move a pending request's deadline later, as someone who may answer it (up to the
    /// server's `[decisions] max_extension`); prints the new deadline.
    #[command(after_help = "Example:\n  clarify extend 01j9... --by 30m")]
    Extend(client::ExtendArgs),
    /// Manage API keys, directly on the store (also while a server runs).
    #[command(
        after_help = "Examples:\n  clarify keys create --role agent --name ci-bot --db sqlite:///srv/clarify/clarify.db\n  clarify keys create --role admin --name me --create   (a new store here, before the first serve)\n  clarify keys list\n  clarify keys revoke ci-bot\n  clarify keys generate > admin.key   (for serve --admin-key-file; touches no store)\n\ncreate and revoke name the store they used on stderr. Use the server's store (its\n--db, or CLARIFY_DB): a SQLite file that does not exist is refused, unless keys\ncreate is given --create."
    )]
    Keys {
        #[command(subcommand)]
        command: KeysCommand,
        /// The store: sqlite://PATH or postgres://...
        #[arg(
            long,
            env = "CLARIFY_DB",
            default_value = "sqlite://clarify.db",
            global = true
        )]
        db: String,
    },
    /// Verify or export the hash-chained event log, directly on the store.
    #[command(
        after_help = "Examples:\n  clarify audit verify --db sqlite://clarify.db\n  clarify audit export --since 7d > audit.jsonl\n\nverify exits 0 printing how many events it checked, or 1 naming the first event\nwhose hash does not match its content and the event before it."
    )]
    Audit {
        #[command(subcommand)]
        command: AuditCommand,
        /// The store: sqlite://PATH or postgres://...
        #[arg(
            long,
            env = "CLARIFY_DB",
            default_value = "sqlite://clarify.db",
            global = true
        )]
        db: String,
    },
    /// Check a decision's signed receipt offline, or rotate the key receipts are signed with.
    #[command(
        after_help = "Examples:\n  clarify receipts verify \"$RECEIPT\" --jwks https://clarify.example.com/.well-known/jwks.json \\\n      --action transfer --arguments '{\"amount\": 100, \"to\": \"bob\"}'\n  clarify receipts verify @receipt.jws --jwks jwks.json --arguments @args.json\n  clarify receipts rotate --db sqlite:///srv/clarify/clarify.db\n\nverify exits 0 when the signature matches a key of the set and the receipt approves the\naction with exactly those arguments (compared by their RFC 8785 canonical form), 1 otherwise,\nwith one line saying why. Without --jwks it fetches the server's at CLARIFY_URL. rotate\nworks directly on the store; receipts signed before still verify."
    )]
    Receipts {
        #[command(subcommand)]
        command: ReceiptsCommand,
        /// The store (for rotate): sqlite://PATH or postgres://...
        #[arg(
            long,
            env = "CLARIFY_DB",
            default_value = "sqlite://clarify.db",
            global = true
        )]
        db: String,
    },
    /// Write an evidence pack of a tenant's decisions: every decision, the insights and their
    /// charts, the audit chain's head and how to verify it.
    #[command(
        after_help = "Examples:\n  clarify report --since 30d --out report.html\n  clarify report --since 2026-10-01T00:00:00Z --format csv --out decisions.csv\n  clarify report --format json --db postgres://clarify@db/clarify\n  clarify report --url https://clarify.example.com --out report.html   (key in CLARIFY_TOKEN)\n\nHTML is one self-contained file (its style and charts inline; nothing is fetched) that\nprints; JSON holds the same content for programs; CSV one line per decision. Reads the\nstore directly, also while servers use it, or a running server with an admin key."
    )]
    Report {
        /// The period: a duration back from now (30d, 12h) or an RFC 3339 time.
        #[arg(long, default_value = "30d")]
        since: String,
        #[arg(long, default_value = "html", value_parser = ["html", "json", "csv"])]
        format: String,
        /// The file to write; standard output when absent. A file that exists is refused unless
        /// --force.
        #[arg(long)]
        out: Option<std::path::PathBuf>,
        /// Replace the --out file when it exists.
        #[arg(long, requires = "out")]
        force: bool,
        /// The store: sqlite://PATH or postgres://...
        #[arg(long, env = "CLARIFY_DB", default_value = "sqlite://clarify.db")]
        db: String,
        /// The tenant whose decisions to report (with --db; over --url it is the key's).
        #[arg(long, default_value = "default")]
        tenant: String,
        /// Read from a running server instead of the store: its URL, or CLARIFY_URL when given
        /// without one. Needs an admin key (--token or CLARIFY_TOKEN); --db is then not read.
        #[arg(long, num_args = 0..=1, default_missing_value = "")]
        url: Option<String>,
        /// An admin key (`ck_...`), with --url.
        #[arg(long, env = "CLARIFY_TOKEN", hide_env_values = true)]
        token: Option<String>,
    },
    /// Write a consistent copy of a SQLite store to a new file, also while servers use it.
    #[command(
        after_help = "Example:\n  clarify backup --db sqlite://clarify.db backups/clarify-$(date +%F).db\n\nTo restore, stop the servers, put the copy in place of the database file (and delete\nits -wal and -shm files), and start them again. PostgreSQL stores are backed up with\npg_dump."
    )]
    Backup {
        /// The store: sqlite://PATH.
        #[arg(long, env = "CLARIFY_DB", default_value = "sqlite://clarify.db")]
        db: String,
        /// The file to write; it must not exist yet.
        out: std::path::PathBuf,
    },
    /// Serve the MCP tools ask_human, ask_human_async and get_answer on stdio.
    #[command(
        after_help = "Uses the store in --db (the file `clarify serve` uses), or the server at CLARIFY_URL\nwith the key in CLARIFY_TOKEN. An MCP client configuration:\n  {\"mcpServers\": {\"clarify\": {\"command\": \"clarify\", \"args\": [\"mcp\"]}}}"
    )]
    Mcp(mcp::McpArgs),
    /// An MCP server in front of another one: tool calls run when the policy allows them, a
    /// grant covers them, or a human approves them.
    #[command(
        after_help = "Examples:\n  clarify gate --policy policy.toml -- npx -y @modelcontextprotocol/server-filesystem /srv\n  clarify gate --url http://127.0.0.1:9000/mcp\n\nApprovals go to the server at CLARIFY_URL with the key in CLARIFY_TOKEN."
    )]
    Gate(gate::GateArgs),
    /// Gate coding agents' tool calls on a person: the hooks of Claude Code, Codex, Cursor,
    /// Gemini CLI and GitHub Copilot, and their installation.
    #[command(
        after_help = "Examples:\n  clarify hook install --scope project\n  clarify hook install --agent codex\n  echo '{...hook event...}' | clarify hook claude-code --policy policy.toml"
    )]
    Hook {
        #[command(subcommand)]
        command: hook::HookCommand,
    },
    /// An Agent Client Protocol proxy between an editor and an agent on stdio: each permission
    /// request the agent makes also goes to clarify, and the first answer wins.
    #[command(
        after_help = "Examples (as the agent command an editor such as Zed starts):\n  clarify acp -- gemini --experimental-acp\n  clarify acp --policy policy.toml -- claude-code-acp\n\nApprovals go to the server at CLARIFY_URL with the key in CLARIFY_TOKEN; stdout carries only\nthe agent's messages."
    )]
    Acp(acp::AcpArgs),
    /// AG-UI agents: run one headless to its end, asking people for its interrupts.
    Agui {
        #[command(subcommand)]
        command: agui::AguiCommand,
    },
    /// Check a configuration file: exit 0 when `clarify serve --config` would accept it, or 1
    /// with a line for every problem found, naming its line and column, the key and the problem
    /// (every environment variable a `<key>_env` names and the environment lacks, at once).
    #[command(
        after_help = "Example:\n  clarify config check clarify.toml\n\nEvery key: docs/clarify.example.toml"
    )]
    Config {
        #[command(subcommand)]
        command: ConfigCommand,
    },
    /// Ask a server whether it is alive (/healthz) or ready (/readyz): exit 0 when it answers
    /// 200, else 1 with one line on stderr saying why. For container health checks.
    #[command(
        after_help = "Examples:\n  clarify healthcheck\n  clarify healthcheck --ready --url http://127.0.0.1:7420\n\nWithout --url it asks the address in CLARIFY_LISTEN (0.0.0.0 is reached as\n127.0.0.1), or http://127.0.0.1:7420; it gives up after 3 seconds."
    )]
    Healthcheck(healthcheck::HealthcheckArgs),
    /// Print the LLM tool definition of `ask_human`.
    #[command(after_help = "Example:\n  clarify tools --format anthropic")]
    Tools {
        #[arg(long, default_value = "openai", value_parser = ["openai", "anthropic", "mcp"])]
        format: String,
    },
}

#[derive(Debug, Args)]
struct ServeArgs {
    /// A TOML configuration file (see docs/clarify.example.toml); flags and their environment
    /// variables win over its keys.
    #[arg(long, env = "CLARIFY_CONFIG")]
    config: Option<std::path::PathBuf>,
    /// Address to listen on.
    #[arg(long, env = "CLARIFY_LISTEN", default_value = "127.0.0.1:7420")]
    listen: SocketAddr,
    /// The store: sqlite://PATH (default), postgres://... to share state between instances
    /// (with a primary and standbys: postgres://HOST1,HOST2/DB?target_session_attrs=read-write,
    /// and clarify follows a promoted standby), or memory: (nothing persists).
    #[arg(long, env = "CLARIFY_DB", default_value = "sqlite://clarify.db")]
    db: String,
    /// A file holding a key in clarify's format (from `clarify keys generate`), stored at start
    /// as an admin key of the tenant default unless it is already: a first admin key without
    /// reading the logs, the same on every instance.
    #[arg(long, env = "CLARIFY_ADMIN_KEY_FILE")]
    admin_key_file: Option<std::path::PathBuf>,
    /// The URL people reach this server at, for answer and login links (default:
    /// http://<listen address>, its port included; 0.0.0.0 and [::] as 127.0.0.1 and [::1]).
    #[arg(long, env = "CLARIFY_PUBLIC_URL")]
    public_url: Option<String>,
    /// The most options a question may have (1 to 24).
    #[arg(long, default_value_t = 4)]
    max_options: usize,
    /// The wait before a failed webhook is retried; it doubles after each failure, up to an
    /// hour, for 25 hours.
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    webhook_first_retry: Duration,
    /// How long a webhook receiver may take to answer; a delivery claimed by a server that
    /// died is retried this long (plus 5 s) after the claim.
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    webhook_timeout: Duration,
    /// The most long-polls, event streams and /mcp requests open at once; past it they get
    /// 503 too_many_waiters. Default: the open-file limit (raised to its hard limit at start)
    /// less 1,024, at most 100,000.
    #[arg(long, env = "CLARIFY_MAX_WAITERS")]
    max_waiters: Option<usize>,
    /// Requests per second each key may send (a burst of that many); past it 429
    /// rate_limited with Retry-After. Default: no limit.
    #[arg(long, env = "CLARIFY_RATE_LIMIT")]
    rate_limit: Option<std::num::NonZeroU32>,
    /// Purge requests resolved longer ago than this (e.g. 30d), with their events, tags and
    /// webhook deliveries, in small batches while serving. Default: keep them forever.
    #[arg(long, env = "CLARIFY_RETAIN_RESOLVED", value_parser = parse_duration)]
    retain_resolved: Option<Duration>,
    /// How a SQLite store makes commits durable: normal (WAL with synchronous=NORMAL; a commit
    /// survives a crash of the process) or full (each group commit is fsynced before it is
    /// acknowledged; survives a power loss too). PostgreSQL follows its own synchronous_commit.
    #[arg(long, env = "CLARIFY_DURABILITY", value_enum, default_value = "normal")]
    durability: serve::Durability,
    /// How log lines are written to stderr: text (coloured only on a terminal without
    /// NO_COLOR) or json (one object per line). RUST_LOG filters them.
    #[arg(long, env = "CLARIFY_LOG_FORMAT", value_enum, default_value = "text")]
    log_format: logs::LogFormat,
    /// What webhooks (callback_url) may reach besides public addresses: a CIDR range
    /// (10.20.0.0/16), an address or a host name (hooks.internal); repeat it, or separate with
    /// commas. Loopback, private, link-local, CGNAT, multicast and unspecified addresses are
    /// refused otherwise.
    #[arg(long, env = "CLARIFY_OUTBOUND_ALLOW", value_delimiter = ',')]
    outbound_allow: Vec<String>,
    /// Send OpenTelemetry over OTLP/HTTP to the collector at this base URL
    /// (http://127.0.0.1:4318): a trace per request on /v1/traces and the metrics of /metrics on
    /// /v1/metrics. Nothing is sent without it; a collector that is down costs requests nothing.
    #[arg(long, env = "CLARIFY_OTLP_ENDPOINT")]
    otlp_endpoint: Option<String>,
}

#[derive(Debug, Subcommand)]
enum ConfigCommand {
    /// Validate a configuration file.
    Check {
        /// The configuration file.
        path: std::path::PathBuf,
    },
}

#[derive(Debug, Subcommand)]
enum ReceiptsCommand {
    /// Verify a receipt: exit 0 when it is valid and covers --action with --arguments, else 1.
    Verify {
        /// The receipt (a compact JWS), @FILE, or - for standard input.
        receipt: String,
        /// The key set: a URL or a file. Default: $CLARIFY_URL/.well-known/jwks.json.
        #[arg(long)]
        jwks: Option<String>,
        /// The action (tool name) the receipt must approve.
        #[arg(long)]
        action: Option<String>,
        /// The exact arguments it must approve: JSON, or @FILE.
        #[arg(long)]
        arguments: Option<String>,
    },
    /// Make a new signing key in the store; it signs from now on.
    Rotate,
}

#[derive(Debug, Subcommand)]
enum AuditCommand {
    /// Recompute the audit chain: exit 0 with the count, or 1 naming the first bad event.
    Verify,
    /// Print events, oldest first, as JSON lines with their hashes.
    Export {
        /// Only events at or after this time: RFC 3339 (2026-11-24T08:00:00Z) or a duration
        /// back from now (24h, 7d).
        #[arg(long)]
        since: Option<String>,
    },
}

#[derive(Debug, Subcommand)]
enum KeysCommand {
    /// Create a key; prints the key alone on stdout.
    Create {
        /// What the key may do: `agent` asks, `responder` answers, `admin` does both and
        /// manages keys.
        #[arg(long, value_parser = ["agent", "responder", "admin"])]
        role: String,
        /// The key's name: recorded as `answered_by`, matched against `responders`.
        #[arg(long)]
        name: String,
        /// The tenant whose requests the key reaches.
        #[arg(long, default_value = "default")]
        tenant: String,
        /// Make a new SQLite store when --db names a file that does not exist (without it, the
        /// command refuses: a key in a store no server reads is refused by every server).
        #[arg(long)]
        create: bool,
    },
    /// Print a fresh key in clarify's format without touching a store: give it to `serve
    /// --admin-key-file` (CLARIFY_ADMIN_KEY_FILE), which stores it as an admin key at start.
    Generate,
    /// List keys (never their secrets).
    List,
    /// Revoke the active key with this name; it stops working at once.
    Revoke {
        /// The key's name.
        name: String,
    },
}

fn main() -> ExitCode {
    let (command, from_files) = secret_files::apply(Cli::command(), &|name| std::env::var_os(name));
    let matches = command.get_matches();
    let mut path = Vec::new();
    let mut innermost = &matches;
    while let Some((name, sub)) = innermost.subcommand() {
        path.push(name.to_owned());
        innermost = sub;
    }
    if let Some(failure) = from_files.failure(&path) {
        eprintln!("clarify: {failure}");
        return ExitCode::FAILURE;
    }
    let cli = match Cli::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(e) => e.exit(),
    };
    // Which of `serve`'s settings were given as flags (or their environment variables, or
    // files those name), which win over the configuration file.
    let given = matches.subcommand_matches("serve").map(|m| {
        m.ids()
            .filter(|id| {
                m.value_source(id.as_str())
                    .is_some_and(|s| s != clap::parser::ValueSource::DefaultValue)
            })
            .map(|id| id.as_str().to_owned())
            .chain(from_files.given_at(&["serve"]).map(str::to_owned))
            .collect::<Vec<String>>()
    });
    if cli.command.prints() {
        // A printing command ends quietly when its reader goes away (`clarify list | head -1`),
        // killed by SIGPIPE as `ls` is (status 141 in a shell), rather than panicking on the
        // failed write. Servers and protocol commands keep ignoring the signal: they handle a
        // peer that went away themselves.
        sigpipe::reset();
    }
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
    let code = match runtime.block_on(run(cli, given.unwrap_or_default())) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("clarify: {e:#}");
            ExitCode::FAILURE
        }
    };
    // Every command has finished its work by now. What may still run is a blocking read of
    // stdin that nobody will complete (`clarify mcp` stopped by a signal while its client keeps
    // stdin open), and dropping the runtime would wait for it forever.
    runtime.shutdown_timeout(std::time::Duration::from_secs(1));
    code
}

impl Command {
    /// Whether the command prints its result and ends, rather than serving a peer (a server, an
    /// MCP or ACP session, a hook speaking to its agent, the terminal inbox).
    fn prints(&self) -> bool {
        !matches!(
            self,
            Command::Serve(_)
                | Command::Mcp(_)
                | Command::Hook { .. }
                | Command::Gate(_)
                | Command::Acp(_)
                | Command::Agui { .. }
                | Command::Inbox(_)
        )
    }
}

async fn run(cli: Cli, given: Vec<String>) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Serve(args) => serve::run(args, &given).await,
        Command::Config {
            command: ConfigCommand::Check { path },
        } => Ok(config::check_command(&path)),
        Command::Keys { command, db } => keys::run(command, &db).await,
        Command::Audit { command, db } => audit::run(command, &db).await,
        Command::Receipts { command, db } => receipts::run(command, &db).await,
        Command::Report {
            since,
            format,
            out,
            force,
            db,
            tenant,
            url,
            token,
        } => {
            let source = match url {
                None => report::Source::Store { db, tenant },
                Some(url) => report::Source::Server {
                    url: match url.trim() {
                        "" => std::env::var("CLARIFY_URL")
                            .unwrap_or_else(|_| "http://127.0.0.1:7420".to_owned()),
                        given => given.to_owned(),
                    },
                    token,
                },
            };
            report::run(report::ReportArgs {
                since,
                format,
                out,
                force,
                source,
            })
            .await
        }
        Command::Backup { db, out } => {
            let report = clarify_store::backup(&db, &out).await?;
            println!(
                "clarify: backed up {} requests ({} KiB) to {}",
                report.requests,
                report.bytes.div_ceil(1024),
                out.display()
            );
            Ok(ExitCode::SUCCESS)
        }
        Command::Tools { format } => {
            let format = Format::parse(&format)
                .ok_or_else(|| anyhow::anyhow!("unknown format; use openai, anthropic or mcp"))?;
            print!("{}", definition_text(format));
            Ok(ExitCode::SUCCESS)
        }
        Command::Ask(args) => client::ask(args).await,
        Command::Inbox(conn) => inbox::run(conn).await,
        Command::Answer(args) => client::answer(args).await,
        Command::List(args) => client::list(args).await,
        Command::Show(args) => client::show(args).await,
        Command::Cancel(args) => client::cancel(args).await,
        Command::Extend(args) => client::extend(args).await,
        Command::Mcp(args) => mcp::run(args).await,
        Command::Hook { command } => hook::run(command).await,
        Command::Gate(args) => gate::run(args).await,
        Command::Acp(args) => acp::run(args).await,
        Command::Agui { command } => agui::run(command).await,
        Command::Healthcheck(args) => healthcheck::run(args).await,
    }
}
