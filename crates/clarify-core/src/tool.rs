//! The LLM-facing `ask_human` tool: its input type, and its definitions for OpenAI, Anthropic and
//! MCP, all derived from [`AskHumanInput`].
//!
//! The input is deliberately smaller than the full request: a model needs questions, options, a
//! recommendation and context, not timeouts or webhooks. Whatever a model sends in this shape goes
//! through [`crate::parse_request`] like any other request, so the schema and the parser cannot
//! disagree about what is accepted (a test checks that they do not).
//!
//! The definitions are committed under `tools/`; a test regenerates them and fails, naming the
//! command that refreshes them, when they are stale.

use schemars::{JsonSchema, generate::SchemaSettings};
use serde::Deserialize;
use serde_json::{Map, Value, json};

/// The tool's name in every format.
pub const NAME: &str = "ask_human";

/// What the tool tells the model about when and how to use it.
pub const DESCRIPTION: &str = "Ask a human a question and wait for the answer. \
Ask only when you are genuinely blocked: the task is ambiguous in a way the context cannot settle, \
or a decision has real trade-offs (cost, risk, something hard to undo, a matter of taste) that the \
human should make. Do not ask about low-stakes choices you can make yourself: make them and mention \
the assumption. Ask up to 5 related questions at once. For a choice, put each option in `options` \
(short, distinct labels, with a description when the trade-off is not obvious) and never list the \
options inside the question text; set `recommended` to the label of the option you recommend. The \
human may also answer in their own words. The result gives each answer; if the human skipped, did \
not answer in time, or the question was cancelled, the result says so: then continue with your \
best judgement and state the assumption you made.";

/// The arguments of an `ask_human` call.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct AskHumanInput {
    /// The questions, 1 to 5, answered together by one person.
    #[schemars(length(min = 1, max = 5))]
    pub questions: Vec<AskHumanQuestion>,
    /// What the human needs to know to answer: what you are doing, what you found, and why you
    /// are asking. Plain text.
    pub context: Option<String>,
}

/// One question.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct AskHumanQuestion {
    /// The question in one or two sentences. Never list the options here; use `options`.
    #[schemars(length(max = 4000))]
    pub question: String,
    /// A very short label for the question, at most 32 characters, such as "Database".
    #[schemars(length(max = 32))]
    pub header: Option<String>,
    /// `single`: the human picks one option; `multi`: one or more options; `open`: free text;
    /// `form`: typed values, one per field in `fields`.
    pub kind: AskHumanKind,
    /// The options for `single` and `multi` (leave empty for `open` and `form`).
    #[schemars(length(max = 4))]
    pub options: Option<Vec<AskHumanOption>>,
    /// The label of the option you recommend, if any.
    pub recommended: Option<String>,
    /// The fields of a `form` question, 1 to 20 (leave empty for the other kinds).
    #[schemars(length(max = 20))]
    pub fields: Option<Vec<AskHumanField>>,
}

/// One field of a form.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct AskHumanField {
    /// A short identifier for the value in the answer, such as "budget".
    pub id: Option<String>,
    /// What the human sees beside the input.
    #[schemars(length(max = 200))]
    pub label: String,
    /// `text`, `number`, `integer`, `boolean`, `choice` (one of `options`) or `choices` (several).
    #[serde(rename = "type")]
    #[schemars(rename = "type")]
    pub kind: AskHumanFieldType,
    /// Whether the human must fill it in (default true).
    pub required: Option<bool>,
    /// A hint shown under the input.
    pub description: Option<String>,
    /// `number` and `integer`: the smallest value allowed.
    pub minimum: Option<f64>,
    /// `number` and `integer`: the largest value allowed.
    pub maximum: Option<f64>,
    /// `text`: what the text must look like.
    pub format: Option<AskHumanFormat>,
    /// `text`: the most characters allowed.
    pub max_length: Option<u32>,
    /// `choice` and `choices`: the option labels.
    #[schemars(length(max = 4))]
    pub options: Option<Vec<String>>,
}

/// The type of a form field.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AskHumanFieldType {
    Text,
    Number,
    Integer,
    Boolean,
    Choice,
    Choices,
}

/// A text field's format.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AskHumanFormat {
    Email,
    Url,
    Date,
    Datetime,
}

/// The kind of answer a question takes.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AskHumanKind {
    Single,
    Multi,
    Open,
    Form,
}

/// One option.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct AskHumanOption {
    /// A short label, distinct from the other options' labels.
    #[schemars(length(max = 200))]
    pub label: String,
    /// What choosing this option means, when the label alone does not say.
    pub description: Option<String>,
}

/// An output format of [`definition`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Chat Completions function tool, strict mode.
    OpenAi,
    Anthropic,
    Mcp,
}

impl Format {
    pub const ALL: [Format; 3] = [Format::OpenAi, Format::Anthropic, Format::Mcp];

    /// The name used on the command line and in file names.
    pub fn name(self) -> &'static str {
        match self {
            Self::OpenAi => "openai",
            Self::Anthropic => "anthropic",
            Self::Mcp => "mcp",
        }
    }

    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|f| f.name() == name)
    }

    /// Where the committed definition lives, relative to the repository root.
    pub fn committed_path(self) -> String {
        format!("tools/{NAME}.{}.json", self.name())
    }
}

/// The JSON Schema of the tool's input, with every subschema inlined.
pub fn input_schema() -> Value {
    let settings = SchemaSettings::draft2020_12().with(|s| {
        s.inline_subschemas = true;
        s.meta_schema = None;
    });
    let mut schema = settings
        .into_generator()
        .into_root_schema_for::<AskHumanInput>()
        .to_value();
    if let Value::Object(root) = &mut schema {
        root.remove("title");
        root.remove("description");
    }
    schema
}

/// The input schema made acceptable to OpenAI's strict mode: every object closed and with all of
/// its properties required (optional ones are already nullable).
pub fn strict_schema() -> Value {
    let mut schema = input_schema();
    make_strict(&mut schema);
    schema
}

fn make_strict(v: &mut Value) {
    match v {
        Value::Object(obj) => {
            if let Some(Value::Object(props)) = obj.get("properties") {
                let all: Vec<Value> = props.keys().map(|k| Value::String(k.clone())).collect();
                obj.insert("required".to_owned(), Value::Array(all));
                obj.insert("additionalProperties".to_owned(), Value::Bool(false));
            }
            obj.remove("default");
            for child in obj.values_mut() {
                make_strict(child);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(make_strict),
        _ => {}
    }
}

/// The `ask_human` tool definition in `format`.
pub fn definition(format: Format) -> Value {
    match format {
        Format::OpenAi => json!({
            "type": "function",
            "function": {
                "name": NAME,
                "description": DESCRIPTION,
                "strict": true,
                "parameters": strict_schema(),
            }
        }),
        Format::Anthropic => json!({
            "name": NAME,
            "description": DESCRIPTION,
            "input_schema": input_schema(),
        }),
        Format::Mcp => {
            let mut def = Map::new();
            def.insert("name".to_owned(), NAME.into());
            def.insert("description".to_owned(), DESCRIPTION.into());
            def.insert("inputSchema".to_owned(), input_schema());
            Value::Object(def)
        }
    }
}

/// The committed file text of a definition: pretty JSON with a final newline.
pub fn definition_text(format: Format) -> String {
    let mut text = serde_json::to_string_pretty(&definition(format)).unwrap_or_default();
    text.push('\n');
    text
}
