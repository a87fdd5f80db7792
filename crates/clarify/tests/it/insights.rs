//! The insights end to end, on one SQLite store that a real `clarify serve` fills: the inbox's
//! Insights page in Chromium at desktop and phone width (under the inbox's top bar, its filters
//! in the address, nothing scrolling sideways, a screenshot of each for the handbook), and
//! `clarify report` in each format against the same store while it serves: JSON with every
//! decision and the audit chain's head, whose verify command really verifies; CSV with one line
//! per decision; HTML opened in Chromium, where it shows its charts with no request leaving the
//! page; and the same report read from the running server over HTTP (`--url`) with an admin key.

use std::path::Path;
use std::process::Command;

use clarify_testkit::browser::Browser;
use serde_json::{Value, json};

use crate::support::{Api, BIN, Server, temp_dir};

fn approval(tool: &str, summary: &str) -> Value {
    json!({"questions": [{"kind": "approval", "text": format!("Run {tool}?"),
           "action": {"name": tool, "arguments": {"target": "prod"}}}],
           "agent": "deployer", "summary": summary, "tags": ["prod"]})
}

async fn decide(api: &Api, body: Value, answer: Value) -> String {
    let (status, record) = api.post("/v1/requests", body).await;
    assert_eq!(status, 201, "{record}");
    let id = record["id"].as_str().expect("id").to_owned();
    let (status, outcome) = api.post(&format!("/v1/requests/{id}/answer"), answer).await;
    assert_eq!(status, 200, "{outcome}");
    id
}

fn report(db: &str, format: &str, out: &Path) -> String {
    let ran = Command::new(BIN)
        .args([
            "report", "--since", "1d", "--format", format, "--db", db, "--out",
        ])
        .arg(out)
        .env("NO_COLOR", "1")
        .output()
        .expect("clarify report runs");
    assert!(
        ran.status.success(),
        "clarify report --format {format}: {}",
        String::from_utf8_lossy(&ran.stderr)
    );
    std::fs::read_to_string(out).expect("report written")
}

#[tokio::test]
async fn the_insights_page_and_the_report_show_the_decisions_made() {
    let dir = temp_dir("insights");
    let db = format!("sqlite://{}", dir.join("clarify.db").display());
    let server = Server::start(&db, &[]).await;
    let key = server.admin_key().await;
    let login = server.printed(|w| w.contains("/login/")).await;
    let api = Api::new(&server.url, &key);
    let approve = json!({"decision": "approve"});
    for _ in 0..3 {
        decide(
            &api,
            approval("deploy", "Deploy web to prod"),
            approve.clone(),
        )
        .await;
    }
    decide(
        &api,
        approval("deploy", "Deploy db to prod"),
        json!({"decision": "revise", "reason": "run the migration first"}),
    )
    .await;
    decide(
        &api,
        approval("drop_table", "Drop table orders"),
        json!({"decision": "deny", "reason": "never in prod"}),
    )
    .await;
    decide(
        &api,
        json!({"question": "Which region?", "agent": "planner"}),
        json!({"text": "eu-west"}),
    )
    .await;
    let (status, _) = api
        .post("/v1/requests", approval("shell", "Run a shell"))
        .await;
    assert_eq!(status, 201);

    // The page, at desktop and phone width.
    for phone in [false, true] {
        let launched = if phone {
            Browser::launch_phone(390, 844).await
        } else {
            Browser::launch(1280, 900).await
        };
        let Some(b) = launched else { continue };
        let name = if phone {
            "insights_phone"
        } else {
            "insights_desktop"
        };
        b.run(name, async {
            if phone {
                b.goto(&server.url).await;
                b.type_into("//input[@type = 'password']", &key).await;
                b.click("//button[@type = 'submit']").await;
            } else {
                b.goto(&login).await;
            }
            b.until(
                "the inbox, signed in",
                "return !document.getElementById('topbar').hidden",
                vec![],
            )
            .await;
            if phone {
                b.goto(&format!("{}/insights", server.url)).await;
            } else {
                b.click("//a[@id = 'tab-insights']").await;
            }
            b.wait_for("//h1[. = 'Insights']").await;
            // In the inbox's frame: its top bar, with this section the current one.
            let current = b
                .js("return document.querySelector('header.topbar a[aria-current=page]').textContent", vec![])
                .await;
            assert_eq!(current, json!("Insights"));
            let tile = |label: &str| {
                format!("return [...document.querySelectorAll('dl.tiles div')].find((d) => d.querySelector('dt').textContent === '{label}').querySelector('dd').textContent")
            };
            assert_eq!(b.js(&tile("Answered"), vec![]).await, json!("6"));
            assert_eq!(b.js(&tile("Pending now"), vec![]).await, json!("1"));
            let tools = b
                .js(
                    "return [...document.querySelectorAll('table.bars th')].map((th) => th.textContent)",
                    vec![],
                )
                .await;
            let tools: Vec<String> = serde_json::from_value(tools).expect("labels");
            assert_eq!(tools[..2], ["deploy".to_owned(), "drop_table".to_owned()]);
            assert!(tools.contains(&"admin".to_owned()), "{tools:?}");
            let series = b
                .js("return document.querySelectorAll('svg.series polyline, svg.series circle').length", vec![])
                .await;
            assert!(series.as_u64().unwrap_or(0) >= 1, "the time series is drawn");
            // Nothing scrolls sideways, and no script ran or was asked for.
            let sideways = b
                .js("return document.documentElement.scrollWidth > window.innerWidth + 1", vec![])
                .await;
            assert_eq!(sideways, json!(false), "the page scrolls sideways");
            let scripts = b.js("return document.scripts.length", vec![]).await;
            assert_eq!(scripts, json!(0));
            let png = b.client.screenshot().await.expect("screenshot");
            keep_screenshot(name, &png);
            // The filters are the address: the form's Show keeps them there.
            b.goto(&format!("{}/insights?tool=drop_table", server.url)).await;
            b.wait_for("//h1[. = 'Insights']").await;
            assert_eq!(b.js(&tile("Answered"), vec![]).await, json!("1"));
            let field = b
                .js("return document.querySelector('input[name=tool]').value", vec![])
                .await;
            assert_eq!(field, json!("drop_table"));
            b.click("//button[. = 'Show']").await;
            b.wait_for("//h1[. = 'Insights']").await;
            let address = b.js("return location.search", vec![]).await;
            assert!(
                address.as_str().unwrap_or_default().contains("tool=drop_table"),
                "{address}"
            );
        })
        .await;
    }

    // The report, in each format, from the store while it serves.
    let json_text = report(&db, "json", &dir.join("report.json"));
    let doc: Value = serde_json::from_str(&json_text).expect("JSON report");
    let decisions = doc["decisions"].as_array().expect("decisions");
    assert_eq!(decisions.len(), 6, "every resolved request: {doc}");
    let revised = decisions
        .iter()
        .find(|d| d["decision"] == "revise")
        .expect("the revision");
    assert_eq!(revised["shown"], "Deploy db to prod");
    assert_eq!(revised["reason"], "run the migration first");
    assert_eq!(revised["answered_by"], "admin");
    assert_eq!(revised["answered_via"], "api");
    assert!(revised["seconds_to_decide"].as_f64().is_some());
    // Each decision names its signed receipt (the same over HTTP, compared below).
    let jti = revised["receipt_jti"].as_str().expect("the receipt's jti");
    assert!(
        jti.starts_with(&format!("{}@", revised["id"].as_str().unwrap_or("?"))),
        "{jti}"
    );
    assert_eq!(doc["insights"]["by_status"]["answered"], 6);
    assert!(doc["duties"].as_array().is_some_and(|d| {
        d.iter()
            .any(|d| d["source"].as_str().unwrap_or("").contains("Article 14"))
    }));
    let audit = &doc["audit"];
    assert_eq!(audit["verified"], true);
    let (status, events) = api.get("/v1/audit?limit=1000").await;
    assert_eq!(status, 200);
    let newest = events["events"]
        .as_array()
        .and_then(|e| e.last())
        .cloned()
        .expect("events");
    assert_eq!(audit["head_seq"], newest["seq"]);
    assert_eq!(audit["head_hash"], newest["hash"]);
    let command = audit["verify_command"].as_str().expect("command");
    assert_eq!(command, format!("clarify audit verify --db {db}"));
    let verified = Command::new(BIN)
        .args(command.split_whitespace().skip(1))
        .output()
        .expect("verify runs");
    assert!(
        verified.status.success(),
        "{}",
        String::from_utf8_lossy(&verified.stderr)
    );

    let csv = report(&db, "csv", &dir.join("report.csv"));
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 7, "a header and one line per decision: {csv}");
    assert!(lines[0].starts_with("id,created_at,resolved_at,status,agent"));
    assert!(
        csv.contains("Drop table orders,deny,never in prod,admin,api,"),
        "{csv}"
    );

    // The same report read from the server over HTTP with the admin key: the same decisions,
    // figures and chain head, without the store.
    let over_http = |format: &str, token: &str| {
        Command::new(BIN)
            .args([
                "report",
                "--since",
                "1d",
                "--format",
                format,
                "--url",
                &server.url,
            ])
            .env("CLARIFY_TOKEN", token)
            .env("CLARIFY_DB", "sqlite:///nonexistent/clarify.db")
            .output()
            .expect("clarify report --url runs")
    };
    let ran = over_http("json", &key);
    assert!(
        ran.status.success(),
        "{}",
        String::from_utf8_lossy(&ran.stderr)
    );
    let remote: Value = serde_json::from_slice(&ran.stdout).expect("JSON report over HTTP");
    assert_eq!(
        remote["decisions"], doc["decisions"],
        "the same decisions, in the same order"
    );
    assert_eq!(remote["insights"], doc["insights"], "the same figures");
    assert_eq!(remote["tenant"], "default");
    assert_eq!(remote["audit"]["head_seq"], audit["head_seq"]);
    assert_eq!(remote["audit"]["head_hash"], audit["head_hash"]);
    assert_eq!(
        remote["audit"]["verified"],
        Value::Null,
        "not checked over HTTP"
    );
    let ran = over_http("csv", &key);
    assert!(ran.status.success());
    assert_eq!(String::from_utf8_lossy(&ran.stdout), csv, "the same CSV");
    let ran = over_http("html", &key);
    let remote_html = String::from_utf8_lossy(&ran.stdout);
    assert!(
        remote_html.contains("was not checked"),
        "the HTML says the chain was not verified"
    );
    let responder = crate::support::create_key(&db, "responder", "reader", "default");
    let ran = over_http("json", &responder);
    assert!(!ran.status.success(), "a responder key makes no report");
    assert!(
        String::from_utf8_lossy(&ran.stderr).contains("needs an admin key"),
        "{}",
        String::from_utf8_lossy(&ran.stderr)
    );

    let html_path = dir.join("report.html");
    let html = report(&db, "html", &html_path);
    assert!(html.contains("Logging and human-oversight duties"));
    assert!(html.contains(command));
    let Some(b) = Browser::launch(1100, 900).await else {
        return;
    };
    b.run("report_html", async {
        b.goto(&format!("file://{}", html_path.display())).await;
        b.wait_for("//h2[. = 'Every decision']").await;
        let requested = b
            .js("return performance.getEntriesByType('resource').length", vec![])
            .await;
        assert_eq!(requested, json!(0), "the report fetched something");
        let drawn = b
            .js("return document.querySelectorAll('svg.series, svg.bar').length", vec![])
            .await;
        assert!(drawn.as_u64().unwrap_or(0) >= 4, "charts drawn: {drawn}");
        let rows = b
            .js("return document.querySelectorAll('h2 ~ table.decisions')[1].querySelectorAll('tbody tr').length", vec![])
            .await;
        assert_eq!(rows, json!(6));
    })
    .await;
}

/// Keeps a screenshot beside the build; with `CLARIFY_SCREENSHOTS=1` (`./scripts/screenshot`),
/// also as the handbook's pictures of the Insights page.
fn keep_screenshot(name: &str, png: &[u8]) {
    let dir = std::env::temp_dir().join("clarify-screenshots");
    if std::fs::create_dir_all(&dir).is_ok() {
        let _ = std::fs::write(dir.join(format!("{name}.png")), png);
    }
    if std::env::var("CLARIFY_SCREENSHOTS").as_deref() == Ok("1") {
        let images = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/src/images");
        let target = images.join(match name {
            "insights_desktop" => "insights.png",
            _ => "insights-phone.png",
        });
        std::fs::write(&target, png).expect("screenshot written");
        eprintln!("wrote {}", target.display());
    }
}
