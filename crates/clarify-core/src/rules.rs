//! Rules that read a call's arguments: the server's `[[rules]]`, in CEL.
//!
//! A [`RuleSpec`] names a tool pattern (as in [`crate::policy`]), an optional `when` condition in
//! CEL (the Common Expression Language) over the call, and what follows when both match: allow
//! it, deny it, or ask a person with some settings of the request changed ([`AskSettings`]).
//! [`Rules::compile`] checks every rule once, before anything is served; [`Rules::decide`] finds
//! the first rule that matches a [`Call`].
//!
//! What a condition sees ([`VARIABLES`]): `tool` (the tool's name as sent), `args` (its
//! arguments, a map), `agent`, `session`, `cwd` and `on_behalf_of` (strings, or `null` when the
//! request has none), and `tags` (a list of strings). The CEL standard library, its macros
//! (`has`, `all`, `exists`, `exists_one`, `map`, `filter`) and the strings extension
//! (`lowerAscii`, `split`, ...) are available.
//!
//! Bounds. CEL has no loops of its own, but its macros iterate; the library has no budget or
//! cancellation of its own, so each evaluation is bounded by what compiling allows and what an
//! evaluation is given: an expression is at most [`MAX_EXPRESSION_BYTES`] long with at most
//! [`MAX_NODES`] nodes, macros do not nest (one iteration over a list, never one inside
//! another), and the arguments are bound only when their JSON is at most [`MAX_ARGS_BYTES`] long
//! and [`MAX_ARGS_DEPTH`] deep. So one evaluation does at most a few hundred steps per element
//! of an input of bounded size. A condition over arguments past those bounds fails to evaluate.
//!
//! Errors. A rule that does not compile, names a variable the call does not have, or cannot be
//! boolean is refused by [`Rules::compile`], naming the rule and the column. A condition that
//! fails while evaluating (a missing argument: `args.amount` on a call without one; a wrong
//! type) does not match, and [`Verdict::errors`] reports it the first time each rule fails, so
//! a caller logs it once per rule.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use cel::common::ast::{EntryExpr, Expr, LiteralValue};
use cel::objects::{Key, Map as CelMap};
use cel::{Context as CelContext, Env, IdedExpr, Program, Value as CelValue};
use serde_json::Value;

use crate::answer::Decision;
use crate::model::{Context, NewRequest, OnTimeout, QuestionKind};
use crate::policy::ToolPattern;

/// The variables a condition may read.
pub const VARIABLES: [&str; 7] = [
    "tool",
    "args",
    "agent",
    "session",
    "tags",
    "cwd",
    "on_behalf_of",
];

/// The longest `when`, in bytes.
pub const MAX_EXPRESSION_BYTES: usize = 4_096;
/// The most nodes a compiled `when` may have (each literal, name, field, call and operator is
/// one).
pub const MAX_NODES: usize = 400;
/// The longest arguments a condition is evaluated over, as compact JSON.
pub const MAX_ARGS_BYTES: usize = 64 * 1024;
/// The deepest arguments a condition is evaluated over.
pub const MAX_ARGS_DEPTH: usize = 32;
/// The most rules a configuration may hold.
pub const MAX_RULES: usize = 1_000;

/// What a matching rule does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decide {
    /// The request is created already approved by the rule.
    Allow,
    /// The request is created already denied by the rule.
    Deny,
    /// A person is asked, with the rule's settings.
    Ask,
}

impl Decide {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Allow => "allow",
            Self::Deny => "deny",
            Self::Ask => "ask",
        }
    }

    /// `allow`, `deny` or `ask`.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "allow" => Some(Self::Allow),
            "deny" => Some(Self::Deny),
            "ask" => Some(Self::Ask),
            _ => None,
        }
    }
}

/// What an `ask` rule changes in the request it matches; each absent setting keeps the
/// request's own.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AskSettings {
    /// Who may answer, instead of the request's responders.
    pub responders: Option<Vec<String>>,
    /// How many people must approve (1 to 10).
    pub approvals_required: Option<u32>,
    /// `low`, `normal` or `high`.
    pub risk: Option<String>,
    /// Seconds until the request expires; `0` never.
    pub timeout_seconds: Option<u64>,
    /// The decision applied when nobody answers in time.
    pub on_timeout: Option<OnTimeout>,
    /// Tags added to the request (routes read them).
    pub tags: Vec<String>,
}

impl AskSettings {
    /// Whether the rule sets nothing.
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }

    /// Applies the settings to `request`. A quorum above 1 cannot go with edits, so it turns
    /// `allow_edit` off; tags are added once each, up to the ten a request may carry.
    pub fn apply(&self, request: &mut NewRequest) {
        if let Some(responders) = &self.responders {
            request.responders = Some(responders.clone());
        }
        if let Some(n) = self.approvals_required {
            request.approvals_required = n;
            if n > 1 {
                for q in &mut request.questions {
                    if let QuestionKind::Approval(a) = &mut q.kind {
                        a.allow_edit = false;
                    }
                }
            }
        }
        if let Some(risk) = self.risk.as_deref().and_then(crate::model::Risk::parse) {
            request.risk = risk;
        }
        if let Some(seconds) = self.timeout_seconds {
            request.timeout_seconds = seconds;
        }
        if let Some(default) = &self.on_timeout {
            request.on_timeout = Some(default.clone());
        }
        for tag in &self.tags {
            if request.tags.len() < 10 && !request.tags.contains(tag) {
                request.tags.push(tag.clone());
            }
        }
    }
}

/// One rule as configured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleSpec {
    /// Unique among the rules; recorded as `policy:<name>` on the decisions it makes.
    pub name: String,
    /// A tool-name pattern (`*`, `prefix*`, an exact name), ignoring case; absent is `*`.
    pub tool: Option<String>,
    /// A CEL condition; absent matches every call of `tool`.
    pub when: Option<String>,
    pub decide: Decide,
    /// Why, told to the agent with an allow or a deny, and shown with an ask.
    pub reason: Option<String>,
    pub ask: AskSettings,
}

/// A rule that cannot be used: which, where in its condition, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", self.describe())]
pub struct RuleError {
    /// The rule's position among the rules, from 0.
    pub index: usize,
    pub name: String,
    /// The key at fault: `when`, `name`, `tool`, ...
    pub key: &'static str,
    /// The 1-based column in `when`, when the fault has a place.
    pub column: Option<usize>,
    pub message: String,
}

impl RuleError {
    fn describe(&self) -> String {
        let name = if self.name.is_empty() {
            format!("rules[{}]", self.index)
        } else {
            format!("rule {}", crate::quoted(&self.name))
        };
        match self.column {
            Some(c) => format!("{name}: {} at column {c}: {}", self.key, self.message),
            None => format!("{name}: {}: {}", self.key, self.message),
        }
    }
}

struct Compiled {
    spec: RuleSpec,
    tool: ToolPattern,
    when: Option<Program>,
    reads_args: bool,
    /// Set once the rule's condition failed to evaluate, so the failure is reported once.
    failed: AtomicBool,
}

/// Compiled rules, checked and ready to decide; cheap to share.
#[derive(Clone)]
pub struct Rules {
    rules: Arc<Vec<Compiled>>,
    env: Arc<Env>,
}

impl std::fmt::Debug for Rules {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.rules.iter().map(|r| &r.spec.name))
            .finish()
    }
}

/// What a tool call looks like to a rule.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Call {
    pub tool: String,
    pub args: Value,
    pub agent: Option<String>,
    pub session: Option<String>,
    pub tags: Vec<String>,
    pub cwd: Option<String>,
    pub on_behalf_of: Option<String>,
}

impl Call {
    /// The call a request asks about: its one question, an approval, with its action. Requests
    /// of several questions, or of another kind, are not decided by rules.
    pub fn of(request: &NewRequest) -> Option<Self> {
        let [question] = request.questions.as_slice() else {
            return None;
        };
        let QuestionKind::Approval(approval) = &question.kind else {
            return None;
        };
        let cwd = match &request.context {
            Some(Context::Json(map)) => ["cwd", "working_directory"]
                .iter()
                .find_map(|k| map.get(*k).and_then(Value::as_str))
                .map(str::to_owned),
            _ => None,
        };
        Some(Self {
            tool: approval.action.name.clone(),
            args: approval.action.arguments.clone(),
            agent: request.agent.clone(),
            session: request.session.clone(),
            tags: request.tags.clone(),
            cwd,
            on_behalf_of: None,
        })
    }
}

/// The rule that decided a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Matched {
    pub name: String,
    pub decide: Decide,
    pub reason: Option<String>,
    pub ask: AskSettings,
}

impl Matched {
    /// The answer body that resolves a one-question approval as this rule decided, for
    /// `allow` and `deny`.
    pub fn answer(&self) -> Option<Value> {
        let decision = match self.decide {
            Decide::Allow => Decision::Approve,
            Decide::Deny => Decision::Deny,
            Decide::Ask => return None,
        };
        let reason = self
            .reason
            .clone()
            .unwrap_or_else(|| format!("decided by the rule {}", crate::quoted(&self.name)));
        Some(serde_json::json!({
            "decision": decision.as_str(),
            "scope": "once",
            "reason": reason,
        }))
    }
}

/// What the rules made of a call.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Verdict {
    /// The first rule that matched; `None` asks a person as the request stands.
    pub matched: Option<Matched>,
    /// Rules whose condition failed to evaluate on this call, in order; such a rule did not
    /// match.
    pub errors: Vec<Failure>,
}

/// A condition that failed to evaluate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    pub rule: String,
    pub error: String,
    /// Whether this is the rule's first failure (since the rules were compiled), so that a
    /// caller logs each rule's failure once.
    pub first: bool,
}

impl Rules {
    /// Checks and compiles every rule: unique non-empty names, tool patterns, conditions that
    /// parse, read only [`VARIABLES`], stay within the bounds and can be boolean, and settings
    /// only on `ask` rules.
    pub fn compile(specs: Vec<RuleSpec>) -> Result<Self, RuleError> {
        let env = Arc::new(env());
        if specs.len() > MAX_RULES {
            return Err(RuleError {
                index: MAX_RULES,
                name: String::new(),
                key: "rules",
                column: None,
                message: format!("at most {MAX_RULES} rules, got {}", specs.len()),
            });
        }
        let mut compiled: Vec<Compiled> = Vec::with_capacity(specs.len());
        for (index, spec) in specs.into_iter().enumerate() {
            let fail = |key: &'static str, column: Option<usize>, message: String| RuleError {
                index,
                name: spec.name.clone(),
                key,
                column,
                message,
            };
            if spec.name.trim().is_empty() {
                return Err(fail("name", None, "must not be empty".to_owned()));
            }
            if compiled.iter().any(|c| c.spec.name == spec.name) {
                return Err(fail(
                    "name",
                    None,
                    "another rule has this name; names are unique".to_owned(),
                ));
            }
            if spec.tool.as_deref().is_some_and(|t| t.trim().is_empty()) {
                return Err(fail(
                    "tool",
                    None,
                    "is empty; write a tool name, `prefix*` or `*`".to_owned(),
                ));
            }
            if spec.decide != Decide::Ask && !spec.ask.is_empty() {
                return Err(fail(
                    "decide",
                    None,
                    format!(
                        "is {}, which decides without asking; responders, approvals_required, \
                         risk, timeout, on_timeout and tags belong to `ask` rules",
                        spec.decide.as_str()
                    ),
                ));
            }
            check_settings(&spec.ask).map_err(|(key, m)| fail(key, None, m))?;
            let when = match &spec.when {
                None => None,
                Some(source) => Some(
                    compile_when(&env, source).map_err(|(column, m)| fail("when", column, m))?,
                ),
            };
            let reads_args = when
                .as_ref()
                .is_some_and(|p| p.references().has_variable("args"));
            compiled.push(Compiled {
                tool: ToolPattern::parse(spec.tool.as_deref().unwrap_or("*")),
                spec,
                when,
                reads_args,
                failed: AtomicBool::new(false),
            });
        }
        Ok(Self {
            rules: Arc::new(compiled),
            env,
        })
    }

    /// Whether there are no rules.
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// How many rules there are.
    pub fn len(&self) -> usize {
        self.rules.len()
    }

    /// The first rule matching `call`, in order. A condition that fails to evaluate does not
    /// match; its error is in [`Verdict::errors`].
    pub fn decide(&self, call: &Call) -> Verdict {
        let tool = call.tool.trim().to_lowercase();
        let mut verdict = Verdict::default();
        // The call is converted for CEL once, and only when a condition is to be evaluated.
        let mut bound: Option<Bound> = None;
        for rule in self.rules.iter() {
            if !rule.tool.matches_lowercase(&tool) {
                continue;
            }
            let matched = match &rule.when {
                None => Ok(true),
                Some(program) => {
                    let bound = bound.get_or_insert_with(|| Bound::new(&self.env, call));
                    evaluate(program, bound, rule.reads_args)
                }
            };
            match matched {
                Ok(true) => {
                    verdict.matched = Some(Matched {
                        name: rule.spec.name.clone(),
                        decide: rule.spec.decide,
                        reason: rule.spec.reason.clone(),
                        ask: rule.spec.ask.clone(),
                    });
                    break;
                }
                Ok(false) => {}
                Err(error) => verdict.errors.push(Failure {
                    rule: rule.spec.name.clone(),
                    error,
                    first: !rule.failed.swap(true, Ordering::Relaxed),
                }),
            }
        }
        verdict
    }
}

fn env() -> Env {
    let mut env = Env::stdlib();
    // The strings extension only declares functions; adding it to a fresh standard library
    // cannot conflict with anything.
    let _ = env.add_extension(cel::extensions::strings);
    env
}

fn check_settings(ask: &AskSettings) -> Result<(), (&'static str, String)> {
    if let Some(n) = ask.approvals_required
        && !(1..=10).contains(&n)
    {
        return Err(("approvals_required", format!("must be 1 to 10, got {n}")));
    }
    if let Some(names) = &ask.responders
        && (names.is_empty() || names.iter().any(|n| n.trim().is_empty()))
    {
        return Err((
            "responders",
            "must name at least one responder, none empty".to_owned(),
        ));
    }
    if let Some(risk) = &ask.risk
        && !["low", "normal", "high"].contains(&risk.as_str())
    {
        return Err((
            "risk",
            format!("must be low, normal or high, got {}", crate::quoted(risk)),
        ));
    }
    if let Some(default) = &ask.on_timeout
        && !matches!(default, OnTimeout::Decision { .. })
    {
        return Err((
            "on_timeout",
            "rules decide approvals: give {decision = \"deny\"} or {decision = \"approve\"}"
                .to_owned(),
        ));
    }
    if let Some(OnTimeout::Decision {
        decision: Decision::Revise,
        ..
    }) = &ask.on_timeout
    {
        return Err((
            "on_timeout",
            "the decision must be approve or deny".to_owned(),
        ));
    }
    if ask.tags.len() > 10 || ask.tags.iter().any(|t| t.trim().is_empty()) {
        return Err(("tags", "at most 10, none empty".to_owned()));
    }
    Ok(())
}

/// Compiles a condition, or says at which column (1-based) and why it cannot be one.
fn compile_when(env: &Env, source: &str) -> Result<Program, (Option<usize>, String)> {
    if source.trim().is_empty() {
        return Err((None, "is empty; remove it to match every call".to_owned()));
    }
    if source.len() > MAX_EXPRESSION_BYTES {
        return Err((
            None,
            format!(
                "is {} bytes long; at most {MAX_EXPRESSION_BYTES}",
                source.len()
            ),
        ));
    }
    let program = env.compile(source).map_err(|errors| {
        let first = errors.errors.first();
        // The parser counts columns from 0.
        let column = first.and_then(|e| usize::try_from(e.pos.1).ok().map(|c| c + 1));
        let message = first.map_or_else(|| "does not parse".to_owned(), |e| e.msg.clone());
        (column, format!("does not parse: {message}"))
    })?;
    let column_of = |id: u64| {
        program
            .source_info()
            .offset_for(id)
            .and_then(|(start, _)| usize::try_from(start).ok())
            .map(|byte| source[..byte.min(source.len())].chars().count() + 1)
    };
    let mut walk = Walk::default();
    walk.visit(program.expression(), 0);
    if walk.nodes > MAX_NODES {
        return Err((
            None,
            format!(
                "has {} parts; at most {MAX_NODES}: split it into several rules",
                walk.nodes
            ),
        ));
    }
    if let Some(id) = walk.nested {
        return Err((
            column_of(id),
            "iterates inside an iteration (a macro such as all or exists within another); \
             rules allow one level"
                .to_owned(),
        ));
    }
    if let Some((id, name)) = walk.unknown {
        return Err((
            column_of(id),
            format!(
                "unknown variable {}; a rule reads {}",
                crate::quoted(&name),
                VARIABLES.join(", ")
            ),
        ));
    }
    if let Kind::Not(what) = kind(program.expression()) {
        return Err((
            column_of(program.expression().id),
            format!("gives {what}, not a boolean; a rule's condition is true or false"),
        ));
    }
    Ok(program)
}

/// What a walk over a condition found.
#[derive(Default)]
struct Walk {
    nodes: usize,
    /// Names bound by the macros around the node being visited.
    bound: Vec<String>,
    unknown: Option<(u64, String)>,
    nested: Option<u64>,
}

/// Type names CEL resolves as identifiers.
const TYPE_NAMES: [&str; 10] = [
    "int",
    "uint",
    "double",
    "bool",
    "string",
    "bytes",
    "list",
    "map",
    "null_type",
    "type",
];

impl Walk {
    fn visit(&mut self, e: &IdedExpr, depth: usize) {
        self.nodes += 1;
        if self.nodes > MAX_NODES {
            return;
        }
        match &e.expr {
            Expr::Unspecified | Expr::Literal(_) => {}
            Expr::Ident(name) => {
                let known = name.starts_with('@')
                    || VARIABLES.contains(&name.as_str())
                    || TYPE_NAMES.contains(&name.as_str())
                    || self.bound.iter().any(|b| b == name);
                if !known && self.unknown.is_none() {
                    self.unknown = Some((e.id, name.clone()));
                }
            }
            Expr::Call(call) => {
                if let Some(target) = &call.target {
                    self.visit(target, depth);
                }
                for arg in &call.args {
                    self.visit(arg, depth);
                }
            }
            Expr::Select(select) => self.visit(&select.operand, depth),
            Expr::List(list) => {
                for element in &list.elements {
                    self.visit(element, depth);
                }
            }
            Expr::Map(map) => self.entries(&map.entries, depth),
            Expr::Struct(s) => self.entries(&s.entries, depth),
            Expr::Comprehension(c) => {
                if depth >= 1 && self.nested.is_none() {
                    self.nested = Some(e.id);
                }
                self.visit(&c.iter_range, depth);
                self.visit(&c.accu_init, depth);
                let names = [Some(&c.iter_var), c.iter_var2.as_ref(), Some(&c.accu_var)];
                let before = self.bound.len();
                self.bound.extend(names.into_iter().flatten().cloned());
                self.visit(&c.loop_cond, depth + 1);
                self.visit(&c.loop_step, depth + 1);
                self.visit(&c.result, depth + 1);
                self.bound.truncate(before);
            }
        }
    }

    fn entries(&mut self, entries: &[cel::common::ast::IdedEntryExpr], depth: usize) {
        for entry in entries {
            match &entry.expr {
                EntryExpr::StructField(f) => self.visit(&f.value, depth),
                EntryExpr::MapEntry(m) => {
                    self.visit(&m.key, depth);
                    self.visit(&m.value, depth);
                }
            }
        }
    }
}

/// What can be told of a condition's result before it runs.
enum Kind {
    Bool,
    Not(&'static str),
    /// Known only at evaluation (a field of the arguments, say).
    Dynamic,
}

fn kind(e: &IdedExpr) -> Kind {
    match &e.expr {
        Expr::Literal(LiteralValue::Boolean(_)) => Kind::Bool,
        Expr::Literal(LiteralValue::Null) => Kind::Not("null"),
        Expr::Literal(LiteralValue::String(_)) => Kind::Not("a string"),
        Expr::Literal(LiteralValue::Bytes(_)) => Kind::Not("bytes"),
        Expr::Literal(_) => Kind::Not("a number"),
        Expr::List(_) => Kind::Not("a list"),
        Expr::Map(_) | Expr::Struct(_) => Kind::Not("a map"),
        Expr::Ident(name) => match name.as_str() {
            "tool" => Kind::Not("the tool's name, a string"),
            "args" => Kind::Not("the arguments, a map"),
            "tags" => Kind::Not("the tags, a list"),
            "agent" | "session" | "cwd" | "on_behalf_of" => Kind::Not("a string"),
            _ => Kind::Dynamic,
        },
        Expr::Call(call) => match call.func_name.as_str() {
            "_?_:_" => match (call.args.get(1).map(kind), call.args.get(2).map(kind)) {
                (Some(Kind::Not(w)), _) | (_, Some(Kind::Not(w))) => Kind::Not(w),
                (Some(Kind::Bool), Some(Kind::Bool)) => Kind::Bool,
                _ => Kind::Dynamic,
            },
            "_+_" | "_-_" | "_*_" | "_/_" | "_%_" | "-_" => Kind::Not("a number or text"),
            "size" | "int" | "uint" | "double" => Kind::Not("a number"),
            "string" | "lowerAscii" | "upperAscii" | "trim" | "replace" | "substring"
            | "charAt" | "join" | "format" => Kind::Not("a string"),
            "split" => Kind::Not("a list"),
            "_==_"
            | "_!=_"
            | "_<_"
            | "_<=_"
            | "_>_"
            | "_>=_"
            | "_&&_"
            | "_||_"
            | "!_"
            | "@in"
            | "@not_strictly_false"
            | "contains"
            | "startsWith"
            | "endsWith"
            | "matches"
            | "has"
            | "exists"
            | "all"
            | "exists_one" => Kind::Bool,
            _ => Kind::Dynamic,
        },
        Expr::Comprehension(c) => match &c.result.expr {
            // `map` and `filter` build a list in their accumulator; the boolean macros end in a
            // test of it.
            Expr::Ident(name) if *name == c.accu_var => match &c.accu_init.expr {
                Expr::List(_) => Kind::Not("a list"),
                _ => Kind::Dynamic,
            },
            _ => kind(&c.result),
        },
        Expr::Select(s) if s.test => Kind::Bool,
        _ => Kind::Dynamic,
    }
}

/// A call converted for CEL, once per decision: the context every condition reads.
struct Bound {
    ctx: CelContext<'static, 'static>,
    /// Why the arguments could not be bound (they are `null` then).
    args_error: Option<String>,
}

impl Bound {
    fn new(env: &Arc<Env>, call: &Call) -> Self {
        let text = |s: &Option<String>| match s {
            Some(s) => CelValue::String(Arc::new(s.clone())),
            None => CelValue::Null,
        };
        let args = match serde_json::to_vec(&call.args) {
            Ok(bytes) if bytes.len() > MAX_ARGS_BYTES => Err(format!(
                "the arguments are {} bytes of JSON; conditions read at most {MAX_ARGS_BYTES}",
                bytes.len()
            )),
            _ => to_cel(&call.args, 0)
                .ok_or_else(|| format!("the arguments nest deeper than {MAX_ARGS_DEPTH} levels")),
        };
        let (args, args_error) = match args {
            Ok(args) => (args, None),
            Err(e) => (CelValue::Null, Some(e)),
        };
        let mut ctx = CelContext::with_env(Arc::clone(env));
        ctx.add_variable_from_value("tool", CelValue::String(Arc::new(call.tool.clone())));
        ctx.add_variable_from_value("args", args);
        ctx.add_variable_from_value("agent", text(&call.agent));
        ctx.add_variable_from_value("session", text(&call.session));
        ctx.add_variable_from_value(
            "tags",
            CelValue::List(Arc::new(
                call.tags
                    .iter()
                    .map(|t| CelValue::String(Arc::new(t.clone())))
                    .collect(),
            )),
        );
        ctx.add_variable_from_value("cwd", text(&call.cwd));
        ctx.add_variable_from_value("on_behalf_of", text(&call.on_behalf_of));
        Self { ctx, args_error }
    }
}

/// JSON as CEL: integers that fit are `int`, other numbers `double`; `None` past the depth.
fn to_cel(value: &Value, depth: usize) -> Option<CelValue> {
    if depth > MAX_ARGS_DEPTH {
        return None;
    }
    Some(match value {
        Value::Null => CelValue::Null,
        Value::Bool(b) => CelValue::Bool(*b),
        Value::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => CelValue::Int(i),
            (None, Some(u)) => CelValue::UInt(u),
            _ => CelValue::Float(n.as_f64().unwrap_or(f64::NAN)),
        },
        Value::String(s) => CelValue::String(Arc::new(s.clone())),
        Value::Array(items) => CelValue::List(Arc::new(
            items
                .iter()
                .map(|v| to_cel(v, depth + 1))
                .collect::<Option<Vec<_>>>()?,
        )),
        Value::Object(map) => {
            let mut out = std::collections::HashMap::with_capacity(map.len());
            for (k, v) in map {
                out.insert(Key::String(Arc::new(k.clone())), to_cel(v, depth + 1)?);
            }
            CelValue::Map(CelMap { map: Arc::new(out) })
        }
    })
}

fn evaluate(program: &Program, bound: &Bound, reads_args: bool) -> Result<bool, String> {
    if reads_args && let Some(e) = &bound.args_error {
        return Err(e.clone());
    }
    match program.execute(&bound.ctx) {
        Ok(CelValue::Bool(b)) => Ok(b),
        Ok(other) => Err(format!("gave {other:?}, not a boolean")),
        Err(e) => Err(e.to_string()),
    }
}
