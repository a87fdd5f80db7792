//! `[[rules]]` in CEL: what compiles (and what is refused, naming the rule and the column), which
//! rule decides a call, and the bounds on an evaluation.

use clarify_core::rules::{AskSettings, Call, Decide, RuleSpec, Rules};
use serde_json::{Value, json};

fn rule(name: &str, when: &str, decide: Decide) -> RuleSpec {
    RuleSpec {
        name: name.to_owned(),
        tool: None,
        when: Some(when.to_owned()),
        decide,
        reason: None,
        ask: AskSettings::default(),
    }
}

fn call(tool: &str, args: Value) -> Call {
    Call {
        tool: tool.to_owned(),
        args,
        agent: Some("claude-code".to_owned()),
        session: Some("s1".to_owned()),
        tags: vec!["prod".to_owned()],
        cwd: Some("/home/dev/app".to_owned()),
        on_behalf_of: None,
    }
}

/// The error compiling one rule with `when` gives: (column, message).
fn refused(when: &str) -> (Option<usize>, String) {
    match Rules::compile(vec![rule("r", when, Decide::Allow)]) {
        Ok(_) => panic!("{when:?} should be refused"),
        Err(e) => {
            assert_eq!(e.name, "r");
            assert_eq!(e.key, "when");
            let text = e.to_string();
            assert!(text.starts_with("rule \"r\": when"), "{text}");
            (e.column, e.message)
        }
    }
}

#[test]
fn conditions_that_cannot_be_rules_are_refused_naming_the_column() {
    let cases: &[(&str, Option<usize>, &str)] = &[
        // Unknown variables, at their column.
        (
            "args.amount > limit",
            Some(15),
            "unknown variable \"limit\"",
        ),
        (
            "tool == 'x' && user == 'bob'",
            Some(16),
            "unknown variable \"user\"",
        ),
        // Not booleans.
        ("args.amount + 1", Some(13), "not a boolean"),
        ("'text'", Some(1), "not a boolean"),
        ("tool", Some(1), "not a boolean"),
        ("args.items.map(i, i * 2)", None, "not a boolean"),
        ("size(args.items)", Some(5), "not a boolean"),
        // Syntax.
        ("args.amount >", None, "does not parse"),
        ("tool == 'x' &&& true", None, "does not parse"),
        // Nested iteration.
        (
            "args.a.exists(x, args.b.exists(y, x == y))",
            Some(31),
            "iterates inside an iteration",
        ),
    ];
    for (when, column, message) in cases {
        let (got_column, got_message) = refused(when);
        assert!(
            got_message.contains(message),
            "{when:?}: {got_message:?} should say {message:?}"
        );
        if column.is_some() {
            assert_eq!(got_column, *column, "{when:?}: the column");
        }
    }
    // A syntax error names a column too.
    assert!(refused("args.amount >").0.is_some());
}

#[test]
fn the_error_line_names_the_rule_and_the_column() {
    let e = Rules::compile(vec![
        rule("fine", "true", Decide::Allow),
        rule("limits", "args.amount > limit", Decide::Deny),
    ])
    .expect_err("refused");
    assert_eq!(e.index, 1);
    assert_eq!(
        e.to_string(),
        "rule \"limits\": when at column 15: unknown variable \"limit\"; a rule reads tool, \
         args, agent, session, tags, cwd, on_behalf_of"
    );
}

#[test]
fn settings_belong_to_ask_rules_and_are_checked() {
    let mut allow = rule("a", "true", Decide::Allow);
    allow.ask.tags = vec!["x".to_owned()];
    let e = Rules::compile(vec![allow]).expect_err("settings on allow");
    assert_eq!(e.key, "decide");
    let mut quorum = rule("q", "true", Decide::Ask);
    quorum.ask.approvals_required = Some(11);
    assert_eq!(
        Rules::compile(vec![quorum]).expect_err("quorum").key,
        "approvals_required"
    );
    let mut risk = rule("r", "true", Decide::Ask);
    risk.ask.risk = Some("extreme".to_owned());
    assert_eq!(Rules::compile(vec![risk]).expect_err("risk").key, "risk");
    let e = Rules::compile(vec![
        rule("same", "true", Decide::Allow),
        rule("same", "true", Decide::Deny),
    ])
    .expect_err("duplicate names");
    assert_eq!((e.index, e.key), (1, "name"));
    let long = format!("tool == '{}'", "x".repeat(5_000));
    assert!(refused(&long).1.contains("bytes long"));
    let many = (0..500).map(|i| i.to_string()).collect::<Vec<_>>();
    let (_, message) = refused(&format!("size([{}]) > 0", many.join(",")));
    assert!(message.contains("parts"), "{message}");
}

#[test]
fn the_first_matching_rule_decides() {
    let mut big = rule("big", "args.amount >= 1000", Decide::Ask);
    big.tool = Some("refund".to_owned());
    big.ask.approvals_required = Some(2);
    let mut small = rule("small", "args.amount < 100", Decide::Allow);
    small.tool = Some("refund".to_owned());
    let mut git = rule(
        "read-only-git",
        "args.command.matches('^git (status|log|diff)( |$)')",
        Decide::Allow,
    );
    git.tool = Some("Bash".to_owned());
    let mut domain = rule(
        "outside-domain",
        "args.to.exists(r, !r.lowerAscii().endsWith('@example.com'))",
        Decide::Deny,
    );
    domain.tool = Some("send_*".to_owned());
    let prod = rule(
        "prod-namespace",
        "has(args.namespace) && args.namespace.startsWith('prod') && 'prod' in tags",
        Decide::Ask,
    );
    let rules = Rules::compile(vec![big, small, git, domain, prod]).expect("compile");
    let decided = |c: Call| rules.decide(&c).matched.map(|m| (m.name, m.decide));
    assert_eq!(
        decided(call("refund", json!({"amount": 5000}))),
        Some(("big".to_owned(), Decide::Ask))
    );
    assert_eq!(
        decided(call("Refund", json!({"amount": 20}))),
        Some(("small".to_owned(), Decide::Allow))
    );
    assert_eq!(decided(call("refund", json!({"amount": 500}))), None);
    assert_eq!(
        decided(call("Bash", json!({"command": "git status"}))),
        Some(("read-only-git".to_owned(), Decide::Allow))
    );
    assert_eq!(decided(call("Bash", json!({"command": "git push"}))), None);
    assert_eq!(
        decided(call(
            "send_mail",
            json!({"to": ["a@example.com", "x@Evil.test"]})
        )),
        Some(("outside-domain".to_owned(), Decide::Deny))
    );
    assert_eq!(
        decided(call("send_mail", json!({"to": ["A@EXAMPLE.com"]}))),
        None
    );
    assert_eq!(
        decided(call("kubectl", json!({"namespace": "prod-eu"}))),
        Some(("prod-namespace".to_owned(), Decide::Ask))
    );
    // Float and integer arguments compare as numbers.
    assert_eq!(
        decided(call("refund", json!({"amount": 99.5}))),
        Some(("small".to_owned(), Decide::Allow))
    );
}

#[test]
fn an_evaluation_error_does_not_match_and_is_reported_first_time_only() {
    let rules = Rules::compile(vec![
        rule("needs-amount", "args.amount > 10", Decide::Deny),
        rule("fallback", "tool == 'refund'", Decide::Allow),
    ])
    .expect("compile");
    let first = rules.decide(&call("refund", json!({})));
    assert_eq!(first.matched.map(|m| m.name), Some("fallback".to_owned()));
    assert_eq!(first.errors.len(), 1);
    assert_eq!(first.errors[0].rule, "needs-amount");
    assert!(first.errors[0].first);
    let second = rules.decide(&call("refund", json!({})));
    assert_eq!(second.errors.len(), 1, "still reported to the caller");
    assert!(!second.errors[0].first, "but marked as not the first");
    // A non-boolean result at evaluation is an error too.
    let rules = Rules::compile(vec![rule("dyn", "args.flag", Decide::Deny)]).expect("compile");
    let verdict = rules.decide(&call("x", json!({"flag": "yes"})));
    assert!(verdict.matched.is_none());
    assert!(verdict.errors[0].error.contains("not a boolean"));
    let verdict = rules.decide(&call("x", json!({"flag": true})));
    assert_eq!(verdict.matched.map(|m| m.name), Some("dyn".to_owned()));
}

#[test]
fn oversized_arguments_are_not_evaluated() {
    let rules = Rules::compile(vec![
        rule("reads-args", "size(args.blob) > 0", Decide::Deny),
        rule("reads-tool", "tool == 'upload'", Decide::Ask),
    ])
    .expect("compile");
    let big = "x".repeat(clarify_core::rules::MAX_ARGS_BYTES + 1);
    let verdict = rules.decide(&call("upload", json!({ "blob": big })));
    assert_eq!(
        verdict.matched.map(|m| m.name),
        Some("reads-tool".to_owned()),
        "a rule not reading the arguments still decides"
    );
    assert!(verdict.errors[0].error.contains("bytes of JSON"));
    let mut deep = json!(1);
    for _ in 0..40 {
        deep = json!([deep]);
    }
    let verdict = rules.decide(&call("upload", json!({ "blob": deep })));
    assert!(verdict.errors[0].error.contains("deeper"));
}

#[test]
fn every_variable_is_bound() {
    let rules = Rules::compile(vec![rule(
        "all",
        "tool == 'x' && agent == 'claude-code' && session == 's1' && 'prod' in tags \
         && cwd == '/home/dev/app' && on_behalf_of == null && args.n == 1",
        Decide::Allow,
    )])
    .expect("compile");
    let verdict = rules.decide(&call("x", json!({"n": 1})));
    assert!(verdict.errors.is_empty(), "{:?}", verdict.errors);
    assert_eq!(verdict.matched.map(|m| m.name), Some("all".to_owned()));
}

#[test]
fn an_allow_or_deny_rule_answers_with_its_reason() {
    let mut deny = rule("no", "true", Decide::Deny);
    deny.reason = Some("not here".to_owned());
    let rules = Rules::compile(vec![deny]).expect("compile");
    let matched = rules
        .decide(&call("x", json!({})))
        .matched
        .expect("matched");
    assert_eq!(
        matched.answer(),
        Some(json!({"decision": "deny", "scope": "once", "reason": "not here"}))
    );
}

#[test]
fn an_ask_rules_risk_is_the_requests() {
    let raw = serde_json::json!({"question": "Wire 40,000 EUR?", "kind": "approval",
                                 "action": {"name": "wire", "arguments": {}}});
    let mut request =
        clarify_core::parse_request(&raw, &clarify_core::Limits::default()).expect("valid");
    assert_eq!(request.risk, clarify_core::Risk::Normal);
    let settings = AskSettings {
        risk: Some("high".to_owned()),
        ..AskSettings::default()
    };
    settings.apply(&mut request);
    assert_eq!(request.risk, clarify_core::Risk::High);
    // A setting left out keeps the request's own.
    AskSettings::default().apply(&mut request);
    assert_eq!(request.risk, clarify_core::Risk::High);
}
