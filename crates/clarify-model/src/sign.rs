//! HMAC-SHA256, the one implementation the server's links and webhook signatures and the chat
//! platforms' signature checks share.
//!
//! It lives here because this is the lowest crate both the server and `clarify-channels` reach
//! that may carry hashing: the domain core stays free of it.

use hmac::{Hmac, Mac};
use sha2::Sha256;

/// An HMAC-SHA256 key keyed once: [`MacKey::mac`] starts from the kept inner and outer states,
/// so a message costs the hashing of the message alone, where [`hmac_sha256`] hashes the key's
/// two pads again each time (half the work of a short message's MAC).
#[derive(Clone)]
pub struct MacKey(Hmac<Sha256>);

impl MacKey {
    pub fn new(key: &[u8]) -> Self {
        #[allow(clippy::expect_used)]
        Self(Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes keys of any length"))
    }

    /// HMAC-SHA256 of `message` under this key: [`hmac_sha256`]'s bytes.
    pub fn mac(&self, message: &[u8]) -> Vec<u8> {
        let mut m = self.0.clone();
        m.update(message);
        m.finalize().into_bytes().to_vec()
    }
}

impl std::fmt::Debug for MacKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MacKey(..)")
    }
}

/// HMAC-SHA256 of `message` under `key` (any length: HMAC hashes a long key and pads a short one).
pub fn hmac_sha256(key: &[u8], message: &[u8]) -> Vec<u8> {
    MacKey::new(key).mac(message)
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

    #[test]
    fn a_kept_key_macs_as_the_key_given_each_time() {
        // RFC 4231 test case 6: a key longer than SHA-256's block, hashed first.
        let key = [0xaa_u8; 131];
        let message = b"Test Using Larger Than Block-Size Key - Hash Key First";
        let kept = MacKey::new(&key);
        for _ in 0..2 {
            assert_eq!(
                clarify_core::text::hex(&kept.mac(message)),
                "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"
            );
        }
        assert_eq!(kept.mac(b"another"), hmac_sha256(&key, b"another"));
    }
}
