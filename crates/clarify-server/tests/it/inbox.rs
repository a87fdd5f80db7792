//! The inbox page and its assets over HTTP: what is served, with which types, policy and
//! caching, and that the assets never turn data into markup. What the page does in a browser is
//! in `browser`.

use std::collections::BTreeSet;

use reqwest::StatusCode;
use reqwest::header::{
    CACHE_CONTROL, CONTENT_SECURITY_POLICY, CONTENT_TYPE, ETAG, HeaderMap, IF_NONE_MATCH,
};

use crate::support::TestServer;

const POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
                      connect-src 'self'; manifest-src 'self'; worker-src 'self'; form-action 'self'; \
                      frame-ancestors 'none'; base-uri 'none'";

fn header<'a>(headers: &'a HeaderMap, name: &reqwest::header::HeaderName) -> &'a str {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
}

/// The `/assets/...` paths named in `text` (quoted), and the modules a script imports
/// (`from "./x.js"`) resolved against `base`.
fn references(text: &str, base: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    for (i, _) in text.match_indices("\"/assets/") {
        let rest = &text[i + 1..];
        if let Some(end) = rest.find('"') {
            found.insert(rest[..end].to_owned());
        }
    }
    for (i, _) in text.match_indices("from \"./") {
        let rest = &text[i + "from \"./".len()..];
        if let Some(end) = rest.find('"') {
            found.insert(format!("{base}/{}", &rest[..end]));
        }
    }
    found
}

async fn get(s: &TestServer, path: &str, etag: Option<&str>) -> reqwest::Response {
    let mut request = s.client.get(format!("{}{path}", s.url));
    if let Some(tag) = etag {
        request = request.header(IF_NONE_MATCH, tag);
    }
    request.send().await.expect("sent")
}

#[tokio::test]
async fn the_page_and_every_asset_it_loads_are_served_with_types_policy_and_caching() {
    let s = TestServer::start().await;
    let page = get(&s, "/", None).await;
    assert_eq!(page.status(), StatusCode::OK);
    let headers = page.headers().clone();
    assert!(header(&headers, &CONTENT_TYPE).starts_with("text/html"));
    assert_eq!(header(&headers, &CONTENT_SECURITY_POLICY), POLICY);
    assert_eq!(header(&headers, &CACHE_CONTROL), "no-cache");
    let tag = header(&headers, &ETAG).to_owned();
    assert!(tag.starts_with('"') && tag.len() > 2, "{tag}");
    let html = page.text().await.expect("html");
    assert!(!html.contains("<script>"), "no inline script: {html}");
    assert!(!html.contains("style="), "no inline style: {html}");
    assert_eq!(
        get(&s, "/", Some(&tag)).await.status(),
        StatusCode::NOT_MODIFIED,
        "an unchanged page is revalidated, not sent again"
    );

    // Follow every reference, from the page and from the scripts' imports.
    let mut pending: Vec<String> = references(&html, "").into_iter().collect();
    let mut seen = BTreeSet::new();
    while let Some(path) = pending.pop() {
        if !seen.insert(path.clone()) {
            continue;
        }
        let response = get(&s, &path, None).await;
        assert_eq!(response.status(), StatusCode::OK, "{path}");
        let h = response.headers().clone();
        let expected = match path.rsplit('.').next() {
            Some("js") => "text/javascript",
            Some("css") => "text/css",
            Some("svg") => "image/svg+xml",
            Some("png") => "image/png",
            other => panic!("unexpected asset type {other:?}: {path}"),
        };
        assert!(
            header(&h, &CONTENT_TYPE).starts_with(expected),
            "{path}: {h:?}"
        );
        assert!(
            header(&h, &CACHE_CONTROL).contains("immutable"),
            "{path}: {h:?}"
        );
        assert_eq!(header(&h, &ETAG), tag, "{path}");
        let body =
            String::from_utf8_lossy(&response.bytes().await.expect("asset body")).into_owned();
        let base = path.rsplit_once('/').map_or("", |(dir, _)| dir).to_owned();
        pending.extend(references(&body, &base));
        assert_eq!(
            get(&s, &path, Some(&tag)).await.status(),
            StatusCode::NOT_MODIFIED,
            "{path}"
        );
    }
    let names: BTreeSet<&str> = seen.iter().filter_map(|p| p.rsplit('/').next()).collect();
    for name in [
        "inbox.js",
        "login.js",
        "notifications.js",
        "suggestions.js",
        "batch.js",
        "history.js",
        "request.js",
        "dom.js",
        "api.js",
        "clarify.css",
        "icon.svg",
    ] {
        assert!(names.contains(name), "{name} is loaded: {names:?}");
    }

    let version = seen
        .iter()
        .next()
        .and_then(|p| p.split('/').nth(2))
        .expect("a versioned path")
        .to_owned();
    for wrong in [
        "/assets/0123456789abcdef/inbox.js".to_owned(),
        format!("/assets/{version}/nothing.js"),
        format!("/assets/{version}/../Cargo.toml"),
    ] {
        let response = get(&s, &wrong, None).await;
        assert_eq!(response.status(), StatusCode::NOT_FOUND, "{wrong}");
    }
}

/// The text asset files as they are embedded (the icons' PNGs left out).
fn assets() -> Vec<(String, String)> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("assets");
    let mut files: Vec<(String, String)> = std::fs::read_dir(&dir)
        .expect("the assets directory")
        .map(|entry| entry.expect("an entry").path())
        .filter(|path| path.extension().is_none_or(|e| e != "png"))
        .map(|path| {
            let name = path
                .file_name()
                .and_then(|n| n.to_str())
                .expect("a file name")
                .to_owned();
            let text = std::fs::read_to_string(&path).expect("a text asset");
            (name, text)
        })
        .collect();
    files.sort();
    files
}

#[tokio::test]
async fn no_asset_turns_text_into_markup_or_inline_code() {
    let files = assets();
    assert!(files.iter().any(|(n, _)| n == "inbox.js"), "{files:?}");
    // Sinks that parse strings as HTML or code, and inline styles the policy would block.
    let forbidden = [
        "innerHTML",
        "outerHTML",
        "insertAdjacentHTML",
        "document.write",
        "createContextualFragment",
        "DOMParser",
        "eval(",
        "new Function",
        "setTimeout(\"",
        ".style.",
        "\"style\"",
        "javascript:",
    ];
    // The one markup the page reads: a request's display fragment, rendered and cleaned by the
    // server, parsed as an inert document by `fragment` in dom.js and used only by request.js on
    // what the display route returned.
    let sanctioned = |name: &str, text: &str| -> String {
        match name {
            "dom.js" => {
                let start = text
                    .find("export function fragment(html) {")
                    .expect("dom.js has fragment");
                let end = start + text[start..].find("\n}\n").expect("fragment ends");
                assert_eq!(
                    text.matches("DOMParser").count(),
                    1,
                    "DOMParser only in fragment"
                );
                format!("{}{}", &text[..start], &text[end..])
            }
            "request.js" => {
                assert_eq!(
                    text.matches("fragment(").count(),
                    1,
                    "request.js parses only the display route's fragment"
                );
                assert!(
                    text.contains("fragmentText(options.displayUrl)\n      .then((html) => fill(displayEl, fragment(html || \"\")))"),
                    "the fragment comes from the display route"
                );
                text.to_owned()
            }
            _ => {
                assert!(!text.contains("fragment(html"), "{name} parses markup");
                text.to_owned()
            }
        }
    };
    for (name, text) in &files {
        let text = &sanctioned(name, text);
        for sink in forbidden {
            assert!(!text.contains(sink), "{name} uses {sink}");
        }
        if name.ends_with(".html") {
            assert!(!text.contains("style="), "{name} has an inline style");
            for tag in text.split("<script").skip(1) {
                assert!(
                    tag.split('>')
                        .next()
                        .is_some_and(|attrs| attrs.contains("src=")),
                    "{name} has an inline script"
                );
            }
        }
    }
}
