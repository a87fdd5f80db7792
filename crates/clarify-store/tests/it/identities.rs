//! Chat accounts people link to themselves, on every backend: linked, read, listed per tenant,
//! relinked, removed, kept across a restart, and each change an admin event of the audit chain.

use clarify_store::{Actor, Store};

use crate::support::{Env, Kind, random_name};

conformance! {
    every: [
        a_link_is_read_listed_in_its_tenant_relinked_and_removed,
        two_accounts_linked_at_once_are_both_kept,
    ],
    durable: [a_link_survives_a_restart],
}

async fn a_link_is_read_listed_in_its_tenant_relinked_and_removed(store: Store, env: Env) {
    let account = format!("slack:{}", random_name("U"));
    let by = Actor::new("carol", "inbox").as_principal("key:carol");
    assert_eq!(store.linked_identity(&account).await.expect("read"), None);

    let link = store
        .link_identity(&account, "carol", &env.tenant, &by)
        .await
        .expect("linked");
    assert_eq!(link.name, "carol");
    assert_eq!(link.linked_at, env.now());
    let read = store.linked_identity(&account).await.expect("read");
    assert_eq!(read.as_ref(), Some(&link));
    let listed = store
        .linked_identities(Some(&env.tenant))
        .await
        .expect("listed");
    assert_eq!(listed, std::slice::from_ref(&link));
    let elsewhere = store
        .linked_identities(Some(&env.other_tenant()))
        .await
        .expect("listed");
    assert!(elsewhere.is_empty(), "another tenant's list is empty");

    // Linked again, by someone else: the newer link replaces the older.
    store
        .link_identity(&account, "dave", &env.tenant, &by)
        .await
        .expect("relinked");
    let read = store.linked_identity(&account).await.expect("read");
    assert_eq!(read.map(|l| l.name), Some("dave".to_owned()));

    // Another tenant cannot remove it; its own admin can, once.
    let admin = Actor::new("root", "api");
    let other = env.other_tenant();
    assert_eq!(
        store
            .unlink_identity(&account, &other, &admin)
            .await
            .expect("unlink"),
        None
    );
    let removed = store
        .unlink_identity(&account, &env.tenant, &admin)
        .await
        .expect("unlink");
    assert_eq!(removed.map(|l| l.name), Some("dave".to_owned()));
    assert_eq!(
        store
            .unlink_identity(&account, &env.tenant, &admin)
            .await
            .expect("unlink"),
        None
    );
    assert_eq!(store.linked_identity(&account).await.expect("read"), None);

    // PostgreSQL numbers events just after their commit: read once they are.
    store.sync_feed().await.expect("sync the feed");
    let events = store
        .audit_events(Some(&env.tenant), 0, 100)
        .await
        .expect("audit");
    let subject = format!("identity:{account}");
    let kinds: Vec<(&str, Option<&str>)> = events
        .iter()
        .filter(|e| e.subject.as_deref() == Some(subject.as_str()))
        .map(|e| (e.kind.as_str(), e.actor.as_deref()))
        .collect();
    assert_eq!(
        kinds,
        [
            ("identity.linked", Some("carol")),
            ("identity.linked", Some("carol")),
            ("identity.unlinked", Some("root")),
        ]
    );
    assert!(
        store.verify_audit().await.expect("verify").is_ok(),
        "the chain still verifies"
    );
}

async fn two_accounts_linked_at_once_are_both_kept(store: Store, env: Env) {
    // A second instance on the same database; the memory backend has only the one.
    let second = if env.kind == Kind::Memory {
        store.clone()
    } else {
        env.open().await
    };
    let (a, b) = (
        format!("discord:{}", random_name("1")),
        format!("discord:{}", random_name("2")),
    );
    let by = Actor::new("x", "inbox");
    let (one, two) = tokio::join!(
        store.link_identity(&a, "alice", &env.tenant, &by),
        second.link_identity(&b, "bob", &env.tenant, &by),
    );
    one.expect("linked");
    two.expect("linked");
    let names: Vec<String> = store
        .linked_identities(Some(&env.tenant))
        .await
        .expect("listed")
        .into_iter()
        .map(|l| l.name)
        .collect();
    assert_eq!(names.len(), 2, "{names:?}");
    assert!(names.contains(&"alice".to_owned()) && names.contains(&"bob".to_owned()));
}

async fn a_link_survives_a_restart(store: Store, env: Env) {
    let account = format!("telegram:{}", random_name("7"));
    store
        .link_identity(
            &account,
            "carol",
            &env.tenant,
            &Actor::new("carol", "inbox"),
        )
        .await
        .expect("linked");
    drop(store);
    let reopened = env.open().await;
    let read = reopened.linked_identity(&account).await.expect("read");
    assert_eq!(read.map(|l| l.name), Some("carol".to_owned()));
}
