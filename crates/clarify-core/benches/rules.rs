//! What `[[rules]]` cost per created approval: `Call::of` on the request and `Rules::decide`
//! with 100 rules, as the store runs them on every create. Prints p50, p99 and max per decision.
//!
//! `cargo bench -p clarify-core --bench rules`
//!
//! - `mixed`: 100 rules as a configuration would have them: 90 for other tools (a name pattern
//!   each, with a condition over the arguments), 10 for every tool (`*`) with conditions that do
//!   not match; the call is decided by none, so every rule is looked at and 10 conditions run.
//! - `all-conditions`: 100 rules for every tool, each with a condition over the arguments that
//!   does not match: 100 conditions run per decision (the worst case for 100 rules).
//! - `none`: no rules (the store skips the rules entirely then; this is `Call::of` alone).

use std::hint::black_box;
use std::time::{Duration, Instant};

use clarify_core::rules::{AskSettings, Call, Decide, RuleSpec, Rules};
use clarify_core::{Limits, parse_request};
use serde_json::json;

const SAMPLES: usize = 20_000;

fn rule(name: String, tool: &str, when: String) -> RuleSpec {
    RuleSpec {
        name,
        tool: Some(tool.to_owned()),
        when: Some(when),
        decide: Decide::Deny,
        reason: None,
        ask: AskSettings::default(),
    }
}

fn mixed() -> Vec<RuleSpec> {
    let mut specs: Vec<RuleSpec> = (0..90)
        .map(|i| {
            rule(
                format!("tool-{i}"),
                &format!("tool_{i}"),
                format!("has(args.amount) && args.amount > {i}"),
            )
        })
        .collect();
    for i in 0..10 {
        specs.push(rule(
            format!("any-{i}"),
            "*",
            format!("has(args.namespace) && args.namespace.startsWith('prod-{i}')"),
        ));
    }
    specs
}

fn all_conditions() -> Vec<RuleSpec> {
    (0..100)
        .map(|i| {
            rule(
                format!("any-{i}"),
                "*",
                format!(
                    "args.env == 'prod-{i}' || (has(args.replicas) && args.replicas > {})",
                    1000 + i
                ),
            )
        })
        .collect()
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn run(name: &str, specs: Vec<RuleSpec>) {
    let rules = Rules::compile(specs).expect("the rules compile");
    let request = parse_request(
        &json!({"questions": [{"text": "Deploy?", "kind": "approval",
            "action": {"name": "deploy", "arguments": {"env": "staging", "replicas": 3,
                "image": "registry.example.com/app:1.42", "reason": "release 1.42"}}}],
            "agent": "deployer", "session": "s-1", "tags": ["release"]}),
        &Limits::default(),
    )
    .expect("a valid request");
    // Warm up.
    for _ in 0..2_000 {
        let call = Call::of(&request).expect("one approval");
        black_box(rules.decide(&call));
    }
    let mut times = Vec::with_capacity(SAMPLES);
    for _ in 0..SAMPLES {
        let started = Instant::now();
        let call = Call::of(black_box(&request)).expect("one approval");
        let verdict = if rules.is_empty() {
            None
        } else {
            Some(rules.decide(&call))
        };
        black_box(verdict);
        times.push(started.elapsed());
    }
    times.sort();
    println!(
        "rules {name}: {} rules, {SAMPLES} decisions: p50 {:.2} µs, p99 {:.2} µs, max {:.2} µs per created approval",
        rules.len(),
        percentile(&times, 0.5).as_secs_f64() * 1e6,
        percentile(&times, 0.99).as_secs_f64() * 1e6,
        times[times.len() - 1].as_secs_f64() * 1e6,
    );
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let want = |name: &str| args.is_empty() || args.iter().any(|a| a == name);
    if want("none") {
        run("none", Vec::new());
    }
    if want("mixed") {
        run("mixed", mixed());
    }
    if want("all-conditions") {
        run("all-conditions", all_conditions());
    }
}
