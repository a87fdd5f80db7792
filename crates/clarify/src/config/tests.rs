//! The configuration file's checks, each on a small file.

use clarify_channels::AnyPlatform;

use super::*;

fn env(name: &str) -> Option<String> {
    (name == "SLACK_BOT_TOKEN").then(|| "xoxb-from-env".to_owned())
}

/// The checks of `text`, their problems without the line and column each names (which
/// [`problems_name_their_line_and_column_and_all_are_found`] checks).
fn check(text: &str) -> Result<Config, String> {
    parse(Path::new("clarify.toml"), text, &env).map_err(|e| unlocated(&e))
}

/// `e` with `clarify.toml:LINE:COLUMN:` written `clarify.toml:`.
fn unlocated(e: &str) -> String {
    e.lines()
        .map(|line| match line.strip_prefix("clarify.toml:") {
            Some(rest) => {
                let rest = rest.trim_start_matches(|c: char| c.is_ascii_digit() || c == ':');
                format!("clarify.toml: {}", rest.trim_start())
            }
            None => line.to_owned(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn problems_name_their_line_and_column_and_all_are_found() {
    let text = "[server]\nlisten = 7420\n";
    let e = parse(Path::new("clarify.toml"), text, &env).expect_err("refused");
    assert_eq!(
        e,
        "clarify.toml:2:10: server.listen: invalid type: integer `7420`, expected socket address"
    );
    // Past the tables' types, every problem is found, in the file's order, each at its key (or
    // at the table lacking it).
    let text = "[[channels]]\nname = \"ops\"\ntype = \"slack\"\nsigning_secret = \"s\"\n\
                channel = \"C1\"\nbot_token_env = \"NOT_SET\"\n\n[oidc]\nissuer = \"https://id.example\"\n\
                client_id = \"c\"\nclient_secret_env = \"ALSO_NOT_SET\"\n\n[decisions]\nstep_up = \"low\"\n\n\
                [push]\nvapid_private_key = \"short\"\n";
    let e = parse(Path::new("clarify.toml"), text, &env).expect_err("refused");
    let lines: Vec<&str> = e.lines().collect();
    assert_eq!(
        lines,
        [
            "clarify.toml:6:1: channels[0].bot_token_env: the environment variable NOT_SET is not set",
            "clarify.toml:11:1: oidc.client_secret_env: the environment variable ALSO_NOT_SET is not set",
            "clarify.toml:14:1: decisions.step_up: \"low\" is not a risk step-up applies to; use \"high\"",
            "clarify.toml:17:1: push.vapid_private_key: not URL-safe base64 (the 32 bytes of a P-256 private key)",
        ],
        "{e}"
    );
}

#[test]
fn the_example_file_in_the_repository_is_valid() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/clarify.example.toml");
    let text = std::fs::read_to_string(&path).expect("the example file exists");
    // Every variable the file names is set.
    let config =
        parse(&path, &text, &|_| Some("from-env".to_owned())).unwrap_or_else(|e| panic!("{e}"));
    let types: Vec<&str> = config.channels.iter().map(|c| c.platform_name()).collect();
    assert_eq!(
        types,
        [
            "slack",
            "telegram",
            "discord",
            "mattermost",
            "teams",
            "email",
            "ntfy"
        ]
    );
    assert!(!config.routes.is_empty());
    assert!(!config.identities.is_empty());
    assert!(config.claude_code.is_some() && config.gate.is_some());
    assert!(config.server.listen.is_some());
    assert_eq!(
        config.server.outbound_allow.as_deref(),
        Some(&["10.20.0.0/16".to_owned(), "hooks.internal".to_owned()][..])
    );
    assert_eq!(config.rules.as_ref().map(|r| r.len()), Some(2));
    assert_eq!(config.suggest.approvals, 3);
    assert!(config.a2a);
    assert_eq!(
        config
            .agui
            .iter()
            .map(|a| (a.name.as_str(), a.url.as_str(), a.headers.len()))
            .collect::<Vec<_>>(),
        [("deployer", "http://127.0.0.1:8000/agent", 1)]
    );
    let oidc = config.oidc.expect("[oidc]");
    assert_eq!(oidc.client_secret.as_deref(), Some("from-env"));
    assert_eq!(config.groups["sre"], ["alice", "bob"]);
    assert!(config.forbid_self_approval);
    assert_eq!(config.step_up, Some(clarify_core::Risk::High));
}

#[test]
fn step_up_takes_only_high() {
    let config = check("[decisions]\n").expect("valid");
    assert_eq!(config.step_up, None);
    let e = check("[decisions]\nstep_up = \"normal\"\n").expect_err("refused");
    assert_eq!(
        e,
        "clarify.toml: decisions.step_up: \"normal\" is not a risk step-up applies to; use \"high\""
    );
}

/// The handbook's ten worked rules compile, and decide as the page says.
#[test]
fn the_worked_rules_of_the_handbook_compile() {
    use clarify_core::rules::{Call, Decide};
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/src/decisions/rules.md");
    let page = std::fs::read_to_string(&path).expect("the policy page exists");
    let after = page
        .split("## Ten worked rules")
        .nth(1)
        .expect("the worked rules section");
    let block = after
        .split("```toml\n")
        .nth(1)
        .and_then(|b| b.split("```").next())
        .expect("a toml block");
    let config = check(block).unwrap_or_else(|e| panic!("{e}"));
    let rules = config.rules.expect("rules");
    assert!(rules.len() >= 10, "{rules:?}");
    let decide = |tool: &str, args: serde_json::Value, cwd: Option<&str>| {
        let call = Call {
            tool: tool.to_owned(),
            args,
            cwd: cwd.map(str::to_owned),
            ..Call::default()
        };
        let verdict = rules.decide(&call);
        verdict.matched.map(|m| (m.name, m.decide))
    };
    let named = |name: &str, decide: Decide| Some((name.to_owned(), decide));
    assert_eq!(
        decide("refund", serde_json::json!({"amount": 20}), None),
        named("small-refunds", Decide::Allow)
    );
    assert_eq!(
        decide("refund", serde_json::json!({"amount": 9000}), None),
        named("large-refunds", Decide::Ask)
    );
    assert_eq!(
        decide(
            "Write",
            serde_json::json!({"file_path": "/etc/hosts"}),
            Some("/work/app")
        ),
        named("writes-outside-workspace", Decide::Deny)
    );
    assert_eq!(
        decide(
            "Write",
            serde_json::json!({"file_path": "/work/app/x.rs"}),
            Some("/work/app")
        ),
        None
    );
    assert_eq!(
        decide(
            "send_mail",
            serde_json::json!({"to": ["x@other.org"]}),
            None
        ),
        named("mail-outside-domain", Decide::Ask)
    );
    assert_eq!(
        decide("Bash", serde_json::json!({"command": "git log -5"}), None),
        named("read-only-git", Decide::Allow)
    );
    assert_eq!(
        decide(
            "Bash",
            serde_json::json!({"command": "git push --force"}),
            None
        ),
        named("no-force-push", Decide::Deny)
    );
    assert_eq!(
        decide(
            "kubectl_apply",
            serde_json::json!({"namespace": "prod-1"}),
            None
        ),
        named("prod-namespaces", Decide::Ask)
    );
    assert_eq!(
        decide(
            "mcp__db__query",
            serde_json::json!({"sql": "DROP TABLE users"}),
            None
        ),
        named("destructive-sql", Decide::Deny)
    );
    assert_eq!(
        decide(
            "mcp__db__query",
            serde_json::json!({"sql": "select dropped from t"}),
            None
        ),
        None
    );
}

#[test]
fn the_receipts_key_and_window_are_read_and_bad_ones_named() {
    let config = check(
        "[receipts]\nsigning_key = \"yfWPiYE-n46HLnH0KqZOF1fJJU3MYrct3AELtAQ-oRw\"\n\
         retired_keys_published_for = \"30d\"\n",
    )
    .expect("valid");
    assert!(config.receipts.signing_key.is_some());
    assert_eq!(
        config.receipts.retired_published_for,
        chrono::TimeDelta::days(30)
    );
    let defaults = check("").expect("valid").receipts;
    assert!(defaults.signing_key.is_none(), "the store's key signs");
    assert_eq!(defaults.retired_published_for, chrono::TimeDelta::days(365));
    let e = check("[receipts]\nsigning_key = \"c2hvcnQ\"\n").expect_err("refused");
    assert!(
        e.starts_with(
            "clarify.toml: receipts.signing_key: an Ed25519 key is 32 bytes, this one is 5"
        ),
        "{e}"
    );
    let e = check("[receipts]\nretired_keys_published_for = \"soon\"\n").expect_err("refused");
    assert!(e.contains("receipts.retired_keys_published_for"), "{e}");
}

#[test]
fn the_push_key_and_subject_are_read_and_bad_ones_named() {
    let config = check(
        "[push]\nvapid_private_key = \"yfWPiYE-n46HLnH0KqZOF1fJJU3MYrct3AELtAQ-oRw\"\n\
         subject = \"mailto:ops@example.com\"\n",
    )
    .expect("valid");
    assert!(config.push.key.is_some());
    assert_eq!(
        config.push.subject.as_deref(),
        Some("mailto:ops@example.com")
    );
    assert!(check("").expect("valid").push.key.is_none());
    let e = check("[push]\nvapid_private_key = \"c2hvcnQ\"\n").expect_err("refused");
    assert_eq!(
        e,
        "clarify.toml: push.vapid_private_key: a VAPID private key is 32 bytes, got 5"
    );
    let e = check("[push]\nsubject = \"ops@example.com\"\n").expect_err("refused");
    assert!(e.starts_with("clarify.toml: push.subject: "), "{e}");
    let e = check("[push]\nvapid_private_key = \"x\"\nvapid_private_key_env = \"K\"\n")
        .expect_err("refused");
    assert!(e.contains("not both"), "{e}");
    let e = check("[push]\nvapid = \"x\"\n").expect_err("refused");
    assert!(e.contains("vapid"), "{e}");
}

#[test]
fn a_rule_that_cannot_compile_stops_the_check_naming_it_and_the_column() {
    let e = check(
        "[[rules]]\nname = \"fine\"\nwhen = \"true\"\ndecide = \"allow\"\n\n\
         [[rules]]\nname = \"limits\"\nwhen = \"args.amount > limit\"\ndecide = \"deny\"\n",
    )
    .expect_err("refused");
    assert_eq!(
        e,
        "clarify.toml: rules[1]: rule \"limits\": when at column 15: unknown variable \
         \"limit\"; a rule reads tool, args, agent, session, tags, cwd, on_behalf_of"
    );
    let e = check("[[rules]]\nname = \"x\"\nwhen = \"args.n + 1\"\ndecide = \"deny\"\n")
        .expect_err("refused");
    assert!(e.contains("not a boolean"), "{e}");
    let e = check("[[rules]]\nname = \"x\"\ndecide = \"maybe\"\n").expect_err("refused");
    assert!(e.contains("decide"), "{e}");
    let e = check("[[rules]]\nname = \"x\"\ndecide = \"ask\"\ntimeout = \"soon\"\n")
        .expect_err("refused");
    assert!(e.contains("rules[0].timeout"), "{e}");
}

#[test]
fn oidc_takes_its_defaults_and_names_what_is_wrong() {
    let config = check(
        "[oidc]\nissuer = \"https://id.example.com/realms/acme\"\nclient_id = \"clarify\"\n\
         client_secret = \"s\"\n",
    )
    .expect("valid");
    let oidc = config.oidc.expect("[oidc]");
    assert_eq!(oidc.scopes, ["openid", "email", "profile"]);
    assert_eq!(
        (oidc.name_claim.as_str(), oidc.groups_claim.as_str()),
        ("email", "groups")
    );
    assert_eq!(oidc.tenant, "default");
    assert!(oidc.key_login && oidc.allowed_domains.is_empty());
    for (text, says) in [
        (
            "[oidc]\nissuer = \"https://id.example.com\"\nclient_id = \"c\"\n",
            "clarify.toml: oidc.client_secret: is missing; give client_secret = \"...\", client_secret_env = \"VARIABLE\" or client_secret_file = \"PATH\"",
        ),
        (
            "[oidc]\nissuer = \"id.example.com\"\nclient_id = \"c\"\nclient_secret = \"s\"\n",
            "clarify.toml: oidc.issuer: \"id.example.com\" is not an http or https URL",
        ),
        (
            "[oidc]\nissuer = \"https://id.example.com\"\nclient_id = \"c\"\nclient_secret = \"s\"\n\
             allowed_domains = [\"https://example.com\"]\n",
            "clarify.toml: oidc.allowed_domains: \"https://example.com\" is not an e-mail domain such as \"example.com\"",
        ),
        (
            "[groups]\nsre = [\"al ice\"]\n",
            "clarify.toml: groups.\"sre\": \"al ice\" is not a responder name (1 to 64 of A-Z a-z 0-9 . _ @ -)",
        ),
    ] {
        assert_eq!(check(text).err().as_deref(), Some(says), "{text}");
    }
}

#[test]
fn an_empty_file_is_a_valid_configuration() {
    let config = check("").expect("valid");
    assert!(config.channels.is_empty() && config.routes.is_empty());
    assert!(config.server.db.is_none());
}

#[test]
fn secrets_come_from_the_file_or_the_environment() {
    let config = check(
        "[[channels]]\nname = \"ops\"\ntype = \"slack\"\nbot_token_env = \"SLACK_BOT_TOKEN\"\n\
         signing_secret = \"s3cret\"\nchannel = \"C123\"\n",
    )
    .expect("valid");
    match &config.channels[0].platform {
        AnyPlatform::Slack(slack) => {
            assert_eq!(slack.bot_token, "xoxb-from-env");
            assert_eq!(slack.signing_secret.as_deref(), Some("s3cret"));
            assert_eq!(slack.api_url.as_str(), "https://slack.com/api");
        }
        other => panic!("a slack channel, got {other:?}"),
    }
    assert!(
        !format!("{config:?}").contains("s3cret"),
        "secrets are not printed"
    );
}

/// Every mistake is one line naming the file, the key and the problem.
#[test]
fn mistakes_are_named_on_one_line() {
    let slack = "[[channels]]\nname = \"ops\"\ntype = \"slack\"\nsigning_secret = \"s\"\nchannel = \"C1\"\n";
    let cases: &[(&str, &str)] = &[
        (
            "[server]\nlisten = 7420\n",
            "clarify.toml: server.listen: invalid type: integer `7420`",
        ),
        (
            "[server]\nmax_waiter = 5\n",
            "clarify.toml: server.max_waiter: unknown field `max_waiter`",
        ),
        (
            "[server]\nretain_resolved = \"forever\"\n",
            "clarify.toml: server.retain_resolved:",
        ),
        (
            "[server]\notlp_endpoint = \"collector:4318\"\n",
            "clarify.toml: server.otlp_endpoint: \"collector:4318\" is not an http:// or https:// address",
        ),
        (
            "[server]\ndurability = \"maybe\"\n",
            "clarify.toml: server.durability: unknown variant `maybe`, expected `normal` or `full`",
        ),
        (
            "[server]\noutbound_allow = [\"10.20.0.0/16\", \"10.0.0.0/33\"]\n",
            "clarify.toml: server.outbound_allow: \"10.0.0.0/33\" is not a CIDR range",
        ),
        ("[sever]\n", "clarify.toml: sever: unknown field `sever`"),
        (
            slack,
            "clarify.toml: channels[0].bot_token: is missing; give bot_token = \"...\", bot_token_env = \"VARIABLE\" or bot_token_file = \"PATH\"",
        ),
        (
            &format!("{slack}bot_token_env = \"NOT_SET\"\n"),
            "clarify.toml: channels[0].bot_token_env: the environment variable NOT_SET is not set",
        ),
        (
            &format!("{slack}bot_token = \"x\"\nbot_token_env = \"SLACK_BOT_TOKEN\"\n"),
            "clarify.toml: channels[0].bot_token: give either bot_token or bot_token_env, not both",
        ),
        (
            &format!("{slack}bot_token = \"x\"\nbot_tokn = \"y\"\n"),
            "unknown field `bot_tokn`",
        ),
        (
            "[[channels]]\nname = \"x\"\ntype = \"slak\"\n",
            "unknown variant `slak`",
        ),
        (
            &format!("{slack}bot_token = \"x\"\n[[routes]]\nchannels = [\"opz\"]\n"),
            "clarify.toml: routes[0].channels: \"opz\" is not the name of any [[channels]] entry",
        ),
        (
            &format!(
                "{slack}bot_token = \"x\"\n[[routes]]\nchannels = [\"ops\"]\nkinds = [\"aproval\"]\n"
            ),
            "clarify.toml: routes[0].kinds: \"aproval\" is not a question kind",
        ),
        (
            &format!(
                "{slack}bot_token = \"x\"\n[[routes]]\nchannels = [\"ops\"]\nwarn_before = \"soon\"\n"
            ),
            "routes[0].warn_before: ",
        ),
        (
            "[decisions]\nmax_extension = \"2 fortnights\"\n",
            "decisions.max_extension: unknown unit",
        ),
        (
            "[identities]\n\"slak:U1\" = \"alice\"\n",
            "clarify.toml: identities.\"slak:U1\": the platform must be one of",
        ),
        (
            "[[channels]]\nname = \"d\"\ntype = \"discord\"\nbot_token = \"t\"\npublic_key = \"abc\"\nchannel_id = 1\n",
            "clarify.toml: channels[0].public_key: must be the application's public key: 64 hex digits",
        ),
        (
            "[[channels]]\nname = \"m\"\ntype = \"email\"\nsmtp_url = \"http://mail\"\nfrom = \"a@b.c\"\n",
            "clarify.toml: channels[0].smtp_url: \"http://mail\" is not a smtp or smtps URL",
        ),
        (
            "[[channels]]\nname = \"n\"\ntype = \"ntfy\"\ntopic = \"t\"\n[[channels]]\nname = \"n\"\ntype = \"ntfy\"\ntopic = \"u\"\n",
            "clarify.toml: channels[1].name: \"n\" names two channels",
        ),
        (
            "[claude_code]\nallow = [\"\"]\n",
            "clarify.toml: claude_code: has an empty pattern",
        ),
        (
            "[[agui]]\nname = \"a b\"\nurl = \"http://x\"\n",
            "clarify.toml: agui[0].name: \"a b\" must be 1 to 64 of",
        ),
        (
            "[[agui]]\nname = \"a\"\nurl = \"ftp://x\"\n",
            "clarify.toml: agui[0].url: \"ftp://x\" is not an http or https URL",
        ),
        (
            "[[agui]]\nname = \"a\"\nurl = \"http://x\"\n[[agui]]\nname = \"a\"\nurl = \"http://y\"\n",
            "clarify.toml: agui[1].name: \"a\" is the name of another [[agui]] entry",
        ),
        (
            "[[agui]]\nname = \"a\"\nurl = \"http://x\"\nheaders = { \"Bad Name\" = \"v\" }\n",
            "clarify.toml: agui[0].headers.Bad Name: is not an HTTP header name",
        ),
    ];
    for (text, expected) in cases {
        let e = check(text).expect_err(text);
        assert!(
            e.contains(expected),
            "{text:?}\n  got:  {e}\n  want: {expected}"
        );
        assert!(!e.contains('\n'), "one line: {e}");
    }
}

/// Every secret key of the file, each in a table that is valid once the secret is given: (the
/// table, where it is, the key, a value it accepts).
const SECRET_KEYS: &[(&str, &str, &str, &str)] = &[
    (
        "[[channels]]\nname = \"ops\"\ntype = \"slack\"\nsigning_secret = \"s\"\nchannel = \"C1\"\n",
        "channels[0]",
        "bot_token",
        "xoxb-1",
    ),
    (
        "[[channels]]\nname = \"ops\"\ntype = \"slack\"\nbot_token = \"b\"\nchannel = \"C1\"\n",
        "channels[0]",
        "signing_secret",
        "8f742231b10e",
    ),
    (
        "[[channels]]\nname = \"ops\"\ntype = \"slack\"\nbot_token = \"b\"\nchannel = \"C1\"\n\
         socket_mode = true\n",
        "channels[0]",
        "app_token",
        "xapp-1",
    ),
    (
        "[[channels]]\nname = \"t\"\ntype = \"telegram\"\nchat_id = 1\n",
        "channels[0]",
        "bot_token",
        "123:ABC",
    ),
    (
        "[[channels]]\nname = \"t\"\ntype = \"telegram\"\nchat_id = 1\nbot_token = \"1:A\"\n\
         mode = \"webhook\"\n",
        "channels[0]",
        "webhook_secret",
        "hook-secret",
    ),
    (
        "[[channels]]\nname = \"d\"\ntype = \"discord\"\nchannel_id = 1\npublic_key = \
         \"3f4c0e1b2a5d6c7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f9a0b1c2d3e4f5a\"\n",
        "channels[0]",
        "bot_token",
        "MTA5.x",
    ),
    (
        "[[channels]]\nname = \"m\"\ntype = \"mattermost\"\nurl = \"https://chat.example.com\"\n\
         channel_id = \"4xp9\"\n",
        "channels[0]",
        "bot_token",
        "mm-token",
    ),
    (
        "[[channels]]\nname = \"a\"\ntype = \"teams\"\napp_id = \"6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b\"\n\
         tenant_id = \"0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d\"\n",
        "channels[0]",
        "app_password",
        "teams-secret",
    ),
    (
        "[[channels]]\nname = \"mail\"\ntype = \"email\"\nsmtp_url = \"smtps://u@smtp.example.com\"\n\
         from = \"clarify@example.com\"\n",
        "channels[0]",
        "password",
        "smtp-password",
    ),
    (
        "[[channels]]\nname = \"n\"\ntype = \"ntfy\"\ntopic = \"t\"\n",
        "channels[0]",
        "token",
        "tk_ntfy",
    ),
    (
        "[oidc]\nissuer = \"https://id.example.com\"\nclient_id = \"c\"\n",
        "oidc",
        "client_secret",
        "oidc-secret",
    ),
    (
        "[push]\n",
        "push",
        "vapid_private_key",
        "yfWPiYE-n46HLnH0KqZOF1fJJU3MYrct3AELtAQ-oRw",
    ),
];

/// `text` with `line` added to its first table (right after its header line).
fn with_line(text: &str, line: &str) -> String {
    let (header, rest) = text.split_once('\n').expect("a header line");
    format!("{header}\n{line}\n{rest}")
}

/// A secret is read alike from its value, from the variable `<key>_env` names and from the
/// file `<key>_file` names (its trailing line break trimmed); each way that fails names the key.
#[test]
fn every_secret_is_given_as_a_value_a_variable_or_a_file() {
    let dir = tempfile::tempdir().expect("temp dir");
    for (table, at, key, value) in SECRET_KEYS {
        let env = |name: &str| (name == "THE_SECRET").then(|| (*value).to_owned());
        let parse_with = |line: &str| {
            parse(Path::new("clarify.toml"), &with_line(table, line), &env)
                .map_err(|e| unlocated(&e))
        };
        let file = dir.path().join(format!("{at}-{key}"));
        std::fs::write(&file, format!("{value}\n")).expect("write the secret");
        let path = file.display().to_string();
        let forms = [
            format!("{key} = \"{value}\""),
            format!("{key}_env = \"THE_SECRET\""),
            format!("{key}_file = \"{path}\""),
        ];
        let mut read = Vec::new();
        for line in &forms {
            let config = parse_with(line).unwrap_or_else(|e| panic!("{line}: {e}"));
            read.push(secret_of(&config, key));
        }
        assert!(
            read.iter().all(|r| r.as_deref() == Some(*value)),
            "{at}.{key}: {read:?}"
        );

        // Two ways at once, each naming both keys.
        for (a, b) in [(0, 2), (1, 2), (0, 1)] {
            let e = parse_with(&format!("{}\n{}", forms[a], forms[b])).expect_err("two ways");
            let names = [
                (*key).to_owned(),
                format!("{key}_env"),
                format!("{key}_file"),
            ];
            let (first, second) = (&names[a.min(b)], &names[a.max(b)]);
            assert_eq!(
                e,
                format!("clarify.toml: {at}.{first}: give either {first} or {second}, not both")
            );
        }

        // A file that cannot be read, or holds nothing: the key and the file are named.
        let missing = dir.path().join("missing");
        let e =
            parse_with(&format!("{key}_file = \"{}\"", missing.display())).expect_err("missing");
        assert!(
            e.starts_with(&format!(
                "clarify.toml: {at}.{key}_file: cannot read {}: ",
                missing.display()
            )),
            "{e}"
        );
        let empty = dir.path().join("empty");
        std::fs::write(&empty, "\n").expect("write");
        let e = parse_with(&format!("{key}_file = \"{}\"", empty.display())).expect_err("empty");
        assert_eq!(
            e,
            format!(
                "clarify.toml: {at}.{key}_file: {} is empty",
                empty.display()
            )
        );
    }
}

/// The secret `key` as the checked configuration holds it, where a test can see it.
fn secret_of(config: &Config, key: &str) -> Option<String> {
    if key == "client_secret" {
        return config.oidc.as_ref().and_then(|o| o.client_secret.clone());
    }
    if key == "vapid_private_key" {
        // The key itself is not shown; the public key derived from it is.
        return config.push.key.as_ref().map(|k| {
            let expected = clarify_server::state::push::VapidKey::from_base64url(
                "yfWPiYE-n46HLnH0KqZOF1fJJU3MYrct3AELtAQ-oRw",
            )
            .expect("the test's key");
            if k.public_key() == expected.public_key() {
                "yfWPiYE-n46HLnH0KqZOF1fJJU3MYrct3AELtAQ-oRw".to_owned()
            } else {
                "another key".to_owned()
            }
        });
    }
    let channel = config.channels.first()?;
    Some(match (&channel.platform, key) {
        (AnyPlatform::Slack(s), "bot_token") => s.bot_token.clone(),
        (AnyPlatform::Slack(s), "signing_secret") => s.signing_secret.clone()?,
        (AnyPlatform::Slack(s), "app_token") => s.app_token.clone()?,
        (AnyPlatform::Telegram(t), "bot_token") => t.bot_token.clone(),
        (AnyPlatform::Telegram(t), "webhook_secret") => t.webhook_secret.clone()?,
        (AnyPlatform::Discord(d), "bot_token") => d.bot_token.clone(),
        (AnyPlatform::Mattermost(m), "bot_token") => m.bot_token.clone(),
        (AnyPlatform::Teams(t), "app_password") => t.app_password.clone(),
        (AnyPlatform::Email(e), "password") => e.password.clone()?,
        (AnyPlatform::Ntfy(n), "token") => n.token.clone()?,
        (other, key) => panic!("no way to read {key} of {other:?}"),
    })
}

/// `[server] db_file`: the database URL from a file, not beside `db`.
#[test]
fn the_database_url_comes_from_a_file_too() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("db");
    std::fs::write(&file, "postgres://clarify:pw@db/clarify\r\n").expect("write");
    let config = check(&format!("[server]\ndb_file = \"{}\"\n", file.display())).expect("valid");
    assert_eq!(
        config.server.db.as_deref(),
        Some("postgres://clarify:pw@db/clarify")
    );
    let e = check(&format!(
        "[server]\ndb = \"sqlite://x.db\"\ndb_file = \"{}\"\n",
        file.display()
    ))
    .expect_err("both");
    assert_eq!(
        e,
        "clarify.toml: server.db: give either db or db_file, not both"
    );
    let missing = dir.path().join("nope");
    let e =
        check(&format!("[server]\ndb_file = \"{}\"\n", missing.display())).expect_err("missing");
    assert!(
        e.starts_with(&format!(
            "clarify.toml: server.db_file: cannot read {}: ",
            missing.display()
        )),
        "{e}"
    );
}
