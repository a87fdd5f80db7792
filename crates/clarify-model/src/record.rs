//! What the store keeps of a request and of what happened to it: the record, its resolution,
//! the actor behind each change, and the event log's entries.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use clarify_core::quorum::Vote;
use clarify_core::{NewRequest, Outcome, Resolution, Status};
use serde::Serialize;

/// A stored request with its state.
#[derive(Debug, Clone, PartialEq)]
pub struct RequestRecord {
    pub id: String,
    pub tenant: String,
    /// The validated request; immutable once stored, so records share it.
    pub request: Arc<NewRequest>,
    pub status: Status,
    pub created_at: DateTime<Utc>,
    /// `None` when the request never expires.
    pub expires_at: Option<DateTime<Utc>>,
    /// Present once the request is resolved.
    pub resolution: Option<StoredResolution>,
    /// A quorum request's votes so far, in the order cast (one per responder).
    pub votes: Vec<Vote>,
    /// When the next reminder is due, while the request is pending and asks for reminders.
    pub remind_at: Option<DateTime<Utc>>,
    /// When `escalate_to` was let in; `None` before that, or without escalation.
    pub escalated_at: Option<DateTime<Utc>>,
    /// Each reading of the on-call schedules the request names (`oncall:...` among its
    /// responders or `escalate_to`): one when it was created, one at its escalation. Empty for
    /// a request naming none.
    pub on_call: Vec<OnCallShift>,
}

/// One reading of an on-call schedule a request names: who was on call, or why the schedule
/// could not be read (then the request's other responders answer, and the schedule is read
/// again at the escalation).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct OnCallShift {
    /// The responder as the request names it: `oncall:pagerduty:PSCHED1`.
    pub responder: String,
    /// The people on call, by responder name (those `[identities]` knows).
    pub people: Vec<String>,
    /// Why the schedule could not be read; `None` when it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unreadable: Option<String>,
    /// When it was read.
    pub read_at: DateTime<Utc>,
}

impl RequestRecord {
    /// The outcome, once resolved.
    pub fn outcome(&self) -> Option<Outcome> {
        let r = self.resolution.as_ref()?;
        Some(
            Outcome::new(
                &self.id,
                &self.request,
                &r.resolution,
                r.actor.name.as_deref(),
                r.resolved_at,
            )
            .answered_via(r.actor.answered_via())
            .with_votes(self.votes.clone()),
        )
    }

    /// Whether `responder`, a member of `groups`, may answer (or vote) now: one of
    /// `responders` (a name, or `group:NAME` of one of their groups; anyone when none are
    /// named), or one of `escalate_to` once the request has escalated.
    /// A person on call for an `oncall:` responder it names (now: `escalate_to`'s only once
    /// escalated) may too.
    pub fn allows_responder(&self, responder: &str, groups: &[String]) -> bool {
        self.request
            .allows_responder(responder, groups, self.escalated_at.is_some())
            || self
                .on_call
                .iter()
                .any(|s| self.names_now(&s.responder) && s.people.iter().any(|p| p == responder))
    }

    /// Whether `name` is among the responders now: in `responders`, or in `escalate_to` once
    /// the request has escalated.
    fn names_now(&self, name: &str) -> bool {
        let request = &self.request;
        request
            .responders
            .as_ref()
            .is_some_and(|r| r.iter().any(|n| n == name))
            || (self.escalated_at.is_some() && request.escalate_to.iter().any(|n| n == name))
    }

    /// The people the readings of the on-call responder `name` found, in the order read, each
    /// once.
    pub fn on_call_people(&self, name: &str) -> Vec<String> {
        let mut people: Vec<String> = Vec::new();
        for shift in self.on_call.iter().filter(|s| s.responder == name) {
            for person in &shift.people {
                if !people.contains(person) {
                    people.push(person.clone());
                }
            }
        }
        people
    }

    /// The `oncall:` responders the request names now (see [`RequestRecord::allows_responder`]).
    pub fn on_call_responders(&self) -> Vec<String> {
        let request = &self.request;
        let escalated = self.escalated_at.is_some();
        let mut names: Vec<String> = Vec::new();
        let named = request
            .responders
            .iter()
            .flatten()
            .chain(request.escalate_to.iter().filter(|_| escalated));
        for name in named {
            if name.starts_with(clarify_core::ONCALL_PREFIX) && !names.contains(name) {
                names.push(name.clone());
            }
        }
        names
    }

    /// How many approving votes a quorum request has so far.
    pub fn approvals(&self) -> usize {
        self.votes
            .iter()
            .filter(|v| v.decision == clarify_core::Decision::Approve)
            .count()
    }

    pub fn resolved_at(&self) -> Option<DateTime<Utc>> {
        self.resolution.as_ref().map(|r| r.resolved_at)
    }
}

/// How and by whom a request was resolved.
#[derive(Debug, Clone)]
pub struct StoredResolution {
    pub resolution: Resolution,
    pub actor: Actor,
    pub resolved_at: DateTime<Utc>,
    /// The resolution's event's position in the audit chain, which its receipt names; `None`
    /// until the chain has numbered it (PostgreSQL numbers events just after their commit).
    pub seq: Option<u64>,
}

/// Two reads of one resolution are equal whether or not the audit chain had numbered it yet
/// (`seq`): PostgreSQL numbers it just after the commit, so the record a resolving call returns
/// may lack what a later read has.
impl PartialEq for StoredResolution {
    fn eq(&self, other: &Self) -> bool {
        self.resolution == other.resolution
            && self.actor == other.actor
            && self.resolved_at == other.resolved_at
    }
}

impl StoredResolution {
    /// A resolution by `actor` at `resolved_at`, not yet numbered in the audit chain.
    pub fn new(resolution: Resolution, actor: Actor, resolved_at: DateTime<Utc>) -> Self {
        Self {
            resolution,
            actor,
            resolved_at,
            seq: None,
        }
    }

    /// Expiry, done by the store itself at `at`.
    pub fn expired(at: DateTime<Utc>) -> Self {
        Self::new(Resolution::Expired, Actor::system(), at)
    }
}

/// Who did something, and through which channel.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Actor {
    /// The key or responder name; `None` for the system (expiry).
    pub name: Option<String>,
    /// `api`, `inbox`, `link`, `cli`, `mcp`, `rust`, `system`, ...
    pub channel: String,
    /// The groups the identity provider says this person is in (the OIDC groups claim), for
    /// `group:NAME` responders; the configured `[groups]` are added by the store. Not stored.
    #[serde(skip)]
    pub groups: Vec<String>,
    /// Who was authenticated, as the event log records it: `key:<name>`,
    /// `oidc:<issuer>#<sub>`, `slack:<user id>`, ...; `None` when nobody was (the system, an
    /// anonymous answer link).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub principal: Option<String>,
    /// What vouches for this answer beyond the name, for a high-risk request under
    /// `[decisions] step_up`; set by the edge that checked it. Not stored.
    #[serde(skip)]
    pub step_up: StepUp,
}

/// What vouches for an answer to a high-risk request when step-up is on.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum StepUp {
    /// Nothing: a high-risk request refuses the answer (`step_up_required`).
    #[default]
    None,
    /// A passkey assertion made within the last 5 minutes for an answer to this request id,
    /// verified and used up by the edge.
    Confirmed { request_id: String },
    /// An admin key, which may answer without one; the answer is recorded as such.
    AdminKey,
}

impl Actor {
    pub fn new(name: impl Into<String>, channel: impl Into<String>) -> Self {
        Self {
            name: Some(name.into()),
            channel: channel.into(),
            groups: Vec::new(),
            principal: None,
            step_up: StepUp::None,
        }
    }

    /// The same actor, vouched for by `step_up`.
    pub fn stepped_up(mut self, step_up: StepUp) -> Self {
        self.step_up = step_up;
        self
    }

    /// The same actor, authenticated as `principal`.
    pub fn as_principal(mut self, principal: impl Into<String>) -> Self {
        self.principal = Some(principal.into());
        self
    }

    /// The same actor, a member of `groups` by the identity provider's word.
    pub fn in_groups(mut self, groups: Vec<String>) -> Self {
        self.groups = groups;
        self
    }

    /// The store itself, e.g. the expiry reaper.
    pub fn system() -> Self {
        Self {
            name: None,
            channel: "system".to_owned(),
            groups: Vec::new(),
            principal: None,
            step_up: StepUp::None,
        }
    }

    /// The surface an answer by this actor came through: its channel, or `None` for the system.
    pub fn answered_via(&self) -> Option<&str> {
        (self.channel != "system" && !self.channel.is_empty()).then_some(self.channel.as_str())
    }
}

/// One entry of the append-only event log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Event {
    /// Monotonic: a reader that has seen `seq` has seen every event before it.
    pub seq: u64,
    pub tenant: String,
    pub request_id: String,
    pub kind: EventKind,
    pub actor: Option<String>,
    pub channel: Option<String>,
    /// Who was authenticated (see [`Actor::principal`]).
    pub principal: Option<String>,
    pub at: DateTime<Utc>,
    /// The audit chain's hash of this event: hex SHA-256 of the previous event's hash and this
    /// event's canonical JSON.
    pub hash: String,
}

/// What happened to a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    Created,
    Answered,
    Skipped,
    Expired,
    Cancelled,
    /// A responder voted on a quorum request; the deciding vote is followed by `answered`.
    Voted,
    /// A pending request's reminder fell due.
    Reminded,
    /// A pending request escalated: `escalate_to` may answer from now on.
    Escalated,
    /// A pending request's expiry is near: its responders were warned (`warn_before`), once
    /// for each deadline.
    Warned,
    /// Someone who may answer a pending request moved its deadline (`expires_at`) later.
    Extended,
    /// An answer that came through a channel was refused and changed nothing: its sender may
    /// not answer the request (a stranger's e-mail reply, a chat account no one linked, someone
    /// not among the responders). The event names the sender (`principal`) and the channel.
    Refused,
    /// A person accepted the inbox's suggestion to always allow the action this request (the
    /// latest of its repeated `once` approvals) asked about: an `always` grant in their name.
    #[serde(rename = "grant.suggested_accepted")]
    GrantSuggestedAccepted,
    /// An event of a kind this release does not know, which a newer release sharing the
    /// database wrote (during a rolling upgrade): read past, never shown. Not in [`Self::ALL`].
    Unknown,
}

impl EventKind {
    pub const ALL: [EventKind; 12] = [
        EventKind::Created,
        EventKind::Answered,
        EventKind::Skipped,
        EventKind::Expired,
        EventKind::Cancelled,
        EventKind::Voted,
        EventKind::Reminded,
        EventKind::Escalated,
        EventKind::Warned,
        EventKind::Extended,
        EventKind::Refused,
        EventKind::GrantSuggestedAccepted,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Created => "created",
            Self::Answered => "answered",
            Self::Skipped => "skipped",
            Self::Expired => "expired",
            Self::Cancelled => "cancelled",
            Self::Voted => "voted",
            Self::Reminded => "reminded",
            Self::Escalated => "escalated",
            Self::Warned => "warned",
            Self::Extended => "extended",
            Self::Refused => "refused",
            Self::GrantSuggestedAccepted => "grant.suggested_accepted",
            Self::Unknown => "unknown",
        }
    }

    /// Whether this event resolves its request (its `seq` is the one the request's receipt
    /// names).
    pub fn resolves(self) -> bool {
        matches!(
            self,
            Self::Answered | Self::Skipped | Self::Expired | Self::Cancelled
        )
    }

    /// The kind called `s`; `None` for a name this release does not know (see
    /// [`Self::Unknown`]).
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.as_str() == s)
    }

    /// The event a resolution to `status` appends.
    pub fn for_status(status: Status) -> Self {
        match status {
            Status::Pending => Self::Created,
            Status::Answered => Self::Answered,
            Status::Skipped => Self::Skipped,
            Status::Expired => Self::Expired,
            Status::Cancelled => Self::Cancelled,
        }
    }
}
