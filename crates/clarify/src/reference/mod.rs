//! The handbook's generated reference pages, under `docs/src/reference/`: the command line (from
//! the clap definitions), the configuration file (from the configuration types' JSON Schema) and
//! the HTTP API (from the committed OpenAPI document, `api/openapi.json`, which its own test keeps
//! true to the server). The tests at the end regenerate each page in memory and fail, naming the
//! command that refreshes them, when a committed page differs; with `CLARIFY_BLESS=1` they rewrite
//! the pages instead.
//!
//! Rendered here rather than by a crate: clap-markdown shows neither a flag's environment variable
//! nor the examples of `--help` as code, and no crate renders a JSON Schema or an OpenAPI document
//! into the markdown tables an mdBook page wants. The walks are small and only read.

use std::fmt::Write as _;

use clap::CommandFactory;
use serde_json::{Map, Value};

/// The command every page's header names, and the failing tests print.
const REGENERATE: &str = "CLARIFY_BLESS=1 cargo test -p clarify --bin clarify reference::";

fn header(source: &str) -> String {
    format!(
        "<!-- Generated from {source} by `{REGENERATE}`.\n     \
         Edit the source, not this page; a test fails while the two differ. -->\n\n"
    )
}

/// Text for a markdown table cell or paragraph: one line; `<`, `>`, `*` and `|` outside code
/// spans are escaped so that `<listen address>` or `deploy-*` stay text, and `|` inside them
/// does not end the cell.
fn text(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    let mut in_code = false;
    let one_line = raw.split_whitespace().collect::<Vec<_>>().join(" ");
    for c in one_line.chars() {
        match c {
            '`' => {
                in_code = !in_code;
                out.push(c);
            }
            '|' => out.push_str("\\|"),
            '<' if !in_code => out.push_str("&lt;"),
            '>' if !in_code => out.push_str("&gt;"),
            '*' if !in_code => out.push_str("\\*"),
            _ => out.push(c),
        }
    }
    out
}

/// A help line as a sentence: clap drops the full stop of a one-line doc comment.
fn sentence(raw: &str) -> String {
    let line = text(raw);
    let line = line.trim();
    if line.is_empty() || line.ends_with(['.', '!', '?', ':', ')']) {
        line.to_owned()
    } else {
        format!("{line}.")
    }
}

fn code(raw: &str) -> String {
    format!("`{}`", raw.replace('|', "\\|"))
}

// ---------------------------------------------------------------------------------------------
// The command line

/// `docs/src/reference/cli.md`: every command of `clarify`, its usage, arguments and options
/// (with their environment variables, defaults and values) and its examples.
pub fn cli_page() -> String {
    let mut cli = crate::Cli::command();
    cli.build();
    let mut page = String::from("# Command line\n\n");
    page.push_str(&header("the clap definitions in `crates/clarify/src`"));
    page.push_str(
        "Every command and option of `clarify`, as `clarify help` and `clarify <command> --help` \
         print them. Client commands reach the server at `CLARIFY_URL` with the key in \
         `CLARIFY_TOKEN`; store commands open the store in `--db` (or `CLARIFY_DB`). Errors are \
         one line on stderr; a usage error exits 2.\n\n",
    );
    page.push_str("| command | does |\n|---|---|\n");
    let mut sections = String::new();
    for sub in visible_subcommands(&cli) {
        list_commands(&mut page, sub, "clarify");
        command_section(&mut sections, sub, "clarify", &cli);
    }
    page.push('\n');
    page.push_str(&sections);
    page
}

fn visible_subcommands(cmd: &clap::Command) -> impl Iterator<Item = &clap::Command> {
    cmd.get_subcommands()
        .filter(|s| !s.is_hide_set() && s.get_name() != "help")
}

fn anchor(path: &str) -> String {
    path.replace(' ', "-")
}

fn about(cmd: &clap::Command) -> String {
    cmd.get_long_about()
        .or(cmd.get_about())
        .map(|a| sentence(&a.to_string()))
        .unwrap_or_default()
}

fn list_commands(page: &mut String, cmd: &clap::Command, parent: &str) {
    let path = format!("{parent} {}", cmd.get_name());
    let _ = writeln!(page, "| [`{path}`](#{}) | {} |", anchor(&path), about(cmd));
    for sub in visible_subcommands(cmd) {
        list_commands(page, sub, &path);
    }
}

fn command_section(out: &mut String, cmd: &clap::Command, parent: &str, up: &clap::Command) {
    let path = format!("{parent} {}", cmd.get_name());
    let _ = writeln!(out, "## `{path}`\n");
    let about = about(cmd);
    if !about.is_empty() {
        let _ = writeln!(out, "{about}\n");
    }
    let usage = cmd.clone().render_usage().to_string();
    let usage = usage.trim().trim_start_matches("Usage: ");
    let _ = writeln!(out, "```text\n{usage}\n```\n");
    let subs: Vec<&clap::Command> = visible_subcommands(cmd).collect();
    if !subs.is_empty() {
        out.push_str("| command | does |\n|---|---|\n");
        for sub in &subs {
            let sub_path = format!("{path} {}", sub.get_name());
            let _ = writeln!(
                out,
                "| [`{sub_path}`](#{}) | {} |",
                anchor(&sub_path),
                self::about(sub)
            );
        }
        out.push('\n');
    }
    // A global option is listed once, where it is declared, not again under each subcommand.
    let inherited = |arg: &clap::Arg| {
        arg.is_global_set() && up.get_arguments().any(|a| a.get_id() == arg.get_id())
    };
    let args: Vec<&clap::Arg> = cmd
        .get_arguments()
        .filter(|a| !a.is_hide_set() && !inherited(a))
        .filter(|a| {
            !matches!(
                a.get_action(),
                clap::ArgAction::Help
                    | clap::ArgAction::HelpShort
                    | clap::ArgAction::HelpLong
                    | clap::ArgAction::Version
            )
        })
        .collect();
    // One item per argument, meaning first, as cargo's and rustup's books list options: a table
    // of four columns leaves the meaning too narrow to read.
    for arg in &args {
        let mut facts = Vec::new();
        let default = default_of(arg);
        if !default.is_empty() {
            facts.push(format!("default {default}"));
        }
        if let Some(env) = arg.get_env() {
            let env = env.to_string_lossy();
            if crate::secret_files::SECRET_VARIABLES.contains(&env.as_ref()) {
                facts.push(format!(
                    "environment {}, or a file named in {}",
                    code(&env),
                    code(&format!("{env}_FILE"))
                ));
            } else {
                facts.push(format!("environment {}", code(&env)));
            }
        }
        let facts = if facts.is_empty() {
            String::new()
        } else {
            format!(" ({})", facts.join("; "))
        };
        let _ = writeln!(
            out,
            "- {}{facts}: {}",
            code(&arg_name(arg)),
            arg_meaning(arg)
        );
    }
    if !args.is_empty() {
        out.push('\n');
    }
    if let Some(after) = cmd.get_after_long_help().or(cmd.get_after_help()) {
        let _ = writeln!(out, "```text\n{}\n```\n", after.to_string().trim_end());
    }
    for sub in subs {
        command_section(out, sub, &path, cmd);
    }
}

/// An option's default, if it takes a value (a flag's `false` says nothing).
fn default_of(arg: &clap::Arg) -> String {
    if !arg.get_action().takes_values() {
        return String::new();
    }
    arg.get_default_values()
        .iter()
        .map(|v| code(&v.to_string_lossy()))
        .collect::<Vec<_>>()
        .join(", ")
}

fn arg_name(arg: &clap::Arg) -> String {
    let value = arg
        .get_value_names()
        .and_then(|names| names.first())
        .map(|n| n.to_string())
        .unwrap_or_else(|| arg.get_id().as_str().to_ascii_uppercase());
    let takes_value = arg.get_action().takes_values();
    let many = matches!(arg.get_action(), clap::ArgAction::Append);
    let value = if many {
        format!("<{value}>...")
    } else {
        format!("<{value}>")
    };
    match (arg.get_short(), arg.get_long()) {
        _ if arg.is_positional() => value,
        (Some(s), Some(l)) if takes_value => format!("-{s}, --{l} {value}"),
        (Some(s), Some(l)) => format!("-{s}, --{l}"),
        (None, Some(l)) if takes_value => format!("--{l} {value}"),
        (None, Some(l)) => format!("--{l}"),
        (Some(s), None) if takes_value => format!("-{s} {value}"),
        (Some(s), None) => format!("-{s}"),
        (None, None) => value,
    }
}

fn arg_meaning(arg: &clap::Arg) -> String {
    let mut meaning = arg
        .get_long_help()
        .or(arg.get_help())
        .map(|h| sentence(&h.to_string()))
        .unwrap_or_default();
    if arg.is_required_set() && !arg.is_positional() {
        meaning.push_str(" Required.");
    }
    let values: Vec<clap::builder::PossibleValue> = arg
        .get_possible_values()
        .into_iter()
        .filter(|v| !v.is_hide_set())
        .collect();
    if !values.is_empty() && arg.get_action().takes_values() {
        let listed: Vec<String> = values
            .iter()
            .map(|v| match v.get_help() {
                Some(help) => format!("{}: {}", code(v.get_name()), text(&help.to_string())),
                None => code(v.get_name()),
            })
            .collect();
        let separator = if values.iter().any(|v| v.get_help().is_some()) {
            "; "
        } else {
            ", "
        };
        let _ = write!(meaning, " One of {}.", listed.join(separator));
    }
    meaning.trim().to_owned()
}

// ---------------------------------------------------------------------------------------------
// The configuration file

/// `docs/src/reference/configuration.md`: every key the configuration file accepts, with its
/// type, default and meaning, from `config::RawConfig`'s JSON Schema; `[server]`'s keys take
/// their meaning, default and flag from `clarify serve`'s options of the same name.
pub fn configuration_page() -> String {
    let schema = serde_json::to_value(schemars::schema_for!(crate::config::RawConfig))
        .expect("a schema is JSON");
    let doc = Schema::new(&schema);
    let mut cli = crate::Cli::command();
    cli.build();
    let serve = cli
        .find_subcommand("serve")
        .expect("clarify has a serve command");

    let mut page = String::from("# Configuration file\n\n");
    page.push_str(&header(
        "the configuration types in `crates/clarify/src/config/` and \
         `crates/clarify-channels/src/<platform>/config.rs`",
    ));
    page.push_str(
        "Every key `clarify serve --config PATH` (or `CLARIFY_CONFIG`) and `clarify config check \
         PATH` accept. Every part is optional; a key not listed here, a wrong type or a missing \
         secret stops the command with a line for each problem, naming the file, the line and \
         column, and the key. \
         [The configuration file](../operating/configuration.md) shows how to use it.\n\n",
    );
    let root = doc.object(&schema);
    for (key, node) in doc.properties(root) {
        let description = doc.description(node);
        match key.as_str() {
            "server" => {
                let _ = writeln!(
                    page,
                    "## `[server]` {{#server}}\n\n{}\n",
                    text(&doc.description(doc.resolve(node)))
                );
                let server = doc.resolve(node);
                for (key, field) in doc.properties(server) {
                    // `db_file`: the file holding `db`, as `CLARIFY_DB_FILE` is for `CLARIFY_DB`.
                    if let Some(stem) = key.strip_suffix("_file") {
                        let mut facts = vec![doc.type_of(field)];
                        if let Some(env) = serve
                            .get_arguments()
                            .find(|a| a.get_id().as_str() == stem)
                            .and_then(|a| a.get_env())
                        {
                            facts.push(format!("`{}_FILE`", env.to_string_lossy()));
                        }
                        let _ = writeln!(
                            page,
                            "- `{key}` ({}): {}",
                            facts.join(", "),
                            sentence(&doc.description(field))
                        );
                        continue;
                    }
                    let arg = serve
                        .get_arguments()
                        .find(|a| a.get_id().as_str() == key)
                        .unwrap_or_else(|| panic!("[server] {key} has no `clarify serve` option"));
                    let mut facts = vec![doc.type_of(field)];
                    let default = default_of(arg);
                    if !default.is_empty() {
                        facts.push(format!("default {default}"));
                    }
                    facts.push(format!("`--{}`", arg.get_long().unwrap_or(key)));
                    if let Some(env) = arg.get_env() {
                        facts.push(format!("`{}`", env.to_string_lossy()));
                    }
                    let mut meaning = arg_meaning(arg);
                    let own = doc.description(field);
                    if !own.is_empty() {
                        meaning = format!("{meaning} {}", sentence(&own));
                    }
                    let _ = writeln!(page, "- `{key}` ({}): {meaning}", facts.join(", "));
                }
                page.push('\n');
            }
            "channels" => {
                let _ = writeln!(
                    page,
                    "## `[[channels]]` {{#channels}}\n\n{}\n",
                    text(&description)
                );
                let entry = doc.resolve(&node["items"]);
                let _ = writeln!(
                    page,
                    "{} A secret (a token, a password) is given as its value, with `_env` after its \
                     key as the name of the environment variable that holds it, or with `_file` \
                     after its key as the path of a file that holds it (its trailing line break \
                     trimmed); one of the three.\n",
                    text(&doc.description(entry))
                );
                for variant in entry["oneOf"].as_array().into_iter().flatten() {
                    let variant = doc.resolve(variant);
                    let platform = doc
                        .properties(variant)
                        .find(|(k, _)| k.as_str() == "type")
                        .and_then(|(_, t)| t["const"].as_str())
                        .expect("each channel variant names its type");
                    let _ = writeln!(
                        page,
                        "### `type = \"{platform}\"` {{#{platform}}}\n\n{}\n",
                        text(&doc.description(variant))
                    );
                    doc.key_list(&mut page, variant, &["type"]);
                }
            }
            "identities" => {
                let _ = writeln!(
                    page,
                    "## `[identities]` {{#identities}}\n\n{}\n\n```toml\n[identities]\n\"slack:U012ABCDEF\" = \"alice\"\n\"email:alice@example.com\" = \"alice\"\n```\n",
                    text(&description)
                );
            }
            _ => {
                let inner = doc.resolve(node);
                let array = doc.types(node).iter().any(|t| t == "array");
                let (title, inner) = if array {
                    (format!("[[{key}]]"), doc.resolve(&inner["items"]))
                } else {
                    (format!("[{key}]"), inner)
                };
                let _ = writeln!(
                    page,
                    "## `{title}` {{#{}}}\n\n{}",
                    key.replace('_', "-"),
                    text(&description)
                );
                let more = doc.description(inner);
                if !more.is_empty() && more != description {
                    let _ = writeln!(page, "\n{}", text(&more));
                }
                page.push('\n');
                doc.key_list(&mut page, inner, &[]);
                // A table within the table (`[oncall.pagerduty]`) lists its own keys.
                for (sub, node) in doc.properties(inner) {
                    let table = doc.resolve(node);
                    if doc.properties(table).next().is_none() {
                        continue;
                    }
                    let _ = writeln!(
                        page,
                        "### `[{key}.{sub}]` {{#{}-{}}}\n\n{}\n",
                        key.replace('_', "-"),
                        sub.replace('_', "-"),
                        text(&doc.description(node))
                    );
                    doc.key_list(&mut page, table, &[]);
                }
            }
        }
    }
    page
}

/// A JSON Schema document, read with its `$defs`.
struct Schema<'a> {
    defs: Option<&'a Map<String, Value>>,
}

impl<'a> Schema<'a> {
    fn new(root: &'a Value) -> Self {
        Self {
            defs: root["$defs"].as_object(),
        }
    }

    /// The schema `node` stands for: through its `$ref`, or through `anyOf` with `null` (an
    /// optional value).
    fn resolve(&self, node: &'a Value) -> &'a Value {
        if let Some(name) = node["$ref"]
            .as_str()
            .and_then(|r| r.strip_prefix("#/$defs/"))
        {
            return self
                .defs
                .and_then(|d| d.get(name))
                .map_or(node, |n| self.resolve(n));
        }
        for key in ["anyOf", "oneOf"] {
            if let Some(branches) = node[key].as_array() {
                let real: Vec<&Value> = branches.iter().filter(|b| b["type"] != "null").collect();
                if real.len() == 1 && branches.len() == 2 {
                    return self.resolve(real[0]);
                }
            }
        }
        node
    }

    fn object(&self, node: &'a Value) -> &'a Value {
        self.resolve(node)
    }

    fn properties(&self, node: &'a Value) -> impl Iterator<Item = (&'a String, &'a Value)> {
        node["properties"].as_object().into_iter().flatten()
    }

    fn description(&self, node: &Value) -> String {
        node["description"].as_str().unwrap_or_default().to_owned()
    }

    fn types(&self, node: &'a Value) -> Vec<String> {
        let node = self.resolve(node);
        match &node["type"] {
            Value::String(t) => vec![t.clone()],
            Value::Array(ts) => ts
                .iter()
                .filter_map(Value::as_str)
                .filter(|t| *t != "null")
                .map(str::to_owned)
                .collect(),
            _ => Vec::new(),
        }
    }

    /// What a value of `node` is, in words: `string`, `list of strings`, `` `a` or `b` ``.
    fn type_of(&self, node: &'a Value) -> String {
        let node = self.resolve(node);
        let choices: Option<Vec<&Value>> = node["oneOf"]
            .as_array()
            .or(node["anyOf"].as_array())
            .map(|b| b.iter().filter(|b| b["type"] != "null").collect());
        if let Some(values) = node["enum"].as_array() {
            return values
                .iter()
                .map(|v| code(v.as_str().unwrap_or_default()))
                .collect::<Vec<_>>()
                .join(" or ");
        }
        if let Some(value) = node.get("const") {
            return code(value.as_str().unwrap_or_default());
        }
        if let Some(choices) = choices {
            return choices
                .iter()
                .map(|c| self.type_of(c))
                .collect::<Vec<_>>()
                .join(" or ");
        }
        let types = self.types(node);
        types
            .iter()
            .map(|t| match t.as_str() {
                "array" => format!("list of {}s", self.type_of(&node["items"])),
                "object" => "table".to_owned(),
                other => other.to_owned(),
            })
            .collect::<Vec<_>>()
            .join(" or ")
    }

    /// The meaning of a value of an enumeration, by value: `` `polling`: ... ``.
    fn values(&self, node: &'a Value) -> Vec<String> {
        let node = self.resolve(node);
        node["oneOf"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|v| {
                let value = v["const"].as_str().or_else(|| v["enum"][0].as_str())?;
                let description = self.description(v);
                (!description.is_empty())
                    .then(|| format!("{}: {}", code(value), text(&description)))
            })
            .collect()
    }

    /// One item per key of the table `node`: its type, whether it is required or its default,
    /// and its meaning.
    fn key_list(&self, page: &mut String, node: &'a Value, skip: &[&str]) {
        let required: Vec<&str> = node["required"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        for (key, field) in self.properties(node) {
            if skip.contains(&key.as_str()) {
                continue;
            }
            let ty = self.type_of(field);
            let default = match field.get("default") {
                _ if required.contains(&key.as_str()) => "required".to_owned(),
                Some(Value::String(s)) => format!("default {}", code(s)),
                Some(v @ (Value::Bool(_) | Value::Number(_))) => {
                    format!("default {}", code(&v.to_string()))
                }
                _ if self.types(field) == ["boolean"] => format!("default {}", code("false")),
                _ => "optional".to_owned(),
            };
            let mut meaning = sentence(&self.description(field));
            if meaning.is_empty() {
                meaning = sentence(&self.description(self.resolve(field)));
            }
            let values = self.values(field);
            if !values.is_empty() {
                let _ = write!(meaning, " {}.", values.join("; "));
            }
            assert!(
                !meaning.trim().is_empty(),
                "the configuration key {key} has no doc comment; the reference needs one"
            );
            let _ = writeln!(page, "- `{key}` ({ty}, {default}): {}", meaning.trim());
        }
        page.push('\n');
    }
}

// ---------------------------------------------------------------------------------------------
// The HTTP API

/// `docs/src/reference/http-api.md`: every operation of `api/openapi.json` by tag, with its
/// parameters, body and responses, then every schema with its fields.
pub fn http_api_page(openapi: &Value) -> String {
    let mut page = String::from("# HTTP API\n\n");
    page.push_str(&header("the OpenAPI document `api/openapi.json`"));
    let info = &openapi["info"];
    let _ = writeln!(
        page,
        "{} Every route below is served under the server's address; the same document is served \
         at `GET /openapi.json` (OpenAPI {}). Routes that need a key take it as `Authorization: \
         Bearer <key>`; the inbox's session cookie works too, with the `X-CSRF-Token` header on \
         writes. Errors are `{{\"error\": {{\"code\", \"message\"}}}}`: see \
         [`ErrorBody`](#errorbody). [HTTP](../agents/http.md) shows the API at work.\n",
        text(info["description"].as_str().unwrap_or_default()),
        openapi["openapi"].as_str().unwrap_or_default(),
    );

    let operations = operations(openapi);
    for tag in openapi["tags"].as_array().into_iter().flatten() {
        let name = tag["name"].as_str().unwrap_or_default();
        let _ = writeln!(
            page,
            "## {}\n\n{}.\n",
            capitalised(name),
            text(tag["description"].as_str().unwrap_or_default())
        );
        page.push_str("| operation | does |\n|---|---|\n");
        let tagged: Vec<&Operation> = operations
            .iter()
            .filter(|o| o.tags().any(|t| t == name))
            .collect();
        for op in &tagged {
            let _ = writeln!(
                page,
                "| [`{} {}`](#{}) | {} |",
                op.method.to_ascii_uppercase(),
                op.path,
                op.id(),
                first_sentence(&op.summary()),
            );
        }
        page.push('\n');
        for op in tagged {
            operation_section(&mut page, op);
        }
    }

    page.push_str("## Schemas\n\nThe bodies the operations take and return, by name.\n\n");
    for (name, schema) in openapi["components"]["schemas"]
        .as_object()
        .into_iter()
        .flatten()
    {
        let _ = writeln!(page, "### {name}\n");
        let description = schema["description"].as_str().unwrap_or_default();
        if !description.is_empty() {
            let _ = writeln!(page, "{}\n", text(description));
        }
        schema_fields(&mut page, schema);
    }
    page
}

struct Operation<'a> {
    path: &'a str,
    method: &'a str,
    op: &'a Value,
}

impl Operation<'_> {
    fn id(&self) -> String {
        self.op["operationId"]
            .as_str()
            .map(|id| id.replace('_', "-"))
            .unwrap_or_else(|| format!("{}-{}", self.method, self.path))
    }

    fn summary(&self) -> String {
        let summary = self.op["summary"].as_str().unwrap_or_default();
        let description = self.op["description"].as_str().unwrap_or_default();
        if description.is_empty() {
            summary.to_owned()
        } else {
            format!("{summary} {description}")
        }
    }

    fn tags(&self) -> impl Iterator<Item = &str> {
        self.op["tags"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
    }
}

fn operations(openapi: &Value) -> Vec<Operation<'_>> {
    let mut out = Vec::new();
    for (path, item) in openapi["paths"].as_object().into_iter().flatten() {
        for (method, op) in item.as_object().into_iter().flatten() {
            if ["get", "post", "put", "patch", "delete"].contains(&method.as_str()) {
                out.push(Operation { path, method, op });
            }
        }
    }
    out
}

fn capitalised(word: &str) -> String {
    let mut chars = word.chars();
    chars
        .next()
        .map(|c| c.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}

fn first_sentence(raw: &str) -> String {
    let one = text(raw);
    match one.find(". ") {
        Some(i) => one[..=i].to_owned(),
        None => one,
    }
}

fn operation_section(page: &mut String, op: &Operation<'_>) {
    // The heading's id is the operation's, so that links to it survive a change of path.
    let _ = writeln!(
        page,
        "### `{} {}` {{#{}}}\n\n{}\n",
        op.method.to_ascii_uppercase(),
        op.path,
        op.id(),
        text(&op.summary())
    );
    let keyed = op.op["security"].as_array().is_some_and(|s| !s.is_empty());
    if keyed {
        page.push_str("Needs a key (or an inbox session).\n\n");
    }
    let parameters: Vec<&Value> = op.op["parameters"]
        .as_array()
        .into_iter()
        .flatten()
        .collect();
    if !parameters.is_empty() {
        page.push_str("Parameters:\n\n| parameter | in | type | meaning |\n|---|---|---|---|\n");
        for p in parameters {
            let required = if p["required"] == true {
                " Required."
            } else {
                ""
            };
            let _ = writeln!(
                page,
                "| `{}` | {} | {} | {}{required} |",
                p["name"].as_str().unwrap_or_default(),
                p["in"].as_str().unwrap_or_default(),
                schema_type(&p["schema"]),
                sentence(p["description"].as_str().unwrap_or_default()),
            );
        }
        page.push('\n');
    }
    if let Some(content) = op.op["requestBody"]["content"].as_object() {
        let bodies: Vec<String> = content
            .iter()
            .map(|(ty, media)| format!("{} as `{ty}`", schema_type(&media["schema"])))
            .collect();
        let _ = writeln!(page, "Body: {}.\n", bodies.join(", or "));
    }
    page.push_str("Responses:\n\n| status | meaning | body |\n|---|---|---|\n");
    for (status, response) in op.op["responses"].as_object().into_iter().flatten() {
        let bodies: Vec<String> = response["content"]
            .as_object()
            .into_iter()
            .flatten()
            .map(|(ty, media)| {
                if media["schema"].is_null() {
                    format!("`{ty}`")
                } else {
                    format!("{} (`{ty}`)", schema_type(&media["schema"]))
                }
            })
            .collect();
        let headers: Vec<String> = response["headers"]
            .as_object()
            .into_iter()
            .flatten()
            .map(|(name, _)| format!("`{name}` header"))
            .collect();
        let _ = writeln!(
            page,
            "| {status} | {} | {} |",
            text(response["description"].as_str().unwrap_or_default()),
            bodies
                .into_iter()
                .chain(headers)
                .collect::<Vec<_>>()
                .join(", "),
        );
    }
    page.push('\n');
}

/// A schema in words, with named schemas linked to their section.
fn schema_type(schema: &Value) -> String {
    if let Some(name) = schema["$ref"]
        .as_str()
        .and_then(|r| r.strip_prefix("#/components/schemas/"))
    {
        return format!("[`{name}`](#{})", name.to_ascii_lowercase());
    }
    for key in ["oneOf", "anyOf"] {
        if let Some(branches) = schema[key].as_array() {
            return branches
                .iter()
                .filter(|b| b["type"] != "null")
                .map(schema_type)
                .collect::<Vec<_>>()
                .join(" or ");
        }
    }
    let types: Vec<&str> = match &schema["type"] {
        Value::String(t) => vec![t.as_str()],
        Value::Array(ts) => ts
            .iter()
            .filter_map(Value::as_str)
            .filter(|t| *t != "null")
            .collect(),
        _ => vec![],
    };
    if types.is_empty() {
        return "any JSON".to_owned();
    }
    types
        .iter()
        .map(|t| match *t {
            "array" => format!("list of {}", schema_type(&schema["items"])),
            other => other.to_owned(),
        })
        .collect::<Vec<_>>()
        .join(" or ")
}

fn schema_fields(page: &mut String, schema: &Value) {
    let Some(properties) = schema["properties"].as_object() else {
        let _ = writeln!(page, "{}.\n", capitalised(&schema_type(schema)));
        return;
    };
    let required: Vec<&str> = schema["required"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    page.push_str("| field | type | meaning |\n|---|---|---|\n");
    for (name, field) in properties {
        let description = field["description"]
            .as_str()
            .or_else(|| {
                field["oneOf"]
                    .as_array()
                    .and_then(|b| b.iter().find_map(|b| b["description"].as_str()))
            })
            .unwrap_or_default();
        let required = if required.contains(&name.as_str()) {
            " Always present (required in a request)."
        } else {
            ""
        };
        let _ = writeln!(
            page,
            "| `{name}` | {} | {}{required} |",
            schema_type(field),
            sentence(description)
        );
    }
    page.push('\n');
}

#[cfg(test)]
mod tests;
