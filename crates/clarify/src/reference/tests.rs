//! The committed reference pages are what the code generates today, and the configuration page
//! names every key the file accepts.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::*;

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Compares `fresh` with the committed page at `path` (from the repository root), or writes it
/// under `CLARIFY_BLESS=1`.
fn check_committed(path: &str, fresh: &str) {
    let file = repo_root().join(path);
    if std::env::var_os("CLARIFY_BLESS").is_some() {
        std::fs::write(&file, fresh).unwrap_or_else(|e| panic!("writing {path}: {e}"));
        return;
    }
    let committed = std::fs::read_to_string(&file).unwrap_or_default();
    assert!(
        committed == fresh,
        "{path} is stale; regenerate it with `{REGENERATE}`"
    );
}

#[test]
fn the_command_line_reference_is_fresh() {
    check_committed("docs/src/reference/cli.md", &cli_page());
}

#[test]
fn the_configuration_reference_is_fresh() {
    check_committed("docs/src/reference/configuration.md", &configuration_page());
}

#[test]
fn the_http_api_reference_is_fresh() {
    let text = std::fs::read_to_string(repo_root().join("api/openapi.json"))
        .expect("api/openapi.json is readable");
    let openapi: Value = serde_json::from_str(&text).expect("api/openapi.json is JSON");
    check_committed("docs/src/reference/http-api.md", &http_api_page(&openapi));
}

/// The reference lists every key the file accepts: each key it names parses (as the right
/// type), and a key it does not name is refused.
#[test]
fn the_configuration_reference_names_every_accepted_key() {
    let page = configuration_page();
    for section in [
        "[server]",
        "[[channels]]",
        "[[routes]]",
        "[identities]",
        "[claude_code]",
        "[gate]",
    ] {
        assert!(
            page.contains(&format!("## `{section}` {{#")),
            "{section} is missing"
        );
    }
    for key in [
        "listen",
        "max_waiters",
        "retain_resolved",
        "durability",
        "log_format",
        "outbound_allow",
        "bot_token_env",
        "bot_token_file",
        "client_secret_file",
        "db_file",
        "socket_mode",
        "mention",
        "chat_id",
        "webhook_secret",
        "public_key",
        "smtp_url",
        "topic",
        "allow_unmapped",
        "kinds",
        "tags",
        "agent",
        "tenant",
        "allow",
        "deny",
    ] {
        assert!(page.contains(&format!("- `{key}` (")), "{key} is missing");
    }
    assert!(
        page.contains("`https://slack.com/api`"),
        "a default is shown"
    );
    assert!(
        page.contains("`polling`: "),
        "an enumeration's values are explained"
    );
}
