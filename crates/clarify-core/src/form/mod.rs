//! Forms: a question made of typed fields (`kind: "form"`), answered with one value per field.
//!
//! Everything about forms that is not coercion lives here: the field types and their limits
//! (this file), the validation of a field list when a request is created ([`fields`], in
//! `fields.rs`), and in `values.rs` the check of each value when it is answered
//! ([`check_value`], used by [`crate::parse_submission`]) and the reading of typed text into a
//! value ([`value_from_text`]) for the surfaces where a person types (the terminal, the
//! no-script link form, chat modals). The last one only converts: its result is checked by the
//! same [`check_value`] as any other answer.
//!
//! A JSON Schema object (MCP elicitation's `requestedSchema`) becomes fields in
//! [`crate::coerce`], before any of this runs.

mod fields;
mod values;

use serde::{Deserialize, Serialize};
use serde_json::{Number, Value};

use crate::model::Choice;

pub(crate) use fields::fields;
pub(crate) use values::check_values;
pub use values::{check_value, value_from_text};

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

/// A number for a message: whole numbers without a fraction.
fn show<T: std::fmt::Display>(n: T) -> String {
    let s = n.to_string();
    s.strip_suffix(".0").map(str::to_owned).unwrap_or(s)
}

/// A field's `pattern`, compiled with a bound on its size, or why it does not compile.
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
