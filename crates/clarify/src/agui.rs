//! `clarify agui run URL --input FILE`: runs an AG-UI agent headless to its end.
//!
//! The run's input (a `RunAgentInput`) is POSTed to the agent, and every event it streams is
//! printed on stdout as one JSON line. When the run finishes with interrupts, each becomes a
//! request on the clarify server the command is configured for (`CLARIFY_URL`,
//! `CLARIFY_TOKEN`), mapped as the server's AG-UI proxy maps them (`clarify_core::agui`); a
//! `CUSTOM` `clarify.requests` line says which. Once people answered them, the run is resumed
//! with their answers (`resume[]`, or `forwardedProps.command.resume` for LangGraph's
//! `on_interrupt`), and so on until a run finishes without interrupts.
//!
//! Exit codes: `0` the run finished, `1` it ended with `RUN_ERROR` (the agent's, or clarify's
//! when the agent closed the stream mid-run) or anything failed, `2` usage errors (clap's).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::{Args, Subcommand};
use clarify_core::agui::{Origin, Trace};
use futures_util::StreamExt as _;
use serde_json::{Value, json};

use crate::client::Connection;

#[derive(Debug, Subcommand)]
pub enum AguiCommand {
    /// Run an AG-UI agent to its end, asking people for every interrupt; prints its events as
    /// JSON lines. Exits 0 when the run finished, 1 on RUN_ERROR or any failure.
    #[command(
        after_help = "Example:\n  clarify agui run http://127.0.0.1:8000/agent --input run.json > events.jsonl"
    )]
    Run(RunArgs),
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// The agent's AG-UI endpoint (HTTP + SSE).
    pub agent_url: url::Url,
    /// The run's input, a RunAgentInput JSON file (`-` reads stdin).
    #[arg(long)]
    pub input: PathBuf,
    /// The agent's name on the requests (default: the endpoint's host).
    #[arg(long)]
    pub name: Option<String>,
    #[command(flatten)]
    pub conn: Connection,
}

pub async fn run(command: AguiCommand) -> anyhow::Result<ExitCode> {
    let AguiCommand::Run(args) = command;
    let text = if args.input.as_os_str() == "-" {
        std::io::read_to_string(std::io::stdin()).context("reading the input from stdin")?
    } else {
        std::fs::read_to_string(&args.input)
            .with_context(|| format!("cannot read {}", args.input.display()))?
    };
    let value: Value = serde_json::from_str(&text)
        .with_context(|| format!("{} is not JSON", args.input.display()))?;
    let mut input = clarify_core::agui::parse_input(&value)
        .map_err(|e| anyhow::anyhow!("{}: RunAgentInput: {e}", args.input.display()))?;
    let name = args
        .name
        .clone()
        .unwrap_or_else(|| args.agent_url.host_str().unwrap_or("agent").to_owned());
    let clarify = args.conn.client()?;
    let http = clarify_client::http::builder()
        .user_agent(concat!("clarify/", env!("CARGO_PKG_VERSION")))
        .build()?;
    let mut round = 0;
    loop {
        round += 1;
        let response = http
            .post(args.agent_url.clone())
            .header(reqwest::header::ACCEPT, "text/event-stream")
            .json(&Value::Object(input.raw.clone()))
            .send()
            .await
            .with_context(|| format!("cannot reach the agent at {}", args.agent_url))?;
        if !response.status().is_success() {
            let status = response.status();
            let body = response.text().await.unwrap_or_default();
            anyhow::bail!(
                "the agent answered {}: {}",
                status.as_u16(),
                body.chars().take(500).collect::<String>().trim()
            );
        }
        let mut events = sse_stream::SseStream::from_bytes_stream(response.bytes_stream());
        let mut trace = Trace::default();
        let finished = loop {
            let data = match events.next().await {
                Some(Ok(sse)) => match sse.data {
                    Some(d) if !d.trim().is_empty() => d,
                    _ => continue,
                },
                Some(Err(e)) => break Err(format!("the agent's stream broke: {e}")),
                None => break Err("the agent closed the stream before the run finished".to_owned()),
            };
            let Ok(event) = serde_json::from_str::<Value>(&data) else {
                println!("{data}");
                continue;
            };
            trace.note(&event);
            match event.get("type").and_then(Value::as_str) {
                Some("RUN_FINISHED") => break Ok(event),
                Some("RUN_ERROR") => {
                    println!("{event}");
                    return Ok(ExitCode::FAILURE);
                }
                _ => println!("{event}"),
            }
        };
        let finished = match finished {
            Ok(finished) => finished,
            Err(message) => {
                println!(
                    "{}",
                    json!({"type": "RUN_ERROR", "message": message, "code": "clarify_agent_stream"})
                );
                return Ok(ExitCode::FAILURE);
            }
        };
        let Some((interrupts, legacy)) = trace
            .interrupts(&finished)
            .map_err(|e| anyhow::anyhow!("the agent's RUN_FINISHED does not fit AG-UI: {e}"))?
        else {
            println!("{finished}");
            return Ok(ExitCode::SUCCESS);
        };
        let run_id = finished
            .get("runId")
            .and_then(Value::as_str)
            .unwrap_or(&input.run_id)
            .to_owned();
        let mut asked = Vec::with_capacity(interrupts.len());
        for interrupt in &interrupts {
            let call = interrupt
                .tool_call_id
                .as_ref()
                .and_then(|id| trace.tool_call(id));
            let origin = Origin {
                agent: &name,
                thread_id: &input.thread_id,
                run_id: &run_id,
                tool_call: call.as_ref().map(|(n, a)| (n.as_str(), a)),
            };
            let (body, ask) = clarify_core::agui::request_body(interrupt, origin);
            let (record, _) = clarify
                .create(&body)
                .await
                .with_context(|| format!("asking interrupt {}", interrupt.id))?;
            asked.push((interrupt, record.id, ask));
        }
        let requests: Vec<Value> = asked
            .iter()
            .map(|(i, id, _)| json!({"interruptId": i.id, "requestId": id}))
            .collect();
        println!(
            "{}",
            json!({"type": "CUSTOM", "name": "clarify.requests",
                   "value": {"threadId": input.thread_id, "runId": run_id, "requests": requests}})
        );
        println!("{finished}");
        let mut entries = Vec::with_capacity(asked.len());
        for (interrupt, id, ask) in &asked {
            let record = clarify
                .wait_resolved(id, |e| eprintln!("clarify: {e}; retrying"))
                .await?;
            let outcome = serde_json::to_value(&record.outcome).unwrap_or(Value::Null);
            entries.push(clarify_core::agui::resume_entry(
                &interrupt.id,
                *ask,
                &outcome,
            ));
        }
        let next = clarify_core::agui::resume_input(
            trace.next_input(&input.raw),
            &format!("{}-{round}", input.run_id),
            &entries,
            legacy,
        );
        input = clarify_core::agui::parse_input(&next)
            .map_err(|e| anyhow::anyhow!("the resume input: {e}"))?;
    }
}
