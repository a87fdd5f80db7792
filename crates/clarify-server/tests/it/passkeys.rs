//! Passkeys and step-up, in a real browser with a virtual authenticator (the DevTools protocol's
//! `WebAuthn.addVirtualAuthenticator`) against a server on a real socket whose public URL is
//! `http://localhost:PORT` (a passkey's relying party must be a host name, and localhost is a
//! secure context).
//!
//! One test does what a person does: adds a passkey on `/settings`, signs out, signs in with
//! it, and approves a high-risk request in the inbox, confirming with the passkey. The other
//! uses the browser only as the authenticator and checks every refusal through the API: a
//! confirmation made for another request, replayed, older than 5 minutes, or made with another
//! person's passkey; a responder key without one (`403 step_up_required`); an admin key's
//! answer, accepted and recorded in the audit chain.

use std::sync::Arc;

use chrono::{TimeDelta, Utc};
use clarify_core::Risk;
use clarify_store::{ManualClock, Role, StoreOptions};
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::support::{TestServer, code};
use clarify_testkit::browser::Browser;

/// A server with `[decisions] step_up = "high"` on `clock`, reached at `http://localhost:PORT`.
async fn server(clock: Arc<ManualClock>) -> TestServer {
    let options = StoreOptions {
        clock,
        reaper_interval: None,
        step_up: Some(Risk::High),
        ..StoreOptions::default()
    };
    TestServer::build("memory:", options, |c| {
        c.public_url = c.public_url.replace("127.0.0.1", "localhost");
    })
    .await
}

fn local(s: &TestServer) -> String {
    s.url.replace("127.0.0.1", "localhost")
}

/// A virtual platform authenticator in the browser's tab: it keeps discoverable credentials
/// and verifies the user at once, as a phone's fingerprint reader would. Its id.
pub(crate) async fn authenticator(b: &Browser) -> String {
    b.command(
        "/goog/cdp/execute",
        json!({"cmd": "WebAuthn.enable", "params": {"enableUI": false}}),
    )
    .await;
    let added = b
        .command(
            "/goog/cdp/execute",
            json!({"cmd": "WebAuthn.addVirtualAuthenticator", "params": {"options": {
            "protocol": "ctap2", "transport": "internal", "hasResidentKey": true,
            "hasUserVerification": true, "isUserVerified": true,
            "automaticPresenceSimulation": true}}}),
        )
        .await;
    added["authenticatorId"]
        .as_str()
        .expect("an authenticator id")
        .to_owned()
}

/// How many signatures the authenticator's one credential has made.
async fn signatures(b: &Browser, authenticator: &str) -> u64 {
    let held = b
        .command(
            "/goog/cdp/execute",
            json!({"cmd": "WebAuthn.getCredentials", "params": {"authenticatorId": authenticator}}),
        )
        .await;
    held["credentials"][0]["signCount"]
        .as_u64()
        .unwrap_or_else(|| panic!("one credential: {held}"))
}

/// Takes the credential `raw_id` (base64url) off the authenticator, as a person whose device
/// holds only their own passkey.
async fn forget(b: &Browser, authenticator: &str, raw_id: &str) {
    let mut id = raw_id.replace('-', "+").replace('_', "/");
    while !id.len().is_multiple_of(4) {
        id.push('=');
    }
    b.command(
        "/goog/cdp/execute",
        json!({"cmd": "WebAuthn.removeCredential",
               "params": {"authenticatorId": authenticator, "credentialId": id}}),
    )
    .await;
}

/// The browser's side of a ceremony: `navigator.credentials.create` (`kind` "create") or
/// `.get` with the server's `options`, the credential returned as the JSON the server takes.
/// `allow` replaces the credentials a `get` may use (to make an assertion with a given one).
const CEREMONY: &str = r#"
const [options, kind, allow] = arguments;
const b = (t) => { const s = t.replaceAll('-', '+').replaceAll('_', '/');
  const bin = atob(s + '='.repeat((4 - s.length % 4) % 4));
  return Uint8Array.from(bin, (c) => c.charCodeAt(0)).buffer; };
const t = (buf) => btoa(String.fromCharCode(...new Uint8Array(buf)))
  .replaceAll('+', '-').replaceAll('/', '_').replace(/=+$/, '');
const clean = (v) => Array.isArray(v) ? v.map(clean)
  : (v && typeof v === 'object') ? Object.fromEntries(Object.entries(v)
      .filter(([, x]) => x !== null).map(([k, x]) => [k, clean(x)])) : v;
const o = clean(options.publicKey);
o.challenge = b(o.challenge);
return (async () => {
  if (kind === 'create') {
    o.user.id = b(o.user.id);
    if (o.excludeCredentials) o.excludeCredentials = o.excludeCredentials.map((d) => ({ ...d, id: b(d.id) }));
    const c = await navigator.credentials.create({ publicKey: o });
    return { id: c.id, rawId: t(c.rawId), type: c.type,
      response: { attestationObject: t(c.response.attestationObject), clientDataJSON: t(c.response.clientDataJSON) },
      extensions: c.getClientExtensionResults() };
  }
  if (allow) o.allowCredentials = [{ type: 'public-key', id: b(allow) }];
  else if (o.allowCredentials) o.allowCredentials = o.allowCredentials.map((d) => ({ ...d, id: b(d.id) }));
  const c = await navigator.credentials.get({ publicKey: o });
  return { id: c.id, rawId: t(c.rawId), type: c.type,
    response: { authenticatorData: t(c.response.authenticatorData), clientDataJSON: t(c.response.clientDataJSON),
      signature: t(c.response.signature), userHandle: c.response.userHandle ? t(c.response.userHandle) : null },
    extensions: c.getClientExtensionResults() };
})();
"#;

async fn made(b: &Browser, options: &Value, kind: &str, allow: Option<&str>) -> Value {
    b.js(CEREMONY, vec![options.clone(), json!(kind), json!(allow)])
        .await
}

/// Sends `body` to `path` with `key` and, when given, the step-up `proof`.
async fn post(
    s: &TestServer,
    path: &str,
    key: &str,
    body: Value,
    proof: Option<&str>,
) -> (StatusCode, Value) {
    let mut req = s
        .client
        .post(format!("{}{path}", s.url))
        .bearer_auth(key)
        .json(&body);
    if let Some(p) = proof {
        req = req.header("X-Clarify-Step-Up", p);
    }
    let response = req.send().await.expect("request");
    let status = response.status();
    let body = response.json().await.unwrap_or(Value::Null);
    (status, body)
}

/// Approves request `id` with `key` and, when given, the step-up `proof`.
async fn answer(s: &TestServer, id: &str, key: &str, proof: Option<&str>) -> (StatusCode, Value) {
    post(
        s,
        &format!("/v1/requests/{id}/answer"),
        key,
        approve(),
        proof,
    )
    .await
}

/// Asserts that `reply` (from [`post`]) is a refusal with `status` and the error `code`.
fn refused(reply: (StatusCode, Value), status: StatusCode, code: &str) {
    let (got, body) = reply;
    assert_eq!(got, status, "{body}");
    assert_eq!(crate::support::code(&body), code, "{body}");
}

/// Registers a passkey for the holder of `key`; returns its credential id.
async fn register(b: &Browser, s: &TestServer, key: &str, name: &str) -> String {
    let (status, started) = post(s, "/v1/passkeys/registration", key, json!({}), None).await;
    assert_eq!(status, StatusCode::OK, "{started}");
    assert_eq!(
        started["options"]["publicKey"]["authenticatorSelection"]["residentKey"], "required",
        "a passkey here is discoverable"
    );
    let credential = made(b, &started["options"], "create", None).await;
    let (status, body) = post(
        s,
        "/v1/passkeys",
        key,
        json!({"token": started["token"], "name": name, "credential": credential}),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    credential["rawId"].as_str().expect("raw id").to_owned()
}

/// A high-risk approval, asked with the admin key.
async fn high_risk(s: &TestServer, what: &str) -> String {
    let body = json!({"question": what, "kind": "approval",
                      "action": {"name": "wire_transfer", "arguments": {"amount": 40000}},
                      "risk": "high"});
    let record = s.ask(&s.admin, body).await;
    assert_eq!(record["risk"], "high", "{record}");
    assert_eq!(record["step_up"], true, "{record}");
    record["id"].as_str().expect("id").to_owned()
}

/// A finished step-up of the holder of `key` for request `id`; the proof.
async fn step_up(b: &Browser, s: &TestServer, key: &str, id: &str) -> String {
    let (status, started) = post(
        s,
        &format!("/v1/requests/{id}/step-up"),
        key,
        json!({}),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{started}");
    let assertion = made(b, &started["options"], "get", None).await;
    let (status, done) = post(
        s,
        &format!("/v1/requests/{id}/step-up/finish"),
        key,
        json!({"token": started["token"], "credential": assertion}),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{done}");
    done["proof"].as_str().expect("proof").to_owned()
}

const SEND: &str = "//button[@type='submit'][contains(., 'Send answer')]";

fn approve() -> Value {
    json!({"decision": "approve"})
}

#[tokio::test]
async fn every_answer_without_a_fresh_confirmation_for_it_is_refused() {
    let Some(b) = Browser::launch(1000, 800).await else {
        return;
    };
    let clock = Arc::new(ManualClock::new(Utc::now()));
    let s = server(clock.clone()).await;
    b.run("step_up_refusals", async {
        b.goto(&format!("{}/settings", local(&s))).await;
        authenticator(&b).await;
        let alice = s.key(Role::Responder, "alice", "default").await;
        let bob = s.key(Role::Responder, "bob", "default").await;
        register(&b, &s, &alice, "alice's laptop").await;
        let bobs = register(&b, &s, &bob, "bob's phone").await;
        let (status, listed) = s.get("/v1/passkeys", &alice).await;
        assert_eq!(status, StatusCode::OK);
        let names: Vec<&str> = listed["passkeys"]
            .as_array()
            .expect("list")
            .iter()
            .filter_map(|p| p["name"].as_str())
            .collect();
        assert_eq!(names, ["alice's laptop"], "each person sees only theirs");

        let one = high_risk(&s, "Wire 40,000 EUR to ACME?").await;
        let two = high_risk(&s, "Wire 12,000 EUR to Globex?").await;

        // A responder key alone is refused.
        refused(
            answer(&s, &one, &alice, None).await,
            StatusCode::FORBIDDEN,
            "step_up_required",
        );

        // A confirmation made for another request: refused when finished there...
        let (_, started) = post(
            &s,
            &format!("/v1/requests/{one}/step-up"),
            &alice,
            json!({}),
            None,
        )
        .await;
        let assertion = made(&b, &started["options"], "get", None).await;
        refused(
            post(
                &s,
                &format!("/v1/requests/{two}/step-up/finish"),
                &alice,
                json!({"token": started["token"], "credential": assertion}),
                None,
            )
            .await,
            StatusCode::FORBIDDEN,
            "passkey_refused",
        );
        // ... and its ceremony is used up: the same assertion again is a replay.
        refused(
            post(
                &s,
                &format!("/v1/requests/{one}/step-up/finish"),
                &alice,
                json!({"token": started["token"], "credential": assertion}),
                None,
            )
            .await,
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_ceremony",
        );
        // A replayed assertion under a new ceremony does not verify (its challenge is old).
        let (_, again) = post(
            &s,
            &format!("/v1/requests/{one}/step-up"),
            &alice,
            json!({}),
            None,
        )
        .await;
        refused(
            post(
                &s,
                &format!("/v1/requests/{one}/step-up/finish"),
                &alice,
                json!({"token": again["token"], "credential": assertion}),
                None,
            )
            .await,
            StatusCode::FORBIDDEN,
            "passkey_refused",
        );

        // ... and a proof made for one request does not answer another.
        let proof = step_up(&b, &s, &alice, &one).await;
        refused(
            answer(&s, &two, &alice, Some(&proof)).await,
            StatusCode::FORBIDDEN,
            "step_up_required",
        );
        // The proof is single-use, so that try used it up, and it is refused for its own
        // request afterwards too.
        refused(
            answer(&s, &one, &alice, Some(&proof)).await,
            StatusCode::FORBIDDEN,
            "step_up_required",
        );

        // Another person's proof does not let alice answer.
        let bobs_proof = step_up(&b, &s, &bob, &one).await;
        refused(
            answer(&s, &one, &alice, Some(&bobs_proof)).await,
            StatusCode::FORBIDDEN,
            "step_up_required",
        );

        // Another person's passkey does not confirm alice's answer.
        let (_, started) = post(
            &s,
            &format!("/v1/requests/{one}/step-up"),
            &alice,
            json!({}),
            None,
        )
        .await;
        let bobs_assertion = made(&b, &started["options"], "get", Some(&bobs)).await;
        refused(
            post(
                &s,
                &format!("/v1/requests/{one}/step-up/finish"),
                &alice,
                json!({"token": started["token"], "credential": bobs_assertion}),
                None,
            )
            .await,
            StatusCode::FORBIDDEN,
            "passkey_refused",
        );

        // A proof older than 5 minutes is refused.
        let late = step_up(&b, &s, &alice, &one).await;
        clock.advance(TimeDelta::minutes(5) + TimeDelta::seconds(1));
        refused(
            answer(&s, &one, &alice, Some(&late)).await,
            StatusCode::FORBIDDEN,
            "step_up_required",
        );
        let (_, record) = s.get(&format!("/v1/requests/{one}"), &s.admin).await;
        assert_eq!(record["status"], "pending", "nothing refused answered it");

        // A fresh one, made for this answer, is accepted, and answers as alice.
        let fresh = step_up(&b, &s, &alice, &one).await;
        clock.advance(TimeDelta::minutes(4));
        let (status, body) = answer(&s, &one, &alice, Some(&fresh)).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        let (_, record) = s.get(&format!("/v1/requests/{one}"), &s.admin).await;
        assert_eq!(record["status"], "answered");
        assert_eq!(record["answered_by"], "alice");

        // The batch route refuses a high-risk item too.
        let (status, body) = post(
            &s,
            "/v1/answers",
            &bob,
            json!({"items": [{"id": two, "answer": approve()}]}),
            None,
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(body["items"][0]["status"], 403, "{body}");
        assert_eq!(
            body["items"][0]["body"]["error"]["code"],
            "step_up_required"
        );

        // An admin key is accepted, and the audit chain says it answered without a passkey.
        let (status, body) = post(
            &s,
            &format!("/v1/requests/{two}/answer"),
            &s.admin,
            approve(),
            None,
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        s.store.sync_feed().await.expect("sync");
        let (status, audit) = s.get("/v1/audit?limit=1000", &s.admin).await;
        assert_eq!(status, StatusCode::OK, "{audit}");
        let waived: Vec<&Value> = audit["events"]
            .as_array()
            .expect("events")
            .iter()
            .filter(|e| e["kind"] == "request.step_up_waived")
            .collect();
        assert_eq!(waived.len(), 1, "{audit}");
        assert_eq!(waived[0]["subject"], format!("request:{two}"));
        assert!(
            waived[0]["principal"]
                .as_str()
                .is_some_and(|p| p.starts_with("key:admin")),
            "{audit}"
        );
    })
    .await;
}

#[tokio::test]
async fn a_link_page_confirms_with_the_links_own_persons_passkey() {
    let Some(b) = Browser::launch(1000, 800).await else {
        return;
    };
    let clock = Arc::new(ManualClock::new(Utc::now()));
    let s = server(clock).await;
    b.run("step_up_link", async {
        b.goto(&format!("{}/settings", local(&s))).await;
        let device = authenticator(&b).await;
        let alice = s.key(Role::Responder, "alice", "default").await;
        let bob = s.key(Role::Responder, "bob", "default").await;
        register(&b, &s, &alice, "alice's laptop").await;
        let bobs = register(&b, &s, &bob, "bob's phone").await;
        let id = high_risk(&s, "Wire 40,000 EUR to ACME?").await;
        let personal = s.state.personal_url(&id, "alice");
        let path = personal
            .strip_prefix(&local(&s))
            .expect("a link on this server")
            .to_owned();

        // Without a confirmation the link is refused like every other path.
        let (status, body) = s
            .call(reqwest::Method::POST, &path, None, Some(approve()))
            .await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
        assert_eq!(code(&body), "step_up_required");

        // Bob's passkey does not confirm alice's link.
        let (status, started) = s
            .call(
                reqwest::Method::POST,
                &format!("{path}/step-up"),
                None,
                Some(json!({})),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{started}");
        let assertion = made(&b, &started["options"], "get", Some(&bobs)).await;
        let (status, body) = s
            .call(
                reqwest::Method::POST,
                &format!("{path}/step-up/finish"),
                None,
                Some(json!({"token": started["token"], "credential": assertion})),
            )
            .await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
        assert_eq!(code(&body), "passkey_refused");

        // The link page in the browser, on alice's device: its script asks for her passkey,
        // then answers.
        forget(&b, &device, &bobs).await;
        b.goto(&personal).await;
        b.wait_for("//*[@id='step-up-notice'][contains(., 'passkey')]")
            .await;
        b.click("//button[contains(@class, 'approve')]").await;
        b.click(SEND).await;
        b.until(
            "the answer to be recorded",
            "return document.body.textContent.includes('Answer sent')",
            vec![],
        )
        .await;
        let (_, record) = s.get(&format!("/v1/requests/{id}"), &s.admin).await;
        assert_eq!(record["status"], "answered", "{record}");
        assert_eq!(record["answered_by"], "alice");
    })
    .await;
}

#[tokio::test]
async fn a_person_adds_a_passkey_signs_in_with_it_and_confirms_a_high_risk_approval() {
    let Some(b) = Browser::launch(1200, 900).await else {
        return;
    };
    let clock = Arc::new(ManualClock::new(Utc::now()));
    let s = server(clock).await;
    b.run("passkey_sign_in_and_step_up", async {
        let key = s
            .store
            .create_key("alice", Role::Responder, "default", &clarify_store::Actor::system())
            .await
            .expect("key");
        let link = clarify_server::login_link(&s.store, &local(&s), &key.key.id)
            .await
            .expect("login link");
        b.goto(&link).await;
        let device = authenticator(&b).await;
        b.until(
            "the inbox to open after the login link",
            "return !document.getElementById('topbar').hidden",
            vec![],
        )
        .await;

        // Settings: add a passkey.
        b.click("//a[@id='tab-settings']").await;
        b.wait_for("//*[@id='no-passkeys']").await;
        b.type_into("//input[@id='passkey-name']", "Work laptop").await;
        b.click("//button[@id='add-passkey']").await;
        b.wait_for("//li[contains(@class, 'passkey')][contains(., 'Work laptop')]").await;
        let (_, listed) = s.get("/v1/passkeys", &key.token).await;
        assert_eq!(listed["passkeys"][0]["name"], "Work laptop", "{listed}");

        // Sign out, and back in with the passkey alone.
        b.click("//button[@id='logout']").await;
        b.click("//button[@id='passkey-sign-in']").await;
        b.until(
            "the inbox to open after the passkey sign-in",
            "return !document.getElementById('topbar').hidden",
            vec![],
        )
        .await;
        let via = b
            .js(
                "return fetch('/v1/session').then((r) => r.json()).then((s) => s.name + ' ' + s.via);",
                vec![],
            )
            .await;
        assert_eq!(via, "alice passkey");

        // A high-risk approval: the inbox says why a passkey is asked, confirms, then answers.
        let before = signatures(&b, &device).await;
        let id = high_risk(&s, "Wire 40,000 EUR to ACME?").await;
        b.goto(&format!("{}/#/requests/{id}", local(&s))).await;
        b.wait_for("//*[@id='step-up-notice'][contains(., 'passkey')]").await;
        b.click("//button[contains(@class, 'approve')]").await;
        b.click(SEND).await;
        b.until(
            "the answer to be recorded",
            "return document.body.textContent.includes('Answer sent')",
            vec![],
        )
        .await;
        let (_, record) = s.get(&format!("/v1/requests/{id}"), &s.admin).await;
        assert_eq!(record["status"], "answered", "{record}");
        assert_eq!(record["answered_by"], "alice");
        assert_eq!(record["outcome"]["questions"][0]["decision"], "approve", "{record}");
        // The device signed once more: the confirmation of this answer.
        assert_eq!(signatures(&b, &device).await, before + 1);

        // Removing the passkey ends the session it opened.
        let (_, listed) = s.get("/v1/passkeys", &key.token).await;
        let pk = listed["passkeys"][0]["id"].as_str().expect("id").to_owned();
        let response = s
            .client
            .delete(format!("{}/v1/passkeys/{pk}", s.url))
            .bearer_auth(&key.token)
            .send()
            .await
            .expect("delete");
        assert_eq!(response.status(), StatusCode::NO_CONTENT);
        let status = b
            .js("return fetch('/v1/session').then((r) => r.status);", vec![])
            .await;
        assert_eq!(status, 401);
    })
    .await;
}
