//! Requests and their answers: creating a request (with the server's rules applied before it is
//! stored), reading and listing requests, and the answer pipeline: answering, skipping and
//! cancelling, and on a quorum request voting ([`votes`]).
//!
//! Each answer is checked first by who may answer ([`who_may_answer`]), then against the live
//! request, then written as one conditional update (or, on a quorum request, one vote in a
//! transaction that locks the request) together with the grants it gives, so exactly one writer
//! resolves a request. On SQLite an answer is checked on the request as the writer's
//! transaction that resolves it reads it, and that one read stands for the row as resolved. A resolution past the request's deadline loses to its expiry. Each
//! backend keeps the same concerns in its `requests.rs` and `votes.rs`.

mod on_call;
mod votes;
mod who_may_answer;

use chrono::TimeDelta;
use clarify_core::policy::canonical_json;
use clarify_core::{NewRequest, Resolution, Status, Submission, parse_submission};
use serde_json::Value;

use crate::Store;
use crate::backend::writes::{
    Decide, Decided, Decision, NewRow, Resolved, after_seconds, next_reminder, warning_at,
};
use crate::codec::sha256_hex;
use crate::error::{ResolveError, StoreError};
use crate::grants::StoredGrant;
use crate::options::Announce;
use crate::record::{
    Actor, Created, ListQuery, Page, RequestRecord, StoredResolution, decode_cursor,
};
use on_call::on_call_names;

impl Store {
    /// Stores a new request for `tenant`. A repeated idempotency key returns the original request
    /// whatever its status; with `dedupe`, an identical pending request of the same session is
    /// returned instead of a new one.
    ///
    /// With [`StoreOptions::announce`], one notification per channel it names is queued in the
    /// same transaction, for channel workers to claim ([`Store::claim_notifications`]); a request
    /// returned by its idempotency key or by `dedupe` was announced when it was created. So is
    /// one push per Web Push subscription whose person may answer it (`push:<id>`, claimed by
    /// [`Store::claim_pushes`]).
    ///
    /// With [`StoreOptions::rules`], a one-question approval is decided here, so every path
    /// that creates one (HTTP, MCP, the hooks and the gate through either, the Rust API) shares
    /// the rules: an `ask` rule changes the request before it is stored (and before routes pick
    /// its channels); an `allow` or `deny` rule's request is stored, announced nowhere, and
    /// resolved at once by the rule, as `policy:<name>` through `policy`, so its events, webhook
    /// and audit entries are those of any decision.
    pub async fn create(
        &self,
        tenant: &str,
        mut request: NewRequest,
    ) -> Result<Created, StoreError> {
        if let Some(earlier) = &request.revises {
            self.check_revises(tenant, earlier).await?;
        }
        let id = self.inner.ids.request_id();
        let decided = self.apply_rules(&id, &mut request);
        let mut channels = match (&self.inner.announce, &decided) {
            (Some(Announce(pick)), None) => pick(tenant, &request),
            _ => Vec::new(),
        };
        if decided.is_none() {
            channels.extend(self.push_channels(tenant, &request).await?);
        }
        let created_at = self.now();
        let expires_at = request
            .timeout()
            .and_then(|s| i64::try_from(s).ok())
            .map(|s| created_at + TimeDelta::seconds(s));
        let dedupe_key = request.dedupe.then(|| dedupe_key(&request));
        let remind_at = next_reminder(&request, created_at);
        let escalate_at = after_seconds(created_at, request.escalate_after_seconds);
        let on_call = match &decided {
            None => self.read_on_call(&id, on_call_names(&request)).await,
            Some(_) => Vec::new(),
        };
        if request.timeout().is_some() && request.warn_before_seconds.is_none() {
            // A route's period is kept with the request, as an `ask` rule's settings are, so
            // its record (and a warning's words) say it; without one the default applies.
            request.warn_before_seconds = self.routes_warn_before(tenant, &request);
        }
        let warn_before = warn_before(&request);
        let warn_at = warning_at(expires_at, warn_before, created_at);
        let created = self
            .inner
            .backend
            .create(NewRow {
                id,
                tenant: tenant.to_owned(),
                request,
                created_at,
                expires_at,
                dedupe_key,
                remind_at,
                escalate_at,
                warn_before,
                warn_at,
                announce: channels,
                on_call,
            })
            .await?;
        if created.created {
            self.observed(|o| o.created(&created.record));
        }
        match decided {
            Some(rule) if created.created => self.resolve_by_rule(created, &rule).await,
            _ => Ok(created),
        }
    }

    /// The warning period the routes give `request` of `tenant`, if any.
    fn routes_warn_before(&self, tenant: &str, request: &NewRequest) -> Option<u64> {
        self.deadlines()
            .warn_before
            .as_ref()
            .and_then(|crate::WarnBefore(pick)| pick(tenant, request))
    }

    /// What the rules make of `request` (about to be stored as `id`): an `ask` rule's settings
    /// are applied to it; an `allow` or `deny` rule is returned, to resolve it once stored.
    fn apply_rules(
        &self,
        id: &str,
        request: &mut NewRequest,
    ) -> Option<clarify_core::rules::Matched> {
        let rules = self.inner.rules.as_ref()?;
        let call = clarify_core::rules::Call::of(request)?;
        let verdict = rules.decide(&call);
        for failure in verdict.errors.iter().filter(|f| f.first) {
            // `request`, as every line about a request names it: `request_id` is the HTTP
            // call's id, which the span of the call being served carries.
            tracing::warn!(
                rule = failure.rule.as_str(),
                request = id,
                error = failure.error.as_str(),
                "a rule's condition failed to evaluate, so the rule did not match; \
                 this is logged once per rule"
            );
        }
        let matched = verdict.matched?;
        if matched.decide == clarify_core::rules::Decide::Ask {
            matched.ask.apply(request);
            return None;
        }
        Some(matched)
    }

    /// Resolves a request just created as `rule` decided it.
    async fn resolve_by_rule(
        &self,
        mut created: Created,
        rule: &clarify_core::rules::Matched,
    ) -> Result<Created, StoreError> {
        let Some(body) = rule.answer() else {
            return Ok(created);
        };
        let record = &created.record;
        let submission = parse_submission(&record.request, &body).map_err(|e| {
            StoreError::Backend(format!("the rule's decision does not fit the request: {e}"))
        })?;
        let stored = StoredResolution::new(
            resolution_of(submission),
            Actor::new(format!("policy:{}", rule.name), "policy"),
            self.now(),
        );
        match self.resolve_stored(&record.id, stored, &[]).await {
            Ok(resolved) => {
                created.record = resolved;
                Ok(created)
            }
            Err(ResolveError::AlreadyResolved(resolved)) => {
                created.record = *resolved;
                Ok(created)
            }
            Err(ResolveError::Store(e)) => Err(e),
            Err(other) => Err(StoreError::Backend(other.to_string())),
        }
    }

    /// What the rules would decide for `call`, without creating anything (`None` without
    /// rules).
    pub fn check_rules(
        &self,
        call: &clarify_core::rules::Call,
    ) -> Option<clarify_core::rules::Verdict> {
        let verdict = self.inner.rules.as_ref()?.decide(call);
        for failure in verdict.errors.iter().filter(|f| f.first) {
            tracing::warn!(
                rule = failure.rule.as_str(),
                error = failure.error.as_str(),
                "a rule's condition failed to evaluate on a policy check, so the rule did not \
                 match; this is logged once per rule"
            );
        }
        Some(verdict)
    }

    /// A revision follows a decision: `earlier` must be a resolved request of the same tenant.
    async fn check_revises(&self, tenant: &str, earlier: &str) -> Result<(), StoreError> {
        let reason = match self.get(tenant, earlier).await? {
            None => format!("there is no request {}", clarify_core::quoted(earlier)),
            Some(r) if !r.status.is_resolved() => format!(
                "request {} is still pending; a revision follows a decision",
                clarify_core::quoted(earlier)
            ),
            Some(_) => return Ok(()),
        };
        Err(StoreError::Rejected(
            clarify_core::ValidationError::InvalidRevises { reason },
        ))
    }

    /// The request, if it exists in `tenant`.
    pub async fn get(&self, tenant: &str, id: &str) -> Result<Option<RequestRecord>, StoreError> {
        Ok(self
            .inner
            .backend
            .get(id)
            .await?
            .filter(|r| r.tenant == tenant))
    }

    /// The request with this id, whatever its tenant: only for callers that already hold a
    /// capability for it (a signed answer link).
    pub async fn get_by_id(&self, id: &str) -> Result<Option<RequestRecord>, StoreError> {
        self.inner.backend.get(id).await
    }

    /// How many requests are pending in the whole store, every tenant together.
    pub async fn count_pending(&self) -> Result<u64, StoreError> {
        Ok(self.pending_at().await?.0)
    }

    /// How many requests are pending in the whole store, and the sequence number of the last
    /// event, read in one snapshot: a count that events after that number keep up to date
    /// (`created` adds one, each resolution takes one away).
    pub async fn pending_at(&self) -> Result<(u64, u64), StoreError> {
        self.inner.backend.pending_at().await
    }

    /// A page of `tenant`'s requests, newest first.
    pub async fn list(&self, tenant: &str, query: &ListQuery) -> Result<Page, StoreError> {
        let before = match &query.cursor {
            None => None,
            Some(c) => Some(decode_cursor(c).ok_or(StoreError::InvalidCursor)?),
        };
        self.inner.backend.list(tenant, query, before).await
    }

    /// Records that `actor` tried to answer request `id` of `tenant` through a channel and was
    /// refused (a `refused` event in its history and the audit chain; nothing else changes), so
    /// an operator finds a stranger's or a non-responder's attempt where the request's story is
    /// told. `false` when the request does not exist in `tenant`.
    pub async fn refused(&self, tenant: &str, id: &str, actor: &Actor) -> Result<bool, StoreError> {
        let now = self.now();
        self.inner.backend.refused(tenant, id, actor, now).await
    }

    /// Answers (or skips) the request with a raw answer body, checked against the live request.
    ///
    /// On a quorum request (`approvals_required` above 1) an answer is the responder's vote: the
    /// returned record is still pending, with the vote in its `votes`, until enough responders
    /// approved or one denied. A responder votes once ([`ResolveError::AlreadyVoted`]); an
    /// anonymous actor cannot vote ([`ResolveError::QuorumNeedsIdentity`]).
    pub async fn answer(
        &self,
        tenant: &str,
        id: &str,
        body: &Value,
        actor: &Actor,
    ) -> Result<RequestRecord, ResolveError> {
        // Who may answer, and whether the answer fits, are decided on the request as the
        // transaction that resolves it reads it (on SQLite, where that costs one read of the row
        // instead of a read before and one after). The closure holds a handle to the store; were
        // it the last one (an answer cancelled at shutdown), dropping it on the thread that runs
        // the writer's queue would join no thread and wait on nothing.
        let (store, body, by) = (self.clone(), body.clone(), actor.clone());
        let decide: Decide = Box::new(move |record| {
            store.may_answer(record, &by)?;
            let submission = parse_submission(&record.request, &body)?;
            Ok(store.decide(record, submission, &by))
        });
        match self
            .inner
            .backend
            .resolve_decided(tenant, id, decide)
            .await?
        {
            Decided::Resolved(resolved) => self.settle(id, *resolved).await,
            Decided::Refused(e) => Err(e),
            Decided::Vote(record, answers) => self.vote(&record, answers, actor).await,
        }
    }

    /// Resolves the request with an already-checked submission.
    pub async fn submit(
        &self,
        tenant: &str,
        id: &str,
        submission: Submission,
        actor: &Actor,
    ) -> Result<RequestRecord, ResolveError> {
        let record = self.pending(tenant, id, actor).await?;
        self.resolve_answer(&record, submission, actor).await
    }

    /// Skips the request, when it allows skipping.
    pub async fn skip(
        &self,
        tenant: &str,
        id: &str,
        actor: &Actor,
    ) -> Result<RequestRecord, ResolveError> {
        let record = self.pending(tenant, id, actor).await?;
        if !record.request.allow_skip {
            return Err(ResolveError::Invalid(
                clarify_core::AnswerError::SkipNotAllowed,
            ));
        }
        self.resolve(id, Resolution::Skipped, actor).await
    }

    /// Cancels the request: nobody answers it any more.
    pub async fn cancel(
        &self,
        tenant: &str,
        id: &str,
        actor: &Actor,
    ) -> Result<RequestRecord, ResolveError> {
        match self.get(tenant, id).await? {
            None => Err(ResolveError::NotFound),
            Some(r) if r.status.is_resolved() => Err(ResolveError::AlreadyResolved(Box::new(r))),
            Some(_) => self.resolve(id, Resolution::Cancelled, actor).await,
        }
    }

    /// Resolves the pending `record` with a checked submission (or, on a quorum request, casts
    /// it as a vote), with the grants the answer gives.
    async fn resolve_answer(
        &self,
        record: &RequestRecord,
        submission: Submission,
        actor: &Actor,
    ) -> Result<RequestRecord, ResolveError> {
        match self.decide(record, submission, actor) {
            Decision::Vote(answers) => self.vote(record, answers, actor).await,
            Decision::Resolve(stored, grants) => {
                self.resolve_stored(&record.id, stored, &grants).await
            }
        }
    }

    /// What a checked submission on the pending `record` comes to: on a quorum request an
    /// answer is a vote; otherwise the resolution, with the grants the answer gives.
    fn decide(&self, record: &RequestRecord, submission: Submission, actor: &Actor) -> Decision {
        if let (true, Submission::Answered(answers)) = (record.request.is_quorum(), &submission) {
            return Decision::Vote(answers.clone());
        }
        let resolved_at = self.now();
        let grants = match &submission {
            Submission::Answered(answers) => self.grants_for(record, answers, actor, resolved_at),
            Submission::Skipped => Vec::new(),
        };
        let stored = StoredResolution::new(resolution_of(submission), actor.clone(), resolved_at);
        Decision::Resolve(stored, grants)
    }

    async fn resolve(
        &self,
        id: &str,
        resolution: Resolution,
        actor: &Actor,
    ) -> Result<RequestRecord, ResolveError> {
        let stored = StoredResolution::new(resolution, actor.clone(), self.now());
        self.resolve_stored(id, stored, &[]).await
    }

    pub(crate) async fn resolve_stored(
        &self,
        id: &str,
        stored: StoredResolution,
        grants: &[StoredGrant],
    ) -> Result<RequestRecord, ResolveError> {
        let resolved = self.inner.backend.resolve(id, stored, grants).await?;
        self.settle(id, resolved).await
    }

    /// What a resolution of request `id` came to, for the caller: the record it won, or why
    /// not (a request past its deadline is expired rather than resolved late).
    async fn settle(&self, id: &str, resolved: Resolved) -> Result<RequestRecord, ResolveError> {
        match resolved {
            Resolved::Won(record) => {
                self.inner.waiters.resolved(&record);
                self.observed(|o| o.resolved(&record));
                Ok(record)
            }
            Resolved::Lost(record) if record.status == Status::Pending => {
                // Past its deadline: it expires rather than accept a late resolution.
                let record = self.expire_one(id).await?.unwrap_or(record);
                Err(ResolveError::AlreadyResolved(Box::new(record)))
            }
            Resolved::Lost(record) => Err(ResolveError::AlreadyResolved(Box::new(record))),
            Resolved::NotFound => Err(ResolveError::NotFound),
        }
    }
}

/// The resolution a checked answer or skip makes.
fn resolution_of(submission: Submission) -> Resolution {
    match submission {
        Submission::Answered(answers) => Resolution::Answered(answers),
        Submission::Skipped => Resolution::Skipped,
    }
}

/// What makes two requests "identical" for `dedupe`: everything the human is shown.
fn dedupe_key(request: &NewRequest) -> String {
    let shown = serde_json::json!({
        "questions": request.questions,
        "context": request.context,
        "agent": request.agent,
        "tags": request.tags,
        "allow_skip": request.allow_skip,
    });
    sha256_hex(&canonical_json(&shown))
}

/// How long before its deadline `request` warns its responders, in seconds (`None`: never): its
/// `warn_before_seconds` (its own, or its routes' once `create` has kept them there), else
/// [`crate::DEFAULT_WARN_BEFORE`]; never for a request that does not expire.
fn warn_before(request: &NewRequest) -> Option<u64> {
    request.timeout()?;
    let seconds = request
        .warn_before_seconds
        .unwrap_or(crate::DEFAULT_WARN_BEFORE);
    (seconds > 0).then_some(seconds)
}
