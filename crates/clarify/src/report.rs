//! `clarify report`: an evidence pack of a tenant's decisions, read directly from the store or
//! from a running server (`--url`, with an admin key).
//!
//! Every decision of the period (who, when, through what, what the person was shown: the
//! request's summary of its display blocks, the decision and its reason, how long it took), the
//! insights of the same days with their charts, the audit chain's head with the exact command
//! that verifies it, and a section mapping these records to the logging and human-oversight
//! duties regulated users cite. As HTML (one self-contained file: its style and charts inline,
//! nothing fetched, printable), JSON (the same content for programs), or CSV (one line per
//! decision, for spreadsheets).

use std::fmt::Write as _;
use std::process::ExitCode;

use anyhow::Context as _;
use chrono::{DateTime, TimeDelta, Utc};
use clarify_client::RecordBody;
use clarify_client::wire::parse_time;
use clarify_render::charts;
use clarify_render::html::escape;
use clarify_server::api::insights::InsightsBody;
use clarify_store::{Insights, InsightsQuery, ListQuery, RequestRecord, Store};
use serde::Serialize;
use serde_json::Value;

/// What `clarify report` was asked for.
#[derive(Debug)]
pub struct ReportArgs {
    pub since: String,
    pub format: String,
    pub out: Option<std::path::PathBuf>,
    /// Whether `out` may replace a file that exists (`--force`).
    pub force: bool,
    pub source: Source,
}

/// Where the records are read.
#[derive(Debug)]
pub enum Source {
    /// The store itself (`--db`), for `tenant`.
    Store { db: String, tenant: String },
    /// A running server (`--url`), for the tenant of the admin key `token`.
    Server { url: String, token: Option<String> },
}

/// What a report is made of, wherever it was read.
struct Read {
    tenant: String,
    now: DateTime<Utc>,
    since: DateTime<Utc>,
    decisions: Vec<Decision>,
    insights: Insights,
    audit: AuditHead,
}

/// One decision, as every format gives it.
#[derive(Debug, Serialize)]
pub struct Decision {
    pub id: String,
    pub created_at: String,
    pub resolved_at: String,
    /// `answered`, `skipped`, `expired`, `cancelled`.
    pub status: String,
    pub agent: Option<String>,
    pub session: Option<String>,
    /// An approval's tool.
    pub tool: Option<String>,
    /// What the person was shown, in one line: the request's summary (its display blocks',
    /// or derived from its questions).
    pub shown: String,
    /// `approve`, `revise`, `deny` for an approval; the answer for anything else; `default:
    /// ...` when an expiry applied the request's default.
    pub decision: Option<String>,
    pub reason: Option<String>,
    pub answered_by: Option<String>,
    pub answered_via: Option<String>,
    pub seconds_to_decide: Option<f64>,
    /// The `jti` of the decision's signed receipt (`clarify receipts verify` checks one); `None`
    /// before the audit chain numbered the resolution.
    pub receipt_jti: Option<String>,
}

/// What a decision is made of, from a stored record or a server's.
struct Parts {
    id: String,
    created_at: DateTime<Utc>,
    resolved_at: DateTime<Utc>,
    status: String,
    agent: Option<String>,
    session: Option<String>,
    tool: Option<String>,
    shown: String,
    reason: Option<String>,
    answered_by: Option<String>,
    answered_via: Option<String>,
    default_applied: bool,
    receipt_jti: Option<String>,
}

impl Decision {
    fn of(record: &RequestRecord) -> Option<Self> {
        let outcome = record.outcome()?;
        let request = &record.request;
        let tool = request.tool().map(str::to_owned);
        let answers: Vec<String> = outcome
            .questions
            .iter()
            .filter_map(|q| match (&q.decision, &q.answer) {
                (Some(d), _) => Some(d.as_str().to_owned()),
                (None, Value::Null) => None,
                (None, Value::String(s)) => Some(s.clone()),
                (None, other) => Some(other.to_string()),
            })
            .collect();
        Some(Self::new(
            Parts {
                id: record.id.clone(),
                created_at: record.created_at,
                resolved_at: outcome.resolved_at,
                status: outcome.status.as_str().to_owned(),
                agent: request.agent.clone(),
                session: request.session.clone(),
                tool,
                shown: request.summary.clone(),
                reason: outcome.questions.iter().find_map(|q| q.reason.clone()),
                answered_by: outcome.answered_by.clone(),
                answered_via: outcome.answered_via.clone(),
                default_applied: outcome.default_applied,
                receipt_jti: record
                    .resolution
                    .as_ref()
                    .and_then(|r| r.seq)
                    .map(|seq| clarify_model::receipt::jti(&record.id, seq)),
            },
            answers,
        ))
    }

    /// The decision of `p` with its `answers` (decisions, chosen options or texts).
    fn new(p: Parts, answers: Vec<String>) -> Self {
        let decision = (!answers.is_empty()).then(|| {
            let joined = answers.join("; ");
            if p.default_applied {
                format!("default: {joined}")
            } else {
                joined
            }
        });
        let person = p.answered_by.is_some()
            && p.answered_via.as_deref() != Some("policy")
            && matches!(p.status.as_str(), "answered" | "skipped");
        Self {
            id: p.id,
            created_at: time(p.created_at),
            resolved_at: time(p.resolved_at),
            status: p.status,
            agent: p.agent,
            session: p.session,
            tool: p.tool,
            shown: p.shown,
            decision,
            reason: p.reason,
            answered_by: p.answered_by,
            answered_via: p.answered_via,
            seconds_to_decide: person
                .then(|| (p.resolved_at - p.created_at).num_milliseconds() as f64 / 1000.0),
            receipt_jti: p.receipt_jti,
        }
    }
}

fn time(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// The audit chain as the report found it.
#[derive(Debug, Serialize)]
pub struct AuditHead {
    /// How many events the chain holds (every tenant's: the chain is one per store).
    pub events: u64,
    /// The newest event's sequence number and hash: a later report or verification that finds
    /// this hash at this number shows nothing before it was changed.
    pub head_seq: u64,
    pub head_hash: String,
    /// Whether the whole chain verified when the report was made; `null` when the report was
    /// read from a server, which shows a tenant its own events only (the chain is checked
    /// where the store is, with `verify_command`).
    pub verified: Option<bool>,
    /// The first event that did not verify, when one did not.
    pub broken_at: Option<String>,
    /// The command that recomputes it.
    pub verify_command: String,
}

/// One duty and the records of this report that speak to it.
#[derive(Debug, Serialize)]
pub struct Duty {
    pub duty: &'static str,
    pub source: &'static str,
    pub evidence: &'static str,
}

/// The duties section. Wording is deliberately about what the records show, not about what the
/// law requires of anyone: that is for the reader's counsel.
pub const DUTIES: &[Duty] = &[
    Duty {
        duty: "Automatic recording of events (logs) over the system's lifetime",
        source: "EU AI Act, Article 12 (record-keeping); Article 19 (automatically generated logs)",
        evidence: "Every request's creation and resolution is an event in a hash-chained log, with the time, the actor and the authenticated principal. The chain's head and the command that recomputes it are given above; any change to a past event breaks it.",
    },
    Duty {
        duty: "Effective oversight by natural persons, who can decide not to use, override or reverse an output",
        source: "EU AI Act, Article 14 (human oversight), in particular 14(4)(d) and (e)",
        evidence: "Each decision lists the person who made it, when, through which surface, what they were shown, and what they decided (approve, request changes, deny) with their reason. Revisions and denials by tool show that people did override the agents.",
    },
    Duty {
        duty: "Awareness of automation bias (over-relying on the system's output)",
        source: "EU AI Act, Article 14(4)(b)",
        evidence: "Time to decide per decision, per responder and per tool, and the approvals given within 10 seconds per tool, point at approvals that may have been given without reading.",
    },
    Duty {
        duty: "Deployers monitor operation, assign oversight to competent people, and keep the logs under their control for at least six months",
        source: "EU AI Act, Article 26(1), (2), (5) and (6)",
        evidence: "Who decides (by responder), requests that timed out or fell back to a default, and pending requests by age show the monitoring; the store keeps resolved requests until --retain-resolved purges them, and the audit chain stays verifiable after a purge.",
    },
    Duty {
        duty: "A right to human intervention in decisions based solely on automated processing",
        source: "GDPR, Article 22(3)",
        evidence: "Requests answered by a person are told apart from those a rule decided (surface `policy`, responder `policy:<rule>`).",
    },
    Duty {
        duty: "Operating and monitoring records of an AI management system; monitoring of system components",
        source: "ISO/IEC 42001 (operation, monitoring and records); SOC 2 CC7.2 (system monitoring)",
        evidence: "This report itself: the period, the figures, every decision and the chain head, produced on demand from the store.",
    },
];

const DISCLAIMER: &str = "This section maps clarify's records to duties that regulated users commonly cite. It is evidence for your assessment, not legal advice: whether these records meet a duty depends on your system, its risk class and your counsel's reading.";

#[derive(Debug, Serialize)]
struct Json<'a> {
    generated_at: String,
    tenant: &'a str,
    since: String,
    insights: InsightsBody,
    decisions: &'a [Decision],
    audit: &'a AuditHead,
    duties: &'a [Duty],
    duties_note: &'static str,
}

pub async fn run(args: ReportArgs) -> anyhow::Result<ExitCode> {
    // Before any reading: an earlier report is not replaced without a word.
    if let Some(out) = args.out.as_deref().filter(|o| !args.force && o.exists()) {
        anyhow::bail!(refuse_existing(out));
    }
    let read = match &args.source {
        Source::Store { db, tenant } => from_store(db, tenant, &args.since).await?,
        Source::Server { url, token } => from_server(url, token.clone(), &args.since).await?,
    };
    let Read {
        tenant,
        now,
        since,
        decisions,
        insights,
        audit,
    } = read;
    let text = match args.format.as_str() {
        "json" => {
            let doc = Json {
                generated_at: time(now),
                tenant: &tenant,
                since: time(since),
                insights: InsightsBody::from(&insights),
                decisions: &decisions,
                audit: &audit,
                duties: DUTIES,
                duties_note: DISCLAIMER,
            };
            serde_json::to_string_pretty(&doc)? + "\n"
        }
        "csv" => csv(&decisions),
        _ => html(&tenant, since, now, &insights, &decisions, &audit),
    };
    match &args.out {
        Some(out) => {
            write_out(out, &text, args.force)?;
            eprintln!(
                "clarify: wrote {} decisions to {}",
                decisions.len(),
                out.display()
            );
        }
        None => print!("{text}"),
    }
    Ok(ExitCode::SUCCESS)
}

/// Writes the report to `out`; without `force`, only as a new file (one made meanwhile is
/// refused too).
fn write_out(out: &std::path::Path, text: &str, force: bool) -> anyhow::Result<()> {
    use std::io::Write as _;
    let mut options = std::fs::OpenOptions::new();
    options.write(true);
    if force {
        options.create(true).truncate(true);
    } else {
        options.create_new(true);
    }
    let mut file = match options.open(out) {
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            anyhow::bail!(refuse_existing(out))
        }
        other => other.with_context(|| format!("cannot write {}", out.display()))?,
    };
    file.write_all(text.as_bytes())
        .and_then(|()| file.flush())
        .with_context(|| format!("cannot write {}", out.display()))
}

fn refuse_existing(out: &std::path::Path) -> String {
    format!(
        "{} exists; pass --force to replace it, or choose another --out",
        out.display()
    )
}

async fn from_store(db: &str, tenant: &str, since: &str) -> anyhow::Result<Read> {
    let store = crate::audit::open_existing(db).await?;
    let now = store.now();
    let since = parse_since(since, now)?;
    let decisions = decisions(&store, tenant, since).await?;
    let query = InsightsQuery {
        from: Some(since.date_naive()),
        to: Some(now.date_naive()),
        ..InsightsQuery::default()
    };
    let insights = store
        .insights(tenant, &query)
        .await
        .map_err(|e| anyhow::anyhow!("{e}; pass a shorter --since"))?;
    let audit = audit_head(&store, db).await?;
    Ok(Read {
        tenant: tenant.to_owned(),
        now,
        since,
        decisions,
        insights,
        audit,
    })
}

/// The same report from a running server: the requests (`/v1/requests`), the figures
/// (`/v1/insights`) and the newest of the tenant's audit events (`/v1/audit`, found in a number
/// of calls that grows with the logarithm of the log's length).
async fn from_server(url: &str, token: Option<String>, since: &str) -> anyhow::Result<Read> {
    let client = clarify_client::Client::new(url, token)?;
    let session = client
        .session()
        .await
        .with_context(|| format!("cannot read the key's session at {url}"))?;
    if session["role"].as_str() != Some("admin") {
        anyhow::bail!(
            "the report needs an admin key (the audit log is for admins); this key is {}",
            session["role"].as_str().unwrap_or("unknown")
        );
    }
    let tenant = session["tenant"].as_str().unwrap_or("default").to_owned();
    // The server's clock is not asked for; the report's "now" is this machine's.
    let now = Utc::now();
    let since = parse_since(since, now)?;
    let mut decisions = Vec::new();
    let mut cursor = None;
    'pages: loop {
        let page = client
            .list(&clarify_client::ListFilter {
                limit: Some(ListQuery::MAX_LIMIT),
                cursor: cursor.take(),
                ..clarify_client::ListFilter::default()
            })
            .await?;
        for record in page.requests {
            let created_at = parse_time(&record.created_at)
                .context("the server sent a request record this report cannot read")?;
            if created_at < since {
                break 'pages;
            }
            decisions.extend(Decision::of_wire(record, created_at)?);
        }
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    decisions.reverse();
    let body: InsightsBody = serde_json::from_value(
        client
            .insights(
                &since.date_naive().to_string(),
                &now.date_naive().to_string(),
            )
            .await
            .map_err(|e| anyhow::anyhow!("{e}; pass a shorter --since"))?,
    )
    .context("the server sent figures this report cannot read")?;
    let insights = body.figures().map_err(anyhow::Error::msg)?;
    let audit = server_audit_head(&client).await?;
    Ok(Read {
        tenant,
        now,
        since,
        decisions,
        insights,
        audit,
    })
}

/// The newest of the caller tenant's audit events: a search for the last sequence number after
/// which the log still has one (doubling, then halving).
async fn server_audit_head(client: &clarify_client::Client) -> anyhow::Result<AuditHead> {
    let any_after = async |after: u64| -> anyhow::Result<Option<Value>> {
        let page = client.audit(after, 1).await?;
        Ok(page["events"].as_array().and_then(|e| e.first()).cloned())
    };
    let verify_command = "clarify audit verify --db <the server's store>".to_owned();
    let Some(first) = any_after(0).await? else {
        return Ok(AuditHead {
            events: 0,
            head_seq: 0,
            head_hash: String::new(),
            verified: None,
            broken_at: None,
            verify_command,
        });
    };
    // `lo` has an event after it, `hi` none.
    let mut lo = first["seq"].as_u64().unwrap_or(1).saturating_sub(1);
    let mut hi = lo.saturating_add(1).max(1);
    while any_after(hi).await?.is_some() {
        lo = hi;
        hi = hi.saturating_mul(2);
    }
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if any_after(mid).await?.is_some() {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    let head = any_after(lo).await?.unwrap_or(first);
    let head_seq = head["seq"].as_u64().unwrap_or(0);
    Ok(AuditHead {
        events: head_seq,
        head_seq,
        head_hash: head["hash"].as_str().unwrap_or_default().to_owned(),
        verified: None,
        broken_at: None,
        verify_command,
    })
}

impl Decision {
    /// The decision, as [`Decision::of`] makes it from a stored record, from a record a server
    /// sent (`GET /v1/requests`) created at `created_at`; `None` while pending.
    fn of_wire(record: RecordBody, created_at: DateTime<Utc>) -> anyhow::Result<Option<Self>> {
        let Some(outcome) = record.outcome else {
            return Ok(None);
        };
        let resolved_at = parse_time(&outcome.resolved_at)
            .context("the server sent an outcome this report cannot read")?;
        let tool = record
            .questions
            .iter()
            .filter(|q| q.kind == "approval")
            .find_map(|q| q.action.as_ref().map(|a| a.name.clone()));
        let answers: Vec<String> = outcome
            .questions
            .iter()
            .filter_map(|q| match (&q.decision, &q.answer) {
                (Some(d), _) => Some(d.clone()),
                (None, Value::Null) => None,
                (None, Value::String(s)) => Some(s.clone()),
                (None, other) => Some(other.to_string()),
            })
            .collect();
        Ok(Some(Decision::new(
            Parts {
                id: record.id,
                created_at,
                resolved_at,
                status: outcome.status,
                agent: record.agent,
                session: record.session,
                tool,
                shown: record.summary,
                reason: outcome.questions.iter().find_map(|q| q.reason.clone()),
                answered_by: outcome.answered_by,
                answered_via: outcome.answered_via,
                default_applied: outcome.default_applied,
                receipt_jti: record
                    .receipt
                    .as_deref()
                    .and_then(clarify_model::receipt::ReceiptClaims::unverified)
                    .map(|claims| claims.jti),
            },
            answers,
        )))
    }
}

/// `--since`: an RFC 3339 time, or a duration back from now (`30d`, `12h`).
fn parse_since(text: &str, now: DateTime<Utc>) -> anyhow::Result<DateTime<Utc>> {
    if let Ok(at) = DateTime::parse_from_rfc3339(text) {
        return Ok(at.with_timezone(&Utc));
    }
    let back = crate::duration::parse_duration(text).map_err(|e| {
        anyhow::anyhow!(
            "--since {text:?} is neither an RFC 3339 time (2026-11-01T00:00:00Z) nor a duration \
             (30d, 12h): {e}"
        )
    })?;
    let back = TimeDelta::from_std(back).context("--since is too far back")?;
    Ok(now - back)
}

/// The tenant's requests created since `since` and resolved, oldest first.
async fn decisions(
    store: &Store,
    tenant: &str,
    since: DateTime<Utc>,
) -> anyhow::Result<Vec<Decision>> {
    let mut out = Vec::new();
    let mut cursor = None;
    loop {
        let page = store
            .list(
                tenant,
                &ListQuery {
                    limit: Some(ListQuery::MAX_LIMIT),
                    cursor: cursor.take(),
                    ..ListQuery::default()
                },
            )
            .await?;
        let mut older = false;
        for record in &page.records {
            if record.created_at < since {
                older = true;
                break;
            }
            out.extend(Decision::of(record));
        }
        match page.next_cursor {
            Some(next) if !older => cursor = Some(next),
            _ => break,
        }
    }
    out.reverse();
    Ok(out)
}

async fn audit_head(store: &Store, db: &str) -> anyhow::Result<AuditHead> {
    store.sync_feed().await?;
    let head_seq = store.last_event_seq().await?;
    let head = store
        .audit_events(None, head_seq.saturating_sub(1), 1)
        .await?
        .into_iter()
        .next();
    let (verified, broken_at) = match store.verify_audit().await? {
        Ok(_) => (Some(true), None),
        Err(at) => (Some(false), Some(at.to_string())),
    };
    Ok(AuditHead {
        events: head_seq,
        head_seq,
        head_hash: head.map(|e| e.hash).unwrap_or_default(),
        verified,
        broken_at,
        verify_command: format!("clarify audit verify --db {}", shell_quote(db)),
    })
}

/// `text` as one shell word: as it is when it is made of safe characters, else in single
/// quotes.
fn shell_quote(text: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "/._-:@=+,%".contains(c);
    if !text.is_empty() && text.chars().all(safe) {
        text.to_owned()
    } else {
        format!("'{}'", text.replace('\'', "'\\''"))
    }
}

/// RFC 4180 CSV, hand-written: nine text columns need only quoting, which is shorter than a
/// dependency. A field that a spreadsheet would run as a formula (`=`, `+`, `-`, `@` first) is
/// prefixed with `'`, since agents write some of these texts.
fn csv(decisions: &[Decision]) -> String {
    fn field(v: &str) -> String {
        let v = if v.starts_with(['=', '+', '-', '@', '\t', '\r']) {
            format!("'{v}")
        } else {
            v.to_owned()
        };
        if v.contains([',', '"', '\n', '\r']) {
            format!("\"{}\"", v.replace('"', "\"\""))
        } else {
            v
        }
    }
    let mut out = String::from(
        "id,created_at,resolved_at,status,agent,session,tool,shown,decision,reason,answered_by,answered_via,seconds_to_decide,receipt_jti\r\n",
    );
    for d in decisions {
        let cells = [
            d.id.clone(),
            d.created_at.clone(),
            d.resolved_at.clone(),
            d.status.clone(),
            d.agent.clone().unwrap_or_default(),
            d.session.clone().unwrap_or_default(),
            d.tool.clone().unwrap_or_default(),
            d.shown.clone(),
            d.decision.clone().unwrap_or_default(),
            d.reason.clone().unwrap_or_default(),
            d.answered_by.clone().unwrap_or_default(),
            d.answered_via.clone().unwrap_or_default(),
            d.seconds_to_decide
                .map(|s| format!("{s:.3}"))
                .unwrap_or_default(),
            d.receipt_jti.clone().unwrap_or_default(),
        ];
        let line: Vec<String> = cells.iter().map(|c| field(c)).collect();
        out.push_str(&line.join(","));
        out.push_str("\r\n");
    }
    out
}

fn html(
    tenant: &str,
    since: DateTime<Utc>,
    now: DateTime<Utc>,
    insights: &Insights,
    decisions: &[Decision],
    audit: &AuditHead,
) -> String {
    let mut out = String::new();
    let _ = write!(
        out,
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; img-src data:\">\
         <title>clarify report: {tenant} since {since}</title><style>{style}</style></head>\
         <body><main class=\"insights\"><h1>Decisions of {tenant}</h1>\
         <p class=\"range\">From {since} to {now} (UTC), generated {now}. {n} decisions.</p>",
        tenant = escape(tenant),
        since = time(since),
        now = time(now),
        n = decisions.len(),
        style = charts::STYLE,
    );
    out.push_str(&charts::all(insights));
    out.push_str("<h2>The audit chain</h2>");
    let _ = write!(
        out,
        "<p>The event log holds {} events; its head is event {} with hash</p><pre>{}</pre>\
         <p>{}</p><p>Recompute it on the store with:</p><pre>{}</pre>",
        audit.events,
        audit.head_seq,
        escape(&audit.head_hash),
        match audit.verified {
            Some(true) => "The whole chain verified when this report was made.".to_owned(),
            Some(false) => format!(
                "The chain did NOT verify when this report was made: it breaks at {}.",
                escape(audit.broken_at.as_deref().unwrap_or("?"))
            ),
            None => "This report was read from a server, which shows a tenant its own events: \
                     the chain (one for every tenant) was not checked. Check it where the store is."
                .to_owned(),
        },
        escape(&audit.verify_command)
    );
    out.push_str("<h2>Logging and human-oversight duties</h2>");
    let _ = write!(out, "<p class=\"notice\">{}</p>", escape(DISCLAIMER));
    out.push_str(
        "<table class=\"decisions\"><thead><tr><th>Duty</th><th>Where it is cited</th>\
         <th>What these records show</th></tr></thead><tbody>",
    );
    for d in DUTIES {
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape(d.duty),
            escape(d.source),
            escape(d.evidence)
        );
    }
    out.push_str("</tbody></table><h2>Every decision</h2>");
    if decisions.is_empty() {
        out.push_str("<p class=\"empty\">No decisions in this period.</p>");
    } else {
        out.push_str(
            "<table class=\"decisions\"><thead><tr><th>Resolved</th><th>Shown</th>\
             <th>Decision</th><th>Who, via</th><th>Time to decide</th><th>Request</th></tr>\
             </thead><tbody>",
        );
        for d in decisions {
            let who = match (&d.answered_by, &d.answered_via) {
                (Some(by), Some(via)) => format!("{by}, via {via}"),
                (Some(by), None) => by.clone(),
                _ => "nobody".to_owned(),
            };
            let decision = match (&d.decision, &d.reason) {
                (Some(dec), Some(r)) => format!("{dec}: {r}"),
                (Some(dec), None) => dec.clone(),
                (None, _) => d.status.clone(),
            };
            let _ = write!(
                out,
                "<tr><td>{}</td><td>{}{}</td><td>{}</td><td>{}</td><td>{}</td><td><code>{}</code><br>{}{}</td></tr>",
                escape(&d.resolved_at),
                escape(&d.shown),
                d.tool
                    .as_ref()
                    .map(|t| format!(" <small>({})</small>", escape(t)))
                    .unwrap_or_default(),
                escape(&decision),
                escape(&who),
                d.seconds_to_decide
                    .map(|s| escape(&charts::short_duration(s)))
                    .unwrap_or_else(|| "–".to_owned()),
                escape(&d.id),
                escape(d.agent.as_deref().unwrap_or("")),
                d.receipt_jti
                    .as_ref()
                    .map(|j| format!("<br><small>receipt <code>{}</code></small>", escape(j)))
                    .unwrap_or_default(),
            );
        }
        out.push_str("</tbody></table>");
    }
    out.push_str("</main></body></html>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_words_are_quoted_only_when_needed() {
        assert_eq!(shell_quote("sqlite://clarify.db"), "sqlite://clarify.db");
        assert_eq!(
            shell_quote("sqlite:///tmp/a b.db"),
            "'sqlite:///tmp/a b.db'"
        );
        assert_eq!(
            shell_quote("postgres://u:p'w@h/db"),
            "'postgres://u:p'\\''w@h/db'"
        );
    }
}
