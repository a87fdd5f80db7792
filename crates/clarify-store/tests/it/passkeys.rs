//! Passkeys and step-up on every backend: a passkey is registered once per credential, listed
//! for its owner only, found by its credential id, updated on use, removed only by its owner,
//! kept across a restart, each change an admin event; and with `step_up`, a high-risk request
//! takes an answer only from an actor confirmed for that request, or an admin key, on every
//! path.

use clarify_core::Risk;
use clarify_store::{Actor, ResolveError, StepUp, Store, StoredPasskey};
use serde_json::json;

use crate::support::{Env, random_name, request};

conformance! {
    every: [
        a_passkey_is_registered_once_listed_for_its_owner_used_and_removed_by_them,
        step_up_refuses_a_high_risk_answer_without_a_confirmation_for_it,
    ],
    durable: [a_passkey_survives_a_restart],
}

fn passkey(env: &Env, name: &str) -> StoredPasskey {
    StoredPasskey {
        id: random_name("pk"),
        tenant: env.tenant.clone(),
        name: name.to_owned(),
        principal: format!("key:{name}"),
        holder: random_name("key"),
        label: "work laptop".to_owned(),
        credential_id: random_name("cred"),
        credential: json!({"cred": {"counter": 0}}),
        created_at: env.now(),
        last_used_at: None,
    }
}

async fn a_passkey_is_registered_once_listed_for_its_owner_used_and_removed_by_them(
    store: Store,
    env: Env,
) {
    let by = Actor::new("carol", "inbox").as_principal("key:carol");
    let mine = passkey(&env, "carol");
    assert!(store.add_passkey(&mine, &by).await.expect("added"));

    // The same credential again, for anyone, is refused and changes nothing.
    let again = StoredPasskey {
        name: "mallory".to_owned(),
        id: random_name("pk"),
        ..mine.clone()
    };
    assert!(!store.add_passkey(&again, &by).await.expect("refused"));
    let found = store
        .passkey_by_credential(&mine.credential_id)
        .await
        .expect("read");
    assert_eq!(found.as_ref(), Some(&mine));

    let theirs = passkey(&env, "dave");
    assert!(store.add_passkey(&theirs, &by).await.expect("added"));
    let listed = store.passkeys_of(&env.tenant, "carol").await.expect("list");
    assert_eq!(listed, std::slice::from_ref(&mine));
    let elsewhere = store
        .passkeys_of(&env.other_tenant(), "carol")
        .await
        .expect("list");
    assert!(elsewhere.is_empty(), "another tenant's carol has none");

    // A use updates the credential and when it was last used.
    store
        .passkey_used(&mine.credential_id, json!({"cred": {"counter": 7}}))
        .await
        .expect("used");
    let used = store
        .passkey_by_credential(&mine.credential_id)
        .await
        .expect("read")
        .expect("still there");
    assert_eq!(used.credential["cred"]["counter"], 7);
    assert_eq!(used.last_used_at, Some(env.now()));

    // Only its owner removes it, once.
    assert_eq!(
        store
            .remove_passkey(&env.tenant, "dave", &mine.id, &by)
            .await
            .expect("remove"),
        None
    );
    let removed = store
        .remove_passkey(&env.tenant, "carol", &mine.id, &by)
        .await
        .expect("remove");
    assert_eq!(removed.map(|p| p.id), Some(mine.id.clone()));
    assert_eq!(
        store
            .remove_passkey(&env.tenant, "carol", &mine.id, &by)
            .await
            .expect("remove"),
        None
    );
    assert_eq!(
        store
            .passkey_by_credential(&mine.credential_id)
            .await
            .expect("read"),
        None
    );

    store.sync_feed().await.expect("sync the feed");
    let events = store
        .audit_events(Some(&env.tenant), 0, 10_000)
        .await
        .expect("audit");
    let subject = format!("passkey:{}", mine.id);
    let kinds: Vec<&str> = events
        .iter()
        .filter(|e| e.subject.as_deref() == Some(subject.as_str()))
        .map(|e| e.kind.as_str())
        .collect();
    assert_eq!(kinds, ["passkey.registered", "passkey.removed"]);
    assert!(
        store.verify_audit().await.expect("verify").is_ok(),
        "the chain still verifies"
    );
}

async fn step_up_refuses_a_high_risk_answer_without_a_confirmation_for_it(_: Store, env: Env) {
    let store = env.open_with(|o| o.step_up = Some(Risk::High)).await;
    let ask = |risk: &str| {
        request(json!({"question": "Wire 40,000 EUR?", "kind": "approval",
                       "action": {"name": "wire", "arguments": {}}, "risk": risk}))
    };
    let high = store
        .create(&env.tenant, ask("high"))
        .await
        .expect("created")
        .record;
    let other = store
        .create(&env.tenant, ask("high"))
        .await
        .expect("created")
        .record;
    assert!(store.needs_step_up(&high.request));
    let approve = json!({"decision": "approve"});
    for channel in ["api", "inbox", "slack", "email", "link", "personal_link"] {
        let refused = store
            .answer(
                &env.tenant,
                &high.id,
                &approve,
                &Actor::new("alice", channel),
            )
            .await;
        assert!(
            matches!(refused, Err(ResolveError::StepUpRequired)),
            "{channel}: {refused:?}"
        );
    }
    let anonymous = Actor {
        name: None,
        channel: "link".to_owned(),
        ..Actor::default()
    };
    let refused = store
        .answer(&env.tenant, &high.id, &approve, &anonymous)
        .await;
    assert!(
        matches!(refused, Err(ResolveError::StepUpRequired)),
        "{refused:?}"
    );
    let skipped = store
        .skip(&env.tenant, &high.id, &Actor::new("alice", "api"))
        .await;
    assert!(
        matches!(skipped, Err(ResolveError::StepUpRequired)),
        "{skipped:?}"
    );

    // A confirmation for another request does not do.
    let elsewhere = Actor::new("alice", "inbox").stepped_up(StepUp::Confirmed {
        request_id: other.id.clone(),
    });
    let refused = store
        .answer(&env.tenant, &high.id, &approve, &elsewhere)
        .await;
    assert!(
        matches!(refused, Err(ResolveError::StepUpRequired)),
        "{refused:?}"
    );

    // One for this request does, and so does an admin key.
    let confirmed = Actor::new("alice", "inbox").stepped_up(StepUp::Confirmed {
        request_id: high.id.clone(),
    });
    let done = store
        .answer(&env.tenant, &high.id, &approve, &confirmed)
        .await
        .expect("answered");
    assert!(done.status.is_resolved());
    let admin = Actor::new("root", "api").stepped_up(StepUp::AdminKey);
    let done = store
        .answer(&env.tenant, &other.id, &approve, &admin)
        .await
        .expect("answered");
    assert!(done.status.is_resolved());

    // Normal and low risk need nothing; without step-up, high risk needs nothing either.
    for risk in ["normal", "low"] {
        let r = store
            .create(&env.tenant, ask(risk))
            .await
            .expect("created")
            .record;
        assert!(!store.needs_step_up(&r.request));
        store
            .answer(&env.tenant, &r.id, &approve, &Actor::new("alice", "slack"))
            .await
            .expect("answered");
    }
    let plain = env.open().await;
    let r = plain
        .create(&env.tenant, ask("high"))
        .await
        .expect("created")
        .record;
    assert_eq!(r.request.risk, Risk::High);
    plain
        .answer(&env.tenant, &r.id, &approve, &Actor::new("alice", "slack"))
        .await
        .expect("answered");
}

async fn a_passkey_survives_a_restart(store: Store, env: Env) {
    let by = Actor::new("carol", "inbox");
    let mine = passkey(&env, "carol");
    assert!(store.add_passkey(&mine, &by).await.expect("added"));
    drop(store);
    let reopened = env.open().await;
    assert_eq!(
        reopened
            .passkey_by_credential(&mine.credential_id)
            .await
            .expect("read"),
        Some(mine)
    );
}
