//! A request's display blocks as an HTML fragment: what the inbox's script and the answer-link
//! page put above the questions.
//!
//! The blocks are rendered by clarify-render (sanitised HTML, diffs as numbered lines), so the
//! inbox, the link page with and without script, and e-mail show the same thing. A request
//! that revises an earlier one also shows that one's decision and reason and, for approvals of
//! the same tool, how the arguments changed.

use std::fmt::Write;

use axum::extract::{Path, State};
use axum::http::{HeaderValue, header};
use axum::response::{Html, IntoResponse, Response};
use clarify_core::QuestionKind;
use clarify_render::html::{blocks, diff, escape};
use clarify_store::RequestRecord;

use crate::middleware::auth::Caller;
use crate::shared::error::ApiError;
use crate::state::AppState;

/// `GET /display/{id}`: the fragment for a signed-in person (or a key), images served by the
/// API at `/v1/requests/{id}/display/{n}`.
pub(crate) async fn fragment(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let record = state
        .store
        .get(caller.tenant(), &id)
        .await?
        .ok_or_else(ApiError::not_found)?;
    let images = format!("/v1/requests/{}/display", record.id);
    Ok(respond(html(&state, &record, &images).await))
}

/// The fragment as a response: HTML the page parses but never runs (the page's policy allows
/// no inline script, and the fragment holds none).
pub(crate) fn respond(html: String) -> Response {
    let mut response = Html(html).into_response();
    response.headers_mut().insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("private, no-store"),
    );
    response
}

/// The display of `record` (images under `images/<n>`), and what it revises.
pub(crate) async fn html(state: &AppState, record: &RequestRecord, images: &str) -> String {
    let request = &record.request;
    let mut out = String::new();
    if let Some(earlier) = &request.revises {
        // The earlier request is of the same tenant (checked when this one was made).
        if let Ok(Some(before)) = state.store.get(&record.tenant, earlier).await {
            out.push_str(&revision(&before, record));
        }
    }
    if !request.display.is_empty() {
        let images = images.to_owned();
        out.push_str(&blocks(&request.display, &move |n| {
            Some(format!("{images}/{n}"))
        }));
    }
    out
}

/// What the earlier request decided, and how an approval's arguments changed since.
fn revision(before: &RequestRecord, now: &RequestRecord) -> String {
    let mut out = String::from("<section class=\"block revises\">");
    let _ = write!(
        out,
        "<h3 class=\"block-title\">This revises an earlier request</h3><p>{}</p>",
        escape(&before.request.summary)
    );
    if let Some(outcome) = before.outcome() {
        let who = outcome.answered_by.as_deref().unwrap_or("nobody");
        for q in &outcome.questions {
            let said = match (q.decision, &q.reason) {
                (Some(d), Some(reason)) => format!("{} by {who}: {reason}", decided(d)),
                (Some(d), None) => format!("{} by {who}", decided(d)),
                (None, _) => format!("{} ({})", before.status, who),
            };
            let _ = write!(out, "<p class=\"earlier-decision\">{}</p>", escape(&said));
        }
    }
    let action = |r: &RequestRecord| {
        r.request.questions.iter().find_map(|q| match &q.kind {
            QuestionKind::Approval(a) => Some(a.action.clone()),
            _ => None,
        })
    };
    if let (Some(old), Some(new)) = (action(before), action(now))
        && old.name == new.name
        && old.arguments == new.arguments
    {
        out.push_str("<p>The arguments are the same as before.</p>");
    } else if let (Some(old), Some(new)) = (action(before), action(now))
        && old.name == new.name
    {
        let pretty = |v: &serde_json::Value| {
            format!("{}\n", serde_json::to_string_pretty(v).unwrap_or_default())
        };
        let changes = clarify_core::display::unified_diff(
            Some("arguments"),
            &pretty(&old.arguments),
            &pretty(&new.arguments),
        );
        out.push_str("<h4>How the arguments changed</h4>");
        out.push_str(&diff(Some("arguments"), &changes));
    }
    out.push_str("</section>");
    out
}

fn decided(d: clarify_core::Decision) -> &'static str {
    match d {
        clarify_core::Decision::Approve => "Approved",
        clarify_core::Decision::Deny => "Denied",
        clarify_core::Decision::Revise => "Changes requested",
    }
}
