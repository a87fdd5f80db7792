//! The web inbox: the page at `/` and the files it and the answer-link pages load.
//!
//! The inbox is plain HTML, CSS and JavaScript modules under `assets/`, embedded in the binary,
//! so it works with no network beyond this server and needs no build step. The page itself is a
//! shell; the script reads everything through the JSON API with the session cookie and keeps
//! the list current over `/v1/events`.
//!
//! Assets are served under `/assets/<version>/<name>`, where the version is a digest of all of
//! them: a page always loads the files of the build that served it, and those can be cached for
//! good (`immutable`). A version this build does not have is `404`, rather than another build's
//! file under a name that promises it never changes.

use std::sync::LazyLock;

use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};

use crate::shared::error::ApiError;
use crate::shared::sign::hex;
use crate::state::AppState;
use crate::web::html::{ACCOUNT_TOGGLE, document, tabs};
use clarify_render::html::escape;

/// One embedded file.
struct Asset {
    name: &'static str,
    content_type: &'static str,
    body: &'static [u8],
}

const JS: &str = "text/javascript; charset=utf-8";

/// An [`Asset`] for `assets/<name>`, the name written once.
macro_rules! asset {
    ($name:literal, $content_type:expr) => {
        Asset {
            name: $name,
            content_type: $content_type,
            body: include_bytes!(concat!("../../assets/", $name)),
        }
    };
}

const ASSETS: &[Asset] = &[
    asset!("clarify.css", "text/css; charset=utf-8"),
    // The charts' stylesheet is clarify-render's, beside the charts it styles; `clarify report`
    // inlines the same file.
    Asset {
        name: "insights.css",
        content_type: "text/css; charset=utf-8",
        body: clarify_render::charts::STYLE.as_bytes(),
    },
    asset!("icon.svg", "image/svg+xml"),
    asset!("icon-192.png", "image/png"),
    asset!("icon-512.png", "image/png"),
    asset!("icon-maskable-512.png", "image/png"),
    asset!("dom.js", JS),
    asset!("api.js", JS),
    asset!("fields.js", JS),
    asset!("request.js", JS),
    asset!("inbox.js", JS),
    asset!("login.js", JS),
    asset!("notifications.js", JS),
    asset!("suggestions.js", JS),
    asset!("batch.js", JS),
    asset!("history.js", JS),
    asset!("link.js", JS),
    asset!("passkeys.js", JS),
    asset!("settings.js", JS),
];

/// The digest of every asset (and the page), shortened: the version in asset paths.
static VERSION: LazyLock<String> = LazyLock::new(|| {
    let mut digest = Sha256::new();
    for asset in ASSETS {
        digest.update(asset.name.as_bytes());
        digest.update((asset.body.len() as u64).to_le_bytes());
        digest.update(asset.body);
    }
    digest.update(PAGE_TEMPLATE.as_bytes());
    digest.update(tabs(None).as_bytes());
    digest.update(ACCOUNT_TOGGLE.as_bytes());
    digest.update(WORKER_TEMPLATE.as_bytes());
    hex(&digest.finalize()[..8])
});

const PAGE_TEMPLATE: &str = include_str!("../../assets/inbox.html");

/// The inbox page's policy: [`CSP`](crate::web::html::CSP) with `data:` images too. The page draws the
/// pending count on its tab icon and sets the result as a `data:` URL, and browsers check a
/// page's icon against `img-src`. An image cannot run script, and the only markup the page
/// parses is a request's display fragment, cleaned by the server and parsed inertly, so this
/// lets no code in.
const PAGE_CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; manifest-src 'self'; worker-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

static PAGE: LazyLock<String> = LazyLock::new(|| {
    PAGE_TEMPLATE
        .replace("{{version}}", VERSION.as_str())
        .replace("{{theme_colour}}", THEME_COLOUR)
        .replace("{{tabs}}", &tabs(None))
        .replace("{{account_toggle}}", ACCOUNT_TOGGLE)
});

const WORKER_TEMPLATE: &str = include_str!("../../assets/sw.js");

/// The service worker: its template with this build's version and the shell it keeps (every
/// asset, and the offline page).
static WORKER: LazyLock<String> = LazyLock::new(|| {
    let mut shell: Vec<String> = ASSETS.iter().map(|a| asset_path(a.name)).collect();
    shell.push("/offline".to_owned());
    let shell = serde_json::to_string(&shell).unwrap_or_else(|_| "[]".to_owned());
    WORKER_TEMPLATE
        .replace("{{version}}", VERSION.as_str())
        .replace("{{shell}}", &shell)
});

/// The web app manifest: what makes the inbox installable as an app (name, icons, standalone
/// display, theme colour). Its icons are this build's assets.
static MANIFEST: LazyLock<String> = LazyLock::new(|| {
    let icon = |name: &str, size: u32, purpose: &str| {
        serde_json::json!({
            "src": asset_path(name),
            "sizes": format!("{size}x{size}"),
            "type": "image/png",
            "purpose": purpose,
        })
    };
    let manifest = serde_json::json!({
        "id": "/",
        "name": "clarify",
        "short_name": "clarify",
        "description": "Questions and approvals from your agents, answered from anywhere.",
        "start_url": "/",
        "scope": "/",
        "display": "standalone",
        "orientation": "any",
        "background_color": "#ffffff",
        "theme_color": THEME_COLOUR,
        "icons": [
            icon("icon-192.png", 192, "any"),
            icon("icon-512.png", 512, "any"),
            icon("icon-maskable-512.png", 512, "maskable"),
        ],
    });
    manifest.to_string()
});

/// The app's colour (the icon's), in the manifest and the pages' `theme-color`.
const THEME_COLOUR: &str = "#4338ca";

/// How people sign in here, for the login form: `data-oidc` names the identity provider's
/// button ("Sign in with ..."), `data-key-login="false"` hides the key field. Empty without
/// `[oidc]`.
fn sign_in_attributes(config: &crate::state::Config) -> String {
    let Some(oidc) = &config.oidc else {
        return String::new();
    };
    format!(
        " data-oidc=\"{}\" data-key-login=\"{}\"",
        escape(&oidc.display_name),
        oidc.key_login
    )
}

/// The path this build serves asset `name` at.
pub fn asset_path(name: &str) -> String {
    format!("/assets/{}/{name}", VERSION.as_str())
}

fn etag() -> String {
    format!("\"{}\"", VERSION.as_str())
}

/// The page's tag: the build's, and how people sign in (which the page carries).
fn page_etag(sign_in: &str) -> String {
    if sign_in.is_empty() {
        return etag();
    }
    let digest = Sha256::digest(sign_in.as_bytes());
    format!("\"{}-{}\"", VERSION.as_str(), hex(&digest[..4]))
}

/// Whether the request's `If-None-Match` names this build.
fn fresh(headers: &HeaderMap) -> bool {
    fresh_for(headers, &etag())
}

fn fresh_for(headers: &HeaderMap, tag: &str) -> bool {
    let tag = tag.to_owned();
    headers
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .any(|t| t == "*" || t == tag || t.strip_prefix("W/") == Some(tag.as_str()))
}

/// The inbox page. It changes only with the build, so a browser revalidates it and gets `304`.
pub(crate) async fn page(State(state): State<AppState>, headers: HeaderMap) -> Response {
    let sign_in = sign_in_attributes(&state.config);
    let tag = page_etag(&sign_in);
    let mut response = if fresh_for(&headers, &tag) {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        document(StatusCode::OK, PAGE.replace("{{sign_in}}", &sign_in))
    };
    let h = response.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(PAGE_CSP),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    if let Ok(tag) = HeaderValue::from_str(&tag) {
        h.insert(header::ETAG, tag);
    }
    response
}

/// `/manifest.webmanifest`. Revalidated like the page, since it names this build's icons.
pub(crate) async fn manifest(headers: HeaderMap) -> Response {
    build_file(&headers, "application/manifest+json", MANIFEST.as_str())
}

/// `/sw.js`, the service worker, at the root so that its scope is the whole site. Browsers check
/// it for a new version on every navigation; a new build's is a new script, which installs
/// itself with that build's shell.
pub(crate) async fn service_worker(headers: HeaderMap) -> Response {
    build_file(&headers, JS, WORKER.as_str())
}

/// `/offline`, the page the service worker shows when the server cannot be reached.
pub(crate) async fn offline() -> Response {
    crate::web::html::offline_page()
}

/// A file made for this build (`body`), served under a fixed name: revalidated on every use
/// (`no-cache`) against the build's tag.
fn build_file(headers: &HeaderMap, content_type: &'static str, body: &'static str) -> Response {
    let mut response = if fresh(headers) {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        (
            [(header::CONTENT_TYPE, HeaderValue::from_static(content_type))],
            body,
        )
            .into_response()
    };
    let h = response.headers_mut();
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    if let Ok(tag) = HeaderValue::from_str(&etag()) {
        h.insert(header::ETAG, tag);
    }
    response
}

pub(crate) async fn asset(
    Path((version, name)): Path<(String, String)>,
    headers: HeaderMap,
) -> Response {
    let found = ASSETS.iter().find(|a| a.name == name);
    let Some(asset) = found.filter(|_| version == *VERSION) else {
        return ApiError::new(
            StatusCode::NOT_FOUND,
            "not_found",
            "no such asset in this build of the server; reload the page",
        )
        .into_response();
    };
    let mut response = if fresh(&headers) {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        (
            [(
                header::CONTENT_TYPE,
                HeaderValue::from_static(asset.content_type),
            )],
            asset.body,
        )
            .into_response()
    };
    let h = response.headers_mut();
    h.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("public, max-age=31536000, immutable"),
    );
    if let Ok(tag) = HeaderValue::from_str(&etag()) {
        h.insert(header::ETAG, tag);
    }
    response
}
