//! The audit chain: every event carries `hash`, the hex SHA-256 of the previous event's hash
//! (its hex text; nothing before the first event) followed by this event's canonical JSON. One
//! chain per store, in feed order, computed by whatever assigns that order: SQLite's single
//! writer, or PostgreSQL's event-log lock. Changing, removing or reordering a stored event
//! breaks the chain at the first event after the change, which [`Verifier`] names.
//!
//! The canonical JSON of an event is its stored fields as one JSON object with sorted keys and no
//! spaces: `{"actor":…,"at":<ms since the epoch>,"channel":…,"kind":"created","request_id":…,
//! "seq":…,"tenant":…}`. Retention does not delete an old event: it blanks its content and keeps
//! its `seq` and `hash` (a tombstone, `kind` = `purged`), so the chain through it still verifies.
//!
//! Admin actions are events of the same chain ([`AdminKind`]: `key.created`, `key.revoked`,
//! `grant.revoked`, `identity.linked`, `identity.unlinked`, `push.subscribed`,
//! `push.unsubscribed`, `passkey.registered`, `passkey.removed`, `request.step_up_waived`),
//! written in the transaction of the change they record where there is one. Their `request_id`
//! column holds their subject instead, prefixed with what it is (`key:<key id>`,
//! `grant:<grant id>`, `identity:<platform>:<user id>`, `push:<id>`, `passkey:<id>`,
//! `request:<request id>`), so it
//! never equals a request's id; their kinds, unlike the requests', contain a dot, and the event
//! feed (`/v1/events`) leaves them out.
//!
//! The [`Store`] methods here read the chain, append an admin event of its own, and verify the
//! whole chain.

use serde::Serialize;

use crate::Store;
use crate::codec::EventParts;
use crate::error::StoreError;

/// The `kind` a purged event keeps.
pub(crate) const PURGED: &str = "purged";

/// What someone managing access did: the admin events of the audit chain.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum AdminKind {
    /// An API key was created.
    KeyCreated,
    KeyRevoked,
    /// A remembered `session` or `always` grant was revoked.
    GrantRevoked,
    /// A chat account was linked to a person (the responder name they answer as).
    IdentityLinked,
    IdentityUnlinked,
    /// A browser subscribed to Web Push notifications.
    PushSubscribed,
    PushUnsubscribed,
    /// A person registered a passkey (subject: its credential id).
    PasskeyRegistered,
    PasskeyRemoved,
    /// An admin key answered a high-risk request without a passkey confirmation, which step-up
    /// lets only an admin key do (subject: the request id).
    StepUpWaived,
    /// An executor spent a receipt (subject: its `jti`), which it can do once.
    ReceiptSpent,
}

impl AdminKind {
    pub const ALL: [AdminKind; 11] = [
        AdminKind::KeyCreated,
        AdminKind::KeyRevoked,
        AdminKind::GrantRevoked,
        AdminKind::IdentityLinked,
        AdminKind::IdentityUnlinked,
        AdminKind::PushSubscribed,
        AdminKind::PushUnsubscribed,
        AdminKind::PasskeyRegistered,
        AdminKind::PasskeyRemoved,
        AdminKind::StepUpWaived,
        AdminKind::ReceiptSpent,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::KeyCreated => "key.created",
            Self::KeyRevoked => "key.revoked",
            Self::GrantRevoked => "grant.revoked",
            Self::IdentityLinked => "identity.linked",
            Self::IdentityUnlinked => "identity.unlinked",
            Self::PushSubscribed => "push.subscribed",
            Self::PushUnsubscribed => "push.unsubscribed",
            Self::PasskeyRegistered => "passkey.registered",
            Self::PasskeyRemoved => "passkey.removed",
            Self::StepUpWaived => "request.step_up_waived",
            Self::ReceiptSpent => "receipt.spent",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.as_str() == s)
    }

    /// What the subject is: the part of the kind before the dot (`key`, `grant`, ...).
    pub fn noun(self) -> &'static str {
        let kind = self.as_str();
        kind.split_once('.').map_or(kind, |(noun, _)| noun)
    }
}

/// An admin action to record in the audit chain ([`crate::Store::record_admin`]): `kind` done
/// to `subject` (a key id, a grant id, `<platform>:<user id>`, a push subscription's id) in
/// `tenant`, by `by`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdminEvent {
    pub tenant: String,
    pub kind: AdminKind,
    pub subject: String,
    pub by: crate::record::Actor,
}

impl AdminEvent {
    pub fn new(
        tenant: impl Into<String>,
        kind: AdminKind,
        subject: impl Into<String>,
        by: &crate::record::Actor,
    ) -> Self {
        Self {
            tenant: tenant.into(),
            kind,
            subject: subject.into(),
            by: by.clone(),
        }
    }

    /// The stored event (unnumbered, unhashed) at `at` (ms since the epoch).
    pub(crate) fn parts(&self, at: i64) -> EventParts {
        EventParts {
            seq: 0,
            tenant: self.tenant.clone(),
            request_id: format!("{}:{}", self.kind.noun(), self.subject),
            kind: self.kind.as_str().to_owned(),
            actor: self.by.name.clone(),
            channel: Some(self.by.channel.clone()),
            principal: self.by.principal.clone(),
            at,
            hash: None,
        }
    }
}

/// Whether a stored kind is an admin action's ([`AdminKind`]), whose subject sits where a
/// request's id does. Not every dotted kind is: `grant.suggested_accepted` is a request's event
/// (the feed's statements leave out every dotted kind all the same; see [`FEED_KINDS`]).
pub(crate) fn is_admin(kind: &str) -> bool {
    AdminKind::ALL.iter().any(|k| k.as_str() == kind)
}

/// The SQL condition the event feed reads with: no tombstones, no admin events.
pub(crate) const FEED_KINDS: &str = "kind <> 'purged' AND kind NOT LIKE '%.%'";

/// An event's canonical JSON. The fields are declared in sorted order, which is the order
/// serde writes them in, so this is the contract's sorted-key form without building a map.
pub(crate) fn canonical(event: &EventParts) -> String {
    #[derive(Serialize)]
    struct Canonical<'a> {
        actor: Option<&'a str>,
        at: i64,
        channel: Option<&'a str>,
        kind: &'a str,
        // Left out when `None`, so events stored before principals were kept hash as they did.
        #[serde(skip_serializing_if = "Option::is_none")]
        principal: Option<&'a str>,
        request_id: &'a str,
        seq: i64,
        tenant: &'a str,
    }
    serde_json::to_string(&Canonical {
        actor: event.actor.as_deref(),
        at: event.at,
        channel: event.channel.as_deref(),
        kind: &event.kind,
        principal: event.principal.as_deref(),
        request_id: &event.request_id,
        seq: event.seq,
        tenant: &event.tenant,
    })
    .unwrap_or_default()
}

/// The hash of an event whose canonical JSON is `canonical`, after the event hashed `previous`.
pub(crate) fn link(previous: &str, canonical: &str) -> String {
    crate::codec::hex(&clarify_model::sign::sha256(&[
        previous.as_bytes(),
        canonical.as_bytes(),
    ]))
}

/// The hashes of the events (all of them, in feed order) that have none, linked as the chain
/// would have linked them: each `(seq, hash)` follows the hash of the event before it, stored
/// or just computed. Events stored before the audit chain existed (schema 9) are hashed so.
pub(crate) fn missing_hashes(events: &[EventParts]) -> Vec<(i64, String)> {
    let mut head = String::new();
    let mut missing = Vec::new();
    for event in events {
        head = match &event.hash {
            Some(hash) => hash.clone(),
            None => {
                let hash = link(&head, &canonical(event));
                missing.push((event.seq, hash.clone()));
                hash
            }
        };
    }
    missing
}

/// One stored event with its hash, as `GET /v1/audit` and `clarify audit export` show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AuditEvent {
    pub seq: u64,
    /// `purged` for an event retention emptied.
    pub kind: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    /// What an admin event acted on (`key:<key id>`, `grant:<grant id>`, ...).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
    pub actor: Option<String>,
    pub channel: Option<String>,
    /// Who was authenticated: `key:<name>`, `oidc:<issuer>#<sub>`, `slack:<user id>`, ...
    #[serde(skip_serializing_if = "Option::is_none")]
    pub principal: Option<String>,
    /// A key event's key (`key.created`, `key.revoked`): its name and role, read from the key
    /// itself, which keeps them for good (revoking a key keeps its row). Not hashed: the chain
    /// hashes the key's id, which names it for good, and events stored before this was shown
    /// verify as they did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key: Option<KeyNamed>,
    pub at: chrono::DateTime<chrono::Utc>,
    /// Empty for an event stored before the chain existed and never hashed.
    pub hash: String,
}

/// The key a key event concerns, as an auditor reads it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct KeyNamed {
    pub name: String,
    pub role: crate::Role,
}

impl AuditEvent {
    /// The id of the key this event concerns, for a key event.
    fn key_id(&self) -> Option<&str> {
        let kind = AdminKind::parse(&self.kind)?;
        if kind.noun() != "key" {
            return None;
        }
        self.subject.as_deref()?.strip_prefix("key:")
    }

    pub(crate) fn of(parts: &EventParts, hash: Option<&str>) -> Self {
        let purged = parts.kind == PURGED;
        let admin = is_admin(&parts.kind);
        Self {
            seq: u64::try_from(parts.seq).unwrap_or(0),
            kind: parts.kind.clone(),
            tenant: (!purged).then(|| parts.tenant.clone()),
            request_id: (!purged && !admin).then(|| parts.request_id.clone()),
            subject: admin.then(|| parts.request_id.clone()),
            actor: parts.actor.clone(),
            channel: parts.channel.clone(),
            principal: parts.principal.clone(),
            key: None,
            at: crate::codec::from_millis(parts.at).unwrap_or_default(),
            hash: hash.unwrap_or_default().to_owned(),
        }
    }
}

/// Where the chain breaks.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("event {seq}: {reason}")]
pub struct ChainBreak {
    pub seq: u64,
    pub reason: String,
}

/// Walks the chain in feed order, one stored event at a time.
#[derive(Debug, Default)]
pub(crate) struct Verifier {
    previous: String,
    last_seq: Option<i64>,
    pub(crate) checked: u64,
}

impl Verifier {
    /// A verifier whose first event links to `base` (empty: the first event of the store).
    pub(crate) fn starting_at(base: String) -> Self {
        Self {
            previous: base,
            ..Self::default()
        }
    }

    /// Checks the next stored event.
    pub(crate) fn check(
        &mut self,
        parts: &EventParts,
        hash: Option<&str>,
    ) -> Result<(), ChainBreak> {
        let seq = u64::try_from(parts.seq).unwrap_or(0);
        let fail = |reason: &str| ChainBreak {
            seq,
            reason: reason.to_owned(),
        };
        if self.last_seq.is_some_and(|last| parts.seq <= last) {
            return Err(fail("it is out of order"));
        }
        self.last_seq = Some(parts.seq);
        let Some(hash) = hash.filter(|h| !h.is_empty()) else {
            return Err(fail("it has no hash"));
        };
        if parts.kind != PURGED {
            let expected = link(&self.previous, &canonical(parts));
            if expected != hash {
                return Err(fail(
                    "its hash does not match its content and the event before it \
                     (changed, or an event before it was removed, added or reordered)",
                ));
            }
        }
        self.previous = hash.to_owned();
        self.checked += 1;
        Ok(())
    }
}

impl Store {
    /// The audit chain's events after `after` in feed order (those of `tenant`, or every
    /// tenant's with `None`), at most `limit`, each with its hash; purged events as tombstones.
    pub async fn audit_events(
        &self,
        tenant: Option<&str>,
        after: u64,
        limit: usize,
    ) -> Result<Vec<crate::AuditEvent>, StoreError> {
        let parts = self
            .inner
            .backend
            .audit_events(tenant, after, limit)
            .await?;
        let mut events: Vec<crate::AuditEvent> = parts
            .iter()
            .map(|p| crate::AuditEvent::of(p, p.hash.as_deref()))
            .collect();
        // Each key event names its key; a key is read once per page (most pages have none).
        let mut keys: std::collections::HashMap<String, Option<KeyNamed>> =
            std::collections::HashMap::new();
        for event in &mut events {
            let Some(id) = event.key_id().map(str::to_owned) else {
                continue;
            };
            if !keys.contains_key(&id) {
                let named = self.inner.backend.key(&id).await?.map(|row| KeyNamed {
                    name: row.key.name,
                    role: row.key.role,
                });
                keys.insert(id.clone(), named);
            }
            event.key = keys.get(&id).cloned().flatten();
        }
        Ok(events)
    }

    /// Records an admin action in the audit chain, in a transaction of its own: for actions
    /// whose change is not the store's to make in the same transaction (linking a chat account,
    /// a push subscription kept elsewhere). Key and grant changes record theirs themselves.
    pub async fn record_admin(&self, event: crate::AdminEvent) -> Result<(), StoreError> {
        self.inner.backend.record_admin(event, self.now()).await
    }

    /// Recomputes the whole audit chain in feed order: the number of events checked, or where
    /// the chain first breaks (an event changed, removed, added or reordered).
    pub async fn verify_audit(&self) -> Result<Result<u64, crate::ChainBreak>, StoreError> {
        const BATCH: usize = 10_000;
        let mut verifier =
            crate::audit::Verifier::starting_at(self.inner.backend.audit_base().await?);
        let mut after = 0_u64;
        loop {
            let batch = self.inner.backend.audit_events(None, after, BATCH).await?;
            let Some(last) = batch.last() else {
                return Ok(Ok(verifier.checked));
            };
            after = u64::try_from(last.seq).unwrap_or(u64::MAX);
            for event in &batch {
                if let Err(at) = verifier.check(event, event.hash.as_deref()) {
                    return Ok(Err(at));
                }
            }
            if batch.len() < BATCH {
                return Ok(Ok(verifier.checked));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(seq: i64, kind: &str) -> EventParts {
        EventParts {
            seq,
            tenant: "t".to_owned(),
            request_id: "r".to_owned(),
            kind: kind.to_owned(),
            actor: Some("alice".to_owned()),
            channel: None,
            principal: None,
            at: 1_700_000_000_000,
            hash: None,
        }
    }

    #[test]
    fn canonical_json_has_sorted_keys_and_the_hash_links_to_the_previous() {
        let e = event(1, "created");
        assert_eq!(
            canonical(&e),
            r#"{"actor":"alice","at":1700000000000,"channel":null,"kind":"created","request_id":"r","seq":1,"tenant":"t"}"#
        );
        let first = link("", &canonical(&e));
        assert_eq!(first.len(), 64);
        assert_ne!(
            link(&first, &canonical(&event(2, "answered"))),
            link("", &canonical(&event(2, "answered")))
        );
    }

    #[test]
    fn a_principal_is_hashed_when_there_is_one_and_older_events_hash_as_before() {
        let mut e = event(1, "answered");
        let before = canonical(&e);
        assert!(!before.contains("principal"), "{before}");
        e.principal = Some("oidc:https://idp.example#248289761001".to_owned());
        let with = canonical(&e);
        assert_eq!(
            with,
            r#"{"actor":"alice","at":1700000000000,"channel":null,"kind":"answered","principal":"oidc:https://idp.example#248289761001","request_id":"r","seq":1,"tenant":"t"}"#
        );
        assert_ne!(
            link("", &before),
            link("", &with),
            "a changed principal breaks the chain"
        );
    }

    #[test]
    fn missing_hashes_link_to_the_hash_stored_before_them() {
        let (a, mut b, c) = (
            event(1, "created"),
            event(2, "answered"),
            event(3, "expired"),
        );
        b.hash = Some("stored".to_owned());
        let ha = link("", &canonical(&a));
        let hc = link("stored", &canonical(&c));
        assert_eq!(
            missing_hashes(&[a, b.clone(), c]),
            [(1, ha), (3, hc)],
            "the stored hash is kept, and the next event links to it"
        );
        assert_eq!(missing_hashes(&[b]), []);
    }

    #[test]
    fn the_verifier_names_the_first_event_that_does_not_fit() {
        let a = event(1, "created");
        let b = event(2, "answered");
        let c = event(3, "expired");
        let ha = link("", &canonical(&a));
        let hb = link(&ha, &canonical(&b));
        let hc = link(&hb, &canonical(&c));
        let run = |events: &[(&EventParts, &str)]| {
            let mut v = Verifier::default();
            for (e, h) in events {
                v.check(e, Some(h))?;
            }
            Ok::<u64, ChainBreak>(v.checked)
        };
        assert_eq!(run(&[(&a, &ha), (&b, &hb), (&c, &hc)]), Ok(3));
        // Removed: the next one no longer links.
        assert_eq!(run(&[(&a, &ha), (&c, &hc)]).map_err(|e| e.seq), Err(3));
        // Changed.
        let mut changed = b.clone();
        changed.actor = Some("mallory".to_owned());
        assert_eq!(
            run(&[(&a, &ha), (&changed, &hb), (&c, &hc)]).map_err(|e| e.seq),
            Err(2)
        );
        // Reordered.
        assert_eq!(
            run(&[(&a, &ha), (&c, &hc), (&b, &hb)]).map_err(|e| e.seq),
            Err(3)
        );
        // Purged in the middle: its hash carries the chain.
        let mut tomb = b.clone();
        tomb.kind = PURGED.to_owned();
        tomb.tenant = String::new();
        tomb.request_id = String::new();
        tomb.actor = None;
        assert_eq!(run(&[(&a, &ha), (&tomb, &hb), (&c, &hc)]), Ok(3));
    }
}
