//! Approval policy: does a proposed tool call run, get refused, or need a human?
//!
//! A [`Policy`] holds allow and deny lists of tool-name patterns (exact names, `prefix*`, or `*`,
//! all ignoring case). Deny wins over everything, then allow, then a remembered [`Grant`]: a human
//! who approved a call with scope `session` or `always` is not asked again for the same tool with
//! the same arguments (compared as canonical JSON, so key order does not matter) in that session,
//! or ever. Anything else is [`PolicyDecision::Ask`]: raise an approval question.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::model::Scope;

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
        let tool = tool.to_lowercase();
        match self {
            Self::Any => true,
            Self::Prefix(prefix) => tool.starts_with(prefix.as_str()),
            Self::Exact(name) => tool == *name,
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
