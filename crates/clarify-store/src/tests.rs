//! The store as a whole, on the memory backend: what holds whatever the backend.

use super::*;

/// Ids come from the injected generator, so tests and embedders can predict them.
#[tokio::test]
async fn ids_come_from_the_injected_generator() {
    let options = StoreOptions {
        ids: Arc::new(SequentialIds::default()),
        reaper_interval: None,
        ..StoreOptions::default()
    };
    let store = Store::open("memory:", options)
        .await
        .expect("memory store opens");
    let raw = serde_json::json!({"question": "Proceed?"});
    let request =
        clarify_core::parse_request(&raw, &clarify_core::Limits::default()).expect("valid request");
    let first = store.create("t", request.clone()).await.expect("created");
    let second = store.create("t", request).await.expect("created");
    assert_eq!(first.record.id, "r000001");
    assert_eq!(second.record.id, "r000002");
}
