//! Passkeys: a person registers and removes theirs (`/v1/passkeys`), signs in with one
//! (`/v1/passkeys/sign-in`, discoverable: no name typed), and confirms an answer to a high-risk
//! request with one (`/v1/requests/{id}/step-up`).
//!
//! Each ceremony is two calls: the first returns a `token` and the WebAuthn `options` for
//! `navigator.credentials.create` or `.get`; the second sends the token back with what the
//! authenticator made. The ceremony is kept in the store, used up by the second call (see
//! `state::passkeys`). A step-up ends in a `proof`, which the answer carries in
//! `X-Clarify-Step-Up`: good once, for that request and that person, for 5 minutes.

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use clarify_model::wire::time;
use clarify_store::{Actor, STEP_UP_WINDOW, StoredPasskey};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;
use webauthn_rs::prelude::{Passkey, PublicKeyCredential, RegisterPublicKeyCredential, Uuid};
use webauthn_rs_proto::ResidentKeyRequirement;

use crate::middleware::auth::{Caller, Holder, holder_signs_in, start_session};
use crate::shared::error::{ApiError, ErrorBody};
use crate::shared::extract::{Drained, JsonBody};
use crate::shared::json::Json;
use crate::state::AppState;
use crate::state::passkeys::{
    Ceremony, ceremony_gone, credential_key, parse, refused, relying_party, step_up_refused,
    take_proof, verify_discoverable,
};

/// At most this many characters name a passkey.
const MAX_LABEL_CHARS: usize = 64;

/// A registered passkey, as its owner sees it.
#[derive(Debug, Serialize, ToSchema)]
pub struct PasskeyBody {
    pub id: String,
    /// The name its owner gave it.
    pub name: String,
    pub created_at: String,
    pub last_used_at: Option<String>,
}

impl From<&StoredPasskey> for PasskeyBody {
    fn from(p: &StoredPasskey) -> Self {
        Self {
            id: p.id.clone(),
            name: p.label.clone(),
            created_at: time(p.created_at),
            last_used_at: p.last_used_at.map(time),
        }
    }
}

/// The caller's passkeys.
#[derive(Debug, Serialize, ToSchema)]
pub struct PasskeyList {
    pub passkeys: Vec<PasskeyBody>,
}

/// The first half of a ceremony: send `token` back with the authenticator's answer to `options`.
#[derive(Debug, Serialize, ToSchema)]
pub struct CeremonyBody {
    pub token: String,
    /// WebAuthn options (`{"publicKey": {...}}`, binary values as unpadded base64url).
    #[schema(value_type = Object)]
    pub options: Value,
}

/// `POST /v1/passkeys`: the registration's second half.
#[derive(Debug, Deserialize, ToSchema)]
pub struct RegisterBody {
    pub token: String,
    /// What to call the passkey (1 to 64 characters), e.g. "work laptop".
    pub name: String,
    /// The `PublicKeyCredential` from `navigator.credentials.create`, as JSON.
    #[schema(value_type = Object)]
    pub credential: Value,
}

/// The second half of a sign-in or step-up.
#[derive(Debug, Deserialize, ToSchema)]
pub struct AssertionBody {
    pub token: String,
    /// The `PublicKeyCredential` from `navigator.credentials.get`, as JSON.
    #[schema(value_type = Object)]
    pub credential: Value,
}

/// A finished step-up.
#[derive(Debug, Serialize, ToSchema)]
pub struct StepUpBody {
    /// Send as `X-Clarify-Step-Up` with the answer to this request; good once.
    pub proof: String,
    /// Until when (5 minutes after the assertion).
    pub expires_at: String,
}

fn options(value: &impl Serialize) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}

/// The caller's passkeys.
#[utoipa::path(get, path = "/v1/passkeys", tag = "inbox", responses(
    (status = 200, description = "The caller's passkeys, oldest first", body = PasskeyList),
    (status = 401, description = "Not signed in", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn list(
    State(state): State<AppState>,
    caller: Caller,
) -> Result<Json<PasskeyList>, ApiError> {
    let passkeys = state
        .store
        .passkeys_of(caller.tenant(), &caller.key.name)
        .await?;
    Ok(Json(PasskeyList {
        passkeys: passkeys.iter().map(PasskeyBody::from).collect(),
    }))
}

/// Starts registering a passkey for the caller. The passkey is discoverable (kept on the
/// authenticator), so it can sign in without a name typed.
#[utoipa::path(post, path = "/v1/passkeys/registration", tag = "inbox", responses(
    (status = 200, description = "Pass `options` to `navigator.credentials.create`", body = CeremonyBody),
    (status = 401, description = "Not signed in", body = ErrorBody),
    (status = 409, description = "Passkeys are off: the public URL names no host (`passkeys_unavailable`)", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn start_registration(
    State(state): State<AppState>,
    caller: Caller,
    _: Drained,
) -> Result<Json<CeremonyBody>, ApiError> {
    let rp = relying_party(&state)?;
    let mine = state
        .store
        .passkeys_of(caller.tenant(), &caller.key.name)
        .await?;
    let exclude: Vec<_> = mine
        .iter()
        .filter_map(|p| serde_json::from_value::<Passkey>(p.credential.clone()).ok())
        .map(|p| p.cred_id().clone())
        .collect();
    let (mut creation, registration) = rp
        .start_passkey_registration(
            Uuid::new_v4(),
            &caller.key.name,
            &caller.key.name,
            Some(exclude),
        )
        .map_err(|e| refused(format!("the passkey registration could not start: {e}")))?;
    // Signing in without a name needs the credential kept on the authenticator (discoverable);
    // webauthn-rs leaves that to the relying party and does not check it when finishing.
    if let Some(selection) = creation.public_key.authenticator_selection.as_mut() {
        selection.resident_key = Some(ResidentKeyRequirement::Required);
        selection.require_resident_key = true;
    }
    let token = Ceremony::Register {
        tenant: caller.tenant().to_owned(),
        name: caller.key.name.clone(),
        state: registration,
    }
    .begin(&state.store)
    .await?;
    Ok(Json(CeremonyBody {
        token,
        options: options(&creation),
    }))
}

/// Finishes registering a passkey for the caller.
#[utoipa::path(post, path = "/v1/passkeys", tag = "inbox", request_body = RegisterBody, responses(
    (status = 201, description = "Registered", body = PasskeyBody),
    (status = 401, description = "Not signed in", body = ErrorBody),
    (status = 403, description = "The authenticator's answer does not verify, or the ceremony is another person's (`passkey_refused`)", body = ErrorBody),
    (status = 409, description = "This passkey is registered already (`passkey_exists`), or passkeys are off (`passkeys_unavailable`)", body = ErrorBody),
    (status = 422, description = "Unknown, used or expired ceremony (`invalid_ceremony`), a name that is empty or too long (`invalid_name`), or no credential (`invalid_credential`)", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn finish_registration(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(body): JsonBody<RegisterBody>,
) -> Result<Response, ApiError> {
    let rp = relying_party(&state)?;
    let label = body.name.trim();
    if label.is_empty() || label.chars().count() > MAX_LABEL_CHARS {
        return Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_name",
            format!("name: give the passkey a name of 1 to {MAX_LABEL_CHARS} characters"),
        ));
    }
    let credential: RegisterPublicKeyCredential = parse(body.credential)?;
    let Some(Ceremony::Register {
        tenant,
        name,
        state: registration,
    }) = Ceremony::take(&state.store, &body.token).await?
    else {
        return Err(ceremony_gone());
    };
    if tenant != caller.tenant() || name != caller.key.name {
        return Err(refused("this registration was started by another person"));
    }
    let passkey = rp
        .finish_passkey_registration(&credential, &registration)
        .map_err(|e| refused(format!("the passkey does not verify: {e}")))?;
    let stored = StoredPasskey {
        id: format!(
            "pk_{}",
            crate::shared::sign::hex(&rand::random::<[u8; 9]>())
        ),
        tenant,
        name,
        principal: caller.principal.clone(),
        holder: caller.person_holder.clone(),
        label: label.to_owned(),
        credential_id: credential_key(passkey.cred_id()),
        credential: serde_json::to_value(&passkey).unwrap_or(Value::Null),
        created_at: state.store.now(),
        last_used_at: None,
    };
    if !state.store.add_passkey(&stored, &caller.actor()).await? {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            "passkey_exists",
            "this passkey is registered already",
        ));
    }
    Ok((StatusCode::CREATED, Json(PasskeyBody::from(&stored))).into_response())
}

/// Removes one of the caller's passkeys; sessions it opened end.
#[utoipa::path(delete, path = "/v1/passkeys/{id}", tag = "inbox",
    params(("id" = String, Path, description = "Passkey id")),
    responses(
        (status = 204, description = "Removed"),
        (status = 401, description = "Not signed in", body = ErrorBody),
        (status = 404, description = "The caller has no passkey of this id", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn remove(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    _: Drained,
) -> Result<StatusCode, ApiError> {
    match state
        .store
        .remove_passkey(caller.tenant(), &caller.key.name, &id, &caller.actor())
        .await?
    {
        Some(_) => Ok(StatusCode::NO_CONTENT),
        None => Err(ApiError::not_found()),
    }
}

/// Starts signing in with a passkey: any passkey registered here (discoverable), no name asked.
#[utoipa::path(post, path = "/v1/passkeys/sign-in", tag = "inbox", responses(
    (status = 200, description = "Pass `options` to `navigator.credentials.get`", body = CeremonyBody),
    (status = 409, description = "Passkeys are off (`passkeys_unavailable`)", body = ErrorBody)))]
pub async fn start_sign_in(
    State(state): State<AppState>,
    _: Drained,
) -> Result<Json<CeremonyBody>, ApiError> {
    let rp = relying_party(&state)?;
    let (mut request, authentication) = rp
        .start_discoverable_authentication()
        .map_err(|e| refused(format!("the passkey sign-in could not start: {e}")))?;
    // A button press, not autofill: the browser's own chooser.
    request.mediation = None;
    let token = Ceremony::SignIn {
        state: authentication,
    }
    .begin(&state.store)
    .await?;
    Ok(Json(CeremonyBody {
        token,
        options: options(&request),
    }))
}

/// Finishes signing in with a passkey: sets the inbox session cookie.
#[utoipa::path(post, path = "/v1/passkeys/sign-in/finish", tag = "inbox", request_body = AssertionBody, responses(
    (status = 204, description = "Session cookie set; `GET /v1/session` says who"),
    (status = 403, description = "The assertion does not verify, or names no passkey registered here (`passkey_refused`)", body = ErrorBody),
    (status = 409, description = "Passkeys are off (`passkeys_unavailable`)", body = ErrorBody),
    (status = 415, description = "The body is not sent as application/json", body = ErrorBody),
    (status = 422, description = "Unknown, used or expired ceremony (`invalid_ceremony`), or no credential (`invalid_credential`)", body = ErrorBody)))]
pub async fn finish_sign_in(
    State(state): State<AppState>,
    headers: HeaderMap,
    JsonBody(body): JsonBody<AssertionBody>,
) -> Result<Response, ApiError> {
    let rp = relying_party(&state)?;
    // Only JSON, as `/v1/login`: a cross-site form cannot send it, so no other site can sign a
    // visitor in with a passkey of its choosing.
    let is_json = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if !is_json {
        return Err(ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "json_required",
            "send the credential as JSON with Content-Type: application/json",
        ));
    }
    let credential: PublicKeyCredential = parse(body.credential)?;
    let Some(Ceremony::SignIn {
        state: authentication,
    }) = Ceremony::take(&state.store, &body.token).await?
    else {
        return Err(ceremony_gone());
    };
    let stored = verify_discoverable(&state, rp, &credential, authentication).await?;
    if !holder_signs_in(&state, &stored.holder).await? {
        return Err(refused(
            "this passkey stands for a key that was revoked; sign in another way and add it again",
        ));
    }
    let holder = Holder::Passkey {
        passkey: stored.credential_id.clone(),
        holder: stored.holder.clone(),
    }
    .to_json();
    // Who the session stands for is read back as every session is (`GET /v1/session`), so a
    // revoked key signs nobody in.
    Ok(start_session(&state, &holder, |_| StatusCode::NO_CONTENT.into_response()).await)
}

/// Starts a step-up: a passkey confirmation for answering this high-risk request, with one of
/// the caller's own passkeys.
#[utoipa::path(post, path = "/v1/requests/{id}/step-up", tag = "requests",
    params(("id" = String, Path, description = "Request id")),
    responses(
        (status = 200, description = "Pass `options` to `navigator.credentials.get`", body = CeremonyBody),
        (status = 401, description = "Not signed in", body = ErrorBody),
        (status = 404, description = "No such request", body = ErrorBody),
        (status = 409, description = "The caller has no passkey (`no_passkey`: register one on /settings), or passkeys are off (`passkeys_unavailable`)", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn start_step_up(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    _: Drained,
) -> Result<Json<CeremonyBody>, ApiError> {
    let rp = relying_party(&state)?;
    state
        .store
        .get(caller.tenant(), &id)
        .await?
        .ok_or_else(ApiError::not_found)?;
    let passkeys: Vec<Passkey> = state
        .store
        .passkeys_of(caller.tenant(), &caller.key.name)
        .await?
        .into_iter()
        .filter_map(|p| serde_json::from_value(p.credential).ok())
        .collect();
    if passkeys.is_empty() {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            "no_passkey",
            "confirming this answer needs a passkey, and you have none; add one on the settings page (/settings)",
        ));
    }
    let (request, authentication) = rp
        .start_passkey_authentication(&passkeys)
        .map_err(|e| refused(format!("the passkey confirmation could not start: {e}")))?;
    let token = Ceremony::StepUp {
        tenant: caller.tenant().to_owned(),
        name: caller.key.name.clone(),
        request: id,
        state: authentication,
    }
    .begin(&state.store)
    .await?;
    Ok(Json(CeremonyBody {
        token,
        options: options(&request),
    }))
}

/// Finishes a step-up: the proof the answer to this request carries in `X-Clarify-Step-Up`.
#[utoipa::path(post, path = "/v1/requests/{id}/step-up/finish", tag = "requests",
    params(("id" = String, Path, description = "Request id")),
    request_body = AssertionBody,
    responses(
        (status = 200, description = "The proof, good once for 5 minutes", body = StepUpBody),
        (status = 401, description = "Not signed in", body = ErrorBody),
        (status = 403, description = "The ceremony was started for another request or another person, or the assertion does not verify with the caller's own passkeys (`passkey_refused`)", body = ErrorBody),
        (status = 409, description = "Passkeys are off (`passkeys_unavailable`)", body = ErrorBody),
        (status = 422, description = "Unknown, used or expired ceremony (`invalid_ceremony`), or no credential (`invalid_credential`)", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn finish_step_up(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<AssertionBody>,
) -> Result<Json<StepUpBody>, ApiError> {
    let rp = relying_party(&state)?;
    let credential: PublicKeyCredential = parse(body.credential)?;
    let Some(Ceremony::StepUp {
        tenant,
        name,
        request,
        state: authentication,
    }) = Ceremony::take(&state.store, &body.token).await?
    else {
        return Err(ceremony_gone());
    };
    if request != id {
        return Err(refused(
            "this passkey confirmation was started for another request; confirm this one",
        ));
    }
    if tenant != caller.tenant() || name != caller.key.name {
        return Err(refused(
            "this passkey confirmation was started by another person",
        ));
    }
    // Only the caller's own passkeys were allowed when it started: another person's does not
    // verify.
    let result = rp
        .finish_passkey_authentication(&credential, &authentication)
        .map_err(|e| refused(format!("the passkey answer does not verify: {e}")))?;
    let key = credential_key(result.cred_id());
    let Some(stored) = state.store.passkey_by_credential(&key).await? else {
        return Err(refused("this passkey is no longer registered"));
    };
    if stored.tenant != tenant || stored.name != name {
        return Err(refused("this passkey is another person's"));
    }
    if let Ok(mut passkey) = serde_json::from_value::<Passkey>(stored.credential.clone())
        && passkey.update_credential(&result).is_some()
    {
        state
            .store
            .passkey_used(&key, serde_json::to_value(&passkey).unwrap_or(Value::Null))
            .await?;
    }
    let proof = Ceremony::Proof {
        tenant,
        name,
        request,
        principal: caller.principal.clone(),
    }
    .begin(&state.store)
    .await?;
    Ok(Json(StepUpBody {
        proof,
        expires_at: time(state.store.now() + STEP_UP_WINDOW),
    }))
}

/// The actor an answer by `caller` to request `id` is made as: with the step-up its proof
/// (the `X-Clarify-Step-Up` header) gives, used up here, or an admin key's standing.
pub(crate) async fn answer_actor(
    state: &AppState,
    caller: &Caller,
    id: &str,
    proof: Option<&str>,
) -> Result<Actor, ApiError> {
    let actor = caller.actor();
    let Some(proof) = proof else {
        return Ok(actor);
    };
    let confirmed = take_proof(state, proof, id).await?;
    if confirmed.tenant != caller.tenant() || confirmed.name != caller.key.name {
        return Err(step_up_refused(
            "this passkey confirmation was made by another person",
        ));
    }
    Ok(actor.stepped_up(clarify_store::StepUp::Confirmed {
        request_id: id.to_owned(),
    }))
}
