//! The web inbox in a real browser: headless Chromium against a server on a real socket.
//!
//! These tests do what a person does: log in through the one-time link (or with a key), click
//! through the answer form of every question kind, watch requests arrive and leave without a
//! reload, read the history, and use the keyboard alone at phone width. The server side is then
//! checked through the API, so a test passes only when the answer the page sent is the one
//! recorded. They run in this crate, against the in-process server, because that is the code
//! that serves the inbox and it lets a test stop and restart the server on the same port.

use std::sync::Arc;
use std::time::Duration;

use chrono::{TimeDelta, Utc};
use clarify_store::{ManualClock, Role, StoreOptions};
use fantoccini::key::Key;
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::support::TestServer;
use clarify_testkit::browser::Browser;

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
pub(crate) async fn login(b: &Browser, s: &TestServer, name: &str) {
    let key = s
        .store
        .create_key(
            name,
            Role::Responder,
            "default",
            &clarify_store::Actor::system(),
        )
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
            newest
                .as_str()
                .is_some_and(|t| t.contains("git.delete_branch: branch=old")
                    && t.contains("May I delete the stale branch?")),
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
        editor.send_keys("{branch: older").await.expect("typed");
        b.type_into(&field("Reason"), "merged long ago").await;
        b.click(SEND).await;
        b.wait_for("//div[@role = 'alert'][contains(., 'not valid JSON')]")
            .await;
        assert_eq!(record(&s, &approval["id"]).await["status"], "pending");
        editor.clear().await.expect("editor cleared");
        editor
            .send_keys("{\"branch\": \"older\"}")
            .await
            .expect("typed");
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

#[tokio::test]
async fn a_failed_answer_keeps_what_was_typed_and_a_late_one_names_who_answered_first() {
    let Some(b) = Browser::launch(1280, 900).await else {
        return;
    };
    // No event stream can open, so the page learns of the other answer only when it posts.
    let s = TestServer::build("memory:", StoreOptions::default(), |c| c.max_waiters = 0).await;
    b.run("late_answer", async {
        let request = s
            .ask(
                &s.admin,
                json!({"questions": [
                    {"text": "Ship on Friday?", "options": ["yes", "no"], "allow_other": false},
                    {"text": "Notes for the release log"}]}),
            )
            .await;
        let alice = s.key(Role::Responder, "alice", "default").await;
        let bob = s.key(Role::Responder, "bob", "default").await;

        // Log in by pasting a key; a wrong one is refused with a message.
        b.goto(&format!("{}/", s.url)).await;
        b.type_into(&field("API key"), "ck_not_a_key").await;
        b.click("//button[. = 'Sign in']").await;
        b.wait_for("//div[@role = 'alert'][contains(., 'unknown or revoked')]")
            .await;
        let input = b.wait_for(&field("API key")).await;
        input.clear().await.expect("cleared");
        input.send_keys(&alice).await.expect("typed");
        b.click("//button[. = 'Sign in']").await;
        b.until(
            "the list, and the stream marked offline",
            "return document.querySelectorAll('a.row').length === 1 \
             && document.getElementById('live').dataset.state === 'offline'",
            vec![],
        )
        .await;

        // An answer the server refuses: its message shows, the typed text stays, nothing changes.
        b.click(&row("Ship on Friday?")).await;
        let notes = "Mention the new retry policy";
        b.type_into("//textarea[@placeholder = 'Your answer']", notes)
            .await;
        b.click(SEND).await;
        let alert = b
            .wait_for("//form//div[@role = 'alert'][not(@hidden)]")
            .await;
        let message = alert.text().await.expect("alert text");
        assert!(message.contains("has no answer"), "{message}");
        assert_eq!(
            b.js("return document.querySelector('fieldset[aria-invalid=\"true\"] .question-text').textContent", vec![])
                .await,
            "Ship on Friday?",
            "the question at fault is marked"
        );
        assert_eq!(
            b.js("return document.querySelector('textarea').value", vec![]).await,
            notes
        );
        assert_eq!(record(&s, &request["id"]).await["status"], "pending");

        // Someone else answers meanwhile; sending now says who, and what they answered.
        let (status, _) = s
            .post(
                &format!("/v1/requests/{}/answer", request["id"].as_str().expect("id")),
                &bob,
                json!({"answers": {"q1": {"option": "no"}, "q2": {"text": "wait for Monday"}}}),
            )
            .await;
        assert_eq!(status, StatusCode::OK);
        b.click(&choice("yes")).await;
        b.click(SEND).await;
        let banner = b
            .wait_for("//div[@role = 'alert'][contains(., 'Answered by bob')]")
            .await;
        let said = banner.text().await.expect("banner text");
        assert!(said.contains("Your answer was not sent."), "{said}");
        assert!(said.contains("wait for Monday"), "{said}");
        assert_eq!(
            b.js("const t = document.querySelector('textarea'); return [t.value, t.disabled]", vec![])
                .await,
            json!([notes, true]),
            "what was typed stays, and can no longer be sent"
        );
        let now = record(&s, &request["id"]).await;
        assert_eq!(now["answered_by"], "bob");
        assert_eq!(now["outcome"]["questions"][0]["answer"], "no");

        // Logging out ends the session: a fresh visit asks to sign in again.
        b.click("//button[. = 'Log out']").await;
        b.wait_for(&field("API key")).await;
        b.goto(&format!("{}/", s.url)).await;
        b.wait_for(&field("API key")).await;
        assert_eq!(b.client.title().await.expect("title"), "Sign in · clarify");
    })
    .await;
}

#[tokio::test]
async fn an_open_request_answered_elsewhere_says_who_and_the_history_keeps_outcomes() {
    let Some(b) = Browser::launch(1280, 900).await else {
        return;
    };
    let s = TestServer::start().await;
    b.run("history", async {
        let bob = s.key(Role::Responder, "bob", "default").await;
        let by_bob = s
            .ask(
                &s.admin,
                json!({"question": "Rotate the keys tonight?", "choices": ["yes", "no"]}),
            )
            .await;
        let cancelled = s
            .ask(&s.admin, json!({"question": "Archive the old logs?"}))
            .await;
        let skipped = s
            .ask(
                &s.admin,
                json!({"question": "Any words for the changelog?"}),
            )
            .await;
        login(&b, &s, "alice").await;
        b.until(
            "three pending requests",
            "return document.querySelectorAll('a.row').length === 3",
            vec![],
        )
        .await;

        // Bob answers the request alice has open: the page says so at once, without a click.
        b.click(&row("Rotate the keys")).await;
        b.click(&choice("yes")).await;
        let id = by_bob["id"].as_str().expect("id");
        let (status, _) = s
            .post(
                &format!("/v1/requests/{id}/answer"),
                &bob,
                json!({"option": "no"}),
            )
            .await;
        assert_eq!(status, StatusCode::OK);
        b.wait_for("//div[@role = 'alert'][contains(., 'Answered by bob')][contains(., 'no')]")
            .await;
        assert_eq!(
            b.js(
                "return document.querySelector('.request button[type=submit]').disabled",
                vec![]
            )
            .await,
            json!(true)
        );

        // A cancelled request leaves the list live.
        let cid = cancelled["id"].as_str().expect("id");
        let (status, _) = s
            .post(&format!("/v1/requests/{cid}/cancel"), &s.admin, json!({}))
            .await;
        assert_eq!(status, StatusCode::OK);
        b.until(
            "one request left",
            "return document.querySelectorAll('a.row').length === 1",
            vec![],
        )
        .await;

        // Skip.
        b.click(&row("changelog")).await;
        b.click("//button[. = 'Skip']").await;
        b.wait_for("//div[contains(@class, 'notice')][contains(., 'Skipped.')]")
            .await;
        let now = record(&s, &skipped["id"]).await;
        assert_eq!(
            (&now["status"], &now["answered_by"]),
            (&json!("skipped"), &json!("alice"))
        );

        // The history: each outcome, who resolved it and when, newest first.
        b.click("//a[@id = 'tab-history']").await;
        b.until(
            "three resolved requests",
            "return document.querySelectorAll('.history-table tbody tr').length === 3",
            vec![],
        )
        .await;
        let table = b
            .js(
                "return [...document.querySelectorAll('.history-table tbody tr')].map(tr => \
                 [...tr.cells].map(td => td.textContent))",
                vec![],
            )
            .await;
        let rows = table.as_array().expect("rows");
        let find = |q: &str| {
            rows.iter()
                .find(|r| r[0].as_str().is_some_and(|t| t.contains(q)))
                .unwrap_or_else(|| panic!("{q} is in the history: {table}"))
                .clone()
        };
        let rotated = find("Rotate the keys");
        assert!(
            rotated[1]
                .as_str()
                .is_some_and(|t| t.starts_with("answered") && t.contains("no")),
            "{rotated}"
        );
        assert_eq!(rotated[2], "bob");
        assert!(
            rotated[3].as_str().is_some_and(|t| !t.is_empty()),
            "when: {rotated}"
        );
        let archived = find("Archive the old logs");
        assert!(
            archived[1]
                .as_str()
                .is_some_and(|t| t.starts_with("cancelled")),
            "{archived}"
        );
        let changelog = find("changelog");
        assert!(
            changelog[1]
                .as_str()
                .is_some_and(|t| t.starts_with("skipped")),
            "{changelog}"
        );
        assert_eq!(changelog[2], "alice");
        assert!(
            rows[0][0].as_str().is_some_and(|t| t.contains("changelog")),
            "the latest resolution first: {table}"
        );

        // A resolution while the history is open joins it at the top, without a reload.
        let late = s
            .ask(&s.admin, json!({"question": "Bump the version?"}))
            .await;
        let lid = late["id"].as_str().expect("id");
        let (status, _) = s
            .post(
                &format!("/v1/requests/{lid}/answer"),
                &bob,
                json!({"text": "to 2.0"}),
            )
            .await;
        assert_eq!(status, StatusCode::OK);
        b.until(
            "the new resolution at the top of the history",
            "const first = document.querySelector('.history-table tbody tr'); \
             return first && first.textContent.includes('Bump the version?')",
            vec![],
        )
        .await;

        // Its detail says who answered and with what.
        b.click("//table//a[contains(., 'Rotate the keys')]").await;
        b.wait_for(
            "//div[contains(@class, 'notice')][contains(., 'Answered by bob')]//dd[. = 'no']",
        )
        .await;
    })
    .await;
}

#[tokio::test]
async fn the_keyboard_alone_answers_at_phone_width() {
    let Some(b) = Browser::launch_phone(375, 740).await else {
        return;
    };
    let s = TestServer::start().await;
    b.run("keyboard_phone", async {
        let request = s
            .ask(
                &s.admin,
                json!({"questions": [{"header": "Cache", "text": "Which cache should the service use in production from now on?",
                        "options": [{"label": "Redis", "description": "A separate server to run"},
                                    {"label": "In-process", "description": "Nothing to run, lost on restart"}]}],
                       "context": {"service": "billing-api-with-a-rather-long-name", "requests_per_second": 1200},
                       "agent": "architect", "session": "a-very-long-session-name-that-could-overflow-the-row",
                       "tags": ["performance", "infrastructure"]}),
            )
            .await;
        login(&b, &s, "alice").await;
        b.wait_for(&row("Which cache")).await;
        assert_eq!(b.js("return window.innerWidth", vec![]).await, 375);
        let fits = "return document.documentElement.scrollWidth <= window.innerWidth";
        assert_eq!(b.js(fits, vec![]).await, json!(true), "the list fits 375 px");

        b.tab_to("the request's row", "el.matches('a.row')").await;
        b.press(Key::Enter).await;
        b.until(
            "the request alone on screen, its heading focused",
            "return document.activeElement.matches('.request h2') \
             && getComputedStyle(document.querySelector('.list-panel')).display === 'none' \
             && getComputedStyle(document.querySelector('.back')).display !== 'none'",
            vec![],
        )
        .await;
        assert_eq!(b.js(fits, vec![]).await, json!(true), "the request fits 375 px");

        b.tab_to("the In-process option", "el.matches('button.choice') && el.textContent.includes('In-process')")
            .await;
        assert_ne!(
            b.js("return getComputedStyle(document.activeElement).outlineStyle", vec![])
                .await,
            "none",
            "focus is visible"
        );
        b.press(Key::Space).await;
        b.tab_to("the send button", "el.matches('button[type=submit]')").await;
        b.press(Key::Enter).await;
        b.wait_for(SENT).await;
        let done = record(&s, &request["id"]).await;
        assert_eq!(done["outcome"]["questions"][0]["answer"], "In-process", "{done}");
        assert_eq!(
            b.js("return document.activeElement.textContent", vec![]).await,
            "Next request",
            "focus moves on to the next step"
        );
    })
    .await;
}

#[tokio::test]
async fn the_answer_link_page_uses_the_same_view_and_says_when_it_is_done() {
    let Some(b) = Browser::launch(1280, 900).await else {
        return;
    };
    let s = TestServer::start().await;
    b.run("link_page", async {
        let question = format!("Restart the worker? {IMG}");
        let request = s
            .ask(
                &s.admin,
                json!({"questions": [{"text": question, "options": ["now", "tonight"], "recommended": "tonight"}]}),
            )
            .await;
        let link = request["answer_url"].as_str().expect("answer link");
        b.goto(link).await;
        b.wait_for(&format!("{}[.//span[@class = 'recommended']]", choice("tonight")))
            .await;
        let page = b
            .js(
                "return {form: document.querySelectorAll('form[method=post]').length, \
                 text: document.querySelector('.question-text').textContent, \
                 injected: document.querySelectorAll('img[src=\"x\"]').length}",
                vec![],
            )
            .await;
        assert_eq!(page["form"], 0, "the plain form gave way to the view: {page}");
        assert_eq!(page["text"], json!(question), "{page}");
        assert_eq!(page["injected"], 0, "{page}");

        b.click(&choice("tonight")).await;
        b.click(SEND).await;
        b.wait_for(SENT).await;
        let done = record(&s, &request["id"]).await;
        assert_eq!(done["outcome"]["questions"][0]["answer"], "tonight");
        assert!(done["answered_by"].is_null(), "{done}");

        b.goto(link).await;
        b.wait_for("//h1[. = 'This request is answered']").await;
        assert_eq!(
            b.js("return document.querySelectorAll('button.choice, form').length", vec![])
                .await,
            0,
            "nothing left to answer"
        );
    })
    .await;
}

#[tokio::test]
async fn the_list_catches_up_after_the_server_comes_back() {
    let Some(browser) = Browser::launch(1280, 900).await else {
        return;
    };
    let b = &browser;
    let s = TestServer::start().await;
    b.run("catches_up", async move {
        let first = s
            .ask(&s.admin, json!({"question": "Keep the staging cluster?"}))
            .await;
        login(b, &s, "alice").await;
        b.wait_for(&row("staging cluster")).await;
        b.js("window.clarifyNoReload = true; return true", vec![])
            .await;
        let (store, address) = s.halt().await;
        b.until(
            "the page to notice the dropped stream",
            "return document.getElementById('live').dataset.state !== 'live'",
            vec![],
        )
        .await;
        // While the server is down, one request is answered and another created.
        let actor = clarify_store::Actor::new("bob", "api");
        store
            .answer(
                "default",
                first["id"].as_str().expect("id"),
                &json!({"text": "yes"}),
                &actor,
            )
            .await
            .expect("answered in the store");
        let request = clarify_core::parse_request(
            &json!({"question": "Asked while the server was down?"}),
            &clarify_core::Limits::default(),
        )
        .expect("a valid request");
        store
            .create("default", request)
            .await
            .expect("created in the store");

        let s = TestServer::at(&address, store, |_| {}).await;
        b.until(
            "the list to catch up",
            "const rows = [...document.querySelectorAll('a.row')].map(a => a.textContent); \
             return document.getElementById('live').dataset.state === 'live' && rows.length === 1 \
             && rows[0].includes('Asked while the server was down?')",
            vec![],
        )
        .await;
        assert_eq!(
            b.js("return window.clarifyNoReload === true", vec![]).await,
            json!(true),
            "the page was not reloaded"
        );
        s.stop().await;
    })
    .await;
}

#[tokio::test]
async fn filters_narrow_the_live_list_and_an_expired_request_says_so() {
    let Some(b) = Browser::launch(1280, 900).await else {
        return;
    };
    let clock = Arc::new(ManualClock::new(Utc::now()));
    let s = TestServer::with_clock(clock.clone()).await;
    b.run("filters", async {
        for (question, agent, session, tag) in [
            ("Roll back the canary?", "deployer", "s1", "prod"),
            ("Rename the docs section?", "writer", "s2", "docs"),
            ("Publish the deploy guide?", "deployer", "s3", "docs"),
        ] {
            s.ask(
                &s.admin,
                json!({"question": question, "agent": agent, "session": session, "tags": [tag],
                       "timeout_seconds": 60}),
            )
            .await;
        }
        login(&b, &s, "alice").await;
        b.until("three rows", "return document.querySelectorAll('a.row').length === 3", vec![])
            .await;

        b.click("//summary[contains(., 'Filters')]").await;
        b.type_into(&field("Agent"), "deployer").await;
        b.type_into(&field("Tag"), "docs").await;
        b.click("//button[. = 'Apply filters']").await;
        b.until(
            "only the deployer's docs request",
            "const rows = [...document.querySelectorAll('a.row')]; \
             return rows.length === 1 && rows[0].textContent.includes('deploy guide') \
             && document.title === '(1) Inbox · clarify'",
            vec![],
        )
        .await;

        // New requests are filed by the same filters as they arrive.
        s.ask(
            &s.admin,
            json!({"question": "Tag the release?", "agent": "deployer", "tags": ["prod"]}),
        )
        .await;
        s.ask(
            &s.admin,
            json!({"question": "Link the changelog?", "agent": "deployer", "tags": ["docs", "prod"]}),
        )
        .await;
        b.until(
            "the matching newcomer, and only it",
            "const rows = [...document.querySelectorAll('a.row')].map(a => a.textContent); \
             return rows.length === 2 && rows[0].includes('Link the changelog?')",
            vec![],
        )
        .await;

        // The filters live in the address, so a reload keeps them.
        let here = b.client.current_url().await.expect("url");
        assert_eq!(here.query(), Some("agent=deployer&tag=docs"));
        b.goto(here.as_str()).await;
        b.until(
            "the same two rows after a reload",
            "return document.querySelectorAll('a.row').length === 2 \
             && document.getElementById('filter-agent').value === 'deployer'",
            vec![],
        )
        .await;
        b.click("//button[. = 'Clear']").await;
        b.until("all five rows", "return document.querySelectorAll('a.row').length === 5", vec![])
            .await;

        // An open request whose time runs out says so, and leaves the list.
        b.click(&row("Roll back the canary?")).await;
        b.wait_for("//span[contains(@class, 'deadline')][contains(., 'left')]")
            .await;
        clock.advance(TimeDelta::seconds(61));
        assert_eq!(s.store.expire_due().await.expect("expired"), 3);
        b.wait_for("//div[@role = 'alert'][contains(., 'nobody answered in time')]")
            .await;
        b.until(
            "the expired requests to leave",
            "return document.querySelectorAll('a.row').length === 2 \
             && document.querySelector('.request button[type=submit]').disabled",
            vec![],
        )
        .await;
    })
    .await;
}

#[tokio::test]
async fn a_request_read_before_the_event_stream_opens_shows_what_became_of_it_meanwhile() {
    let Some(b) = Browser::launch(1280, 900).await else {
        return;
    };
    let clock = Arc::new(ManualClock::new(Utc::now()));
    let s = TestServer::with_clock(clock.clone()).await;
    b.run("read_before_the_stream", async {
        let created = s
            .ask(
                &s.admin,
                json!({"question": "Restart the queue workers?", "timeout_seconds": 60}),
            )
            .await;
        let id = created["id"].as_str().expect("an id");
        login(&b, &s, "alice").await;

        // The page opens on the request while its event stream cannot connect (a proxy
        // restarting, say): the request is read, but no event can reach the page.
        b.cdp("Network.enable", json!({})).await;
        b.cdp("Network.setBlockedURLs", json!({"urls": ["*/v1/events*"]}))
            .await;
        // Only the address's fragment changes, so the page is loaded again by hand.
        b.goto(&format!("{}/#/requests/{id}", s.url)).await;
        b.client.refresh().await.expect("the page reloads");
        b.wait_for(SEND).await;
        b.until(
            "the stream to be down",
            "return document.getElementById('live').dataset.state !== 'live'",
            vec![],
        )
        .await;

        // It expires meanwhile; the stream that opens afterwards starts after that event.
        clock.advance(TimeDelta::seconds(61));
        assert_eq!(s.store.expire_due().await.expect("expired"), 1);
        b.cdp("Network.setBlockedURLs", json!({"urls": []})).await;
        b.until(
            "the stream to open",
            "return document.getElementById('live').dataset.state === 'live'",
            vec![],
        )
        .await;
        b.wait_for("//div[@role = 'alert'][contains(., 'nobody answered in time')]")
            .await;
        b.until(
            "the form to be closed and the row gone",
            "return document.querySelector('.request button[type=submit]').disabled \
             && document.querySelectorAll('a.row').length === 0",
            vec![],
        )
        .await;
    })
    .await;
}

/// The control of the form field labelled `label` (its label holds the text).
fn form_input(label: &str) -> String {
    format!("//*[@id = //label[contains(@class, 'field-label')][contains(., '{label}')]/@for]")
}

/// The inline error under the form field labelled `label`.
fn field_error(label: &str) -> String {
    format!(
        "//div[contains(@class, 'form-field')][.//label[contains(., '{label}')]]\
         //p[@class = 'field-error'][not(@hidden)]"
    )
}

#[tokio::test]
async fn a_form_is_answered_with_real_inputs_and_a_refused_value_is_fixed_inline() {
    let Some(b) = Browser::launch(1280, 900).await else {
        return;
    };
    let s = TestServer::start().await;
    b.run("form", async {
        let request = s
            .ask(
                &s.admin,
                json!({"questions": [{"id": "trip", "text": "Trip details", "kind": "form", "fields": [
                    {"id": "budget", "label": "Budget", "type": "number", "minimum": 0, "maximum": 5000,
                     "description": "In EUR, flights included", "default": 100},
                    {"id": "nights", "label": "Nights", "type": "integer", "minimum": 1},
                    {"id": "email", "label": "E-mail", "type": "text", "format": "email", "required": false,
                     "pattern": "^[a-z.]+@example[.]com$", "max_length": 200},
                    {"id": "start", "label": "Start", "type": "text", "format": "date"},
                    {"id": "ok", "label": "Agree to the terms", "type": "boolean", "default": false},
                    {"id": "plan", "label": "Plan", "type": "choice",
                     "options": [{"id": "basic", "label": "Basic", "description": "Room only"},
                                 {"id": "full", "label": "Full board"}]},
                    {"id": "extras", "label": "Extras", "type": "choices", "required": false, "max_items": 2,
                     "options": [{"id": "wifi", "label": "Wi-Fi"}, {"id": "parking", "label": "Parking"},
                                 {"id": "late", "label": "Late check-out"}]}]}],
                       "agent": "travel"}),
            )
            .await;
        login(&b, &s, "alice").await;
        b.click(&row("Trip details")).await;

        // Each type has its own control, bound to its label; the default is filled in.
        let budget = b.wait_for(&form_input("Budget")).await;
        let shown = b
            .js(
                "const by = (l) => document.getElementById([...document.querySelectorAll('label.field-label')]                      .find((x) => x.textContent.startsWith(l)).htmlFor);                  const budget = by('Budget');                  return {budget: [budget.type, budget.value, budget.min, budget.max, budget.step],                          described: document.getElementById(budget.getAttribute('aria-describedby').split(' ')[0]).textContent,                          nights: [by('Nights').type, by('Nights').step, by('Nights').required],                          email: [by('E-mail').type, by('E-mail').maxLength, by('E-mail').required],                          start: by('Start').type, ok: [by('Agree').type, by('Agree').checked],                          plan: [by('Plan').tagName, by('Plan').value],                          extras: document.querySelectorAll('fieldset.form-field input[type=checkbox]').length}",
                vec![],
            )
            .await;
        assert_eq!(shown["budget"], json!(["number", "100", "0", "5000", "any"]), "{shown}");
        assert_eq!(shown["described"], "In EUR, flights included", "{shown}");
        assert_eq!(shown["nights"], json!(["number", "1", true]), "{shown}");
        assert_eq!(shown["email"], json!(["email", 200, false]), "{shown}");
        assert_eq!(shown["start"], "date", "{shown}");
        assert_eq!(shown["ok"], json!(["checkbox", false]), "{shown}");
        assert_eq!(shown["plan"], json!(["SELECT", ""]), "{shown}");
        assert_eq!(shown["extras"], 3, "{shown}");

        // What the page can check itself is marked at once, and nothing is sent.
        budget.clear().await.expect("cleared");
        budget.send_keys("9000").await.expect("typed");
        b.click(SEND).await;
        b.wait_for(&format!("{}[contains(., 'at most 5000')]", field_error("Budget")))
            .await;
        b.wait_for(&format!("{}[contains(., 'Fill this in')]", field_error("Nights")))
            .await;
        assert_eq!(
            b.js("return document.activeElement.getAttribute('aria-invalid')", vec![]).await,
            "true",
            "the first field at fault has the focus"
        );
        assert_eq!(record(&s, &request["id"]).await["status"], "pending");

        budget.clear().await.expect("cleared");
        budget.send_keys("120").await.expect("typed");
        b.type_into(&form_input("Nights"), "2").await;
        b.type_into(&form_input("E-mail"), "bob@elsewhere.org").await;
        // A date picker's keys depend on the locale; the value it holds does not.
        b.js(
            "const start = document.querySelector('input[type=date]'); start.value = '2026-12-01';              start.dispatchEvent(new Event('input', {bubbles: true})); return true",
            vec![],
        )
        .await;
        b.click("//label[contains(., 'Agree to the terms')]").await;
        let plan = b.wait_for(&form_input("Plan")).await;
        plan.select_by_value("full").await.expect("plan chosen");
        b.click("//fieldset[contains(@class, 'form-field')]//label[contains(., 'Wi-Fi')]")
            .await;

        // The server refuses the address (its pattern), and says so next to that input; the
        // rest stays as typed.
        b.click(SEND).await;
        let error = b.wait_for(&field_error("E-mail")).await;
        let message = error.text().await.expect("error text");
        assert!(!message.starts_with("answers."), "the path is not repeated: {message}");
        let kept = b
            .js(
                "const by = (l) => document.getElementById([...document.querySelectorAll('label.field-label')]                      .find((x) => x.textContent.startsWith(l)).htmlFor);                  return [by('Budget').value, by('Nights').value, by('E-mail').value,                          by('E-mail').getAttribute('aria-invalid'), document.activeElement === by('E-mail'),                          document.querySelectorAll('p.field-error:not([hidden])').length]",
                vec![],
            )
            .await;
        assert_eq!(
            kept,
            json!(["120", "2", "bob@elsewhere.org", "true", true, 1]),
            "what was typed stays, and only the address is marked"
        );
        assert_eq!(record(&s, &request["id"]).await["status"], "pending");

        // Fixed, it is sent; the answer is typed values, and the page reads them back by label.
        let email = b.wait_for(&form_input("E-mail")).await;
        email.clear().await.expect("cleared");
        email.send_keys("bob@example.com").await.expect("typed");
        b.click(SEND).await;
        b.wait_for(&format!("{SENT}//dd[contains(., 'Budget: 120')][contains(., 'Plan: Full board')]"))
            .await;
        let done = record(&s, &request["id"]).await;
        assert_eq!(done["status"], "answered", "{done}");
        let q = &done["outcome"]["questions"][0];
        assert_eq!(q["mode"], "form", "{done}");
        assert_eq!(
            q["answer"],
            json!({"budget": 120, "nights": 2, "email": "bob@example.com", "start": "2026-12-01",
                   "ok": true, "plan": "full", "extras": ["wifi"]}),
            "{done}"
        );
    })
    .await;
}

#[tokio::test]
async fn two_responders_in_two_browsers_approve_a_request_that_needs_two_approvals() {
    let Some(alice) = Browser::launch(1280, 900).await else {
        return;
    };
    let s = TestServer::start().await;
    alice
        .run("quorum", async {
            let request = s
                .ask(
                    &s.admin,
                    json!({"questions": [{"text": "Drop the staging database?", "kind": "approval",
                            "action": {"name": "db.drop", "arguments": {"name": "staging"}}}],
                           "approvals_required": 2}),
                )
                .await;
            let id = request["id"].as_str().expect("id").to_owned();

            // The answer link cannot vote: it says who can.
            let link = request["answer_url"].as_str().expect("answer link");
            alice.goto(link).await;
            alice
                .wait_for("//div[contains(@class, 'notice')][contains(., 'needs approvals from 2 signed-in responders')]")
                .await;
            assert_eq!(
                alice
                    .js("return document.querySelectorAll('form, button.choice').length", vec![])
                    .await,
                0,
                "nothing to answer through the link"
            );

            login(&alice, &s, "alice").await;
            alice
                .wait_for(&format!("{}[.//span[contains(., '0 of 2 approvals')]]", row("Drop the staging")))
                .await;
            alice.click(&row("Drop the staging")).await;
            alice.click(&choice("Approve")).await;
            alice.click(SEND).await;
            alice
                .wait_for("//div[contains(@class, 'notice')][contains(., 'Your approval is recorded')]")
                .await;
            alice
                .wait_for("//p[@class = 'quorum'][contains(., '1 of 2 approvals')][contains(., 'approved by alice')]")
                .await;
            assert_eq!(
                alice.js("return document.querySelectorAll('.request form').length", vec![]).await,
                0,
                "a vote cast leaves nothing to send again"
            );
            let now = record(&s, &json!(id)).await;
            assert_eq!(now["status"], "pending", "{now}");
            assert_eq!(now["votes"][0]["by"], "alice", "{now}");

            // Bob, in a browser of his own, sees the first approval and gives the second.
            let bob = alice.another(1280, 900).await;
            bob.run("quorum_bob", async {
                login(&bob, &s, "bob").await;
                bob.wait_for(&format!("{}[.//span[contains(., '1 of 2 approvals')]]", row("Drop the staging")))
                    .await;
                bob.click(&row("Drop the staging")).await;
                bob.wait_for("//p[@class = 'quorum'][contains(., 'approved by alice')]")
                    .await;
                bob.click(&choice("Approve")).await;
                bob.click(SEND).await;
                bob.wait_for(SENT).await;
            })
            .await;

            let done = record(&s, &json!(id)).await;
            assert_eq!(done["status"], "answered", "{done}");
            assert_eq!(done["outcome"]["questions"][0]["decision"], "approve", "{done}");
            let voters: Vec<&str> = done["votes"]
                .as_array()
                .expect("votes")
                .iter()
                .filter_map(|v| v["by"].as_str())
                .collect();
            assert_eq!(voters, ["alice", "bob"], "{done}");

            // Alice's page learns of the outcome without a reload.
            alice
                .wait_for("//div[contains(@class, 'notice')][contains(., 'Answered by bob')]")
                .await;
            alice
                .wait_for("//p[@class = 'quorum'][contains(., '2 of 2 approvals')]")
                .await;
            alice
                .until("the list to empty", "return document.querySelectorAll('a.row').length === 0", vec![])
                .await;
        })
        .await;
}

/// Installed in the inbox tab before the page's own scripts: wraps the browser's `Notification`
/// so each notification made is recorded (it is still made, and `Notification.permission` is
/// still the browser's own), counts permission prompts, and keeps any policy violation.
const RECORDER: &str = "
    const seen = { asked: 0, notes: [], violations: [] };
    window.clarifyTest = seen;
    document.addEventListener('securitypolicyviolation',
        (e) => seen.violations.push(`${e.violatedDirective} ${e.blockedURI.slice(0, 40)}`));
    const Real = window.Notification;
    if (Real) {
        const ask = Real.requestPermission.bind(Real);
        window.Notification = class extends Real {
            constructor(title, options) {
                super(title, options);
                seen.notes.push({ title, body: options.body, tag: options.tag, note: this,
                                  hidden: document.visibilityState === 'hidden' });
            }
            static requestPermission(...args) {
                seen.asked += 1;
                return ask(...args);
            }
        };
    }";

/// A script for what the recorder saw in the inbox's `page` (`window`, or `window.opener` from
/// another tab), and the page's title; `null` while `ready` (an expression over `seen`) is false.
fn recorded(page: &str, ready: &str) -> String {
    format!(
        "const w = {page}; const seen = w.clarifyTest;
         if (!seen || !({ready})) return null;
         return {{ asked: seen.asked, violations: seen.violations, title: w.document.title,
                  permission: w.Notification.permission,
                  notes: seen.notes.map((n) => ({{ title: n.title, body: n.body, tag: n.tag, hidden: n.hidden }})) }};"
    )
}

/// A script for the tab icon of the inbox's `page`: its address, and whether the corner where
/// the count goes is red; `null` while `ready` (an expression over `href` and `red`) is false.
fn icon(page: &str, ready: &str) -> String {
    format!(
        "return (async () => {{
             const href = {page}.document.querySelector('link[rel=\"icon\"]').getAttribute('href');
             let red = false;
             if (href.startsWith('data:')) {{
                 const image = new Image();
                 image.src = href;
                 // A data: image the page's policy refuses cannot be decoded here either.
                 await image.decode().catch(() => {{
                     throw new Error('the page may not show a data: icon');
                 }});
                 const canvas = document.createElement('canvas');
                 canvas.width = 64;
                 canvas.height = 64;
                 const ctx = canvas.getContext('2d');
                 ctx.drawImage(image, 0, 0, 64, 64);
                 const [r, g, b] = ctx.getImageData(52, 12, 1, 1).data;
                 red = r > 180 && g < 80 && b < 80;
             }}
             return {ready} ? {{ href, red }} : null;
         }})()"
    )
}

async fn answer(s: &TestServer, id: &Value) {
    let id = id.as_str().expect("an id");
    let (status, body) = s
        .post(
            &format!("/v1/requests/{id}/answer"),
            &s.admin,
            json!({"answers": {"q1": {"text": "done"}}}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
}

#[tokio::test]
async fn a_hidden_inbox_notifies_of_new_requests_once_allowed_and_the_tab_shows_the_count() {
    let Some(b) = Browser::launch(1280, 900).await else {
        return;
    };
    let s = TestServer::start().await;
    b.run("notifications", async {
        let before = s
            .ask(&s.admin, json!({"question": "Was this here before the page opened?"}))
            .await;
        b.before_each_page(RECORDER).await;
        login(&b, &s, "alice").await;
        b.until(
            "the request there before",
            "return document.querySelectorAll('a.row').length === 1",
            vec![],
        )
        .await;
        assert_eq!(b.client.title().await.expect("title"), "(1) Inbox · clarify");
        let one = b.until("a tab icon with a count", &icon("window", "red"), vec![]).await;
        assert!(
            one["href"].as_str().is_some_and(|h| h.starts_with("data:image/png")),
            "{one}"
        );

        // Nothing is asked on load; "Notify me" asks, once clicked.
        let seen = b.js(&recorded("window", "true"), vec![]).await;
        assert_eq!(seen["asked"], 0, "no permission prompt on load: {seen}");
        assert_eq!(seen["permission"], "default", "{seen}");
        let ask = "//button[@id = 'notify-ask']";
        assert!(
            b.wait_for(ask).await.is_displayed().await.expect("shown"),
            "Notify me is offered"
        );
        // The person allows notifications at the browser's prompt.
        b.set_permission("notifications", "granted").await;
        b.click(ask).await;
        b.wait_for("//span[@id = 'notify-state'][not(@hidden)][. = 'Notifications on']")
            .await;
        let seen = b.js(&recorded("window", "true"), vec![]).await;
        assert_eq!(seen["asked"], 1, "{seen}");
        assert_eq!(seen["permission"], "granted", "the browser's own answer: {seen}");
        assert!(
            !b.wait_for(ask).await.is_displayed().await.expect("hidden"),
            "Notify me is gone once answered"
        );
        assert_eq!(seen["notes"], json!([]), "nothing notified: {seen}");

        // Another tab in front: the inbox's tab is now really hidden.
        let inbox = b.client.window().await.expect("the inbox tab");
        b.js(
            "window.open(document.querySelector('link[rel=\"stylesheet\"]').href); return true",
            vec![],
        )
        .await;
        let other = b
            .client
            .windows()
            .await
            .expect("tabs")
            .into_iter()
            .find(|w| *w != inbox)
            .expect("a second tab");
        b.client.switch_to_window(other).await.expect("switched");
        b.until(
            "the inbox tab to be hidden",
            "return window.opener.document.visibilityState === 'hidden'",
            vec![],
        )
        .await;

        // A new request: one notification with its text, as text, and the title counts it.
        let question = format!("Deploy {IMG} now? {SCRIPT}");
        let new = s
            .ask(&s.admin, json!({"question": question, "agent": "deployer"}))
            .await;
        let seen = b
            .until(
                "a notification",
                &recorded("window.opener", "seen.notes.length"),
                vec![],
            )
            .await;
        assert_eq!(
            seen["notes"],
            // The summary (here the question itself) titles it; the body says who asks.
            json!([{"title": question, "body": "New request from deployer", "tag": new["id"], "hidden": true}]),
            "{seen}"
        );
        assert_eq!(seen["title"], "(2) Inbox · clarify", "{seen}");
        let two = b
            .until(
                "the icon to count two",
                &icon("window.opener", "href !== arguments[0]"),
                vec![one["href"].clone()],
            )
            .await;
        assert_eq!(two["red"], true, "{two}");

        // Answered elsewhere: the count goes down, in the title and the icon.
        answer(&s, &before["id"]).await;
        b.until(
            "the title to count one",
            "return window.opener.document.title === '(1) Inbox · clarify'",
            vec![],
        )
        .await;
        b.until(
            "the icon to count one again",
            &icon("window.opener", "href === arguments[0]"),
            vec![one["href"].clone()],
        )
        .await;

        // Reloaded while hidden: what is pending at load does not notify; what comes after does.
        b.js(
            "window.opener.clarifyOld = true; window.opener.location.reload(); return true",
            vec![],
        )
        .await;
        b.until(
            "the reloaded inbox, live",
            "const w = window.opener, d = w.document;
             return !w.clarifyOld && w.clarifyTest && d.querySelectorAll('a.row').length === 1
                 && d.getElementById('live').dataset.state === 'live'",
            vec![],
        )
        .await;
        let third = s
            .ask(&s.admin, json!({"question": "And the database migration?"}))
            .await;
        let seen = b
            .until(
                "a notification after the reload",
                &recorded("window.opener", "seen.notes.length"),
                vec![],
            )
            .await;
        assert_eq!(seen["asked"], 0, "no prompt on load once granted either: {seen}");
        assert_eq!(
            seen["notes"],
            json!([{"title": "And the database migration?", "body": "New request", "tag": third["id"], "hidden": true}]),
            "only the request that arrived after load: {seen}"
        );
        assert_eq!(seen["title"], "(2) Inbox · clarify", "{seen}");

        // Back to the inbox: clicking the notification opens its request.
        b.client.switch_to_window(inbox).await.expect("switched back");
        b.until(
            "the inbox tab to be visible",
            "return document.visibilityState === 'visible'",
            vec![],
        )
        .await;
        b.js(
            "window.clarifyTest.notes[0].note.dispatchEvent(new Event('click')); return true",
            vec![],
        )
        .await;
        b.wait_for("//span[@class = 'question-text'][. = 'And the database migration?']")
            .await;
        assert_eq!(
            b.js("return location.hash", vec![]).await,
            json!(format!("#/requests/{}", third["id"].as_str().expect("id")))
        );

        // While the tab is in front, a new request shows in the list but does not notify.
        let looking = s
            .ask(&s.admin, json!({"question": "Seen while looking?"}))
            .await;
        b.wait_for(&row("Seen while looking?")).await;
        let seen = b.js(&recorded("window", "true"), vec![]).await;
        assert_eq!(seen["notes"].as_array().map(Vec::len), Some(1), "{seen}");
        assert_eq!(seen["title"], "(3) Inbox · clarify", "{seen}");

        // Nothing pending: the plain title and icon, and the policy never got in the way.
        for id in [&new["id"], &third["id"], &looking["id"]] {
            answer(&s, id).await;
        }
        b.until(
            "the plain title",
            "return document.title === 'Inbox · clarify'",
            vec![],
        )
        .await;
        let plain = b
            .until(
                "the plain icon",
                &icon("window", "!href.startsWith('data:')"),
                vec![],
            )
            .await;
        assert!(
            plain["href"].as_str().is_some_and(|h| h.ends_with("/icon.svg")),
            "{plain}"
        );
        let seen = b.js(&recorded("window", "true"), vec![]).await;
        assert_eq!(seen["violations"], json!([]), "{seen}");

        // A browser without notifications offers none.
        b.before_each_page("delete window.Notification;").await;
        b.js("window.clarifyOld = true; return true", vec![]).await;
        b.client.refresh().await.expect("reloaded");
        b.until(
            "the reloaded inbox, live",
            "return !window.clarifyOld && document.getElementById('live').dataset.state === 'live'",
            vec![],
        )
        .await;
        assert_eq!(
            b.js(
                "return [typeof window.Notification, document.getElementById('notify').hidden]",
                vec![]
            )
            .await,
            json!(["undefined", true])
        );
    })
    .await;
}

#[tokio::test]
async fn nothing_an_agent_writes_in_a_display_block_runs_in_the_inbox() {
    let Some(b) = Browser::launch(1280, 900).await else {
        return;
    };
    let s = TestServer::start().await;
    b.run("display_blocks_inert", async {
        let evil = "Plain **bold** <script>window.pwned = 'script'</script> \
                    <img src=x onerror=\"window.pwned = 'img'\"> \
                    [click](javascript:window.pwned='link') <iframe src=\"javascript:window.pwned='frame'\"></iframe>";
        s.ask(
            &s.admin,
            json!({"questions": [{"text": "Refund order A-17?", "kind": "approval",
                    "action": {"name": "refund", "arguments": {"order": "A-17"}}}],
                   "display": [{"type": "markdown", "title": "<b onmouseover=\"window.pwned='title'\">Why</b>", "text": evil},
                               {"type": "code", "language": "html", "text": "</code></pre><script>window.pwned = 'code'</script>"}]}),
        )
        .await;
        login(&b, &s, "alice").await;
        b.click(&row("refund")).await;
        b.wait_for("//div[@class = 'markdown']//strong[. = 'bold']").await;
        b.wait_for("//pre[@class = 'code']/code[contains(., '<script>window.pwned')]")
            .await;
        // Give anything that could run a moment to do so.
        tokio::time::sleep(Duration::from_millis(500)).await;
        let found = b
            .js(
                "return [window.pwned === undefined, \
                         document.querySelectorAll('.display script, .display img, .display iframe, .display [onerror], .display [onmouseover]').length, \
                         document.querySelector('.display .markdown').textContent.includes('<script>window.pwned'), \
                         document.querySelector('.display .block-title').textContent]",
                vec![],
            )
            .await;
        assert_eq!(
            found,
            json!([true, 0, true, "<b onmouseover=\"window.pwned='title'\">Why</b>"]),
            "nothing ran and the agent's markup is text"
        );
    })
    .await;
}

#[tokio::test]
async fn several_approvals_are_answered_at_once_from_the_list() {
    let Some(b) = Browser::launch(1280, 900).await else {
        return;
    };
    let s = TestServer::start().await;
    b.run("batch_answers", async {
        let mut ids = Vec::new();
        for name in ["alpha", "beta", "gamma"] {
            let mut ask = json!({"questions": [{"text": format!("Delete branch {name}?"),
                    "kind": "approval",
                    "action": {"name": "git.delete_branch", "arguments": {"branch": name}}}]});
            if name == "beta" {
                // bob's to answer: alice's batch cannot answer it.
                ask["responders"] = json!(["bob"]);
            }
            let record = s.ask(&s.admin, ask).await;
            ids.push(record["id"].clone());
        }
        let open = s
            .ask(
                &s.admin,
                json!({"question": "What should the release be called?"}),
            )
            .await;
        login(&b, &s, "alice").await;
        b.until(
            "four pending requests",
            "return document.querySelectorAll('a.row').length === 4",
            vec![],
        )
        .await;
        // Only approvals can be ticked.
        let boxes = b
            .js(
                "return document.querySelectorAll('.row-item input[type=checkbox]').length",
                vec![],
            )
            .await;
        assert_eq!(boxes, json!(3));
        // beta's item fails (alice is not its responder); the others go through.
        b.click("//li[.//a[contains(., 'branch alpha')]]//input[@type='checkbox']")
            .await;
        b.click("//li[.//a[contains(., 'branch beta')]]//input[@type='checkbox']")
            .await;
        b.wait_for("//*[@id='batch-bar'][contains(., '2 selected')]")
            .await;
        b.click("//button[@id='batch-approve']").await;
        b.wait_for("//*[@id='batch-note'][contains(., '1 approved')]")
            .await;
        let note = b
            .js(
                "return document.getElementById('batch-note').textContent",
                vec![],
            )
            .await;
        assert!(
            note.as_str().is_some_and(|t| t.contains("1 not answered")),
            "{note}"
        );
        let alpha = record(&s, &ids[0]).await;
        assert_eq!(alpha["status"], "answered", "{alpha}");
        assert_eq!(alpha["answered_by"], "alice");
        assert_eq!(alpha["outcome"]["questions"][0]["decision"], "approve");
        assert_eq!(
            record(&s, &ids[1]).await["status"],
            "pending",
            "bob's is still his"
        );
        assert_eq!(record(&s, &ids[2]).await["status"], "pending");
        assert_eq!(record(&s, &open["id"]).await["status"], "pending");
        b.until(
            "three requests left",
            "return document.querySelectorAll('a.row').length === 3",
            vec![],
        )
        .await;
    })
    .await;
}

#[tokio::test]
async fn a_suggested_standing_approval_is_made_only_by_a_click() {
    let Some(b) = Browser::launch(1280, 900).await else {
        return;
    };
    let s = TestServer::start().await;
    b.run("suggestion_accepted", async {
        let alice = s
            .store
            .create_key(
                "approver",
                Role::Responder,
                "default",
                &clarify_store::Actor::system(),
            )
            .await
            .expect("key")
            .token;
        let action = json!({"name": "deploy", "arguments": {"env": "staging"}});
        let mut last = Value::Null;
        for _ in 0..3 {
            let record = s
                .ask(
                    &s.admin,
                    json!({"questions": [{"text": "Deploy to staging?", "kind": "approval", "action": action,
                            "scopes": ["once", "always"]}]}),
                )
                .await;
            let id = record["id"].as_str().expect("id").to_owned();
            let (status, body) = s
                .post(
                    &format!("/v1/requests/{id}/answer"),
                    &alice,
                    json!({"decision": "approve", "scope": "once"}),
                )
                .await;
            assert_eq!(status, StatusCode::OK, "{body}");
            last = record["id"].clone();
        }
        // Offered, not made: no grant yet.
        let (_, grants) = s.get("/v1/grants", &s.admin).await;
        assert_eq!(grants["grants"], json!([]), "{grants}");

        login(&b, &s, "carol").await;
        b.wait_for("//section[@class='suggestions']//button[contains(., 'Always allow this')]")
            .await;
        let (_, grants) = s.get("/v1/grants", &s.admin).await;
        assert_eq!(grants["grants"], json!([]), "showing it grants nothing");
        b.click("//section[@class='suggestions']//button[contains(., 'Always allow this')]")
            .await;
        b.wait_for("//p[@class='suggestion-note'][contains(., 'now always allowed')]")
            .await;

        let (_, grants) = s.get("/v1/grants", &s.admin).await;
        let grant = &grants["grants"][0];
        assert_eq!(grant["scope"], "always", "{grants}");
        assert_eq!(grant["granted_by"], "carol", "in the name of who clicked");
        assert_eq!(grant["tool"], "deploy");
        assert_eq!(grant["arguments"], json!({"env": "staging"}));
        assert_eq!(grant["request_id"], last);
        let (_, audit) = s.get("/v1/audit?limit=100", &s.admin).await;
        let accepted: Vec<&Value> = audit["events"]
            .as_array()
            .expect("events")
            .iter()
            .filter(|e| e["kind"] == "grant.suggested_accepted")
            .collect();
        assert_eq!(accepted.len(), 1, "{audit}");
        assert_eq!(accepted[0]["actor"], "carol");
        assert_eq!(accepted[0]["request_id"], last);
        // The next identical call runs without asking.
        let (_, checked) = s
            .post("/v1/grants/check", &s.admin, json!({"action": action}))
            .await;
        assert_eq!(checked["granted"], true, "{checked}");
        // And the suggestion is gone.
        let (_, suggestions) = s.get("/v1/suggestions", &alice).await;
        assert_eq!(suggestions["suggestions"], json!([]), "{suggestions}");
    })
    .await;
}
