//! `/auth/oidc/start` and `/auth/oidc/callback`: signing a person in to the inbox through the
//! OpenID Connect provider of `[oidc]`.
//!
//! The authorization code flow with PKCE (S256). `start` makes a random `state`, `nonce` and
//! code verifier, keeps them in the store under a single-use token for ten minutes, puts that
//! token in a cookie for `/auth/oidc` only, and sends the browser to the provider. `callback`
//! uses the token up before anything else (so a callback replayed, or one for a sign-in begun in
//! another browser, finds nothing), compares `state`, exchanges the code with the verifier, and
//! has `openidconnect` check the ID token: its signature against the provider's published keys,
//! `iss`, `aud`, `exp` (with the configured clock skew) and `nonce`. A token issued in the
//! future (beyond the skew) is refused too.
//!
//! The person's claims are the ID token's, completed by the userinfo endpoint's (asked for the
//! same `sub`): providers differ in which of the two carries e-mail and groups. The responder
//! name is `name_claim`, the groups `groups_claim`; `allowed_domains` is checked on `email`
//! (and an address the provider says is unverified is refused). Only then is a session opened,
//! holding who the person is; until then nothing is signed in, and every refusal is a page
//! saying what went wrong and to start again.

use std::sync::Arc;

use axum::extract::{Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use chrono::{DateTime, Utc};
use clarify_store::Role;
use openidconnect::core::{CoreAuthenticationFlow, CoreGenderClaim};
use openidconnect::{
    AuthorizationCode, ClaimsVerificationError, CsrfToken, IdToken, IdTokenClaims, Nonce,
    OAuth2TokenResponse, PkceCodeChallenge, PkceCodeVerifier, Scope, TokenResponse, UserInfoClaims,
};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::middleware::auth::{Holder, Person, cookie, start_session};
use crate::shared::sign::equal;
use crate::state::AppState;
use crate::state::oidc::{OidcClient, OtherClaims, Provider, error_chain};
use crate::web::html::{message_page, signed_in_page};

/// The cookie carrying a sign-in under way (the store's single-use token for it).
pub const SIGN_IN_COOKIE: &str = "clarify_oidc";
/// How long a person has to come back from the provider.
const SIGN_IN_TTL: chrono::TimeDelta = chrono::TimeDelta::minutes(10);

/// What `start` keeps for `callback`.
#[derive(Serialize, Deserialize)]
struct Pending {
    state: String,
    nonce: String,
    verifier: String,
}

type Claims = IdTokenClaims<OtherClaims, CoreGenderClaim>;

/// A sign-in that did not happen, and the page saying why.
struct Refusal {
    status: StatusCode,
    title: &'static str,
    message: String,
}

impl Refusal {
    fn new(status: StatusCode, title: &'static str, message: impl Into<String>) -> Self {
        Self {
            status,
            title,
            message: message.into(),
        }
    }

    fn page(self) -> Response {
        tracing::warn!(title = self.title, reason = %self.message, "refused an OpenID Connect sign-in");
        message_page(self.status, self.title, &self.message)
    }
}

const START_AGAIN: &str = "Nothing was signed in. Open the inbox and sign in again.";

fn not_configured() -> Refusal {
    Refusal::new(
        StatusCode::NOT_FOUND,
        "Single sign-on is not set up",
        "This server has no [oidc] section; sign in with a key or a login link.",
    )
}

fn unreachable(e: &dyn std::error::Error) -> Refusal {
    Refusal::new(
        StatusCode::BAD_GATEWAY,
        "The identity provider cannot be reached",
        format!("{}. Try again in a moment.", error_chain(e)),
    )
}

/// `GET /auth/oidc/start`: sends the browser to the provider's sign-in page.
pub(crate) async fn start(State(state): State<AppState>) -> Response {
    match begin(&state).await {
        Ok(response) => response,
        Err(refusal) => refusal.page(),
    }
}

async fn begin(state: &AppState) -> Result<Response, Refusal> {
    let provider = state.oidc.as_ref().ok_or_else(not_configured)?;
    let client = provider.client().await.map_err(|e| unreachable(&e))?;
    let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
    let mut request = client.authorize_url(
        CoreAuthenticationFlow::AuthorizationCode,
        CsrfToken::new_random,
        Nonce::new_random,
    );
    for scope in provider.config.scopes.iter().filter(|s| *s != "openid") {
        request = request.add_scope(Scope::new(scope.clone()));
    }
    let (url, csrf, nonce) = request.set_pkce_challenge(challenge).url();
    let pending = Pending {
        state: csrf.secret().clone(),
        nonce: nonce.secret().clone(),
        verifier: verifier.secret().clone(),
    };
    let holder = serde_json::to_string(&pending).unwrap_or_default();
    let token = state
        .store
        .issue_once(&holder, SIGN_IN_TTL)
        .await
        .map_err(|e| {
            Refusal::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "Sign-in is not available just now",
                format!("The store could not keep the sign-in: {e}. Try again in a moment."),
            )
        })?;
    // `Lax`: the provider sends the browser back with a top-level GET from its own site, which
    // a `Strict` cookie would not accompany.
    let cookie = format!(
        "{SIGN_IN_COOKIE}={token}; Path=/auth/oidc; HttpOnly; SameSite=Lax{}; Max-Age={}",
        secure(state),
        SIGN_IN_TTL.num_seconds()
    );
    let mut response = Redirect::to(url.as_str()).into_response();
    if let Ok(value) = HeaderValue::from_str(&cookie) {
        response.headers_mut().append(header::SET_COOKIE, value);
    }
    Ok(response)
}

/// What the provider sends back.
#[derive(Debug, Deserialize)]
pub(crate) struct Callback {
    code: Option<String>,
    state: Option<String>,
    error: Option<String>,
    error_description: Option<String>,
}

/// `GET /auth/oidc/callback`: checks what the provider sent back and opens the session.
pub(crate) async fn callback(
    State(state): State<AppState>,
    Query(query): Query<Callback>,
    headers: HeaderMap,
) -> Response {
    let mut response = match finish(&state, query, &headers).await {
        Ok(response) => response,
        Err(refusal) => refusal.page(),
    };
    // The sign-in is over either way; its single-use token is already spent.
    let cleared = format!(
        "{SIGN_IN_COOKIE}=; Path=/auth/oidc; HttpOnly; SameSite=Lax{}; Max-Age=0",
        secure(&state)
    );
    if let Ok(value) = HeaderValue::from_str(&cleared) {
        response.headers_mut().append(header::SET_COOKIE, value);
    }
    response
}

async fn finish(
    state: &AppState,
    query: Callback,
    headers: &HeaderMap,
) -> Result<Response, Refusal> {
    let provider = state.oidc.as_ref().ok_or_else(not_configured)?;
    let started = cookie(headers, SIGN_IN_COOKIE).ok_or_else(|| {
        Refusal::new(
            StatusCode::BAD_REQUEST,
            "This sign-in was not started in this browser",
            START_AGAIN,
        )
    })?;
    let held = state.store.redeem_once(started).await.map_err(|e| {
        Refusal::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "Sign-in is not available just now",
            format!("The store could not be read: {e}. Try again in a moment."),
        )
    })?;
    let pending: Pending = held
        .and_then(|h| serde_json::from_str(&h).ok())
        .ok_or_else(|| {
            Refusal::new(
                StatusCode::BAD_REQUEST,
                "This sign-in has expired or was already used",
                START_AGAIN,
            )
        })?;
    if let Some(error) = &query.error {
        let detail = query.error_description.as_deref().unwrap_or_default();
        return Err(Refusal::new(
            StatusCode::FORBIDDEN,
            "The identity provider did not sign you in",
            format!(
                "It answered {error}{}{detail}. {START_AGAIN}",
                if detail.is_empty() { "" } else { ": " }
            ),
        ));
    }
    let sent_state = query.state.as_deref().unwrap_or_default();
    if !equal(sent_state.as_bytes(), pending.state.as_bytes()) {
        return Err(Refusal::new(
            StatusCode::BAD_REQUEST,
            "This sign-in does not match",
            format!(
                "The provider's answer belongs to another sign-in (its state differs). {START_AGAIN}"
            ),
        ));
    }
    let code = query.code.ok_or_else(|| {
        Refusal::new(
            StatusCode::BAD_REQUEST,
            "The identity provider sent no code",
            START_AGAIN,
        )
    })?;
    let client = provider.client().await.map_err(|e| unreachable(&e))?;
    let exchange = client
        .exchange_code(AuthorizationCode::new(code))
        .map_err(|e| unreachable(&e))?
        .set_pkce_verifier(PkceCodeVerifier::new(pending.verifier));
    let tokens = exchange.request_async(&provider.http).await.map_err(|e| {
        Refusal::new(
            StatusCode::FORBIDDEN,
            "The identity provider refused the sign-in",
            format!(
                "Exchanging the code failed: {}. {START_AGAIN}",
                error_chain(&e)
            ),
        )
    })?;
    let id_token = tokens.id_token().ok_or_else(|| {
        Refusal::new(
            StatusCode::FORBIDDEN,
            "The identity provider sent no ID token",
            format!("Check that the client asks for the openid scope. {START_AGAIN}"),
        )
    })?;
    let nonce = Nonce::new(pending.nonce);
    let now = state.store.now();
    let skew = provider.config.clock_skew;
    let (client, claims) = match verify(&client, id_token, &nonce, now, skew) {
        Err(ClaimsVerificationError::SignatureVerification(first)) => {
            // The provider may have rotated its keys since discovery; look once more.
            match provider.rediscover(&client).await {
                Ok(Some(fresh)) => {
                    let claims = verify(&fresh, id_token, &nonce, now, skew);
                    (fresh, claims)
                }
                Ok(None) => (
                    client,
                    Err(ClaimsVerificationError::SignatureVerification(first)),
                ),
                Err(e) => return Err(unreachable(&e)),
            }
        }
        other => (client, other),
    };
    let claims = claims.map_err(|e| {
        Refusal::new(
            StatusCode::FORBIDDEN,
            "The identity provider's token did not verify",
            format!("{}. {START_AGAIN}", error_chain(&e)),
        )
    })?;
    let all = merged_claims(provider, &client, &tokens, &claims).await;
    let person = person(provider, state, &claims, &all)?;
    tracing::info!(principal = %person.principal, name = %person.name, role = %person.role, "signed in through OpenID Connect");
    let name = person.name.clone();
    let holder = Holder::Oidc(person).to_json();
    Ok(start_session(state, &holder, |_| signed_in_page(&name)).await)
}

/// The ID token's claims, checked: signature, issuer, audience, expiry (`now` less the skew),
/// issue time (not beyond `now` plus the skew) and nonce.
fn verify(
    client: &OidcClient,
    id_token: &IdToken<
        OtherClaims,
        CoreGenderClaim,
        openidconnect::core::CoreJweContentEncryptionAlgorithm,
        openidconnect::core::CoreJwsSigningAlgorithm,
    >,
    nonce: &Nonce,
    now: DateTime<Utc>,
    skew: chrono::TimeDelta,
) -> Result<Claims, ClaimsVerificationError> {
    let verifier = client
        .id_token_verifier()
        .set_time_fn(move || now - skew)
        .set_issue_time_verifier_fn(move |iat| {
            if iat > now + skew {
                Err(format!(
                    "issued at {iat}, later than now ({now}) by more than the allowed skew"
                ))
            } else {
                Ok(())
            }
        });
    id_token.claims(&verifier, nonce).cloned()
}

/// The ID token's claims as JSON, with those only the userinfo endpoint gives added (the ID
/// token's win where both have one).
async fn merged_claims(
    provider: &Provider,
    client: &Arc<OidcClient>,
    tokens: &crate::state::oidc::TokenResponse,
    claims: &Claims,
) -> Map<String, Value> {
    let mut all = match serde_json::to_value(claims) {
        Ok(Value::Object(map)) => map,
        _ => Map::new(),
    };
    let Ok(request) = client.user_info(
        tokens.access_token().clone(),
        Some(claims.subject().clone()),
    ) else {
        // The provider has no userinfo endpoint: the ID token is all there is.
        return all;
    };
    let info: Result<UserInfoClaims<OtherClaims, CoreGenderClaim>, _> =
        request.request_async(&provider.http).await;
    match info.map(|i| serde_json::to_value(&i)) {
        Ok(Ok(Value::Object(more))) => {
            for (k, v) in more {
                all.entry(k).or_insert(v);
            }
        }
        Ok(_) => {}
        Err(e) => {
            tracing::warn!(error = %error_chain(&e), "the userinfo endpoint failed; using the ID token's claims alone")
        }
    }
    all
}

/// Who signed in, or why they may not.
fn person(
    provider: &Provider,
    state: &AppState,
    claims: &Claims,
    all: &Map<String, Value>,
) -> Result<Person, Refusal> {
    let config = &provider.config;
    let name = all
        .get(&config.name_claim)
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .ok_or_else(|| {
            Refusal::new(
                StatusCode::FORBIDDEN,
                "The identity provider did not say who you are",
                format!(
                    "Neither the ID token nor the userinfo endpoint carries the claim {:?}, which this server takes your name from (name_claim). Ask an admin to check the client's scopes.",
                    config.name_claim
                ),
            )
        })?;
    if name.chars().count() > clarify_core::Limits::MAX_NAME_CHARS {
        return Err(Refusal::new(
            StatusCode::FORBIDDEN,
            "Your name is too long",
            format!(
                "The claim {:?} is longer than {} characters.",
                config.name_claim,
                clarify_core::Limits::MAX_NAME_CHARS
            ),
        ));
    }
    if !config.allowed_domains.is_empty() {
        allowed_domain(config, all)?;
    }
    let mut groups: Vec<String> = match all.get(&config.groups_claim) {
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect(),
        Some(Value::String(one)) => vec![one.clone()],
        _ => Vec::new(),
    };
    groups.dedup();
    let every_group = state.store.groups_of(name, &groups);
    let role = if every_group.iter().any(|g| config.admin_groups.contains(g)) {
        Role::Admin
    } else {
        Role::Responder
    };
    Ok(Person {
        principal: format!(
            "oidc:{}#{}",
            claims.issuer().as_str(),
            claims.subject().as_str()
        ),
        name: name.to_owned(),
        role: role.as_str().to_owned(),
        tenant: config.tenant.clone(),
        groups,
    })
}

/// Refuses an e-mail address outside `allowed_domains`, or one the provider says is unverified.
fn allowed_domain(
    config: &crate::state::OidcConfig,
    all: &Map<String, Value>,
) -> Result<(), Refusal> {
    let domains = config.allowed_domains.join(", ");
    let email = all.get("email").and_then(Value::as_str).ok_or_else(|| {
        Refusal::new(
            StatusCode::FORBIDDEN,
            "Your account is not allowed here",
            format!(
                "Sign-in is limited to e-mail addresses at {domains}, and the identity provider gave no e-mail address. Ask an admin to add the email scope."
            ),
        )
    })?;
    if all.get("email_verified").and_then(Value::as_bool) == Some(false) {
        return Err(Refusal::new(
            StatusCode::FORBIDDEN,
            "Your e-mail address is not verified",
            format!(
                "Sign-in is limited to e-mail addresses at {domains}, and the identity provider says {email} is not verified. Verify it there, then sign in again."
            ),
        ));
    }
    let domain = email
        .rsplit_once('@')
        .map(|(_, d)| d.to_ascii_lowercase())
        .unwrap_or_default();
    let allowed = config
        .allowed_domains
        .iter()
        .any(|d| d.trim_start_matches('@').eq_ignore_ascii_case(&domain));
    if allowed {
        Ok(())
    } else {
        Err(Refusal::new(
            StatusCode::FORBIDDEN,
            "Your account is not allowed here",
            format!(
                "Sign-in is limited to e-mail addresses at {domains}; you signed in as {email}. Sign in with an account of one of those domains, or ask an admin."
            ),
        ))
    }
}

/// `; Secure` when people reach this server over HTTPS.
fn secure(state: &AppState) -> &'static str {
    if state.config.public_url.starts_with("https://") {
        "; Secure"
    } else {
        ""
    }
}
