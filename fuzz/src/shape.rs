//! Generators of the input models and people write, from the fuzzer's bytes.
//!
//! Raw bytes rarely become a request that passes coercion, so the interesting code behind it (kinds,
//! options, recommendations, answers, replies) would go unexercised. These generators write what
//! LLMs write: the one-question shorthand, `choices` for `options`, option objects with `title` or
//! `name`, JSON strings holding lists, strict-mode `null`s, labels marked "(recommended)", answers
//! naming options by id or by label, replies like `1,3` or `approve session`. Every field is now
//! and then absent, `null` or any JSON at all, so the error paths are reached too.

use arbitrary::{Arbitrary, Result, Unstructured};
use clarify_core::{Limits, NewRequest, Question, QuestionKind};
use serde_json::{Map, Value, json};

/// Nesting beyond this is cut short: the parsers look a few levels deep at most.
const MAX_DEPTH: u8 = 5;

/// Keys the parsers look at, and a few neighbours they must ignore or refuse.
#[rustfmt::skip]
const KEYS: &[&str] = &[
    "questions", "question", "prompt", "choices", "options", "text", "kind", "type", "label",
    "description", "title", "name", "value", "id", "multi_select", "action", "arguments",
    "scopes", "allow_edit", "allow_other", "recommended", "header", "context", "tags",
    "responders", "timeout_seconds", "allow_skip", "callback_url", "session", "agent",
    "tool_call_id", "idempotency_key", "dedupe", "answers", "option", "other", "decision",
    "scope", "edited_arguments", "reason", "skip", "q1", "q2", "q3", "Questions", "",
];

/// Words that mean something to some parser, and text at the edges of what they accept.
#[rustfmt::skip]
const WORDS: &[&str] = &[
    "", " ", "yes", "no", "Yes", "YES", "Postgres (recommended)", "(recommended)",
    "A (Recommended) (recommended)", "a", "b", "B", "z", "1", "2", "3", "0", "99", "1,3", "1 3",
    "a, c", "s", "skip", "S", "approve", "approve session", "approve always", "deny not today",
    "y", "n", "once", "session", "always", "Session", "single", "multi", "open", "approval",
    "single_select", "multiple_choice", "checkbox", "radio", "free_text", "confirm", "q1", "q2",
    "[\"a\",\"b\"]", "{\"label\":\"x\"}", "{\"title\":\"T\",\"name\":\"t\"}", "[{\"text\":\"A\"}]",
    "[]", "{}", "[", "{", "日本語", "é\u{301}", "\u{0}", "🦀", "https://example.com/hook",
    "http://localhost:8080/cb?x=1", "ftp://example.com", "not a url", "null", "true", "-1",
    "1e400", "Deploy, now", "a b", "A+B", "12",
];

/// Option labels: few enough that duplicates (ignoring case) come up often.
#[rustfmt::skip]
const LABELS: &[&str] = &[
    "Yes", "yes", "No", "Postgres", "SQLite", "MySQL", "A", "B", "a b", "A+B", "12", "1", "2",
    "日本", " padded ", "s", "skip", "Deploy, now", "approve", "Other", "b", "x y z",
];

/// Lengths on both sides of the contract's text limits.
const LENGTHS: &[usize] = &[
    Limits::MAX_HEADER_CHARS,
    Limits::MAX_HEADER_CHARS + 1,
    Limits::MAX_LABEL_CHARS,
    Limits::MAX_LABEL_CHARS + 1,
    Limits::MAX_TEXT_CHARS,
    Limits::MAX_TEXT_CHARS + 1,
    Limits::MAX_NAME_CHARS + 1,
    Limits::MAX_ANSWER_CHARS,
    Limits::MAX_ANSWER_CHARS + 1,
];

/// Some text: mostly meaningful words, sometimes long, sometimes anything.
pub fn text(u: &mut Unstructured<'_>) -> Result<String> {
    Ok(match u.int_in_range(0..=9)? {
        0..=4 => (*u.choose(WORDS)?).to_owned(),
        5 => format!("{} (recommended)", u.choose(LABELS)?),
        6 => format!(
            "{}{}{}",
            u.choose(WORDS)?,
            u.choose(&[" ", ",", ", ", ":", "  "])?,
            u.choose(WORDS)?
        ),
        7 => {
            let ch = *u.choose(&['x', 'é', ' ', '日', '1'])?;
            std::iter::repeat_n(ch, *u.choose(LENGTHS)?).collect()
        }
        _ => String::arbitrary(u)?,
    })
}

fn number(u: &mut Unstructured<'_>) -> Result<Value> {
    Ok(match u.int_in_range(0..=4)? {
        0 => Value::from(i64::arbitrary(u)?),
        1 => Value::from(u64::arbitrary(u)?),
        // `from` turns a non-finite float into null, which is what a JSON parser would refuse.
        2 => Value::from(f64::arbitrary(u)?),
        3 => Value::from(*u.choose(&[
            0.0,
            -1.0,
            0.5,
            1.0,
            1e300,
            -0.0,
            3600.5,
            Limits::MAX_TIMEOUT_SECONDS as f64 + 0.5,
        ])?),
        _ => Value::from(*u.choose(&[
            0,
            1,
            2,
            4,
            5,
            24,
            25,
            3600,
            Limits::MAX_TIMEOUT_SECONDS,
            Limits::MAX_TIMEOUT_SECONDS + 1,
        ])?),
    })
}

fn key(u: &mut Unstructured<'_>) -> Result<String> {
    if u.ratio(4, 5)? {
        Ok((*u.choose(KEYS)?).to_owned())
    } else {
        text(u)
    }
}

/// Any JSON value, biased towards the keys and words the parsers look at.
pub fn json(u: &mut Unstructured<'_>, depth: u8) -> Result<Value> {
    let most = if depth >= MAX_DEPTH { 4 } else { 7 };
    Ok(match u.int_in_range(0..=most)? {
        0 => Value::Null,
        1 => Value::Bool(bool::arbitrary(u)?),
        2 => number(u)?,
        3 | 4 => Value::String(text(u)?),
        5 => Value::Array(list(u, 6, |u| json(u, depth + 1))?),
        6 => Value::String(json(u, depth + 1)?.to_string()),
        _ => {
            let mut obj = Map::new();
            for _ in 0..u.int_in_range(0..=6)? {
                obj.insert(key(u)?, json(u, depth + 1)?);
            }
            Value::Object(obj)
        }
    })
}

fn list<T>(
    u: &mut Unstructured<'_>,
    max: usize,
    mut item: impl FnMut(&mut Unstructured<'_>) -> Result<T>,
) -> Result<Vec<T>> {
    let n = u.int_in_range(0..=max)?;
    (0..n).map(|_| item(u)).collect()
}

/// Puts `key` in `obj`: usually a plausible value, sometimes nothing, `null` or any JSON.
fn field(
    u: &mut Unstructured<'_>,
    obj: &mut Map<String, Value>,
    key: &str,
    plausible: impl FnOnce(&mut Unstructured<'_>) -> Result<Value>,
) -> Result<()> {
    let value = match u.int_in_range(0..=11)? {
        0..=4 => return Ok(()),
        5 => Value::Null,
        6 => json(u, 2)?,
        _ => plausible(u)?,
    };
    obj.insert(key.to_owned(), value);
    Ok(())
}

fn label(u: &mut Unstructured<'_>) -> Result<String> {
    Ok(match u.int_in_range(0..=7)? {
        0..=4 => (*u.choose(LABELS)?).to_owned(),
        5 => format!(
            "{}{}",
            u.choose(LABELS)?,
            u.choose(&[
                " (recommended)",
                "(Recommended)",
                " (recommended) (RECOMMENDED)"
            ])?
        ),
        _ => text(u)?,
    })
}

fn option(u: &mut Unstructured<'_>, i: usize) -> Result<Value> {
    let label = label(u)?;
    Ok(match u.int_in_range(0..=11)? {
        0..=2 => json!(label),
        3 => json!({"label": label}),
        4 => json!({"label": label, "description": text(u)?}),
        5 => json!({"title": label, "name": format!("nm{i}")}),
        6 => json!({"text": label, "value": text(u)?}),
        7 => json!({"description": label, "label": u.choose(&["", " "])?}),
        8 => json!({"id": u.choose(&["a", "b", "A", "x.y", "bad id", "", "q1"])?, "label": label}),
        9 => Value::String(json!({"label": label, "title": "ignored"}).to_string()),
        10 => json!([label, text(u)?]),
        _ => json(u, 3)?,
    })
}

fn options(u: &mut Unstructured<'_>) -> Result<Value> {
    let n = u.int_in_range(0..=7)?;
    let items = (0..n).map(|i| option(u, i)).collect::<Result<Vec<_>>>()?;
    Ok(if u.ratio(1, 8)? {
        Value::String(Value::Array(items).to_string())
    } else {
        Value::Array(items)
    })
}

fn kind_name(u: &mut Unstructured<'_>, kind: u8) -> Result<&'static str> {
    u.choose(match kind {
        0 => &["open", "text", "free_text", "Open"][..],
        1 => &["single", "single_select", "Radio", "choice"][..],
        2 => &["multi", "multiple_choice", "checkbox", "multi_select"][..],
        _ => &["approval", "confirm", "approve", "APPROVAL"][..],
    })
    .copied()
}

fn question(u: &mut Unstructured<'_>, i: usize) -> Result<Value> {
    if u.ratio(1, 12)? {
        return Ok(Value::String(text(u)?));
    }
    let mut q = Map::new();
    let text_key = *u.choose(&["text", "question", "prompt"])?;
    q.insert(
        text_key.to_owned(),
        json!(format!("{} {}?", u.choose(&["", " ", "Which"])?, text(u)?)),
    );
    let kind = u.int_in_range(0..=3)?;
    match u.int_in_range(0..=4)? {
        0 => {}
        1 if kind == 2 => {
            q.insert("multi_select".to_owned(), json!(true));
        }
        n => {
            let key = if n == 2 { "type" } else { "kind" };
            q.insert(key.to_owned(), json!(kind_name(u, kind)?));
        }
    }
    field(u, &mut q, "id", |u| {
        Ok(json!(if u.ratio(3, 4)? {
            format!("q{}", u.int_in_range(0..=5)? + i % 2)
        } else {
            text(u)?
        }))
    })?;
    field(u, &mut q, "header", |u| Ok(json!(text(u)?)))?;
    match kind {
        1 | 2 => {
            let key = *u.choose(&["options", "choices"])?;
            q.insert(key.to_owned(), options(u)?);
            field(u, &mut q, "allow_other", |u| Ok(json!(bool::arbitrary(u)?)))?;
            field(u, &mut q, "recommended", |u| Ok(json!(label(u)?)))?;
        }
        3 => {
            field(u, &mut q, "action", |u| {
                let arguments = json(u, 2)?;
                Ok(json!({
                    "name": u.choose(&["deploy", "rm -rf", "send_email", ""])?,
                    "arguments": if u.ratio(1, 4)? { json!(arguments.to_string()) } else { arguments },
                }))
            })?;
            field(u, &mut q, "scopes", |u| {
                Ok(json!(list(u, 4, |u| Ok(*u.choose(&[
                    "once", "session", "always", "Session", "forever"
                ])?))?))
            })?;
            field(u, &mut q, "allow_edit", |u| Ok(json!(bool::arbitrary(u)?)))?;
        }
        _ => {
            if u.ratio(1, 6)? {
                q.insert("options".to_owned(), json!([]));
            }
        }
    }
    if u.ratio(1, 8)? {
        q.insert(key(u)?, json(u, 2)?);
    }
    Ok(Value::Object(q))
}

/// A create-request body as a model might write it.
pub fn request(u: &mut Unstructured<'_>) -> Result<Value> {
    let n = u.int_in_range(1..=6)?;
    let questions = (0..n).map(|i| question(u, i)).collect::<Result<Vec<_>>>()?;
    let mut top = match questions.as_slice() {
        [Value::Object(q)] if !q.contains_key("text") && u.ratio(1, 2)? => q.clone(),
        _ if u.ratio(1, 12)? => {
            let mut top = Map::new();
            top.insert(
                "questions".to_owned(),
                json!(Value::Array(questions).to_string()),
            );
            top
        }
        _ => {
            let mut top = Map::new();
            top.insert("questions".to_owned(), Value::Array(questions));
            top
        }
    };
    field(u, &mut top, "context", |u| {
        Ok(if u.ratio(1, 2)? {
            json!(text(u)?)
        } else {
            json(u, 1)?
        })
    })?;
    for name in ["session", "agent", "tool_call_id", "idempotency_key"] {
        field(u, &mut top, name, |u| Ok(json!(text(u)?)))?;
    }
    field(u, &mut top, "tags", |u| Ok(json!(list(u, 12, text)?)))?;
    field(u, &mut top, "timeout_seconds", number)?;
    field(u, &mut top, "allow_skip", |u| {
        Ok(json!(bool::arbitrary(u)?))
    })?;
    field(u, &mut top, "dedupe", |u| Ok(json!(bool::arbitrary(u)?)))?;
    field(u, &mut top, "multi_select", |u| {
        Ok(json!(bool::arbitrary(u)?))
    })?;
    field(u, &mut top, "responders", |u| Ok(json!(list(u, 4, text)?)))?;
    field(u, &mut top, "callback_url", |u| Ok(json!(text(u)?)))?;
    if u.ratio(1, 8)? {
        top.insert(key(u)?, json(u, 2)?);
    }
    Ok(Value::Object(top))
}

/// A way to name an option of `question` in an answer: its id, its label in any case, its
/// position, or something else.
fn option_ref(u: &mut Unstructured<'_>, question: &Question) -> Result<Value> {
    let Some(choices) = question.kind.choices() else {
        return Ok(json!(text(u)?));
    };
    let option = u.choose(&choices.options)?;
    Ok(match u.int_in_range(0..=7)? {
        0..=3 => json!(option.id),
        4 => json!(option.label.to_uppercase()),
        5 => json!(format!(" {} ", option.label)),
        6 => json!(u.int_in_range(0..=5)?),
        _ => json!(text(u)?),
    })
}

/// The answer to one question: usually one of its kind's shapes, sometimes another kind's.
fn answer(u: &mut Unstructured<'_>, question: &Question) -> Result<Value> {
    let kind = if u.ratio(1, 6)? {
        u.int_in_range(0..=3)?
    } else {
        match &question.kind {
            QuestionKind::Open => 0,
            QuestionKind::Single(_) => 1,
            QuestionKind::Multi(_) => 2,
            QuestionKind::Approval(_) | QuestionKind::Form(_) => 3,
        }
    };
    let mut obj = Map::new();
    match kind {
        0 => {
            obj.insert("text".to_owned(), json!(text(u)?));
        }
        1 => match u.int_in_range(0..=3)? {
            0 | 1 => {
                obj.insert("option".to_owned(), option_ref(u, question)?);
            }
            2 => {
                obj.insert("other".to_owned(), json!(text(u)?));
            }
            _ => {
                obj.insert("options".to_owned(), json!([option_ref(u, question)?]));
            }
        },
        2 => {
            let picked = list(u, 4, |u| option_ref(u, question))?;
            obj.insert("options".to_owned(), json!(picked));
            field(u, &mut obj, "other", |u| Ok(json!(text(u)?)))?;
        }
        _ => {
            let decision = *u.choose(&["approve", "deny", "APPROVE", " deny ", "maybe", ""])?;
            obj.insert("decision".to_owned(), json!(decision));
            field(u, &mut obj, "scope", |u| {
                Ok(json!(u.choose(&[
                    "once", "session", "always", "Always", "never"
                ])?))
            })?;
            field(u, &mut obj, "edited_arguments", |u| json(u, 2))?;
            field(u, &mut obj, "reason", |u| Ok(json!(text(u)?)))?;
        }
    }
    if u.ratio(1, 10)? {
        obj.insert(key(u)?, json(u, 2)?);
    }
    Ok(Value::Object(obj))
}

/// An answer body for `request`, as a person, the inbox or a client might send it.
pub fn answer_body(u: &mut Unstructured<'_>, request: &NewRequest) -> Result<Value> {
    Ok(match u.int_in_range(0..=9)? {
        0 => json!({"skip": json(u, MAX_DEPTH)?}),
        1 => json!({"skip": true}),
        2 => json(u, 1)?,
        3 if request.questions.len() == 1 => answer(u, &request.questions[0])?,
        _ => {
            let mut answers = Map::new();
            for question in &request.questions {
                if u.ratio(9, 10)? {
                    answers.insert(question.id.clone(), answer(u, question)?);
                }
            }
            if u.ratio(1, 10)? {
                answers.insert(text(u)?, json(u, 2)?);
            }
            let mut body = Map::new();
            body.insert("answers".to_owned(), Value::Object(answers));
            if u.ratio(1, 10)? {
                body.insert("skip".to_owned(), json!(false));
            }
            Value::Object(body)
        }
    })
}

/// A typed reply to `question`, as a person types it in a terminal or a chat.
pub fn reply(u: &mut Unstructured<'_>, question: &Question) -> Result<String> {
    let count = question.kind.choices().map_or(2, |c| c.options.len());
    let separators = [",", " ", ", ", ",,", " , "];
    Ok(match u.int_in_range(0..=9)? {
        0 => text(u)?,
        1 | 2 => {
            let n = u.int_in_range(1..=4)?;
            let mut parts = Vec::new();
            for _ in 0..n {
                parts.push(u.int_in_range(0..=count + 1)?.to_string());
            }
            parts.join(u.choose(&separators)?)
        }
        3 => {
            let n = u.int_in_range(1..=3)?;
            let mut parts = Vec::new();
            for _ in 0..n {
                let letter = b'a' + u.int_in_range(0..=25)?;
                let letter = char::from(letter);
                parts.push(if bool::arbitrary(u)? {
                    letter.to_ascii_uppercase()
                } else {
                    letter
                });
            }
            let joined: Vec<String> = parts.iter().map(char::to_string).collect();
            joined.join(u.choose(&separators)?)
        }
        4 | 5 => match question.kind.choices() {
            Some(choices) => {
                let n = u.int_in_range(1..=3)?;
                let mut parts = Vec::new();
                for _ in 0..n {
                    let option = u.choose(&choices.options)?;
                    parts.push(match u.int_in_range(0..=3)? {
                        0 => option.label.to_uppercase(),
                        1 => format!("{} (recommended)", option.label),
                        2 => format!("  {}  ", option.label),
                        _ => option.label.clone(),
                    });
                }
                parts.join(u.choose(&[",", ", "])?)
            }
            None => text(u)?,
        },
        6 | 7 => format!(
            "{}{}",
            u.choose(&[
                "approve", "approved", "Yes", "y", "1", "a", "deny", "denied", "no", "N", "2", "d",
                "maybe"
            ])?,
            u.choose(&[
                "",
                " once",
                " session",
                " ALWAYS",
                " forever",
                ": not today",
                ", because",
                " session please"
            ])?
        ),
        8 => (*u.choose(&["s", "skip", "S", " SKIP ", "skip it"])?).to_owned(),
        _ => String::arbitrary(u)?,
    })
}
