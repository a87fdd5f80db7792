//! Approval policy: does a proposed tool call run, get refused, or need a human?
//!
//! A [`Policy`] holds allow and deny lists of tool-name patterns (exact names, `prefix*`, or `*`,
//! all ignoring case). Deny wins over everything, then allow, then a remembered [`Grant`]: a human
//! who approved a call with scope `session` or `always` is not asked again for the same tool with
//! the same arguments (compared as canonical JSON, so key order does not matter) in that session,
//! or ever. Anything else is [`PolicyDecision::Ask`]: raise an approval question.
//!
//! What follows a decision is pure too, so every way of reaching clarify (the store, the HTTP
//! client) gates a call the same way: [`ApprovalSpec::request`] builds the approval question for
//! a call, [`ApprovalReply`] reads the human's answer out of its outcome, and [`settle`] turns it
//! into a [`Verdict`]: run the tool (with the human's edited arguments, if any, remembering a
//! `session` or `always` grant), or refuse it with a reason the model is told. Only an explicit
//! approval runs a tool: a skipped, expired or cancelled approval refuses it.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::answer::{Answer, Answers, Decision};
use crate::model::{Action, NewRequest, QuestionKind, Scope, Status};
use crate::outcome::Outcome;

/// A tool-name pattern: `*`, `prefix*`, or an exact name; matched ignoring case.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolPattern {
    Any,
    Prefix(String),
    Exact(String),
}

impl ToolPattern {
    pub fn parse(pattern: &str) -> Self {
        let p = pattern.trim().to_lowercase();
        if p == "*" {
            Self::Any
        } else if let Some(prefix) = p.strip_suffix('*') {
            Self::Prefix(prefix.to_owned())
        } else {
            Self::Exact(p)
        }
    }

    pub fn matches(&self, tool: &str) -> bool {
        self.matches_lowercase(&tool.to_lowercase())
    }

    /// [`Self::matches`] for a name already lowercased.
    pub fn matches_lowercase(&self, tool: &str) -> bool {
        match self {
            Self::Any => true,
            Self::Prefix(prefix) => tool.starts_with(prefix.as_str()),
            Self::Exact(name) => tool == name,
        }
    }
}

/// Allow and deny lists.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Policy {
    allow: Vec<ToolPattern>,
    deny: Vec<ToolPattern>,
}

/// What to do with a proposed tool call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PolicyDecision {
    /// Run it: the allow list names it.
    Allowed,
    /// Run it: a human granted it earlier with this scope.
    Granted(Scope),
    /// Refuse it: the deny list names it.
    Denied,
    /// Ask a human.
    Ask,
}

/// A remembered approval of one tool with one set of arguments.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Grant {
    /// The tool name, lowercased.
    pub tool: String,
    /// [`canonical_json`] of the arguments.
    pub arguments: String,
    /// `session` grants hold in this session only; `always` grants everywhere in the tenant.
    pub scope: Scope,
    /// The session of a `session` grant.
    pub session: Option<String>,
}

impl Grant {
    /// The grant a human gave by approving `tool(arguments)` with `scope`; `None` for `once`,
    /// which is never remembered, and for a `session` scope outside any session.
    pub fn new(tool: &str, arguments: &Value, scope: Scope, session: Option<&str>) -> Option<Self> {
        let session = match scope {
            Scope::Once => return None,
            Scope::Session => Some(session?.to_owned()),
            Scope::Always => None,
        };
        Some(Self {
            tool: tool.trim().to_lowercase(),
            arguments: canonical_json(arguments),
            scope,
            session,
        })
    }

    /// Whether this grant covers `tool(arguments)` in `session`.
    pub fn covers(&self, tool: &str, arguments: &Value, session: Option<&str>) -> bool {
        self.tool == tool.trim().to_lowercase()
            && self.arguments == canonical_json(arguments)
            && match self.scope {
                Scope::Always => true,
                Scope::Session => self.session.is_some() && self.session.as_deref() == session,
                Scope::Once => false,
            }
    }
}

impl Policy {
    pub fn new<A: AsRef<str>, D: AsRef<str>>(allow: &[A], deny: &[D]) -> Self {
        Self {
            allow: allow
                .iter()
                .map(|p| ToolPattern::parse(p.as_ref()))
                .collect(),
            deny: deny
                .iter()
                .map(|p| ToolPattern::parse(p.as_ref()))
                .collect(),
        }
    }

    /// Decides a proposed call of `tool` with `arguments` in `session`, given remembered grants.
    pub fn decide(
        &self,
        tool: &str,
        arguments: &Value,
        session: Option<&str>,
        grants: &[Grant],
    ) -> PolicyDecision {
        if self.deny.iter().any(|p| p.matches(tool)) {
            return PolicyDecision::Denied;
        }
        if self.allow.iter().any(|p| p.matches(tool)) {
            return PolicyDecision::Allowed;
        }
        // An `always` grant is the stronger statement, so report it first.
        let mut covering: Vec<Scope> = grants
            .iter()
            .filter(|g| g.covers(tool, arguments, session))
            .map(|g| g.scope)
            .collect();
        covering.sort_unstable();
        match covering.last() {
            Some(&scope) => PolicyDecision::Granted(scope),
            None => PolicyDecision::Ask,
        }
    }
}

/// How an approval question is put to a human.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApprovalSpec {
    /// The scopes offered; `session` is left out for a call outside any session.
    pub scopes: Vec<Scope>,
    /// Whether the human may edit the arguments before approving.
    pub allow_edit: bool,
    /// Seconds until the approval expires: `None` for the default, `Some(0)` for never.
    pub timeout_seconds: Option<u64>,
}

impl Default for ApprovalSpec {
    /// Every scope, no edits, the default time limit.
    fn default() -> Self {
        Self {
            scopes: Scope::ALL.to_vec(),
            allow_edit: false,
            timeout_seconds: None,
        }
    }
}

impl ApprovalSpec {
    /// The request body (the contract's create shape) asking a human to approve `action`,
    /// raised by tool call `tool_call_id` in `session`. Callers add what else they need
    /// (`agent`, `context`, `idempotency_key`) before sending it.
    pub fn request(
        &self,
        action: &Action,
        tool_call_id: Option<&str>,
        session: Option<&str>,
    ) -> Value {
        let mut scopes: Vec<Scope> = self
            .scopes
            .iter()
            .copied()
            .filter(|s| *s != Scope::Session || session.is_some())
            .collect();
        if scopes.is_empty() {
            scopes.push(Scope::Once);
        }
        let mut body = Map::new();
        body.insert(
            "questions".to_owned(),
            // No header: the request's summary names the action, and a chip reading "Approval"
            // beside the kind would only say it twice.
            json!([{
                "text": format!("Allow the agent to run {}?", action.name),
                "kind": "approval",
                "action": action,
                "scopes": scopes,
                "allow_edit": self.allow_edit,
            }]),
        );
        for (key, value) in [("tool_call_id", tool_call_id), ("session", session)] {
            if let Some(value) = value {
                body.insert(key.to_owned(), Value::from(value));
            }
        }
        if let Some(timeout) = self.timeout_seconds {
            body.insert("timeout_seconds".to_owned(), Value::from(timeout));
        }
        Value::Object(body)
    }
}

/// The action an approval request asks about: that of its first approval question.
pub fn approval_action(request: &NewRequest) -> Option<&Action> {
    request.questions.iter().find_map(|q| match &q.kind {
        QuestionKind::Approval(a) => Some(&a.action),
        _ => None,
    })
}

/// An outcome that cannot be read as the outcome of an approval.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ApprovalError {
    #[error("request {request_id} is still pending; wait for it to resolve")]
    Pending { request_id: String },
    #[error("request {request_id} has no approval question")]
    NotAnApproval { request_id: String },
    #[error("the outcome is malformed: {0}")]
    Malformed(String),
}

/// What a human's answer to an approval says, read from its outcome.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApprovalReply {
    /// Never `pending`.
    pub status: Status,
    /// Present when answered.
    pub decision: Option<Decision>,
    pub scope: Option<Scope>,
    pub edited_arguments: Option<Value>,
    pub reason: Option<String>,
    /// The outcome's note on a request nobody answered.
    pub note: Option<String>,
}

impl ApprovalReply {
    pub fn from_outcome(outcome: &Outcome) -> Result<Self, ApprovalError> {
        let question = outcome
            .questions
            .iter()
            .find(|q| q.kind == "approval")
            .ok_or_else(|| ApprovalError::NotAnApproval {
                request_id: outcome.request_id.clone(),
            })?;
        Ok(Self {
            status: outcome.status,
            decision: question.decision,
            scope: question.scope,
            edited_arguments: question.edited_arguments.clone(),
            reason: question.reason.clone(),
            note: outcome.note.clone(),
        })
    }

    /// Reads the outcome JSON a server returns (the contract's outcome shape).
    pub fn from_json(outcome: &Value) -> Result<Self, ApprovalError> {
        let request_id = outcome["request_id"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let status: Status = serde_json::from_value(outcome["status"].clone())
            .map_err(|e| ApprovalError::Malformed(format!("status: {e}")))?;
        if status == Status::Pending {
            return Err(ApprovalError::Pending { request_id });
        }
        let question = outcome["questions"]
            .as_array()
            .and_then(|qs| qs.iter().find(|q| q["kind"] == "approval"))
            .ok_or(ApprovalError::NotAnApproval { request_id })?;
        let decision = match question["decision"].as_str() {
            None => None,
            Some(d) if Decision::parse(d).is_some() => Decision::parse(d),
            Some(other) => {
                return Err(ApprovalError::Malformed(format!(
                    "unknown decision {other:?}"
                )));
            }
        };
        let scope = match question["scope"].as_str() {
            None => None,
            Some(name) => Some(
                Scope::parse(name)
                    .ok_or_else(|| ApprovalError::Malformed(format!("unknown scope {name:?}")))?,
            ),
        };
        let text = |v: &Value| v.as_str().map(str::to_owned);
        Ok(Self {
            status,
            decision,
            scope,
            edited_arguments: question
                .get("edited_arguments")
                .filter(|v| !v.is_null())
                .cloned(),
            reason: text(&question["reason"]),
            note: text(&outcome["note"]),
        })
    }
}

/// What to do with a gated tool call.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// Run the tool with `arguments`: the proposed ones, or the human's edit of them.
    Run {
        arguments: Value,
        /// Whether a human changed the arguments; tell the model (see [`edited_result`]).
        edited: bool,
        /// The grant to remember, for a `session` or `always` approval.
        grant: Option<Grant>,
    },
    /// Do not run it; send [`Refusal::tool_result`] to the model as the call's result.
    Refuse(Refusal),
}

/// Why a tool call did not run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// `blocked` (the policy denies the tool), `denied` (a human did), `revise` (a human asked
    /// for changes), or the status of an
    /// approval nobody gave: `skipped`, `expired`, `cancelled`.
    pub status: &'static str,
    /// For the model, in plain words.
    pub reason: String,
}

impl Refusal {
    /// The policy's deny list names `tool`.
    pub fn blocked(tool: &str) -> Self {
        Self {
            status: "blocked",
            reason: format!(
                "The tool {tool} is not allowed here, so it was not run. Do not call it again; \
                 find another way or tell the user."
            ),
        }
    }

    /// The call's result for the model, as JSON text.
    pub fn tool_result(&self) -> String {
        json!({"status": self.status, "reason": self.reason}).to_string()
    }
}

/// The grants an answer to `request` gives: one for each approval question approved with scope
/// `session` (when the request has a session) or `always`, covering the arguments that run (the
/// human's edit, if any). A store records them in the transaction that records the answer, so a
/// grant exists exactly when such an answer does.
pub fn grants_of(request: &NewRequest, answers: &Answers) -> Vec<Grant> {
    bounded_grants_of(request, answers)
        .into_iter()
        .map(|(grant, _)| grant)
        .collect()
}

/// How long and how often a grant holds; unbounded when both are `None`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GrantBounds {
    /// Seconds from when it is given until it stops matching.
    pub ttl_seconds: Option<u64>,
    /// Calls it lets through before it stops matching.
    pub max_uses: Option<u32>,
}

/// [`grants_of`], each with the bounds (`grant_ttl_seconds`, `grant_max_uses`) its answer gave.
pub fn bounded_grants_of(request: &NewRequest, answers: &Answers) -> Vec<(Grant, GrantBounds)> {
    request
        .questions
        .iter()
        .filter_map(|q| {
            let QuestionKind::Approval(approval) = &q.kind else {
                return None;
            };
            let Some(Answer::Approval(answer)) = answers.get(&q.id) else {
                return None;
            };
            if answer.decision != Decision::Approve {
                return None;
            }
            let arguments = answer
                .edited_arguments
                .as_ref()
                .unwrap_or(&approval.action.arguments);
            let grant = Grant::new(
                &approval.action.name,
                arguments,
                answer.scope,
                request.session.as_deref(),
            )?;
            let bounds = GrantBounds {
                ttl_seconds: answer.grant_ttl_seconds,
                max_uses: answer.grant_max_uses,
            };
            Some((grant, bounds))
        })
        .collect()
}

/// What the human's `reply` to an approval of `action`, asked in `session`, means for the call.
///
/// An approval runs the tool with the edited arguments when there are any, and remembers a
/// `session` or `always` grant for the arguments that run: what the human approved. Anything
/// else refuses the call.
pub fn settle(action: &Action, session: Option<&str>, reply: &ApprovalReply) -> Verdict {
    const NOT_RUN: &str = "The tool was not run.";
    match (reply.status, reply.decision) {
        (Status::Answered, Some(Decision::Approve)) => {
            let arguments = reply
                .edited_arguments
                .clone()
                .unwrap_or_else(|| action.arguments.clone());
            let edited = arguments != action.arguments;
            let grant = reply
                .scope
                .and_then(|scope| Grant::new(&action.name, &arguments, scope, session));
            Verdict::Run {
                arguments,
                edited,
                grant,
            }
        }
        // Nobody answered, and the request's own `on_timeout` default approves: the one who
        // asked chose that fallback, for this one call only.
        (Status::Expired, Some(Decision::Approve)) => Verdict::Run {
            arguments: action.arguments.clone(),
            edited: false,
            grant: None,
        },
        (Status::Answered, Some(Decision::Revise)) => Verdict::Refuse(Refusal {
            status: "revise",
            reason: format!(
                "{} {NOT_RUN} Change the call as asked and propose it again.",
                changes_requested(reply.reason.as_deref().unwrap_or_default())
            ),
        }),
        (Status::Answered, _) => Verdict::Refuse(Refusal {
            status: "denied",
            reason: match reply.reason.as_deref().map(str::trim) {
                Some(reason) if !reason.is_empty() => {
                    format!("The human denied this call: {reason} {NOT_RUN}")
                }
                _ => format!("The human denied this call without giving a reason. {NOT_RUN}"),
            },
        }),
        (status, _) => Verdict::Refuse(Refusal {
            status: status.as_str(),
            reason: match &reply.note {
                Some(note) => format!("{NOT_RUN} No approval was given: {note}"),
                None => format!("{NOT_RUN} No approval was given ({status})."),
            },
        }),
    }
}

/// How a request for changes is told to the agent: `Changes requested: <reason>`, the words every
/// adapter (hooks, gate, SDKs) starts its refusal with.
pub fn changes_requested(reason: &str) -> String {
    format!("Changes requested: {}", reason.trim())
}

/// The result of a call a human approved with edited arguments: the tool's output and the
/// arguments it ran with, so the model does not assume its own.
pub fn edited_result(arguments: &Value, output: &str) -> String {
    json!({
        "note": "The human edited the arguments before approving; the tool ran with these arguments.",
        "arguments": arguments,
        "output": output,
    })
    .to_string()
}

/// Compact JSON with object keys sorted at every level: equal values give equal text whatever
/// the key order they arrived in.
pub fn canonical_json(v: &Value) -> String {
    let mut out = String::new();
    write_canonical(v, &mut out);
    out
}

fn write_canonical(v: &Value, out: &mut String) {
    match v {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(k.clone()).to_string());
                out.push(':');
                write_canonical(&map[k], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}
