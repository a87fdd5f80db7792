//! SHA-256 and HMAC-SHA256, the one implementation the server's links, API key digests, audit
//! chain and webhook signatures and the chat platforms' signature checks share.
//!
//! It lives here because this is the lowest crate both the server and `clarify-channels` reach
//! that may carry hashing: the domain core stays free of it. Both are AWS-LC's (already linked
//! for the receipts' Ed25519): its SHA-256 is assembly with a path for every x86-64 processor
//! (SHA extensions, AVX2, AVX, SSSE3), where the `sha2` crate has the SHA extensions or portable
//! Rust, which on a processor without them (Intel's before Ice Lake, and valgrind's) costs
//! about 1.6 times AWS-LC's instructions. A round trip hashes about thirteen times: two audit
//! links, two key digests, the answer link's and the client answer token's MACs.

use aws_lc_rs::{digest, hmac};

/// SHA-256 of `parts`, one after the other.
pub fn sha256(parts: &[&[u8]]) -> [u8; 32] {
    let mut context = digest::Context::new(&digest::SHA256);
    for part in parts {
        context.update(part);
    }
    let mut out = [0_u8; 32];
    out.copy_from_slice(context.finish().as_ref());
    out
}

/// An HMAC-SHA256 key keyed once: [`MacKey::mac`] starts from the kept inner and outer states,
/// so a message costs the hashing of the message alone, where [`hmac_sha256`] hashes the key's
/// two pads again each time (half the work of a short message's MAC).
#[derive(Clone)]
pub struct MacKey(hmac::Key);

impl MacKey {
    pub fn new(key: &[u8]) -> Self {
        Self(hmac::Key::new(hmac::HMAC_SHA256, key))
    }

    /// HMAC-SHA256 of `message` under this key: [`hmac_sha256`]'s bytes.
    pub fn mac(&self, message: &[u8]) -> Vec<u8> {
        hmac::sign(&self.0, message).as_ref().to_vec()
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

    #[test]
    fn sha256_hashes_its_parts_as_one_message() {
        // FIPS 180-2's two-block example, given in two parts split inside the first block.
        let message = b"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
        let (a, b) = message.split_at(10);
        assert_eq!(
            clarify_core::text::hex(&sha256(&[a, b])),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"
        );
        assert_eq!(sha256(&[message]), sha256(&[a, b]));
    }
}
