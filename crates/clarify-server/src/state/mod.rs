//! Nothing here answers a request: this is what an instance holds between requests, built once
//! by [`AppState::new`] and shared by every room.
//!
//! [`AppState`] carries the store, the server secrets, the [`Config`], and the parts that live
//! as long as the instance: the event hub streams wait on ([`hub`]), the metrics registry
//! ([`metrics`]), the waiter pool and per-key rate limits ([`limits`]), and the keys verified in
//! the last half second ([`key_cache`]), and the OpenTelemetry export with its worker
//! ([`telemetry`]). Each of them is plain state with its own logic; the
//! rooms and the middleware use it, and nothing here uses a room.

mod config;
pub mod hub;
pub mod key_cache;
pub mod limits;
pub mod metrics;
pub mod oidc;
pub mod oncall;
pub mod passkeys;
pub mod push;
pub mod receipts;
pub mod telemetry;

pub use config::{AguiAgent, Config, OidcConfig, WebhookConfig};

use std::sync::Arc;

use axum::http::StatusCode;
use clarify_model::wire::OutcomeBody;
use clarify_store::{RequestRecord, Store};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::shared::error::ApiError;
use crate::shared::sign::{link_token, personal_token};

/// Everything a handler needs; cheap to clone.
#[derive(Debug, Clone)]
pub struct AppState(Arc<Shared>);

#[derive(Debug)]
pub struct Shared {
    pub store: Store,
    pub config: Config,
    pub secrets: ServerSecrets,
    pub hub: hub::EventHub,
    pub metrics: metrics::Metrics,
    /// Wakes the webhook worker when this instance resolves a request.
    pub webhooks_due: Notify,
    /// Wakes the channel worker after a request was created here.
    pub channels_due: Notify,
    /// Wakes the Web Push worker after a request was created here.
    pub pushes_due: Notify,
    /// The key pair and contact Web Push calls are signed with.
    pub vapid: push::Vapid,
    /// Cancelled when the server begins to shut down.
    pub shutdown: CancellationToken,
    /// Long-polls, event streams and `/mcp` requests in flight.
    pub waiters: limits::Waiters,
    pub rate_limit: Option<limits::RateLimit>,
    /// Bearer keys verified in the last half second.
    pub keys: key_cache::KeyCache,
    /// Calls chat platforms make on an inbound answer's behalf (a modal, a private notice).
    pub http: reqwest::Client,
    /// The OpenID Connect provider people sign in with, when `[oidc]` is configured.
    pub oidc: Option<oidc::Provider>,
    /// The passkeys' relying party: the host of `--public-url` (none for an IP address).
    pub webauthn: Option<webauthn_rs::Webauthn>,
    /// The OTLP export, when `--otlp-endpoint` is configured.
    pub telemetry: Option<Arc<crate::state::telemetry::Telemetry>>,
    /// The keys receipts are signed with and published under.
    pub receipts: receipts::Receipts,
}

/// Server secrets, read from the store at start so every instance shares them.
#[derive(Clone)]
pub struct ServerSecrets {
    /// Signs the answer links and the client answer tokens.
    pub link: crate::shared::sign::MacKey,
    pub csrf: Vec<u8>,
    pub webhook: Vec<u8>,
    /// Signs the tokens chat platforms carry back unsigned (Mattermost's buttons and dialogs).
    pub chat: Vec<u8>,
}

impl std::fmt::Debug for ServerSecrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ServerSecrets(..)")
    }
}

impl std::ops::Deref for AppState {
    type Target = Shared;
    fn deref(&self) -> &Shared {
        &self.0
    }
}

impl AppState {
    /// Reads the server secrets from the store (creating them on first start).
    pub async fn new(store: Store, config: Config) -> Result<Self, clarify_store::StoreError> {
        let secrets = ServerSecrets {
            link: crate::shared::sign::MacKey::new(&store.secret("link").await?),
            csrf: store.secret("csrf").await?,
            webhook: store.secret("webhook").await?,
            chat: store.secret("chat").await?,
        };
        let vapid = push::Vapid {
            key: match &config.push.key {
                Some(key) => key.clone(),
                None => push::VapidKey::from_bytes(&store.secret("push_vapid").await?)
                    .map_err(clarify_store::StoreError::Corrupt)?,
            },
            subject: config
                .push
                .subject
                .clone()
                .unwrap_or_else(|| push::default_subject(&config.public_url)),
        };
        let receipts =
            receipts::Receipts::load(&store, &config.public_url, config.receipts.clone()).await?;
        let hub = hub::EventHub::new(store.last_event_seq().await?);
        let waiters = limits::Waiters::new(config.max_waiters);
        let mut metrics = metrics::Metrics::new();
        // A collector that cannot be set up is logged, and the server runs without it: the
        // address was checked when the configuration was read.
        let telemetry = match config.otlp.as_ref().map(crate::state::telemetry::setup) {
            None => None,
            Some(Ok(setup)) => {
                metrics.mirror(&setup.meter, waiters.reader());
                let telemetry = setup.finish(metrics.export_counters());
                store.observe(Arc::clone(&telemetry) as Arc<dyn clarify_store::Observer>);
                Some(telemetry)
            }
            Some(Err(e)) => {
                tracing::error!(error = %e, "OpenTelemetry is not exported");
                None
            }
        };
        let rate_limit = config
            .rate_limit
            .map(|n| limits::RateLimit::new(n, store.clock()));
        Ok(Self(Arc::new(Shared {
            store,
            secrets,
            hub,
            metrics,
            telemetry,
            webhooks_due: Notify::new(),
            channels_due: Notify::new(),
            pushes_due: Notify::new(),
            vapid,
            shutdown: CancellationToken::new(),
            waiters,
            rate_limit,
            keys: key_cache::KeyCache::new(),
            receipts,
            oidc: config
                .oidc
                .clone()
                .map(|o| oidc::Provider::new(o, &config.public_url)),
            webauthn: passkeys::relying_party_of(&config.public_url),
            http: clarify_client::http::builder()
                .timeout(config.webhooks.timeout)
                .user_agent(concat!("clarify/", env!("CARGO_PKG_VERSION")))
                .build()
                .unwrap_or_default(),
            config,
        })))
    }

    /// A permit to wait (a long-poll, a stream, an `/mcp` request), or `503 too_many_waiters`.
    pub(crate) fn waiter(&self) -> Result<tokio::sync::OwnedSemaphorePermit, ApiError> {
        self.waiters
            .enter()
            .inspect_err(|_| self.metrics.waiter_refused())
    }

    /// Tells this instance's event streams and outbox workers that `record` changed. Each
    /// wake-up costs a worker a claiming transaction on the store, so a worker is woken only
    /// when the write may have queued something for it: the webhook worker for a request with a
    /// callback URL, the channel worker when channels are configured, the push worker unless
    /// the tenant has no push subscriptions ([`clarify_store::Store::may_push`]). What the
    /// reaper or another instance queues, their polls find.
    pub(crate) fn changed(&self, record: &RequestRecord) {
        self.hub.poke();
        if record.request.callback_url.is_some() || record.request.resume.is_some() {
            self.webhooks_due.notify_one();
        }
        if !self.config.channels.is_empty() {
            self.channels_due.notify_one();
        }
        if self.store.may_push(&record.tenant) {
            self.pushes_due.notify_one();
        }
    }

    /// Moves request `id`'s deadline `seconds` later for `actor` (who must be allowed to answer
    /// it), and tells this instance's streams: the one way every path extends a request (the
    /// API's `extend` route, a chat button, a typed `extend 30m`).
    pub(crate) async fn extend(
        &self,
        tenant: &str,
        id: &str,
        seconds: u64,
        actor: &clarify_store::Actor,
    ) -> Result<RequestRecord, clarify_store::ExtendError> {
        let record = self.store.extend(tenant, id, seconds, actor).await?;
        self.hub.poke();
        Ok(record)
    }

    /// `record` with its resolution's place in the audit chain, which its receipt names. On
    /// PostgreSQL the chain numbers a resolution just after its commit, so a record read at
    /// once may not have it yet: this waits for the chain to catch up (for at most
    /// [`clarify_store::FEED_SYNC`]) and reads the record again. A resolution numbered by an
    /// instance of a release before receipts (during a rolling upgrade) has its place found in
    /// the log and kept ([`clarify_store::Store::place_resolution`]).
    pub(crate) async fn numbered(&self, record: RequestRecord) -> RequestRecord {
        if record.resolution.as_ref().is_none_or(|r| r.seq.is_some()) {
            return record;
        }
        if let Err(e) = self.store.sync_feed().await {
            tracing::warn!(id = %record.id, error = %e, "waiting for the audit chain failed; the record goes without its receipt");
            return record;
        }
        let again = match self.store.get(&record.tenant, &record.id).await {
            Ok(Some(again)) => again,
            _ => return record,
        };
        if again.resolution.as_ref().is_none_or(|r| r.seq.is_some()) {
            return again;
        }
        // Numbered, but its place not kept: an instance of a release before receipts numbered
        // it (a rolling upgrade); the place is found in the log.
        if let Err(e) = self
            .store
            .place_resolution(&record.tenant, &record.id)
            .await
        {
            tracing::warn!(id = %record.id, error = %e, "finding the resolution in the audit chain failed; the record goes without its receipt");
            return again;
        }
        match self.store.get(&record.tenant, &record.id).await {
            Ok(Some(placed)) => placed,
            _ => again,
        }
    }

    /// Counts a resolution made here, tells streams and workers, and renders its outcome.
    pub(crate) fn resolved(&self, record: &RequestRecord) -> Result<OutcomeBody, ApiError> {
        self.metrics.resolved(record);
        self.changed(record);
        let outcome = record.outcome().ok_or_else(|| {
            tracing::error!(id = %record.id, "the store returned a resolution without an outcome");
            ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "internal",
                "the request was resolved but its outcome could not be read; read the request again",
            )
        })?;
        Ok(OutcomeBody::from(&outcome).with_receipt(self.receipts.sign_outcome(record, &outcome)))
    }

    /// The signed link that answers request `id` (`/a/<token>`, served by the web room).
    pub fn answer_url(&self, id: &str) -> String {
        format!(
            "{}/a/{}",
            self.config.public_url,
            link_token(&self.secrets.link, id)
        )
    }

    /// `name`'s link to request `id` as pushed to their Web Push `subscription`: it answers (or
    /// votes) as that person, `answered_via` `push`, while the subscription exists.
    pub fn push_url(&self, id: &str, name: &str, subscription: &str) -> String {
        format!(
            "{}/a/{}",
            self.config.public_url,
            crate::shared::sign::push_token(&self.secrets.link, id, name, subscription)
        )
    }

    /// `name`'s personal link to request `id`: it answers (or votes) as that person.
    pub fn personal_url(&self, id: &str, name: &str) -> String {
        format!(
            "{}/a/{}",
            self.config.public_url,
            personal_token(&self.secrets.link, id, name)
        )
    }
}
