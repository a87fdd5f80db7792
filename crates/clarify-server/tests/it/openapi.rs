//! The committed OpenAPI document matches the code.

use std::path::PathBuf;

const BLESS: &str = "CLARIFY_BLESS";

/// Fails, naming the command that refreshes it, when `api/openapi.json` differs from the code.
/// With `CLARIFY_BLESS=1` it rewrites the file instead.
#[test]
fn committed_openapi_document_is_fresh() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../api/openapi.json");
    let fresh = clarify_server::api::openapi::json();
    if std::env::var_os(BLESS).is_some() {
        std::fs::write(&path, &fresh).expect("write api/openapi.json");
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == fresh,
        "api/openapi.json is stale; regenerate it with `{BLESS}=1 cargo test -p clarify-server --test it openapi::`"
    );
}

/// Every route the contract names is in the document, with the methods it takes.
#[test]
fn the_document_names_every_contract_route() {
    let doc: serde_json::Value =
        serde_json::from_str(&clarify_server::api::openapi::json()).expect("the document is JSON");
    assert_eq!(doc["openapi"], "3.1.0");
    for (path, method) in [
        ("/v1/requests", "post"),
        ("/v1/requests", "get"),
        ("/v1/requests/{id}", "get"),
        ("/v1/requests/{id}/answer", "post"),
        ("/v1/requests/{id}/cancel", "post"),
        ("/v1/requests/{id}/wait", "get"),
        ("/v1/requests/{id}/deliveries", "get"),
        ("/v1/events", "get"),
        ("/v1/passkeys", "get"),
        ("/v1/passkeys", "post"),
        ("/v1/passkeys/registration", "post"),
        ("/v1/passkeys/{id}", "delete"),
        ("/v1/passkeys/sign-in", "post"),
        ("/v1/passkeys/sign-in/finish", "post"),
        ("/v1/requests/{id}/step-up", "post"),
        ("/v1/requests/{id}/step-up/finish", "post"),
        ("/healthz", "get"),
        ("/readyz", "get"),
        ("/metrics", "get"),
    ] {
        assert!(
            doc["paths"][path][method].is_object(),
            "{method} {path} is missing"
        );
    }
}
