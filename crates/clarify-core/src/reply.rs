//! Typed replies: what a person types in the terminal or a chat channel, read as an answer.
//!
//! One function, [`parse_reply`], serves every typed channel, so `2` means the same everywhere:
//!
//! - a label, ignoring case and a trailing "(recommended)", selects that option; on `multi`,
//!   comma-separated labels select several;
//! - `2` selects the second option, `b` or `B` likewise; on `multi`, `1,3` or `1 3` or `a c`
//!   select several;
//! - a reply made only of numbers and single letters is a selection: if any part is out of range,
//!   or a `single` question gets several, the whole reply is rejected with the reason;
//! - anything else is free text, accepted where the question allows it (`open`, or `allow_other`);
//! - `s` or `skip` skips the request where that is allowed;
//! - approvals take `approve`/`yes`/`y`/`1` or `deny`/`no`/`n`/`2`; `approve session` grants a
//!   scope (a bare approve means `once`, refused where `once` is not offered), and text after a
//!   deny (`deny not on Fridays`) is the reason; `revise` (or `changes`) followed by what to change
//!   requests changes.

use crate::answer::{Answer, ApprovalAnswer, Decision};
use crate::limits::Limits;
use crate::model::{Approval, Choices, Question, QuestionKind, Scope};
use crate::text::{chars, quoted, strip_recommended_suffix};

/// What a typed reply means.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    Answer(Answer),
    /// Skip the whole request.
    Skip,
}

/// Why a typed reply was not accepted; the person is asked again.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReplyError {
    #[error("type an answer")]
    Empty,
    #[error("this request cannot be skipped")]
    SkipNotAllowed,
    #[error("there is no option {part}; choose 1 to {count}")]
    OutOfRange { part: String, count: usize },
    #[error("this question takes one option; you chose {count}")]
    OneOnly { count: usize },
    #[error(
        "{} is not one of the options; reply with a number, a letter or a label",
        quoted(.reply)
    )]
    NotAnOption { reply: String },
    #[error(
        "reply approve or deny (optionally followed by a scope: {offered}), or revise followed by what to change"
    )]
    NotADecision { offered: String },
    #[error("the scope {} is not offered; choose one of {offered}", quoted(.scope))]
    ScopeNotOffered { scope: String, offered: String },
    #[error("this action cannot be approved just once; reply approve followed by one of {offered}")]
    ScopeNeeded { offered: String },
    #[error("this question is a form; answer it one field at a time")]
    FormByField,
    #[error("say what to change after revise, e.g. \"revise use the staging database\"")]
    ChangesNeeded,
    #[error("the reply is too long: at most {max} characters, got {got}")]
    TooLong { max: usize, got: usize },
}

/// Reads a typed reply to `question` of a request whose skipping is `allow_skip`.
pub fn parse_reply(
    question: &Question,
    allow_skip: bool,
    input: &str,
) -> Result<Reply, ReplyError> {
    let reply = input.trim();
    if reply.is_empty() {
        return Err(ReplyError::Empty);
    }
    let got = chars(reply);
    if got > Limits::MAX_ANSWER_CHARS {
        return Err(ReplyError::TooLong {
            max: Limits::MAX_ANSWER_CHARS,
            got,
        });
    }
    if reply.eq_ignore_ascii_case("s") || reply.eq_ignore_ascii_case("skip") {
        return if allow_skip {
            Ok(Reply::Skip)
        } else {
            Err(ReplyError::SkipNotAllowed)
        };
    }
    let answer = match &question.kind {
        QuestionKind::Open => Answer::Text(reply.to_owned()),
        QuestionKind::Single(c) => single(c, reply)?,
        QuestionKind::Multi(c) => multi(c, reply)?,
        QuestionKind::Approval(a) => approval(a, reply)?,
        QuestionKind::Form(_) => return Err(ReplyError::FormByField),
    };
    Ok(Reply::Answer(answer))
}

fn single(c: &Choices, reply: &str) -> Result<Answer, ReplyError> {
    if let Some(i) = label_index(c, reply) {
        return Ok(Answer::Option(c.options[i].id.clone()));
    }
    match selection(c, reply)? {
        Some(picked) if picked.len() == 1 => Ok(Answer::Option(c.options[picked[0]].id.clone())),
        Some(picked) => Err(ReplyError::OneOnly {
            count: picked.len(),
        }),
        None => other(c, reply).map(Answer::Other),
    }
}

fn multi(c: &Choices, reply: &str) -> Result<Answer, ReplyError> {
    let picked = if let Some(i) = label_index(c, reply) {
        Some(vec![i])
    } else if let Some(by_label) = reply
        .split(',')
        .map(|part| label_index(c, part))
        .collect::<Option<Vec<_>>>()
    {
        Some(by_label)
    } else {
        selection(c, reply)?
    };
    match picked {
        Some(mut picked) => {
            picked.sort_unstable();
            picked.dedup();
            Ok(Answer::Options {
                ids: picked.iter().map(|&i| c.options[i].id.clone()).collect(),
                other: None,
            })
        }
        None => Ok(Answer::Options {
            ids: Vec::new(),
            other: Some(other(c, reply)?),
        }),
    }
}

fn other(c: &Choices, reply: &str) -> Result<String, ReplyError> {
    if c.allow_other {
        Ok(reply.to_owned())
    } else {
        Err(ReplyError::NotAnOption {
            reply: reply.to_owned(),
        })
    }
}

/// The option whose label the reply is, ignoring case and "(recommended)".
fn label_index(c: &Choices, reply: &str) -> Option<usize> {
    let wanted = strip_recommended_suffix(reply).to_lowercase();
    if wanted.is_empty() {
        return None;
    }
    c.options
        .iter()
        .position(|o| o.label.to_lowercase() == wanted)
}

/// A reply made only of numbers and single letters, as option indexes. `Ok(None)` when the reply
/// is not selection-shaped; an error when it is but does not fit.
fn selection(c: &Choices, reply: &str) -> Result<Option<Vec<usize>>, ReplyError> {
    let parts: Vec<&str> = reply
        .split(|ch: char| ch == ',' || ch.is_whitespace())
        .filter(|p| !p.is_empty())
        .collect();
    let is_selection_part = |p: &&str| {
        p.bytes().all(|b| b.is_ascii_digit())
            || (p.len() == 1 && p.bytes().all(|b| b.is_ascii_alphabetic()))
    };
    if parts.is_empty() || !parts.iter().all(is_selection_part) {
        return Ok(None);
    }
    let count = c.options.len();
    parts
        .iter()
        .map(|p| {
            let index = match p.parse::<usize>() {
                Ok(n) => n.checked_sub(1),
                Err(_) if p.len() == 1 => {
                    // A digit string too long for usize is out of range as well.
                    p.bytes()
                        .next()
                        .filter(u8::is_ascii_alphabetic)
                        .map(|b| usize::from(b.to_ascii_lowercase() - b'a'))
                }
                Err(_) => None,
            };
            index
                .filter(|&i| i < count)
                .ok_or_else(|| ReplyError::OutOfRange {
                    part: (*p).to_owned(),
                    count,
                })
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
}

fn approval(a: &Approval, reply: &str) -> Result<Answer, ReplyError> {
    let offered = a
        .scopes
        .iter()
        .map(|s| s.as_str())
        .collect::<Vec<_>>()
        .join(", ");
    let (word, rest) = match reply.split_once(|c: char| c.is_whitespace() || c == ':' || c == ',') {
        Some((w, r)) => (w, r.trim_start_matches([':', ',']).trim()),
        None => (reply, ""),
    };
    let decision = match word.to_ascii_lowercase().as_str() {
        "approve" | "approved" | "yes" | "y" | "1" | "a" => Decision::Approve,
        "deny" | "denied" | "no" | "n" | "2" | "d" => Decision::Deny,
        "revise" | "changes" | "change" => Decision::Revise,
        _ => return Err(ReplyError::NotADecision { offered }),
    };
    let (scope, reason) = match decision {
        // A bare approve means `once`, which the request may not offer; granting a wider scope
        // than the person typed is not for the parser to decide.
        Decision::Approve if rest.is_empty() && !a.scopes.contains(&Scope::Once) => {
            return Err(ReplyError::ScopeNeeded { offered });
        }
        Decision::Approve if rest.is_empty() => (Scope::Once, None),
        Decision::Approve => {
            let scope = Scope::parse(rest).ok_or_else(|| ReplyError::NotADecision {
                offered: offered.clone(),
            })?;
            if !a.scopes.contains(&scope) {
                return Err(ReplyError::ScopeNotOffered {
                    scope: rest.to_owned(),
                    offered,
                });
            }
            (scope, None)
        }
        Decision::Deny => (Scope::Once, (!rest.is_empty()).then(|| rest.to_owned())),
        Decision::Revise if rest.is_empty() => return Err(ReplyError::ChangesNeeded),
        Decision::Revise => (Scope::Once, Some(rest.to_owned())),
    };
    Ok(Answer::Approval(ApprovalAnswer {
        decision,
        scope,
        edited_arguments: None,
        reason,
        grant_ttl_seconds: None,
        grant_max_uses: None,
    }))
}
