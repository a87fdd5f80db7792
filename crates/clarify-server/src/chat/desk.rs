//! The answer path every chat channel shares, as the [`Desk`] the platforms' inbound sides
//! act through: find the request, check it was announced on this channel, map the chat user to
//! a responder, and resolve it by the same rules as every other path (the shared answer parser,
//! `responders`, first valid answer wins).
//!
//! The platforms read their calls into an [`Act`] (after verifying them) and turn the result
//! into their own acknowledgement; what is slow (opening a form, a private notice) they do after
//! acknowledging, within the platform's deadline.

use chrono::{DateTime, Utc};
use clarify_channels::Channel;
use clarify_channels::act::{Act, Focus, first_input, input_for_error};
use clarify_channels::platform::{Desk, Done, Refusal, Target};
use clarify_core::reply::{Reply, parse_reply};
use clarify_store::{Actor, EventKind, ExtendError, RequestRecord, ResolveError};
use serde_json::Value;

use crate::state::AppState;

/// The server as the platforms' inbound sides see it.
#[derive(Clone)]
pub(crate) struct ChatDesk(pub(crate) AppState);

impl Desk for ChatDesk {
    async fn act(
        &self,
        channel: &str,
        user: &str,
        target: Target,
        act: Act,
    ) -> Result<Done, Refusal> {
        let channel = configured(&self.0, channel)?;
        self::act(&self.0, channel, user, target, act).await
    }

    async fn find(&self, channel: &str, target: Target) -> Result<RequestRecord, Refusal> {
        let channel = configured(&self.0, channel)?;
        find(&self.0, channel, target).await
    }

    async fn announced(&self, channel: &str, message_ref: &str) -> Result<bool, String> {
        self.0
            .store
            .announced_as(channel, message_ref)
            .await
            .map(|found| found.is_some())
            .map_err(|e| e.to_string())
    }

    async fn link_text(&self, who: &str) -> String {
        link_text(&self.0, who).await
    }

    fn answer_url(&self, request: &str) -> String {
        self.0.answer_url(request)
    }

    fn hook_url(&self, channel: &str) -> String {
        match configured(&self.0, channel) {
            Ok(c) => c.hook_url(&self.0.config.public_url),
            Err(_) => String::new(),
        }
    }

    fn action_key(&self) -> &[u8] {
        &self.0.secrets.chat
    }

    fn http(&self) -> &reqwest::Client {
        &self.0.http
    }

    fn now(&self) -> DateTime<Utc> {
        self.0.store.now()
    }

    async fn kept(&self, key: &str) -> Result<Option<Vec<u8>>, String> {
        self.0.store.kept(key).await.map_err(|e| e.to_string())
    }

    async fn keep(&self, key: &str, value: Vec<u8>) -> Result<(), String> {
        self.0
            .store
            .keep(key, value)
            .await
            .map_err(|e| e.to_string())
    }

    async fn cursor(&self, key: &str) -> Result<Option<i64>, String> {
        self.0.store.cursor(key).await.map_err(|e| e.to_string())
    }

    async fn set_cursor(&self, key: &str, value: i64) -> Result<(), String> {
        self.0
            .store
            .set_cursor(key, value)
            .await
            .map_err(|e| e.to_string())
    }

    fn wake_channels(&self) {
        self.0.channels_due.notify_one();
    }
}

/// The configured channel called `name`.
fn configured<'a>(state: &'a AppState, name: &str) -> Result<&'a Channel, Refusal> {
    state
        .config
        .channels
        .iter()
        .find(|c| c.name == name)
        .ok_or_else(|| refuse("clarify has no such channel."))
}

fn refuse(message: impl Into<String>) -> Refusal {
    Refusal::new(message)
}

/// Acts for the platform user `user` (`U012ABCDEF`) on `channel`.
async fn act(
    state: &AppState,
    channel: &Channel,
    user: &str,
    target: Target,
    act: Act,
) -> Result<Done, Refusal> {
    if act == Act::LinkAccount {
        return Err(refuse(link_account(state, channel, user).await));
    }
    // A refusal is kept in the history of a request the sender named (a message, a link, a
    // code); a text naming none was only matched to the newest one, so a stranger's text leaves
    // no trace on a request they did not point at.
    let named = !matches!(target, Target::Latest { code: None, .. });
    let record = find(state, channel, target).await?;
    let form = match &act {
        Act::Submit { focus, .. } => Some(*focus),
        _ => None,
    };
    let questions = record.request.questions.clone();
    decide(state, channel, user, record, act, named)
        .await
        .map_err(|mut refusal| {
            // In a form, a refusal is shown beside an input: its own, or the first.
            if let (None, Some(focus)) = (&refusal.input, form) {
                refusal.input = Some(first_input(&questions, focus));
            }
            refusal
        })
}

async fn decide(
    state: &AppState,
    channel: &Channel,
    user: &str,
    record: RequestRecord,
    act: Act,
    named: bool,
) -> Result<Done, Refusal> {
    let platform = channel.platform_name();
    // Keeps a refusal by `actor` in the history of the request the sender named.
    let refused = |actor: Actor| {
        let record = &record;
        async move {
            if named {
                record_refusal(state, record, &actor).await;
            }
        }
    };
    let who = channel.identity_of(user);
    let responder = match responder_of(state, channel, &who, &record.tenant).await? {
        Some(name) => name,
        None => {
            tracing::info!(%who, channel = %channel.name, "offered an unmapped chat user a link to link their account");
            if !record.status.is_resolved() {
                refused(Actor {
                    channel: platform.to_owned(),
                    principal: Some(who.clone()),
                    ..Actor::default()
                })
                .await;
            }
            return Err(refuse(link_offer(state, channel, &who).await));
        }
    };
    if record.status.is_resolved() {
        return Err(refuse(format!(
            "Too late: {}.",
            clarify_channels::outcome_text(&record)
        )));
    }
    if !record.allows_responder(&responder, &state.store.groups_of(&responder, &[])) {
        refused(Actor::new(&responder, platform).as_principal(&who)).await;
        return Err(refuse(format!(
            "{responder} is not among the responders of this request; nothing was answered."
        )));
    }
    if let Act::Extend { seconds } = act {
        let actor = Actor::new(responder, platform).as_principal(&who);
        return extend(state, &record, seconds, &actor).await;
    }
    let questions = &record.request.questions;
    let focus = match &act {
        Act::Submit { focus, .. } => *focus,
        _ => Focus::Request,
    };
    let body = match &act {
        Act::Nothing => return Ok(Done::Nothing(record)),
        Act::Open { focus, trigger } => {
            return Ok(Done::Open {
                focus: *focus,
                trigger: trigger.clone(),
                record,
            });
        }
        Act::Typed(text) => typed(&record, text)?,
        other => match other.body(questions) {
            Ok(Some(body)) => body,
            Ok(None) => return Ok(Done::Nothing(record)),
            Err(unfit) => {
                return Err(Refusal {
                    input: unfit.input,
                    message: unfit.message,
                });
            }
        },
    };
    let actor = Actor::new(responder, platform).as_principal(&who);
    let (tenant, id) = (record.tenant.clone(), record.id.clone());
    match state.store.answer(&tenant, &id, &body, &actor).await {
        Ok(record) => {
            state.changed(&record);
            Ok(Done::Resolved(record))
        }
        Err(ResolveError::AlreadyResolved(record)) => Err(refuse(format!(
            "Too late: {}.",
            clarify_channels::outcome_text(&record)
        ))),
        Err(ResolveError::AlreadyVoted { .. }) => Err(refuse(
            "You already voted on this request; each responder votes once.",
        )),
        Err(ResolveError::Invalid(e)) => Err(Refusal {
            input: input_for_error(questions, focus, e.path().as_deref()),
            message: format!("That answer does not fit: {e}"),
        }),
        Err(
            e @ (ResolveError::NotAllowed { .. }
            | ResolveError::QuorumNeedsIdentity { .. }
            | ResolveError::SelfApproval { .. }
            | ResolveError::SelfApprovalNeedsIdentity { .. }
            | ResolveError::StepUpRequired),
        ) => {
            refused(actor).await;
            Err(refuse(format!("{e}; nothing was answered.")))
        }
        Err(ResolveError::NotFound) => Err(refuse("This request no longer exists.")),
        Err(ResolveError::Store(e)) => {
            tracing::warn!(error = %e, "recording a chat answer failed");
            Err(refuse(
                "clarify could not record the answer just now; please try again.",
            ))
        }
    }
}

/// Keeps a refused answer in `record`'s history (a `refused` event by `actor`), so that an
/// attempt by someone who may not answer is found where the request's story is told, not only
/// in the server's log. A failure to record it is logged: the refusal itself stands.
async fn record_refusal(state: &AppState, record: &RequestRecord, actor: &Actor) {
    match state.store.refused(&record.tenant, &record.id, actor).await {
        Ok(_) => state.hub.poke(),
        Err(e) => {
            tracing::warn!(request = %record.id, error = %e, "recording a refused answer failed");
        }
    }
}

/// Extends `record`'s deadline for `actor`, through the path the API's `extend` route takes.
async fn extend(
    state: &AppState,
    record: &RequestRecord,
    seconds: u64,
    actor: &Actor,
) -> Result<Done, Refusal> {
    match state
        .extend(&record.tenant, &record.id, seconds, actor)
        .await
    {
        Ok(record) => Ok(Done::Resolved(record)),
        Err(ExtendError::Resolve(ResolveError::AlreadyResolved(record))) => Err(refuse(format!(
            "Too late: {}.",
            clarify_channels::outcome_text(&record)
        ))),
        Err(ExtendError::Resolve(ResolveError::NotFound)) => {
            Err(refuse("This request no longer exists."))
        }
        Err(ExtendError::Resolve(ResolveError::Store(e))) => {
            tracing::warn!(error = %e, "extending a request from a chat failed");
            Err(refuse(
                "clarify could not extend the request just now; please try again.",
            ))
        }
        Err(e) => Err(refuse(format!("{e}; nothing was extended."))),
    }
}

/// The responder the chat account `who` (`slack:U012ABCDEF`) answers as in `tenant`:
/// `[identities]` first, then the account's own link, then `who` itself where the channel takes
/// unmapped people; `None` when nobody knows it.
async fn responder_of(
    state: &AppState,
    channel: &Channel,
    who: &str,
    tenant: &str,
) -> Result<Option<String>, Refusal> {
    if let Some(name) = state.config.identities.get(who) {
        return Ok(Some(name.clone()));
    }
    match state.store.linked_identity(who).await {
        Ok(Some(link)) if link.tenant == tenant => Ok(Some(link.name)),
        Ok(_) => Ok(channel.allow_unmapped.then(|| who.to_owned())),
        Err(e) => {
            tracing::warn!(error = %e, "reading a linked chat account failed");
            Err(refuse(
                "clarify could not read who you are just now; please try again.",
            ))
        }
    }
}

/// What "Link account" tells the clicker, privately: whom the account answers as now, and the
/// one-time link that links it (again) to whoever opens it signed in. `[identities]` wins over
/// a link, so a configured account is only told so.
async fn link_account(state: &AppState, channel: &Channel, user: &str) -> String {
    let who = channel.identity_of(user);
    if let Some(name) = state.config.identities.get(&who) {
        return format!(
            "This account ({who}) answers as {name}, as clarify's configuration says; an admin \
             changes that under [identities]."
        );
    }
    let now = match state.store.linked_identity(&who).await {
        Ok(Some(link)) => format!("This account answers as {} now. ", link.name),
        Ok(None) => String::new(),
        Err(e) => {
            tracing::warn!(error = %e, "reading a linked chat account failed");
            String::new()
        }
    };
    match link_sentence(state, &who).await {
        Ok(sentence) => format!("{now}{sentence}"),
        Err(e) => {
            tracing::warn!(error = %e, "issuing a link-account link failed");
            format!("{now}clarify could not make a link just now; please try again.")
        }
    }
}

/// What an unknown chat account is told: what its platform says instead of a link, or a
/// one-time link that links it to the person who opens it signed in, or, if none can be made,
/// to ask an admin.
async fn link_offer(state: &AppState, channel: &Channel, who: &str) -> String {
    match channel.platform.unknown_person(who) {
        Some(text) => text,
        None => link_text(state, who).await,
    }
}

/// A one-time link that links the chat account `who` to the person who opens it signed in,
/// with what it is for; or, if none can be made, to ask an admin.
async fn link_text(state: &AppState, who: &str) -> String {
    match link_sentence(state, who).await {
        Ok(sentence) => {
            format!("clarify does not know who you are yet. {sentence} Nothing was answered.")
        }
        Err(e) => {
            tracing::warn!(error = %e, "issuing a link-account link failed");
            format!(
                "You are not a clarify responder yet: ask an admin to map \"{who}\" to your \
                 name under [identities]. Nothing was answered."
            )
        }
    }
}

/// "Link this chat account (`who`) to your clarify sign-in: <a new one-time link>."
async fn link_sentence(state: &AppState, who: &str) -> Result<String, clarify_store::StoreError> {
    let url = crate::web::accounts::offer(state, who).await?;
    Ok(format!(
        "Link this chat account ({who}) to your clarify sign-in: {url} (works once, for {} \
         minutes).",
        crate::web::accounts::LINK_TTL.num_minutes()
    ))
}

/// The request `target` names, if it was announced on `channel`.
async fn find(
    state: &AppState,
    channel: &Channel,
    target: Target,
) -> Result<RequestRecord, Refusal> {
    let unknown = || refuse("clarify knows no such request on this channel.");
    let failed = |e: clarify_store::StoreError| {
        tracing::warn!(error = %e, "reading a request for a chat answer failed");
        refuse("clarify could not read the request just now; please try again.")
    };
    let id = match target {
        Target::Request(id) => {
            // Only a request announced here may be answered here: a forged or stale id, or one
            // of a tenant this channel does not serve, is unknown.
            let announced = state
                .store
                .notifications_of(&id)
                .await
                .map_err(failed)?
                .iter()
                .any(|d| {
                    d.channel.as_deref() == Some(channel.name.as_str())
                        && d.event == Some(EventKind::Created)
                });
            if !announced {
                return Err(unknown());
            }
            id
        }
        Target::Latest { from, code } => {
            return latest(state, channel, &from, code.as_deref()).await;
        }
        Target::Message(message_ref) => {
            match state
                .store
                .announced_as(&channel.name, &message_ref)
                .await
                .map_err(failed)?
            {
                Some((_, id)) => id,
                None => return Err(unknown()),
            }
        }
    };
    state
        .store
        .get_by_id(&id)
        .await
        .map_err(failed)?
        .ok_or_else(unknown)
}

/// How many of a channel's newest announcements a text reply is matched against.
const LATEST_LOOKUP: u32 = 200;

/// The request a reply naming no announcement means, from the platform user `from`: with
/// `code`, the one announced on `channel` of that short code, whatever its state (so that the
/// person is told it is already answered); without, the newest one announced on `channel` that
/// is still pending and that `from` may answer.
async fn latest(
    state: &AppState,
    channel: &Channel,
    from: &str,
    code: Option<&str>,
) -> Result<RequestRecord, Refusal> {
    let failed = |e: clarify_store::StoreError| {
        tracing::warn!(error = %e, "reading a request for a chat answer failed");
        refuse("clarify could not read the request just now; please try again.")
    };
    let announced = state
        .store
        .announced_on(&channel.name, LATEST_LOOKUP)
        .await
        .map_err(failed)?;
    let who = channel.identity_of(from);
    for (tenant, id) in announced {
        if code.is_some_and(|c| !clarify_model::is_short_code_of(c, &id)) {
            continue;
        }
        let Some(record) = state.store.get_by_id(&id).await.map_err(failed)? else {
            continue;
        };
        if code.is_some() {
            return Ok(record);
        }
        if record.status.is_resolved() {
            continue;
        }
        let may_answer = match responder_of(state, channel, &who, &tenant).await? {
            Some(responder) => {
                record.allows_responder(&responder, &state.store.groups_of(&responder, &[]))
            }
            None => true,
        };
        if may_answer {
            return Ok(record);
        }
    }
    Err(refuse(match code {
        Some(c) => format!("clarify sent no request with the code {c} here."),
        None => "No request is waiting for your answer here.".to_owned(),
    }))
}

/// The answer body of a typed reply, read by the shared typed-reply parser.
fn typed(record: &RequestRecord, text: &str) -> Result<Value, Refusal> {
    let request = &record.request;
    let [q] = request.questions.as_slice() else {
        return Err(refuse(
            "This request has several questions, which one reply cannot answer; answer it through \
             the message's link (or its Answer… button, where it has one).",
        ));
    };
    match parse_reply(q, request.allow_skip, text) {
        Ok(Reply::Skip) => Ok(serde_json::json!({"skip": true})),
        Ok(Reply::Answer(answer)) => serde_json::to_value(&answer)
            .map_err(|e| refuse(format!("That answer could not be read: {e}"))),
        Err(e) => Err(refuse(format!("That reply is not an answer: {e}."))),
    }
}
