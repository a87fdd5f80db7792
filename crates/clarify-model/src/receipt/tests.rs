use chrono::Utc;
use jsonwebtoken::jwk::JwkSet;
use serde_json::json;
use sha2::{Digest, Sha256};

use super::*;

fn key(byte: u8) -> ReceiptKey {
    ReceiptKey::from_seed(&[byte; 32], Utc::now(), None).expect("key")
}

fn jwks(keys: &[&ReceiptKey]) -> JwkSet {
    JwkSet {
        keys: keys.iter().map(|k| k.jwk().clone()).collect(),
    }
}

fn claims(decision: &str, arguments: &Value) -> ReceiptClaims {
    ReceiptClaims {
        iss: "http://127.0.0.1:8080".to_owned(),
        sub: "req_1".to_owned(),
        tid: "default".to_owned(),
        iat: 1_765_000_000,
        jti: "req_1@7".to_owned(),
        status: "answered".to_owned(),
        by: "key:alice".to_owned(),
        seq: 7,
        approvals: vec![ApprovalClaim {
            id: "q1".to_owned(),
            action: "transfer".to_owned(),
            decision: decision.to_owned(),
            args_sha256: args_sha256(arguments),
        }],
    }
}

/// The vector every SDK checks too: keys sorted by UTF-16 code units, numbers in their
/// shortest ECMAScript form.
#[test]
fn arguments_are_hashed_in_their_rfc_8785_canonical_form() {
    let arguments = json!({"b": 1, "a": [1.5, "x", {"d": true, "c": null}], "é": 1e21});
    let canonical = serde_json_canonicalizer::to_string(&arguments).expect("canonical");
    assert_eq!(
        canonical,
        r#"{"a":[1.5,"x",{"c":null,"d":true}],"b":1,"é":1e+21}"#
    );
    assert_eq!(
        args_sha256(&arguments),
        hex(&Sha256::digest(canonical.as_bytes()))
    );
    // Key order in the input does not matter; a value does.
    assert_eq!(
        args_sha256(&json!({"x": 1, "y": 2})),
        args_sha256(&json!({"y": 2, "x": 1}))
    );
    assert_ne!(
        args_sha256(&json!({"amount": 100})),
        args_sha256(&json!({"amount": 10000}))
    );
}

/// Signing by hand with the key kept ready gives exactly what `jsonwebtoken::encode` gives
/// (Ed25519 is deterministic), so receipts did not change when it stopped being called.
#[test]
fn a_receipt_is_byte_for_byte_what_jsonwebtoken_encodes() {
    use ed25519_dalek::pkcs8::EncodePrivateKey;
    let seed = [7u8; 32];
    let key = ReceiptKey::from_seed(&seed, Utc::now(), None).expect("key");
    let der = ed25519_dalek::SigningKey::from_bytes(&seed)
        .to_pkcs8_der()
        .expect("der");
    let mut header = jsonwebtoken::Header::new(Algorithm::EdDSA);
    header.kid = Some(key.kid().to_owned());
    for (decision, arguments) in [
        ("approve", json!({"amount": 100, "to": "bob"})),
        ("deny", json!({"note": "é \" \n"})),
    ] {
        let claims = claims(decision, &arguments);
        let expected = jsonwebtoken::encode(
            &header,
            &claims,
            &jsonwebtoken::EncodingKey::from_ed_der(der.as_bytes()),
        )
        .expect("encode");
        assert_eq!(key.sign(&claims).expect("sign"), expected);
    }
}

#[test]
fn a_signed_receipt_verifies_against_its_key_and_names_it() {
    let key = key(1);
    let arguments = json!({"amount": 100, "to": "bob"});
    let receipt = key.sign(&claims("approve", &arguments)).expect("sign");
    let header = jsonwebtoken::decode_header(&receipt).expect("header");
    assert_eq!(header.alg, Algorithm::EdDSA);
    assert_eq!(header.kid.as_deref(), Some(key.kid()));
    let read = verify(&receipt, &jwks(&[&key])).expect("verifies");
    assert_eq!(read, claims("approve", &arguments));
    read.check(Some("transfer"), Some(&json!({"to": "bob", "amount": 100})))
        .expect("the same arguments in another order match");
    // Signing is deterministic: every instance makes the same receipt.
    assert_eq!(
        receipt,
        key.sign(&claims("approve", &arguments)).expect("again")
    );
}

#[test]
fn other_arguments_another_action_or_a_denial_do_not_match() {
    let approved = claims("approve", &json!({"amount": 100}));
    assert_eq!(
        approved.check(Some("transfer"), Some(&json!({"amount": 10000}))),
        Err(Mismatch::ArgumentsDiffer {
            action: "transfer".to_owned()
        })
    );
    assert_eq!(
        approved.check(Some("delete_repo"), None),
        Err(Mismatch::NoSuchAction("delete_repo".to_owned()))
    );
    let denied = claims("deny", &json!({"amount": 100}));
    assert!(matches!(
        denied.check(Some("transfer"), Some(&json!({"amount": 100}))),
        Err(Mismatch::NotApproved { .. })
    ));
    let mut expired = approved.clone();
    expired.status = "expired".to_owned();
    assert!(matches!(
        expired.check(Some("transfer"), None),
        Err(Mismatch::NotApproved { .. })
    ));
}

#[test]
fn a_changed_payload_a_changed_signature_or_another_key_fails() {
    use base64::Engine;
    let engine = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let key = key(1);
    let receipt = key
        .sign(&claims("deny", &json!({"amount": 100})))
        .expect("sign");
    let parts: Vec<&str> = receipt.split('.').collect();
    // The decision changed to approve, the signature kept.
    let forged = serde_json::to_vec(&claims("approve", &json!({"amount": 100}))).expect("json");
    let tampered = format!("{}.{}.{}", parts[0], engine.encode(forged), parts[2]);
    assert_eq!(
        verify(&tampered, &jwks(&[&key])),
        Err(ReceiptError::BadSignature)
    );
    // One byte of the signature flipped.
    let mut signature = engine.decode(parts[2]).expect("signature");
    signature[0] ^= 1;
    let flipped = format!("{}.{}.{}", parts[0], parts[1], engine.encode(signature));
    assert_eq!(
        verify(&flipped, &jwks(&[&key])),
        Err(ReceiptError::BadSignature)
    );
    // Another server's keys do not hold this one.
    let other = self::key(2);
    assert_eq!(
        verify(&receipt, &jwks(&[&other])),
        Err(ReceiptError::UnknownKey(key.kid().to_owned()))
    );
    // Another key under this kid is a bad signature, not a match.
    let mut impostor = other.jwk().clone();
    impostor.common.key_id = Some(key.kid().to_owned());
    assert_eq!(
        verify(
            &receipt,
            &JwkSet {
                keys: vec![impostor]
            }
        ),
        Err(ReceiptError::BadSignature)
    );
    assert!(matches!(
        verify("not a receipt", &jwks(&[&key])),
        Err(ReceiptError::Malformed(_))
    ));
}
