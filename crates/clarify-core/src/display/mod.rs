//! Display blocks: what a person is shown above a request's questions, so that a decision is made
//! on what will really happen (the change as a diff, the command as code, the amount as a fact).
//!
//! A request's `display` is a list of at most [`MAX_BLOCKS`] [`Block`]s. This module holds the
//! one model of them and the one validator ([`blocks`]) every path goes through; [`derive`] makes
//! blocks and a one-line summary from a tool call when the agent sent none; [`diff`] reads a
//! unified diff into lines with their numbers, which every surface renders from. Rendering itself
//! belongs to the surfaces: each turns blocks into its own format.
//!
//! The canonical form of a block is the shape an agent sends, with a `diff` given as `before` and
//! `after` replaced by the unified diff clarify computed, so feeding a stored block back through
//! [`blocks`] yields the same block.

pub mod derive;
pub mod diff;
mod image;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::{ValidationError, json_type};
use crate::text::chars;

/// Blocks' titles and texts are cut by the crate's one rule; kept here too, where the display
/// limits it serves are.
pub use crate::text::cut;
pub use derive::{Derived, FileState, ToolCall, complete, derive, fit, summary_of, why};
pub use diff::{DiffLine, DiffView, FileDiff, Hunk, LineKind, parse_diff, unified_diff};
pub use image::{ImageData, MAX_IMAGE_BYTES, MAX_IMAGES_BYTES};

/// The most blocks one request may carry.
pub const MAX_BLOCKS: usize = 20;
/// The text of all blocks together (image data excluded; see [`MAX_IMAGES_BYTES`]), in bytes.
pub const MAX_TEXT_BYTES: usize = 256 * 1024;
/// A block's `title`, and a fact's `label`, in characters.
pub const MAX_TITLE_CHARS: usize = 200;
/// A `summary`, in characters.
pub const MAX_SUMMARY_CHARS: usize = 120;
/// Facts in one `fields` block.
pub const MAX_FACTS: usize = 50;
/// A diff's `path`, in characters.
pub const MAX_PATH_CHARS: usize = 1_024;
/// A code block's `language`, in characters.
pub const MAX_LANGUAGE_CHARS: usize = 32;
/// A link's `url`, in characters.
pub const MAX_URL_CHARS: usize = 2_048;

/// One thing shown to the person, with an optional title.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Block {
    /// A heading; for a link, the text the link reads as.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(flatten)]
    pub content: Content,
}

/// What a block shows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Content {
    /// CommonMark with GitHub tables, strikethrough and task lists. Raw HTML in it is shown as
    /// text by every renderer; links keep only `http`, `https` and `mailto`.
    Markdown { text: String },
    /// A unified diff (one file or several).
    Diff {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        path: Option<String>,
        diff: String,
    },
    /// Source text, shown preformatted.
    Code {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        language: Option<String>,
        text: String,
    },
    /// Facts such as an amount or a recipient.
    Fields { items: Vec<Fact> },
    /// A PNG, JPEG, GIF or WebP image as a `data:` URL, checked by its bytes. Surfaces serve it
    /// from clarify's own origin; nothing is fetched from elsewhere.
    Image { data: String, alt: String },
    /// An `http` or `https` link; the block's title is its text.
    Link { url: String },
}

impl Content {
    /// The contract's name of this block type.
    pub fn type_name(&self) -> &'static str {
        match self {
            Self::Markdown { .. } => "markdown",
            Self::Diff { .. } => "diff",
            Self::Code { .. } => "code",
            Self::Fields { .. } => "fields",
            Self::Image { .. } => "image",
            Self::Link { .. } => "link",
        }
    }
}

/// One fact of a `fields` block.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fact {
    pub label: String,
    pub value: String,
}

impl Block {
    /// A block made by clarify itself; its title is put in the form validation gives one (one
    /// line, cut to [`MAX_TITLE_CHARS`]), so made blocks read back unchanged.
    pub fn new(title: Option<String>, content: Content) -> Self {
        let title = title
            .map(|t| cut(&one_line(&t), MAX_TITLE_CHARS))
            .filter(|t| !t.is_empty());
        Self { title, content }
    }

    pub fn markdown(title: Option<&str>, text: impl AsRef<str>) -> Self {
        Self::new(
            title.map(str::to_owned),
            Content::Markdown {
                text: block_text(text.as_ref()),
            },
        )
    }

    pub fn code(title: Option<&str>, language: Option<&str>, text: impl AsRef<str>) -> Self {
        Self::new(
            title.map(str::to_owned),
            Content::Code {
                language: language.map(str::to_owned),
                text: block_text(text.as_ref()),
            },
        )
    }

    /// The bytes this block counts towards [`MAX_TEXT_BYTES`].
    pub fn text_bytes(&self) -> usize {
        let title = self.title.as_ref().map_or(0, String::len);
        title
            + match &self.content {
                Content::Markdown { text } | Content::Code { text, .. } => text.len(),
                Content::Diff { path, diff } => path.as_ref().map_or(0, String::len) + diff.len(),
                Content::Fields { items } => {
                    items.iter().map(|f| f.label.len() + f.value.len()).sum()
                }
                Content::Image { alt, .. } => alt.len(),
                Content::Link { url } => url.len(),
            }
    }
}

/// Validates a request's `display`: absent or `null` is no blocks.
pub fn blocks(v: Option<&Value>) -> Result<Vec<Block>, ValidationError> {
    let items = match v {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(items)) => items,
        Some(other) => {
            return Err(ValidationError::InvalidType {
                field: "display".to_owned(),
                expected: "a list of blocks",
                got: json_type(other),
            });
        }
    };
    if items.len() > MAX_BLOCKS {
        return Err(invalid(
            "display".to_owned(),
            format!(
                "at most {MAX_BLOCKS} blocks are allowed, got {}",
                items.len()
            ),
        ));
    }
    let blocks = items
        .iter()
        .enumerate()
        .map(|(i, item)| block(item, &format!("display[{i}]")))
        .collect::<Result<Vec<_>, _>>()?;
    check_totals(&blocks)?;
    Ok(blocks)
}

/// The limits on all blocks together: their text, and their images' bytes.
fn check_totals(blocks: &[Block]) -> Result<(), ValidationError> {
    let text: usize = blocks.iter().map(Block::text_bytes).sum();
    if text > MAX_TEXT_BYTES {
        return Err(invalid(
            "display".to_owned(),
            format!(
                "the blocks' text may be at most {} KiB together, got {} KiB",
                MAX_TEXT_BYTES / 1024,
                text.div_ceil(1024)
            ),
        ));
    }
    let images: usize = blocks
        .iter()
        .filter_map(|b| match &b.content {
            Content::Image { data, .. } => ImageData::parse(data).ok().map(|i| i.bytes.len()),
            _ => None,
        })
        .sum();
    if images > MAX_IMAGES_BYTES {
        return Err(invalid(
            "display".to_owned(),
            format!(
                "images may be at most {} MiB together, got {:.1} MiB",
                MAX_IMAGES_BYTES / (1024 * 1024),
                images as f64 / (1024.0 * 1024.0)
            ),
        ));
    }
    Ok(())
}

fn block(v: &Value, path: &str) -> Result<Block, ValidationError> {
    let Value::Object(obj) = v else {
        return Err(ValidationError::InvalidType {
            field: path.to_owned(),
            expected: "a block object",
            got: json_type(v),
        });
    };
    let f = Obj { obj, path };
    let kind = match obj.get("type") {
        Some(Value::String(t)) => t.as_str(),
        Some(other) => {
            return Err(ValidationError::InvalidType {
                field: f.path("type"),
                expected: "a block type name",
                got: json_type(other),
            });
        }
        None => {
            return Err(ValidationError::Missing {
                field: f.path("type"),
            });
        }
    };
    let (known, content): (&[&str], Content) = match kind {
        "markdown" => (
            &["text"],
            Content::Markdown {
                text: f.required_text("text")?,
            },
        ),
        "code" => (
            &["text", "language"],
            Content::Code {
                language: f.language()?,
                text: f.required_text("text")?,
            },
        ),
        "diff" => (&["path", "diff", "before", "after"], diff_content(&f)?),
        "fields" => (&["items"], Content::Fields { items: facts(&f)? }),
        "image" => (&["data", "alt"], image(&f)?),
        "link" => (&["url"], Content::Link { url: link(&f)? }),
        other => {
            return Err(invalid(
                f.path("type"),
                format!(
                    "unknown block type {}; use markdown, diff, code, fields, image or link",
                    crate::text::quoted(other)
                ),
            ));
        }
    };
    if let Some(key) = obj
        .keys()
        .find(|k| !["type", "title"].contains(&k.as_str()) && !known.contains(&k.as_str()))
    {
        return Err(ValidationError::UnknownField {
            field: f.path(key),
            hint: crate::coerce::suggestion(key, known),
        });
    }
    let title = f.optional_text("title", MAX_TITLE_CHARS)?;
    Ok(Block { title, content })
}

fn diff_content(f: &Obj<'_>) -> Result<Content, ValidationError> {
    let path = f.optional_text("path", MAX_PATH_CHARS)?;
    let given = |k: &str| f.obj.get(k).is_some_and(|v| !v.is_null());
    let diff = match (given("diff"), given("before") || given("after")) {
        (true, true) => {
            return Err(invalid(
                f.path("diff"),
                "give either diff or before and after, not both".to_owned(),
            ));
        }
        (true, false) => {
            let text = f.required_raw("diff")?;
            parse_diff(&text).map_err(|e| invalid(f.path("diff"), e.to_string()))?;
            text
        }
        (false, true) => {
            let before = f.raw_or_empty("before")?;
            let after = f.raw_or_empty("after")?;
            let diff = unified_diff(path.as_deref(), &before, &after);
            if diff.trim().is_empty() {
                return Err(invalid(
                    f.path("after"),
                    "before and after are the same, so there is no change to show".to_owned(),
                ));
            }
            diff
        }
        (false, false) => {
            return Err(invalid(
                f.path("diff"),
                "a diff block needs diff (a unified diff) or before and after".to_owned(),
            ));
        }
    };
    Ok(Content::Diff { path, diff })
}

fn facts(f: &Obj<'_>) -> Result<Vec<Fact>, ValidationError> {
    let items = match f.obj.get("items") {
        Some(Value::Array(items)) => items,
        Some(other) => {
            return Err(ValidationError::InvalidType {
                field: f.path("items"),
                expected: "a list of {label, value}",
                got: json_type(other),
            });
        }
        None => {
            return Err(ValidationError::Missing {
                field: f.path("items"),
            });
        }
    };
    if items.is_empty() {
        return Err(ValidationError::Empty {
            field: f.path("items"),
        });
    }
    if items.len() > MAX_FACTS {
        return Err(invalid(
            f.path("items"),
            format!("at most {MAX_FACTS} facts are allowed, got {}", items.len()),
        ));
    }
    items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            let path = format!("{}[{i}]", f.path("items"));
            let Value::Object(obj) = item else {
                return Err(ValidationError::InvalidType {
                    field: path,
                    expected: "a {label, value} object",
                    got: json_type(item),
                });
            };
            let fact = Obj { obj, path: &path };
            if let Some(key) = obj
                .keys()
                .find(|k| !["label", "value"].contains(&k.as_str()))
            {
                return Err(ValidationError::UnknownField {
                    field: fact.path(key),
                    hint: crate::coerce::suggestion(key, &["label", "value"]),
                });
            }
            let label = fact
                .optional_text("label", MAX_TITLE_CHARS)?
                .ok_or_else(|| ValidationError::Missing {
                    field: fact.path("label"),
                })?;
            // A value is shown as text: numbers and booleans as written, anything structured as
            // compact JSON, so an amount or a list of recipients needs no conversion by the agent.
            let value = match obj.get("value") {
                None | Some(Value::Null) => {
                    return Err(ValidationError::Missing {
                        field: fact.path("value"),
                    });
                }
                Some(Value::String(s)) => s.trim().to_owned(),
                Some(other) => other.to_string(),
            };
            if chars(&value) > crate::Limits::MAX_TEXT_CHARS {
                return Err(ValidationError::TooLong {
                    field: fact.path("value"),
                    max: crate::Limits::MAX_TEXT_CHARS,
                    got: chars(&value),
                });
            }
            Ok(Fact { label, value })
        })
        .collect()
}

fn image(f: &Obj<'_>) -> Result<Content, ValidationError> {
    let data = f.required_raw("data")?;
    let image = ImageData::parse(data.trim()).map_err(|e| invalid(f.path("data"), e))?;
    let alt = f
        .optional_text("alt", MAX_TITLE_CHARS)?
        .ok_or_else(|| ValidationError::Missing {
            field: f.path("alt"),
        })?;
    Ok(Content::Image {
        data: image.to_data_url(),
        alt,
    })
}

fn link(f: &Obj<'_>) -> Result<String, ValidationError> {
    let raw = f.required_text("url")?;
    if chars(&raw) > MAX_URL_CHARS {
        return Err(ValidationError::TooLong {
            field: f.path("url"),
            max: MAX_URL_CHARS,
            got: chars(&raw),
        });
    }
    match url::Url::parse(&raw) {
        Ok(url) if matches!(url.scheme(), "http" | "https") && url.host_str().is_some() => {
            Ok(url.to_string())
        }
        Ok(url) => Err(invalid(
            f.path("url"),
            format!(
                "links may only be http or https, got a {} link",
                crate::text::quoted(url.scheme())
            ),
        )),
        Err(e) => Err(invalid(f.path("url"), format!("not a valid URL ({e})"))),
    }
}

/// Validates a request's `summary`: one line of at most [`MAX_SUMMARY_CHARS`].
pub fn summary(v: Option<&Value>) -> Result<Option<String>, ValidationError> {
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => {
            let s = one_line(s);
            if s.is_empty() {
                return Ok(None);
            }
            let got = chars(&s);
            if got > MAX_SUMMARY_CHARS {
                return Err(ValidationError::TooLong {
                    field: "summary".to_owned(),
                    max: MAX_SUMMARY_CHARS,
                    got,
                });
            }
            Ok(Some(s))
        }
        Some(other) => Err(ValidationError::InvalidType {
            field: "summary".to_owned(),
            expected: "a string",
            got: json_type(other),
        }),
    }
}

/// `s` on one line: runs of whitespace (line breaks included) become one space.
pub fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A markdown or code block's text as kept: without trailing space or leading blank lines (an
/// indented first line keeps its indent).
fn block_text(s: &str) -> String {
    s.trim_end().trim_start_matches(['\n', '\r']).to_owned()
}

fn invalid(field: String, reason: String) -> ValidationError {
    ValidationError::InvalidDisplay { field, reason }
}

/// Typed access to one object's keys, naming them by path in errors.
struct Obj<'a> {
    obj: &'a Map<String, Value>,
    path: &'a str,
}

impl Obj<'_> {
    fn path(&self, key: &str) -> String {
        format!("{}.{key}", self.path)
    }

    /// A string kept as given (a diff or code keeps its spacing); required and not blank.
    fn required_raw(&self, key: &str) -> Result<String, ValidationError> {
        match self.obj.get(key) {
            None | Some(Value::Null) => Err(ValidationError::Missing {
                field: self.path(key),
            }),
            Some(Value::String(s)) if s.trim().is_empty() => Err(ValidationError::Empty {
                field: self.path(key),
            }),
            Some(Value::String(s)) => Ok(s.clone()),
            Some(other) => Err(ValidationError::InvalidType {
                field: self.path(key),
                expected: "a string",
                got: json_type(other),
            }),
        }
    }

    /// A string kept as given; absent or `null` is empty (a file created or deleted).
    fn raw_or_empty(&self, key: &str) -> Result<String, ValidationError> {
        match self.obj.get(key) {
            None | Some(Value::Null) => Ok(String::new()),
            Some(Value::String(s)) => Ok(s.clone()),
            Some(other) => Err(ValidationError::InvalidType {
                field: self.path(key),
                expected: "a string",
                got: json_type(other),
            }),
        }
    }

    /// Text whose surrounding whitespace means nothing (markdown, code).
    fn required_text(&self, key: &str) -> Result<String, ValidationError> {
        Ok(block_text(&self.required_raw(key)?))
    }

    fn optional_text(&self, key: &str, max: usize) -> Result<Option<String>, ValidationError> {
        match self.obj.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => {
                let s = one_line(s);
                if s.is_empty() {
                    return Ok(None);
                }
                if chars(&s) > max {
                    return Err(ValidationError::TooLong {
                        field: self.path(key),
                        max,
                        got: chars(&s),
                    });
                }
                Ok(Some(s))
            }
            Some(other) => Err(ValidationError::InvalidType {
                field: self.path(key),
                expected: "a string",
                got: json_type(other),
            }),
        }
    }

    /// A code block's language: a short name such as `rust`, `c++` or `objective-c`.
    fn language(&self) -> Result<Option<String>, ValidationError> {
        let Some(lang) = self.optional_text("language", MAX_LANGUAGE_CHARS)? else {
            return Ok(None);
        };
        if !lang
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'#' | b'-' | b'_' | b'.'))
        {
            return Err(invalid(
                self.path("language"),
                format!(
                    "{} is not a language name; use letters, digits, +, #, -, _ or .",
                    crate::text::quoted(&lang)
                ),
            ));
        }
        Ok(Some(lang.to_ascii_lowercase()))
    }
}
