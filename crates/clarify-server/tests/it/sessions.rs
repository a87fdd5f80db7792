//! Inbox sessions: one-time login links, `POST /v1/login`, the session cookie, CSRF and logout.

use std::sync::Arc;

use chrono::{TimeDelta, Utc};
use clarify_store::{ManualClock, Role, StoreOptions};
use reqwest::header::{COOKIE, LOCATION, ORIGIN, SET_COOKIE};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::support::{TestServer, code};

/// A client that shows redirects instead of following them, and keeps no cookies.
fn no_redirects() -> reqwest::Client {
    clarify_client::http::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("client")
}

/// The `Set-Cookie` headers of a response.
fn set_cookies(response: &reqwest::Response) -> Vec<String> {
    response
        .headers()
        .get_all(SET_COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok().map(str::to_owned))
        .collect()
}

/// The value of `clarify_session` a response sets, and its whole header.
fn session_cookie(response: &reqwest::Response) -> Option<(String, String)> {
    set_cookies(response).into_iter().find_map(|header| {
        let first = header.split(';').next()?.trim().to_owned();
        let value = first.strip_prefix("clarify_session=")?.to_owned();
        Some((value, header))
    })
}

/// A key of `role` in tenant `default` and its id.
async fn key_with_id(s: &TestServer, role: Role, name: &str) -> (String, String) {
    let token = s.key(role, name, "default").await;
    let id = s
        .store
        .authenticate(&token)
        .await
        .expect("store answers")
        .expect("the key authenticates")
        .id;
    (token, id)
}

/// A browser holding a session cookie.
struct Browser<'a> {
    s: &'a TestServer,
    client: reqwest::Client,
    cookie: String,
}

impl<'a> Browser<'a> {
    /// Logs in with a fresh one-time link for the key `key_id`.
    async fn login(s: &'a TestServer, key_id: &str) -> Self {
        let link = clarify_server::login_link(&s.store, &s.url, key_id)
            .await
            .expect("login link");
        let client = no_redirects();
        let response = client.get(&link).send().await.expect("sent");
        let (cookie, _) = session_cookie(&response).expect("a session cookie");
        Self { s, client, cookie }
    }

    fn request(&self, method: Method, path: &str) -> reqwest::RequestBuilder {
        self.client
            .request(method, format!("{}{path}", self.s.url))
            .header(COOKIE, format!("other=1; clarify_session={}", self.cookie))
    }

    async fn send(req: reqwest::RequestBuilder) -> (StatusCode, Value) {
        let response = req.send().await.expect("sent");
        let status = response.status();
        let text = response.text().await.expect("body");
        let value = if text.is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&text).unwrap_or(Value::String(text))
        };
        (status, value)
    }

    async fn get(&self, path: &str) -> (StatusCode, Value) {
        Self::send(self.request(Method::GET, path)).await
    }

    /// The CSRF token `GET /v1/session` hands out.
    async fn csrf(&self) -> String {
        let (status, session) = self.get("/v1/session").await;
        assert_eq!(status, StatusCode::OK, "{session}");
        session["csrf_token"]
            .as_str()
            .expect("a session has a CSRF token")
            .to_owned()
    }

    /// A write with optional `X-CSRF-Token` and `Origin` headers.
    async fn post(
        &self,
        path: &str,
        csrf: Option<&str>,
        origin: Option<&str>,
        body: Value,
    ) -> (StatusCode, Value) {
        let mut req = self.request(Method::POST, path).json(&body);
        if let Some(token) = csrf {
            req = req.header("x-csrf-token", token);
        }
        if let Some(origin) = origin {
            req = req.header(ORIGIN, origin);
        }
        Self::send(req).await
    }
}

#[tokio::test]
async fn a_login_link_sets_a_strict_session_cookie_and_works_once() {
    let s = TestServer::start().await;
    let (_, key_id) = key_with_id(&s, Role::Responder, "alice").await;
    let link = clarify_server::login_link(&s.store, &s.url, &key_id)
        .await
        .expect("login link");
    assert!(link.starts_with(&format!("{}/login/", s.url)), "{link}");

    let client = no_redirects();
    let response = client.get(&link).send().await.expect("sent");
    assert_eq!(response.status(), StatusCode::SEE_OTHER);
    assert_eq!(
        response
            .headers()
            .get(LOCATION)
            .and_then(|v| v.to_str().ok()),
        Some("/")
    );
    let (cookie, header) = session_cookie(&response).expect("a session cookie");
    assert!(!cookie.is_empty());
    let attributes: Vec<String> = header
        .split(';')
        .skip(1)
        .map(|a| a.trim().to_ascii_lowercase())
        .collect();
    for wanted in ["httponly", "samesite=strict", "path=/"] {
        assert!(
            attributes.iter().any(|a| a == wanted),
            "{wanted} in {header}"
        );
    }

    let again = client.get(&link).send().await.expect("sent");
    assert_eq!(
        again.status(),
        StatusCode::NOT_FOUND,
        "a login link works once"
    );
    assert!(
        session_cookie(&again).is_none(),
        "no session the second time"
    );
    assert!(
        again.text().await.expect("html").contains("not valid"),
        "a page says why"
    );

    let browser = Browser {
        s: &s,
        client,
        cookie,
    };
    let (status, session) = browser.get("/v1/session").await;
    assert_eq!(status, StatusCode::OK, "{session}");
    assert_eq!(session["name"], "alice");
    assert_eq!(session["role"], "responder");
    assert_eq!(session["tenant"], "default");
    assert!(
        session["csrf_token"]
            .as_str()
            .is_some_and(|t| !t.is_empty())
    );

    let id = s.ask(&s.admin, json!({"question": "Lunch?"})).await["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let (status, page) = browser.get("/v1/requests?status=pending").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(page["requests"][0]["id"], id.as_str());
    let (status, record) = browser.get(&format!("/v1/requests/{id}")).await;
    assert_eq!(
        (status, &record["status"]),
        (StatusCode::OK, &json!("pending"))
    );

    let (status, err) = Browser {
        cookie: "ct_not-a-session".to_owned(),
        ..browser
    }
    .get("/v1/session")
    .await;
    assert_eq!(
        (status, code(&err)),
        (StatusCode::UNAUTHORIZED, "unauthorized")
    );
}

#[tokio::test]
async fn cookie_writes_need_the_csrf_token_and_a_same_origin() {
    let s = TestServer::start().await;
    let (_, key_id) = key_with_id(&s, Role::Responder, "alice").await;
    let browser = Browser::login(&s, &key_id).await;
    let csrf = browser.csrf().await;
    let id = s.ask(&s.admin, json!({"question": "Lunch?"})).await["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let path = format!("/v1/requests/{id}/answer");
    let answer = json!({"text": "pizza"});
    let own_origin = s.url.clone();
    let wrong = "0".repeat(csrf.len());

    for (csrf, origin) in [
        (None, None),
        (Some(wrong.as_str()), None),
        (Some(""), None),
        (Some(csrf.as_str()), Some("http://evil.example")),
        (Some(csrf.as_str()), Some("null")),
        (None, Some(own_origin.as_str())),
    ] {
        let (status, err) = browser.post(&path, csrf, origin, answer.clone()).await;
        assert_eq!(
            (status, code(&err)),
            (StatusCode::FORBIDDEN, "csrf_failed"),
            "csrf {csrf:?}, origin {origin:?}"
        );
        let (_, record) = s.get(&format!("/v1/requests/{id}"), &s.admin).await;
        assert_eq!(record["status"], "pending", "nothing changed");
    }

    let (status, outcome) = browser
        .post(&path, Some(&csrf), Some(&own_origin), answer.clone())
        .await;
    assert_eq!(status, StatusCode::OK, "{outcome}");
    assert_eq!(outcome["answered_by"], "alice");

    // Without an Origin header (a non-browser client) the token alone suffices.
    let other = s.ask(&s.admin, json!({"question": "Dinner?"})).await["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let (status, outcome) = browser
        .post(
            &format!("/v1/requests/{other}/answer"),
            Some(&csrf),
            None,
            json!({"text": "soup"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{outcome}");
    let (_, record) = s.get(&format!("/v1/requests/{other}"), &s.admin).await;
    assert_eq!(record["answered_by"], "alice");

    // Another session's token does not fit this one.
    let second = Browser::login(&s, &key_id).await;
    assert_ne!(second.csrf().await, csrf);
    let third = s.ask(&s.admin, json!({"question": "Tea?"})).await["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let (status, _) = second
        .post(
            &format!("/v1/requests/{third}/answer"),
            Some(&csrf),
            None,
            json!({"text": "green"}),
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
}

#[tokio::test]
async fn a_key_opens_a_session_and_logout_ends_it() {
    let s = TestServer::start().await;
    let (token, _) = key_with_id(&s, Role::Responder, "bob").await;
    let client = no_redirects();
    let login = |key: String| {
        client
            .post(format!("{}/v1/login", s.url))
            .json(&json!({"key": key}))
            .send()
    };

    let refused = login("ck_aaaaaaaaaaaaaaaa_wrong".to_owned())
        .await
        .expect("sent");
    assert_eq!(refused.status(), StatusCode::UNAUTHORIZED);
    assert!(session_cookie(&refused).is_none());
    let err: Value = refused.json().await.expect("json");
    assert_eq!(code(&err), "unauthorized");

    let response = login(format!("  {token} ")).await.expect("sent");
    assert_eq!(response.status(), StatusCode::OK);
    let (cookie, header) = session_cookie(&response).expect("a session cookie");
    assert!(header.contains("HttpOnly") && header.contains("SameSite=Strict"));
    let body: Value = response.json().await.expect("json");
    assert_eq!(
        (&body["name"], &body["role"]),
        (&json!("bob"), &json!("responder"))
    );

    let browser = Browser {
        s: &s,
        client: client.clone(),
        cookie,
    };
    let csrf = browser.csrf().await;
    assert_eq!(
        body["csrf_token"],
        json!(csrf),
        "the login answer carries the session's CSRF token"
    );

    let as_form = client
        .post(format!("{}/v1/login", s.url))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(format!("{{\"key\": \"{token}\"}}"))
        .send()
        .await
        .expect("sent");
    assert_eq!(
        as_form.status(),
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        "a cross-site form cannot log anyone in"
    );
    assert!(session_cookie(&as_form).is_none());

    let (status, err) = browser.post("/v1/logout", None, None, json!({})).await;
    assert_eq!(
        (status, code(&err)),
        (StatusCode::FORBIDDEN, "csrf_failed"),
        "a cross-site form cannot log the user out"
    );
    assert_eq!(browser.get("/v1/session").await.0, StatusCode::OK);

    let response = browser
        .request(Method::POST, "/v1/logout")
        .header("x-csrf-token", &csrf)
        .send()
        .await
        .expect("sent");
    assert_eq!(response.status(), StatusCode::NO_CONTENT);
    let (cleared, header) = session_cookie(&response).expect("the cookie is cleared");
    assert!(
        cleared.is_empty() && header.contains("Max-Age=0"),
        "{header}"
    );

    let (status, err) = browser.get("/v1/session").await;
    assert_eq!(
        (status, code(&err)),
        (StatusCode::UNAUTHORIZED, "unauthorized")
    );
    assert_eq!(
        browser.get("/v1/requests").await.0,
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(
        s.get("/v1/requests", &token).await.0,
        StatusCode::OK,
        "the key itself still works"
    );
}

#[tokio::test]
async fn revoking_a_key_ends_its_sessions() {
    let s = TestServer::start().await;
    let (_, key_id) = key_with_id(&s, Role::Responder, "carol").await;
    let browser = Browser::login(&s, &key_id).await;
    let spare = clarify_server::login_link(&s.store, &s.url, &key_id)
        .await
        .expect("login link");
    assert_eq!(browser.get("/v1/session").await.0, StatusCode::OK);

    let (status, _) = s.post("/v1/keys/carol/revoke", &s.admin, json!({})).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(browser.get("/v1/session").await.0, StatusCode::UNAUTHORIZED);
    let response = no_redirects().get(&spare).send().await.expect("sent");
    assert_eq!(
        response.status(),
        StatusCode::NOT_FOUND,
        "an unused login link of a revoked key is dead too"
    );
    assert!(session_cookie(&response).is_none());
}

#[tokio::test]
async fn a_session_ends_when_its_time_is_up() {
    let clock = Arc::new(ManualClock::new(Utc::now()));
    let options = StoreOptions {
        clock: clock.clone(),
        reaper_interval: None,
        ..StoreOptions::default()
    };
    let s = TestServer::build("memory:", options, |c| {
        c.session_ttl = TimeDelta::hours(1);
    })
    .await;
    let (_, key_id) = key_with_id(&s, Role::Responder, "dave").await;
    let stale_link = clarify_server::login_link(&s.store, &s.url, &key_id)
        .await
        .expect("login link");
    let browser = Browser::login(&s, &key_id).await;
    clock.advance(TimeDelta::minutes(59));
    assert_eq!(browser.get("/v1/session").await.0, StatusCode::OK);
    clock.advance(TimeDelta::minutes(2));
    assert_eq!(browser.get("/v1/session").await.0, StatusCode::UNAUTHORIZED);

    clock.advance(TimeDelta::hours(24));
    let response = no_redirects().get(&stale_link).send().await.expect("sent");
    assert_eq!(
        response.status(),
        StatusCode::NOT_FOUND,
        "a login link lasts a day"
    );
}

#[tokio::test]
async fn the_cookie_is_secure_when_the_server_is_reached_over_https() {
    let plain = TestServer::start().await;
    let tls = TestServer::build("memory:", StoreOptions::default(), |c| {
        c.public_url = "https://clarify.example".to_owned();
    })
    .await;
    for (s, secure) in [(&plain, false), (&tls, true)] {
        let response = no_redirects()
            .post(format!("{}/v1/login", s.url))
            .json(&json!({"key": s.admin}))
            .send()
            .await
            .expect("sent");
        assert_eq!(response.status(), StatusCode::OK);
        let (_, header) = session_cookie(&response).expect("a session cookie");
        let has_secure = header
            .split(';')
            .any(|a| a.trim().eq_ignore_ascii_case("secure"));
        assert_eq!(has_secure, secure, "{header}");
    }
}
