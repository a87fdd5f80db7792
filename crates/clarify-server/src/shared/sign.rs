//! HMACs, constant-time comparison, hex and URL-safe base64: what the answer links, CSRF
//! tokens, webhook signatures, push subscriptions' keys and the key cache are made of; a
//! tenant's webhook secret and a webhook's signature; and the answer link's tokens themselves
//! (anonymous, personal, and a person's as pushed to one of their browsers), which the API,
//! chat messages and pushes hand out and the link page checks.

use base64::Engine;
use base64::engine::general_purpose::{URL_SAFE, URL_SAFE_NO_PAD};

/// HMAC-SHA256 of a message under a secret: `clarify_model::sign`'s, the home the chat
/// platforms' signature checks reach too.
pub use clarify_model::sign::hmac_sha256 as mac;

/// The link secret, keyed once (every created request's record carries two MACs under it).
pub use clarify_model::sign::MacKey;

/// Constant-time equality, for comparing secrets.
pub fn equal(a: &[u8], b: &[u8]) -> bool {
    use subtle::ConstantTimeEq;
    a.len() == b.len() && bool::from(a.ct_eq(b))
}

/// Lowercase hex, by the one rule every crate writes it with.
pub use clarify_core::text::hex;

/// URL-safe base64, with or without padding, as browsers give a push subscription's keys.
pub fn base64url(text: &str) -> Option<Vec<u8>> {
    URL_SAFE_NO_PAD
        .decode(text)
        .or_else(|_| URL_SAFE.decode(text))
        .ok()
}

/// A tenant's webhook secret (`whsec_<hex>`), derived from the server's `webhook_secret`, so
/// tenants never share one and none needs storing.
pub fn tenant_secret(webhook_secret: &[u8], tenant: &str) -> String {
    let raw = mac(webhook_secret, format!("webhook:{tenant}").as_bytes());
    format!("whsec_{}", hex(&raw))
}

/// The `Clarify-Signature` header value for a webhook `body` sent at unix time `t`.
pub fn signature(secret: &str, t: i64, body: &[u8]) -> String {
    let mut message = format!("{t}.").into_bytes();
    message.extend_from_slice(body);
    format!("t={t},v1={}", hex(&mac(secret.as_bytes(), &message)))
}

/// The token of request `id`'s answer link (`/a/<token>`): `<id>.<signature>`, the signature an
/// HMAC-SHA256 of the id under the server's link secret, in URL-safe base64.
pub fn link_token(secret: &MacKey, id: &str) -> String {
    let signature = secret.mac(format!("link:{id}").as_bytes());
    format!("{id}.{}", URL_SAFE_NO_PAD.encode(signature))
}

/// The token that lets the key `key_id` record its MCP client's answer to request `id`
/// (`POST /v1/requests/{id}/client-answer`): an HMAC-SHA256 of both under the link secret, in
/// URL-safe base64. Handed out only in the response that created the request, so only the key
/// that created it holds one, and nothing needs storing.
pub fn client_answer_token(secret: &MacKey, key_id: &str, id: &str) -> String {
    URL_SAFE_NO_PAD.encode(secret.mac(format!("client-answer:{key_id}:{id}").as_bytes()))
}

/// The request id of a genuine link token; `None` when its signature does not match.
pub fn link_request<'a>(secret: &MacKey, token: &'a str) -> Option<&'a str> {
    let (id, _) = token.split_once('.')?;
    let expected = link_token(secret, id);
    equal(token.as_bytes(), expected.as_bytes()).then_some(id)
}

/// The token of `name`'s personal link to request `id`: `<id>~<name>.<signature>`, the name in
/// URL-safe base64 and the signature an HMAC-SHA256 of both under the link secret, so the link
/// answers as that person and no other.
pub fn personal_token(secret: &MacKey, id: &str, name: &str) -> String {
    let signature = secret.mac(format!("personal:{id}:{name}").as_bytes());
    format!(
        "{id}~{}.{}",
        URL_SAFE_NO_PAD.encode(name),
        URL_SAFE_NO_PAD.encode(signature)
    )
}

/// The token of `name`'s link to request `id` as sent to their Web Push `subscription`:
/// `<id>~<name>~<subscription>.<signature>`, the signature an HMAC-SHA256 of all three under the
/// link secret. It answers as that person through that subscription (`answered_via` `push`),
/// and no longer once the subscription is removed.
pub fn push_token(secret: &MacKey, id: &str, name: &str, subscription: &str) -> String {
    let signature = secret.mac(format!("push:{id}:{name}:{subscription}").as_bytes());
    format!(
        "{id}~{}~{subscription}.{}",
        URL_SAFE_NO_PAD.encode(name),
        URL_SAFE_NO_PAD.encode(signature)
    )
}

/// What a genuine link token names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkTarget<'a> {
    pub id: &'a str,
    /// The person a personal or push link answers as; `None` for the anonymous link.
    pub person: Option<String>,
    /// The Web Push subscription a push link was sent to.
    pub subscription: Option<&'a str>,
}

/// What a genuine link token names: the request, and for a personal link the person (and for a
/// push link the subscription); `None` when its signature does not match.
pub fn link_target<'a>(secret: &MacKey, token: &'a str) -> Option<LinkTarget<'a>> {
    let (head, _) = token.split_once('.')?;
    let Some((id, who)) = head.split_once('~') else {
        return link_request(secret, token).map(|id| LinkTarget {
            id,
            person: None,
            subscription: None,
        });
    };
    let (who, subscription) = match who.split_once('~') {
        Some((who, subscription)) => (who, Some(subscription)),
        None => (who, None),
    };
    let name = String::from_utf8(URL_SAFE_NO_PAD.decode(who).ok()?).ok()?;
    let expected = match subscription {
        Some(s) => push_token(secret, id, &name, s),
        None => personal_token(secret, id, &name),
    };
    equal(token.as_bytes(), expected.as_bytes()).then_some(LinkTarget {
        id,
        person: Some(name),
        subscription,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_of_link_names_what_it_was_signed_for_and_nothing_else() {
        let secret = &MacKey::new(b"link secret");
        let anonymous = link_token(secret, "r1");
        let personal = personal_token(secret, "r1", "alice");
        let push = push_token(secret, "r1", "alice", "s1");
        assert_eq!(
            link_target(secret, &anonymous),
            Some(LinkTarget {
                id: "r1",
                person: None,
                subscription: None
            })
        );
        assert_eq!(
            link_target(secret, &personal),
            Some(LinkTarget {
                id: "r1",
                person: Some("alice".to_owned()),
                subscription: None
            })
        );
        assert_eq!(
            link_target(secret, &push),
            Some(LinkTarget {
                id: "r1",
                person: Some("alice".to_owned()),
                subscription: Some("s1")
            })
        );
        // A personal link made a push link (or back), or sent to another subscription, is
        // not genuine: the surface and the subscription are signed.
        let (head, signature) = personal.split_once('.').expect("a token");
        assert_eq!(link_target(secret, &format!("{head}~s1.{signature}")), None);
        let (head, signature) = push.split_once('.').expect("a token");
        let other = head.replace("~s1", "~s2");
        assert_eq!(link_target(secret, &format!("{other}.{signature}")), None);
        let bare = head.trim_end_matches("~s1");
        assert_eq!(link_target(secret, &format!("{bare}.{signature}")), None);
        assert_eq!(link_target(&MacKey::new(b"another secret"), &push), None);
    }
}
