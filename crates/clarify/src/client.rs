//! Client commands over HTTP: `ask`, `answer`, `list`, `show`, `cancel`.

use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use clap::Args;
use clarify_client::{Answered, Client, ClientError, ListFilter, RecordBody};
use serde_json::{Value, json};

use crate::duration::parse_duration;
use crate::render;

/// Exit codes of `clarify ask` by outcome status.
pub const EXIT_SKIPPED: u8 = 3;
pub const EXIT_EXPIRED: u8 = 4;
pub const EXIT_CANCELLED: u8 = 5;

/// Where the server is and which key to use.
#[derive(Debug, Clone, Args)]
pub struct Connection {
    /// The server's URL.
    #[arg(long, env = "CLARIFY_URL", default_value = "http://127.0.0.1:7420")]
    pub url: String,
    /// An API key (`ck_...`).
    #[arg(long, env = "CLARIFY_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
}

impl Connection {
    pub fn client(&self) -> anyhow::Result<Client> {
        Ok(Client::new(&self.url, self.token.clone())?)
    }
}

#[derive(Debug, Args)]
pub struct AskArgs {
    /// The question.
    pub text: String,
    /// An option to choose from (repeat for each); without any, the answer is free text.
    #[arg(short = 'c', long = "choice")]
    pub choices: Vec<String>,
    /// Allow choosing several options.
    #[arg(long, requires = "choices")]
    pub multi: bool,
    /// Shown with the question: what the person needs to know.
    #[arg(long)]
    pub context: Option<String>,
    /// How long the person has (e.g. 90s, 10m, 2h); default the server's (1 hour); 0 never expires.
    #[arg(long, value_parser = parse_duration)]
    pub timeout: Option<Duration>,
    /// Do not accept free text instead of the choices.
    #[arg(long)]
    pub no_other: bool,
    /// Do not allow skipping.
    #[arg(long)]
    pub no_skip: bool,
    /// The session the request belongs to, shown to the person.
    #[arg(long)]
    pub session: Option<String>,
    /// Who asks, shown to the person.
    #[arg(long)]
    pub agent: Option<String>,
    /// A tag (repeat for several).
    #[arg(long = "tag")]
    pub tags: Vec<String>,
    /// Print the outcome as JSON instead of the answer.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub conn: Connection,
}

/// `clarify ask`: creates the request, waits for it, prints the answer, exits by status.
pub async fn ask(args: AskArgs) -> anyhow::Result<ExitCode> {
    let client = args.conn.client()?;
    let mut question = json!({"text": args.text});
    if !args.choices.is_empty() {
        question["kind"] = json!(if args.multi { "multi" } else { "single" });
        question["options"] = json!(args.choices);
        question["allow_other"] = json!(!args.no_other);
    }
    let mut body = json!({"questions": [question], "allow_skip": !args.no_skip});
    for (field, value) in [
        ("context", &args.context),
        ("session", &args.session),
        ("agent", &args.agent),
    ] {
        if let Some(v) = value {
            body[field] = json!(v);
        }
    }
    if !args.tags.is_empty() {
        body["tags"] = json!(args.tags);
    }
    if let Some(t) = args.timeout {
        body["timeout_seconds"] = json!(t.as_secs());
    }
    // A server that restarts while the question is being created must not make `ask` fail or
    // ask twice: the create is retried under an idempotency key (see `create_retrying`).
    let (record, _) = client
        .create_retrying(&body, CREATE_RETRY_WINDOW, report_retry)
        .await?;
    let id = record.id.clone();
    let countdown = std::io::stderr()
        .is_terminal()
        .then(|| tokio::spawn(countdown(record.expires_at.clone())));
    let waited = tokio::select! {
        r = client.wait_resolved(&id, report_retry) => Some(r),
        _ = tokio::signal::ctrl_c() => None,
    };
    if let Some(c) = countdown {
        c.abort();
        eprint!("\r\x1b[2K");
    }
    let record = match waited {
        Some(r) => r?,
        None => {
            // Ctrl-C: nobody should answer a question nobody waits for.
            match client.cancel(&id).await {
                Ok(_) => eprintln!("clarify: cancelled the request"),
                Err(ClientError::Api { code, .. }) if code == "already_resolved" => {}
                Err(e) => eprintln!("clarify: could not cancel the request: {e}"),
            }
            return Ok(ExitCode::from(EXIT_CANCELLED));
        }
    };
    print_outcome(&record, args.json)
}

/// How long `ask` keeps trying to create its request once a server has been seen.
const CREATE_RETRY_WINDOW: std::time::Duration = std::time::Duration::from_secs(120);

fn report_retry(e: &ClientError) {
    eprintln!("clarify: {e}; retrying");
}

/// Prints the outcome (answers, or JSON) and returns the exit code of its status.
fn print_outcome(record: &RecordBody, as_json: bool) -> anyhow::Result<ExitCode> {
    let outcome = record
        .outcome
        .as_ref()
        .context("the server returned a resolved request without an outcome")?;
    if as_json {
        println!("{}", serde_json::to_string_pretty(outcome)?);
    } else if record.status == "answered" {
        for line in render::answer_lines(outcome) {
            println!("{line}");
        }
    } else {
        eprintln!("clarify: {}", render::status_sentence(record));
    }
    Ok(match record.status.as_str() {
        "answered" => ExitCode::SUCCESS,
        "skipped" => ExitCode::from(EXIT_SKIPPED),
        "expired" => ExitCode::from(EXIT_EXPIRED),
        "cancelled" => ExitCode::from(EXIT_CANCELLED),
        other => anyhow::bail!("unexpected status {other:?}"),
    })
}

/// Prints the time left on stderr, once a second, while the person has not answered.
async fn countdown(expires_at: Option<String>) {
    let deadline = expires_at
        .as_deref()
        .and_then(clarify_client::wire::parse_time);
    let started = Instant::now();
    loop {
        let line = match deadline {
            Some(at) => {
                let left = (at - chrono::Utc::now()).num_seconds().max(0);
                format!(
                    "waiting for an answer… {} left (Ctrl-C cancels)",
                    render::clock(left)
                )
            }
            None => format!(
                "waiting for an answer… {} so far (Ctrl-C cancels)",
                render::clock(i64::try_from(started.elapsed().as_secs()).unwrap_or(0))
            ),
        };
        {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r\x1b[2K{line}");
            let _ = err.flush();
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

#[derive(Debug, Args)]
#[command(group = clap::ArgGroup::new("reply").required(true).multiple(true).args(["option", "other", "text", "approve", "deny", "revise", "skip", "body"]))]
pub struct AnswerArgs {
    /// The request id.
    pub id: String,
    /// An option id (repeat on a multi question).
    #[arg(long)]
    pub option: Vec<String>,
    /// Free text instead of (or, on multi, besides) the options.
    #[arg(long)]
    pub other: Option<String>,
    /// The answer to an open question.
    #[arg(long, conflicts_with_all = ["option", "other", "approve", "deny", "revise", "skip"])]
    pub text: Option<String>,
    /// Approve the proposed action.
    #[arg(long, conflicts_with_all = ["option", "other", "deny", "revise", "skip"])]
    pub approve: bool,
    /// Deny the proposed action.
    #[arg(long, conflicts_with_all = ["option", "other", "approve", "revise", "skip"])]
    pub deny: bool,
    /// Request changes to the proposed action, saying which with --reason.
    #[arg(long, requires = "reason", conflicts_with_all = ["option", "other", "approve", "deny", "skip"])]
    pub revise: bool,
    /// With --approve: once, session or always.
    #[arg(long, value_parser = ["once", "session", "always"])]
    pub scope: Option<String>,
    /// With --approve or --deny: why; with --revise: what to change.
    #[arg(long)]
    pub reason: Option<String>,
    /// Skip the request.
    #[arg(long, conflicts_with_all = ["option", "other", "approve", "deny", "revise"])]
    pub skip: bool,
    /// A whole answer body as JSON, e.g. for a request of several questions.
    #[arg(long, conflicts_with_all = ["option", "other", "text", "approve", "deny", "revise", "skip"])]
    pub body: Option<String>,
    /// Print the outcome as JSON.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub conn: Connection,
}

/// `clarify answer`.
pub async fn answer(args: AnswerArgs) -> anyhow::Result<ExitCode> {
    let client = args.conn.client()?;
    let body = if let Some(raw) = &args.body {
        serde_json::from_str::<Value>(raw).context("--body is not valid JSON")?
    } else if args.skip {
        json!({"skip": true})
    } else if args.approve || args.deny || args.revise {
        let decision = match (args.approve, args.deny) {
            (true, _) => "approve",
            (_, true) => "deny",
            _ => "revise",
        };
        let mut a = json!({ "decision": decision });
        if let Some(s) = &args.scope {
            a["scope"] = json!(s);
        }
        if let Some(r) = &args.reason {
            a["reason"] = json!(r);
        }
        a
    } else if let Some(t) = &args.text {
        json!({"text": t})
    } else if args.option.len() > 1 || (!args.option.is_empty() && args.other.is_some()) {
        let mut a = json!({"options": args.option});
        if let Some(o) = &args.other {
            a["other"] = json!(o);
        }
        a
    } else if let Some(o) = args.option.first() {
        // One option: `single`, or `multi` with one pick; the server tells them apart.
        match first_kind(&client, &args.id).await?.as_deref() {
            Some("multi") => json!({"options": [o]}),
            _ => json!({"option": o}),
        }
    } else if let Some(o) = &args.other {
        // `other` answers a choice question only; the server's refusal would show the HTTP
        // body to send, so the flag to use instead is named here.
        let kind = first_kind(&client, &args.id).await?;
        if let Some(flags) = kind.as_deref().and_then(flags_for_kind) {
            anyhow::bail!(
                "request {} is {flags}; --other is a choice question's own answer",
                args.id
            );
        }
        json!({"other": o})
    } else {
        anyhow::bail!(
            "say how to answer: --option, --other, --text, --approve, --deny, --revise, --skip or --body"
        );
    };
    match client.answer(&args.id, &body).await? {
        Answered::Resolved(outcome) if args.json => {
            println!("{}", serde_json::to_string_pretty(&outcome)?);
        }
        Answered::Voted(record) if args.json => {
            println!("{}", serde_json::to_string_pretty(&record)?);
        }
        Answered::Voted(record) => match render::quorum(record.approvals_required, &record.votes) {
            Some(line) => eprintln!("clarify: vote counted on request {}: {line}", args.id),
            None => eprintln!("clarify: request {} is {}", args.id, record.status),
        },
        Answered::Resolved(outcome) => {
            eprintln!("clarify: request {} is {}", args.id, outcome.status);
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The kind of request `id`'s first question (`single`, `multi`, `open`, ...).
async fn first_kind(client: &Client, id: &str) -> anyhow::Result<Option<String>> {
    let record = client.get(id).await?;
    Ok(record.questions.into_iter().next().map(|q| q.kind))
}

/// How the CLI answers a question of `kind` that `--other` cannot answer.
fn flags_for_kind(kind: &str) -> Option<&'static str> {
    match kind {
        "open" => Some("an open question: answer it with --text \"...\""),
        "approval" => Some("an approval: answer it with --approve, --deny or --revise"),
        "form" => Some("a form: answer it with --body '{\"values\": {...}}'"),
        _ => None,
    }
}

#[derive(Debug, Args)]
pub struct ListArgs {
    /// pending, answered, skipped, expired or cancelled.
    #[arg(long)]
    pub status: Option<String>,
    /// Only the requests of this session.
    #[arg(long)]
    pub session: Option<String>,
    /// Only the requests of this agent.
    #[arg(long)]
    pub agent: Option<String>,
    /// Only the requests carrying this tag.
    #[arg(long)]
    pub tag: Option<String>,
    /// At most this many (1 to 500).
    #[arg(long, default_value_t = 50)]
    pub limit: usize,
    /// Print the requests as JSON lines, one record per line.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub conn: Connection,
}

/// `clarify list`.
pub async fn list(args: ListArgs) -> anyhow::Result<ExitCode> {
    let client = args.conn.client()?;
    let page = client
        .list(&ListFilter {
            status: args.status,
            session: args.session,
            agent: args.agent,
            tag: args.tag,
            limit: Some(args.limit),
            cursor: None,
        })
        .await?;
    if args.json {
        for r in &page.requests {
            println!("{}", serde_json::to_string(r)?);
        }
    } else if page.requests.is_empty() {
        eprintln!("clarify: no requests");
    } else {
        print!("{}", render::table(&page.requests));
    }
    Ok(ExitCode::SUCCESS)
}

#[derive(Debug, Args)]
pub struct ShowArgs {
    /// The request's id.
    pub id: String,
    /// Print the record as JSON.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub conn: Connection,
}

/// `clarify show`.
pub async fn show(args: ShowArgs) -> anyhow::Result<ExitCode> {
    let record = args.conn.client()?.get(&args.id).await?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&record)?);
    } else {
        print!("{}", render::detail(&record));
    }
    Ok(ExitCode::SUCCESS)
}

#[derive(Debug, Args)]
pub struct CancelArgs {
    /// The request's id.
    pub id: String,
    #[command(flatten)]
    pub conn: Connection,
}

/// `clarify cancel`.
pub async fn cancel(args: CancelArgs) -> anyhow::Result<ExitCode> {
    args.conn.client()?.cancel(&args.id).await?;
    eprintln!("clarify: cancelled {}", args.id);
    Ok(ExitCode::SUCCESS)
}

#[derive(Debug, Args)]
pub struct ExtendArgs {
    /// The request's id.
    pub id: String,
    /// How much later its deadline moves: `30m`, `2h`, `1d`, or seconds.
    #[arg(long, value_name = "DURATION")]
    pub by: String,
    #[command(flatten)]
    pub conn: Connection,
}

/// `clarify extend`: prints the new deadline.
pub async fn extend(args: ExtendArgs) -> anyhow::Result<ExitCode> {
    let record = args.conn.client()?.extend(&args.id, &args.by).await?;
    let deadline = record.expires_at.as_deref().unwrap_or("never");
    println!("{deadline}");
    eprintln!("clarify: {} now expires at {deadline}", args.id);
    Ok(ExitCode::SUCCESS)
}
