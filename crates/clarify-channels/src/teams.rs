//! Microsoft Teams: requests posted by an Azure Bot (the Bot Framework) to one conversation as
//! Adaptive Cards 1.5 with `Action.Execute`, answered on the card.
//!
//! Outbound, clarify gets a token by the client-credentials grant at `login_url` (the app's
//! tenant's token endpoint, scope `https://api.botframework.com/.default`), keeps it until
//! shortly before it expires, and calls the Bot Connector at the conversation's `serviceUrl`:
//! `POST /v3/conversations/{id}/activities` to announce, `.../activities/{activity}` to reply
//! (reminders, escalations), `PUT .../activities/{activity}` to refresh the card for everyone.
//! A bot can only message a conversation it was added to; its reference (service URL and
//! conversation id) is configured, or captured from the `conversationUpdate` (or
//! `installationUpdate`) activity Teams sends when the bot is added ([`Inbound::Added`]). A
//! message's reference is `<activity id> <conversation id>`.
//!
//! Inbound, every activity carries a JWT the Bot Framework signs; [`Teams::verify`] checks it
//! against the keys its OpenID metadata (`openid_url`) publishes: RS256, issuer
//! `https://api.botframework.com`, audience the app id, the validity window (five minutes of
//! skew), the `serviceurl` claim equal to the activity's `serviceUrl`, and the key endorsing the
//! activity's channel. Anything else is refused before the activity is acted on. A click is an
//! `adaptiveCard/action` invoke whose response (within Teams' time limit) is the card as it now
//! is, for the clicker at once; the outbox's edit then shows it to everyone.
//!
//! Inputs live on the card itself: a `multi` question is a multi-select with Submit; Other, an
//! open answer, a deny's reason, the changes asked for, edited arguments and a form's fields are
//! `Action.ShowCard` forms opened in place. Agent text goes into `TextRun`s, which Teams never
//! reads as markdown, so nothing the agent wrote formats, links or mentions.

use std::collections::BTreeMap;
use std::sync::Arc;

use clarify_core::{Context, QuestionKind, Scope};
use clarify_store::{EventKind, RequestRecord};
use serde_json::{Value, json};

use crate::answer::{Act, Control, Focus, Input, control, input_id};
use crate::jwt::{Expect, Keys, Refused};
use crate::{Notice, SendError, Sent, cut, headline, outcome_text};

const PLATFORM: &str = "teams";
/// The issuer of the tokens the Bot Framework signs.
pub const ISSUER: &str = "https://api.botframework.com";
/// The scope of the token clarify asks for.
pub const SCOPE: &str = "https://api.botframework.com/.default";
/// Microsoft's OpenID metadata for the Bot Framework's tokens.
pub const OPENID_URL: &str = "https://login.botframework.com/v1/.well-known/openidconfiguration";
/// The card type of an attachment and an invoke response.
pub const CARD: &str = "application/vnd.microsoft.card.adaptive";
/// Room for display blocks on a card (a bot's message may be about 28 KB in all).
const MAX_DISPLAY: usize = 8_000;
const MAX_TEXT: usize = 2_000;
const MAX_BUTTONS: usize = 5;

/// Where requests go: the Bot Connector's base URL for the conversation, and its id.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Conversation {
    pub service_url: String,
    pub conversation_id: String,
}

/// A Teams channel's configuration, and what it learns while running.
#[derive(Clone)]
pub struct Teams {
    /// The bot's Microsoft App ID: the audience of the tokens it receives.
    pub app_id: String,
    /// The app's client secret.
    pub app_password: String,
    /// The Microsoft Entra tenant the (single-tenant) bot is registered in.
    pub tenant_id: String,
    /// The client-credentials token endpoint.
    pub login_url: url::Url,
    /// Where the Bot Framework's signing keys are published.
    pub keys: Keys,
    /// The conversation configured, if any; it wins over one captured.
    pub configured: Option<Conversation>,
    /// The conversation captured when the bot was added to one (or loaded from the store).
    pub captured: Arc<std::sync::Mutex<Option<Conversation>>>,
    token: Arc<crate::oauth::TokenCache>,
}

impl std::fmt::Debug for Teams {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Teams")
            .field("app_id", &self.app_id)
            .field("tenant_id", &self.tenant_id)
            .field("login_url", &self.login_url.as_str())
            .field("keys", &self.keys)
            .field("configured", &self.configured)
            .finish_non_exhaustive()
    }
}

/// The token endpoint of a single-tenant bot in `tenant_id`, on `login` (Microsoft's
/// `https://login.microsoftonline.com`).
pub fn token_url(login: &str, tenant_id: &str) -> String {
    format!(
        "{}/{tenant_id}/oauth2/v2.0/token",
        login.trim_end_matches('/')
    )
}

/// What a verified activity asks of clarify.
#[derive(Debug, Clone, PartialEq)]
pub enum Inbound {
    /// The bot was added to a conversation: where to post from now on.
    Added(Conversation),
    /// `user` (an Entra object id) used a control of request `request`'s card.
    Execute {
        user: String,
        request: String,
        act: Act,
    },
    /// Teams asks for the card as it is now (the card's `refresh` action).
    Refresh { user: String, request: String },
    /// A control clarify did not make.
    Unknown(String),
    /// An activity clarify does not act on.
    Ignore,
}

/// Reads a verified activity.
pub fn read(activity: &Value) -> Result<Inbound, String> {
    let kind = activity["type"].as_str().unwrap_or_default();
    let text = |v: &Value| v.as_str().filter(|s| !s.is_empty()).map(str::to_owned);
    let bot = text(&activity["recipient"]["id"]);
    let added = match kind {
        "conversationUpdate" => activity["membersAdded"]
            .as_array()
            .is_some_and(|m| m.iter().any(|m| text(&m["id"]) == bot)),
        "installationUpdate" => activity["action"] == "add",
        _ => false,
    };
    if added {
        let (Some(service_url), Some(conversation_id)) = (
            text(&activity["serviceUrl"]),
            text(&activity["conversation"]["id"]),
        ) else {
            return Err("an activity without serviceUrl or conversation.id".to_owned());
        };
        return Ok(Inbound::Added(Conversation {
            service_url,
            conversation_id,
        }));
    }
    if kind != "invoke" || activity["name"] != "adaptiveCard/action" {
        return Ok(Inbound::Ignore);
    }
    let user = text(&activity["from"]["aadObjectId"])
        .ok_or("an invoke without from.aadObjectId (a guest or anonymous user)")?;
    let action = &activity["value"]["action"];
    let verb = action["verb"].as_str().unwrap_or_default();
    let data = &action["data"];
    let Some(request) = text(&data["request"]) else {
        return Ok(Inbound::Unknown(verb.to_owned()));
    };
    if verb == "refresh" {
        return Ok(Inbound::Refresh { user, request });
    }
    // A submitted form: `form:<focus>`, its inputs merged into `data` by their ids.
    if let Some(focus) = verb.strip_prefix("form:") {
        let Some(focus) = Focus::decode(focus) else {
            return Ok(Inbound::Unknown(verb.to_owned()));
        };
        let mut inputs = BTreeMap::new();
        if let Some(map) = data.as_object() {
            for (id, value) in map.iter().filter(|(id, _)| id.starts_with('q')) {
                let value = match value {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                inputs.insert(id.clone(), Input::Text(value));
            }
        }
        return Ok(Inbound::Execute {
            user,
            request,
            act: Act::Submit { focus, inputs },
        });
    }
    let chosen: Vec<String> = data[input_id(0, None)]
        .as_str()
        .map(|v| {
            v.split(',')
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    match control(verb, &chosen) {
        Control::Act(act) => Ok(Inbound::Execute { user, request, act }),
        Control::Form(_) | Control::Unknown(_) => Ok(Inbound::Unknown(verb.to_owned())),
    }
}

fn run(text: &str) -> Value {
    json!({"type": "TextRun", "text": text})
}

/// Agent text, inert: a `TextRun` is never read as markdown.
fn inert(text: &str, max: usize) -> Value {
    json!({"type": "RichTextBlock", "inlines": [run(&cut(text, max))]})
}

fn heading(text: &str) -> Value {
    json!({"type": "RichTextBlock", "inlines": [
        {"type": "TextRun", "text": cut(text, 200), "weight": "bolder", "size": "medium"}]})
}

fn small(text: &str) -> Value {
    json!({"type": "RichTextBlock", "inlines": [
        {"type": "TextRun", "text": text, "isSubtle": true, "size": "small"}]})
}

fn mono(text: &str) -> Value {
    json!({"type": "RichTextBlock", "inlines": [
        {"type": "TextRun", "text": text, "fontType": "monospace"}]})
}

fn execute(title: &str, verb: &str, request: &str, style: Option<&str>) -> Value {
    let mut a = json!({"type": "Action.Execute", "title": cut(title, 60), "verb": verb,
                       "data": {"request": request}});
    if let Some(style) = style {
        a["style"] = json!(style);
    }
    a
}

/// An `Action.ShowCard` holding `inputs` and a Submit that sends them as `form:<focus>`.
fn form(title: &str, focus: Focus, request: &str, inputs: Vec<Value>) -> Value {
    json!({"type": "Action.ShowCard", "title": cut(title, 60), "card": {
        "type": "AdaptiveCard", "body": inputs,
        "actions": [execute("Submit", &format!("form:{}", focus.encode()), request, Some("positive"))],
    }})
}

fn text_input(id: String, label: &str, default: Option<String>, required: bool) -> Value {
    let mut i = json!({"type": "Input.Text", "id": id, "label": cut(label, 100),
                       "isMultiline": true, "isRequired": required, "maxLength": 4_000});
    if required {
        i["errorMessage"] = json!("Required");
    }
    if let Some(d) = default.filter(|d| d.chars().count() <= 4_000) {
        i["value"] = json!(d);
    }
    i
}

/// The card of `notice`: for a request that needs a passkey confirmation, without inputs,
/// answer actions or refresh, only "Open in clarify" and the line saying why.
pub(crate) fn notice_card(notice: &Notice<'_>) -> Value {
    let mut card = card(notice.record, notice.answer_url);
    if !notice.open_only() {
        return card;
    }
    if let Some(body) = card["body"].as_array_mut() {
        body.retain(|b| !b["type"].as_str().is_some_and(|t| t.starts_with("Input.")));
        body.push(inert(crate::STEP_UP_LINE, MAX_TEXT));
    }
    card["actions"] = json!([{"type": "Action.OpenUrl", "title": crate::OPEN_IN_CLARIFY, "url": notice.answer_url}]);
    if let Some(card) = card.as_object_mut() {
        card.remove("refresh");
    }
    card
}

/// The Adaptive Card (1.5) for `record` as it is now.
pub fn card(record: &RequestRecord, answer_url: &str) -> Value {
    let request = &record.request;
    let pending = !record.status.is_resolved();
    let mut body = vec![heading(&headline(record))];
    match &request.context {
        Some(Context::Text(t)) => body.push(inert(t, MAX_TEXT)),
        Some(Context::Json(map)) => body.push(mono(&cut(
            &serde_json::to_string_pretty(map).unwrap_or_default(),
            MAX_TEXT,
        ))),
        None => {}
    }
    let more = format!("The rest is on the answer page: {answer_url}");
    if let Some(display) =
        crate::display_text(record, &clarify_render::text::Plain, MAX_DISPLAY, &more)
    {
        body.push(json!({"type": "Container", "style": "emphasis", "items": [mono(&display)]}));
    }
    for q in &request.questions {
        body.push(json!({"type": "RichTextBlock", "inlines": [
            {"type": "TextRun", "text": cut(&q.text, MAX_TEXT), "weight": "bolder"}]}));
        match &q.kind {
            QuestionKind::Single(c) | QuestionKind::Multi(c) => {
                let lines: Vec<String> = c
                    .options
                    .iter()
                    .enumerate()
                    .map(|(i, o)| {
                        let mark = if c.recommended.as_deref() == Some(o.id.as_str()) {
                            " (recommended)"
                        } else {
                            ""
                        };
                        format!("{}. {}{mark}", i + 1, cut(&o.label, 100))
                    })
                    .collect();
                body.push(inert(&lines.join("\n"), MAX_TEXT));
            }
            QuestionKind::Approval(a) => {
                body.push(json!({"type": "RichTextBlock", "inlines": [
                    run("Action: "),
                    {"type": "TextRun", "text": cut(&a.action.name, 100), "fontType": "monospace"}]}));
                if request.display.is_empty() {
                    let pretty =
                        serde_json::to_string_pretty(&a.action.arguments).unwrap_or_default();
                    let mut shown = cut(&pretty, MAX_TEXT);
                    if pretty.chars().count() > MAX_TEXT {
                        shown.push_str(&format!("\n(cut: {more})"));
                    }
                    body.push(mono(&shown));
                }
            }
            QuestionKind::Open | QuestionKind::Form(_) => {}
        }
    }
    let mut footer: Vec<String> = crate::asked_by(request, |a| cut(a, 60), |s| cut(s, 60))
        .into_iter()
        .collect();
    if pending {
        if let Some(at) = record.expires_at {
            footer.push(format!("expires {}", at.format("%Y-%m-%d %H:%M UTC")));
        }
        if request.is_quorum() {
            footer.push(outcome_text(record));
        }
        if let Some(by) = &request.responders {
            footer.push(format!("for {}", cut(&by.join(", "), 200)));
        }
    }
    if !footer.is_empty() {
        body.push(small(&footer.join(" · ")));
    }
    if !pending {
        body.push(json!({"type": "RichTextBlock", "inlines": [
            {"type": "TextRun", "text": cut(&outcome_text(record), MAX_TEXT), "weight": "bolder",
             "color": "accent"}]}));
    }
    let (inputs, mut actions) = controls(record);
    body.extend(inputs);
    actions.push(json!({"type": "Action.OpenUrl", "title": if pending { "Open in clarify" } else { "Open the record" }, "url": answer_url}));
    let mut card = json!({
        "type": "AdaptiveCard",
        "$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
        "version": "1.5",
        "body": body,
        "actions": actions,
    });
    if pending {
        // Each viewer's client asks for the card as it is now.
        card["refresh"] = json!({"action": execute("Refresh", "refresh", &record.id, None)});
    }
    card
}

/// The inputs on the card and its actions, for a pending request of one question.
fn controls(record: &RequestRecord) -> (Vec<Value>, Vec<Value>) {
    let request = &record.request;
    let id = record.id.as_str();
    let (mut inputs, mut actions) = (Vec::new(), Vec::new());
    if record.status.is_resolved() {
        return (inputs, actions);
    }
    if let [q] = request.questions.as_slice() {
        match &q.kind {
            QuestionKind::Single(c) => {
                if c.options.len() <= MAX_BUTTONS {
                    for (i, o) in c.options.iter().enumerate() {
                        let style =
                            (c.recommended.as_deref() == Some(o.id.as_str())).then_some("positive");
                        actions.push(execute(&o.label, &format!("o:{i}"), id, style));
                    }
                } else {
                    inputs.push(choice_set(c, false));
                    actions.push(execute("Submit", "sel", id, Some("positive")));
                }
                if c.allow_other {
                    actions.push(form(
                        "Other…",
                        Focus::Other(0),
                        id,
                        vec![text_input(
                            input_id(0, Some("other")),
                            "Your answer",
                            None,
                            true,
                        )],
                    ));
                }
            }
            QuestionKind::Multi(c) => {
                inputs.push(choice_set(c, true));
                actions.push(execute("Submit", "multi", id, Some("positive")));
                if c.allow_other {
                    actions.push(form(
                        "Other…",
                        Focus::Other(0),
                        id,
                        vec![text_input(
                            input_id(0, Some("other")),
                            "Your answer",
                            None,
                            true,
                        )],
                    ));
                }
            }
            QuestionKind::Open => actions.push(form(
                "Answer…",
                Focus::Open(0),
                id,
                vec![text_input(input_id(0, None), "Your answer", None, true)],
            )),
            QuestionKind::Form(f) => actions.push(form(
                "Fill in…",
                Focus::Form(0),
                id,
                f.fields.iter().map(field_input).collect(),
            )),
            QuestionKind::Approval(a) => {
                for s in &a.scopes {
                    let label = match s {
                        Scope::Once => "Approve",
                        Scope::Session => "Approve for this session",
                        Scope::Always => "Approve always",
                    };
                    actions.push(execute(
                        label,
                        &format!("a:{}", s.as_str()),
                        id,
                        Some("positive"),
                    ));
                }
                actions.push(execute("Deny", "d", id, Some("destructive")));
                actions.push(form(
                    "Request changes…",
                    Focus::Revise(0),
                    id,
                    vec![text_input(
                        input_id(0, Some("reason")),
                        "What should change?",
                        None,
                        true,
                    )],
                ));
                actions.push(form(
                    "Deny with reason…",
                    Focus::Deny(0),
                    id,
                    vec![text_input(
                        input_id(0, Some("reason")),
                        "Reason",
                        None,
                        true,
                    )],
                ));
                if a.allow_edit {
                    actions.push(form(
                        "Edit arguments…",
                        Focus::Edit(0),
                        id,
                        vec![text_input(
                            input_id(0, Some("arguments")),
                            "Arguments (a JSON object)",
                            serde_json::to_string_pretty(&a.action.arguments).ok(),
                            true,
                        )],
                    ));
                }
            }
        }
    }
    if request.allow_skip {
        actions.push(execute("Skip", "s", id, None));
    }
    (inputs, actions)
}

fn choice_set(c: &clarify_core::Choices, multi: bool) -> Value {
    let choices: Vec<Value> = c
        .options
        .iter()
        .enumerate()
        .map(|(i, o)| {
            let mut title = cut(&o.label, 100);
            if c.recommended.as_deref() == Some(o.id.as_str()) {
                title.push_str(" (recommended)");
            }
            json!({"title": title, "value": i.to_string()})
        })
        .collect();
    json!({"type": "Input.ChoiceSet", "id": input_id(0, None), "isMultiSelect": multi,
           "style": if multi { "expanded" } else { "compact" },
           "label": if multi { "Choose one or more" } else { "Choose one" }, "choices": choices})
}

/// A form field as a card input: a toggle for a boolean, a choice set for options, text for the
/// rest (read by core's `value_from_text`, with a placeholder saying what fits).
fn field_input(field: &clarify_core::Field) -> Value {
    use clarify_core::form::FieldKind;
    let id = input_id(0, Some(&format!("f.{}", field.id)));
    let required = field.required && field.default.is_none();
    let mut input = match &field.kind {
        FieldKind::Boolean => json!({"type": "Input.Toggle", "title": cut(&field.label, 100),
                                     "valueOn": "yes", "valueOff": "no"}),
        FieldKind::Choice { options } | FieldKind::Choices { options, .. } => json!({
            "type": "Input.ChoiceSet",
            "isMultiSelect": matches!(field.kind, FieldKind::Choices { .. }),
            "choices": options.iter().map(|o| json!({"title": cut(&o.label, 100), "value": o.id})).collect::<Vec<_>>(),
        }),
        _ => json!({"type": "Input.Text", "placeholder": cut(&field.hint(), 100)}),
    };
    input["id"] = json!(id);
    input["label"] = json!(cut(&field.label, 100));
    input["isRequired"] = json!(required);
    if required {
        input["errorMessage"] = json!("Required");
    }
    let default = match &field.default {
        Some(Value::String(s)) => Some(s.clone()),
        Some(Value::Bool(b)) => Some(if *b { "yes" } else { "no" }.to_owned()),
        Some(Value::Array(items)) => Some(
            items
                .iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join(","),
        ),
        Some(other) => Some(other.to_string()),
        None => None,
    };
    if let Some(default) = default {
        input["value"] = json!(default);
    }
    input
}

/// The invoke response that shows `card` to the clicker in place of the old one.
pub fn card_response(card: Value) -> Value {
    json!({"statusCode": 200, "type": CARD, "value": card})
}

/// The invoke response that shows `text` to the clicker only; the card stays.
pub fn message_response(text: &str) -> Value {
    json!({"statusCode": 200, "type": "application/vnd.microsoft.activity.message",
           "value": cut(text, 2_000)})
}

impl Teams {
    /// A channel with nothing captured yet.
    pub fn new(
        app_id: String,
        app_password: String,
        tenant_id: String,
        login_url: url::Url,
        openid_url: url::Url,
        configured: Option<Conversation>,
    ) -> Self {
        Self {
            app_id,
            app_password,
            tenant_id,
            login_url,
            keys: Keys::new(crate::jwt::KeySource::OpenId(openid_url)),
            configured,
            captured: Arc::default(),
            token: Arc::default(),
        }
    }

    /// Where requests go now: the configured conversation, or the one captured.
    pub fn conversation(&self) -> Option<Conversation> {
        self.configured
            .clone()
            .or_else(|| self.captured.lock().ok().and_then(|c| c.clone()))
    }

    /// Remembers `conversation` (captured when the bot was added to it).
    pub fn capture(&self, conversation: Conversation) {
        if let Ok(mut c) = self.captured.lock() {
            *c = Some(conversation);
        }
    }

    /// Verifies an inbound activity: the Bot Framework's JWT in `authorization`, checked
    /// against its published keys, with the activity's `serviceUrl` and channel. Returns the
    /// activity, read only once the token is good.
    pub async fn verify(
        &self,
        client: &reqwest::Client,
        authorization: Option<&str>,
        body: &[u8],
        now: chrono::DateTime<chrono::Utc>,
    ) -> Result<Value, Refused> {
        let token = crate::jwt::bearer(authorization)?;
        let kid = crate::jwt::key_id(token)?;
        let key = self.keys.get(client, &kid).await?;
        let claims = crate::jwt::check(
            token,
            &key.key,
            &Expect {
                issuers: &[ISSUER],
                audience: &self.app_id,
            },
            now,
        )?;
        let activity: Value = serde_json::from_slice(body)
            .map_err(|_| Refused("the activity is not JSON".to_owned()))?;
        let service_url = activity["serviceUrl"].as_str().unwrap_or_default();
        let claimed = claims
            .get("serviceurl")
            .or_else(|| claims.get("serviceUrl"))
            .and_then(Value::as_str);
        if claimed != Some(service_url) || service_url.is_empty() {
            return Err(Refused(
                "the token's serviceurl does not match the activity's serviceUrl".to_owned(),
            ));
        }
        let channel = activity["channelId"].as_str().unwrap_or_default();
        match &key.endorsements {
            Some(list) if list.iter().any(|e| e == channel) => {}
            _ => {
                return Err(Refused(format!(
                    "the signing key does not endorse the channel {channel:?}"
                )));
            }
        }
        Ok(activity)
    }

    /// A connector token, from the cache or the token endpoint.
    async fn token(&self, client: &reqwest::Client) -> Result<String, SendError> {
        crate::oauth::token(&self.token, PLATFORM, || {
            Ok(client.post(self.login_url.as_str()).form(&[
                ("grant_type", "client_credentials"),
                ("client_id", &self.app_id),
                ("client_secret", &self.app_password),
                ("scope", SCOPE),
            ]))
        })
        .await
    }

    async fn call(
        &self,
        client: &reqwest::Client,
        method: reqwest::Method,
        service_url: &str,
        path: &str,
        body: &Value,
    ) -> Result<Value, SendError> {
        let token = self.token(client).await?;
        let url = format!("{}{path}", service_url.trim_end_matches('/'));
        let request = client.request(method, url).bearer_auth(token).json(body);
        crate::oauth::call(&self.token, PLATFORM, path, request).await
    }

    /// Announces, replies to the announcement, or refreshes its card, as `notice` asks.
    pub(crate) async fn send(
        &self,
        client: &reqwest::Client,
        notice: &Notice<'_>,
    ) -> Result<Sent, SendError> {
        use reqwest::Method;
        let Some(conversation) = self.conversation() else {
            return Err(SendError::Failed {
                platform: PLATFORM,
                error: "no conversation yet: add the bot to a team or chat, or configure \
                        service_url and conversation_id"
                    .to_owned(),
                transient: true,
            });
        };
        let service = conversation.service_url.as_str();
        let message = |card: Value| json!({"type": "message", "attachments": [{"contentType": CARD, "content": card}]});
        match (notice.event, notice.announcement) {
            (EventKind::Created, _) | (EventKind::Reminded | EventKind::Escalated, None) => {
                let conv = &conversation.conversation_id;
                let sent = self
                    .call(
                        client,
                        Method::POST,
                        service,
                        &format!("/v3/conversations/{}/activities", encode(conv)),
                        &message(notice_card(notice)),
                    )
                    .await?;
                Ok(Sent::Posted {
                    message_ref: sent["id"].as_str().map(|id| format!("{id} {conv}")),
                })
            }
            (EventKind::Reminded | EventKind::Escalated, Some(reference)) => {
                let (activity, conv) = split_ref(reference, &conversation.conversation_id);
                let mentions: Vec<String> = notice
                    .mention
                    .iter()
                    .map(|m| format!("<at>{m}</at>"))
                    .collect();
                let entities: Vec<Value> = notice
                    .mention
                    .iter()
                    .map(|m| {
                        json!({"type": "mention", "text": format!("<at>{m}</at>"),
                                    "mentioned": {"id": m, "name": m}})
                    })
                    .collect();
                let body = json!({
                    "type": "message", "replyToId": activity,
                    "text": crate::follow_up_text(notice.event, &mentions),
                    "entities": entities,
                });
                let sent = self
                    .call(
                        client,
                        Method::POST,
                        service,
                        &format!(
                            "/v3/conversations/{}/activities/{}",
                            encode(conv),
                            encode(activity)
                        ),
                        &body,
                    )
                    .await?;
                Ok(Sent::Posted {
                    message_ref: sent["id"].as_str().map(|id| format!("{id} {conv}")),
                })
            }
            (_, None) => Ok(Sent::Skipped {
                why: "the request was never announced here, so there is nothing to edit",
            }),
            (_, Some(reference)) => {
                let (activity, conv) = split_ref(reference, &conversation.conversation_id);
                let mut body = message(card(notice.record, notice.answer_url));
                body["id"] = json!(activity);
                self.call(
                    client,
                    Method::PUT,
                    service,
                    &format!(
                        "/v3/conversations/{}/activities/{}",
                        encode(conv),
                        encode(activity)
                    ),
                    &body,
                )
                .await?;
                Ok(Sent::Edited)
            }
        }
    }
}

/// A path segment, percent-encoded (conversation ids hold `:`, `;`, `@` and `=`).
fn encode(segment: &str) -> String {
    percent_encoding::utf8_percent_encode(segment, percent_encoding::NON_ALPHANUMERIC).to_string()
}

/// The activity id and conversation id of a message reference.
fn split_ref<'a>(reference: &'a str, conversation: &'a str) -> (&'a str, &'a str) {
    reference
        .split_once(' ')
        .unwrap_or((reference, conversation))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clicks_and_forms_are_read_and_the_bot_being_added_is_captured() {
        let invoke = |verb: &str, data: Value| {
            json!({"type": "invoke", "name": "adaptiveCard/action", "channelId": "msteams",
                   "serviceUrl": "https://smba.example/teams/",
                   "from": {"id": "29:1", "aadObjectId": "aad-1"},
                   "value": {"action": {"type": "Action.Execute", "verb": verb, "data": data}}})
        };
        assert_eq!(
            read(&invoke("o:1", json!({"request": "r1"}))),
            Ok(Inbound::Execute {
                user: "aad-1".to_owned(),
                request: "r1".to_owned(),
                act: Act::Option {
                    question: 0,
                    index: 1
                },
            })
        );
        assert_eq!(
            read(&invoke("multi", json!({"request": "r1", "q0": "0,2"}))),
            Ok(Inbound::Execute {
                user: "aad-1".to_owned(),
                request: "r1".to_owned(),
                act: Act::Options {
                    question: 0,
                    indexes: vec![0, 2]
                },
            })
        );
        let Ok(Inbound::Execute {
            act: Act::Submit { focus, inputs },
            ..
        }) = read(&invoke(
            "form:deny:0",
            json!({"request": "r1", "q0.reason": "no"}),
        ))
        else {
            panic!("a form");
        };
        assert_eq!(focus, Focus::Deny(0));
        assert_eq!(inputs.get("q0.reason"), Some(&Input::Text("no".to_owned())));
        assert!(matches!(
            read(&invoke("zzz", json!({"request": "r1"}))),
            Ok(Inbound::Unknown(_))
        ));
        let added = json!({"type": "conversationUpdate", "serviceUrl": "https://smba.example/teams/",
            "recipient": {"id": "28:app"}, "membersAdded": [{"id": "28:app"}],
            "conversation": {"id": "19:abc@thread.tacv2"}});
        assert_eq!(
            read(&added),
            Ok(Inbound::Added(Conversation {
                service_url: "https://smba.example/teams/".to_owned(),
                conversation_id: "19:abc@thread.tacv2".to_owned(),
            }))
        );
        let someone = json!({"type": "conversationUpdate", "recipient": {"id": "28:app"},
            "membersAdded": [{"id": "29:person"}]});
        assert_eq!(read(&someone), Ok(Inbound::Ignore));
    }

    #[test]
    fn agent_text_never_reaches_markdown() {
        let raw = json!({"questions": [{"text": "**bold** [x](https://evil) @everyone",
                                        "kind": "open"}]});
        let request =
            clarify_core::parse_request(&raw, &clarify_core::Limits::default()).expect("request");
        let record = RequestRecord {
            id: "r1".to_owned(),
            tenant: "default".to_owned(),
            request: Arc::new(request),
            status: clarify_core::Status::Pending,
            created_at: chrono::Utc::now(),
            expires_at: None,
            resolution: None,
            votes: Vec::new(),
            remind_at: None,
            escalated_at: None,
        };
        let card = card(&record, "https://clarify.example/a/t");
        let text = card.to_string();
        assert!(!text.contains("\"TextBlock\""), "only TextRuns: {text}");
        assert_eq!(card["version"], "1.5");
    }
}
