//! The tokens clarify puts in a button's context and a dialog's state, and checks when
//! Mattermost carries them back: Mattermost signs nothing, so these HMACs under the server's key
//! are what tell clarify's own controls from forged calls.

use crate::act::Focus;

fn mac(key: &[u8], message: &str) -> Vec<u8> {
    clarify_model::sign::hmac_sha256(key, message.as_bytes())
}

fn b64(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// Whether `token` is the one `key` gives `message`, compared in constant time.
pub(super) fn genuine(key: &[u8], message: &str, token: &str) -> bool {
    use subtle::ConstantTimeEq;
    let expected = b64(&mac(key, message));
    expected.len() == token.len() && bool::from(expected.as_bytes().ct_eq(token.as_bytes()))
}

/// The token of a button that does `action` on request `request`.
pub fn button_token(key: &[u8], request: &str, action: &str) -> String {
    b64(&mac(key, &format!("mattermost-button:{request}:{action}")))
}

/// The token of a dialog for `focus` of request `request`, opened for `user`.
pub(super) fn dialog_token(key: &[u8], request: &str, focus: Focus, user: &str) -> String {
    b64(&mac(
        key,
        &format!("mattermost-dialog:{request}:{}:{user}", focus.encode()),
    ))
}
