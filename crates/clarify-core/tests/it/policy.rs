//! Approval policy: allow and deny patterns, remembered grants, and canonical arguments.

use clarify_core::Scope;
use clarify_core::policy::{Grant, Policy, PolicyDecision, canonical_json};
use serde_json::{Value, json};

/// A grant given as (tool, arguments, scope, session).
type GrantSpec = (&'static str, Value, Scope, Option<&'static str>);

/// One proposed call: (name, allow, deny, grants, tool, arguments, session, expected decision).
type Case = (
    &'static str,
    &'static [&'static str],
    &'static [&'static str],
    Vec<GrantSpec>,
    &'static str,
    Value,
    Option<&'static str>,
    PolicyDecision,
);

fn check(cases: Vec<Case>) {
    let mut failures = Vec::new();
    for (name, allow, deny, grants, tool, arguments, session, want) in cases {
        let grants: Vec<Grant> = grants
            .into_iter()
            .map(|(t, a, scope, s)| Grant::new(t, &a, scope, s).expect("a remembered grant"))
            .collect();
        let got = Policy::new(allow, deny).decide(tool, &arguments, session, &grants);
        if got != want {
            failures.push(format!("{name}: want {want:?}, got {got:?}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

const NONE: &[&str] = &[];

#[test]
fn allow_and_deny_patterns() {
    use PolicyDecision::{Allowed, Ask, Denied};
    let args = || json!({});
    check(vec![
        (
            "an empty policy asks",
            NONE,
            NONE,
            vec![],
            "deploy",
            args(),
            None,
            Ask,
        ),
        (
            "an exact name",
            &["read_file"],
            NONE,
            vec![],
            "read_file",
            args(),
            None,
            Allowed,
        ),
        (
            "an exact name is not a prefix",
            &["read_file"],
            NONE,
            vec![],
            "read_files",
            args(),
            None,
            Ask,
        ),
        (
            "an exact name is not a suffix",
            &["file"],
            NONE,
            vec![],
            "read_file",
            args(),
            None,
            Ask,
        ),
        (
            "a prefix pattern",
            &["read_*"],
            NONE,
            vec![],
            "read_dir",
            args(),
            None,
            Allowed,
        ),
        (
            "a prefix pattern matches the bare prefix",
            &["read_*"],
            NONE,
            vec![],
            "read_",
            args(),
            None,
            Allowed,
        ),
        (
            "a prefix pattern does not match inside",
            &["read_*"],
            NONE,
            vec![],
            "bread_x",
            args(),
            None,
            Ask,
        ),
        (
            "the wildcard",
            &["*"],
            NONE,
            vec![],
            "anything",
            args(),
            None,
            Allowed,
        ),
        (
            "names ignore case",
            &["Read_File"],
            NONE,
            vec![],
            "READ_FILE",
            args(),
            None,
            Allowed,
        ),
        (
            "prefixes ignore case",
            &["GIT_*"],
            NONE,
            vec![],
            "git_status",
            args(),
            None,
            Allowed,
        ),
        (
            "patterns are trimmed",
            &[" deploy "],
            NONE,
            vec![],
            "deploy",
            args(),
            None,
            Allowed,
        ),
        (
            "an exact deny",
            NONE,
            &["rm"],
            vec![],
            "rm",
            args(),
            None,
            Denied,
        ),
        (
            "a deny prefix",
            NONE,
            &["shell_*"],
            vec![],
            "SHELL_exec",
            args(),
            None,
            Denied,
        ),
        (
            "deny wins over allow",
            &["*"],
            &["rm"],
            vec![],
            "rm",
            args(),
            None,
            Denied,
        ),
        (
            "deny wins over an exact allow",
            &["rm"],
            &["r*"],
            vec![],
            "rm",
            args(),
            None,
            Denied,
        ),
        (
            "allow applies beside an unrelated deny",
            &["*"],
            &["rm"],
            vec![],
            "ls",
            args(),
            None,
            Allowed,
        ),
        (
            "deny everything",
            &["ls"],
            &["*"],
            vec![],
            "ls",
            args(),
            None,
            Denied,
        ),
    ]);
}

#[test]
fn remembered_grants() {
    use PolicyDecision::{Allowed, Ask, Denied, Granted};
    use Scope::{Always, Session};
    let args = || json!({"env": "prod", "replicas": 3});
    check(vec![
        (
            "a session grant in its session",
            NONE,
            NONE,
            vec![("deploy", args(), Session, Some("s1"))],
            "deploy",
            args(),
            Some("s1"),
            Granted(Session),
        ),
        (
            "a session grant in another session",
            NONE,
            NONE,
            vec![("deploy", args(), Session, Some("s1"))],
            "deploy",
            args(),
            Some("s2"),
            Ask,
        ),
        (
            "a session grant outside any session",
            NONE,
            NONE,
            vec![("deploy", args(), Session, Some("s1"))],
            "deploy",
            args(),
            None,
            Ask,
        ),
        (
            "an always grant in any session",
            NONE,
            NONE,
            vec![("deploy", args(), Always, Some("s1"))],
            "deploy",
            args(),
            Some("s2"),
            Granted(Always),
        ),
        (
            "an always grant outside any session",
            NONE,
            NONE,
            vec![("deploy", args(), Always, None)],
            "deploy",
            args(),
            None,
            Granted(Always),
        ),
        (
            "the stronger grant is reported",
            NONE,
            NONE,
            vec![
                ("deploy", args(), Session, Some("s1")),
                ("deploy", args(), Always, None),
            ],
            "deploy",
            args(),
            Some("s1"),
            Granted(Always),
        ),
        (
            "argument key order does not matter",
            NONE,
            NONE,
            vec![(
                "deploy",
                json!({"a": 1, "b": {"y": [1, {"q": 1, "p": 2}], "x": null}}),
                Always,
                None,
            )],
            "deploy",
            json!({"b": {"x": null, "y": [1, {"p": 2, "q": 1}]}, "a": 1}),
            None,
            Granted(Always),
        ),
        (
            "different arguments are not covered",
            NONE,
            NONE,
            vec![("deploy", args(), Always, None)],
            "deploy",
            json!({"env": "prod", "replicas": 4}),
            None,
            Ask,
        ),
        (
            "extra arguments are not covered",
            NONE,
            NONE,
            vec![("deploy", args(), Always, None)],
            "deploy",
            json!({"env": "prod", "replicas": 3, "force": true}),
            None,
            Ask,
        ),
        (
            "list order matters",
            NONE,
            NONE,
            vec![("deploy", json!({"hosts": ["a", "b"]}), Always, None)],
            "deploy",
            json!({"hosts": ["b", "a"]}),
            None,
            Ask,
        ),
        (
            "another tool is not covered",
            NONE,
            NONE,
            vec![("deploy", args(), Always, None)],
            "destroy",
            args(),
            None,
            Ask,
        ),
        (
            "tool names in grants ignore case",
            NONE,
            NONE,
            vec![("Deploy", args(), Always, None)],
            "DEPLOY",
            args(),
            None,
            Granted(Always),
        ),
        (
            "deny wins over an always grant",
            NONE,
            &["deploy"],
            vec![("deploy", args(), Always, None)],
            "deploy",
            args(),
            None,
            Denied,
        ),
        (
            "deny wins over a session grant",
            NONE,
            &["*"],
            vec![("deploy", args(), Session, Some("s1"))],
            "deploy",
            args(),
            Some("s1"),
            Denied,
        ),
        (
            "allow is reported before a grant",
            &["deploy"],
            NONE,
            vec![("deploy", args(), Always, None)],
            "deploy",
            args(),
            None,
            Allowed,
        ),
    ]);
}

#[test]
fn once_is_never_remembered() {
    let args = json!({"x": 1});
    assert_eq!(Grant::new("deploy", &args, Scope::Once, Some("s1")), None);
    assert_eq!(Grant::new("deploy", &args, Scope::Once, None), None);
    // A session grant needs a session to live in.
    assert_eq!(Grant::new("deploy", &args, Scope::Session, None), None);
    let grant = Grant::new(" Deploy ", &args, Scope::Session, Some("s1")).expect("remembered");
    assert_eq!(grant.tool, "deploy");
    assert_eq!(grant.session.as_deref(), Some("s1"));
    assert_eq!(grant.arguments, r#"{"x":1}"#);
    let always = Grant::new("deploy", &args, Scope::Always, Some("s1")).expect("remembered");
    assert_eq!(always.session, None);
}

#[test]
fn canonical_json_sorts_keys_at_every_level() {
    let cases: Vec<(Value, &str)> = vec![
        (json!({}), "{}"),
        (json!({"b": 1, "a": 2}), r#"{"a":2,"b":1}"#),
        (
            json!({"z": {"d": [3, {"y": 1, "x": 2}], "c": "s"}, "a": null}),
            r#"{"a":null,"z":{"c":"s","d":[3,{"x":2,"y":1}]}}"#,
        ),
        (json!([2, 1]), "[2,1]"),
        (json!("quote \" and ü"), r#""quote \" and ü""#),
        (json!({"k\"ey": true}), r#"{"k\"ey":true}"#),
        (json!(1.5), "1.5"),
    ];
    for (value, want) in cases {
        assert_eq!(canonical_json(&value), want, "{value}");
        let parsed: Value = serde_json::from_str(want).expect("canonical JSON is JSON");
        assert_eq!(parsed, value);
    }
}
