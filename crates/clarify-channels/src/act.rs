//! What a person did in a chat, in terms every platform shares, and the answer body it makes.
//!
//! A platform module reads its own payloads (a Slack button, a Discord component, a Telegram
//! callback) into an [`Act`] on a request; [`Act::body`] turns it, given the live request, into
//! the same answer body the API takes, so a chat answer is checked by the same parser as every
//! other path. Inputs of forms (Slack and Discord modals) are named by [`input_id`]s, which
//! [`input_for_error`] maps an answer error back to, to show the error next to its input.

use std::collections::BTreeMap;

use clarify_core::{Decision, Question, QuestionKind, Scope};
use serde_json::{Map, Value, json};

/// What a person asked for by a click, a typed reply or a submitted form.
#[derive(Debug, Clone, PartialEq)]
pub enum Act {
    /// Option `index` (0-based) of the `single` question `question`.
    Option { question: usize, index: usize },
    /// These options (0-based) of the `multi` question `question`.
    Options {
        question: usize,
        indexes: Vec<usize>,
    },
    /// A decision on the approval question `question`.
    Decide {
        question: usize,
        decision: Decision,
        scope: Scope,
    },
    /// Skip the request.
    Skip,
    /// Text typed in reply to the announcement, read by the shared typed-reply parser.
    Typed(String),
    /// Open a form for `focus`; `trigger` is the platform's handle for opening it.
    Open { focus: Focus, trigger: String },
    /// A submitted form for `focus`: each input's value by its [`input_id`].
    Submit {
        focus: Focus,
        inputs: BTreeMap<String, Input>,
    },
    /// Nothing to do: a link button was followed, a checkbox toggled.
    Nothing,
    /// "Link account": the clicker asks for the link that links their chat account to their
    /// clarify sign-in. Answered privately; the request is not touched.
    LinkAccount,
    /// Move the request's deadline this many seconds later ("Extend 30 min", `extend 30m`),
    /// by the rules of answering it; answers nothing.
    Extend { seconds: u64 },
}

/// How much the "Extend" button on a warning before expiry gives: 30 minutes.
pub const EXTEND_BUTTON_SECONDS: u64 = 1_800;

/// The id of the button that extends a request by `seconds` (`t:1800`), which [`control`] reads.
pub fn extend_control(seconds: u64) -> String {
    format!("t:{seconds}")
}

/// The label of that button: `Extend 30 min`.
pub fn extend_label(seconds: u64) -> String {
    match seconds {
        s if s % 3_600 == 0 => format!("Extend {} h", s / 3_600),
        s if s % 60 == 0 => format!("Extend {} min", s / 60),
        s => format!("Extend {s} s"),
    }
}

/// What a form asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Focus {
    /// Every question of the request (a request of several questions is answered in one form).
    Request,
    /// Free text instead of (or, on `multi`, besides) the options of question `n`.
    Other(usize),
    /// The text of the `open` question `n`.
    Open(usize),
    /// A deny, with its reason, of the approval question `n`.
    Deny(usize),
    /// A request for changes, with what to change (required), of the approval question `n`.
    Revise(usize),
    /// An approve with edited arguments of the approval question `n`.
    Edit(usize),
    /// The fields of the `form` question `n`.
    Form(usize),
}

impl Focus {
    /// A short stable name, for a platform's form metadata: `request`, `other:0`, ...
    pub fn encode(self) -> String {
        match self {
            Self::Request => "request".to_owned(),
            Self::Other(n) => format!("other:{n}"),
            Self::Open(n) => format!("open:{n}"),
            Self::Deny(n) => format!("deny:{n}"),
            Self::Revise(n) => format!("revise:{n}"),
            Self::Edit(n) => format!("edit:{n}"),
            Self::Form(n) => format!("form:{n}"),
        }
    }

    /// The focus [`Focus::encode`] wrote.
    pub fn decode(text: &str) -> Option<Self> {
        if text == "request" {
            return Some(Self::Request);
        }
        let (kind, n) = text.split_once(':')?;
        let n: usize = n.parse().ok()?;
        Some(match kind {
            "other" => Self::Other(n),
            "open" => Self::Open(n),
            "deny" => Self::Deny(n),
            "revise" => Self::Revise(n),
            "edit" => Self::Edit(n),
            "form" => Self::Form(n),
            _ => return None,
        })
    }

    /// The questions the form holds, by index.
    pub fn questions(self, count: usize) -> std::ops::Range<usize> {
        match self {
            Self::Request => 0..count,
            Self::Other(n)
            | Self::Open(n)
            | Self::Deny(n)
            | Self::Revise(n)
            | Self::Edit(n)
            | Self::Form(n) => n.min(count)..n.saturating_add(1).min(count),
        }
    }
}

/// A form input's value as the platform gave it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input {
    /// Typed text (empty when left blank).
    Text(String),
    /// One chosen value (a select, radio buttons), or none.
    One(Option<String>),
    /// Chosen values (checkboxes, a multi-select).
    Many(Vec<String>),
}

/// What a control does.
#[derive(Debug, Clone, PartialEq)]
pub enum Control {
    /// An act on the request's answer.
    Act(Act),
    /// Open a form for `focus`.
    Form(Focus),
    /// A control clarify did not make.
    Unknown(String),
}

/// The control a button's id (and a select's `values`) names, in the short scheme the chat
/// platforms share: `o:<n>` option n, `a:<scope>` approve, `d` deny, `s` skip, `sel` and `multi`
/// (selects), and the forms `r` (deny with a reason), `c` (request changes), `e` (edit the
/// arguments), `x` (other), `w` (write an open answer), `f` (a form's fields) and `m` (choose
/// several options, where the platform has no multi-select), `l` (link my account), and
/// `t:<seconds>` (extend the deadline). A button names what it does, never the request.
pub fn control(custom_id: &str, values: &[String]) -> Control {
    let unknown = || Control::Unknown(custom_id.to_owned());
    let index = |v: &str| v.parse::<usize>().ok();
    let act = match custom_id.split_once(':') {
        Some(("o", i)) => match index(i) {
            Some(index) => Act::Option { question: 0, index },
            None => return unknown(),
        },
        Some(("a", scope)) => match Scope::parse(scope) {
            Some(scope) => Act::Decide {
                question: 0,
                decision: Decision::Approve,
                scope,
            },
            None => return unknown(),
        },
        Some(("t", seconds)) => match seconds.parse::<u64>() {
            Ok(seconds) if seconds > 0 => Act::Extend { seconds },
            _ => return unknown(),
        },
        Some(_) => return unknown(),
        None => match custom_id {
            "sel" => match values.first().and_then(|v| index(v)) {
                Some(index) => Act::Option { question: 0, index },
                None => return unknown(),
            },
            "multi" => match values.iter().map(|v| index(v)).collect::<Option<Vec<_>>>() {
                Some(indexes) => Act::Options {
                    question: 0,
                    indexes,
                },
                None => return unknown(),
            },
            "d" => Act::Decide {
                question: 0,
                decision: Decision::Deny,
                scope: Scope::Once,
            },
            "s" => Act::Skip,
            "l" => Act::LinkAccount,
            "r" => return Control::Form(Focus::Deny(0)),
            "c" => return Control::Form(Focus::Revise(0)),
            "e" => return Control::Form(Focus::Edit(0)),
            "x" => return Control::Form(Focus::Other(0)),
            "w" => return Control::Form(Focus::Open(0)),
            "f" => return Control::Form(Focus::Form(0)),
            "m" => return Control::Form(Focus::Request),
            _ => return unknown(),
        },
    };
    Control::Act(act)
}

/// Why an act cannot become an answer body; the request stays as it was.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct Unfit {
    /// The input to show the message next to, in a form.
    pub input: Option<String>,
    pub message: String,
}

fn unfit(input: Option<String>, message: impl Into<String>) -> Unfit {
    Unfit {
        input,
        message: message.into(),
    }
}

/// The id of a form input: `q0` for question 0's main input, `q0.other`, `q0.reason`,
/// `q0.arguments`, `q0.scope`, and `q0.f.budget` for field `budget` of a form question.
pub fn input_id(question: usize, part: Option<&str>) -> String {
    match part {
        None => format!("q{question}"),
        Some(p) => format!("q{question}.{p}"),
    }
}

/// The input an answer error's path (`answers.q1.values.budget`, `answers.q1.reason`) belongs
/// to, for showing the error beside it.
pub fn input_for_error(questions: &[Question], focus: Focus, path: Option<&str>) -> Option<String> {
    let path = path?;
    let rest = path.strip_prefix("answers.")?;
    let (qid, tail) = match rest.split_once('.') {
        Some((q, t)) => (q, Some(t)),
        None => (rest, None),
    };
    let n = questions.iter().position(|q| q.id == qid)?;
    if !focus.questions(questions.len()).contains(&n) {
        return None;
    }
    Some(match (focus, tail) {
        (_, Some(t)) if t.starts_with("values.") => {
            input_id(n, Some(&format!("f.{}", &t["values.".len()..])))
        }
        (Focus::Other(_), _) => input_id(n, Some("other")),
        (Focus::Deny(_) | Focus::Revise(_), _) => input_id(n, Some("reason")),
        (Focus::Edit(_), _) => input_id(n, Some("arguments")),
        (_, Some("reason")) => input_id(n, Some("reason")),
        (_, Some("other")) => input_id(n, Some("other")),
        _ => input_id(n, None),
    })
}

/// The first input of a form for `focus`: where a refusal that concerns no one input is shown.
pub fn first_input(questions: &[Question], focus: Focus) -> String {
    let n = match focus {
        Focus::Request => 0,
        Focus::Other(n)
        | Focus::Open(n)
        | Focus::Deny(n)
        | Focus::Revise(n)
        | Focus::Edit(n)
        | Focus::Form(n) => n,
    };
    let q = questions.get(n);
    match (focus, q.map(|q| &q.kind)) {
        (Focus::Other(_), _) => input_id(n, Some("other")),
        (Focus::Deny(_) | Focus::Revise(_), _) => input_id(n, Some("reason")),
        (Focus::Edit(_), _) => input_id(n, Some("arguments")),
        (_, Some(QuestionKind::Form(form))) => match form.fields.first() {
            Some(f) => input_id(n, Some(&format!("f.{}", f.id))),
            None => input_id(n, None),
        },
        _ => input_id(n, None),
    }
}

impl Act {
    /// The answer body this act gives `record`'s request, or `None` for an act that answers
    /// nothing by itself ([`Act::Typed`] goes through the typed-reply parser, [`Act::Open`] opens
    /// a form, [`Act::Nothing`]).
    pub fn body(&self, questions: &[Question]) -> Result<Option<Value>, Unfit> {
        let question = |n: usize| {
            questions
                .get(n)
                .ok_or_else(|| unfit(None, format!("this request has no question {}", n + 1)))
        };
        // A one-question request takes the answer itself; several take `answers` by id.
        let wrap = |n: usize, answer: Value| -> Result<Value, Unfit> {
            let q = question(n)?;
            if questions.len() == 1 {
                Ok(answer)
            } else {
                Err(unfit(
                    None,
                    format!(
                        "this request has {} questions; answer them together with Answer… ({})",
                        questions.len(),
                        q.id
                    ),
                ))
            }
        };
        Ok(Some(match self {
            Self::Option { question: n, index } => {
                let choices = question(*n)?
                    .kind
                    .choices()
                    .ok_or_else(|| unfit(None, "this question has no options"))?;
                let option = choices
                    .options
                    .get(*index)
                    .ok_or_else(|| unfit(None, "that option no longer exists"))?;
                wrap(*n, json!({"option": option.id}))?
            }
            Self::Options {
                question: n,
                indexes,
            } => {
                let ids = option_ids(question(*n)?, indexes, None)?;
                if ids.is_empty() {
                    return Err(unfit(None, "choose at least one option, then Submit"));
                }
                wrap(*n, json!({"options": ids}))?
            }
            Self::Decide {
                question: n,
                decision,
                scope,
            } => wrap(
                *n,
                json!({"decision": decision.as_str(), "scope": scope.as_str()}),
            )?,
            Self::Skip => json!({"skip": true}),
            Self::Submit { focus, inputs } => submitted(questions, *focus, inputs)?,
            Self::Typed(_)
            | Self::Open { .. }
            | Self::Nothing
            | Self::LinkAccount
            | Self::Extend { .. } => {
                return Ok(None);
            }
        }))
    }
}

/// The option ids for `indexes` (each a decimal index, or already an index) of a choice question.
fn option_ids(q: &Question, indexes: &[usize], input: Option<&str>) -> Result<Vec<String>, Unfit> {
    let choices = q
        .kind
        .choices()
        .ok_or_else(|| unfit(None, "this question has no options"))?;
    indexes
        .iter()
        .map(|i| {
            choices
                .options
                .get(*i)
                .map(|o| o.id.clone())
                .ok_or_else(|| unfit(input.map(str::to_owned), "that option no longer exists"))
        })
        .collect()
}

/// The answer body of a submitted form.
fn submitted(
    questions: &[Question],
    focus: Focus,
    inputs: &BTreeMap<String, Input>,
) -> Result<Value, Unfit> {
    let text = |id: &str| match inputs.get(id) {
        Some(Input::Text(t)) => t.trim().to_owned(),
        _ => String::new(),
    };
    let one = |id: &str| match inputs.get(id) {
        Some(Input::One(v)) => v.clone(),
        _ => None,
    };
    let indexes = |id: &str| -> Result<Vec<usize>, Unfit> {
        let values = match inputs.get(id) {
            Some(Input::Many(v)) => v.clone(),
            Some(Input::One(Some(v))) => vec![v.clone()],
            _ => Vec::new(),
        };
        values
            .iter()
            .map(|v| {
                v.parse()
                    .map_err(|_| unfit(Some(id.to_owned()), "that option no longer exists"))
            })
            .collect()
    };
    if focus.questions(questions.len()).is_empty() {
        return Err(unfit(None, "this request has no such question"));
    }
    let mut answers = Map::new();
    for n in focus.questions(questions.len()) {
        let q = &questions[n];
        let main = input_id(n, None);
        let answer = match (&q.kind, focus) {
            (QuestionKind::Single(_), Focus::Other(_)) => {
                json!({"other": text(&input_id(n, Some("other")))})
            }
            (QuestionKind::Single(_), _) => {
                let other = text(&input_id(n, Some("other")));
                match one(&main) {
                    Some(i) => {
                        let i: usize = i.parse().map_err(|_| {
                            unfit(Some(main.clone()), "that option no longer exists")
                        })?;
                        let ids = option_ids(q, &[i], Some(&main))?;
                        if !other.is_empty() {
                            return Err(unfit(
                                Some(input_id(n, Some("other"))),
                                "choose an option or write your own answer, not both",
                            ));
                        }
                        json!({"option": ids[0]})
                    }
                    None if !other.is_empty() => json!({"other": other}),
                    None => return Err(unfit(Some(main), "choose an option")),
                }
            }
            (QuestionKind::Multi(_), _) => {
                let ids = option_ids(q, &indexes(&main)?, Some(&main))?;
                let other = text(&input_id(n, Some("other")));
                let mut a = Map::new();
                if !ids.is_empty() || other.is_empty() {
                    a.insert("options".to_owned(), json!(ids));
                }
                if !other.is_empty() {
                    a.insert("other".to_owned(), json!(other));
                }
                Value::Object(a)
            }
            (QuestionKind::Open, _) => json!({"text": text(&main)}),
            (QuestionKind::Approval(_), Focus::Deny(_)) => {
                json!({"decision": "deny", "reason": text(&input_id(n, Some("reason")))})
            }
            (QuestionKind::Approval(_), Focus::Revise(_)) => {
                json!({"decision": "revise", "reason": text(&input_id(n, Some("reason")))})
            }
            (QuestionKind::Approval(a), Focus::Edit(_)) => {
                let at = input_id(n, Some("arguments"));
                let raw = text(&at);
                let arguments: Value = serde_json::from_str(&raw)
                    .map_err(|e| unfit(Some(at.clone()), format!("this is not valid JSON: {e}")))?;
                if !arguments.is_object() {
                    return Err(unfit(Some(at), "the arguments must be a JSON object"));
                }
                let scope = one(&input_id(n, Some("scope"))).unwrap_or_else(|| {
                    a.scopes
                        .first()
                        .copied()
                        .unwrap_or(Scope::Once)
                        .as_str()
                        .to_owned()
                });
                json!({"decision": "approve", "scope": scope, "edited_arguments": arguments})
            }
            (QuestionKind::Approval(_), _) => {
                // `approve:once`, `approve:session`, `approve:always`, `revise` or `deny`.
                let choice =
                    one(&main).ok_or_else(|| unfit(Some(main.clone()), "choose a decision"))?;
                let reason = text(&input_id(n, Some("reason")));
                let mut a = Map::new();
                match choice.split_once(':') {
                    Some(("approve", scope)) => {
                        a.insert("decision".to_owned(), json!("approve"));
                        a.insert("scope".to_owned(), json!(scope));
                    }
                    None if choice == "revise" => {
                        a.insert("decision".to_owned(), json!("revise"));
                    }
                    _ => {
                        a.insert("decision".to_owned(), json!("deny"));
                    }
                }
                if !reason.is_empty() {
                    a.insert("reason".to_owned(), json!(reason));
                }
                Value::Object(a)
            }
            (QuestionKind::Form(form), _) => {
                let mut values = Map::new();
                for field in &form.fields {
                    let id = input_id(n, Some(&format!("f.{}", field.id)));
                    let value = match inputs.get(&id) {
                        Some(Input::Text(t)) => clarify_core::form::value_from_text(field, t)
                            .map_err(|e| unfit(Some(id.clone()), e))?,
                        Some(Input::One(Some(v))) => match &field.kind {
                            clarify_core::form::FieldKind::Boolean => Some(json!(v == "true")),
                            _ => Some(json!(v)),
                        },
                        Some(Input::Many(v)) => match &field.kind {
                            clarify_core::form::FieldKind::Boolean => {
                                Some(json!(v.iter().any(|x| x == "true")))
                            }
                            _ => Some(json!(v)),
                        },
                        Some(Input::One(None)) | None => None,
                    };
                    if let Some(v) = value {
                        values.insert(field.id.clone(), v);
                    }
                }
                json!({"values": values})
            }
        };
        answers.insert(q.id.clone(), answer);
    }
    if questions.len() == 1 {
        Ok(answers
            .into_iter()
            .next()
            .map(|(_, a)| a)
            .unwrap_or(Value::Null))
    } else if focus == Focus::Request {
        Ok(json!({"answers": answers}))
    } else {
        Err(unfit(
            None,
            "this request has several questions; answer them together with Answer…",
        ))
    }
}
