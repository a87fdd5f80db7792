//! What the inbox looks like in a real browser, where a look is what a person relies on: the
//! Insights page inside the inbox's frame (its top bar, sections and buttons), the list's
//! selection boxes as real checkboxes with a name for screen readers, and a high-risk request
//! saying so in words in the list, the detail and the answer link, with step-up off.

use serde_json::{Value, json};

use crate::browser::login;
use crate::support::TestServer;
use clarify_testkit::browser::Browser;

/// The computed properties that make a button look like the inbox's.
const BUTTON_LOOK: &str = "return ['background-color', 'color', 'border-top-color', 'border-top-width', \
     'border-top-left-radius', 'font-family', 'font-size', 'font-weight', 'padding-left', \
     'padding-right', 'padding-top', 'min-height', 'height'].map((p) => \
     [p, getComputedStyle(arguments[0]).getPropertyValue(p)])";

/// The top bar's sections: label, address and whether each is marked as the current page.
const SECTIONS: &str = "return [...document.querySelectorAll('header.topbar nav a')].map((a) => \
     [a.firstChild.textContent, a.getAttribute('href'), a.getAttribute('aria-current') === 'page'])";

fn approval(text: &str, summary: &str) -> Value {
    json!({"questions": [{"kind": "approval", "text": text,
           "action": {"name": "deploy", "arguments": {"target": "prod"}}}],
           "summary": summary})
}

#[tokio::test]
async fn the_insights_page_has_the_inboxs_top_bar_sections_and_buttons() {
    let Some(b) = Browser::launch(1280, 900).await else {
        return;
    };
    let s = TestServer::start().await;
    b.run("insights_in_the_inbox_frame", async {
        s.ask(&s.admin, approval("Deploy web?", "Deploy web to prod"))
            .await;
        login(&b, &s, "alice").await;
        b.click("//a[contains(@class, 'row')][contains(., 'Deploy web')]")
            .await;
        let send = b
            .wait_for("//button[@type='submit'][. = 'Send answer']")
            .await;
        let primary = b
            .js(
                BUTTON_LOOK,
                vec![serde_json::to_value(&send).expect("element")],
            )
            .await;
        let inbox_sections = b.js(SECTIONS, vec![]).await;

        b.click("//a[@id = 'tab-insights']").await;
        b.wait_for("//h1[. = 'Insights']").await;
        let sections = b.js(SECTIONS, vec![]).await;
        assert_eq!(
            sections,
            json!([
                ["Pending", "/#/", false],
                ["History", "/#/history", false],
                ["Insights", "/insights", true],
                ["Settings", "/settings", false],
            ]),
            "the inbox's sections, with Insights the current page"
        );
        let addresses = |v: &Value| -> Vec<(Value, Value)> {
            v.as_array()
                .into_iter()
                .flatten()
                .map(|s| (s[0].clone(), s[1].clone()))
                .collect()
        };
        assert_eq!(
            addresses(&sections),
            addresses(&inbox_sections),
            "the same sections as the inbox's top bar"
        );
        let who = b
            .js(
                "return document.querySelector('header.topbar #who').textContent",
                vec![],
            )
            .await;
        assert_eq!(
            who,
            json!("aliceresponder"),
            "who is signed in, as in the inbox"
        );
        let stylesheets = b
            .js(
                "return [...document.styleSheets].map((s) => s.href.split('/').pop())",
                vec![],
            )
            .await;
        assert!(
            stylesheets
                .as_array()
                .is_some_and(|s| s.contains(&json!("clarify.css"))),
            "the inbox's stylesheet: {stylesheets}"
        );
        let show = b.wait_for("//button[. = 'Show']").await;
        let look = b
            .js(
                BUTTON_LOOK,
                vec![serde_json::to_value(&show).expect("element")],
            )
            .await;
        assert_eq!(look, primary, "Show looks like the inbox's primary button");

        // Each section's link leads to that section of the inbox.
        for (tab, arrives) in [
            ("tab-history", "//h1[@id = 'history-title']"),
            ("tab-settings", "//h1[. = 'Settings']"),
            (
                "tab-pending",
                "//a[contains(@class, 'row')][contains(., 'Deploy web')]",
            ),
        ] {
            b.goto(&format!("{}/insights", s.url)).await;
            b.wait_for("//h1[. = 'Insights']").await;
            b.click(&format!("//a[@id = '{tab}']")).await;
            b.wait_for(arrives).await;
        }
        // And Log out signs out: the Insights page then sends the browser to sign in.
        b.goto(&format!("{}/insights", s.url)).await;
        b.click("//a[@id = 'logout']").await;
        b.wait_for("//h1[. = 'Sign in to the inbox']").await;
        b.goto(&format!("{}/insights", s.url)).await;
        b.wait_for("//h1[. = 'Sign in to the inbox']").await;
        let address = b
            .js("return location.pathname + location.hash", vec![])
            .await;
        assert_eq!(
            address,
            json!("/"),
            "signed out: back at the inbox's sign-in"
        );
    })
    .await;
}

/// What Chromium tells a screen reader of each checkbox on the page: its name and whether it
/// is checked.
async fn checkboxes_heard(b: &Browser) -> Vec<(String, bool)> {
    let tree = b.cdp("Accessibility.getFullAXTree", json!({})).await;
    let nodes = tree["nodes"].as_array().cloned().unwrap_or_default();
    nodes
        .iter()
        .filter(|n| n["role"]["value"] == "checkbox" && n["ignored"] != true)
        .map(|n| {
            let name = n["name"]["value"].as_str().unwrap_or_default().to_owned();
            let checked = n["properties"].as_array().is_some_and(|props| {
                props
                    .iter()
                    .any(|p| p["name"] == "checked" && p["value"]["value"] == "true")
            });
            (name, checked)
        })
        .collect()
}

#[tokio::test]
async fn selection_boxes_are_checkboxes_with_a_name_and_a_visible_tick() {
    let Some(b) = Browser::launch(1280, 900).await else {
        return;
    };
    let s = TestServer::start().await;
    b.run("selection_boxes", async {
        s.ask(&s.admin, approval("Deploy web?", "Deploy web to prod"))
            .await;
        // No summary given: the server derives one, which the box is named by.
        let derived = s
            .ask(
                &s.admin,
                json!({"questions": [{"kind": "approval", "text": "Delete branch old?",
                       "action": {"name": "git.delete_branch", "arguments": {"branch": "old"}}}]}),
            )
            .await;
        let derived = derived["summary"].as_str().expect("a summary").to_owned();
        assert!(!derived.is_empty());
        s.ask(&s.admin, json!({"question": "Which region?"})).await;
        login(&b, &s, "alice").await;
        b.until(
            "three pending requests",
            "return document.querySelectorAll('a.row').length === 3",
            vec![],
        )
        .await;
        let mut heard = checkboxes_heard(&b).await;
        heard.sort();
        let mut expected = vec![
            ("Select: Deploy web to prod".to_owned(), false),
            (format!("Select: {derived}"), false),
        ];
        expected.sort();
        assert_eq!(
            heard, expected,
            "one named checkbox per approval, none for the open question"
        );

        // A checkbox of the usual size, drawn by the browser, in a tap target as wide as a
        // finger and as tall as its row.
        let sizes = b
            .js(
                "return [...document.querySelectorAll('.row-item input[type=checkbox]')].map((box) => { \
                   const r = box.getBoundingClientRect(); \
                   const t = (box.closest('label') || box).getBoundingClientRect(); \
                   const row = box.closest('li').querySelector('a.row').getBoundingClientRect(); \
                   return [Math.round(r.width), Math.round(r.height), getComputedStyle(box).appearance, \
                           Math.round(t.width), Math.round(t.height) === Math.round(row.height)]; })",
                vec![],
            )
            .await;
        for size in sizes.as_array().expect("sizes") {
            let (w, h) = (size[0].as_u64().unwrap_or(0), size[1].as_u64().unwrap_or(0));
            assert!(
                (12..=24).contains(&w) && (12..=24).contains(&h),
                "a checkbox's size, not a large square: {size}"
            );
            assert_eq!(size[2], "auto", "the browser's own checkbox: {size}");
            assert!(size[3].as_u64().unwrap_or(0) >= 44, "a finger-wide target: {size}");
            assert_eq!(size[4], true, "the target is as tall as its row: {size}");
        }

        // Tapping the strip beside the row (not the box itself) ticks it, visibly and for a
        // screen reader; tapping again clears it.
        let target = "//li[.//a[contains(., 'Deploy web')]]//label[contains(@class, 'select')]";
        let box_at = "//li[.//a[contains(., 'Deploy web')]]//input[@type='checkbox']";
        let clear = b
            .wait_for(box_at)
            .await
            .screenshot()
            .await
            .expect("screenshot");
        b.click(target).await;
        b.wait_for("//*[@id='batch-bar'][contains(., '1 selected')]")
            .await;
        let checked = b
            .js(
                "return document.evaluate(arguments[0], document, null, 9, null).singleNodeValue.checked",
                vec![json!(box_at)],
            )
            .await;
        assert_eq!(checked, json!(true));
        assert!(
            checkboxes_heard(&b)
                .await
                .contains(&("Select: Deploy web to prod".to_owned(), true)),
            "a screen reader hears it checked"
        );
        let ticked = b
            .wait_for(box_at)
            .await
            .screenshot()
            .await
            .expect("screenshot");
        assert_ne!(ticked, clear, "the tick shows");
        b.click(target).await;
        b.until(
            "the batch bar to go",
            "return !document.getElementById('batch-bar')",
            vec![],
        )
        .await;
        assert!(
            checkboxes_heard(&b)
                .await
                .contains(&("Select: Deploy web to prod".to_owned(), false)),
            "unchecked again"
        );
        let cleared = b
            .wait_for(box_at)
            .await
            .screenshot()
            .await
            .expect("screenshot");
        assert_ne!(cleared, ticked, "the tick goes");
    })
    .await;
}

#[tokio::test]
async fn a_high_risk_request_says_so_in_words_in_the_list_the_detail_and_its_link() {
    let Some(b) = Browser::launch(1280, 900).await else {
        return;
    };
    // Step-up is off: the risk is not checked with a passkey, but still shown.
    let s = TestServer::start().await;
    b.run("risk_marker", async {
        let mut risky = approval("Drop the orders table?", "Drop table orders");
        risky["risk"] = json!("high");
        let risky = s.ask(&s.admin, risky).await;
        assert_eq!(risky["step_up"], Value::Null, "step-up is off: {risky}");
        let normal = s
            .ask(&s.admin, approval("Rotate the logs?", "Rotate the logs"))
            .await;
        login(&b, &s, "alice").await;
        let mark = |within: &str| {
            format!(
                "const el = document.evaluate(\"{within}\", document, null, 9, null).singleNodeValue; \
                 const risk = el && el.querySelector('.risk'); \
                 return risk ? [risk.textContent, risk.getClientRects().length > 0, \
                                el.innerText.includes('High risk')] : null;"
            )
        };
        b.until(
            "both requests listed",
            "return document.querySelectorAll('a.row').length === 2",
            vec![],
        )
        .await;
        let row = |text: &str| format!("//a[contains(@class, 'row')][contains(., '{text}')]");
        assert_eq!(
            b.js(&mark(&row("Drop table")), vec![]).await,
            json!(["High risk", true, true]),
            "the list row says High risk, in words a screen reader reads with the row"
        );
        assert_eq!(b.js(&mark(&row("Rotate the logs")), vec![]).await, Value::Null);

        b.click(&row("Drop table")).await;
        b.wait_for("//div[@id='detail']//h2[. = 'Drop table orders']")
            .await;
        assert_eq!(
            b.js(&mark("//div[@id='detail']//header"), vec![]).await,
            json!(["High risk", true, true]),
            "the detail says High risk"
        );
        let step_up = b
            .js("return !!document.getElementById('step-up-notice')", vec![])
            .await;
        assert_eq!(step_up, json!(false), "no passkey asked for with step-up off");
        b.click(&row("Rotate the logs")).await;
        b.wait_for("//div[@id='detail']//h2[. = 'Rotate the logs']")
            .await;
        assert_eq!(b.js(&mark("//div[@id='detail']//header"), vec![]).await, Value::Null);

        // The answer link: its page without script, and the same view once script runs.
        for (record, shown) in [(&risky, true), (&normal, false)] {
            let url = record["answer_url"].as_str().expect("an answer link");
            let page = clarify_client::http::client()
                .expect("an HTTP client")
                .get(url)
                .send()
                .await
                .expect("the link page")
                .text()
                .await
                .expect("its text");
            assert_eq!(page.contains(">High risk<"), shown, "{page}");
            b.goto(url).await;
            b.wait_for("//main[@id = 'link']//header[contains(@class, 'request-head')]")
                .await;
            let marked = b
                .js("return [...document.querySelectorAll('.risk')].map((r) => r.textContent)", vec![])
                .await;
            let expected = if shown { json!(["High risk"]) } else { json!([]) };
            assert_eq!(marked, expected, "the link's request view");
        }
    })
    .await;
}
