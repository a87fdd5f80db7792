//! The inbox on phones and tablets, under Chromium's device emulation (three device pixels to a
//! CSS pixel, touch, a mobile user agent): every page, at every width from the smallest phone
//! (360 CSS pixels) to a tablet on its side (1,024), is laid out at the device's width (a page
//! too wide would be zoomed out, and every word would shrink), never scrolls sideways, has
//! inputs of at least 16 px (smaller ones make a phone zoom in on focus) and tap targets of at
//! least 44 px; and a person signs out from the account menu at phone width. A screenshot of
//! each page at each width is kept in the temporary directory (`clarify-screenshots/fit-*.png`)
//! to look at.

use std::fmt::Write;

use clarify_store::{Role, StoreOptions};
use serde_json::{Value, json};

use crate::passkeys::authenticator;
use crate::support::TestServer;
use clarify_testkit::browser::Browser;

/// The widths: small and common phones (360, 390), the largest phones (430), a 7-inch tablet
/// (600), an iPad mini (744), an iPad upright (768) and on its side (1,024).
const WIDTHS: [u32; 7] = [360, 390, 430, 600, 744, 768, 1024];

/// What a page measures: the layout viewport's width, the document's, and what breaks the
/// rules (inputs under 16 px, visible tap targets under 44 × 44 px, named so a failure says
/// which). A checkbox or radio button counts with its label, which takes the same tap.
const MEASURE: &str = r#"
const shown = (el) => {
  const r = el.getBoundingClientRect();
  return r.width > 0 && r.height > 0 && getComputedStyle(el).visibility !== 'hidden';
};
const name = (el) => {
  const text = (el.getAttribute('aria-label') || el.textContent || el.value || '').trim().slice(0, 24);
  return `${el.tagName.toLowerCase()}${el.id ? '#' + el.id : ''}${el.classList.length ? '.' + [...el.classList].join('.') : ''} "${text}"`;
};
const small_inputs = [];
for (const el of document.querySelectorAll('input, textarea, select')) {
  if (['checkbox', 'radio', 'hidden'].includes(el.type) || !shown(el)) continue;
  const size = parseFloat(getComputedStyle(el).fontSize);
  if (size < 16) small_inputs.push(`${name(el)} ${size}px`);
}
const small_targets = [];
const targets = 'button, summary, select, textarea, input:not([type=hidden]), a.btn, a.row, header a, .back, .history-table a';
for (const el of document.querySelectorAll(targets)) {
  if (!shown(el)) continue;
  const candidates = el.matches('input[type=checkbox], input[type=radio]') ? [el, ...el.labels] : [el];
  const fits = candidates.some((c) => {
    const r = c.getBoundingClientRect();
    return Math.round(r.width) >= 44 && Math.round(r.height) >= 44;
  });
  if (!fits) {
    const r = el.getBoundingClientRect();
    small_targets.push(`${name(el)} ${Math.round(r.width)}x${Math.round(r.height)}`);
  }
}
return {
  inner: window.innerWidth,
  scroll: document.documentElement.scrollWidth,
  ratio: window.devicePixelRatio,
  touch: navigator.maxTouchPoints > 0,
  small_inputs,
  small_targets,
};
"#;

/// One page's figures at one width.
#[derive(Debug)]
struct Measured {
    page: String,
    width: u32,
    figures: Value,
}

impl Measured {
    /// What is wrong with the page at its width, if anything.
    fn faults(&self) -> Vec<String> {
        let f = &self.figures;
        let mut faults = Vec::new();
        if f["inner"] != json!(self.width) {
            faults.push(format!("innerWidth {} (zoomed out)", f["inner"]));
        }
        if f["scroll"]
            .as_u64()
            .is_none_or(|w| w > u64::from(self.width))
        {
            faults.push(format!("scrollWidth {} (scrolls sideways)", f["scroll"]));
        }
        if f["ratio"] != json!(3) || f["touch"] != json!(true) {
            faults.push(format!(
                "not a phone: pixel ratio {}, touch {}",
                f["ratio"], f["touch"]
            ));
        }
        for (key, what) in [
            ("small_inputs", "inputs under 16 px"),
            ("small_targets", "tap targets under 44 px"),
        ] {
            if f[key].as_array().is_some_and(|a| !a.is_empty()) {
                faults.push(format!("{what}: {}", f[key]));
            }
        }
        faults
    }
}

/// Opens `url` and waits until `ready` (a script) holds, then measures the page.
async fn measure(b: &Browser, page: &str, width: u32, url: &str, ready: &str) -> Measured {
    b.goto(url).await;
    b.until(page, ready, vec![]).await;
    let figures = b.js(MEASURE, vec![]).await;
    keep_screenshot(b, &format!("fit-{width}-{}", page.replace(' ', "-"))).await;
    Measured {
        page: page.to_owned(),
        width,
        figures,
    }
}

/// A diff of many lines, some far longer than any phone is wide.
fn long_diff() -> String {
    let mut diff = String::from("--- a/src/config.rs\n+++ b/src/config.rs\n@@ -1,40 +1,40 @@\n");
    for i in 0..40 {
        let _ = writeln!(
            diff,
            "-    let setting_{i} = std::env::var(\"CLARIFY_SETTING_NUMBER_{i}\").unwrap_or_else(|_| \"a default that is much longer than a phone is wide\".to_owned());"
        );
        let _ = writeln!(
            diff,
            "+    let setting_{i} = settings.get(\"setting_{i}\").cloned().unwrap_or_default();"
        );
    }
    diff
}

/// The requests the pages show: an approval of an edit with a long diff, a form, a quorum
/// approved once, three answered approvals (the history and the charts), and one with an
/// answer link; the inbox's addresses of the first three and the answer link.
async fn requests(s: &TestServer, base: &str) -> (Vec<String>, String) {
    let bob = s.key(Role::Responder, "bob", "default").await;
    let edit = json!({
        "summary": "Read settings from the config file instead of the environment",
        "questions": [{"text": "Apply this edit?", "kind": "approval", "scopes": ["once", "session"],
                       "action": {"name": "Edit", "arguments": {"file_path": "src/config.rs"}}}],
        "display": [{"type": "diff", "path": "src/config.rs", "diff": long_diff()}],
        "agent": "claude-code",
        "session": "a-session-name-that-goes-on-and-on-without-a-break",
        "tags": ["infra"]});
    let form = json!({
        "questions": [{"id": "trip", "text": "Trip details", "kind": "form", "fields": [
            {"id": "budget", "label": "Budget", "type": "number", "description": "In EUR"},
            {"id": "email", "label": "E-mail", "type": "text", "format": "email"},
            {"id": "start", "label": "Start", "type": "text", "format": "date"},
            {"id": "note", "label": "Note", "type": "text"},
            {"id": "ok", "label": "Agree to the terms", "type": "boolean"},
            {"id": "plan", "label": "Plan", "type": "choice",
             "options": [{"id": "basic", "label": "Basic"}, {"id": "full", "label": "Full board"}]},
            {"id": "extras", "label": "Extras", "type": "choices", "required": false,
             "options": [{"id": "wifi", "label": "Wi-Fi"}, {"id": "parking", "label": "Parking"}]}]}],
        "agent": "travel"});
    let quorum = json!({
        "summary": "Drop the staging database",
        "questions": [{"text": "Drop the staging database?", "kind": "approval",
                       "action": {"name": "db.drop", "arguments": {"name": "staging"}}}],
        "approvals_required": 2});
    let mut shown = Vec::new();
    for body in [edit, form, quorum] {
        let id = s.ask(&s.admin, body).await["id"]
            .as_str()
            .expect("id")
            .to_owned();
        shown.push(format!("{base}/#/requests/{id}"));
    }
    let answer = |id: String, decision: &'static str| {
        let bob = bob.clone();
        async move {
            let (status, _) = s
                .post(
                    &format!("/v1/requests/{id}/answer"),
                    &bob,
                    json!({"decision": decision}),
                )
                .await;
            assert!(status.is_success(), "bob's answer: {status}");
        }
    };
    let quorum_id = shown[2].rsplit('/').next().expect("id").to_owned();
    answer(quorum_id, "approve").await;
    for (i, decision) in ["approve", "deny", "approve"].into_iter().enumerate() {
        let done = s
            .ask(
                &s.admin,
                json!({"summary": format!("Restart worker {i} of the nightly batch pipeline"),
                       "questions": [{"text": "Restart it?", "kind": "approval",
                                      "action": {"name": "Bash",
                                                 "arguments": {"command": "systemctl restart worker"}}}],
                       "agent": "ops-bot"}),
            )
            .await;
        answer(done["id"].as_str().expect("id").to_owned(), decision).await;
    }
    let link = s
        .ask(
            &s.admin,
            json!({"questions": [{"text": "Restart the worker now or tonight?",
                                  "options": ["now", "tonight"]}]}),
        )
        .await["answer_url"]
        .as_str()
        .expect("an answer link")
        .to_owned();
    (shown, link)
}

#[tokio::test]
async fn every_page_fits_every_width_from_a_phone_to_a_tablet() {
    if clarify_testkit::browser::chromedriver().is_none() {
        return;
    }
    // At `localhost`, not an IP address, which a passkey cannot be made for.
    let s = TestServer::build("memory:", StoreOptions::default(), |c| {
        c.public_url = c.public_url.replace("127.0.0.1", "localhost");
    })
    .await;
    let base = s.url.replace("127.0.0.1", "localhost");
    let (shown, link) = requests(&s, &base).await;
    let url = |path: &str| format!("{base}{path}");
    // Each page: its name, its address, and what says it has been drawn.
    let signed_out = [
        (
            "sign-in",
            url("/"),
            "return document.getElementById('key') !== null",
        ),
        (
            "offline",
            url("/offline"),
            "return document.getElementById('offline') !== null",
        ),
        (
            "answer link",
            link,
            "return document.querySelector('.question .choice') !== null",
        ),
        (
            "link a chat account",
            url("/link/unused?account=slack%3AU012ABCDEF"),
            "return document.getElementById('signed-in') !== null",
        ),
    ];
    let signed_in = [
        (
            "pending",
            url("/#/"),
            "return document.querySelectorAll('a.row').length === 4",
        ),
        (
            "approval with a long diff",
            shown[0].clone(),
            "return document.querySelector('table.diff-lines tr.add') !== null",
        ),
        (
            "form",
            shown[1].clone(),
            "return document.querySelector('.form-field select') !== null",
        ),
        (
            "quorum",
            shown[2].clone(),
            "return document.querySelector('p.quorum') !== null",
        ),
        (
            "history",
            url("/#/history"),
            "return document.querySelectorAll('.history-table tbody tr').length >= 3",
        ),
        (
            "insights",
            url("/insights"),
            "return document.querySelector('.insights svg') !== null",
        ),
        (
            "settings",
            url("/settings"),
            "return document.querySelector('li.passkey') !== null",
        ),
    ];

    // A browser for each width: chromedriver's device emulation applies its own screen again
    // on every page load, so a width set later through the DevTools protocol lasts one page.
    let mut measured = Vec::new();
    for width in WIDTHS {
        let Some(browser) = Browser::launch_phone(width, 800).await else {
            return;
        };
        let b = &browser;
        b.run(&format!("every_width_{width}"), async {
            for (page, address, ready) in &signed_out {
                measured.push(measure(b, page, width, address, ready).await);
            }
            sign_in_with_a_passkey_added(b, &s, &base, width).await;
            for (page, address, ready) in &signed_in {
                measured.push(measure(b, page, width, address, ready).await);
            }
            // Sign-out, from the account menu, at phone widths.
            if width == 360 || width == 430 {
                sign_out(b, &base, width).await;
            }
        })
        .await;
    }

    let mut report = String::new();
    let mut faults = 0;
    for m in &measured {
        let found = m.faults();
        faults += found.len();
        let _ = writeln!(
            report,
            "{:>5} {:<28} innerWidth {:>5} scrollWidth {:>5}{}",
            m.width,
            m.page,
            m.figures["inner"],
            m.figures["scroll"],
            if found.is_empty() {
                String::new()
            } else {
                format!("  {}", found.join("; "))
            }
        );
    }
    eprintln!("{report}");
    assert_eq!(faults, 0, "pages that do not fit:\n{report}");
}

/// Signs a new person in at `base` with a one-time login link, and adds a passkey on the
/// settings page (with a virtual authenticator), so that the page lists one.
async fn sign_in_with_a_passkey_added(b: &Browser, s: &TestServer, base: &str, width: u32) {
    let key = s
        .store
        .create_key(
            &format!("alice-{width}"),
            Role::Responder,
            "default",
            &clarify_store::Actor::system(),
        )
        .await
        .expect("a responder key");
    let link = clarify_server::login_link(&s.store, base, &key.key.id)
        .await
        .expect("a login link");
    b.goto(&link).await;
    b.until(
        "the inbox to open after the login link",
        "return !document.getElementById('topbar').hidden",
        vec![],
    )
    .await;
    authenticator(b).await;
    b.goto(&format!("{base}/settings")).await;
    b.type_into("//input[@id = 'passkey-name']", "Phone").await;
    b.click("//button[@id = 'add-passkey']").await;
    b.wait_for("//li[contains(@class, 'passkey')][contains(., 'Phone')]")
        .await;
}

/// Whether the inbox's top bar shows a signed-in person.
async fn signed_in(b: &Browser) -> bool {
    b.js(
        "const bar = document.getElementById('topbar'); return !!bar && !bar.hidden \
         && document.getElementById('who').textContent !== ''",
        vec![],
    )
    .await
        == json!(true)
}

/// Opens the account menu from the top bar, checks that it shows who is signed in and fits the
/// screen, and signs out from it.
async fn sign_out(b: &Browser, base: &str, width: u32) {
    b.goto(&format!("{base}/#/")).await;
    b.until(
        "the inbox's top bar",
        "return !document.getElementById('topbar').hidden",
        vec![],
    )
    .await;
    let logout = "return document.getElementById('logout').getBoundingClientRect().width";
    assert_eq!(
        b.js(logout, vec![]).await,
        json!(0),
        "at {width} px Log out is in the account menu, not the bar"
    );
    b.click("//button[@id = 'account-toggle']").await;
    let menu = b
        .until(
            "the account menu to open",
            "const menu = document.getElementById('account-menu'); \
             if (!menu.matches(':popover-open')) return null; \
             const r = menu.getBoundingClientRect(); \
             const out = document.getElementById('logout').getBoundingClientRect(); \
             return {left: r.left, right: r.right, who: document.getElementById('who').innerText, \
               logout: [out.width, out.height]}",
            vec![],
        )
        .await;
    assert!(
        menu["left"].as_f64().is_some_and(|l| l >= 0.0)
            && menu["right"]
                .as_f64()
                .is_some_and(|r| r <= f64::from(width)),
        "the account menu is on the screen at {width} px: {menu}"
    );
    assert!(
        menu["who"].as_str().is_some_and(|w| w.contains("alice")),
        "{menu}"
    );
    assert!(
        menu["logout"][1].as_f64().is_some_and(|h| h >= 44.0),
        "Log out is a tap target of 44 px: {menu}"
    );
    keep_screenshot(b, &format!("fit-{width}-menu")).await;
    b.click("//button[@id = 'logout']").await;
    b.wait_for("//input[@id = 'key']").await;
    assert!(
        !signed_in(b).await,
        "signed out at {width} px, the sign-in form is shown"
    );
    assert_eq!(
        b.js("return fetch('/v1/session').then((r) => r.status)", vec![])
            .await,
        json!(401),
        "the session ended on the server"
    );
}

/// Keeps a screenshot of the page as `name` in the temporary directory, to look at.
async fn keep_screenshot(b: &Browser, name: &str) {
    let dir = std::env::temp_dir().join("clarify-screenshots");
    if let (Ok(()), Ok(png)) = (std::fs::create_dir_all(&dir), b.client.screenshot().await) {
        let _ = std::fs::write(dir.join(format!("{name}.png")), png);
    }
}
