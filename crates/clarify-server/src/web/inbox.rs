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
use crate::shared::html::escape;
use crate::shared::sign::hex;
use crate::state::AppState;
use crate::web::html::document;

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
    asset!("insights.css", "text/css; charset=utf-8"),
    asset!("icon.svg", "image/svg+xml"),
    asset!("dom.js", JS),
    asset!("api.js", JS),
    asset!("fields.js", JS),
    asset!("request.js", JS),
    asset!("inbox.js", JS),
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
    hex(&digest.finalize()[..8])
});

const PAGE_TEMPLATE: &str = include_str!("../../assets/inbox.html");

/// The inbox page's policy: [`CSP`](crate::web::html::CSP) with `data:` images too. The page draws the
/// pending count on its tab icon and sets the result as a `data:` URL, and browsers check a
/// page's icon against `img-src`. An image cannot run script, and the only markup the page
/// parses is a request's display fragment, cleaned by the server and parsed inertly, so this
/// lets no code in.
const PAGE_CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

static PAGE: LazyLock<String> =
    LazyLock::new(|| PAGE_TEMPLATE.replace("{{version}}", VERSION.as_str()));

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
