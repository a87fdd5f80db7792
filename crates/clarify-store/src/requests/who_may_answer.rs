//! Who may answer a request: the rule people ask about first, so it has a file of its own.
//!
//! Every path that answers, votes on or skips a request (HTTP, MCP, chat, e-mail, the Rust API)
//! goes through [`Store::may_answer`] before anything is written (through [`Store::pending`],
//! or for an answer in the transaction that resolves it), so the rule is the same on all of
//! them. In the order it is checked:
//! - step-up (`[decisions] step_up`): a request of that risk or above takes a fresh passkey
//!   confirmation for this very request, or an admin key;
//! - responders: a request that names its responders (people, or `group:NAME` with the groups
//!   of [`Store::groups_of`]) is answered only by them, or by its `escalate_to` once escalated;
//! - four eyes (`[decisions] forbid_self_approval`): the person a request acts for
//!   (`on_behalf_of`) may not answer it, and on such a request an answer without a name is
//!   refused, since it could be theirs.
//!
//! Quorum requests add one rule in the answer pipeline ([`crate::requests`]): a vote needs a
//! name.

use crate::Store;
use crate::error::ResolveError;
use crate::record::{Actor, RequestRecord, StepUp};

impl Store {
    /// The pending request, checked for tenant and responder.
    pub(crate) async fn pending(
        &self,
        tenant: &str,
        id: &str,
        actor: &Actor,
    ) -> Result<RequestRecord, ResolveError> {
        let record = self.get(tenant, id).await?.ok_or(ResolveError::NotFound)?;
        self.may_answer(&record, actor)?;
        Ok(record)
    }

    /// Whether `actor` may answer `record` now: [`Store::pending`]'s checks on a request
    /// already read (in the transaction that resolves it, for [`Store::answer`]).
    pub(crate) fn may_answer(
        &self,
        record: &RequestRecord,
        actor: &Actor,
    ) -> Result<(), ResolveError> {
        if record.status.is_resolved() {
            return Err(ResolveError::AlreadyResolved(Box::new(record.clone())));
        }
        if self.needs_step_up(&record.request) {
            let vouched = match &actor.step_up {
                StepUp::None => false,
                StepUp::AdminKey => true,
                StepUp::Confirmed { request_id } => *request_id == record.id,
            };
            if !vouched {
                return Err(ResolveError::StepUpRequired);
            }
        }
        match &actor.name {
            Some(name) => {
                if !record.allows_responder(name, &self.groups_of(name, &actor.groups)) {
                    return Err(ResolveError::NotAllowed {
                        responder: name.clone(),
                    });
                }
                if self.inner.forbid_self_approval && record.request.acts_for(name) {
                    return Err(ResolveError::SelfApproval {
                        responder: name.clone(),
                    });
                }
            }
            None => {
                if let (true, Some(person)) = (
                    self.inner.forbid_self_approval,
                    &record.request.on_behalf_of,
                ) {
                    return Err(ResolveError::SelfApprovalNeedsIdentity {
                        person: person.clone(),
                    });
                }
            }
        }
        Ok(())
    }

    /// The groups `name` is in: those the identity provider gave (`claimed`) and those the
    /// configuration's `[groups]` list them in.
    pub fn groups_of(&self, name: &str, claimed: &[String]) -> Vec<String> {
        let mut groups: Vec<String> = claimed.to_vec();
        for (group, members) in self.inner.groups.iter() {
            if members.iter().any(|m| m == name) && !groups.contains(group) {
                groups.push(group.clone());
            }
        }
        groups
    }

    /// The configured members of `group` (`[groups]`); a provider's claim may add others, who
    /// cannot be listed.
    pub fn members_of(&self, group: &str) -> Vec<String> {
        self.inner.groups.get(group).cloned().unwrap_or_default()
    }

    /// Whether answering `request` needs a passkey confirmation (`[decisions] step_up`): chat,
    /// e-mail and push offer only "Open in clarify" for it.
    pub fn needs_step_up(&self, request: &clarify_core::NewRequest) -> bool {
        self.inner
            .step_up
            .is_some_and(|threshold| request.risk >= threshold)
    }

    /// Whether the store refuses answers from the person a request acts for.
    pub fn forbids_self_approval(&self) -> bool {
        self.inner.forbid_self_approval
    }
}
