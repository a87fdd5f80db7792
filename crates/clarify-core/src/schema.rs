//! Part of coercion: a flat JSON Schema object (the shape of MCP elicitation's `requestedSchema`)
//! read as form fields.
//!
//! The subset understood is the one elicitation allows: an object of properties, each a string
//! (`minLength`, `maxLength`, `pattern`, `format` email / uri / date / date-time, `enum` with
//! optional `enumNames`, or `oneOf` of `{const, title}`), a number or integer (`minimum`,
//! `maximum`), a boolean, or an array of such an enumeration (`minItems`, `maxItems`); each with
//! `title`, `description` and `default`; and `required`. Anything else is an error naming the
//! keyword, never dropped: a limit the schema states must hold or the request is refused.
//!
//! The result is the canonical `fields` list, which [`crate::form`] then validates like any
//! other.

use serde_json::{Map, Value, json};

use crate::error::{ValidationError, json_type};

/// The fields of the schema at `path` (such as `questions[0].schema`).
pub(crate) fn fields(schema: &Value, path: &str) -> Result<Value, ValidationError> {
    let unsupported =
        |at: String, reason: String| ValidationError::UnsupportedSchema { field: at, reason };
    let Value::Object(root) = schema else {
        return Err(unsupported(
            path.to_owned(),
            format!("must be a JSON Schema object, got {}", json_type(schema)),
        ));
    };
    for key in root.keys() {
        if ![
            "type",
            "properties",
            "required",
            "$schema",
            "title",
            "description",
            "additionalProperties",
        ]
        .contains(&key.as_str())
        {
            return Err(unsupported(
                format!("{path}.{key}"),
                "this keyword is not supported in a form schema".to_owned(),
            ));
        }
    }
    match root.get("type") {
        None => {}
        Some(Value::String(t)) if t == "object" => {}
        Some(other) => {
            return Err(unsupported(
                format!("{path}.type"),
                format!("a form schema is of type \"object\", got {other}"),
            ));
        }
    }
    let required: Vec<&str> = match root.get("required") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| {
                v.as_str().ok_or_else(|| {
                    unsupported(
                        format!("{path}.required"),
                        "must be a list of property names".to_owned(),
                    )
                })
            })
            .collect::<Result<_, _>>()?,
        Some(other) => {
            return Err(unsupported(
                format!("{path}.required"),
                format!("must be a list of property names, got {}", json_type(other)),
            ));
        }
    };
    let properties = match root.get("properties") {
        Some(Value::Object(p)) if !p.is_empty() => p,
        _ => {
            return Err(unsupported(
                format!("{path}.properties"),
                "a form schema needs at least one property".to_owned(),
            ));
        }
    };
    if let Some(missing) = required.iter().find(|r| !properties.contains_key(**r)) {
        return Err(unsupported(
            format!("{path}.required"),
            format!("names {missing:?}, which is not a property"),
        ));
    }
    let out = properties
        .iter()
        .map(|(name, prop)| {
            property(
                name,
                prop,
                required.contains(&name.as_str()),
                &format!("{path}.properties.{name}"),
            )
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Value::Array(out))
}

fn property(name: &str, prop: &Value, required: bool, at: &str) -> Result<Value, ValidationError> {
    let unsupported = |key: &str, reason: &str| ValidationError::UnsupportedSchema {
        field: if key.is_empty() {
            at.to_owned()
        } else {
            format!("{at}.{key}")
        },
        reason: reason.to_owned(),
    };
    let Value::Object(p) = prop else {
        return Err(unsupported("", "must be a schema object"));
    };
    let ty = p.get("type").and_then(Value::as_str).unwrap_or(
        // An enumeration alone is a string choice.
        if p.contains_key("enum") || p.contains_key("oneOf") {
            "string"
        } else {
            ""
        },
    );
    let allowed: &[&str] = match ty {
        "string" => &[
            "minLength",
            "maxLength",
            "pattern",
            "format",
            "enum",
            "enumNames",
            "oneOf",
        ],
        "number" | "integer" => &["minimum", "maximum"],
        "boolean" => &[],
        "array" => &["items", "minItems", "maxItems", "uniqueItems"],
        "" => {
            return Err(unsupported(
                "type",
                "is required: string, number, integer, boolean or array",
            ));
        }
        _ => {
            return Err(unsupported(
                "type",
                "is not supported in a form; use string, number, integer, boolean or array",
            ));
        }
    };
    for key in p.keys() {
        let common = ["type", "title", "description", "default"].contains(&key.as_str());
        if !common && !allowed.contains(&key.as_str()) {
            return Err(unsupported(
                key,
                "this keyword is not supported for this type in a form",
            ));
        }
    }

    let mut field = Map::new();
    field.insert("id".to_owned(), json!(name));
    let label = p
        .get("title")
        .and_then(Value::as_str)
        .filter(|t| !t.trim().is_empty())
        .unwrap_or(name);
    field.insert("label".to_owned(), json!(label));
    field.insert("required".to_owned(), json!(required));
    if let Some(d) = p.get("description") {
        field.insert("description".to_owned(), d.clone());
    }
    if let Some(d) = p.get("default") {
        field.insert("default".to_owned(), d.clone());
    }
    let copy = |field: &mut Map<String, Value>, from: &str, to: &str| {
        if let Some(v) = p.get(from) {
            field.insert(to.to_owned(), v.clone());
        }
    };
    match ty {
        "string" if p.contains_key("enum") || p.contains_key("oneOf") => {
            if ["minLength", "maxLength", "pattern", "format"]
                .iter()
                .any(|k| p.contains_key(*k))
            {
                return Err(unsupported(
                    "",
                    "an enumeration takes no length, pattern or format",
                ));
            }
            field.insert("type".to_owned(), json!("choice"));
            field.insert("options".to_owned(), enumeration(p, at)?);
        }
        "string" => {
            field.insert("type".to_owned(), json!("text"));
            copy(&mut field, "minLength", "min_length");
            copy(&mut field, "maxLength", "max_length");
            copy(&mut field, "pattern", "pattern");
            if let Some(f) = p.get("format") {
                let format = match f.as_str() {
                    Some("email") => "email",
                    Some("uri") | Some("url") => "url",
                    Some("date") => "date",
                    Some("date-time") => "datetime",
                    _ => {
                        return Err(unsupported(
                            "format",
                            "is not supported; use email, uri, date or date-time",
                        ));
                    }
                };
                field.insert("format".to_owned(), json!(format));
            }
        }
        "number" | "integer" => {
            field.insert("type".to_owned(), json!(ty));
            copy(&mut field, "minimum", "minimum");
            copy(&mut field, "maximum", "maximum");
        }
        "boolean" => {
            field.insert("type".to_owned(), json!("boolean"));
        }
        _ => {
            let Some(Value::Object(items)) = p.get("items") else {
                return Err(unsupported(
                    "items",
                    "an array needs items: an enumeration of strings",
                ));
            };
            for key in items.keys() {
                if !["type", "enum", "enumNames", "oneOf", "anyOf"].contains(&key.as_str()) {
                    return Err(unsupported(
                        &format!("items.{key}"),
                        "only an enumeration of strings is supported as array items",
                    ));
                }
            }
            if items.get("type").is_some_and(|t| t != "string") {
                return Err(unsupported("items.type", "array items must be strings"));
            }
            if p.get("uniqueItems") == Some(&Value::Bool(false)) {
                return Err(unsupported(
                    "uniqueItems",
                    "a choice of options never repeats one",
                ));
            }
            field.insert("type".to_owned(), json!("choices"));
            field.insert(
                "options".to_owned(),
                enumeration(items, &format!("{at}.items"))?,
            );
            copy(&mut field, "minItems", "min_items");
            copy(&mut field, "maxItems", "max_items");
        }
    }
    Ok(Value::Object(field))
}

/// The options of an enumeration: `enum` (with `enumNames` as labels), or `oneOf` / `anyOf` of
/// `{const, title}`.
fn enumeration(p: &Map<String, Value>, at: &str) -> Result<Value, ValidationError> {
    let unsupported = |key: &str, reason: String| ValidationError::UnsupportedSchema {
        field: format!("{at}.{key}"),
        reason,
    };
    let text = |v: &Value| match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    };
    if let Some(values) = p.get("enum") {
        let Value::Array(values) = values else {
            return Err(unsupported("enum", "must be a list of strings".to_owned()));
        };
        let names = match p.get("enumNames") {
            None => None,
            Some(Value::Array(n)) if n.len() == values.len() => Some(n),
            Some(_) => {
                return Err(unsupported(
                    "enumNames",
                    "must be a list of labels, one per enum value".to_owned(),
                ));
            }
        };
        return values
            .iter()
            .enumerate()
            .map(|(i, v)| {
                let id = text(v)
                    .ok_or_else(|| unsupported("enum", format!("value {i} is not a string")))?;
                let label = names
                    .and_then(|n| n.get(i))
                    .and_then(text)
                    .unwrap_or_else(|| id.clone());
                Ok(option(&id, &label))
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Value::Array);
    }
    let (key, alternatives) = match (p.get("oneOf"), p.get("anyOf")) {
        (Some(Value::Array(a)), _) => ("oneOf", a),
        (None, Some(Value::Array(a))) => ("anyOf", a),
        _ => {
            return Err(unsupported(
                "enum",
                "an enumeration needs enum, or oneOf of {const, title}".to_owned(),
            ));
        }
    };
    alternatives
        .iter()
        .enumerate()
        .map(|(i, alt)| {
            let id = alt.get("const").and_then(text).ok_or_else(|| {
                unsupported(&format!("{key}[{i}]"), "needs a string const".to_owned())
            })?;
            if let Some(extra) = alt.as_object().and_then(|o| {
                o.keys()
                    .find(|k| !["const", "title", "description"].contains(&k.as_str()))
            }) {
                return Err(unsupported(
                    &format!("{key}[{i}].{extra}"),
                    "only const, title and description are supported here".to_owned(),
                ));
            }
            let label = alt
                .get("title")
                .and_then(text)
                .unwrap_or_else(|| id.clone());
            Ok(option(&id, &label))
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Value::Array)
}

/// An option whose id is the enumeration's value when that is a valid id, else derived from it;
/// either way an answer may name it by value or label.
fn option(value: &str, label: &str) -> Value {
    if crate::text::is_valid_id(value) {
        json!({"id": value, "label": label})
    } else {
        json!({"label": label})
    }
}
