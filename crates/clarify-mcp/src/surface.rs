//! The calling MCP client as one more place a person answers: what it can show, asking there,
//! and taking its answer.
//!
//! A client that declares form elicitation is asked the request as a flat form
//! ([`crate::elicit`]); one that declares URL mode (2025-11-25 on) and whose request does not fit
//! a form is sent the request's answer link instead. Before 2026-07-28 the ask is an
//! `elicitation/create` sent while the tool call waits, raced against every other surface
//! ([`ClarifyMcp::wait_with_client`]): the first answer wins, and when another surface answers
//! first the client's pending elicitation is withdrawn with `notifications/cancelled` (a URL
//! elicitation the user accepted is closed with `notifications/elicitation/complete`). On
//! 2026-07-28 the ask travels in an `input_required` result with a sealed `requestState`
//! ([`crate::state`]), and the client's retry brings the answer ([`ClarifyMcp::resume`]); for a
//! task it travels in the task's `inputRequests`, answered with `tasks/update` ([`crate::tasks`]).
//!
//! An answer from the client resolves the request through the store like any other answer
//! (`Upstream::answer`, channel `mcp`), so chat announcements are edited to the outcome. One that
//! does not fit leaves the request pending and is shown to the client's user with the form
//! again. `decline` is a "no" ([`crate::elicit::declined`]: a denial of approvals, otherwise a
//! skip where allowed); `cancel` (the form dismissed) decides nothing and the call goes on waiting
//! for the other surfaces.

use std::collections::BTreeMap;

use clarify_client::OutcomeBody;
use clarify_core::NewRequest;
use rmcp::model::{
    ClientResult, CustomNotification, ElicitRequestParams, ElicitResult, ElicitationAction,
    InputRequest, InputRequiredResult, ProtocolVersion, ServerNotification, ServerRequest,
};
use rmcp::service::{PeerRequestOptions, RequestContext};
use rmcp::{ErrorData, RoleServer};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::elicit::{self, Declined, Dialect};
use crate::error::ToolError;
use crate::upstream::Answered;
use crate::{ClarifyMcp, Party, Waited};

/// The key of clarify's one input request in an `input_required` result.
pub(crate) const INPUT_KEY: &str = "clarify";
/// How often a form is shown again after answers that did not fit.
const MAX_ROUNDS: usize = 3;

/// What the calling client can show its user, read from its declared capabilities.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct ClientSurface {
    /// Form elicitation, in this schema dialect.
    pub form: Option<Dialect>,
    /// URL-mode elicitation (2025-11-25 on).
    pub url: bool,
    /// The tasks extension.
    pub tasks: bool,
    /// Server-to-client requests travel in `input_required` results (2026-07-28 on).
    pub input_required: bool,
}

impl ClientSurface {
    pub(crate) fn of(context: &RequestContext<RoleServer>) -> Self {
        let version = context.protocol_version();
        let version = version.as_ref().map(ProtocolVersion::as_str);
        let Some(capabilities) = context.client_capabilities() else {
            return Self::default();
        };
        let url_era = version.is_some_and(|v| v >= "2025-11-25");
        // `elicitation: {}` declares form mode alone.
        let (form, url) = match &capabilities.elicitation {
            None => (false, false),
            Some(e) => (
                e.form.is_some() || e.url.is_none(),
                e.url.is_some() && url_era,
            ),
        };
        Self {
            form: form.then(|| Dialect::of(version)),
            url,
            tasks: capabilities.supports_tasks(),
            input_required: version.is_some_and(|v| v >= "2026-07-28"),
        }
    }
}

/// What the client is asked.
#[derive(Debug, Clone)]
pub(crate) enum ClientAsk {
    Form {
        request: std::sync::Arc<NewRequest>,
        form: elicit::Form,
    },
    Url {
        url: String,
        message: String,
    },
}

impl ClientAsk {
    /// The elicitation's parameters, with `note` (why it is asked again) above the message.
    fn params(&self, id: &str, note: Option<&str>, with_id: bool) -> Option<ElicitRequestParams> {
        let with_note = |message: &str| match note {
            Some(note) => format!("{note}\n\n{message}"),
            None => message.to_owned(),
        };
        let params = match self {
            Self::Form { form, .. } => json!({
                "mode": "form",
                "message": with_note(&form.message),
                "requestedSchema": form.schema,
            }),
            Self::Url { url, message } => {
                let mut p = json!({"mode": "url", "message": with_note(message), "url": url});
                if with_id {
                    p["elicitationId"] = Value::String(id.to_owned());
                }
                p
            }
        };
        match serde_json::from_value(params) {
            Ok(params) => Some(params),
            Err(e) => {
                tracing::warn!(error = %e, "a request's form was not a valid elicitation");
                None
            }
        }
    }

    /// This ask as one input request (2026-07-28: no `elicitationId`; the retry or
    /// `tasks/update` brings the answer), with `note` above the message.
    pub(crate) fn input_request(&self, id: &str, note: Option<&str>) -> Option<InputRequest> {
        // 2026-07-28 dropped `elicitationId`, but rmcp's URL parameters always carry one (empty
        // when unset): the request id at least means something to a client that reads it.
        let params = self.params(id, note, true)?;
        serde_json::from_value(json!({
            "method": "elicitation/create",
            "params": params,
        }))
        .ok()
    }

    /// An `input_required` result asking this, with `state`.
    pub(crate) fn input_required(
        &self,
        id: &str,
        note: Option<&str>,
        state: String,
    ) -> Option<InputRequiredResult> {
        let request = self.input_request(id, note)?;
        let requests = BTreeMap::from([(INPUT_KEY.to_owned(), request)]);
        Some(InputRequiredResult::new(Some(requests), Some(state)))
    }
}

impl ClarifyMcp {
    /// What to ask the client about request `id`, if anything: the form when it fits and this
    /// upstream can take the answer, else the answer link where the client opens links.
    pub(crate) async fn client_ask(
        &self,
        party: &Party,
        id: &str,
        surface: ClientSurface,
    ) -> Result<Option<ClientAsk>, ToolError> {
        if surface.form.is_none() && !surface.url {
            return Ok(None);
        }
        let snapshot = party.upstream.snapshot(id).await?;
        if let Some(dialect) = surface.form
            && party.upstream.answers_in_client(id)
            && let Some(form) = elicit::form(&snapshot.request, dialect)
        {
            return Ok(Some(ClientAsk::Form {
                request: snapshot.request,
                form,
            }));
        }
        if surface.url
            && let Some(url) = party.upstream.answer_url(id).await
        {
            let message = format!(
                "{}\n\nAnswer on clarify's page (the form has more than this client can show).",
                elicit::message(&snapshot.request)
            );
            return Ok(Some(ClientAsk::Url { url, message }));
        }
        Ok(None)
    }

    /// Waits for request `id` like [`ClarifyMcp::wait`], asking in the client too (before
    /// 2026-07-28) when it can show the request; the first answer wins.
    pub(crate) async fn wait_with_client(
        &self,
        party: &Party,
        id: &str,
        timeout: Option<std::time::Duration>,
        context: &RequestContext<RoleServer>,
    ) -> Result<Waited, ToolError> {
        let surface = ClientSurface::of(context);
        let ask = if surface.input_required {
            None
        } else {
            self.client_ask(party, id, surface).await?
        };
        let Some(ask) = ask else {
            return self.wait(party, id, timeout, None, context).await;
        };
        let withdraw = CancellationToken::new();
        let in_client = self.elicit_in_client(party, id, &ask, context, withdraw.clone());
        let waiting = self.wait(party, id, timeout, None, context);
        tokio::pin!(in_client, waiting);
        tokio::select! {
            answered = &mut in_client => match answered {
                Some(outcome) => Ok(Waited::Resolved(outcome)),
                None => waiting.await,
            },
            waited = &mut waiting => {
                withdraw.cancel();
                in_client.await;
                waited
            }
        }
    }

    /// Asks the client (rounds of `elicitation/create`) until its user's answer resolves the
    /// request (`Some(outcome)`), or `withdraw` fires (`None`); an ask the client declines or
    /// dismisses, or cannot show, waits for `withdraw`.
    async fn elicit_in_client(
        &self,
        party: &Party,
        id: &str,
        ask: &ClientAsk,
        context: &RequestContext<RoleServer>,
        withdraw: CancellationToken,
    ) -> Option<Box<OutcomeBody>> {
        let mut note: Option<String> = None;
        for _ in 0..MAX_ROUNDS {
            let params = ask.params(id, note.as_deref(), true)?;
            let sent = context
                .peer
                .send_cancellable_request(
                    ServerRequest::ElicitRequest(rmcp::model::ElicitRequest::new(params)),
                    PeerRequestOptions::no_options(),
                )
                .await;
            let mut handle = match sent {
                Ok(handle) => handle,
                Err(e) => {
                    tracing::debug!(error = %e, "the client could not be asked");
                    break;
                }
            };
            let response = tokio::select! {
                response = &mut handle.rx => response,
                () = withdraw.cancelled() => {
                    tracing::info!(id, "answered elsewhere; withdrawing the client's elicitation");
                    if let Err(e) = handle.cancel(Some("answered elsewhere".to_owned())).await {
                        tracing::debug!(error = %e, "withdrawing the elicitation");
                    }
                    return None;
                }
            };
            let result = match response {
                Ok(Ok(ClientResult::ElicitResult(result))) => result,
                Ok(Ok(other)) => {
                    tracing::debug!(
                        ?other,
                        "the client answered the elicitation with something else"
                    );
                    break;
                }
                Ok(Err(e)) => {
                    tracing::debug!(error = %e, "the client refused the elicitation");
                    break;
                }
                Err(_) => break,
            };
            match self.take_answer(party, id, ask, &result).await {
                Ok(Taken::Resolved(outcome)) => return Some(outcome),
                Ok(Taken::Misfit(why)) => {
                    note = Some(format!(
                        "That answer did not fit ({why}); the question is still open."
                    ));
                }
                Ok(Taken::Nothing) => {
                    if let ClientAsk::Url { .. } = ask
                        && result.action == ElicitationAction::Accept
                    {
                        // The person went to the page: tell the client when it is answered.
                        withdraw.cancelled().await;
                        let done = CustomNotification::new(
                            "notifications/elicitation/complete",
                            Some(json!({"elicitationId": id})),
                        );
                        if let Err(e) = context
                            .peer
                            .send_notification(ServerNotification::CustomNotification(done))
                            .await
                        {
                            tracing::debug!(error = %e, "elicitation/complete was not sent");
                        }
                        return None;
                    }
                    break;
                }
                Err(e) => {
                    tracing::warn!(error = %e, "an answer from the MCP client was not stored");
                    break;
                }
            }
        }
        withdraw.cancelled().await;
        None
    }

    /// Applies the client's elicitation result to request `id`.
    pub(crate) async fn take_answer(
        &self,
        party: &Party,
        id: &str,
        ask: &ClientAsk,
        result: &ElicitResult,
    ) -> Result<Taken, ToolError> {
        let ClientAsk::Form { request, .. } = ask else {
            return Ok(Taken::Nothing);
        };
        let body = match result.action {
            ElicitationAction::Decline => match elicit::declined(request) {
                Declined::Deny(body) => body,
                Declined::Skip => json!({"skip": true}),
                Declined::Leave => return Ok(Taken::Nothing),
            },
            ElicitationAction::Accept => {
                let content = match &result.content {
                    Some(Value::Object(content)) => content.clone(),
                    _ => return Ok(Taken::Misfit("the form came back empty".to_owned())),
                };
                match elicit::answer(request, &content) {
                    Ok(body) => body,
                    Err(why) => return Ok(Taken::Misfit(why)),
                }
            }
            // `cancel`, and any action a later revision adds: nothing is decided.
            _ => return Ok(Taken::Nothing),
        };
        // Where `answered_via` is recorded, this answer is the MCP client's (`mcp`).
        Ok(
            match party.upstream.answer(id, &body, &party.actor).await? {
                Answered::Resolved(outcome) => Taken::Resolved(outcome),
                Answered::Invalid(why) => Taken::Misfit(why),
            },
        )
    }
}

/// What an elicitation result did.
#[derive(Debug)]
pub(crate) enum Taken {
    /// The request is resolved (by this answer or an earlier one): the outcome.
    Resolved(Box<OutcomeBody>),
    /// The answer did not fit; the request stays pending.
    Misfit(String),
    /// Nothing was decided (dismissed, declined where nothing follows, or a link).
    Nothing,
}

/// The JSON-RPC error for a request state that does not open.
pub(crate) fn refused_state(e: &crate::state::StateError) -> ErrorData {
    ErrorData::invalid_params(e.to_string(), None)
}

/// Reads the client's response under [`INPUT_KEY`] from a retry's `inputResponses`.
pub(crate) fn input_response(
    responses: Option<&rmcp::model::InputResponses>,
) -> Option<ElicitResult> {
    let value = responses?.get(INPUT_KEY)?;
    serde_json::from_value(value.clone()).ok()
}
