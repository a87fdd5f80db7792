//! `/link/<token>`: a person links the chat account that asked for the link to themselves.
//!
//! A chat click from someone clarify does not know answers privately with a one-time link
//! (issued by [`offer`]); the link holds the account (`slack:U012ABCDEF`) and names it in its
//! query, so the page shows which account the button links, and the button links only the
//! account the link was made for (a changed query is refused). Opening it shows a button; pressing it while signed in to the inbox (with a key, a login link or OpenID
//! Connect) links the account to that person's responder name, and uses the link up. Nothing is
//! linked on `GET`, so a chat platform's link preview cannot use it, and the session cookie,
//! `SameSite=Strict`, reaches only the button's own post: the person's click in the chat is a
//! navigation from another site, which never carries it.

use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use chrono::TimeDelta;
use clarify_store::Actor;

use crate::middleware::auth::{origin_is_host, signed_in_caller};
use crate::shared::error::ApiError;
use crate::shared::extract::Drained;
use crate::state::AppState;
use crate::web::html::{link_account_page, message_page};

/// How long a link-account link works.
pub const LINK_TTL: TimeDelta = TimeDelta::minutes(15);

/// What a one-time link holds: the chat account it links.
const HOLDER_PREFIX: &str = "link-account:";

/// A one-time link that links the chat account `account` (`slack:U012ABCDEF`) to whoever opens
/// it signed in: the URL, valid for [`LINK_TTL`].
pub(crate) async fn offer(
    state: &AppState,
    account: &str,
) -> Result<String, clarify_store::StoreError> {
    let token = state
        .store
        .issue_once(&format!("{HOLDER_PREFIX}{account}"), LINK_TTL)
        .await?;
    let account: String = url::form_urlencoded::byte_serialize(account.as_bytes()).collect();
    Ok(format!(
        "{}/link/{token}?account={account}",
        state.config.public_url
    ))
}

/// The query of a link-account link: the account it links, for the page to show.
#[derive(Debug, serde::Deserialize)]
pub(crate) struct Linking {
    account: Option<String>,
}

/// `GET /link/{token}`: the button, and who the person is signed in as if the browser says.
pub(crate) async fn page(
    State(state): State<AppState>,
    headers: HeaderMap,
    query: Result<Query<Linking>, QueryRejection>,
) -> Response {
    let Some(account) = query.ok().and_then(|Query(q)| q.account) else {
        return not_valid();
    };
    let name = match signed_in_caller(&state, &headers).await {
        Ok(caller) => caller.map(|c| c.key.name),
        Err(e) => return e.into_response(),
    };
    link_account_page(&account, name.as_deref())
}

fn not_valid() -> Response {
    message_page(
        StatusCode::NOT_FOUND,
        "This link is not valid",
        "It was already used, has expired, or was changed. Press a button in the chat again for a new one.",
    )
}

/// `POST /link/{token}`: links the account to the signed-in person and uses the link up.
pub(crate) async fn link(
    State(state): State<AppState>,
    Path(token): Path<String>,
    headers: HeaderMap,
    query: Result<Query<Linking>, QueryRejection>,
    _: Drained,
) -> Response {
    let shown = query.ok().and_then(|Query(q)| q.account);
    // Browsers send `Origin` with every form post: it must be there, and name this host.
    if origin_is_host(&headers) != Some(true) {
        return message_page(
            StatusCode::FORBIDDEN,
            "Not linked",
            "This form was not sent from clarify's own page. Open the link from the chat again.",
        );
    }
    let caller = match signed_in_caller(&state, &headers).await {
        Ok(Some(caller)) => caller,
        Ok(None) => {
            return message_page(
                StatusCode::UNAUTHORIZED,
                "Sign in first",
                "Open the clarify inbox and sign in, then come back to this page and press the button again. The link still works until it expires.",
            );
        }
        Err(e) => return e.into_response(),
    };
    if !caller.key.role.may_answer() {
        return message_page(
            StatusCode::FORBIDDEN,
            "Not linked",
            "You are signed in with a key that may not answer requests, so there is nothing to link a chat account to. Sign in as a person who answers.",
        );
    }
    let holder = match state.store.redeem_once(&token).await {
        Ok(holder) => holder,
        Err(e) => return ApiError::store(&e).into_response(),
    };
    let Some(account) = holder.and_then(|h| h.strip_prefix(HOLDER_PREFIX).map(str::to_owned))
    else {
        return not_valid();
    };
    if shown.as_deref() != Some(account.as_str()) {
        tracing::warn!(%account, shown = ?shown, "refused a link-account link whose query was changed");
        return not_valid();
    }
    let actor = Actor::new(caller.key.name.clone(), "inbox").as_principal(&caller.principal);
    match state
        .store
        .link_identity(&account, &caller.key.name, caller.tenant(), &actor)
        .await
    {
        Ok(linked) => {
            tracing::info!(account = %linked.id, name = %linked.name, principal = %caller.principal, "linked a chat account");
            message_page(
                StatusCode::OK,
                "Linked",
                &format!(
                    "Your chat account {} now answers as {}. Go back to the chat and press the button again.",
                    linked.id, linked.name
                ),
            )
        }
        Err(e) => ApiError::store(&e).into_response(),
    }
}
