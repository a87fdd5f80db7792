//! Forms: a question made of typed fields (`kind: "form"`), answered with one value per field.
//!
//! Everything about forms that is not coercion lives here: the field types and their limits, the
//! validation of a field list when a request is created ([`fields`]), the check of each value
//! when it is answered ([`check_value`], used by [`crate::parse_submission`]), and the reading of
//! typed text into a value ([`value_from_text`]) for the surfaces where a person types (the
//! terminal, the no-script link form, chat modals). The last one only converts: its result is
//! checked by the same [`check_value`] as any other answer.
//!
//! A JSON Schema object (MCP elicitation's `requestedSchema`) becomes fields in
//! [`crate::coerce`], before any of this runs.

use std::collections::HashSet;

use chrono::{DateTime, NaiveDate};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Number, Value};

use crate::error::{ValidationError, json_type};
use crate::limits::Limits;
use crate::model::Choice;
use crate::text::{chars, is_valid_id, quoted, slug};

/// The fields of a form question, in the order they are shown.
#[derive(Debug, Clone, PartialEq)]
pub struct Form {
    pub fields: Vec<Field>,
}

impl Form {
    pub fn field(&self, id: &str) -> Option<&Field> {
        self.fields.iter().find(|f| f.id == id)
    }
}

/// One field of a form.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(into = "FieldRepr", try_from = "FieldRepr")]
pub struct Field {
    pub id: String,
    pub label: String,
    pub required: bool,
    pub description: Option<String>,
    /// Already checked against the field, in its canonical form.
    pub default: Option<Value>,
    pub kind: FieldKind,
}

/// A field's type and its limits.
#[derive(Debug, Clone, PartialEq)]
pub enum FieldKind {
    Text {
        min_length: Option<usize>,
        max_length: Option<usize>,
        /// A regular expression the text must contain a match of (as in JSON Schema: not
        /// anchored unless the pattern says so).
        pattern: Option<String>,
        format: Option<TextFormat>,
    },
    Number {
        minimum: Option<f64>,
        maximum: Option<f64>,
    },
    Integer {
        minimum: Option<i64>,
        maximum: Option<i64>,
    },
    Boolean,
    /// One option, answered with its id.
    Choice {
        options: Vec<Choice>,
    },
    /// Several options, answered with a list of ids.
    Choices {
        options: Vec<Choice>,
        min_items: Option<usize>,
        max_items: Option<usize>,
    },
}

impl FieldKind {
    /// The contract's name of this type.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Text { .. } => "text",
            Self::Number { .. } => "number",
            Self::Integer { .. } => "integer",
            Self::Boolean => "boolean",
            Self::Choice { .. } => "choice",
            Self::Choices { .. } => "choices",
        }
    }

    /// The options of a `choice` or `choices` field.
    pub fn options(&self) -> Option<&[Choice]> {
        match self {
            Self::Choice { options } | Self::Choices { options, .. } => Some(options),
            _ => None,
        }
    }
}

impl Field {
    /// What may be typed for this field, in words: its type and limits (`a number, from 1, up
    /// to 5000, optional`), for surfaces that take a field's value as text.
    pub fn hint(&self) -> String {
        let mut limits: Vec<String> = Vec::new();
        match &self.kind {
            FieldKind::Text {
                min_length,
                max_length,
                format,
                ..
            } => {
                limits.push(format.map_or("text", |f| f.as_str()).to_owned());
                limits.extend(min_length.map(|m| format!("at least {m} characters")));
                limits.extend(max_length.map(|m| format!("at most {m} characters")));
            }
            FieldKind::Number { minimum, maximum } => {
                limits.push("a number".to_owned());
                limits.extend(minimum.map(|m| format!("from {m}")));
                limits.extend(maximum.map(|m| format!("up to {m}")));
            }
            FieldKind::Integer { minimum, maximum } => {
                limits.push("a whole number".to_owned());
                limits.extend(minimum.map(|m| format!("from {m}")));
                limits.extend(maximum.map(|m| format!("up to {m}")));
            }
            FieldKind::Boolean => limits.push("yes or no".to_owned()),
            FieldKind::Choice { .. } => limits.push("one option".to_owned()),
            FieldKind::Choices {
                min_items,
                max_items,
                ..
            } => {
                limits.push("several like 1,3".to_owned());
                limits.extend(min_items.map(|m| format!("at least {m}")));
                limits.extend(max_items.map(|m| format!("at most {m}")));
            }
        }
        if !self.required {
            limits.push("optional".to_owned());
        }
        limits.join(", ")
    }
}

/// A format a text field's value must have.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TextFormat {
    Email,
    Url,
    /// `YYYY-MM-DD`.
    Date,
    /// RFC 3339, with a time zone.
    Datetime,
}

impl TextFormat {
    pub const ALL: [TextFormat; 4] = [Self::Email, Self::Url, Self::Date, Self::Datetime];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Email => "email",
            Self::Url => "url",
            Self::Date => "date",
            Self::Datetime => "datetime",
        }
    }

    fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|f| f.as_str() == s)
    }
}

/// The flat serde form of a [`Field`], the canonical shape.
#[derive(Serialize, Deserialize)]
struct FieldRepr {
    id: String,
    label: String,
    #[serde(rename = "type")]
    kind: String,
    required: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    default: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    min_length: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    max_length: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pattern: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    format: Option<TextFormat>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    minimum: Option<Number>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    maximum: Option<Number>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    options: Option<Vec<Choice>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    min_items: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    max_items: Option<usize>,
}

impl From<Field> for FieldRepr {
    fn from(f: Field) -> Self {
        let mut r = FieldRepr {
            id: f.id,
            label: f.label,
            kind: f.kind.name().to_owned(),
            required: f.required,
            description: f.description,
            default: f.default,
            min_length: None,
            max_length: None,
            pattern: None,
            format: None,
            minimum: None,
            maximum: None,
            options: None,
            min_items: None,
            max_items: None,
        };
        match f.kind {
            FieldKind::Text {
                min_length,
                max_length,
                pattern,
                format,
            } => {
                r.min_length = min_length;
                r.max_length = max_length;
                r.pattern = pattern;
                r.format = format;
            }
            FieldKind::Number { minimum, maximum } => {
                r.minimum = minimum.and_then(number);
                r.maximum = maximum.and_then(number);
            }
            FieldKind::Integer { minimum, maximum } => {
                r.minimum = minimum.map(Number::from);
                r.maximum = maximum.map(Number::from);
            }
            FieldKind::Boolean => {}
            FieldKind::Choice { options } => r.options = Some(options),
            FieldKind::Choices {
                options,
                min_items,
                max_items,
            } => {
                r.options = Some(options);
                r.min_items = min_items;
                r.max_items = max_items;
            }
        }
        r
    }
}

impl TryFrom<FieldRepr> for Field {
    type Error = String;

    /// Reads back a field this crate serialized; limits are not re-applied.
    fn try_from(r: FieldRepr) -> Result<Self, Self::Error> {
        let kind = match r.kind.as_str() {
            "text" => FieldKind::Text {
                min_length: r.min_length,
                max_length: r.max_length,
                pattern: r.pattern,
                format: r.format,
            },
            "number" => FieldKind::Number {
                minimum: r.minimum.as_ref().and_then(Number::as_f64),
                maximum: r.maximum.as_ref().and_then(Number::as_f64),
            },
            "integer" => FieldKind::Integer {
                minimum: r.minimum.as_ref().and_then(Number::as_i64),
                maximum: r.maximum.as_ref().and_then(Number::as_i64),
            },
            "boolean" => FieldKind::Boolean,
            "choice" => FieldKind::Choice {
                options: r.options.ok_or("options missing")?,
            },
            "choices" => FieldKind::Choices {
                options: r.options.ok_or("options missing")?,
                min_items: r.min_items,
                max_items: r.max_items,
            },
            other => return Err(format!("unknown field type {other:?}")),
        };
        Ok(Field {
            id: r.id,
            label: r.label,
            required: r.required,
            description: r.description,
            default: r.default,
            kind,
        })
    }
}

/// The keys a field object may have.
const FIELD_KEYS: [&str; 15] = [
    "id",
    "label",
    "type",
    "required",
    "description",
    "default",
    "min_length",
    "max_length",
    "pattern",
    "format",
    "minimum",
    "maximum",
    "options",
    "min_items",
    "max_items",
];

/// Validates the canonical `fields` list of question `prefix` (such as `questions[0]`).
pub(crate) fn fields(
    v: Option<&Value>,
    prefix: &str,
    limits: &Limits,
) -> Result<Form, ValidationError> {
    let path = format!("{prefix}.fields");
    let items = match v {
        None | Some(Value::Null) => return Err(ValidationError::NoFields { field: path }),
        Some(Value::Array(items)) => items,
        Some(other) => return Err(invalid_type(&path, "a list of fields", other)),
    };
    if items.is_empty() {
        return Err(ValidationError::NoFields { field: path });
    }
    if items.len() > Limits::MAX_FIELDS {
        return Err(ValidationError::TooManyFields {
            field: path,
            max: Limits::MAX_FIELDS,
            got: items.len(),
        });
    }
    let mut out: Vec<Field> = Vec::with_capacity(items.len());
    let mut ids = HashSet::new();
    for (i, item) in items.iter().enumerate() {
        let field = field(item, &format!("{path}[{i}]"), i, limits)?;
        if !ids.insert(field.id.clone()) {
            return Err(ValidationError::DuplicateId {
                field: format!("{path}[{i}].id"),
                id: field.id,
            });
        }
        out.push(field);
    }
    Ok(Form { fields: out })
}

fn field(v: &Value, path: &str, index: usize, limits: &Limits) -> Result<Field, ValidationError> {
    let Value::Object(obj) = v else {
        return Err(invalid_type(path, "a field object", v));
    };
    if let Some(key) = obj.keys().find(|k| !FIELD_KEYS.contains(&k.as_str())) {
        return Err(ValidationError::UnknownField {
            field: format!("{path}.{key}"),
            hint: crate::coerce::suggestion(key, &FIELD_KEYS),
        });
    }
    let at = |key: &str| format!("{path}.{key}");
    let get = |key: &str| obj.get(key).filter(|v| !v.is_null());
    let text = |key: &str, max: usize| -> Result<Option<String>, ValidationError> {
        match get(key) {
            None => Ok(None),
            Some(Value::String(s)) if s.trim().is_empty() => Ok(None),
            Some(Value::String(s)) => {
                let s = s.trim();
                let got = chars(s);
                if got > max {
                    return Err(ValidationError::TooLong {
                        field: at(key),
                        max,
                        got,
                    });
                }
                Ok(Some(s.to_owned()))
            }
            Some(other) => Err(invalid_type(&at(key), "a string", other)),
        }
    };
    let count = |key: &str| -> Result<Option<usize>, ValidationError> {
        match get(key) {
            None => Ok(None),
            Some(Value::Number(n)) => n
                .as_u64()
                .and_then(|n| usize::try_from(n).ok())
                .map(Some)
                .ok_or_else(|| {
                    invalid_type(&at(key), "a whole number from 0", &Value::Number(n.clone()))
                }),
            Some(other) => Err(invalid_type(&at(key), "a whole number from 0", other)),
        }
    };

    let label = text("label", Limits::MAX_LABEL_CHARS)?;
    let id = match text("id", Limits::MAX_NAME_CHARS)? {
        Some(id) if is_valid_id(&id) => id,
        Some(id) => {
            return Err(ValidationError::InvalidId {
                field: at("id"),
                id,
            });
        }
        None => match label.as_deref().map(slug).filter(|s| !s.is_empty()) {
            Some(s) => s,
            None => format!("field-{}", index + 1),
        },
    };
    let label = label.unwrap_or_else(|| id.clone());
    let required = match get("required") {
        None => true,
        Some(Value::Bool(b)) => *b,
        Some(other) => return Err(invalid_type(&at("required"), "true or false", other)),
    };
    let description = text("description", Limits::MAX_DESCRIPTION_CHARS)?;
    let type_name = match get("type") {
        None => return Err(ValidationError::Missing { field: at("type") }),
        Some(Value::String(s)) => s.trim().to_ascii_lowercase(),
        Some(other) => return Err(invalid_type(&at("type"), "a field type name", other)),
    };

    let ty = FieldType::parse(&type_name).ok_or_else(|| ValidationError::UnknownFieldType {
        field: at("type"),
        got: type_name.clone(),
    })?;
    // Limits of other types are refused, so a limit is never silently ignored. The limits are
    // the keys after the six every field may have.
    let typed = &FIELD_KEYS[6..];
    if let Some(key) = typed
        .iter()
        .find(|k| get(k).is_some() && !ty.limits().contains(k))
    {
        return Err(ValidationError::LimitNotAllowed {
            field: at(key),
            kind: type_name,
        });
    }

    let kind = match ty {
        FieldType::Text => {
            let min_length = count("min_length")?;
            let max_length = count("max_length")?;
            if let Some(max) = max_length {
                if max > Limits::MAX_ANSWER_CHARS {
                    return Err(ValidationError::LimitTooLarge {
                        field: at("max_length"),
                        max: Limits::MAX_ANSWER_CHARS as u64,
                        got: max as u64,
                    });
                }
            }
            check_order(path, "min_length", min_length, "max_length", max_length)?;
            let pattern = text("pattern", Limits::MAX_PATTERN_CHARS)?;
            if let Some(p) = &pattern {
                compile(p).map_err(|reason| ValidationError::InvalidPattern {
                    field: at("pattern"),
                    reason,
                })?;
            }
            let format = match get("format") {
                None => None,
                Some(Value::String(s)) => Some(TextFormat::parse(s.trim()).ok_or_else(|| {
                    ValidationError::UnknownFormat {
                        field: at("format"),
                        got: s.clone(),
                    }
                })?),
                Some(other) => return Err(invalid_type(&at("format"), "a format name", other)),
            };
            FieldKind::Text {
                min_length,
                max_length,
                pattern,
                format,
            }
        }
        FieldType::Number => {
            let bound = |key: &str| -> Result<Option<f64>, ValidationError> {
                match get(key) {
                    None => Ok(None),
                    Some(Value::Number(n)) => Ok(n.as_f64()),
                    Some(other) => Err(invalid_type(&at(key), "a number", other)),
                }
            };
            let (minimum, maximum) = (bound("minimum")?, bound("maximum")?);
            check_order(path, "minimum", minimum, "maximum", maximum)?;
            FieldKind::Number { minimum, maximum }
        }
        FieldType::Integer => {
            let bound = |key: &str| -> Result<Option<i64>, ValidationError> {
                match get(key) {
                    None => Ok(None),
                    Some(v @ Value::Number(n)) => integer(n)
                        .map(Some)
                        .ok_or_else(|| invalid_type(&at(key), "a whole number", v)),
                    Some(other) => Err(invalid_type(&at(key), "a whole number", other)),
                }
            };
            let (minimum, maximum) = (bound("minimum")?, bound("maximum")?);
            check_order(path, "minimum", minimum, "maximum", maximum)?;
            FieldKind::Integer { minimum, maximum }
        }
        FieldType::Boolean => FieldKind::Boolean,
        FieldType::Choice | FieldType::Choices => {
            let kind = if ty == FieldType::Choice {
                "choice"
            } else {
                "choices"
            };
            let options =
                crate::validate::options(obj.get("options"), &at("options"), kind, limits)?;
            if ty == FieldType::Choice {
                FieldKind::Choice { options }
            } else {
                let min_items = count("min_items")?;
                let max_items = count("max_items")?;
                check_order(path, "min_items", min_items, "max_items", max_items)?;
                if let Some(min) = min_items.filter(|&m| m > options.len()) {
                    return Err(ValidationError::LimitTooLarge {
                        field: at("min_items"),
                        max: options.len() as u64,
                        got: min as u64,
                    });
                }
                FieldKind::Choices {
                    options,
                    min_items,
                    max_items,
                }
            }
        }
    };
    let mut field = Field {
        id,
        label,
        required,
        description,
        default: None,
        kind,
    };
    if let Some(default) = get("default") {
        let value =
            check_value(&field, default).map_err(|reason| ValidationError::InvalidDefault {
                field: at("default"),
                reason,
            })?;
        field.default = Some(value);
    }
    Ok(field)
}

/// A field type name, before its limits are read.
#[derive(Clone, Copy, PartialEq, Eq)]
enum FieldType {
    Text,
    Number,
    Integer,
    Boolean,
    Choice,
    Choices,
}

impl FieldType {
    fn parse(name: &str) -> Option<Self> {
        Some(match name {
            "text" | "string" => Self::Text,
            "number" => Self::Number,
            "integer" => Self::Integer,
            "boolean" => Self::Boolean,
            "choice" => Self::Choice,
            "choices" => Self::Choices,
            _ => return None,
        })
    }

    /// The limit keys this type takes.
    fn limits(self) -> &'static [&'static str] {
        match self {
            Self::Text => &["min_length", "max_length", "pattern", "format"],
            Self::Number | Self::Integer => &["minimum", "maximum"],
            Self::Boolean => &[],
            Self::Choice => &["options"],
            Self::Choices => &["options", "min_items", "max_items"],
        }
    }
}

fn check_order<T: PartialOrd + std::fmt::Display + Copy>(
    path: &str,
    low_key: &'static str,
    low: Option<T>,
    high_key: &'static str,
    high: Option<T>,
) -> Result<(), ValidationError> {
    match (low, high) {
        (Some(l), Some(h)) if l > h => Err(ValidationError::InvalidRange {
            field: path.to_owned(),
            low: format!("{low_key} {}", show(l)),
            high: format!("{high_key} {}", show(h)),
        }),
        _ => Ok(()),
    }
}

/// A number for a message: whole numbers without a fraction.
fn show<T: std::fmt::Display>(n: T) -> String {
    let s = n.to_string();
    s.strip_suffix(".0").map(str::to_owned).unwrap_or(s)
}

fn compile(pattern: &str) -> Result<regex::Regex, String> {
    regex::RegexBuilder::new(pattern)
        .size_limit(1 << 20)
        .build()
        .map_err(|e| match e {
            regex::Error::Syntax(s) => {
                // The crate's message spans several lines with a caret; the last line says what.
                let last = s
                    .lines()
                    .rev()
                    .find(|l| !l.trim().is_empty())
                    .unwrap_or("invalid");
                format!(
                    "not a valid regular expression ({})",
                    last.trim().trim_start_matches("error: ")
                )
            }
            regex::Error::CompiledTooBig(_) => "the regular expression is too large".to_owned(),
            _ => "not a valid regular expression".to_owned(),
        })
}

/// A bound as JSON: whole numbers without a fraction, so the canonical form reads as written.
fn number(x: f64) -> Option<Number> {
    Number::from_f64(x).map(|n| integer(&n).map_or(n, Number::from))
}

fn integer(n: &Number) -> Option<i64> {
    n.as_i64().or_else(|| {
        let f = n.as_f64()?;
        // Below 2^63 in magnitude a whole float converts exactly.
        (f.fract() == 0.0 && f.abs() < 9_223_372_036_854_775_808.0).then_some(f as i64)
    })
}

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

fn invalid_type(field: &str, expected: &'static str, got: &Value) -> ValidationError {
    ValidationError::InvalidType {
        field: field.to_owned(),
        expected,
        got: json_type(got),
    }
}
