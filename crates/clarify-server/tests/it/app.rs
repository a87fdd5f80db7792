//! The inbox as an installable app: its manifest, its service worker and the offline page, over
//! HTTP and in headless Chromium, which judges whether the app can be installed and shows the
//! offline page when the server is gone.

use reqwest::StatusCode;
use reqwest::header::{CACHE_CONTROL, CONTENT_SECURITY_POLICY, CONTENT_TYPE, ETAG, IF_NONE_MATCH};
use serde_json::{Value, json};

use crate::support::TestServer;
use clarify_testkit::browser::Browser;

async fn get(s: &TestServer, path: &str) -> reqwest::Response {
    clarify_client::http::client()
        .expect("an HTTP client")
        .get(format!("{}{path}", s.url))
        .send()
        .await
        .unwrap_or_else(|e| panic!("GET {path}: {e}"))
}

fn header(response: &reqwest::Response, name: reqwest::header::HeaderName) -> &str {
    response
        .headers()
        .get(&name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_else(|| panic!("no {name} header"))
}

#[tokio::test]
async fn the_manifest_names_the_app_and_its_icons_which_are_served() {
    let s = TestServer::start().await;
    let response = get(&s, "/manifest.webmanifest").await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(header(&response, CONTENT_TYPE), "application/manifest+json");
    assert_eq!(header(&response, CACHE_CONTROL), "no-cache");
    let manifest: Value = response.json().await.expect("manifest JSON");
    assert_eq!(manifest["name"], "clarify");
    assert_eq!(manifest["display"], "standalone");
    assert_eq!(manifest["start_url"], "/");
    assert_eq!(manifest["theme_color"], "#4338ca");
    let icons = manifest["icons"].as_array().expect("icons");
    let sizes: Vec<&str> = icons.iter().filter_map(|i| i["sizes"].as_str()).collect();
    assert!(
        sizes.contains(&"192x192") && sizes.contains(&"512x512"),
        "{sizes:?}"
    );
    assert!(
        icons.iter().any(|i| i["purpose"] == "maskable"),
        "a maskable icon for phones' launchers: {icons:?}"
    );
    for icon in icons {
        let src = icon["src"].as_str().expect("src");
        let image = get(&s, src).await;
        assert_eq!(image.status(), StatusCode::OK, "{src}");
        assert_eq!(header(&image, CONTENT_TYPE), "image/png");
        let bytes = image.bytes().await.expect("icon bytes");
        assert!(bytes.starts_with(b"\x89PNG\r\n\x1a\n"), "{src} is a PNG");
        // The PNG header's width, which must be the size the manifest claims.
        let width = u32::from_be_bytes([bytes[16], bytes[17], bytes[18], bytes[19]]);
        assert_eq!(
            icon["sizes"].as_str(),
            Some(format!("{width}x{width}").as_str())
        );
    }
    let page = get(&s, "/").await.text().await.expect("page");
    assert!(
        page.contains("<link rel=\"manifest\" href=\"/manifest.webmanifest\">"),
        "{page}"
    );
    assert!(page.contains("<meta name=\"theme-color\" content=\"#4338ca\">"));
}

#[tokio::test]
async fn the_service_worker_keeps_this_builds_shell_and_is_revalidated() {
    let s = TestServer::start().await;
    let response = get(&s, "/sw.js").await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(
        header(&response, CONTENT_TYPE),
        "text/javascript; charset=utf-8"
    );
    assert_eq!(header(&response, CACHE_CONTROL), "no-cache");
    let tag = header(&response, ETAG).to_owned();
    let script = response.text().await.expect("script");
    assert!(!script.contains("{{"), "every placeholder filled: {script}");
    let page = get(&s, "/").await.text().await.expect("page");
    let css = page
        .split('"')
        .find(|p| p.ends_with("/clarify.css"))
        .expect("the page's stylesheet");
    assert!(
        script.contains(&format!("\"{css}\"")),
        "the shell holds the page's own assets"
    );
    assert!(script.contains("\"/offline\""));
    let again = clarify_client::http::client()
        .expect("an HTTP client")
        .get(format!("{}/sw.js", s.url))
        .header(IF_NONE_MATCH, tag)
        .send()
        .await
        .expect("revalidate");
    assert_eq!(again.status(), StatusCode::NOT_MODIFIED);

    let offline = get(&s, "/offline").await;
    assert_eq!(offline.status(), StatusCode::OK);
    assert!(header(&offline, CONTENT_SECURITY_POLICY).contains("script-src 'self'"));
    let text = offline.text().await.expect("offline page");
    assert!(text.contains("You are offline") && text.contains("Nothing is kept to be sent later"));
}

#[tokio::test]
async fn chromium_finds_the_inbox_installable_and_shows_the_offline_page_without_the_server() {
    let Some(browser) = Browser::launch_phone(390, 844).await else {
        return;
    };
    let b = &browser;
    let s = TestServer::start().await;
    b.run("installable", async move {
        b.goto(&s.url).await;
        b.until(
            "the service worker to control the page",
            "return navigator.serviceWorker.controller !== null \
             && navigator.serviceWorker.controller.state === 'activated'",
            vec![],
        )
        .await;
        let manifest = b.cdp("Page.getAppManifest", json!({})).await;
        assert_eq!(manifest["errors"], json!([]), "{manifest}");
        assert!(
            manifest["url"]
                .as_str()
                .is_some_and(|u| u.ends_with("/manifest.webmanifest")),
            "{manifest}"
        );
        let installable = b.cdp("Page.getInstallabilityErrors", json!({})).await;
        assert_eq!(
            installable["installabilityErrors"],
            json!([]),
            "Chromium would not offer to install the inbox: {installable}"
        );

        // The server goes away; the installed app opens on the offline page instead of the
        // browser's error, and nothing on it offers to answer.
        let (store, address) = s.halt().await;
        b.goto(&format!("http://{address}/")).await;
        let text = b
            .until(
                "the offline page",
                "const p = document.getElementById('offline'); return p ? p.textContent : null",
                vec![],
            )
            .await;
        assert!(
            text.as_str().is_some_and(|t| t.contains("cannot reach")),
            "{text}"
        );
        assert_eq!(
            b.js(
                "return document.querySelectorAll('form, button').length",
                vec![]
            )
            .await,
            json!(0)
        );

        // Back online, the same address is the inbox again, not a page kept from before.
        let s = TestServer::at(&address, store, |_| {}).await;
        b.goto(&s.url).await;
        b.until(
            "the sign-in form from the server",
            "return document.getElementById('key') !== null",
            vec![],
        )
        .await;
        s.stop().await;
    })
    .await;
}

/// Keeps a screenshot in the temporary directory; with `CLARIFY_SCREENSHOTS=1`
/// (`./scripts/screenshot`), also as the handbook's picture `docs/src/images/<name>.png`.
fn keep_screenshot(name: &str, png: &[u8]) {
    let dir = std::env::temp_dir().join("clarify-screenshots");
    if std::fs::create_dir_all(&dir).is_ok() {
        let _ = std::fs::write(dir.join(format!("{name}.png")), png);
    }
    if std::env::var("CLARIFY_SCREENSHOTS").as_deref() == Ok("1") {
        let target = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../docs/src/images")
            .join(format!("{name}.png"));
        std::fs::write(&target, png).expect("screenshot written");
        eprintln!("wrote {}", target.display());
    }
}

const CONFIG_DIFF: &str = "--- a/deploy/api.yaml\n+++ b/deploy/api.yaml\n@@ -4,6 +4,6 @@ spec:\n   template:\n     spec:\n       containers:\n-        - image: registry.example.com/api:1.41.2\n+        - image: registry.example.com/api:1.42.0\n           resources:\n-            limits: {memory: 512Mi}\n+            limits: {memory: 768Mi}\n";

/// The inbox at phone width, as the handbook's phone page shows the installed app (whose window
/// adds nothing but the phone's status bar): the list of pending requests, and a diff opened
/// from its notification's address and approved there.
#[tokio::test]
async fn the_installed_inbox_at_phone_width_lists_requests_and_approves_a_diff() {
    let Some(browser) = Browser::launch_phone(390, 844).await else {
        return;
    };
    let b = &browser;
    let s = TestServer::start().await;
    b.run("installed_phone", async {
        for body in [
            json!({"question": "Which region should the new cache cluster run in?",
                   "choices": ["eu-west-1", "us-east-1"], "agent": "planner"}),
            json!({"summary": "Send the Q3 report to the board",
                   "questions": [{"text": "Send it?", "kind": "approval",
                                  "action": {"name": "send_email",
                                             "arguments": {"to": "board@example.com"}}}],
                   "agent": "assistant"}),
        ] {
            s.ask(&s.admin, body).await;
        }
        let deploy = s
            .ask(
                &s.admin,
                json!({"summary": "Deploy api 1.42.0 to production",
                       "questions": [{"text": "Roll out this change?", "kind": "approval",
                                      "action": {"name": "kubectl_apply",
                                                 "arguments": {"file": "deploy/api.yaml"}}}],
                       "display": [
                           {"type": "markdown", "title": "Why",
                            "text": "1.42.0 fixes the **connection leak** behind last night's alerts; memory goes up to fit the new pool."},
                           {"type": "diff", "path": "deploy/api.yaml", "diff": CONFIG_DIFF}],
                       "agent": "release-bot"}),
            )
            .await;
        crate::browser::login(b, &s, "alice").await;
        b.until(
            "three pending requests",
            "return document.querySelectorAll('a.row').length === 3",
            vec![],
        )
        .await;
        keep_screenshot("phone-app", &b.client.screenshot().await.expect("png"));

        // The account is behind the button at the end of the top bar.
        b.click("//button[@id = 'account-toggle']").await;
        b.until(
            "the account menu to open",
            "return document.getElementById('account-menu').matches(':popover-open') \
             && document.getElementById('who').textContent.includes('alice')",
            vec![],
        )
        .await;
        keep_screenshot("phone-menu", &b.client.screenshot().await.expect("png"));

        // A tap on the notification opens the request at its address.
        let id = deploy["id"].as_str().expect("id");
        b.goto(&format!("{}/#/requests/{id}", s.url)).await;
        b.wait_for("//table[@class = 'diff-lines']//tr[@class = 'add']")
            .await;
        b.click("//button[contains(@class, 'approve')]").await;
        keep_screenshot("phone-approve", &b.client.screenshot().await.expect("png"));
        b.click("//button[@type = 'submit'][. = 'Send answer']")
            .await;
        b.wait_for("//strong[. = 'Answer sent.']").await;
        let (_, record) = s.get(&format!("/v1/requests/{id}"), &s.admin).await;
        assert_eq!(record["outcome"]["answered_by"], "alice");
        assert_eq!(record["outcome"]["questions"][0]["decision"], "approve");
    })
    .await;
}
