//! `clarify inbox`: answer pending requests one after another by typed replies.
//!
//! Requests come oldest first. Each reply goes through core's `parse_reply`, the same function
//! every typed channel uses, so `2`, `b`, a label or `1,3` mean the same everywhere. A reply that
//! does not fit is explained and asked again; a request someone else resolved meanwhile is
//! reported with who did it, and the inbox moves on. Input is read line by line, so the inbox
//! works the same when stdin is a pipe.

use std::collections::HashSet;
use std::io::{BufRead, Write};
use std::process::ExitCode;

use clarify_client::{Answered, Client, ClientError, ListFilter, RecordBody};
use clarify_core::reply::{Reply, parse_reply};
use clarify_core::{Answer, QuestionKind};
use serde_json::{Map, Value, json};

use crate::client::Connection;
use crate::render;

/// Lines from stdin; `None` at the end of input.
struct Input {
    lines: std::io::Lines<std::io::StdinLock<'static>>,
}

impl Input {
    fn next(&mut self, prompt: &str) -> Option<String> {
        let mut out = std::io::stdout().lock();
        let _ = write!(out, "{prompt}");
        let _ = out.flush();
        drop(out);
        tokio::task::block_in_place(|| self.lines.next()).and_then(Result::ok)
    }
}

/// What became of one request.
enum Done {
    Answered,
    Moved,
    EndOfInput,
}

pub async fn run(conn: Connection) -> anyhow::Result<ExitCode> {
    let client = conn.client()?;
    let mut input = Input {
        lines: std::io::stdin().lock().lines(),
    };
    let mut seen = HashSet::new();
    let mut answered = 0usize;
    // A quorum request this key has voted on waits for others; it is not shown again.
    let me = client.whoami().await?;
    let mut waiting = 0usize;
    loop {
        let pending = oldest_pending(&client).await?;
        let fresh: Vec<RecordBody> = pending
            .into_iter()
            .filter(|r| seen.insert(r.id.clone()))
            .filter(|r| {
                let voted = voted_by(r, &me);
                waiting += usize::from(voted);
                !voted
            })
            .collect();
        if fresh.is_empty() {
            break;
        }
        for record in fresh {
            match handle(&client, &mut input, record).await? {
                Done::Answered => answered += 1,
                Done::Moved => {}
                Done::EndOfInput => {
                    eprintln!("clarify: end of input; {answered} answered");
                    return Ok(ExitCode::SUCCESS);
                }
            }
        }
    }
    if waiting > 0 {
        println!("{waiting} request(s) you voted on wait for more approvals.");
    }
    println!("No pending requests. {answered} answered.");
    Ok(ExitCode::SUCCESS)
}

/// Whether `me` has voted on this (quorum) request.
fn voted_by(record: &RecordBody, me: &str) -> bool {
    record.votes.iter().any(|v| v.by == me)
}

async fn oldest_pending(client: &Client) -> anyhow::Result<Vec<RecordBody>> {
    let mut all = Vec::new();
    let mut cursor = None;
    loop {
        let page = client
            .list(&ListFilter {
                status: Some("pending".to_owned()),
                limit: Some(500),
                cursor,
                ..ListFilter::default()
            })
            .await?;
        all.extend(page.requests);
        match page.next_cursor {
            Some(c) if all.len() < 5_000 => cursor = Some(c),
            _ => break,
        }
    }
    all.reverse();
    Ok(all)
}

async fn handle(client: &Client, input: &mut Input, record: RecordBody) -> anyhow::Result<Done> {
    let id = record.id;
    loop {
        let record = match client.get(&id).await {
            Ok(r) => r,
            Err(ClientError::Api { status: 404, .. }) => return Ok(Done::Moved),
            Err(e) => return Err(e.into()),
        };
        if record.is_resolved() {
            println!(
                "{id}: {} meanwhile; moving on.\n",
                render::status_sentence(&record)
            );
            return Ok(Done::Moved);
        }
        let request = record.request().map_err(|e| {
            anyhow::anyhow!("the server sent a request this client cannot read: {e}")
        })?;
        println!(
            "── {} ── {}",
            render::dim(&id),
            render::bold(&record.summary)
        );
        if let Some(line) = render::asked(&record) {
            println!("{}", render::dim(&line));
        }
        if let Some(ctx) = render::context(&record) {
            println!("{}\n", render::dim(&ctx));
        }
        if let Some(shown) = render::display(&record) {
            println!("{shown}\n");
        }
        if let Some(line) = render::quorum(record.approvals_required, &record.votes) {
            println!("{}\n", render::bold(&line));
        }
        let displayed = !record.blocks().is_empty();
        let mut answers = Map::new();
        let mut skip = false;
        for (q, shown) in request.questions.iter().zip(&record.questions) {
            print!("{}", render::question(shown, displayed));
            if let QuestionKind::Form(form) = &q.kind {
                let Some(values) = form_values(input, form) else {
                    return Ok(Done::EndOfInput);
                };
                answers.insert(q.id.clone(), json!({ "values": values }));
                continue;
            }
            let answer = loop {
                let Some(line) = input.next("> ") else {
                    return Ok(Done::EndOfInput);
                };
                match parse_reply(q, request.allow_skip, &line) {
                    Ok(Reply::Skip) => break None,
                    Ok(Reply::Answer(a)) => break Some(a),
                    Err(e) => eprintln!("  {e}; try again"),
                }
            };
            let Some(mut answer) = answer else {
                skip = true;
                break;
            };
            if let (QuestionKind::Approval(approval), Answer::Approval(a)) = (&q.kind, &mut answer)
                && approval.allow_edit
                && a.decision == clarify_core::Decision::Approve
            {
                match edited_arguments(input) {
                    Some(edited) => a.edited_arguments = edited,
                    None => return Ok(Done::EndOfInput),
                }
            }
            answers.insert(q.id.clone(), serde_json::to_value(&answer)?);
        }
        let body = if skip {
            json!({"skip": true})
        } else {
            json!({ "answers": answers })
        };
        match client.answer(&id, &body).await {
            Ok(answered) => {
                // A vote on a quorum request that needs more approvals comes back pending.
                let status = match answered {
                    Answered::Resolved(outcome) => outcome.status,
                    Answered::Voted(record) => {
                        match render::quorum(record.approvals_required, &record.votes) {
                            Some(line) => format!("vote counted: {line}"),
                            None => record.status,
                        }
                    }
                };
                println!("✓ {status}\n");
                return Ok(Done::Answered);
            }
            Err(ClientError::Api { code, message, .. }) if code == "already_voted" => {
                println!("{id}: {message}. Moving on.\n");
                return Ok(Done::Moved);
            }
            Err(ClientError::Api {
                code,
                record: Some(winner),
                ..
            }) if code == "already_resolved" => {
                println!(
                    "{id}: {} meanwhile; your answer was not used. Moving on.\n",
                    render::status_sentence(&winner)
                );
                return Ok(Done::Moved);
            }
            Err(ClientError::Api {
                status: 422,
                message,
                ..
            }) => {
                eprintln!("  the server refused the answer: {message}; answer again");
            }
            Err(ClientError::Api {
                status: 403 | 404,
                message,
                ..
            }) => {
                eprintln!("  {message}; moving on");
                return Ok(Done::Moved);
            }
            Err(e) => return Err(e.into()),
        }
    }
}

/// Asks for a form's fields one at a time: each typed value is read and checked at once, and a
/// refused one is asked again with the reason; a blank line takes the default, or leaves an
/// optional field empty. `None` at the end of input.
fn form_values(input: &mut Input, form: &clarify_core::Form) -> Option<Map<String, Value>> {
    let mut values = Map::new();
    for field in &form.fields {
        println!("{}", render::field_prompt(field));
        let value = loop {
            let line = input.next(&format!("{}> ", field.label))?;
            let typed = clarify_core::form::value_from_text(field, &line).and_then(|v| match v {
                Some(v) => clarify_core::form::check_value(field, &v).map(Some),
                None if field.default.is_some() => Ok(field.default.clone()),
                None if field.required => Err("is required".to_owned()),
                None => Ok(None),
            });
            match typed {
                Ok(v) => break v,
                Err(e) => eprintln!("  {}: {e}; try again", field.label),
            }
        };
        if let Some(v) = value {
            values.insert(field.id.clone(), v);
        }
    }
    Some(values)
}

/// Asks for replacement arguments as JSON; an empty line keeps the proposed ones. `None` at the
/// end of input.
fn edited_arguments(input: &mut Input) -> Option<Option<Value>> {
    loop {
        let line = input.next("edited arguments as JSON (empty keeps them)> ")?;
        let line = line.trim();
        if line.is_empty() {
            return Some(None);
        }
        match serde_json::from_str::<Value>(line) {
            Ok(v @ Value::Object(_)) => return Some(Some(v)),
            Ok(_) => eprintln!("  the arguments must be a JSON object; try again"),
            Err(e) => eprintln!("  that is not JSON ({e}); try again"),
        }
    }
}
