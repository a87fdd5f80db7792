//! Twilio, what the channels that text or call a number share (`sms`, `whatsapp`, `voice`): the
//! account and its REST client, the signature Twilio puts on every webhook call, and TwiML.
//!
//! - The REST API (`{api_url}/2010-04-01/Accounts/{AccountSid}/{Messages|Calls}.json`) takes a
//!   form-encoded body with HTTP basic auth (the account SID and its auth token) and answers
//!   `201` with the new resource as JSON (its `sid`), or an error as JSON (`{"code", "message",
//!   "status", "more_info"}`).
//! - A webhook call carries `X-Twilio-Signature`: the base64 HMAC-SHA1, keyed by the auth token,
//!   of the full URL Twilio called (its query included) followed by every POST parameter sorted
//!   by name, each as name then value. [`verified`] checks it before any parameter is read,
//!   against the URL the operator gave Twilio (the channel's hook URL), so a call forged or sent
//!   to another channel is refused with nothing read.
//! - What clarify answers a webhook with is TwiML, XML whose text is escaped by [`escape`].

use base64::Engine as _;
use hmac::{Hmac, Mac};
use serde_json::Value;
use sha1::Sha1;
use subtle::ConstantTimeEq;

use crate::inbound::{InboundError, malformed};
use crate::notice::SendError;
use crate::platform::Call;
use crate::text::cut;

/// Where Twilio's REST API is unless `api_url` says otherwise.
pub(crate) const API_URL: &str = "https://api.twilio.com";

/// The header a webhook call's signature is in.
pub const SIGNATURE_HEADER: &str = "x-twilio-signature";

/// A Twilio account: whom the REST API bills and whose auth token signs the webhooks.
#[derive(Clone)]
pub struct Account {
    /// `AC…`, the account's SID.
    pub account_sid: String,
    pub auth_token: String,
    pub api_url: url::Url,
}

impl std::fmt::Debug for Account {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Account")
            .field("account_sid", &self.account_sid)
            .field("auth_token", &"..")
            .field("api_url", &self.api_url.as_str())
            .finish()
    }
}

impl Account {
    /// Creates a `resource` (`Messages`, `Calls`) with `form`; the new resource's `sid`.
    pub(crate) async fn create(
        &self,
        client: &reqwest::Client,
        platform: &'static str,
        resource: &str,
        form: &[(&str, String)],
    ) -> Result<String, SendError> {
        let url = format!(
            "{}/2010-04-01/Accounts/{}/{resource}.json",
            self.api_url.as_str().trim_end_matches('/'),
            self.account_sid
        );
        let response = client
            .post(url)
            .basic_auth(&self.account_sid, Some(&self.auth_token))
            .form(form)
            .send()
            .await
            .map_err(|e| SendError::Unreachable {
                platform,
                detail: if e.is_timeout() {
                    "no answer in time".to_owned()
                } else {
                    e.to_string()
                },
            })?;
        let status = response.status();
        let retry_after = crate::http::RetryAfter::read(response.headers());
        let text = response.text().await.unwrap_or_default();
        let body = serde_json::from_str::<Value>(&text).ok();
        if !status.is_success() {
            // Twilio's errors: {"code": 21211, "message": "The 'To' number … is not valid", …}.
            let detail = body
                .as_ref()
                .and_then(|b| {
                    let message = b["message"].as_str()?;
                    Some(match b["code"].as_i64() {
                        Some(code) => format!("{message} (Twilio error {code})"),
                        None => message.to_owned(),
                    })
                })
                .unwrap_or_else(|| cut(text.trim(), 200));
            return Err(SendError::Refused {
                platform,
                status: status.as_u16(),
                detail,
                retry_after,
            });
        }
        body.as_ref()
            .and_then(|b| b["sid"].as_str())
            .map(str::to_owned)
            .ok_or_else(|| SendError::Failed {
                platform,
                error: format!("Twilio answered without a sid: {}", cut(text.trim(), 200)),
                transient: false,
            })
    }
}

/// The signature Twilio puts on a call to `url` with the POST parameters `params`.
pub fn signature(auth_token: &str, url: &str, params: &[(String, String)]) -> String {
    let mut sorted: Vec<&(String, String)> = params.iter().collect();
    // Sorted by name; Twilio sorts parameters of one name by value too.
    sorted.sort();
    let mut mac =
        Hmac::<Sha1>::new_from_slice(auth_token.as_bytes()).expect("HMAC takes a key of any size");
    mac.update(url.as_bytes());
    for (name, value) in sorted {
        mac.update(name.as_bytes());
        mac.update(value.as_bytes());
    }
    base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes())
}

/// The parameters of `call` to `hook_url`, once its `X-Twilio-Signature` is found to be
/// Twilio's for `auth_token`; refused (`401`, nothing read) otherwise. The URL signed is
/// `hook_url` with the call's query, as Twilio called it.
pub fn verified(
    auth_token: &str,
    hook_url: &str,
    call: &Call<'_>,
) -> Result<Vec<(String, String)>, InboundError> {
    let Some(given) = call.header(SIGNATURE_HEADER) else {
        return Err(InboundError::Unauthorized(
            "the X-Twilio-Signature header is missing",
        ));
    };
    let url = match call.query {
        Some(query) if !query.is_empty() => format!("{hook_url}?{query}"),
        _ => hook_url.to_owned(),
    };
    let params: Vec<(String, String)> = url::form_urlencoded::parse(call.body)
        .into_owned()
        .collect();
    let expected = signature(auth_token, &url, &params);
    if !bool::from(expected.as_bytes().ct_eq(given.trim().as_bytes())) {
        return Err(InboundError::Unauthorized(
            "the X-Twilio-Signature is not Twilio's for this channel's URL",
        ));
    }
    Ok(params)
}

/// The value of parameter `name` in `params`.
pub fn param<'a>(params: &'a [(String, String)], name: &str) -> Option<&'a str> {
    params
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.as_str())
}

/// The value of parameter `name`, which a verified call must carry.
pub(crate) fn required<'a>(
    params: &'a [(String, String)],
    name: &str,
) -> Result<&'a str, InboundError> {
    param(params, name)
        .filter(|v| !v.trim().is_empty())
        .ok_or_else(|| malformed(format!("the call has no {name}")))
}

/// `text` made safe as XML text or an attribute's value: `&`, `<`, `>`, `"` and `'` escaped,
/// and the characters XML 1.0 cannot hold dropped.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if (c as u32) < 0x20 || c == '\u{FFFE}' || c == '\u{FFFF}' => {}
            c => out.push(c),
        }
    }
    out
}

/// A TwiML document of `verbs` (already TwiML).
pub fn twiml(verbs: &str) -> String {
    format!("<?xml version=\"1.0\" encoding=\"UTF-8\"?><Response>{verbs}</Response>")
}

/// A TwiML reply to a message: one `<Message>` saying `text`.
pub fn message_reply(text: &str) -> String {
    twiml(&format!("<Message>{}</Message>", escape(text)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn the_signature_is_twilios_published_example() {
        // From Twilio's "Webhooks security" page.
        let params = pairs(&[
            ("CallSid", "CA1234567890ABCDE"),
            ("Caller", "+12349013030"),
            ("Digits", "1234"),
            ("From", "+12349013030"),
            ("To", "+18005551212"),
        ]);
        let url = "https://mycompany.com/myapp.php?foo=1&bar=2";
        assert_eq!(
            signature("12345", url, &params),
            "0/KCTR6DLpKmkAf8muzZqo1nDgQ="
        );
        // The order they arrive in does not matter.
        let mut reversed = params.clone();
        reversed.reverse();
        assert_eq!(
            signature("12345", url, &reversed),
            signature("12345", url, &params)
        );
        assert_ne!(
            signature("12346", url, &params),
            "0/KCTR6DLpKmkAf8muzZqo1nDgQ="
        );
    }

    #[test]
    fn a_call_is_read_only_with_the_signature_of_its_url_and_body() {
        let body = b"From=%2B12349013030&Body=approve+K7Q2X";
        let params = pairs(&[("From", "+12349013030"), ("Body", "approve K7Q2X")]);
        let hook = "https://clarify.example.com/hooks/sms/oncall";
        let mut headers = reqwest::header::HeaderMap::new();
        let call = |headers: &reqwest::header::HeaderMap, query| {
            verified(
                "token",
                hook,
                &Call {
                    headers,
                    body,
                    query,
                },
            )
        };
        assert_eq!(
            call(&headers, None),
            Err(InboundError::Unauthorized(
                "the X-Twilio-Signature header is missing"
            ))
        );
        let good = signature("token", hook, &params);
        headers.insert(SIGNATURE_HEADER, good.parse().expect("header"));
        let read = call(&headers, None).expect("verified");
        assert_eq!(param(&read, "Body"), Some("approve K7Q2X"));
        // The query is signed too: the same body at another URL is not Twilio's.
        assert!(matches!(
            call(&headers, Some("request=01abc")),
            Err(InboundError::Unauthorized(_))
        ));
        let with_query = signature("token", &format!("{hook}?request=01abc"), &params);
        headers.insert(SIGNATURE_HEADER, with_query.parse().expect("header"));
        assert!(call(&headers, Some("request=01abc")).is_ok());
        // Another token's signature is refused.
        let forged = signature("other", hook, &params);
        headers.insert(SIGNATURE_HEADER, forged.parse().expect("header"));
        assert!(matches!(
            call(&headers, None),
            Err(InboundError::Unauthorized(_))
        ));
    }

    #[test]
    fn twiml_text_is_escaped() {
        assert_eq!(
            message_reply("Deny <b>\"x\"</b> & 'y'\u{1}"),
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Response><Message>Deny &lt;b&gt;&quot;x&quot;&lt;/b&gt; &amp; &apos;y&apos;</Message></Response>"
        );
    }
}
