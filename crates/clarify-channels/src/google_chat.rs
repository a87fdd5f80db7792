//! Google Chat: requests posted by a Chat app to one space as cards v2, answered on the card.
//!
//! Outbound, clarify signs a JWT assertion with the service account's key and trades it at
//! `token_url` for a token with the `chat.bot` scope (kept until shortly before it expires),
//! then calls the Chat API at `api_url`: `POST /{space}/messages` to announce, the same with the
//! announcement's thread to remind or escalate, `PATCH /{message}?updateMask=text,cards_v2` to
//! show the outcome. A message's reference is `<message name> <thread name>`.
//!
//! Inbound, Google signs each call with a bearer token for the Chat system account
//! (`chat@system.gserviceaccount.com`) whose audience is the project number;
//! [`GoogleChat::verify`] checks it against Google's published certificates (`certs_url`) before
//! the event is read. Both event formats are read: the classic interaction event (`type:
//! CARD_CLICKED`, `common.parameters`, `common.formInputs`) and the Workspace add-on event
//! (`chat.buttonClickedPayload`, `commonEventObject`). A click is answered in the HTTP response
//! with the message updated to show the request as it now is, or a private message only the
//! clicker sees.
//!
//! Inputs live on the card: a `multi` question's checkboxes, a long `single` question's
//! dropdown, the text of an open answer or Other, a deny's reason or the changes asked for,
//! edited arguments and a form's fields, each sent with the button that submits them. Agent text
//! is escaped for the card's small HTML subset, so nothing it holds formats or links.

use std::collections::BTreeMap;
use std::sync::Arc;

use clarify_core::{Context, QuestionKind, Scope};
use clarify_store::{EventKind, RequestRecord};
use serde_json::{Value, json};

use crate::answer::{Act, Control, Focus, Input, control, input_id};
use crate::jwt::{Expect, KeySource, Keys, Refused};
use crate::{Notice, SendError, Sent, cut, escape_markup, headline, outcome_text};

const PLATFORM: &str = "google_chat";
/// Who signs Google Chat's calls to an app whose audience is its project number.
pub const ISSUER: &str = "chat@system.gserviceaccount.com";
pub const API_URL: &str = "https://chat.googleapis.com/v1";
pub const TOKEN_URL: &str = "https://oauth2.googleapis.com/token";
pub const CERTS_URL: &str =
    "https://www.googleapis.com/service_accounts/v1/metadata/x509/chat@system.gserviceaccount.com";
/// The scope of a Chat app calling as itself.
pub const SCOPE: &str = "https://www.googleapis.com/auth/chat.bot";
/// Room for display blocks in a card (a message is at most 32,000 bytes).
const MAX_DISPLAY: usize = 8_000;
const MAX_TEXT: usize = 2_000;
const MAX_BUTTONS: usize = 5;

/// A service account's key, as in its JSON key file.
#[derive(Clone)]
pub struct ServiceAccount {
    pub client_email: String,
    /// The PEM private key.
    pub private_key: String,
}

impl std::fmt::Debug for ServiceAccount {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServiceAccount")
            .field("client_email", &self.client_email)
            .finish_non_exhaustive()
    }
}

impl ServiceAccount {
    /// Reads a service account key file (`type: service_account`).
    pub fn from_json(text: &str) -> Result<Self, String> {
        let v: Value = serde_json::from_str(text).map_err(|e| format!("is not JSON: {e}"))?;
        let field = |k: &str| {
            v[k].as_str()
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .ok_or_else(|| format!("has no {k}; use the JSON key file of a service account"))
        };
        let account = Self {
            client_email: field("client_email")?,
            private_key: field("private_key")?,
        };
        jsonwebtoken::EncodingKey::from_rsa_pem(account.private_key.as_bytes())
            .map_err(|e| format!("has a private_key that is not an RSA key: {e}"))?;
        Ok(account)
    }
}

/// A Google Chat channel's configuration.
#[derive(Clone)]
pub struct GoogleChat {
    pub account: ServiceAccount,
    /// The space requests are posted to: `spaces/AAAA...`.
    pub space: String,
    /// The project number: the audience of Google's tokens.
    pub audience: String,
    pub api_url: url::Url,
    pub token_url: url::Url,
    pub keys: Keys,
    token: Arc<crate::oauth::TokenCache>,
}

impl std::fmt::Debug for GoogleChat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GoogleChat")
            .field("client_email", &self.account.client_email)
            .field("space", &self.space)
            .field("audience", &self.audience)
            .field("api_url", &self.api_url.as_str())
            .field("keys", &self.keys)
            .finish_non_exhaustive()
    }
}

/// Which event format a call came in, to answer in the same.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Classic,
    AddOn,
}

/// What a verified event asks of clarify.
#[derive(Debug, Clone, PartialEq)]
pub enum Inbound {
    /// `user` (`users/123`) clicked a button of request `request`'s card.
    Click {
        user: String,
        request: String,
        act: Act,
        format: Format,
    },
    /// A button clarify did not make.
    Unknown { action: String, format: Format },
    /// An event clarify does not act on (the app added to a space, a message).
    Ignore,
}

/// Reads a verified event, in either format.
pub fn read(event: &Value) -> Result<Inbound, String> {
    let (format, user, common) = if event.get("chat").is_some() {
        let chat = &event["chat"];
        if chat.get("buttonClickedPayload").is_none() {
            return Ok(Inbound::Ignore);
        }
        (
            Format::AddOn,
            &chat["user"]["name"],
            &event["commonEventObject"],
        )
    } else {
        if event["type"] != "CARD_CLICKED" {
            return Ok(Inbound::Ignore);
        }
        (Format::Classic, &event["user"]["name"], &event["common"])
    };
    let user = user
        .as_str()
        .filter(|u| u.starts_with("users/"))
        .ok_or("a click without the user's name")?
        .to_owned();
    let parameter = |k: &str| common["parameters"][k].as_str().map(str::to_owned);
    let (Some(request), Some(action)) = (parameter("request"), parameter("action")) else {
        return Ok(Inbound::Unknown {
            action: String::new(),
            format,
        });
    };
    let mut inputs = BTreeMap::new();
    if let Some(form) = common["formInputs"].as_object() {
        for (name, value) in form {
            let values: Vec<String> = value["stringInputs"]["value"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect();
            inputs.insert(name.clone(), values);
        }
    }
    if let Some(focus) = action.strip_prefix("form:") {
        let Some(focus) = Focus::decode(focus) else {
            return Ok(Inbound::Unknown { action, format });
        };
        // A selection's values are joined as a typed list is: `eu,us`.
        let inputs = inputs
            .into_iter()
            .map(|(name, values)| (name, Input::Text(values.join(","))))
            .collect();
        return Ok(Inbound::Click {
            user,
            request,
            act: Act::Submit { focus, inputs },
            format,
        });
    }
    let chosen = inputs.remove(&input_id(0, None)).unwrap_or_default();
    match control(&action, &chosen) {
        Control::Act(act) => Ok(Inbound::Click {
            user,
            request,
            act,
            format,
        }),
        Control::Form(_) | Control::Unknown(_) => Ok(Inbound::Unknown { action, format }),
    }
}

/// Agent text for a card's HTML subset: escaped, with line breaks kept.
fn html(text: &str, max: usize) -> String {
    escape_markup(&cut(text, max)).replace('\n', "<br>")
}

/// Preformatted text: escaped, in a monospace font where Chat has one.
fn pre(text: &str) -> String {
    format!("<font face=\"monospace\">{}</font>", html(text, usize::MAX))
}

fn paragraph(text: String) -> Value {
    json!({"textParagraph": {"text": text}})
}

fn button(text: &str, request: &str, action: &str, filled: bool) -> Value {
    let mut b = json!({"text": cut(text, 40), "onClick": {"action": {
        "function": "clarify",
        "parameters": [{"key": "request", "value": request}, {"key": "action", "value": action}],
    }}});
    if filled {
        b["type"] = json!("FILLED");
    }
    b
}

fn buttons(list: Vec<Value>) -> Value {
    json!({"buttonList": {"buttons": list}})
}

fn text_input(name: String, label: &str, value: Option<String>) -> Value {
    let mut w =
        json!({"textInput": {"name": name, "label": cut(label, 100), "type": "MULTIPLE_LINE"}});
    if let Some(v) = value {
        w["textInput"]["value"] = json!(v);
    }
    w
}

/// The message (`text` and `cardsV2`) for `record` as it is now.
pub fn message(record: &RequestRecord, answer_url: &str) -> Value {
    message_with(record, answer_url, true)
}

/// The message of `notice`: without answer controls when it offers only "Open in clarify".
pub(crate) fn notice_message(notice: &Notice<'_>) -> Value {
    message_with(notice.record, notice.answer_url, !notice.open_only())
}

/// The message for `record`, with its answer controls while pending when `answerable`, else
/// the line saying a passkey confirmation is needed.
fn message_with(record: &RequestRecord, answer_url: &str, answerable: bool) -> Value {
    let request = &record.request;
    let pending = !record.status.is_resolved();
    let mut widgets = Vec::new();
    match &request.context {
        Some(Context::Text(t)) => widgets.push(paragraph(html(t, MAX_TEXT))),
        Some(Context::Json(map)) => widgets.push(paragraph(pre(&cut(
            &serde_json::to_string_pretty(map).unwrap_or_default(),
            MAX_TEXT,
        )))),
        None => {}
    }
    let more = format!("The rest is on the answer page: {answer_url}");
    if let Some(display) =
        crate::display_text(record, &clarify_render::text::Plain, MAX_DISPLAY, &more)
    {
        widgets.push(paragraph(pre(&display)));
    }
    for q in &request.questions {
        let mut text = format!("<b>{}</b>", html(&q.text, MAX_TEXT));
        match &q.kind {
            QuestionKind::Single(c) | QuestionKind::Multi(c) => {
                for (i, o) in c.options.iter().enumerate() {
                    let mark = if c.recommended.as_deref() == Some(o.id.as_str()) {
                        " <i>(recommended)</i>"
                    } else {
                        ""
                    };
                    text.push_str(&format!("<br>{}. {}{mark}", i + 1, html(&o.label, 100)));
                }
            }
            QuestionKind::Approval(a) => {
                text.push_str(&format!("<br>Action: {}", pre(&cut(&a.action.name, 100))));
                if request.display.is_empty() {
                    let pretty =
                        serde_json::to_string_pretty(&a.action.arguments).unwrap_or_default();
                    text.push_str(&format!("<br>{}", pre(&cut(&pretty, MAX_TEXT))));
                    if pretty.chars().count() > MAX_TEXT {
                        text.push_str(&format!("<br>(cut: {})", html(&more, 500)));
                    }
                }
            }
            QuestionKind::Open | QuestionKind::Form(_) => {}
        }
        widgets.push(paragraph(text));
    }
    if pending {
        let mut footer = Vec::new();
        if let Some(at) = record.expires_at {
            footer.push(format!("expires {}", at.format("%Y-%m-%d %H:%M UTC")));
        }
        if request.is_quorum() {
            footer.push(outcome_text(record));
        }
        if let Some(by) = &request.responders {
            footer.push(format!("for {}", cut(&by.join(", "), 200)));
        }
        if !footer.is_empty() {
            widgets.push(paragraph(format!(
                "<font color=\"#80868b\">{}</font>",
                html(&footer.join(" · "), 500)
            )));
        }
        if answerable {
            widgets.extend(controls(record));
        } else {
            widgets.push(paragraph(format!(
                "<b>{}</b>",
                html(crate::STEP_UP_LINE, 200)
            )));
        }
    } else {
        widgets.push(paragraph(format!(
            "<b>{}</b>",
            html(&outcome_text(record), MAX_TEXT)
        )));
    }
    widgets.push(json!({"buttonList": {"buttons": [{"text": if pending { "Open in clarify" } else { "Open the record" },
        "onClick": {"openLink": {"url": answer_url}}}]}}));
    let mut header = json!({"title": cut(&headline(record), 200)});
    if let Some(by) = crate::asked_by(request, |a| cut(a, 60), |s| cut(s, 60)) {
        header["subtitle"] = json!(by);
    }
    json!({
        "text": cut(&headline(record), 200),
        "cardsV2": [{"cardId": "request", "card": {"header": header, "sections": [{"widgets": widgets}]}}],
    })
}

/// The inputs and buttons of a pending request of one question.
fn controls(record: &RequestRecord) -> Vec<Value> {
    let request = &record.request;
    let id = record.id.as_str();
    let mut out = Vec::new();
    let mut last = Vec::new();
    if let [q] = request.questions.as_slice() {
        match &q.kind {
            QuestionKind::Single(c) if c.options.len() <= MAX_BUTTONS => {
                let list = c
                    .options
                    .iter()
                    .enumerate()
                    .map(|(i, o)| {
                        let recommended = c.recommended.as_deref() == Some(o.id.as_str());
                        button(&o.label, id, &format!("o:{i}"), recommended)
                    })
                    .collect();
                out.push(buttons(list));
                if c.allow_other {
                    out.push(text_input(
                        input_id(0, Some("other")),
                        "Or your own answer",
                        None,
                    ));
                    last.push(button("Send my own answer", id, "form:other:0", false));
                }
            }
            QuestionKind::Single(c) | QuestionKind::Multi(c) => {
                let multi = matches!(q.kind, QuestionKind::Multi(_));
                let items: Vec<Value> = c
                    .options
                    .iter()
                    .enumerate()
                    .map(|(i, o)| json!({"text": cut(&o.label, 100), "value": i.to_string(), "selected": false}))
                    .collect();
                out.push(json!({"selectionInput": {
                    "name": input_id(0, None),
                    "label": if multi { "Choose one or more" } else { "Choose one" },
                    "type": if multi { "CHECK_BOX" } else { "DROPDOWN" },
                    "items": items,
                }}));
                last.push(button(
                    "Submit",
                    id,
                    if multi { "multi" } else { "sel" },
                    true,
                ));
                if c.allow_other {
                    out.push(text_input(
                        input_id(0, Some("other")),
                        "Or your own answer",
                        None,
                    ));
                    last.push(button("Send my own answer", id, "form:other:0", false));
                }
            }
            QuestionKind::Open => {
                out.push(text_input(input_id(0, None), "Your answer", None));
                last.push(button("Send", id, "form:open:0", true));
            }
            QuestionKind::Form(f) => {
                out.extend(f.fields.iter().map(field_input));
                last.push(button("Submit", id, "form:form:0", true));
            }
            QuestionKind::Approval(a) => {
                let list = a
                    .scopes
                    .iter()
                    .map(|s| {
                        let label = match s {
                            Scope::Once => "Approve",
                            Scope::Session => "Approve for this session",
                            Scope::Always => "Approve always",
                        };
                        button(label, id, &format!("a:{}", s.as_str()), true)
                    })
                    .chain([button("Deny", id, "d", false)])
                    .collect();
                out.push(buttons(list));
                out.push(text_input(
                    input_id(0, Some("reason")),
                    "A reason, or what should change",
                    None,
                ));
                last.push(button("Request changes", id, "form:revise:0", false));
                last.push(button("Deny with reason", id, "form:deny:0", false));
                if a.allow_edit {
                    out.push(text_input(
                        input_id(0, Some("arguments")),
                        "Arguments (a JSON object)",
                        serde_json::to_string_pretty(&a.action.arguments).ok(),
                    ));
                    last.push(button("Approve these arguments", id, "form:edit:0", false));
                }
            }
        }
    }
    if request.allow_skip {
        last.push(button("Skip", id, "s", false));
    }
    if !last.is_empty() {
        out.push(buttons(last));
    }
    out
}

/// A form field as a card input: checkboxes or a dropdown for options, a switch for a boolean,
/// text for the rest (read by core's `value_from_text`, with a hint saying what fits).
fn field_input(field: &clarify_core::Field) -> Value {
    use clarify_core::form::FieldKind;
    let name = input_id(0, Some(&format!("f.{}", field.id)));
    let default: Vec<String> = match &field.default {
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect(),
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Bool(true)) => vec!["yes".to_owned()],
        Some(other) if !other.is_boolean() => vec![other.to_string()],
        _ => Vec::new(),
    };
    match &field.kind {
        FieldKind::Boolean => {
            json!({"selectionInput": {"name": name, "label": cut(&field.label, 100),
            "type": "SWITCH", "items": [{"text": cut(&field.label, 100), "value": "yes",
                                          "selected": default.iter().any(|d| d == "yes")}]}})
        }
        FieldKind::Choice { options } | FieldKind::Choices { options, .. } => {
            let multi = matches!(field.kind, FieldKind::Choices { .. });
            json!({"selectionInput": {"name": name, "label": cut(&field.label, 100),
                "type": if multi { "CHECK_BOX" } else { "DROPDOWN" },
                "items": options.iter().map(|o| json!({"text": cut(&o.label, 100), "value": o.id,
                                                        "selected": default.contains(&o.id)})).collect::<Vec<_>>()}})
        }
        _ => {
            let mut w = json!({"textInput": {"name": name, "label": cut(&field.label, 100),
                               "hintText": cut(&field.hint(), 100), "type": "SINGLE_LINE"}});
            if let Some(d) = default.first() {
                w["textInput"]["value"] = json!(d);
            }
            w
        }
    }
}

/// The synchronous response that updates the clicked message to show `record` as it is now.
pub fn update(record: &RequestRecord, answer_url: &str, format: Format) -> Value {
    let message = message(record, answer_url);
    match format {
        Format::Classic => json!({"actionResponse": {"type": "UPDATE_MESSAGE"},
                                  "text": message["text"], "cardsV2": message["cardsV2"]}),
        Format::AddOn => json!({"hostAppDataAction": {"chatDataAction": {
            "updateMessageAction": {"message": {"text": message["text"], "cardsV2": message["cardsV2"]}}}}}),
    }
}

/// The synchronous response telling `user` something only they see.
pub fn private(user: &str, text: &str, format: Format) -> Value {
    let message = json!({"text": cut(text, 2_000), "privateMessageViewer": {"name": user}});
    match format {
        Format::Classic => {
            let mut m = message;
            m["actionResponse"] = json!({"type": "NEW_MESSAGE"});
            m
        }
        Format::AddOn => json!({"hostAppDataAction": {"chatDataAction": {
            "createMessageAction": {"message": message}}}}),
    }
}

impl GoogleChat {
    pub fn new(
        account: ServiceAccount,
        space: String,
        audience: String,
        api_url: url::Url,
        token_url: url::Url,
        certs_url: url::Url,
    ) -> Self {
        Self {
            account,
            space,
            audience,
            api_url,
            token_url,
            keys: Keys::new(KeySource::Certificates(certs_url)),
            token: Arc::default(),
        }
    }

    /// Verifies an inbound call's bearer token (Google's, for the Chat system account, with
    /// the project number as audience), then reads its body.
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
        crate::jwt::check(
            token,
            &key.key,
            &Expect {
                issuers: &[ISSUER],
                audience: &self.audience,
            },
            now,
        )?;
        serde_json::from_slice(body).map_err(|_| Refused("the event is not JSON".to_owned()))
    }

    /// A Chat API token for the app, from the cache or by a signed assertion.
    async fn token(&self, client: &reqwest::Client) -> Result<String, SendError> {
        crate::oauth::token(&self.token, PLATFORM, || {
            let now = chrono::Utc::now().timestamp();
            let claims = json!({"iss": self.account.client_email, "scope": SCOPE,
                                "aud": self.token_url.as_str(), "iat": now, "exp": now + 3_600});
            let key = jsonwebtoken::EncodingKey::from_rsa_pem(self.account.private_key.as_bytes())
                .map_err(|e| SendError::Failed {
                    platform: PLATFORM,
                    error: format!("the service account's key cannot sign: {e}"),
                    transient: false,
                })?;
            let assertion = jsonwebtoken::encode(
                &jsonwebtoken::Header::new(jsonwebtoken::Algorithm::RS256),
                &claims,
                &key,
            )
            .map_err(|e| SendError::Failed {
                platform: PLATFORM,
                error: format!("the token assertion could not be signed: {e}"),
                transient: false,
            })?;
            Ok(client.post(self.token_url.as_str()).form(&[
                ("grant_type", "urn:ietf:params:oauth:grant-type:jwt-bearer"),
                ("assertion", &assertion),
            ]))
        })
        .await
    }

    async fn call(
        &self,
        client: &reqwest::Client,
        method: reqwest::Method,
        path: &str,
        body: &Value,
    ) -> Result<Value, SendError> {
        let token = self.token(client).await?;
        let url = format!("{}/{path}", self.api_url.as_str().trim_end_matches('/'));
        let request = client.request(method, url).bearer_auth(token).json(body);
        crate::oauth::call(&self.token, PLATFORM, path, request).await
    }

    /// Announces, replies in the announcement's thread, or updates it, as `notice` asks.
    pub(crate) async fn send(
        &self,
        client: &reqwest::Client,
        notice: &Notice<'_>,
    ) -> Result<Sent, SendError> {
        use reqwest::Method;
        let reference = |sent: &Value| {
            let name = sent["name"].as_str()?;
            let thread = sent["thread"]["name"].as_str().unwrap_or_default();
            Some(format!("{name} {thread}").trim().to_owned())
        };
        match (notice.event, notice.announcement) {
            (EventKind::Created, _) | (EventKind::Reminded | EventKind::Escalated, None) => {
                let sent = self
                    .call(
                        client,
                        Method::POST,
                        &format!("{}/messages", self.space),
                        &notice_message(notice),
                    )
                    .await?;
                Ok(Sent::Posted {
                    message_ref: reference(&sent),
                })
            }
            (EventKind::Reminded | EventKind::Escalated, Some(announcement)) => {
                let thread = announcement
                    .split_once(' ')
                    .map(|(_, t)| t)
                    .unwrap_or_default();
                let mentions: Vec<String> = notice
                    .mention
                    .iter()
                    .filter(|m| m.starts_with("users/"))
                    .map(|m| format!("<{m}>"))
                    .collect();
                let mut body = json!({"text": crate::follow_up_text(notice.event, &mentions)});
                if !thread.is_empty() {
                    body["thread"] = json!({"name": thread});
                }
                let sent = self
                    .call(
                        client,
                        Method::POST,
                        &format!(
                            "{}/messages?messageReplyOption=REPLY_MESSAGE_FALLBACK_TO_NEW_THREAD",
                            self.space
                        ),
                        &body,
                    )
                    .await?;
                Ok(Sent::Posted {
                    message_ref: reference(&sent),
                })
            }
            (_, None) => Ok(Sent::Skipped {
                why: "the request was never announced here, so there is nothing to edit",
            }),
            (_, Some(announcement)) => {
                let name = announcement.split(' ').next().unwrap_or(announcement);
                self.call(
                    client,
                    Method::PATCH,
                    &format!("{name}?updateMask=text,cards_v2"),
                    &notice_message(notice),
                )
                .await?;
                Ok(Sent::Edited)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_event_formats_are_read() {
        let classic = json!({"type": "CARD_CLICKED", "user": {"name": "users/1"},
            "common": {"parameters": {"request": "r1", "action": "multi"},
                       "formInputs": {"q0": {"stringInputs": {"value": ["0", "2"]}}}}});
        assert_eq!(
            read(&classic),
            Ok(Inbound::Click {
                user: "users/1".to_owned(),
                request: "r1".to_owned(),
                act: Act::Options {
                    question: 0,
                    indexes: vec![0, 2]
                },
                format: Format::Classic,
            })
        );
        let addon = json!({"chat": {"user": {"name": "users/2"},
                                    "buttonClickedPayload": {"message": {"name": "spaces/a/messages/b"}}},
            "commonEventObject": {"parameters": {"request": "r1", "action": "form:deny:0"},
                "formInputs": {"q0.reason": {"stringInputs": {"value": ["no"]}}}}});
        let Ok(Inbound::Click {
            act: Act::Submit { focus, inputs },
            format,
            ..
        }) = read(&addon)
        else {
            panic!("a submit");
        };
        assert_eq!((focus, format), (Focus::Deny(0), Format::AddOn));
        assert_eq!(inputs.get("q0.reason"), Some(&Input::Text("no".to_owned())));
        assert_eq!(
            read(&json!({"type": "ADDED_TO_SPACE"})),
            Ok(Inbound::Ignore)
        );
    }

    #[test]
    fn agent_text_is_escaped_for_the_cards_html() {
        assert_eq!(
            html("<b>x</b> & <a href=\"j\">", 100),
            "&lt;b&gt;x&lt;/b&gt; &amp; &lt;a href=\"j\"&gt;"
        );
    }
}
