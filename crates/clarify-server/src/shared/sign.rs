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
