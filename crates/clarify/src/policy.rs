//! `--policy FILE`: a TOML file of tool-name patterns, read into core's [`Policy`].
//!
//! ```toml
//! allow = ["Read", "Grep", "mcp__docs__*"]
//! deny = ["mcp__db__drop_*"]
//! ```
//!
//! Patterns are exact names, `prefix*` or `*`, ignoring case; deny wins; a call neither list
//! names goes to a human. An unknown key or a wrong type stops the command with one line naming
//! the file and the problem.

use std::path::Path;

use anyhow::Context as _;
use clarify_core::policy::Policy;
use serde::Deserialize;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct PolicyFile {
    #[serde(default)]
    allow: Vec<String>,
    #[serde(default)]
    deny: Vec<String>,
}

/// The policy of `--policy FILE` when given, else the section `section` picks from the
/// configuration file (`--config`, or `CLARIFY_CONFIG`), else the empty policy.
pub fn load_or_section(
    policy: Option<&Path>,
    config: Option<&Path>,
    section: impl FnOnce(crate::config::Config) -> Option<Policy>,
) -> anyhow::Result<Policy> {
    if policy.is_some() {
        return load(policy);
    }
    let Some(config) = config else {
        return Ok(Policy::default());
    };
    let file = crate::config::load(config).map_err(anyhow::Error::msg)?;
    Ok(section(file).unwrap_or_default())
}

/// The policy in `path`, or the empty policy (everything asks a human) without one.
pub fn load(path: Option<&Path>) -> anyhow::Result<Policy> {
    let Some(path) = path else {
        return Ok(Policy::default());
    };
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read the policy file {}", path.display()))?;
    let file: PolicyFile = toml::from_str(&text).map_err(|e| {
        let line = e
            .span()
            .and_then(|span| text.get(..span.start))
        .map(|before| before.matches('\n').count() + 1);
        let at = line.map(|l| format!(" (line {l})")).unwrap_or_default();
        anyhow::anyhow!(
            "the policy file {} is not valid{at}: {}; it takes `allow` and `deny` lists of tool-name patterns",
            path.display(),
            e.message().trim()
        )
    })?;
    for pattern in file.allow.iter().chain(&file.deny) {
        if pattern.trim().is_empty() {
            anyhow::bail!(
                "the policy file {} has an empty pattern; remove it or write a tool name",
                path.display()
            );
        }
    }
    Ok(Policy::new(&file.allow, &file.deny))
}
