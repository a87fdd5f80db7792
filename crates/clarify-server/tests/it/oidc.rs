//! OpenID Connect sign-in against a real provider: the certified `oidc-provider` package
//! (`tests/oidc-provider`), started by each test on 127.0.0.1 with a client for clarify and
//! accounts whose claims carry an e-mail and groups.
//!
//! `CLARIFY_TEST_OIDC_PROVIDER` names the provider's directory once `scripts/oidc-provider` has
//! installed it (`scripts/test` does both); without it these tests print that they skip, or
//! fail under `CLARIFY_REQUIRE_SERVICES=1`. One test signs in through the provider's pages in
//! Chromium and answers a `group:` request as that person; the others drive the same pages over
//! HTTP, so each attack (a wrong or reused `state`, a token forged or expired, a code replayed,
//! a domain not allowed) is one sign-in that must end with nothing signed in.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Stdio;

use clarify_server::state::OidcConfig;
use clarify_store::{Role, Store, StoreOptions};
use reqwest::header::{COOKIE, LOCATION, SET_COOKIE};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};

use crate::support::{TestServer, code};
use clarify_testkit::browser::Browser;

const SECRET: &str = "clarify-test-secret";

/// The provider's directory, or `None` (after saying why) when these tests are skipped.
fn provider_dir() -> Option<PathBuf> {
    match std::env::var("CLARIFY_TEST_OIDC_PROVIDER") {
        Ok(dir) if !dir.trim().is_empty() => Some(PathBuf::from(dir.trim())),
        _ if std::env::var("CLARIFY_REQUIRE_SERVICES").as_deref() == Ok("1") => panic!(
            "CLARIFY_TEST_OIDC_PROVIDER is not set, but CLARIFY_REQUIRE_SERVICES=1 requires the \
             sign-in tests; run scripts/oidc-provider (it needs Node.js 20 or newer) and set it \
             to the directory it prints"
        ),
        _ => {
            eprintln!(
                "skipping the OpenID Connect test: CLARIFY_TEST_OIDC_PROVIDER is not set \
                 (scripts/test sets it once scripts/oidc-provider has installed the provider, \
                 which needs Node.js)"
            );
            None
        }
    }
}

/// The provider, running; stopped when dropped.
struct Idp {
    issuer: String,
    _process: tokio::process::Child,
    http: reqwest::Client,
}

impl Idp {
    /// Starts the provider, sending people back to `callback`; `None` when skipped.
    async fn start(callback: &str) -> Option<Self> {
        let dir = provider_dir()?;
        let mut process = tokio::process::Command::new("node")
            .arg("provider.mjs")
            .current_dir(&dir)
            .env("CLARIFY_CALLBACK", callback)
            .env("CLARIFY_CLIENT_SECRET", SECRET)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start node in {}: {e}", dir.display()));
        let stdout = process.stdout.take().expect("piped stdout");
        let mut lines = BufReader::new(stdout).lines();
        let ready = tokio::time::timeout(std::time::Duration::from_secs(30), async {
            while let Some(line) = lines.next_line().await.expect("provider output") {
                if let Some(issuer) = line.strip_prefix("ready ") {
                    return issuer.trim().to_owned();
                }
            }
            panic!("the provider ended before it was ready");
        })
        .await
        .expect("the provider is ready within 30 seconds");
        // The provider goes on writing notices; its pipe must stay open and drained.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        Some(Self {
            issuer: ready,
            _process: process,
            http: no_redirects(),
        })
    }

    /// Makes the token endpoint forge its ID tokens (`off` to stop).
    async fn tamper(&self, mode: &str) {
        let response = self
            .http
            .post(format!("{}/__tamper?mode={mode}", self.issuer))
            .send()
            .await
            .expect("tamper sent");
        assert_eq!(response.status(), StatusCode::NO_CONTENT);
    }
}

fn no_redirects() -> reqwest::Client {
    clarify_client::http::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("client")
}

/// `name=value` of every cookie a response sets.
fn cookies_set(response: &reqwest::Response) -> Vec<(String, String)> {
    response
        .headers()
        .get_all(SET_COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .filter_map(|h| {
            let (name, value) = h.split(';').next()?.trim().split_once('=')?;
            Some((name.to_owned(), value.to_owned()))
        })
        .collect()
}

/// The session a response opens, if any.
fn session_of(response: &reqwest::Response) -> Option<String> {
    cookies_set(response)
        .into_iter()
        .find(|(n, v)| n == "clarify_session" && !v.is_empty())
        .map(|(_, v)| v)
}

fn location(response: &reqwest::Response) -> String {
    response
        .headers()
        .get(LOCATION)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_else(|| panic!("a redirect, got {}", response.status()))
        .to_owned()
}

/// A sign-in driven over HTTP the way a browser follows it, stopped at the callback.
struct Flow {
    /// The `clarify_oidc` cookie `start` set.
    started: String,
    /// Where the provider sends the browser back, with `code` and `state`.
    callback: String,
}

/// Starts a sign-in at `s` and signs in at the provider as `login`.
async fn sign_in_at_provider(s: &TestServer, idp: &Idp, login: &str) -> Flow {
    let http = no_redirects();
    let start = http
        .get(format!("{}/auth/oidc/start", s.url))
        .send()
        .await
        .expect("start");
    assert_eq!(start.status(), StatusCode::SEE_OTHER, "start redirects");
    let started = cookies_set(&start)
        .into_iter()
        .find(|(n, _)| n == "clarify_oidc")
        .map(|(_, v)| v)
        .expect("start sets the sign-in cookie");
    let mut jar: BTreeMap<String, String> = BTreeMap::new();
    let mut url = location(&start);
    assert!(url.starts_with(&idp.issuer), "{url} is the provider's");
    assert!(
        url.contains("code_challenge_method=S256"),
        "{url} uses PKCE"
    );
    assert!(url.contains("nonce="), "{url} carries a nonce");
    let mut posted = false;
    for _ in 0..10 {
        if url.starts_with(&format!("{}/auth/oidc/callback", s.url)) {
            return Flow {
                started,
                callback: url,
            };
        }
        let absolute = if url.starts_with('/') {
            format!("{}{url}", idp.issuer)
        } else {
            url.clone()
        };
        let cookie: Vec<String> = jar.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let request = if absolute.contains("/interaction/") && !posted {
            posted = true;
            http.post(&absolute)
                .form(&[("login", login), ("password", "whatever")])
        } else {
            http.get(&absolute)
        };
        let response = request
            .header(COOKIE, cookie.join("; "))
            .send()
            .await
            .expect("provider answers");
        for (name, value) in cookies_set(&response) {
            jar.insert(name, value);
        }
        assert!(
            response.status().is_redirection(),
            "the provider answered {} at {absolute}: {}",
            response.status(),
            response.text().await.unwrap_or_default()
        );
        url = location(&response);
    }
    panic!("the provider never sent the browser back to clarify");
}

/// Opens the callback `url` with the sign-in cookie `started`: status, session (if one was
/// opened), and the page's text.
async fn callback(url: &str, started: Option<&str>) -> (StatusCode, Option<String>, String) {
    let mut request = no_redirects().get(url);
    if let Some(started) = started {
        request = request.header(COOKIE, format!("clarify_oidc={started}"));
    }
    let response = request.send().await.expect("callback");
    let status = response.status();
    let session = session_of(&response);
    (status, session, response.text().await.expect("page"))
}

/// `GET /v1/session` with the session cookie `session`.
async fn whoami(s: &TestServer, session: &str) -> (StatusCode, Value) {
    let response = no_redirects()
        .get(format!("{}/v1/session", s.url))
        .header(COOKIE, format!("clarify_session={session}"))
        .send()
        .await
        .expect("session");
    let status = response.status();
    (status, response.json().await.unwrap_or(Value::Null))
}

/// A server configured for the provider, with `configure` applied after the defaults.
async fn server_with_idp(
    options: StoreOptions,
    configure: impl FnOnce(&mut OidcConfig),
) -> Option<(TestServer, Idp)> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    let idp = Idp::start(&format!("{url}/auth/oidc/callback")).await?;
    let mut oidc = OidcConfig::new(idp.issuer.clone(), "clarify");
    oidc.client_secret = Some(SECRET.to_owned());
    oidc.display_name = "Test IdP".to_owned();
    oidc.scopes = ["openid", "email", "profile", "groups"]
        .map(str::to_owned)
        .to_vec();
    oidc.admin_groups = vec!["clarify-admins".to_owned()];
    configure(&mut oidc);
    let store = Store::open("memory:", options).await.expect("store");
    let s = TestServer::on_listener(listener, store, |c| c.oidc = Some(oidc)).await;
    Some((s, idp))
}

#[tokio::test]
async fn a_person_signs_in_with_the_provider_and_their_groups_come_from_userinfo() {
    let Some((s, idp)) = server_with_idp(StoreOptions::default(), |_| {}).await else {
        return;
    };
    let flow = sign_in_at_provider(&s, &idp, "alice@example.com").await;
    let (status, session, page) = callback(&flow.callback, Some(&flow.started)).await;
    assert_eq!(status, StatusCode::OK, "{page}");
    assert!(page.contains("signed in as alice@example.com"), "{page}");
    let session = session.expect("a session is opened");
    let (status, me) = whoami(&s, &session).await;
    assert_eq!(status, StatusCode::OK, "{me}");
    assert_eq!(me["name"], "alice@example.com");
    assert_eq!(me["via"], "oidc");
    assert_eq!(me["role"], "responder");
    assert_eq!(me["tenant"], "default");
    // The provider puts groups only at the userinfo endpoint for a code-flow ID token.
    assert_eq!(me["groups"], json!(["sre"]));

    // A member of an admin group is an admin.
    let flow = sign_in_at_provider(&s, &idp, "bob@example.com").await;
    let (_, session, page) = callback(&flow.callback, Some(&flow.started)).await;
    let (_, me) = whoami(&s, &session.expect(&page)).await;
    assert_eq!(me["role"], "admin", "{me}");
}

#[tokio::test]
async fn sign_out_ends_the_session() {
    let Some((s, idp)) = server_with_idp(StoreOptions::default(), |_| {}).await else {
        return;
    };
    let flow = sign_in_at_provider(&s, &idp, "alice@example.com").await;
    let (_, session, page) = callback(&flow.callback, Some(&flow.started)).await;
    let session = session.expect(&page);
    let (status, me) = whoami(&s, &session).await;
    assert_eq!(status, StatusCode::OK);
    let csrf = me["csrf_token"].as_str().expect("csrf").to_owned();
    let response = no_redirects()
        .post(format!("{}/v1/logout", s.url))
        .header(COOKIE, format!("clarify_session={session}"))
        .header("x-csrf-token", csrf)
        .json(&json!({}))
        .send()
        .await
        .expect("logout");
    assert_eq!(response.status(), StatusCode::NO_CONTENT);
    let (status, _) = whoami(&s, &session).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "the session ended");
}

/// Asserts a callback was refused with `status`, its page saying `says`, and nothing signed in.
fn refused(result: &(StatusCode, Option<String>, String), status: StatusCode, says: &str) {
    let (got, session, page) = result;
    assert_eq!(*got, status, "{page}");
    assert!(session.is_none(), "no session may be opened: {page}");
    assert!(page.contains(says), "the page says {says:?}: {page}");
}

#[tokio::test]
async fn a_wrong_or_reused_state_signs_nobody_in() {
    let Some((s, idp)) = server_with_idp(StoreOptions::default(), |_| {}).await else {
        return;
    };
    // A callback whose state is not the one sent.
    let flow = sign_in_at_provider(&s, &idp, "alice@example.com").await;
    let forged = regex_replace_state(&flow.callback, "forged-state");
    refused(
        &callback(&forged, Some(&flow.started)).await,
        StatusCode::BAD_REQUEST,
        "This sign-in does not match",
    );
    // The sign-in it belonged to is spent too: the genuine callback no longer works.
    refused(
        &callback(&flow.callback, Some(&flow.started)).await,
        StatusCode::BAD_REQUEST,
        "expired or was already used",
    );

    // A genuine sign-in, then its callback replayed.
    let flow = sign_in_at_provider(&s, &idp, "alice@example.com").await;
    let first = callback(&flow.callback, Some(&flow.started)).await;
    assert_eq!(first.0, StatusCode::OK, "{}", first.2);
    assert!(first.1.is_some());
    refused(
        &callback(&flow.callback, Some(&flow.started)).await,
        StatusCode::BAD_REQUEST,
        "expired or was already used",
    );

    // A callback without the cookie of the browser that started the sign-in.
    let flow = sign_in_at_provider(&s, &idp, "alice@example.com").await;
    refused(
        &callback(&flow.callback, None).await,
        StatusCode::BAD_REQUEST,
        "not started in this browser",
    );
}

/// `url` with its `state` parameter set to `state`.
fn regex_replace_state(url: &str, state: &str) -> String {
    let mut parsed = url::Url::parse(url).expect("a URL");
    let pairs: Vec<(String, String)> = parsed
        .query_pairs()
        .map(|(k, v)| {
            let v = if k == "state" {
                state.to_owned()
            } else {
                v.into_owned()
            };
            (k.into_owned(), v)
        })
        .collect();
    parsed.query_pairs_mut().clear().extend_pairs(pairs);
    parsed.to_string()
}

#[tokio::test]
async fn a_replayed_code_signs_nobody_in() {
    let Some((s, idp)) = server_with_idp(StoreOptions::default(), |_| {}).await else {
        return;
    };
    let used = sign_in_at_provider(&s, &idp, "alice@example.com").await;
    let first = callback(&used.callback, Some(&used.started)).await;
    assert_eq!(first.0, StatusCode::OK, "{}", first.2);
    // An attacker who saw the first callback starts a sign-in of their own and presents the
    // spent code with their own state: the provider refuses the code (spent, and bound to
    // another PKCE verifier).
    let theirs = sign_in_at_provider(&s, &idp, "mallory@elsewhere.test").await;
    let their_state = url::Url::parse(&theirs.callback)
        .expect("url")
        .query_pairs()
        .find(|(k, _)| k == "state")
        .map(|(_, v)| v.into_owned())
        .expect("state");
    let replay = regex_replace_state(&used.callback, &their_state);
    refused(
        &callback(&replay, Some(&theirs.started)).await,
        StatusCode::FORBIDDEN,
        "The identity provider refused the sign-in",
    );
}

#[tokio::test]
async fn forged_or_expired_id_tokens_sign_nobody_in() {
    let Some((s, idp)) = server_with_idp(StoreOptions::default(), |_| {}).await else {
        return;
    };
    for (mode, says) in [
        ("other-key", "Signature verification failed"),
        ("other-audience", "Invalid audiences"),
        ("expired", "Expired"),
        ("wrong-nonce", "Invalid nonce"),
    ] {
        idp.tamper(mode).await;
        let flow = sign_in_at_provider(&s, &idp, "alice@example.com").await;
        let result = callback(&flow.callback, Some(&flow.started)).await;
        assert_eq!(result.0, StatusCode::FORBIDDEN, "{mode}: {}", result.2);
        assert!(result.1.is_none(), "{mode}: no session");
        assert!(
            result.2.contains("did not verify") && result.2.contains(says),
            "{mode}: the page says {says:?}: {}",
            result.2
        );
    }
    // A token that expired within the allowed clock skew (60 s) is still accepted.
    idp.tamper("expired-within-skew").await;
    let flow = sign_in_at_provider(&s, &idp, "alice@example.com").await;
    let result = callback(&flow.callback, Some(&flow.started)).await;
    assert_eq!(result.0, StatusCode::OK, "{}", result.2);
    assert!(result.1.is_some());
}

#[tokio::test]
async fn an_email_outside_the_allowed_domains_is_refused_with_a_clear_page() {
    let options = StoreOptions::default();
    let Some((s, idp)) = server_with_idp(options, |o| {
        o.allowed_domains = vec!["example.com".to_owned()];
    })
    .await
    else {
        return;
    };
    let flow = sign_in_at_provider(&s, &idp, "mallory@elsewhere.test").await;
    refused(
        &callback(&flow.callback, Some(&flow.started)).await,
        StatusCode::FORBIDDEN,
        "limited to e-mail addresses at example.com; you signed in as mallory@elsewhere.test",
    );
    let flow = sign_in_at_provider(&s, &idp, "alice@example.com").await;
    let allowed = callback(&flow.callback, Some(&flow.started)).await;
    assert_eq!(allowed.0, StatusCode::OK, "{}", allowed.2);
}

#[tokio::test]
async fn without_key_login_people_sign_in_only_through_the_provider() {
    let Some((s, _idp)) = server_with_idp(StoreOptions::default(), |o| o.key_login = false).await
    else {
        return;
    };
    let token = s.key(Role::Responder, "carol", "default").await;
    let (status, err) = s
        .call(
            Method::POST,
            "/v1/login",
            None,
            Some(json!({"key": token.clone()})),
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{err}");
    assert_eq!(code(&err), "key_login_disabled");
    let key_id = s
        .store
        .authenticate(&token)
        .await
        .expect("as the test set it up")
        .expect("as the test set it up")
        .id;
    let link = clarify_server::login_link(&s.store, &s.url, &key_id)
        .await
        .expect("link");
    let response = no_redirects().get(&link).send().await.expect("link");
    assert_eq!(response.status(), StatusCode::FORBIDDEN);
    assert!(session_of(&response).is_none());
    assert!(
        response
            .text()
            .await
            .expect("as the test set it up")
            .contains("Login links are turned off")
    );
    // Keys still work for agents and scripts over the API.
    let (status, me) = s.get("/v1/session", &token).await;
    assert_eq!(status, StatusCode::OK, "{me}");
    // The inbox page offers the provider's button and no key field.
    let page = clarify_client::http::client()
        .expect("an HTTP client")
        .get(&s.url)
        .send()
        .await
        .expect("as the test set it up")
        .text()
        .await
        .expect("as the test set it up");
    assert!(page.contains("data-oidc=\"Test IdP\""), "{page}");
    assert!(page.contains("data-key-login=\"false\""), "{page}");
}

#[tokio::test]
async fn signing_in_through_the_providers_pages_in_a_browser_then_answering_a_group_request() {
    let Some((s, idp)) = server_with_idp(StoreOptions::default(), |_| {}).await else {
        return;
    };
    let Some(b) = Browser::launch(1280, 900).await else {
        return;
    };
    let record = s
        .ask(
            &s.admin,
            json!({"question": "Restart the cache?", "choices": ["yes", "no"], "responders": ["group:sre"]}),
        )
        .await;
    let id = record["id"].as_str().expect("id").to_owned();
    b.run("sign in and answer", async {
        b.goto(&s.url).await;
        b.click("//a[@id='oidc-sign-in'][contains(., 'Sign in with Test IdP')]")
            .await;
        b.type_into("//input[@id='login']", "alice@example.com")
            .await;
        b.click("//button[@id='submit']").await;
        // The provider's pages may take a moment to send the browser back.
        b.at(&format!("{}/", s.url)).await;
        b.until(
            "the inbox to open after signing in",
            "return !document.getElementById('topbar').hidden \
             && document.getElementById('live').dataset.state === 'live'",
            vec![],
        )
        .await;
        let who = b
            .js("return document.getElementById('who').textContent", vec![])
            .await;
        assert!(
            who.as_str()
                .unwrap_or_default()
                .contains("alice@example.com"),
            "{who}"
        );
        b.click("//a[contains(@class, 'row')][contains(., 'Restart the cache?')]")
            .await;
        b.click("//button[contains(@class, 'choice')][contains(., 'yes')]")
            .await;
        b.click("//button[@type='submit'][contains(., 'Send answer')]")
            .await;
        b.wait_for("//div[contains(@class, 'notice')][contains(., 'Answer sent.')]")
            .await;
    })
    .await;
    let (status, record) = s.get(&format!("/v1/requests/{id}"), &s.admin).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(record["status"], "answered", "{record}");
    assert_eq!(record["answered_by"], "alice@example.com");
    assert_eq!(record["outcome"]["answered_via"], "inbox");
    drop(idp);
}
