//! Checking a form answer: each value against its field, the answer as a whole against the
//! form, and what a person typed read into a value to be checked the same way.

use chrono::{DateTime, NaiveDate};
use serde_json::{Map, Number, Value};

use super::{Field, FieldKind, Form, TextFormat, compile, integer, show};
use crate::error::json_type;
use crate::limits::Limits;
use crate::model::Choice;
use crate::text::{chars, quoted};

/// Checks one value against its field and returns its canonical form, or says (without the
/// field's path) why it does not fit: `must be at most 5000, got 9000`.
pub fn check_value(field: &Field, v: &Value) -> Result<Value, String> {
    match &field.kind {
        FieldKind::Text {
            min_length,
            max_length,
            pattern,
            format,
        } => {
            let Value::String(s) = v else {
                return Err(format!("must be text, got {}", json_type(v)));
            };
            let s = s.trim();
            let got = chars(s);
            let max = max_length.unwrap_or(Limits::MAX_ANSWER_CHARS);
            if got > max {
                return Err(format!("must be at most {max} characters, got {got}"));
            }
            if let Some(min) = min_length.filter(|&m| got < m) {
                return Err(format!("must be at least {min} characters, got {got}"));
            }
            if let Some(format) = format {
                check_format(*format, s)?;
            }
            if let Some(p) = pattern {
                let re = compile(p)?;
                if !re.is_match(s) {
                    return Err(format!(
                        "must match the pattern {}, got {}",
                        quoted(p),
                        quoted(s)
                    ));
                }
            }
            Ok(Value::String(s.to_owned()))
        }
        FieldKind::Number { minimum, maximum } => {
            let Value::Number(n) = v else {
                return Err(format!("must be a number, got {}", json_type(v)));
            };
            let x = n.as_f64().unwrap_or(f64::NAN);
            if let Some(max) = maximum.filter(|&m| x > m) {
                return Err(format!("must be at most {}, got {n}", show(max)));
            }
            if let Some(min) = minimum.filter(|&m| x < m) {
                return Err(format!("must be at least {}, got {n}", show(min)));
            }
            Ok(Value::Number(n.clone()))
        }
        FieldKind::Integer { minimum, maximum } => {
            let x = match v {
                Value::Number(n) => {
                    integer(n).ok_or_else(|| format!("must be a whole number, got {n}"))?
                }
                other => return Err(format!("must be a whole number, got {}", json_type(other))),
            };
            if let Some(max) = maximum.filter(|&m| x > m) {
                return Err(format!("must be at most {max}, got {x}"));
            }
            if let Some(min) = minimum.filter(|&m| x < m) {
                return Err(format!("must be at least {min}, got {x}"));
            }
            Ok(Value::from(x))
        }
        FieldKind::Boolean => match v {
            Value::Bool(b) => Ok(Value::Bool(*b)),
            other => Err(format!("must be true or false, got {}", json_type(other))),
        },
        FieldKind::Choice { options } => option_id(options, v).map(Value::String),
        FieldKind::Choices {
            options,
            min_items,
            max_items,
        } => {
            let Value::Array(items) = v else {
                return Err(format!(
                    "must be a list of option ids, got {}",
                    json_type(v)
                ));
            };
            let mut picked = Vec::new();
            for item in items {
                let id = option_id(options, item)?;
                if !picked.contains(&id) {
                    picked.push(id);
                }
            }
            let got = picked.len();
            if let Some(max) = max_items.filter(|&m| got > m) {
                return Err(format!("choose at most {max} options, got {got}"));
            }
            if let Some(min) = min_items.filter(|&m| got < m) {
                return Err(format!("choose at least {min} options, got {got}"));
            }
            // The options' order, so equal selections compare equal.
            Ok(Value::Array(
                options
                    .iter()
                    .filter(|o| picked.contains(&o.id))
                    .map(|o| Value::String(o.id.clone()))
                    .collect(),
            ))
        }
    }
}

fn option_id(options: &[Choice], v: &Value) -> Result<String, String> {
    let key = match v {
        Value::String(s) => s.trim().to_owned(),
        Value::Number(n) => n.to_string(),
        other => return Err(format!("must be an option id, got {}", json_type(other))),
    };
    options
        .iter()
        .find(|o| o.id == key)
        .or_else(|| {
            options
                .iter()
                .find(|o| o.label.to_lowercase() == key.to_lowercase())
        })
        .map(|o| o.id.clone())
        .ok_or_else(|| {
            let known = options
                .iter()
                .map(|o| o.id.as_str())
                .collect::<Vec<_>>()
                .join(", ");
            format!("{} is not an option; the options are {known}", quoted(&key))
        })
}

fn check_format(format: TextFormat, s: &str) -> Result<(), String> {
    let ok = match format {
        TextFormat::Email => is_email(s),
        TextFormat::Url => url::Url::parse(s)
            .is_ok_and(|u| matches!(u.scheme(), "http" | "https") && u.host_str().is_some()),
        TextFormat::Date => NaiveDate::parse_from_str(s, "%Y-%m-%d").is_ok(),
        TextFormat::Datetime => DateTime::parse_from_rfc3339(s).is_ok(),
    };
    if ok {
        return Ok(());
    }
    Err(match format {
        TextFormat::Email => format!(
            "must be an e-mail address such as name@example.com, got {}",
            quoted(s)
        ),
        TextFormat::Url => format!("must be an http or https URL, got {}", quoted(s)),
        TextFormat::Date => format!("must be a date as YYYY-MM-DD, got {}", quoted(s)),
        TextFormat::Datetime => format!(
            "must be a date and time with a time zone, such as 2026-12-01T09:30:00Z, got {}",
            quoted(s)
        ),
    })
}

/// A plausible address: one `@`, a local part, a dotted domain, no spaces. Deliverability is not
/// for a form to judge.
fn is_email(s: &str) -> bool {
    let Some((local, domain)) = s.split_once('@') else {
        return false;
    };
    !local.is_empty()
        && !domain.contains('@')
        && !s.chars().any(char::is_whitespace)
        && domain.contains('.')
        && !domain.starts_with('.')
        && !domain.ends_with('.')
        && !domain.contains("..")
}

/// Checks the values of a form answer: every field present or defaulted or optional, no unknown
/// key. Returns them canonical, in the form's field order; on error, the field id and the reason.
pub(crate) fn check_values(
    form: &Form,
    values: &Map<String, Value>,
) -> Result<Vec<(String, Value)>, (String, String)> {
    let mut keys: Vec<&String> = values.keys().collect();
    keys.sort();
    if let Some(unknown) = keys.into_iter().find(|k| form.field(k).is_none()) {
        let known = form
            .fields
            .iter()
            .map(|f| f.id.as_str())
            .collect::<Vec<_>>()
            .join(", ");
        return Err((
            unknown.clone(),
            format!("the form has no such field; its fields are {known}"),
        ));
    }
    let mut out = Vec::with_capacity(form.fields.len());
    for field in &form.fields {
        match present(values.get(&field.id)) {
            Some(v) => {
                let value = check_value(field, v).map_err(|e| (field.id.clone(), e))?;
                out.push((field.id.clone(), value));
            }
            None => match &field.default {
                Some(d) => out.push((field.id.clone(), d.clone())),
                None if field.required => {
                    return Err((field.id.clone(), "is required".to_owned()));
                }
                None => {}
            },
        }
    }
    Ok(out)
}

/// A value that counts as given: not null, not blank text, not an empty list.
fn present(v: Option<&Value>) -> Option<&Value> {
    v.filter(|v| match v {
        Value::Null => false,
        Value::String(s) => !s.trim().is_empty(),
        Value::Array(items) => !items.is_empty(),
        _ => true,
    })
}

/// Reads what a person typed for `field` into a JSON value: `Ok(None)` for blank (the field's
/// default or absence applies). Numbers, `yes`/`no`, an option's number, letter, id or label, and
/// lists of those separated by commas or spaces are understood; the value is then checked like
/// any other, so this only converts. A date and time without a time zone is read as UTC.
pub fn value_from_text(field: &Field, text: &str) -> Result<Option<Value>, String> {
    let t = text.trim();
    if t.is_empty() {
        return Ok(None);
    }
    let value = match &field.kind {
        FieldKind::Text { format, .. } => {
            if *format == Some(TextFormat::Datetime) && DateTime::parse_from_rfc3339(t).is_err() {
                for layout in ["%Y-%m-%dT%H:%M", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M"] {
                    if let Ok(naive) = chrono::NaiveDateTime::parse_from_str(t, layout) {
                        return Ok(Some(Value::String(
                            naive
                                .and_utc()
                                .to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
                        )));
                    }
                }
            }
            Value::String(t.to_owned())
        }
        FieldKind::Number { .. } => {
            let x: f64 = t
                .replace('_', "")
                .parse()
                .map_err(|_| format!("must be a number, got {}", quoted(t)))?;
            Number::from_f64(x)
                .map(|n| match integer(&n) {
                    Some(i) if !t.contains(['.', 'e', 'E']) => Value::from(i),
                    _ => Value::Number(n),
                })
                .ok_or_else(|| format!("must be a finite number, got {}", quoted(t)))?
        }
        FieldKind::Integer { .. } => Value::from(
            t.replace('_', "")
                .parse::<i64>()
                .map_err(|_| format!("must be a whole number, got {}", quoted(t)))?,
        ),
        FieldKind::Boolean => match t.to_ascii_lowercase().as_str() {
            "y" | "yes" | "true" | "on" | "1" => Value::Bool(true),
            "n" | "no" | "false" | "off" | "0" => Value::Bool(false),
            _ => return Err(format!("answer yes or no, got {}", quoted(t))),
        },
        FieldKind::Choice { options } => Value::String(pick(options, t)?),
        FieldKind::Choices { options, .. } => {
            // A whole label may contain commas or spaces; try it first.
            if let Ok(id) = pick(options, t) {
                Value::Array(vec![Value::String(id)])
            } else {
                let parts: Vec<&str> = if t.contains(',') {
                    t.split(',')
                        .map(str::trim)
                        .filter(|p| !p.is_empty())
                        .collect()
                } else {
                    t.split_whitespace().collect()
                };
                Value::Array(
                    parts
                        .into_iter()
                        .map(|p| pick(options, p).map(Value::String))
                        .collect::<Result<_, _>>()?,
                )
            }
        }
    };
    Ok(Some(value))
}

/// An option by its number (from 1), letter, id or label.
fn pick(options: &[Choice], t: &str) -> Result<String, String> {
    let by_index = |i: usize| options.get(i).map(|o| o.id.clone());
    let found = if let Ok(n) = t.parse::<usize>() {
        n.checked_sub(1).and_then(by_index)
    } else if t.len() == 1
        && t.as_bytes()[0].is_ascii_alphabetic()
        && !options.iter().any(|o| o.id == t)
    {
        by_index(usize::from(t.as_bytes()[0].to_ascii_lowercase() - b'a'))
    } else {
        None
    };
    match found {
        Some(id) => Ok(id),
        None => option_id(options, &Value::String(t.to_owned())),
    }
}
