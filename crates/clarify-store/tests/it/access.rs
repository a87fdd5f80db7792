//! Keys, tokens, server secrets and webhook deliveries, run against every backend like the
//! conformance suite.
//!
//! PostgreSQL cases share one database (see `support`), which also holds keys, secrets and
//! deliveries left by earlier runs: key and secret names are random, and deliveries are looked
//! up by this test's own request ids. Claiming is global (a worker claims whatever is due), so
//! every case that queues or claims deliveries takes [`Env::exclusive_clock`], as does every case
//! that moves its clock: no other case leases its deliveries meanwhile, and its claims see only
//! its own deliveries and leftovers, which it skips. Each case settles its own deliveries at the
//! end, so they do not linger as leftovers for later runs.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, TimeDelta, Utc};
use clarify_core::Status;
use clarify_store::{
    AfterAttempt, ApiKey, Attempt, Delivery, DeliveryStatus, KeyError, LOGIN_TTL, ManualClock,
    RequestRecord, ResolveError, Role, Store, TokenKind,
};
use serde_json::json;

use crate::support::{
    DAY, Env, SHORT, TempDir, alice, bob, options, random_name, request, start_time, yes_no,
};

conformance! {
    every: [
        a_new_key_authenticates_with_its_token,
        wrong_and_malformed_tokens_do_not_authenticate,
        active_key_names_are_unique_until_revoked,
        invalid_names_are_refused,
        an_admin_key_from_a_file_is_stored_once,
        keys_lists_revoked_keys_too,
        login_token_redeems_once,
        concurrent_login_redemptions_have_one_winner,
        session_token_lasts_until_revoked,
        once_tokens_redeem_once_for_their_holder,
        expired_tokens_do_not_redeem,
        tokens_of_a_revoked_key_do_not_redeem,
        secrets_are_created_once,
        resolving_queues_one_delivery,
        expiry_queues_a_delivery,
        claimed_deliveries_are_leased,
        attempts_move_a_delivery_on,
        concurrent_claims_never_share_a_delivery,
    ],
    durable: [
        secrets_are_shared_by_instances,
        instances_ensuring_one_admin_key_store_it_once,
        cursors_move_and_survive_reopening,
        deliveries_survive_reopening,
    ],
}

/// No deliveries.
const NONE: [Delivery; 0] = [];

/// How long claims in these tests lease a delivery.
const LEASE: i64 = 60;

// ---------------------------------------------------------------------------------------------
// Keys

async fn a_new_key_authenticates_with_its_token(store: Store, env: Env) {
    let name = random_name("k");
    let created = store
        .create_key(
            &name,
            Role::Agent,
            &env.tenant,
            &clarify_store::Actor::system(),
        )
        .await
        .expect("create key");
    let key = &created.key;
    assert_eq!(key.name, name);
    assert_eq!(key.role, Role::Agent);
    assert_eq!(key.tenant, env.tenant);
    assert_eq!(key.created_at, env.now());
    assert_eq!(key.revoked_at, None);
    assert!(
        created.token.starts_with(&format!("ck_{}_", key.id)),
        "the token names its key: {}",
        created.token
    );

    let found = store.authenticate(&created.token).await.expect("auth");
    assert_eq!(found.as_ref(), Some(key));
    assert_eq!(store.key(&key.id).await.expect("key").as_ref(), Some(key));
    assert!(store.has_keys().await.expect("has keys"));

    let other = store
        .create_key(
            &random_name("k"),
            Role::Responder,
            &env.tenant,
            &clarify_store::Actor::system(),
        )
        .await
        .expect("create key");
    assert_ne!(other.key.id, key.id);
    assert_ne!(other.token, created.token);
    let found = store.authenticate(&other.token).await.expect("auth");
    assert_eq!(found.map(|k| k.role), Some(Role::Responder));
}

/// The `key.created` events of the key `id`.
async fn created_events(store: &Store, id: &str) -> usize {
    store.sync_feed().await.expect("sync the feed");
    let subject = format!("key:{id}");
    store
        .audit_events(Some("default"), 0, usize::MAX)
        .await
        .expect("audit")
        .iter()
        .filter(|e| e.kind == "key.created" && e.subject.as_deref() == Some(subject.as_str()))
        .count()
}

async fn an_admin_key_from_a_file_is_stored_once(store: Store, _env: Env) {
    let token = clarify_store::generate_key();
    let racing: Vec<_> = (0..8)
        .map(|_| {
            let (store, token) = (store.clone(), token.clone());
            tokio::spawn(async move { store.ensure_admin_key(&token).await })
        })
        .collect();
    let mut created = 0;
    for task in racing {
        match task.await.expect("task").expect("ensured") {
            clarify_store::Ensured::Created(_) => created += 1,
            clarify_store::Ensured::Present(_) => {}
            other => panic!("an active key: {other:?}"),
        }
    }
    assert_eq!(created, 1, "stored by exactly one of the racing starts");
    let key = store
        .authenticate(&token)
        .await
        .expect("auth")
        .expect("the key from the file authenticates");
    assert_eq!(key.role, Role::Admin);
    assert_eq!(key.tenant, "default");
    assert!(
        key.name == "admin" || key.name == format!("admin-{}", key.id),
        "{key:?}"
    );
    assert_eq!(
        created_events(&store, &key.id).await,
        1,
        "one event in the chain"
    );

    // A later start finds it; once revoked it stays revoked.
    assert_eq!(
        store.ensure_admin_key(&token).await.expect("ensured"),
        clarify_store::Ensured::Present(key.clone())
    );
    store
        .revoke_key(&key.name, &clarify_store::Actor::system())
        .await
        .expect("revoke");
    assert!(matches!(
        store.ensure_admin_key(&token).await.expect("ensured"),
        clarify_store::Ensured::Revoked(_)
    ));
    assert_eq!(store.authenticate(&token).await.expect("auth"), None);
    assert_eq!(created_events(&store, &key.id).await, 1);

    // A key of another role, a secret that differs, a token of another shape: refused.
    let agent = store
        .create_key(
            &random_name("k"),
            Role::Agent,
            "default",
            &clarify_store::Actor::system(),
        )
        .await
        .expect("create key");
    assert!(matches!(
        store.ensure_admin_key(&agent.token).await,
        Err(clarify_store::AdminKeyError::NotAdmin {
            role: Role::Agent,
            ..
        })
    ));
    let mut forged = agent.token.clone();
    let last = forged.pop().expect("non-empty");
    forged.push(if last == 'a' { 'b' } else { 'a' });
    assert!(matches!(
        store.ensure_admin_key(&forged).await,
        Err(clarify_store::AdminKeyError::IdTaken(id)) if id == agent.key.id
    ));
    for bad in ["", "ck_short_x", &format!("{token} "), "not a key"] {
        assert!(
            matches!(
                store.ensure_admin_key(bad).await,
                Err(clarify_store::AdminKeyError::Malformed)
            ),
            "{bad:?}"
        );
    }
}

async fn instances_ensuring_one_admin_key_store_it_once(store: Store, env: Env) {
    let second = env.open().await;
    let token = clarify_store::generate_key();
    let racing: Vec<_> = (0..10)
        .map(|i| {
            let store = if i % 2 == 0 {
                store.clone()
            } else {
                second.clone()
            };
            let token = token.clone();
            tokio::spawn(async move { store.ensure_admin_key(&token).await })
        })
        .collect();
    let mut created = 0;
    for task in racing {
        if let clarify_store::Ensured::Created(_) = task.await.expect("task").expect("ensured") {
            created += 1;
        }
    }
    assert_eq!(created, 1, "one instance stores it");
    let key = second
        .authenticate(&token)
        .await
        .expect("auth")
        .expect("every instance knows it");
    assert_eq!(key.role, Role::Admin);
    assert_eq!(created_events(&store, &key.id).await, 1);
    drop((store, second));
}

async fn wrong_and_malformed_tokens_do_not_authenticate(store: Store, env: Env) {
    let created = store
        .create_key(
            &random_name("k"),
            Role::Admin,
            &env.tenant,
            &clarify_store::Actor::system(),
        )
        .await
        .expect("create key");
    let id = &created.key.id;
    let secret = created
        .token
        .rsplit_once('_')
        .map(|(_, s)| s.to_owned())
        .expect("the token has a secret part");
    // Same id, a secret of the same length that differs in its last character only.
    let mut wrong = secret.clone();
    let last = wrong.pop().expect("non-empty secret");
    wrong.push(if last == 'a' { 'b' } else { 'a' });
    let other = store
        .create_key(
            &random_name("k"),
            Role::Admin,
            &env.tenant,
            &clarify_store::Actor::system(),
        )
        .await
        .expect("create key");
    let other_secret = other
        .token
        .rsplit_once('_')
        .map(|(_, s)| s.to_owned())
        .expect("the token has a secret part");

    let refused = [
        format!("ck_{id}_{wrong}"),
        format!("ck_{id}_{other_secret}"),
        format!("ck_{id}_{secret}x"),
        format!("ck_{id}_"),
        format!("ck_{}_{secret}", other.key.id),
        format!("ck_{}_{secret}", "0".repeat(16)),
        format!("Bearer {}", created.token),
        created.token.to_uppercase(),
        created.token[1..].to_owned(),
        "ck_short_x".to_owned(),
        "ct_notakey".to_owned(),
        String::new(),
        id.clone(),
    ];
    for token in &refused {
        let found = store.authenticate(token).await.expect("auth");
        assert_eq!(found, None, "{token:?} must not authenticate");
    }
    let found = store.authenticate(&created.token).await.expect("auth");
    assert_eq!(
        found.map(|k| k.id),
        Some(id.clone()),
        "the right one still does"
    );
}

async fn active_key_names_are_unique_until_revoked(store: Store, env: Env) {
    let _clock = env.exclusive_clock().await;
    let name = random_name("k");
    let first = store
        .create_key(
            &name,
            Role::Agent,
            &env.tenant,
            &clarify_store::Actor::system(),
        )
        .await
        .expect("create key");
    let err = store
        .create_key(
            &name,
            Role::Admin,
            &env.other_tenant(),
            &clarify_store::Actor::system(),
        )
        .await
        .expect_err("the name is taken");
    assert!(
        matches!(&err, KeyError::NameTaken(n) if *n == name),
        "{err}"
    );

    env.clock.advance(TimeDelta::milliseconds(1_500));
    let revoked = store
        .revoke_key(&name, &clarify_store::Actor::system())
        .await
        .expect("revoke");
    assert_eq!(revoked.id, first.key.id);
    assert_eq!(revoked.revoked_at, Some(env.now()));
    assert_eq!(
        store.authenticate(&first.token).await.expect("auth"),
        None,
        "a revoked key stops working at once"
    );
    assert_eq!(store.key(&first.key.id).await.expect("key"), None);
    let err = store
        .revoke_key(&name, &clarify_store::Actor::system())
        .await
        .expect_err("already revoked");
    assert!(matches!(&err, KeyError::NotFound(n) if *n == name), "{err}");
    let unknown = random_name("k");
    let err = store
        .revoke_key(&unknown, &clarify_store::Actor::system())
        .await
        .expect_err("never existed");
    assert!(
        matches!(&err, KeyError::NotFound(n) if *n == unknown),
        "{err}"
    );

    let second = store
        .create_key(
            &name,
            Role::Responder,
            &env.tenant,
            &clarify_store::Actor::system(),
        )
        .await
        .expect("a revoked name may be reused");
    assert_ne!(second.key.id, first.key.id);
    let found = store.authenticate(&second.token).await.expect("auth");
    assert_eq!(found.as_ref(), Some(&second.key));
    assert_eq!(store.authenticate(&first.token).await.expect("auth"), None);
    let err = store
        .create_key(
            &name,
            Role::Agent,
            &env.tenant,
            &clarify_store::Actor::system(),
        )
        .await
        .expect_err("taken again");
    assert!(matches!(err, KeyError::NameTaken(_)), "{err}");
}

async fn invalid_names_are_refused(store: Store, env: Env) {
    let long = "k".repeat(65);
    for name in [
        "",
        "has space",
        "tab\there",
        "slash/no",
        "ünïcode",
        long.as_str(),
    ] {
        let err = store
            .create_key(
                name,
                Role::Agent,
                &env.tenant,
                &clarify_store::Actor::system(),
            )
            .await
            .expect_err("invalid key name");
        assert!(
            matches!(&err, KeyError::InvalidName { what: "key name", value } if value == name),
            "{name:?}: {err}"
        );
    }
    for tenant in ["", "a b", long.as_str()] {
        let err = store
            .create_key(
                &random_name("k"),
                Role::Agent,
                tenant,
                &clarify_store::Actor::system(),
            )
            .await
            .expect_err("invalid tenant");
        assert!(
            matches!(&err, KeyError::InvalidName { what: "tenant", value } if value == tenant),
            "{tenant:?}: {err}"
        );
    }
    // Only a private store can tell: in a shared one another test may create a key meanwhile.
    if !env.shared() {
        assert!(
            !store.has_keys().await.expect("has keys"),
            "nothing was stored"
        );
    }
    // 64 characters, every allowed kind among them; random, for a shared database.
    let name = format!("{}.@-_", &random_name("k").repeat(4)[..60]);
    assert_eq!(name.len(), 64);
    let created = store
        .create_key(
            &name,
            Role::Agent,
            &env.tenant,
            &clarify_store::Actor::system(),
        )
        .await
        .expect("64 allowed characters");
    assert_eq!(created.key.name, name);
}

async fn keys_lists_revoked_keys_too(store: Store, env: Env) {
    let _clock = env.exclusive_clock().await;
    if !env.shared() {
        assert!(!store.has_keys().await.expect("has keys"), "a new store");
        assert_eq!(store.keys().await.expect("keys"), Vec::<ApiKey>::new());
    }
    let (a, b) = (random_name("k"), random_name("k"));
    let first = store
        .create_key(
            &a,
            Role::Agent,
            &env.tenant,
            &clarify_store::Actor::system(),
        )
        .await
        .expect("create key");
    assert!(store.has_keys().await.expect("has keys"));
    env.clock.advance(TimeDelta::seconds(1));
    let second = store
        .create_key(
            &b,
            Role::Responder,
            &env.tenant,
            &clarify_store::Actor::system(),
        )
        .await
        .expect("create key");
    env.clock.advance(TimeDelta::seconds(1));
    let revoked = store
        .revoke_key(&a, &clarify_store::Actor::system())
        .await
        .expect("revoke");

    let own: Vec<ApiKey> = store
        .keys()
        .await
        .expect("keys")
        .into_iter()
        .filter(|k| k.name == a || k.name == b)
        .collect();
    assert_eq!(
        own,
        vec![revoked.clone(), second.key.clone()],
        "oldest first"
    );
    assert_eq!(revoked.revoked_at, Some(env.now()));
    assert_eq!(
        ApiKey {
            revoked_at: None,
            ..revoked
        },
        first.key
    );
    let again = store
        .revoke_key(&b, &clarify_store::Actor::system())
        .await
        .expect("revoke");
    assert!(
        store.has_keys().await.expect("has keys"),
        "revoked keys still count: a store once keyed stays keyed"
    );
    let own: Vec<ApiKey> = store
        .keys()
        .await
        .expect("keys")
        .into_iter()
        .filter(|k| k.name == a || k.name == b)
        .collect();
    assert_eq!(own.len(), 2);
    assert!(own.iter().all(|k| k.revoked_at.is_some()), "{own:?}");
    assert_eq!(own[1], again);
}

// ---------------------------------------------------------------------------------------------
// Tokens

async fn login_token_redeems_once(store: Store, env: Env) {
    let key = new_key(&store, &env, Role::Responder).await;
    let token = store
        .issue_token(TokenKind::Login, &key.id, LOGIN_TTL)
        .await
        .expect("issue");
    assert!(token.starts_with("ct_"), "{token}");
    assert_eq!(
        store
            .redeem_token(TokenKind::Session, &token)
            .await
            .expect("redeem"),
        None,
        "a login token is no session"
    );
    let redeemed = store
        .redeem_token(TokenKind::Login, &token)
        .await
        .expect("redeem");
    assert_eq!(redeemed.as_ref(), Some(&key), "the first redemption works");
    for _ in 0..2 {
        let again = store
            .redeem_token(TokenKind::Login, &token)
            .await
            .expect("redeem");
        assert_eq!(again, None, "a login token works once");
    }
    for bad in ["", "ct_", "ct_unknown", "ck_whatever", &token[1..]] {
        let found = store
            .redeem_token(TokenKind::Login, bad)
            .await
            .expect("redeem");
        assert_eq!(found, None, "{bad:?}");
    }
}

async fn concurrent_login_redemptions_have_one_winner(store: Store, env: Env) {
    let key = new_key(&store, &env, Role::Responder).await;
    for round in 0..3 {
        let token = store
            .issue_token(TokenKind::Login, &key.id, LOGIN_TTL)
            .await
            .expect("issue");
        let tasks: Vec<_> = (0..20)
            .map(|_| {
                let (store, token) = (store.clone(), token.clone());
                tokio::spawn(async move { store.redeem_token(TokenKind::Login, &token).await })
            })
            .collect();
        let mut winners = Vec::new();
        for task in tasks {
            if let Some(found) = task.await.expect("task").expect("redeem") {
                winners.push(found);
            }
        }
        assert_eq!(
            winners,
            vec![key.clone()],
            "round {round}: exactly one winner"
        );
    }
}

async fn once_tokens_redeem_once_for_their_holder(store: Store, env: Env) {
    let _exclusive = env.exclusive_clock().await;
    let holder = random_name("stdio");
    let token = store
        .issue_once(&holder, TimeDelta::minutes(10))
        .await
        .expect("issue");
    assert_eq!(
        store
            .redeem_token(TokenKind::Login, &token)
            .await
            .expect("redeem"),
        None,
        "a once token is no login link"
    );
    assert_eq!(
        store.redeem_once(&token).await.expect("redeem"),
        Some(holder.clone()),
        "the first redemption names the holder"
    );
    assert_eq!(
        store.redeem_once(&token).await.expect("redeem"),
        None,
        "a once token works once"
    );
    for bad in ["", "ct_", "ct_unknown", "ck_whatever", &token[1..]] {
        assert_eq!(
            store.redeem_once(bad).await.expect("redeem"),
            None,
            "{bad:?}"
        );
    }
    let late = store
        .issue_once(&holder, TimeDelta::minutes(10))
        .await
        .expect("issue");
    env.clock.advance(TimeDelta::minutes(11));
    assert_eq!(
        store.redeem_once(&late).await.expect("redeem"),
        None,
        "an expired once token does not redeem"
    );
}

async fn session_token_lasts_until_revoked(store: Store, env: Env) {
    let key = new_key(&store, &env, Role::Agent).await;
    let token = store
        .issue_token(TokenKind::Session, &key.id, TimeDelta::hours(12))
        .await
        .expect("issue");
    let other = store
        .issue_token(TokenKind::Session, &key.id, TimeDelta::hours(12))
        .await
        .expect("issue");
    assert_ne!(token, other);
    for _ in 0..3 {
        let found = store
            .redeem_token(TokenKind::Session, &token)
            .await
            .expect("redeem");
        assert_eq!(found.as_ref(), Some(&key), "a session is not used up");
    }
    assert_eq!(
        store
            .redeem_token(TokenKind::Login, &token)
            .await
            .expect("redeem"),
        None,
        "a session token is no login link"
    );
    assert!(
        store
            .redeem_token(TokenKind::Session, &token)
            .await
            .expect("redeem")
            .is_some(),
        "trying it as a login link did not use it up"
    );

    store.revoke_token(&token).await.expect("logout");
    assert_eq!(
        store
            .redeem_token(TokenKind::Session, &token)
            .await
            .expect("redeem"),
        None,
        "logged out"
    );
    store.revoke_token(&token).await.expect("logging out twice");
    store
        .revoke_token("ct_never_issued")
        .await
        .expect("unknown tokens are ignored");
    let found = store
        .redeem_token(TokenKind::Session, &other)
        .await
        .expect("redeem");
    assert_eq!(found, Some(key), "other sessions go on");
}

async fn expired_tokens_do_not_redeem(store: Store, env: Env) {
    let _clock = env.exclusive_clock().await;
    let key = new_key(&store, &env, Role::Responder).await;
    let ttl = TimeDelta::seconds(60);
    let login = store
        .issue_token(TokenKind::Login, &key.id, ttl)
        .await
        .expect("issue");
    let session = store
        .issue_token(TokenKind::Session, &key.id, ttl)
        .await
        .expect("issue");
    let early_login = store
        .issue_token(TokenKind::Login, &key.id, ttl)
        .await
        .expect("issue");

    env.clock.advance(ttl - TimeDelta::seconds(1));
    let found = store
        .redeem_token(TokenKind::Session, &session)
        .await
        .expect("redeem");
    assert_eq!(found.as_ref(), Some(&key), "valid until its time is up");
    let found = store
        .redeem_token(TokenKind::Login, &early_login)
        .await
        .expect("redeem");
    assert_eq!(found.as_ref(), Some(&key), "valid until its time is up");

    env.clock.advance(TimeDelta::seconds(1));
    for (kind, token) in [(TokenKind::Login, &login), (TokenKind::Session, &session)] {
        let found = store.redeem_token(kind, token).await.expect("redeem");
        assert_eq!(found, None, "{kind:?} token at its expiry");
    }
    // Issuing sweeps expired tokens; neither the sweep nor the new token revives the old ones.
    let fresh = store
        .issue_token(TokenKind::Session, &key.id, ttl)
        .await
        .expect("issue");
    env.clock.advance(TimeDelta::seconds(30));
    for (kind, token) in [(TokenKind::Login, &login), (TokenKind::Session, &session)] {
        let found = store.redeem_token(kind, token).await.expect("redeem");
        assert_eq!(found, None, "{kind:?} token after its expiry");
    }
    let found = store
        .redeem_token(TokenKind::Session, &fresh)
        .await
        .expect("redeem");
    assert_eq!(found, Some(key));
}

async fn tokens_of_a_revoked_key_do_not_redeem(store: Store, env: Env) {
    let key = new_key(&store, &env, Role::Responder).await;
    let kept = new_key(&store, &env, Role::Responder).await;
    let login = store
        .issue_token(TokenKind::Login, &key.id, LOGIN_TTL)
        .await
        .expect("issue");
    let session = store
        .issue_token(TokenKind::Session, &key.id, LOGIN_TTL)
        .await
        .expect("issue");
    let other = store
        .issue_token(TokenKind::Session, &kept.id, LOGIN_TTL)
        .await
        .expect("issue");

    store
        .revoke_key(&key.name, &clarify_store::Actor::system())
        .await
        .expect("revoke");
    for (kind, token) in [(TokenKind::Login, &login), (TokenKind::Session, &session)] {
        let found = store.redeem_token(kind, token).await.expect("redeem");
        assert_eq!(found, None, "{kind:?} token of a revoked key");
    }
    let late = store
        .issue_token(TokenKind::Session, &key.id, LOGIN_TTL)
        .await
        .expect("issue");
    let found = store
        .redeem_token(TokenKind::Session, &late)
        .await
        .expect("redeem");
    assert_eq!(found, None, "issued after the revocation");
    let found = store
        .redeem_token(TokenKind::Session, &other)
        .await
        .expect("redeem");
    assert_eq!(found, Some(kept), "another key's session goes on");
}

// ---------------------------------------------------------------------------------------------
// Server secrets

async fn secrets_are_created_once(store: Store, _env: Env) {
    let name = random_name("secret");
    let first = store.secret(&name).await.expect("secret");
    assert_eq!(first.len(), 32);
    assert_ne!(first, vec![0; 32]);
    assert_eq!(store.secret(&name).await.expect("secret"), first);
    let other = store.secret(&random_name("secret")).await.expect("secret");
    assert_ne!(other, first, "each name has its own secret");

    let racing = random_name("secret");
    let tasks: Vec<_> = (0..10)
        .map(|_| {
            let (store, name) = (store.clone(), racing.clone());
            tokio::spawn(async move { store.secret(&name).await })
        })
        .collect();
    let mut seen = HashSet::new();
    for task in tasks {
        seen.insert(task.await.expect("task").expect("secret"));
    }
    assert_eq!(seen.len(), 1, "racing callers agree");
}

/// A channel's place in a platform's feed: unset at first, then whatever was last set (also
/// backwards: the channel decides), seen by a second instance and after a restart.
async fn cursors_move_and_survive_reopening(store: Store, env: Env) {
    let name = random_name("telegram-offset");
    assert_eq!(store.cursor(&name).await.expect("cursor"), None);
    store.set_cursor(&name, 41).await.expect("set");
    store.set_cursor(&name, 42).await.expect("set");
    let other = random_name("telegram-offset");
    store.set_cursor(&other, i64::MAX).await.expect("set");
    assert_eq!(store.cursor(&name).await.expect("cursor"), Some(42));
    drop(store);
    let again = env.open().await;
    assert_eq!(again.cursor(&name).await.expect("cursor"), Some(42));
    assert_eq!(again.cursor(&other).await.expect("cursor"), Some(i64::MAX));
}

async fn secrets_are_shared_by_instances(store: Store, env: Env) {
    let name = random_name("secret");
    let first = store.secret(&name).await.expect("secret");
    let second = env.open().await;
    assert_eq!(second.secret(&name).await.expect("secret"), first);

    // Two instances creating the same secret at once still end up with one.
    let racing = random_name("secret");
    let tasks: Vec<_> = (0..10)
        .map(|i| {
            let store = if i % 2 == 0 {
                store.clone()
            } else {
                second.clone()
            };
            let name = racing.clone();
            tokio::spawn(async move { store.secret(&name).await })
        })
        .collect();
    let mut seen = HashSet::new();
    for task in tasks {
        seen.insert(task.await.expect("task").expect("secret"));
    }
    assert_eq!(seen.len(), 1, "racing instances agree");

    drop((store, second));
    let reopened = env.open().await;
    assert_eq!(reopened.secret(&name).await.expect("secret"), first);
}

// ---------------------------------------------------------------------------------------------
// Webhook deliveries

async fn resolving_queues_one_delivery(store: Store, env: Env) {
    let _clock = env.exclusive_clock().await;
    let t = &env.tenant;
    let answered = hooked(&store, &env, "answered").await;
    let cancelled = hooked(&store, &env, "cancelled").await;
    let skipped = hooked(&store, &env, "skipped").await;
    let plain = store
        .create(t, yes_no("No hook?"))
        .await
        .expect("create")
        .record;
    for r in [&answered, &cancelled, &skipped, &plain] {
        assert_eq!(
            own_deliveries(&store, t, &r.id).await,
            NONE,
            "nothing while pending"
        );
    }

    env.clock.advance(TimeDelta::seconds(3));
    let answered = store
        .answer(t, &answered.id, &json!({"option": "yes"}), &alice())
        .await
        .expect("answer");
    let cancelled = store
        .cancel(t, &cancelled.id, &bob())
        .await
        .expect("cancel");
    let skipped = store.skip(t, &skipped.id, &alice()).await.expect("skip");
    store
        .answer(t, &plain.id, &json!({"option": "no"}), &alice())
        .await
        .expect("answer");

    for record in [&answered, &cancelled, &skipped] {
        let found = own_deliveries(&store, t, &record.id).await;
        assert_eq!(found, [queued(&found, record)], "{}", record.status);
    }
    assert_eq!(
        own_deliveries(&store, t, &plain.id).await,
        NONE,
        "no callback URL, no delivery"
    );
    assert_eq!(
        store
            .deliveries(&env.other_tenant(), &answered.id)
            .await
            .expect("deliveries"),
        NONE,
        "another tenant sees none"
    );

    // A resolution that loses queues nothing more.
    let err = store
        .cancel(t, &answered.id, &alice())
        .await
        .expect_err("already answered");
    assert!(matches!(err, ResolveError::AlreadyResolved(_)), "{err}");
    let err = store
        .answer(t, &cancelled.id, &json!({"option": "yes"}), &alice())
        .await
        .expect_err("already cancelled");
    assert!(matches!(err, ResolveError::AlreadyResolved(_)), "{err}");
    for record in [&answered, &cancelled] {
        assert_eq!(own_deliveries(&store, t, &record.id).await.len(), 1);
    }
    settle(&store, t, &[&answered, &cancelled, &skipped]).await;
}

async fn expiry_queues_a_delivery(store: Store, env: Env) {
    let _clock = env.exclusive_clock().await;
    let t = &env.tenant;
    let short = |url: &str| {
        request(json!({
            "question": "Soon?", "choices": ["yes", "no"],
            "timeout_seconds": SHORT, "callback_url": url,
        }))
    };
    let reaped = store
        .create(t, short("https://example.com/reaped"))
        .await
        .expect("create")
        .record;
    let late = store
        .create(t, short("https://example.com/late"))
        .await
        .expect("create")
        .record;
    let quiet = request(json!({"question": "Quiet?", "timeout_seconds": SHORT}));
    let quiet = store.create(t, quiet).await.expect("create").record;

    env.advance(SHORT as i64 + 1);
    // A late answer expires the request instead (the store's expire-one path) ...
    let err = store
        .answer(t, &late.id, &json!({"option": "yes"}), &alice())
        .await
        .expect_err("too late");
    let ResolveError::AlreadyResolved(late) = err else {
        panic!("want AlreadyResolved, got {err}");
    };
    assert_eq!(late.status, Status::Expired);
    let found = own_deliveries(&store, t, &late.id).await;
    assert_eq!(found, [queued(&found, &late)]);
    assert_eq!(
        own_deliveries(&store, t, &reaped.id).await,
        NONE,
        "not reaped yet"
    );

    // ... and the reaper's batch queues one for each expired request with a callback.
    let n = store.expire_due().await.expect("expire");
    assert!(n >= 2, "expired {n}");
    let reaped = store
        .get(t, &reaped.id)
        .await
        .expect("get")
        .expect("exists");
    assert_eq!(reaped.status, Status::Expired);
    let found = own_deliveries(&store, t, &reaped.id).await;
    assert_eq!(found, [queued(&found, &reaped)]);
    let quiet = store.get(t, &quiet.id).await.expect("get").expect("exists");
    assert_eq!(quiet.status, Status::Expired);
    assert_eq!(own_deliveries(&store, t, &quiet.id).await, NONE);
    assert_eq!(
        own_deliveries(&store, t, &late.id).await.len(),
        1,
        "still one"
    );

    env.advance(60);
    store.expire_due().await.expect("expire");
    assert_eq!(
        own_deliveries(&store, t, &reaped.id).await.len(),
        1,
        "expiring again does nothing"
    );
    settle(&store, t, &[&late, &reaped]).await;
}

async fn claimed_deliveries_are_leased(store: Store, env: Env) {
    let _clock = env.exclusive_clock().await;
    let t = &env.tenant;
    let first = resolved_hook(&store, &env, "first").await;
    env.advance(1);
    let second = resolved_hook(&store, &env, "second").await;
    let own = [first.id.as_str(), second.id.as_str()];

    let lease_until = env.now() + TimeDelta::seconds(LEASE);
    let claimed = claim_due(&store, lease_until, &own).await;
    let ids: Vec<&str> = claimed.iter().map(|d| d.request_id.as_str()).collect();
    assert_eq!(ids, own, "both, oldest first");
    for (d, record) in claimed.iter().zip([&first, &second]) {
        assert_eq!(
            *d,
            Delivery {
                next_attempt_at: Some(lease_until),
                ..queued(std::slice::from_ref(d), record)
            }
        );
        assert_eq!(
            own_deliveries(&store, t, &record.id).await,
            std::slice::from_ref(d)
        );
    }

    // Leased: not due again until the lease runs out.
    assert_eq!(claim_due(&store, lease_until, &own).await, NONE);
    env.advance(LEASE - 1);
    assert_eq!(
        claim_due(&store, env.now() + TimeDelta::seconds(LEASE), &own).await,
        NONE
    );
    env.advance(1);
    let lease_until = env.now() + TimeDelta::seconds(LEASE);
    let again = claim_due(&store, lease_until, &own).await;
    let ids: Vec<&str> = again.iter().map(|d| d.request_id.as_str()).collect();
    assert_eq!(ids, own, "claimed again once the lease ran out");
    assert!(again.iter().all(|d| d.next_attempt_at == Some(lease_until)));

    // A limit is honoured.
    env.advance(LEASE);
    let one = store
        .claim_deliveries(env.now() + TimeDelta::seconds(LEASE), 1)
        .await
        .expect("claim");
    assert!(one.len() <= 1, "{one:?}");
    settle(&store, t, &[&first, &second]).await;
}

async fn attempts_move_a_delivery_on(store: Store, env: Env) {
    let _clock = env.exclusive_clock().await;
    let t = &env.tenant;
    let retried = resolved_hook(&store, &env, "retried").await;
    let delivered = resolved_hook(&store, &env, "delivered").await;
    let own = [retried.id.as_str(), delivered.id.as_str()];
    let lease = || env.now() + TimeDelta::seconds(LEASE);
    let claimed = claim_due(&store, lease(), &own).await;
    assert_eq!(claimed.len(), 2);
    let (r, d) = (&claimed[0], &claimed[1]);
    assert_eq!(r.request_id, retried.id);

    // A failed attempt: due again at the retry time, with the attempt recorded.
    env.advance(2);
    let first = Attempt {
        number: 1,
        at: env.now(),
        status_code: Some(503),
        error: Some("HTTP 503 Service Unavailable".to_owned()),
        duration_ms: 1_250,
    };
    let retry_at = env.now() + TimeDelta::seconds(30);
    store
        .finish_attempt(r.id, first.clone(), AfterAttempt::RetryAt(retry_at))
        .await
        .expect("finish");
    let after = own_deliveries(&store, t, &retried.id).await;
    assert_eq!(
        after,
        [Delivery {
            status: DeliveryStatus::Pending,
            next_attempt_at: Some(retry_at),
            attempts: vec![first.clone()],
            ..r.clone()
        }]
    );
    // A success: delivered, never due again.
    let ok = Attempt {
        number: 1,
        at: env.now(),
        status_code: Some(204),
        error: None,
        duration_ms: 40,
    };
    store
        .finish_attempt(d.id, ok.clone(), AfterAttempt::Delivered)
        .await
        .expect("finish");
    let after = own_deliveries(&store, t, &delivered.id).await;
    assert_eq!(
        after,
        [Delivery {
            status: DeliveryStatus::Delivered,
            next_attempt_at: None,
            attempts: vec![ok],
            ..d.clone()
        }]
    );

    env.advance(29);
    assert_eq!(
        claim_due(&store, lease(), &own).await,
        NONE,
        "not due before the retry time"
    );
    env.advance(1);
    let again = claim_due(&store, lease(), &own).await;
    assert_eq!(again.len(), 1, "only the retried one: {again:?}");
    assert_eq!(again[0].id, r.id);
    assert_eq!(
        again[0].attempts,
        std::slice::from_ref(&first),
        "claims carry the attempts"
    );

    // Out of retries: failed, never due again, every attempt listed in order.
    env.advance(5);
    let last = Attempt {
        number: 2,
        at: env.now(),
        status_code: None,
        error: Some("connection refused".to_owned()),
        duration_ms: 0,
    };
    store
        .finish_attempt(r.id, last.clone(), AfterAttempt::GiveUp)
        .await
        .expect("finish");
    let after = own_deliveries(&store, t, &retried.id).await;
    assert_eq!(after.len(), 1);
    assert_eq!(after[0].status, DeliveryStatus::Failed);
    assert_eq!(after[0].next_attempt_at, None);
    assert_eq!(after[0].attempts, [first, last]);
    env.advance(3_600);
    assert_eq!(
        claim_due(&store, lease(), &own).await,
        NONE,
        "finished ones stay finished"
    );

    // An attempt at a delivery that does not exist changes nothing and is no error.
    let stray = Attempt {
        number: 1,
        at: env.now(),
        status_code: Some(200),
        error: None,
        duration_ms: 1,
    };
    store
        .finish_attempt(u64::MAX, stray.clone(), AfterAttempt::Delivered)
        .await
        .expect("unknown delivery");
    store
        .finish_attempt(i64::MAX as u64, stray, AfterAttempt::Delivered)
        .await
        .expect("unknown delivery");
}

async fn concurrent_claims_never_share_a_delivery(store: Store, env: Env) {
    let _clock = env.exclusive_clock().await;
    let t = &env.tenant;
    let mut records = Vec::new();
    for i in 0..24 {
        records.push(resolved_hook(&store, &env, &format!("n{i}")).await);
    }
    let own: HashSet<String> = records.iter().map(|r| r.id.clone()).collect();
    // On a durable store a second instance, as a second server process would be.
    let other = match env.kind {
        crate::support::Kind::Memory => store.clone(),
        _ => env.open().await,
    };
    let lease_until = env.now() + TimeDelta::seconds(LEASE);
    let workers: Vec<_> = [store.clone(), other.clone()]
        .into_iter()
        .flat_map(|s| [s.clone(), s])
        .map(|s| {
            tokio::spawn(async move {
                let mut claimed = Vec::new();
                loop {
                    let batch = s.claim_deliveries(lease_until, 3).await.expect("claim");
                    if batch.is_empty() {
                        return claimed;
                    }
                    claimed.extend(batch);
                    tokio::task::yield_now().await;
                }
            })
        })
        .collect();
    let mut seen = HashSet::new();
    let mut mine = 0;
    for worker in workers {
        for d in worker.await.expect("worker") {
            assert!(seen.insert(d.id), "delivery {} claimed twice", d.id);
            if own.contains(&d.request_id) {
                mine += 1;
            }
        }
    }
    assert_eq!(mine, own.len(), "every delivery claimed exactly once");
    let refs: Vec<&RequestRecord> = records.iter().collect();
    settle(&store, t, &refs).await;
}

async fn deliveries_survive_reopening(store: Store, env: Env) {
    let _clock = env.exclusive_clock().await;
    let t = &env.tenant;
    let waiting = resolved_hook(&store, &env, "waiting").await;
    let tried = resolved_hook(&store, &env, "tried").await;
    let claimed = claim_due(
        &store,
        env.now() + TimeDelta::seconds(LEASE),
        &[tried.id.as_str(), waiting.id.as_str()],
    )
    .await;
    let tried_delivery = claimed
        .iter()
        .find(|d| d.request_id == tried.id)
        .expect("claimed");
    let attempt = Attempt {
        number: 1,
        at: env.now(),
        status_code: Some(500),
        error: Some("HTTP 500".to_owned()),
        duration_ms: 7,
    };
    store
        .finish_attempt(
            tried_delivery.id,
            attempt,
            AfterAttempt::RetryAt(env.now() + TimeDelta::seconds(10)),
        )
        .await
        .expect("finish");
    let before_waiting = own_deliveries(&store, t, &waiting.id).await;
    let before_tried = own_deliveries(&store, t, &tried.id).await;
    assert_eq!(before_tried[0].attempts.len(), 1);
    drop(store);

    let store = env.open().await;
    assert_eq!(own_deliveries(&store, t, &waiting.id).await, before_waiting);
    assert_eq!(own_deliveries(&store, t, &tried.id).await, before_tried);
    env.advance(LEASE);
    let lease_until = env.now() + TimeDelta::seconds(LEASE);
    let again = claim_due(
        &store,
        lease_until,
        &[waiting.id.as_str(), tried.id.as_str()],
    )
    .await;
    assert_eq!(again.len(), 2, "both due again after the restart");
    settle(&store, t, &[&waiting, &tried]).await;
}

// ---------------------------------------------------------------------------------------------
// Migration

/// The SQLite schema of version 1, as released: the database a v1 binary left behind.
const SQLITE_SCHEMA_V1: &str = "
CREATE TABLE requests (
    seq INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    tenant TEXT NOT NULL,
    status TEXT NOT NULL,
    session TEXT,
    agent TEXT,
    spec TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    expires_at INTEGER,
    resolved_at INTEGER,
    answered_by TEXT,
    channel TEXT,
    answers TEXT,
    idempotency_key TEXT,
    dedupe_key TEXT
);
CREATE UNIQUE INDEX requests_idempotency ON requests (tenant, idempotency_key)
    WHERE idempotency_key IS NOT NULL;
CREATE INDEX requests_tenant ON requests (tenant, seq);
CREATE INDEX requests_status ON requests (tenant, status, seq);
CREATE INDEX requests_session ON requests (tenant, session, seq) WHERE session IS NOT NULL;
CREATE INDEX requests_agent ON requests (tenant, agent, seq) WHERE agent IS NOT NULL;
CREATE INDEX requests_due ON requests (expires_at)
    WHERE status = 'pending' AND expires_at IS NOT NULL;
CREATE INDEX requests_dedupe ON requests (tenant, dedupe_key)
    WHERE status = 'pending' AND dedupe_key IS NOT NULL;
CREATE TABLE request_tags (
    tenant TEXT NOT NULL,
    tag TEXT NOT NULL,
    seq INTEGER NOT NULL,
    PRIMARY KEY (tenant, tag, seq)
) WITHOUT ROWID;
CREATE TABLE events (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    tenant TEXT NOT NULL,
    request_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    actor TEXT,
    channel TEXT,
    at INTEGER NOT NULL
);
CREATE INDEX events_tenant ON events (tenant, seq);
CREATE TABLE grants (
    tenant TEXT NOT NULL,
    tool TEXT NOT NULL,
    arguments TEXT NOT NULL,
    scope TEXT NOT NULL,
    session TEXT NOT NULL DEFAULT '',
    created_at INTEGER NOT NULL,
    PRIMARY KEY (tenant, tool, arguments, scope, session)
) WITHOUT ROWID;
PRAGMA user_version = 1;
";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_v1_database_migrates_to_v2_keeping_its_requests() {
    let dir = TempDir::new();
    let path = dir.0.join("clarify.db");
    let url = format!("sqlite://{}", path.display());
    let created_at = start_time();
    let resolved_at = created_at + TimeDelta::seconds(5);
    let ms = |t: DateTime<Utc>| t.timestamp_millis();
    let hooked = request(json!({
        "question": "Still there?", "choices": ["yes", "no"], "tags": ["old"],
        "callback_url": "https://example.com/hook",
    }));
    let plain = request(json!({"question": "Gone?", "choices": ["yes", "no"]}));
    {
        let conn = rusqlite::Connection::open(&path).expect("create a v1 database");
        conn.execute_batch(SQLITE_SCHEMA_V1).expect("v1 schema");
        let spec = |r: &clarify_core::NewRequest| serde_json::to_string(r).expect("spec");
        conn.execute(
            "INSERT INTO requests (seq, id, tenant, status, spec, created_at, expires_at) \
             VALUES (1, 'r1', 't', 'pending', ?1, ?2, ?3)",
            rusqlite::params![
                spec(&hooked),
                ms(created_at),
                ms(created_at + TimeDelta::seconds(DAY as i64))
            ],
        )
        .expect("insert pending");
        conn.execute(
            "INSERT INTO request_tags (tenant, tag, seq) VALUES ('t', 'old', 1)",
            [],
        )
        .expect("insert tag");
        conn.execute(
            "INSERT INTO requests (seq, id, tenant, status, spec, created_at, expires_at, \
             resolved_at, answered_by, channel) \
             VALUES (2, 'r2', 't', 'cancelled', ?1, ?2, ?3, ?4, 'alice', 'api')",
            rusqlite::params![
                spec(&plain),
                ms(created_at),
                ms(created_at + TimeDelta::seconds(DAY as i64)),
                ms(resolved_at)
            ],
        )
        .expect("insert cancelled");
        conn.execute_batch(&format!(
            "INSERT INTO events (tenant, request_id, kind, at) VALUES \
             ('t', 'r1', 'created', {c}), ('t', 'r2', 'created', {c}); \
             INSERT INTO events (tenant, request_id, kind, actor, channel, at) VALUES \
             ('t', 'r2', 'cancelled', 'alice', 'api', {r}); \
             INSERT INTO events (tenant, request_id, kind, at) VALUES ('t', 'r3', 'created', {c}); \
             DELETE FROM events WHERE request_id = 'r3';",
            c = ms(created_at),
            r = ms(resolved_at)
        ))
        .expect("insert events");
    }

    let clock = Arc::new(ManualClock::new(resolved_at + TimeDelta::seconds(5)));
    let store = Store::open(&url, options(&clock))
        .await
        .expect("open migrates");
    let pending = store.get("t", "r1").await.expect("get").expect("kept");
    assert_eq!(pending.status, Status::Pending);
    assert_eq!(*pending.request, hooked);
    assert_eq!(pending.created_at, created_at);
    let cancelled = store.get("t", "r2").await.expect("get").expect("kept");
    assert_eq!(cancelled.status, Status::Cancelled);
    assert_eq!(cancelled.resolved_at(), Some(resolved_at));
    assert_eq!(
        cancelled.resolution.as_ref().map(|r| &r.actor),
        Some(&alice())
    );
    let tagged = store
        .list(
            "t",
            &clarify_store::ListQuery {
                tag: Some("old".to_owned()),
                ..Default::default()
            },
        )
        .await
        .expect("list");
    assert_eq!(
        tagged.records,
        std::slice::from_ref(&pending),
        "tags survive"
    );
    // Event 4 was deleted (as retention did before the audit chain): a tombstone keeps its
    // number from being handed out again once the log has no `AUTOINCREMENT` (version 10).
    assert_eq!(store.last_event_seq().await.expect("seq"), 4);
    // The events stored before the audit chain were hashed in order by the migration.
    assert_eq!(store.verify_audit().await.expect("verify"), Ok(4));

    // The request resolved before the insights existed was counted into them by the migration.
    let day = resolved_at.date_naive();
    let figures = store
        .insights(
            "t",
            &clarify_store::InsightsQuery {
                from: Some(day),
                to: Some(day),
                ..Default::default()
            },
        )
        .await
        .expect("insights");
    assert_eq!(figures.by_status.get("cancelled"), Some(&1));
    assert_eq!(
        figures.by_responder.len(),
        0,
        "a cancellation is nobody's decision"
    );

    // The new tables work, and the old request resolves with its webhook queued.
    let answered = store
        .answer("t", "r1", &json!({"option": "yes"}), &bob())
        .await
        .expect("answer");
    let found = store.deliveries("t", "r1").await.expect("deliveries");
    assert_eq!(found, [queued(&found, &answered)]);
    let newest = store.events_after(None, 3, 10).await.expect("events");
    assert_eq!(
        newest
            .iter()
            .map(|e| (e.seq, e.request_id.as_str()))
            .collect::<Vec<_>>(),
        [(5, "r1")],
        "the tombstone is not in the feed, and the next event comes after it"
    );
    assert_eq!(store.verify_audit().await.expect("verify"), Ok(5));
    let key = store
        .create_key(
            "migrated",
            Role::Admin,
            "t",
            &clarify_store::Actor::system(),
        )
        .await
        .expect("create key");
    drop(store);

    let conn = rusqlite::Connection::open(&path).expect("open");
    let version: i64 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .expect("version");
    assert_eq!(
        version, 20,
        "migrated to the current version (3: grant ids, 4: retention indexes, 5: votes, \
         reminders and escalation, 6: channel notifications, 7: announcements by message, \
         8: cursors, 9: the audit chain, 10: a leaner event table, 11: events by tenant, \
         12: bounded grants, 13: principals in the event log, 14: the insights rollup, \
         15: AG-UI runs, 16: the insights' monthly and daily rollups, 17: Web Push subscriptions, \
         18: receipts, 19: on-call readings, 20: warnings before expiry)"
    );
    let leftovers: i64 = conn
        .query_row(
            "SELECT count(*) FROM sqlite_master WHERE name = 'events_v10' \
             OR sql LIKE '%AUTOINCREMENT%' AND name = 'events'",
            [],
            |r| r.get(0),
        )
        .expect("schema");
    assert_eq!(
        leftovers, 0,
        "the event table was rebuilt without its counter"
    );
    let tenant_index: Vec<String> = conn
        .prepare("SELECT name FROM pragma_index_info('events_tenant') ORDER BY seqno")
        .and_then(|mut s| s.query_map([], |r| r.get(0))?.collect())
        .expect("index");
    assert_eq!(tenant_index, ["tenant", "seq"], "a tenant's events by seq");
    drop(conn);
    let store = Store::open(&url, options(&clock)).await.expect("reopen");
    let found = store.authenticate(&key.token).await.expect("auth");
    assert_eq!(found, Some(key.key));
    let again = store.get("t", "r1").await.expect("get");
    assert_eq!(again, Some(answered));
}

// ---------------------------------------------------------------------------------------------
// Helpers

async fn new_key(store: &Store, env: &Env, role: Role) -> ApiKey {
    store
        .create_key(
            &random_name("k"),
            role,
            &env.tenant,
            &clarify_store::Actor::system(),
        )
        .await
        .expect("create key")
        .key
}

/// A pending request with a callback URL naming `what`.
async fn hooked(store: &Store, env: &Env, what: &str) -> RequestRecord {
    let raw = json!({
        "question": format!("Hook {what}?"), "choices": ["yes", "no"], "allow_skip": true,
        "callback_url": format!("https://example.com/hooks/{what}"),
    });
    store
        .create(&env.tenant, request(raw))
        .await
        .expect("create")
        .record
}

/// A request with a callback URL, cancelled now: its delivery is due at once.
async fn resolved_hook(store: &Store, env: &Env, what: &str) -> RequestRecord {
    let record = hooked(store, env, what).await;
    store
        .cancel(&env.tenant, &record.id, &alice())
        .await
        .expect("cancel")
}

/// What a resolution queues for `record`; the id is taken from the first of `found`, since only
/// the store knows it.
fn queued(found: &[Delivery], record: &RequestRecord) -> Delivery {
    let at = record.resolved_at().expect("resolved");
    Delivery {
        id: found.first().map_or(0, |d| d.id),
        request_id: record.id.clone(),
        tenant: record.tenant.clone(),
        url: record.request.callback_url.clone().expect("a callback URL"),
        status: DeliveryStatus::Pending,
        created_at: at,
        next_attempt_at: Some(at),
        event: None,
        channel: None,
        message_ref: None,
        attempts: Vec::new(),
    }
}

async fn own_deliveries(store: &Store, tenant: &str, request_id: &str) -> Vec<Delivery> {
    store
        .deliveries(tenant, request_id)
        .await
        .expect("deliveries")
}

/// Claims everything due, batch by batch, until nothing is; returns the deliveries of `own`
/// requests among them, oldest first. In a shared database other deliveries (left by earlier
/// runs) are claimed too; the lease keeps them out of later batches, so this ends.
async fn claim_due(store: &Store, lease_until: DateTime<Utc>, own: &[&str]) -> Vec<Delivery> {
    claim_all(|| store.claim_deliveries(lease_until, 100))
        .await
        .into_iter()
        .filter(|d| own.contains(&d.request_id.as_str()))
        .collect()
}

/// Runs `claim` (one batch of an outbox, each leased) until it returns nothing; everything
/// claimed, oldest first within each batch.
pub(crate) async fn claim_all<F, Fut>(mut claim: F) -> Vec<Delivery>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<Vec<Delivery>, clarify_store::StoreError>>,
{
    let mut found = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let batch = claim().await.expect("claim");
        assert!(
            batch.windows(2).all(|w| w[0].id < w[1].id),
            "a claim is oldest first"
        );
        if batch.is_empty() {
            return found;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "claims never ran dry"
        );
        found.extend(batch);
    }
}

/// Gives up every still-pending delivery of `records`, so none is left for later runs to claim.
async fn settle(store: &Store, tenant: &str, records: &[&RequestRecord]) {
    for record in records {
        for d in own_deliveries(store, tenant, &record.id).await {
            if d.status != DeliveryStatus::Pending {
                continue;
            }
            let attempt = Attempt {
                number: u32::try_from(d.attempts.len() + 1).expect("few attempts"),
                at: store.now(),
                status_code: None,
                error: Some("test over".to_owned()),
                duration_ms: 0,
            };
            store
                .finish_attempt(d.id, attempt, AfterAttempt::GiveUp)
                .await
                .expect("settle");
        }
    }
}

/// `Durability::Full` makes the SQLite writer fsync each group commit (`synchronous=FULL`); the
/// default stays `NORMAL`. Both keep what they acknowledged across a reopen, and the WAL is cut
/// back after checkpoints (`journal_size_limit`).
#[tokio::test]
async fn sqlite_durability_full_is_the_writers_synchronous_setting() {
    for (durability, expected) in [
        (clarify_store::Durability::Normal, 1_i64),
        (clarify_store::Durability::Full, 2),
    ] {
        let dir = TempDir::new();
        let url = format!("sqlite://{}", dir.0.join("clarify.db").display());
        let open = || {
            let url = url.clone();
            async move {
                Store::open(
                    &url,
                    clarify_store::StoreOptions {
                        durability,
                        ..clarify_store::StoreOptions::default()
                    },
                )
                .await
                .expect("open")
            }
        };
        let store = open().await;
        let id = store
            .create("t", request(json!({"question": "Kept?"})))
            .await
            .expect("create")
            .record
            .id;
        assert_eq!(
            store.sqlite_pragma("synchronous").await.expect("pragma"),
            Some(expected),
            "{durability:?}"
        );
        assert_eq!(
            store
                .sqlite_pragma("journal_size_limit")
                .await
                .expect("pragma"),
            Some(256 << 20),
            "above the WAL's 64 MiB restart size, so a restarted WAL keeps its blocks"
        );
        drop(store);
        assert!(open().await.get("t", &id).await.expect("get").is_some());
    }
}
