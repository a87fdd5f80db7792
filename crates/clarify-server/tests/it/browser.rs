//! The web inbox in a real browser: headless Chromium against a server on a real socket.
//!
//! These tests do what a person does: log in through the one-time link (or with a key), click
//! through the answer form of every question kind, watch requests arrive and leave without a
//! reload, read the history, and use the keyboard alone at phone width. The server side is then
//! checked through the API, so a test passes only when the answer the page sent is the one
//! recorded. They run in this crate, against the in-process server, because that is the code
//! that serves the inbox and it lets a test stop and restart the server on the same port.

use std::time::Duration;

use clarify_store::{Role, StoreOptions};
use fantoccini::key::Key;
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::chrome::Browser;
use crate::support::TestServer;

const SEND: &str = "//button[@type='submit'][contains(., 'Send answer')]";
const SENT: &str = "//div[contains(@class, 'notice')][contains(., 'Answer sent.')]";
const IMG: &str = "<img src=x onerror=alert(1)>";
const SCRIPT: &str = "<script>alert(2)</script>";

/// The pending-list row whose text contains `text`.
fn row(text: &str) -> String {
    format!("//a[contains(@class, 'row')][contains(., '{text}')]")
}

/// The option button whose text contains `text`.
fn choice(text: &str) -> String {
    format!("//button[contains(@class, 'choice')][contains(., '{text}')]")
}

/// The control a `<label>` containing `text` is for.
fn field(text: &str) -> String {
    format!("//*[@id = //label[contains(., '{text}')]/@for]")
}

/// Creates a responder key `name` and logs the browser in with a one-time link for it.
async fn login(b: &Browser, s: &TestServer, name: &str) {
    let key = s
        .store
        .create_key(name, Role::Responder, "default")
        .await
        .expect("responder key");
    let link = clarify_server::login_link(&s.store, &s.url, &key.key.id)
        .await
        .expect("login link");
    b.goto(&link).await;
    b.until(
        "the inbox to open after the login link",
        "return !document.getElementById('topbar').hidden \
         && document.getElementById('live').dataset.state === 'live'",
        vec![],
    )
    .await;
}

async fn record(s: &TestServer, id: &Value) -> Value {
    let id = id.as_str().expect("an id");
    let (status, record) = s.get(&format!("/v1/requests/{id}"), &s.admin).await;
    assert_eq!(status, StatusCode::OK, "{record}");
    record
}

async fn rows(b: &Browser) -> usize {
    let n = b
        .js("return document.querySelectorAll('a.row').length", vec![])
        .await;
    usize::try_from(n.as_u64().expect("a count")).expect("small")
}

#[tokio::test]
async fn the_inbox_answers_each_kind_by_clicking_and_shows_new_requests_live() {
    let Some(b) = Browser::launch(1280, 900).await else {
        return;
    };
    let s = TestServer::start().await;
    b.run("answers_each_kind", async {
        let single = s
            .ask(
                &s.admin,
                json!({"questions": [{"header": "Region", "text": "Which region should the cluster run in?",
                        "options": [{"id": "eu", "label": "EU", "description": "Frankfurt"},
                                    {"id": "us", "label": "US", "description": "Virginia"}],
                        "recommended": "eu"}],
                       "agent": "deployer", "session": "s-1", "tags": ["infra"]}),
            )
            .await;
        let multi = s
            .ask(
                &s.admin,
                json!({"questions": [{"text": "Which markets get the launch email?", "kind": "multi",
                        "options": ["EU", "US", "Asia"]}]}),
            )
            .await;
        let open = s
            .ask(&s.admin, json!({"question": "What should the release be called?"}))
            .await;
        let approval = s
            .ask(
                &s.admin,
                json!({"questions": [{"text": "May I delete the stale branch?", "kind": "approval",
                        "action": {"name": "git.delete_branch", "arguments": {"branch": "old"}},
                        "scopes": ["once", "session"], "allow_edit": true}],
                       "context": {"repository": "clarify", "stale_days": 90}}),
            )
            .await;

        login(&b, &s, "alice").await;
        b.until(
            "four pending requests",
            "return document.querySelectorAll('a.row').length === 4",
            vec![],
        )
        .await;
        assert_eq!(
            b.client.title().await.expect("title"),
            "(4) Inbox · clarify"
        );
        let newest = b
            .js("return document.querySelector('a.row').textContent", vec![])
            .await;
        assert!(
            newest.as_str().is_some_and(|t| t.contains("stale branch")),
            "newest first: {newest}"
        );
        // Survives only if nothing below reloads the page.
        b.js("window.clarifyNoReload = true; return true", vec![])
            .await;

        // single: the recommended option is marked; one click chooses.
        b.click(&row("Which region")).await;
        b.wait_for(&format!(
            "{}[.//span[@class = 'recommended']]",
            choice("EU")
        ))
        .await;
        b.wait_for("//span[@class = 'choice-desc'][. = 'Virginia']")
            .await;
        b.click(&choice("US")).await;
        b.click(SEND).await;
        b.wait_for(SENT).await;
        let done = record(&s, &single["id"]).await;
        assert_eq!(done["status"], "answered", "{done}");
        assert_eq!(done["answered_by"], "alice");
        assert_eq!(done["outcome"]["questions"][0]["answer"], "US");
        b.until(
            "the answered request to leave the list",
            "return document.querySelectorAll('a.row').length === 3",
            vec![],
        )
        .await;

        // multi: checkboxes plus an Other text.
        b.click(&row("launch email")).await;
        b.click("//div[@class = 'check']/label[contains(., 'EU')]")
            .await;
        b.click("//div[@class = 'check']/label[contains(., 'Asia')]")
            .await;
        b.type_into(&field("Other"), "Mars").await;
        b.click(SEND).await;
        b.wait_for(SENT).await;
        let done = record(&s, &multi["id"]).await;
        assert_eq!(
            done["outcome"]["questions"][0]["answer"],
            json!(["EU", "Asia", "Mars"]),
            "{done}"
        );

        // open: a text area.
        b.click(&row("release be called")).await;
        b.type_into("//textarea[@placeholder = 'Your answer']", "Aurora")
            .await;
        b.click(SEND).await;
        b.wait_for(SENT).await;
        let done = record(&s, &open["id"]).await;
        assert_eq!(done["outcome"]["questions"][0]["answer"], "Aurora");
        assert_eq!(done["outcome"]["questions"][0]["mode"], "text");

        // approval: the action, its arguments, approve, a scope, edited arguments, a reason.
        b.click(&row("stale branch")).await;
        b.wait_for("//code[@class = 'action-name'][. = 'git.delete_branch']")
            .await;
        b.wait_for("//section[@class = 'context']/pre[contains(., '\"stale_days\": 90')]")
            .await;
        b.click(&choice("Approve")).await;
        b.click("//label[contains(., 'For this session')]").await;
        let editor = b.wait_for(&field("Arguments")).await;
        editor.clear().await.expect("editor cleared");
        editor
            .send_keys("{\"branch\": \"older\"}")
            .await
            .expect("typed");
        b.type_into(&field("Reason"), "merged long ago").await;
        b.click(SEND).await;
        b.wait_for(SENT).await;
        let q = record(&s, &approval["id"]).await["outcome"]["questions"][0].clone();
        assert_eq!(q["decision"], "approve", "{q}");
        assert_eq!(q["scope"], "session", "{q}");
        assert_eq!(q["edited_arguments"], json!({"branch": "older"}), "{q}");
        assert_eq!(q["reason"], "merged long ago", "{q}");
        b.until(
            "an empty list",
            "return document.querySelectorAll('a.row').length === 0 \
             && document.title === 'Inbox · clarify'",
            vec![],
        )
        .await;

        // A request created meanwhile appears without a reload; its agent-written text is text.
        let question = format!("Is {IMG} safe? {SCRIPT}");
        let hostile = s
            .ask(
                &s.admin,
                json!({"questions": [{"header": "<b>bold</b>", "text": question,
                        "options": [{"id": "a", "label": SCRIPT, "description": IMG}, "fine"]}],
                       "context": {"note": SCRIPT}}),
            )
            .await;
        b.until(
            "the new request in the list",
            "return [...document.querySelectorAll('a.row')].some(a => a.textContent.includes(arguments[0]))",
            vec![json!(question)],
        )
        .await;
        assert_eq!(
            b.js("return window.clarifyNoReload === true", vec![]).await,
            json!(true),
            "the page was not reloaded"
        );
        assert_eq!(b.client.title().await.expect("title"), "(1) Inbox · clarify");
        b.click(&row("safe?")).await;
        b.wait_for("//span[@class = 'question-text']").await;
        let shown = b
            .js(
                "return {
                    question: document.querySelector('.question-text').textContent,
                    header: document.querySelector('.question .chip').textContent,
                    option: document.querySelector('.choice-label').firstChild.textContent,
                    description: document.querySelector('.choice-desc').textContent,
                    context: document.querySelector('.context pre').textContent,
                    injected: document.querySelectorAll('img[src=\"x\"], img[onerror], b, main script').length,
                    scripts: document.querySelectorAll('script').length,
                }",
                vec![],
            )
            .await;
        assert_eq!(shown["question"], json!(question), "{shown}");
        assert_eq!(shown["header"], "<b>bold</b>", "{shown}");
        assert_eq!(shown["option"], SCRIPT, "{shown}");
        assert_eq!(shown["description"], IMG, "{shown}");
        assert!(
            shown["context"].as_str().is_some_and(|c| c.contains(SCRIPT)),
            "{shown}"
        );
        assert_eq!(shown["injected"], 0, "no element came from request text: {shown}");
        assert_eq!(shown["scripts"], 1, "only the inbox's own script: {shown}");
        assert!(
            b.client.get_alert_text().await.is_err(),
            "no alert was raised"
        );
        assert_eq!(record(&s, &hostile["id"]).await["status"], "pending");
    })
    .await;
}

/// Writes `docs/inbox.png` for the README: `./scripts/test -p clarify-server --test it
/// browser::readme_screenshot -- --ignored`.
#[tokio::test]
#[ignore = "writes docs/inbox.png; run it when the inbox's look changes"]
async fn readme_screenshot() {
    let Some(b) = Browser::launch(1280, 820).await else {
        return;
    };
    let s = TestServer::build("memory:", StoreOptions::default(), |_| {}).await;
    b.run("readme_screenshot", async {
        let asks = [
            json!({"question": "Which database should the billing service use?",
                   "choices": [{"label": "PostgreSQL", "description": "Two instances share it behind the load balancer"},
                               {"label": "SQLite", "description": "One file, one instance"}],
                   "recommended": "postgresql", "agent": "architect", "session": "billing-v2",
                   "tags": ["design"], "timeout_seconds": 7200}),
            json!({"questions": [{"text": "Which regions should receive the launch email?", "kind": "multi",
                    "options": ["Europe", "North America", "Asia Pacific"]}],
                   "agent": "marketing-bot", "session": "launch-q3", "tags": ["email"]}),
            json!({"question": "What should the release be called?", "agent": "release-manager",
                   "session": "release-42", "timeout_seconds": 1800}),
            json!({"questions": [{"header": "Deploy", "text": "Deploy release 42 to production?",
                    "kind": "approval",
                    "action": {"name": "kubectl.apply", "arguments": {"cluster": "prod-eu-1", "image": "billing:42", "replicas": 6}},
                    "scopes": ["once", "session", "always"], "allow_edit": true}],
                   "context": "All 1,284 tests passed. The canary has run at 5% of traffic for an hour with no errors.",
                   "agent": "deployer", "session": "release-42", "tags": ["prod", "deploy"], "timeout_seconds": 900}),
        ];
        let mut ids = Vec::new();
        for body in asks {
            ids.push(s.ask(&s.admin, body).await["id"].clone());
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        login(&b, &s, "alice").await;
        b.until(
            "four pending requests",
            "return document.querySelectorAll('a.row').length === 4",
            vec![],
        )
        .await;
        b.click(&row("Deploy release 42")).await;
        b.wait_for("//code[@class = 'action-name']").await;
        b.js("document.activeElement.blur(); return true", vec![])
            .await;
        let png = b.client.screenshot().await.expect("screenshot");
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/inbox.png");
        std::fs::create_dir_all(path.parent().expect("docs")).expect("docs directory");
        std::fs::write(&path, png).expect("screenshot written");
        eprintln!("wrote {}", path.display());
        assert_eq!(rows(&b).await, 4);
    })
    .await;
}
