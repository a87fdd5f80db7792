//! Reminders and escalations on every chat channel at once, with an injected clock: each is a
//! reply in the announcement's thread (Telegram `reply_parameters`, Discord `message_reference`,
//! e-mail `In-Reply-To`), and an escalation reaches the `escalate_to` people through
//! `[identities]` (a Telegram or Discord mention, an e-mail to their address).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use chrono::TimeDelta;
use clarify_channels::discord::Discord;
use clarify_channels::email::Email;
use clarify_channels::telegram::Telegram;
use clarify_channels::{AnyPlatform, Channel, Route, channels_for};
use clarify_store::{Announce, ManualClock, StoreOptions};
use mail_parser::MessageParser;
use serde_json::json;

use crate::fake_discord::{self, FakeDiscord};
use crate::fake_smtp::FakeSmtp;
use crate::fake_telegram::{self, FakeTelegram};
use crate::support::TestServer;

const TG_ALICE: i64 = 5_000_000_001;
const TG_BOB: i64 = 5_000_000_002;
const DC_ALICE: &str = "80351110224678912";
const DC_BOB: &str = "80351110224678913";

fn header(raw: &str, name: &str) -> Option<String> {
    MessageParser::default()
        .parse(raw.as_bytes())
        .and_then(|m| m.header_raw(name).map(|v| v.trim().to_owned()))
}

async fn until<T>(what: &str, mut found: impl FnMut() -> Option<T>) -> T {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(t) = found() {
            return t;
        }
        assert!(tokio::time::Instant::now() < deadline, "{what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn reminders_and_escalations_reply_in_each_announcements_thread() {
    let telegram = FakeTelegram::start().await;
    let discord = FakeDiscord::start().await;
    let smtp = FakeSmtp::start().await;
    let clock = Arc::new(ManualClock::new(chrono::Utc::now()));
    let routes = vec![Route {
        channels: vec!["phone".to_owned(), "dev".to_owned(), "mail".to_owned()],
        ..Route::default()
    }];
    let options = StoreOptions {
        clock: Arc::clone(&clock) as Arc<dyn clarify_store::Clock>,
        reaper_interval: None,
        announce: Some(Announce(Arc::new(move |tenant: &str, request: &_| {
            channels_for(&routes, tenant, request)
        }))),
        ..StoreOptions::default()
    };
    let channels = vec![
        Channel {
            name: "phone".to_owned(),
            platform: AnyPlatform::Telegram(Telegram {
                bot_token: fake_telegram::BOT_TOKEN.to_owned(),
                chat_id: fake_telegram::CHAT.to_string(),
                api_url: telegram.api_url.parse().expect("url"),
                webhook_secret: Some("unused-here".to_owned()),
            }),
            allow_unmapped: false,
        },
        Channel {
            name: "dev".to_owned(),
            platform: AnyPlatform::Discord(Discord {
                bot_token: fake_discord::BOT_TOKEN.to_owned(),
                public_key: fake_discord::public_key(),
                channel_id: fake_discord::CHANNEL.to_owned(),
                api_url: discord.api_url.parse().expect("url"),
            }),
            allow_unmapped: false,
        },
        Channel {
            name: "mail".to_owned(),
            platform: AnyPlatform::Email(Email {
                smtp_url: smtp.url.parse().expect("url"),
                password: None,
                from: "Clarify <clarify@example.com>".to_owned(),
                to: Vec::new(),
                mailgun_signing_key: None,
            }),
            allow_unmapped: false,
        },
    ];
    let s = TestServer::build("memory:", options, move |c| {
        c.channels = channels;
        c.identities = BTreeMap::from([
            (format!("telegram:{TG_ALICE}"), "alice".to_owned()),
            (format!("telegram:{TG_BOB}"), "bob".to_owned()),
            (format!("discord:{DC_ALICE}"), "alice".to_owned()),
            (format!("discord:{DC_BOB}"), "bob".to_owned()),
            ("email:alice@example.com".to_owned(), "alice".to_owned()),
            ("email:bob@example.com".to_owned(), "bob".to_owned()),
        ]);
        c.webhooks.poll = Duration::from_millis(20);
        c.webhooks.first_backoff = TimeDelta::milliseconds(20);
    })
    .await;

    let record = s
        .ask(
            &s.admin,
            json!({"question": "Still there?", "responders": ["alice"],
                   "remind_every_seconds": 60, "escalate_after_seconds": 90,
                   "escalate_to": ["bob"]}),
        )
        .await;
    let id = record["id"].as_str().expect("id").to_owned();
    // Every announcement out, with its reference recorded.
    until("announced everywhere", || {
        let n = telegram.sent_ids().len() + discord.posted().len() + smtp.received().len();
        (n == 3).then_some(())
    })
    .await;
    let refs = || {
        let s = &s;
        let id = &id;
        async move {
            let (_, body) = s
                .get(&format!("/v1/requests/{id}/notifications"), &s.admin)
                .await;
            body["notifications"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        }
    };
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while refs().await.iter().any(|n| n["status"] == "pending") {
        assert!(
            tokio::time::Instant::now() < deadline,
            "announcements settle"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let tg_announcement = telegram.sent_ids()[0];
    let dc_announcement = discord.posted()[0].clone();
    let first_mail = smtp.received()[0].clone();
    assert_eq!(
        first_mail.to,
        ["alice@example.com"],
        "the responders' addresses"
    );
    let message_id = header(&first_mail.data, "Message-ID").expect("a Message-ID");

    // A reminder: a reply in each thread.
    clock.advance(TimeDelta::seconds(61));
    // The outbox worker polls (every 20 ms here) for what the reaper queued.
    assert_eq!(s.store.remind_due().await.expect("remind"), 1);
    let reminder = until("a Telegram reminder", || {
        telegram.calls_to("sendMessage").into_iter().find(|m| {
            m["text"]
                .as_str()
                .is_some_and(|t| t.starts_with("Reminder"))
        })
    })
    .await;
    assert_eq!(reminder["reply_parameters"]["message_id"], tg_announcement);
    let (_, post) = until("a Discord reminder", || {
        discord.calls("POST").into_iter().find(|(_, b)| {
            b["content"]
                .as_str()
                .is_some_and(|t| t.starts_with("Reminder"))
        })
    })
    .await;
    assert_eq!(
        post["message_reference"]["message_id"],
        dc_announcement.as_str()
    );
    let mail = until("a reminder mail", || smtp.received().get(1).cloned()).await;
    assert_eq!(
        header(&mail.data, "In-Reply-To").as_deref(),
        Some(message_id.as_str())
    );
    assert_eq!(mail.to, ["alice@example.com"]);

    // The escalation: bob is mentioned in chat and mailed.
    clock.advance(TimeDelta::seconds(30));
    assert_eq!(s.store.escalate_due().await.expect("escalate"), 1);
    let escalation = until("a Telegram escalation", || {
        telegram
            .calls_to("sendMessage")
            .into_iter()
            .find(|m| m["text"].as_str().is_some_and(|t| t.contains("Escalated")))
    })
    .await;
    assert_eq!(
        escalation["reply_parameters"]["message_id"],
        tg_announcement
    );
    assert!(
        escalation["text"]
            .as_str()
            .is_some_and(|t| t.contains(&format!("tg://user?id={TG_BOB}"))),
        "{escalation}"
    );
    let (_, post) = until("a Discord escalation", || {
        discord.calls("POST").into_iter().find(|(_, b)| {
            b["content"]
                .as_str()
                .is_some_and(|t| t.contains("Escalated"))
        })
    })
    .await;
    assert_eq!(
        post["message_reference"]["message_id"],
        dc_announcement.as_str()
    );
    assert!(
        post["content"]
            .as_str()
            .is_some_and(|t| t.contains(&format!("<@{DC_BOB}>"))),
        "{post}"
    );
    assert_eq!(post["allowed_mentions"]["users"], json!([DC_BOB]));
    let mail = until("an escalation mail", || smtp.received().get(2).cloned()).await;
    assert_eq!(
        header(&mail.data, "In-Reply-To").as_deref(),
        Some(message_id.as_str())
    );
    let mut to = mail.to.clone();
    to.sort();
    assert_eq!(
        to,
        ["alice@example.com", "bob@example.com"],
        "bob is mailed too"
    );
}
