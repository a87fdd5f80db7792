//! Validating a form's field list when a request is created: each field's id, label, type and
//! the limits of that type, refusing what does not fit, so a form that is stored can be answered.

use std::collections::HashSet;

use serde_json::Value;

use super::{Field, FieldKind, Form, TextFormat, check_value, compile, integer, show};
use crate::error::{ValidationError, json_type};
use crate::limits::Limits;
use crate::text::{chars, is_valid_id, slug};

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

fn invalid_type(field: &str, expected: &'static str, got: &Value) -> ValidationError {
    ValidationError::InvalidType {
        field: field.to_owned(),
        expected,
        got: json_type(got),
    }
}
