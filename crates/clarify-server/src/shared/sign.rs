//! HMACs, constant-time comparison and hex: what the answer links, CSRF tokens, webhook
//! signatures and the key cache are made of; and the answer link's token itself, which the API
//! and chat messages hand out and the link page checks.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use sha2::Sha256;

/// HMAC-SHA256 of `message` under `secret`.
pub fn mac(secret: &[u8], message: &[u8]) -> Vec<u8> {
    #[allow(clippy::expect_used)]
    let mut m = Hmac::<Sha256>::new_from_slice(secret).expect("HMAC takes keys of any length");
    m.update(message);
    m.finalize().into_bytes().to_vec()
}

/// Constant-time equality, for comparing secrets.
pub fn equal(a: &[u8], b: &[u8]) -> bool {
    use subtle::ConstantTimeEq;
    a.len() == b.len() && bool::from(a.ct_eq(b))
}

pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The token of request `id`'s answer link (`/a/<token>`): `<id>.<signature>`, the signature an
/// HMAC-SHA256 of the id under the server's link secret, in URL-safe base64.
pub fn link_token(secret: &[u8], id: &str) -> String {
    let signature = mac(secret, format!("link:{id}").as_bytes());
    format!("{id}.{}", URL_SAFE_NO_PAD.encode(signature))
}

/// The request id of a genuine link token; `None` when its signature does not match.
pub fn link_request<'a>(secret: &[u8], token: &'a str) -> Option<&'a str> {
    let (id, _) = token.split_once('.')?;
    let expected = link_token(secret, id);
    equal(token.as_bytes(), expected.as_bytes()).then_some(id)
}

/// The token of `name`'s personal link to request `id`: `<id>~<name>.<signature>`, the name in
/// URL-safe base64 and the signature an HMAC-SHA256 of both under the link secret, so the link
/// answers as that person and no other.
pub fn personal_token(secret: &[u8], id: &str, name: &str) -> String {
    let signature = mac(secret, format!("personal:{id}:{name}").as_bytes());
    format!(
        "{id}~{}.{}",
        URL_SAFE_NO_PAD.encode(name),
        URL_SAFE_NO_PAD.encode(signature)
    )
}

/// What a genuine link token names: the request, and for a personal link the person; `None`
/// when its signature does not match.
pub fn link_target<'a>(secret: &[u8], token: &'a str) -> Option<(&'a str, Option<String>)> {
    let (head, _) = token.split_once('.')?;
    let Some((id, who)) = head.split_once('~') else {
        return link_request(secret, token).map(|id| (id, None));
    };
    let name = String::from_utf8(URL_SAFE_NO_PAD.decode(who).ok()?).ok()?;
    let expected = personal_token(secret, id, &name);
    equal(token.as_bytes(), expected.as_bytes()).then_some((id, Some(name)))
}
