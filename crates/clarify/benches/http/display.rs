//! The `display` benchmark: what display blocks cost a round trip, and a 2,000-line diff
//! created, read back and rendered as the inbox shows it (see `main.rs`).

use std::time::{Duration, Instant};

use serde_json::json;

use crate::{
    ANSWER_YES, BIN, PLAIN_ASK, Roundtrips, Server, key, ms, percentile, post, roundtrip_of,
};

/// A request as an agent sends one with display blocks: a change of about 20 lines, the agent's
/// reason, and a few facts.
fn display_ask() -> &'static [u8] {
    let before: String = (0..20)
        .map(|i| format!("    line {i} of the function\n"))
        .collect();
    let after = before
        .replace("line 7 of", "line seven of")
        .replace("line 13 of", "line 13, changed, of");
    let body = json!({
        "question": "Apply this change?",
        "choices": ["yes", "no"],
        "summary": "Edit src/payments.py (+2 \u{2212}2)",
        "display": [
            {"type": "markdown", "title": "Why", "text": "The refund must not exceed what was **paid**, not the order total."},
            {"type": "diff", "path": "src/payments.py", "before": before, "after": after},
            {"type": "fields", "items": [{"label": "Order", "value": "1042"}, {"label": "Amount", "value": "EUR 5,000"}]},
        ],
    });
    Box::leak(serde_json::to_vec(&body).expect("json").into_boxed_slice())
}

/// Display blocks' cost: 32-client round trips of a plain request and of one with display blocks,
/// alternating three times each; then one agent creating requests with a 2,000-line diff, and
/// the record and the inbox's display fragment read back, with their latencies.
pub(crate) async fn display(dir: &std::path::Path) {
    let with = display_ask();
    let (mut plain, mut blocks) = (Vec::new(), Vec::new());
    for _ in 0..3 {
        plain.push(
            roundtrip_of(
                dir,
                BIN,
                " (plain)",
                32,
                Duration::from_secs(5),
                &[],
                (PLAIN_ASK, ANSWER_YES),
            )
            .await,
        );
        blocks.push(
            roundtrip_of(
                dir,
                BIN,
                " (display blocks)",
                32,
                Duration::from_secs(5),
                &[],
                (with, ANSWER_YES),
            )
            .await,
        );
    }
    let mean =
        |runs: &[Roundtrips]| runs.iter().map(|r| r.per_second).sum::<f64>() / runs.len() as f64;
    println!(
        "display round trips, 32 clients, 3 runs each: plain {:.0}/s, with display blocks {:.0}/s: {:.2}x",
        mean(&plain),
        mean(&blocks),
        mean(&blocks) / mean(&plain),
    );

    let db = format!("sqlite://{}", dir.join("display-big.db").display());
    let admin = key(&db, "admin", "default");
    let server = Server::start(&db).await;
    let mut diff = String::from("@@ -1,2000 +1,2000 @@\n");
    for i in 0..2_000 {
        diff.push_str(&format!(
            "-    old line {i} of a long file\n+    new line {i} of a long file\n"
        ));
    }
    let body = json!({
        "questions": [{"text": "Allow the agent to run Edit?", "kind": "approval",
                       "action": {"name": "Edit", "arguments": {"file_path": "big.txt"}}}],
        "display": [{"type": "diff", "path": "big.txt", "diff": diff}],
    });
    let client = clarify_client::http::client().expect("an HTTP client");
    let (mut create, mut record, mut fragment) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..220 {
        let started = Instant::now();
        let created = post(
            &client,
            format!("{}/v1/requests", server.url),
            &admin,
            body.clone(),
        )
        .await;
        let made = started.elapsed();
        let id = created["id"].as_str().unwrap_or_default().to_owned();
        let started = Instant::now();
        let r = client
            .get(format!("{}/v1/requests/{id}", server.url))
            .bearer_auth(&admin)
            .send()
            .await
            .expect("sent");
        assert!(r.status().is_success(), "{}", r.status());
        let _ = r.bytes().await;
        let read = started.elapsed();
        let started = Instant::now();
        let r = client
            .get(format!("{}/display/{id}", server.url))
            .bearer_auth(&admin)
            .send()
            .await
            .expect("sent");
        assert!(r.status().is_success(), "{}", r.status());
        let html = r.bytes().await.expect("body");
        let rendered = started.elapsed();
        assert!(
            html.len() > 100_000,
            "the whole diff is rendered: {} bytes",
            html.len()
        );
        // The first 20 warm the server up.
        if i >= 20 {
            create.push(made);
            record.push(read);
            fragment.push(rendered);
        }
    }
    for series in [&mut create, &mut record, &mut fragment] {
        series.sort();
    }
    let line = |name: &str, s: &[Duration]| {
        format!(
            "{name} p50 {:.2} ms, p99 {:.2} ms",
            ms(percentile(s, 0.5)),
            ms(percentile(s, 0.99))
        )
    };
    println!(
        "display, a 2,000-line diff ({} KiB body), {} requests, one agent on SQLite: {}; {}; {}",
        serde_json::to_vec(&body).map_or(0, |b| b.len()) / 1024,
        create.len(),
        line("create", &create),
        line("the record (GET /v1/requests/{id})", &record),
        line("the inbox's rendered blocks (GET /display/{id})", &fragment),
    );
}
