//! On-call schedules as responders, against PagerDuty- and Opsgenie-shaped fakes: whoever is
//! on call answers and nobody else does, a handover is seen at the escalation, a reading is
//! reused within its time, and a schedule that cannot be read lets the other responders answer,
//! says why on the record, does not hold creation up, and is read again at the escalation.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::{TimeDelta, TimeZone, Utc};
use clarify_server::state::oncall::{Directory, OnCallConfig, Provider};
use clarify_store::{ManualClock, Role, StoreOptions};
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::fake_opsgenie::{self, FakeOpsgenie};
use crate::fake_pagerduty::{self, FakePagerDuty, PdUser};
use crate::support::{TestServer, code};

const ALICE: PdUser = PdUser {
    id: "PALICE1",
    email: "alice@example.com",
};
const DAVE: PdUser = PdUser {
    id: "PDAVE01",
    email: "dave@example.com",
};

/// How a test's server reads schedules.
struct Setup {
    pagerduty: Option<(String, String)>,
    opsgenie: Option<(String, String)>,
    timeout: Duration,
}

impl Setup {
    fn pagerduty(fake: &FakePagerDuty) -> Self {
        Self {
            pagerduty: Some((fake.api_url.clone(), fake_pagerduty::TOKEN.to_owned())),
            opsgenie: None,
            timeout: Duration::from_secs(5),
        }
    }

    fn opsgenie(fake: &FakeOpsgenie) -> Self {
        Self {
            pagerduty: None,
            opsgenie: Some((fake.api_url.clone(), fake_opsgenie::API_KEY.to_owned())),
            timeout: Duration::from_secs(5),
        }
    }

    /// A server on a manual clock (its reaper off: the test escalates through the store),
    /// reading schedules as set up, with `[identities]` naming Alice by her PagerDuty id and
    /// Dave by his e-mail address.
    async fn server(self, clock: &Arc<ManualClock>) -> TestServer {
        let provider = |(api_url, token): (String, String)| Provider { token, api_url };
        let config = OnCallConfig {
            pagerduty: self.pagerduty.map(provider),
            opsgenie: self.opsgenie.map(provider),
            timeout: self.timeout,
            ..OnCallConfig::default()
        };
        let identities = BTreeMap::from([
            ("pagerduty:PALICE1".to_owned(), "alice".to_owned()),
            ("email:dave@example.com".to_owned(), "dave".to_owned()),
        ]);
        let clock_dyn: Arc<dyn clarify_store::Clock> = clock.clone();
        let directory = Directory::new(config, identities, clock_dyn).expect("a directory");
        let options = StoreOptions {
            clock: clock.clone(),
            reaper_interval: None,
            on_call: Some(Arc::new(directory).reader()),
            ..StoreOptions::default()
        };
        TestServer::build("memory:", options, |_| {}).await
    }
}

fn clock() -> Arc<ManualClock> {
    let start = Utc
        .with_ymd_and_hms(2026, 12, 7, 3, 0, 0)
        .single()
        .expect("a valid time");
    Arc::new(ManualClock::new(start))
}

fn request_id(record: &Value) -> String {
    record["id"].as_str().expect("a request id").to_owned()
}

/// Answers `id` as `key`; the status and body.
async fn answer(s: &TestServer, id: &str, key: &str) -> (StatusCode, Value) {
    s.post(
        &format!("/v1/requests/{id}/answer"),
        key,
        json!({"option": "yes"}),
    )
    .await
}

#[tokio::test]
async fn the_person_on_call_answers_and_nobody_else_does() {
    let pd = FakePagerDuty::start().await;
    pd.on_call("PSCHED1", &[ALICE]);
    let clock = clock();
    let s = Setup::pagerduty(&pd).server(&clock).await;
    let alice = s.key(Role::Responder, "alice", "default").await;
    let bob = s.key(Role::Responder, "bob", "default").await;
    let record = s
        .ask(
            &s.admin,
            json!({"question": "Roll back payments?", "choices": ["yes", "no"],
                   "responders": ["oncall:pagerduty:PSCHED1"]}),
        )
        .await;
    let id = request_id(&record);
    assert_eq!(
        record["on_call"][0]["responder"],
        "oncall:pagerduty:PSCHED1"
    );
    assert_eq!(record["on_call"][0]["people"], json!(["alice"]), "{record}");
    assert!(record["on_call"][0].get("unreadable").is_none(), "{record}");

    let (status, err) = answer(&s, &id, &bob).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{err}");
    assert_eq!(code(&err), "not_a_responder");
    let (status, outcome) = answer(&s, &id, &alice).await;
    assert_eq!(status, StatusCode::OK, "{outcome}");
    assert_eq!(outcome["answered_by"], "alice");
    // PagerDuty was asked for that schedule's current on-calls, with the users' e-mails.
    let calls = pd.calls();
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert!(calls[0].contains("schedule_ids%5B%5D=PSCHED1"), "{calls:?}");
    assert!(calls[0].contains("include%5B%5D=users"), "{calls:?}");
}

#[tokio::test]
async fn an_escalation_policy_names_its_first_level_and_unmapped_people_by_email() {
    let pd = FakePagerDuty::start().await;
    let erin = PdUser {
        id: "PERIN01",
        email: "erin@example.com",
    };
    pd.policy("PPOL001", &[&[DAVE, erin.clone()], &[ALICE]]);
    let clock = clock();
    let s = Setup::pagerduty(&pd).server(&clock).await;
    let record = s
        .ask(
            &s.admin,
            json!({"question": "Page payments?", "choices": ["yes", "no"],
                   "responders": ["oncall:pagerduty:policy:PPOL001"]}),
        )
        .await;
    // Dave through `email:` in [identities]; Erin, whom it does not name, by her address.
    assert_eq!(
        record["on_call"][0]["people"],
        json!(["dave", "erin@example.com"]),
        "{record}"
    );
    let erin_key = s.key(Role::Responder, "erin@example.com", "default").await;
    let alice = s.key(Role::Responder, "alice", "default").await;
    let id = request_id(&record);
    let (status, err) = answer(&s, &id, &alice).await;
    assert_eq!(
        status,
        StatusCode::FORBIDDEN,
        "the second level is not on call first: {err}"
    );
    let (status, outcome) = answer(&s, &id, &erin_key).await;
    assert_eq!(status, StatusCode::OK, "{outcome}");
}

#[tokio::test]
async fn a_handover_before_the_escalation_lets_the_new_person_in() {
    let pd = FakePagerDuty::start().await;
    pd.on_call("PSCHED1", &[ALICE]);
    let clock = clock();
    let s = Setup::pagerduty(&pd).server(&clock).await;
    let dave = s.key(Role::Responder, "dave", "default").await;
    let record = s
        .ask(
            &s.admin,
            json!({"question": "Roll back?", "choices": ["yes", "no"],
                   "responders": ["oncall:pagerduty:PSCHED1"],
                   "escalate_after_seconds": 600, "escalate_to": ["lead"]}),
        )
        .await;
    let id = request_id(&record);
    pd.on_call("PSCHED1", &[DAVE]);
    let (status, err) = answer(&s, &id, &dave).await;
    assert_eq!(
        status,
        StatusCode::FORBIDDEN,
        "not on call yet when asked: {err}"
    );

    clock.advance(TimeDelta::seconds(601));
    assert_eq!(s.store.escalate_due().await.expect("escalates"), 1);
    let (_, now) = s.get(&format!("/v1/requests/{id}"), &s.admin).await;
    let readings = now["on_call"].as_array().cloned().unwrap_or_default();
    assert_eq!(
        readings.len(),
        2,
        "one reading at creation, one at escalation: {now}"
    );
    assert_eq!(readings[1]["people"], json!(["dave"]), "{now}");
    assert_eq!(pd.calls().len(), 2, "read again at the escalation");
    let (status, outcome) = answer(&s, &id, &dave).await;
    assert_eq!(status, StatusCode::OK, "{outcome}");
    assert_eq!(outcome["answered_by"], "dave");
}

#[tokio::test]
async fn a_reading_is_reused_within_its_time_and_read_again_after() {
    let pd = FakePagerDuty::start().await;
    pd.on_call("PSCHED1", &[ALICE]);
    let clock = clock();
    let s = Setup::pagerduty(&pd).server(&clock).await;
    let body = json!({"question": "Restart?", "choices": ["yes", "no"],
                      "responders": ["oncall:pagerduty:PSCHED1"]});
    s.ask(&s.admin, body.clone()).await;
    clock.advance(TimeDelta::seconds(59));
    let second = s.ask(&s.admin, body.clone()).await;
    assert_eq!(second["on_call"][0]["people"], json!(["alice"]));
    assert_eq!(
        pd.calls().len(),
        1,
        "the second request within 60 s reused the reading"
    );

    pd.on_call("PSCHED1", &[DAVE]);
    clock.advance(TimeDelta::seconds(2));
    let third = s.ask(&s.admin, body).await;
    assert_eq!(pd.calls().len(), 2, "past 60 s the schedule is read again");
    assert_eq!(third["on_call"][0]["people"], json!(["dave"]), "{third}");
}

#[tokio::test]
async fn a_schedule_that_is_down_lets_the_other_responders_answer_and_is_read_at_escalation() {
    let pd = FakePagerDuty::start().await;
    pd.on_call("PSCHED1", &[ALICE]);
    pd.down(Some(StatusCode::SERVICE_UNAVAILABLE));
    let clock = clock();
    let s = Setup::pagerduty(&pd).server(&clock).await;
    let alice = s.key(Role::Responder, "alice", "default").await;
    let record = s
        .ask(
            &s.admin,
            json!({"question": "Roll back?", "choices": ["yes", "no"],
                   "responders": ["oncall:pagerduty:PSCHED1", "carol"],
                   "escalate_after_seconds": 600, "escalate_to": ["lead"]}),
        )
        .await;
    let id = request_id(&record);
    let why = record["on_call"][0]["unreadable"]
        .as_str()
        .unwrap_or_default();
    assert!(
        why.contains("PagerDuty schedule PSCHED1 could not be read") && why.contains("503"),
        "the record says which schedule and why: {record}"
    );
    assert_eq!(record["on_call"][0]["people"], json!([]));
    let (status, err) = answer(&s, &id, &alice).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{err}");

    // Up again by the escalation: read again, and Alice is let in.
    pd.down(None);
    clock.advance(TimeDelta::seconds(601));
    assert_eq!(s.store.escalate_due().await.expect("escalates"), 1);
    let (status, outcome) = answer(&s, &id, &alice).await;
    assert_eq!(status, StatusCode::OK, "{outcome}");
}

#[tokio::test]
async fn while_the_schedule_is_down_the_other_responders_answer() {
    let pd = FakePagerDuty::start().await;
    pd.down(Some(StatusCode::INTERNAL_SERVER_ERROR));
    let clock = clock();
    let s = Setup::pagerduty(&pd).server(&clock).await;
    let carol = s.key(Role::Responder, "carol", "default").await;
    let record = s
        .ask(
            &s.admin,
            json!({"question": "Roll back?", "choices": ["yes", "no"],
                   "responders": ["oncall:pagerduty:PSCHED1", "carol"]}),
        )
        .await;
    let (status, outcome) = answer(&s, &request_id(&record), &carol).await;
    assert_eq!(status, StatusCode::OK, "{outcome}");
}

#[tokio::test]
async fn a_wrong_token_or_a_slow_provider_fails_open_within_the_timeout() {
    let pd = FakePagerDuty::start().await;
    pd.on_call("PSCHED1", &[ALICE]);
    let clock = clock();
    let mut setup = Setup::pagerduty(&pd);
    setup.pagerduty = Some((pd.api_url.clone(), "not-the-token".to_owned()));
    let s = setup.server(&clock).await;
    let body = json!({"question": "Roll back?", "choices": ["yes", "no"],
                      "responders": ["oncall:pagerduty:PSCHED1", "carol"]});
    let record = s.ask(&s.admin, body.clone()).await;
    let why = record["on_call"][0]["unreadable"]
        .as_str()
        .unwrap_or_default();
    assert!(
        why.contains("401") && why.contains("check the token"),
        "{record}"
    );

    let slow = FakePagerDuty::start().await;
    slow.on_call("PSCHED1", &[ALICE]);
    slow.slow(Duration::from_secs(5));
    let mut setup = Setup::pagerduty(&slow);
    setup.timeout = Duration::from_millis(300);
    let s = setup.server(&clock).await;
    let started = Instant::now();
    let record = s.ask(&s.admin, body).await;
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "creation waited {:?} for a slow schedule",
        started.elapsed()
    );
    assert_eq!(record["status"], "pending");
    let why = record["on_call"][0]["unreadable"]
        .as_str()
        .unwrap_or_default();
    assert!(why.contains("did not answer in time"), "{record}");
}

#[tokio::test]
async fn opsgenie_names_people_by_email_and_an_unknown_schedule_is_said() {
    let og = FakeOpsgenie::start().await;
    og.on_call("payments", &["dave@example.com"]);
    let clock = clock();
    let s = Setup::opsgenie(&og).server(&clock).await;
    let dave = s.key(Role::Responder, "dave", "default").await;
    let bob = s.key(Role::Responder, "bob", "default").await;
    // With one provider configured, `oncall:NAME` is enough.
    let record = s
        .ask(
            &s.admin,
            json!({"question": "Refund?", "choices": ["yes", "no"],
                   "responders": ["oncall:payments"]}),
        )
        .await;
    assert_eq!(record["on_call"][0]["people"], json!(["dave"]), "{record}");
    let calls = og.calls();
    assert_eq!(calls[0].0, "payments");
    assert_eq!(calls[0].1["scheduleIdentifierType"], "name");
    assert_eq!(calls[0].1["flat"], "true");
    let id = request_id(&record);
    let (status, _) = answer(&s, &id, &bob).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, outcome) = answer(&s, &id, &dave).await;
    assert_eq!(status, StatusCode::OK, "{outcome}");

    let record = s
        .ask(
            &s.admin,
            json!({"question": "Refund?", "choices": ["yes", "no"],
                   "responders": ["oncall:opsgenie:billing", "bob"]}),
        )
        .await;
    let why = record["on_call"][0]["unreadable"]
        .as_str()
        .unwrap_or_default();
    assert!(
        why.contains("Opsgenie schedule billing could not be read")
            && why.contains("404")
            && why.contains("No schedule exists with name [billing]"),
        "{record}"
    );
    let (status, outcome) = answer(&s, &request_id(&record), &bob).await;
    assert_eq!(status, StatusCode::OK, "{outcome}");
}

#[tokio::test]
async fn opsgenie_down_fails_open_too() {
    let og = FakeOpsgenie::start().await;
    og.on_call("payments", &["dave@example.com"]);
    og.down(Some(StatusCode::BAD_GATEWAY));
    let clock = clock();
    let s = Setup::opsgenie(&og).server(&clock).await;
    let record = s
        .ask(
            &s.admin,
            json!({"question": "Refund?", "choices": ["yes", "no"],
                   "responders": ["oncall:opsgenie:payments", "bob"]}),
        )
        .await;
    let why = record["on_call"][0]["unreadable"]
        .as_str()
        .unwrap_or_default();
    assert!(why.contains("502"), "{record}");
}
