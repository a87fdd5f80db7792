//! HMAC-SHA256, the one implementation the server's links and webhook signatures and the chat
//! platforms' signature checks share.
//!
//! It lives here because this is the lowest crate both the server and `clarify-channels` reach
//! that may carry hashing: the domain core stays free of it.

use hmac::{Hmac, Mac};
use sha2::Sha256;

/// HMAC-SHA256 of `message` under `key` (any length: HMAC hashes a long key and pads a short one).
pub fn hmac_sha256(key: &[u8], message: &[u8]) -> Vec<u8> {
    #[allow(clippy::expect_used)]
    let mut m = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes keys of any length");
    m.update(message);
    m.finalize().into_bytes().to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_rfc_4231_test_case_2() {
        let mac = hmac_sha256(b"Jefe", b"what do ya want for nothing?");
        assert_eq!(
            clarify_core::text::hex(&mac),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }
}
