//! Signed answer links: `/a/<token>` answers one request without an API key.
//!
//! A token is `<request id>.<signature>`, the signature an HMAC-SHA256 of the id under the
//! server's link secret (kept in the store, shared by every instance). A token whose signature
//! does not match is `404`, like an unknown id. The link needs no state of its own: it works
//! while its request is pending, and once the request is resolved (answered through the link or
//! otherwise, or expired) it only says so, so it works once and dies with its request.
//!
//! `GET` shows a plain HTML form that works without script (with script, the inbox's request
//! view takes its place and reads the record from the same address as JSON); `POST` takes
//! either that form or the JSON answer body of `POST /v1/requests/{id}/answer`, and answers the
//! same way.
//!
//! A personal link (`<request id>~<name>.<signature>`, the signature over both) answers as that
//! person (`answered_via` `personal_link`), so it can vote on a quorum request, which the
//! anonymous link cannot; the store checks the person as it checks everyone (responders, groups,
//! four eyes), so a person whose access was removed is refused, and a vote is cast once. A
//! browser signed in to the inbox as someone else is refused rather than answering as the
//! link's person.
//!
//! A push link (`<request id>~<name>~<subscription>.<signature>`, signed over all three) is the
//! personal link a Web Push notification's buttons answer through: it answers as that person
//! (`answered_via` `push`, with the groups kept with the subscription) while the subscription it
//! was sent to exists, and is `404` once it was removed.
//!
//! A high-risk request under `[decisions] step_up` takes an answer only with a passkey
//! confirmation made for it: `POST /a/<token>/step-up` and `.../step-up/finish` (discoverable:
//! whichever passkey the browser offers) give a proof the answer carries in
//! `X-Clarify-Step-Up`. On a personal link the passkey must be the link's person's; on an
//! anonymous link its owner (of the request's tenant) is who answers, by name.
//!
//! `GET /a/<token>?answer=<URL-safe base64 of an answer body>` (the option links of an e-mail)
//! answers nothing: it shows a confirmation page saying what the answer is, whose form POSTs it
//! to the link as the answer page's form fields. Mail scanners follow GET links; only the
//! confirmed POST answers, through the same validation as every other path. The answer body is
//! `{"answers": {"<question id>": {"option": ..} | {"decision": .., "scope": ..}}}`; anything
//! else is a `400` page.

use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use clarify_core::QuestionKind;
use clarify_model::wire::RecordBody;
use clarify_store::{Actor, PushSubscription, RequestRecord, STEP_UP_WINDOW, StepUp};
use serde_json::{Map, Value, json};

use crate::shared::error::{ApiError, resolve_error};
use crate::shared::extract::{Drained, JsonBody, RawBody, parse_json};
use crate::shared::json::Json;
use crate::shared::sign::link_target;
use crate::state::AppState;
use crate::state::passkeys::{
    Ceremony, STEP_UP_HEADER, ceremony_gone, parse, refused, relying_party, step_up_refused,
    take_proof, verify_discoverable,
};
use crate::web::html;

/// Who answers through a link: the person a personal link names (through the Web Push
/// subscription a push link was sent to), or whoever holds an anonymous one (no name).
fn link_actor(person: Option<&str>, push: Option<&PushSubscription>) -> Actor {
    match (person, push) {
        // The link was signed for this person's subscription, which still exists: the groups
        // their identity provider gave when subscribing count, as in the inbox.
        (Some(name), Some(push)) => Actor::new(name, "push")
            .in_groups(push.groups.clone())
            .as_principal(format!("push:{}", push.id)),
        // The link was signed for this person: it is what authenticates them.
        (Some(name), None) => {
            Actor::new(name, "personal_link").as_principal(format!("personal_link:{name}"))
        }
        (None, _) => Actor {
            name: None,
            channel: "link".to_owned(),
            ..Actor::default()
        },
    }
}

async fn record_of(state: &AppState, token: &str) -> Result<RequestRecord, ApiError> {
    Ok(target_of(state, token).await?.0)
}

/// The link's request, the person a personal link names, and the subscription a push link was
/// sent to (which must still be that person's, in the request's tenant).
async fn target_of(
    state: &AppState,
    token: &str,
) -> Result<(RequestRecord, Option<String>, Option<PushSubscription>), ApiError> {
    let target = link_target(&state.secrets.link, token).ok_or_else(link_not_found)?;
    let record = state
        .store
        .get_by_id(target.id)
        .await?
        .ok_or_else(link_not_found)?;
    let push = match target.subscription {
        None => None,
        Some(id) => {
            let found =
                state.store.push_subscription(id).await?.filter(|s| {
                    s.tenant == record.tenant && Some(&s.person) == target.person.as_ref()
                });
            Some(found.ok_or_else(|| {
                ApiError::new(
                    StatusCode::NOT_FOUND,
                    "not_found",
                    "the notifications this came with were turned off; open the request in the inbox",
                )
            })?)
        }
    };
    Ok((record, target.person, push))
}

/// Refuses a personal link opened in a browser signed in to the inbox as someone else.
async fn check_holder(
    state: &AppState,
    headers: &HeaderMap,
    person: Option<&str>,
) -> Result<(), ApiError> {
    let Some(person) = person else {
        return Ok(());
    };
    match crate::middleware::auth::signed_in(state, headers).await? {
        Some(name) if name != person => Err(ApiError::forbidden(
            "not_your_link",
            format!(
                "this link is {person}'s, and this browser is signed in as {name}; answer in the inbox, or sign out first"
            ),
        )),
        _ => Ok(()),
    }
}

fn link_not_found() -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        "not_found",
        "this answer link is not valid; check that it was copied whole",
    )
}

/// The answer page of a signed link.
pub(crate) async fn page(
    State(state): State<AppState>,
    Path(token): Path<String>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Response {
    let (record, person, _) = match target_of(&state, &token).await {
        Ok(r) => r,
        Err(e) if wants_json(&headers) => return e.into_response(),
        Err(e) => return html::message_page(e.status, "Link not valid", &e.message),
    };
    if wants_json(&headers) {
        // A link holder sees what a responder sees, not where the outcome is sent.
        let mut body = RecordBody::new(&record, None);
        body.callback_url = None;
        body.resume = None;
        body.step_up = state.store.needs_step_up(&record.request);
        let mut response = Json(body).into_response();
        response.headers_mut().insert(
            header::CACHE_CONTROL,
            axum::http::HeaderValue::from_static("no-store"),
        );
        return response;
    }
    let chosen = query.as_deref().and_then(|q| {
        url::form_urlencoded::parse(q.as_bytes())
            .find(|(k, _)| k == "answer")
            .map(|(_, v)| v.into_owned())
    });
    match chosen {
        Some(encoded)
            if !record.status.is_resolved()
                && (!record.request.is_quorum() || person.is_some()) =>
        {
            match confirmation(&record, &encoded) {
                Ok((lines, fields)) => html::confirm_page(&record, &token, &lines, &fields),
                Err(why) => html::message_page(
                    StatusCode::BAD_REQUEST,
                    "Answer link not valid",
                    &format!(
                        "{why}. Check that the link was copied whole, or answer on the request's page."
                    ),
                ),
            }
        }
        _ => {
            let display = shown(&state, &record, &token).await;
            html::link_page(&record, person.as_deref(), None, &display)
        }
    }
}

/// The display fragment of `record` as its link page shows it, images under the link.
async fn shown(state: &AppState, record: &RequestRecord, token: &str) -> String {
    crate::web::display::html(state, record, &format!("/a/{token}/display")).await
}

/// `GET /a/<token>/display`: the request's display blocks as a fragment, for the link page's
/// script (the page without script has them inline).
pub(crate) async fn display(
    State(state): State<AppState>,
    Path(token): Path<String>,
) -> Result<Response, ApiError> {
    let record = record_of(&state, &token).await?;
    Ok(crate::web::display::respond(
        shown(&state, &record, &token).await,
    ))
}

/// `GET /a/<token>/display/<n>`: an image block of the link's request, for whoever holds it.
pub(crate) async fn image(
    State(state): State<AppState>,
    Path((token, n)): Path<(String, String)>,
) -> Result<Response, ApiError> {
    let record = record_of(&state, &token).await?;
    crate::shared::media::image(&record.request.display, &n)
}

/// What a link's chosen answer says, per question in words, and the answer page's form fields
/// that send it; or why it cannot be read.
#[allow(clippy::type_complexity)]
fn confirmation(
    record: &RequestRecord,
    encoded: &str,
) -> Result<(Vec<(String, String)>, Vec<(String, String)>), String> {
    let unreadable = || "the answer in this link cannot be read".to_owned();
    let bytes = URL_SAFE_NO_PAD
        .decode(encoded.trim_end_matches('='))
        .map_err(|_| unreadable())?;
    let body: Value = serde_json::from_slice(&bytes).map_err(|_| unreadable())?;
    let answers = body
        .get("answers")
        .and_then(Value::as_object)
        .filter(|a| !a.is_empty())
        .ok_or_else(unreadable)?;
    let mut lines = Vec::new();
    let mut fields = Vec::new();
    for (id, answer) in answers {
        let question = record
            .request
            .question(id)
            .ok_or_else(|| format!("the answer in this link names no question {id:?}"))?;
        let answer = answer.as_object().ok_or_else(unreadable)?;
        let text = |key: &str| answer.get(key).and_then(Value::as_str);
        let words = match (&question.kind, text("option"), text("decision")) {
            (QuestionKind::Single(c), Some(option), None) if answer.len() == 1 => {
                let choice = c
                    .by_id(option)
                    .ok_or_else(|| format!("the answer in this link names no option {option:?}"))?;
                fields.push((format!("{id}.option"), option.to_owned()));
                choice.label.clone()
            }
            (QuestionKind::Approval(a), None, Some(decision)) => {
                let scope = text("scope");
                if answer.len() != 1 + usize::from(answer.contains_key("scope"))
                    || (answer.contains_key("scope") && scope.is_none())
                {
                    return Err(unreadable());
                }
                let words = match (decision, scope) {
                    ("deny", None) => format!("Deny {}", a.action.name),
                    ("approve", None | Some("once")) => format!("Approve {}", a.action.name),
                    ("approve", Some("session")) => {
                        format!("Approve {} for this session", a.action.name)
                    }
                    ("approve", Some("always")) => format!("Approve {} always", a.action.name),
                    _ => return Err(unreadable()),
                };
                fields.push((format!("{id}.decision"), decision.to_owned()));
                if let Some(scope) = scope {
                    fields.push((format!("{id}.scope"), scope.to_owned()));
                }
                words
            }
            _ => return Err(unreadable()),
        };
        lines.push((question.text.clone(), format!("{words}?")));
    }
    Ok((lines, fields))
}

/// Answers through a signed link: a JSON answer body, or the page's form.
pub(crate) async fn answer(
    State(state): State<AppState>,
    Path(token): Path<String>,
    headers: HeaderMap,
    RawBody(body): RawBody,
) -> Response {
    let is_form = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/x-www-form-urlencoded"));
    let checked = match target_of(&state, &token).await {
        Ok((record, person, push)) => check_holder(&state, &headers, person.as_deref())
            .await
            .map(|()| (record, person, push)),
        Err(e) => Err(e),
    };
    let (record, person, push) = match checked {
        Ok(r) => r,
        Err(e) if is_form => {
            return html::message_page(e.status, "Link not valid", &e.message);
        }
        Err(e) => return e.into_response(),
    };
    let raw = if is_form {
        match form_answer(&record, &body) {
            Ok(v) => v,
            Err(message) => {
                let display = shown(&state, &record, &token).await;
                return html::link_page(&record, person.as_deref(), Some(&message), &display);
            }
        }
    } else {
        match parse_json::<Value>(&body) {
            Ok(v) => v,
            Err(e) => return e.into_response(),
        }
    };
    let actor =
        match link_step_up(&state, &headers, &record, person.as_deref(), push.as_ref()).await {
            Ok(actor) => actor,
            Err(e) if is_form => {
                let display = shown(&state, &record, &token).await;
                return html::link_page(&record, person.as_deref(), Some(&e.message), &display);
            }
            Err(e) => return e.into_response(),
        };
    let result = state
        .store
        .answer(&record.tenant, &record.id, &raw, &actor)
        .await;
    match result {
        // A personal link's vote on a quorum request, counted; more are needed.
        Ok(counted) if counted.status == clarify_core::Status::Pending => {
            state.changed(&counted);
            if is_form {
                Redirect::to(&format!("/a/{token}")).into_response()
            } else {
                let mut body = RecordBody::new(&counted, None);
                body.callback_url = None;
                body.resume = None;
                (StatusCode::ACCEPTED, Json(body)).into_response()
            }
        }
        Ok(done) => match state.resolved(&done) {
            Err(e) => e.into_response(),
            Ok(_) if is_form => Redirect::to(&format!("/a/{token}")).into_response(),
            Ok(outcome) => Json(outcome).into_response(),
        },
        Err(e) => {
            let e = resolve_error(e, |r| RecordBody::new(r, None));
            if !is_form {
                return e.into_response();
            }
            match e.status {
                StatusCode::CONFLICT => Redirect::to(&format!("/a/{token}")).into_response(),
                _ => {
                    let display = shown(&state, &record, &token).await;
                    html::link_page(&record, person.as_deref(), Some(&e.message), &display)
                }
            }
        }
    }
}

/// Who answers through the link, with the step-up its proof (`X-Clarify-Step-Up`) gives: on a
/// personal link, its person, who must have confirmed with their own passkey; on an anonymous
/// link, whoever the passkey belongs to, who then answers as themselves.
async fn link_step_up(
    state: &AppState,
    headers: &HeaderMap,
    record: &RequestRecord,
    person: Option<&str>,
    push: Option<&PushSubscription>,
) -> Result<Actor, ApiError> {
    let Some(proof) = headers.get(STEP_UP_HEADER).and_then(|v| v.to_str().ok()) else {
        return Ok(link_actor(person, push));
    };
    let confirmed = take_proof(state, proof, &record.id).await?;
    if confirmed.tenant != record.tenant || person.is_some_and(|p| p != confirmed.name) {
        return Err(step_up_refused(
            "this passkey confirmation was made by another person",
        ));
    }
    let step_up = StepUp::Confirmed {
        request_id: record.id.clone(),
    };
    Ok(match person {
        Some(_) => link_actor(person, push).stepped_up(step_up),
        None => Actor::new(confirmed.name, "link")
            .as_principal(confirmed.principal)
            .stepped_up(step_up),
    })
}

/// Starts a step-up on an answer link: any passkey registered here (discoverable), whose
/// owner must be the link's person (personal link) or one of the request's tenant (anonymous).
pub(crate) async fn start_step_up(
    State(state): State<AppState>,
    Path(token): Path<String>,
    _: Drained,
) -> Result<Json<Value>, ApiError> {
    let rp = relying_party(&state)?;
    let (record, person, _) = target_of(&state, &token).await?;
    let (mut request, authentication) = rp
        .start_discoverable_authentication()
        .map_err(|e| refused(format!("the passkey confirmation could not start: {e}")))?;
    request.mediation = None;
    let token = Ceremony::LinkStepUp {
        tenant: record.tenant.clone(),
        request: record.id.clone(),
        person,
        state: authentication,
    }
    .begin(&state.store)
    .await?;
    Ok(Json(json!({"token": token, "options": request})))
}

/// Finishes a step-up on an answer link: the proof its answer carries in `X-Clarify-Step-Up`.
pub(crate) async fn finish_step_up(
    State(state): State<AppState>,
    Path(link): Path<String>,
    JsonBody(body): JsonBody<Value>,
) -> Result<Json<Value>, ApiError> {
    let rp = relying_party(&state)?;
    let (record, _, _) = target_of(&state, &link).await?;
    let token = body
        .get("token")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let credential = parse(body.get("credential").cloned().unwrap_or(Value::Null))?;
    let Some(Ceremony::LinkStepUp {
        tenant,
        request,
        person,
        state: authentication,
    }) = Ceremony::take(&state.store, token).await?
    else {
        return Err(ceremony_gone());
    };
    if request != record.id {
        return Err(refused(
            "this passkey confirmation was started for another request; confirm this one",
        ));
    }
    let stored = verify_discoverable(&state, rp, &credential, authentication).await?;
    if stored.tenant != tenant || person.as_ref().is_some_and(|p| *p != stored.name) {
        return Err(refused(
            "this passkey is another person's; confirm with your own",
        ));
    }
    let proof = Ceremony::Proof {
        tenant,
        name: stored.name,
        request,
        principal: stored.principal,
    }
    .begin(&state.store)
    .await?;
    Ok(Json(json!({
        "proof": proof,
        "expires_at": clarify_model::wire::time(state.store.now() + STEP_UP_WINDOW),
    })))
}

fn wants_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.contains("application/json") && !v.contains("text/html"))
}

/// Builds an answer body from the page's form fields `<question id>.<field>`:
/// `option`, `options` (repeated), `other`, `text`, `decision`, `scope`, `reason`,
/// `edited_arguments` (JSON text); or `skip`. Blank fields count as absent. Fails, with a
/// message for the page, when edited arguments are not JSON.
fn form_answer(record: &RequestRecord, body: &[u8]) -> Result<Value, String> {
    let mut answers: Map<String, Value> = Map::new();
    let mut skip = false;
    for (name, value) in url_pairs(body) {
        let value = value.trim().to_owned();
        if name == "skip" {
            skip = true;
            continue;
        }
        if value.is_empty() {
            continue;
        }
        if let Some((question, field)) = name.split_once(".values.") {
            form_value(record, &mut answers, question, field, &value)?;
            continue;
        }
        let Some((question, field)) = name.rsplit_once('.') else {
            continue;
        };
        if record.request.question(question).is_none() {
            continue;
        }
        let entry = answers
            .entry(question.to_owned())
            .or_insert_with(|| Value::Object(Map::new()));
        let Some(obj) = entry.as_object_mut() else {
            continue;
        };
        match field {
            "options" => {
                let list = obj.entry("options").or_insert_with(|| json!([]));
                if let Some(list) = list.as_array_mut() {
                    list.push(Value::String(value));
                }
            }
            "option" | "other" | "text" | "decision" | "scope" | "reason" | "edited_arguments" => {
                obj.insert(field.to_owned(), Value::String(value));
            }
            _ => {}
        }
    }
    for (question, entry) in &mut answers {
        if let Some(obj) = entry.as_object_mut() {
            edited_arguments(record, question, obj)?;
        }
    }
    if skip {
        Ok(json!({"skip": true}))
    } else {
        Ok(json!({ "answers": answers }))
    }
}

/// Reads one typed form value (`<question>.values.<field>`) into the answer; a repeated
/// `choices` field adds to its list. A value that cannot be read is reported with the field's
/// label for the page.
fn form_value(
    record: &RequestRecord,
    answers: &mut Map<String, Value>,
    question: &str,
    field_id: &str,
    text: &str,
) -> Result<(), String> {
    let Some(QuestionKind::Form(form)) = record.request.question(question).map(|q| &q.kind) else {
        return Ok(());
    };
    let Some(field) = form.field(field_id) else {
        return Ok(());
    };
    let Some(value) = clarify_core::form::value_from_text(field, text)
        .map_err(|e| format!("{}: {e}", field.label))?
    else {
        return Ok(());
    };
    let entry = answers
        .entry(question.to_owned())
        .or_insert_with(|| json!({"values": {}}));
    if let Some(values) = entry.get_mut("values").and_then(Value::as_object_mut) {
        match (values.get_mut(field_id), value) {
            (Some(Value::Array(list)), Value::Array(more)) => list.extend(more),
            (_, value) => {
                values.insert(field_id.to_owned(), value);
            }
        }
    }
    Ok(())
}

/// Turns the form's `edited_arguments` text into an edit, or drops it. The page pre-fills the
/// textarea with the action's arguments, so the form always sends them: only an approval with
/// changed arguments is an edit. Sent with a deny, or unchanged, they would make a plain deny
/// fail ("edits come only with approve") and report an unchanged approval as edited.
fn edited_arguments(
    record: &RequestRecord,
    question: &str,
    answer: &mut Map<String, Value>,
) -> Result<(), String> {
    let Some(Value::String(text)) = answer.remove("edited_arguments") else {
        return Ok(());
    };
    let Some(QuestionKind::Approval(approval)) = record.request.question(question).map(|q| &q.kind)
    else {
        // Only approvals have arguments; the page sends none for other questions.
        return Ok(());
    };
    if answer.get("decision").and_then(Value::as_str) != Some("approve") {
        return Ok(());
    }
    let edited: Value = serde_json::from_str(&text).map_err(|e| {
        format!("{question}: the edited arguments are not valid JSON ({e}); correct them, or restore the original arguments")
    })?;
    if edited != approval.action.arguments {
        answer.insert("edited_arguments".to_owned(), edited);
    }
    Ok(())
}

/// Decodes `application/x-www-form-urlencoded`.
fn url_pairs(body: &[u8]) -> Vec<(String, String)> {
    url::form_urlencoded::parse(body).into_owned().collect()
}
