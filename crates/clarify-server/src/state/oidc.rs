//! The OpenID Connect provider an instance signs people in with (`[oidc]`), as discovered.
//!
//! The `openidconnect` crate reads the provider's discovery document and its published keys
//! once per client it builds and never again, and providers rotate their keys. So the client is
//! kept here, built at first use, built again after an hour, and built again at once (at most
//! once a minute) when an ID token's signature does not verify against the keys it holds: a key
//! rotated in the meantime is then found, and a forged token still fails against the fresh keys.
//!
//! Requests to the provider follow no redirects: a redirect from an endpoint the discovery
//! document names could otherwise point this server anywhere.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use openidconnect::core::{
    CoreAuthDisplay, CoreAuthPrompt, CoreErrorResponseType, CoreGenderClaim, CoreJsonWebKey,
    CoreJweContentEncryptionAlgorithm, CoreJwsSigningAlgorithm, CoreProviderMetadata,
    CoreRevocableToken, CoreRevocationErrorResponse, CoreTokenIntrospectionResponse, CoreTokenType,
};
use openidconnect::{
    AdditionalClaims, Client, ClientId, ClientSecret, EmptyExtraTokenFields, EndpointMaybeSet,
    EndpointNotSet, EndpointSet, HttpClientError, HttpRequest, HttpResponse, IdTokenFields,
    IssuerUrl, RedirectUrl, StandardErrorResponse, StandardTokenResponse,
};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use tokio::sync::Mutex;

use super::config::OidcConfig;

/// Every claim beyond the standard ones (groups, and whatever `name_claim` names), kept as sent.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct OtherClaims {
    #[serde(flatten)]
    pub claims: Map<String, Value>,
}

impl AdditionalClaims for OtherClaims {}

/// The token endpoint's answer, its ID token read with [`OtherClaims`].
pub type TokenResponse = StandardTokenResponse<
    IdTokenFields<
        OtherClaims,
        EmptyExtraTokenFields,
        CoreGenderClaim,
        CoreJweContentEncryptionAlgorithm,
        CoreJwsSigningAlgorithm,
    >,
    CoreTokenType,
>;

/// A client of the provider, its endpoints as discovery found them.
pub type OidcClient = Client<
    OtherClaims,
    CoreAuthDisplay,
    CoreGenderClaim,
    CoreJweContentEncryptionAlgorithm,
    CoreJsonWebKey,
    CoreAuthPrompt,
    StandardErrorResponse<CoreErrorResponseType>,
    TokenResponse,
    CoreTokenIntrospectionResponse,
    CoreRevocableToken,
    CoreRevocationErrorResponse,
    EndpointSet,
    EndpointNotSet,
    EndpointNotSet,
    EndpointNotSet,
    EndpointMaybeSet,
    EndpointMaybeSet,
>;

/// How long a discovered client (its endpoints and keys) is used before discovery runs again.
const REDISCOVER_AFTER: Duration = Duration::from_secs(3600);
/// The least time between two discoveries forced by a signature that did not verify.
const FORCED_REDISCOVERY_GAP: Duration = Duration::from_secs(60);

/// The configured provider and the client last built from its discovery document.
pub struct Provider {
    pub config: OidcConfig,
    /// Where the provider sends people back: `<public URL>/auth/oidc/callback`.
    pub redirect: String,
    pub http: Http,
    discovered: Mutex<Option<(Arc<OidcClient>, Instant)>>,
}

impl std::fmt::Debug for Provider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Provider")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

/// Why the provider could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ProviderError {
    #[error("the public URL {0:?} does not make a valid callback URL")]
    Redirect(String),
    #[error("discovery at {issuer} failed: {reason}")]
    Discovery { issuer: String, reason: String },
}

impl Provider {
    /// A provider for `config`, people coming back to `public_url`; discovery waits for first
    /// use, so a provider that is down when the server starts only delays sign-in.
    pub fn new(config: OidcConfig, public_url: &str) -> Self {
        let http = clarify_client::http::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(Duration::from_secs(10))
            .user_agent(concat!("clarify/", env!("CARGO_PKG_VERSION")))
            .build()
            .unwrap_or_default();
        Self {
            config,
            redirect: format!("{}/auth/oidc/callback", public_url.trim_end_matches('/')),
            http: Http(http),
            discovered: Mutex::new(None),
        }
    }

    /// The client: the one discovered within the hour, or a newly discovered one.
    pub async fn client(&self) -> Result<Arc<OidcClient>, ProviderError> {
        let mut discovered = self.discovered.lock().await;
        if let Some((client, at)) = discovered.as_ref()
            && at.elapsed() < REDISCOVER_AFTER
        {
            return Ok(Arc::clone(client));
        }
        let client = Arc::new(self.discover().await?);
        *discovered = Some((Arc::clone(&client), Instant::now()));
        Ok(client)
    }

    /// A newly discovered client, after a signature did not verify with the keys of `stale`;
    /// `None` when the client was discovered less than a minute ago (the keys are fresh, so
    /// the token is at fault), or when another caller has already replaced `stale`.
    pub async fn rediscover(
        &self,
        stale: &Arc<OidcClient>,
    ) -> Result<Option<Arc<OidcClient>>, ProviderError> {
        let mut discovered = self.discovered.lock().await;
        if let Some((client, at)) = discovered.as_ref() {
            if !Arc::ptr_eq(client, stale) {
                return Ok(Some(Arc::clone(client)));
            }
            if at.elapsed() < FORCED_REDISCOVERY_GAP {
                return Ok(None);
            }
        }
        let client = Arc::new(self.discover().await?);
        *discovered = Some((Arc::clone(&client), Instant::now()));
        Ok(Some(client))
    }

    async fn discover(&self) -> Result<OidcClient, ProviderError> {
        let issuer = &self.config.issuer;
        let failed = |reason: String| ProviderError::Discovery {
            issuer: issuer.clone(),
            reason,
        };
        let url = IssuerUrl::new(issuer.clone()).map_err(|e| failed(e.to_string()))?;
        let metadata = CoreProviderMetadata::discover_async(url, &self.http)
            .await
            .map_err(|e| failed(error_chain(&e)))?;
        let redirect = RedirectUrl::new(self.redirect.clone())
            .map_err(|_| ProviderError::Redirect(self.redirect.clone()))?;
        let client: OidcClient = Client::from_provider_metadata(
            metadata,
            ClientId::new(self.config.client_id.clone()),
            self.config.client_secret.clone().map(ClientSecret::new),
        )
        .set_redirect_uri(redirect);
        Ok(client)
    }
}

/// An error and its sources, in one line.
pub fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

/// The provider's HTTP client: the workspace's reqwest, handed to `openidconnect` through its
/// `AsyncHttpClient` trait. The crate's own implementation (its `reqwest` feature) is tied to an
/// older reqwest and would build a second one into the binary; this is the same few lines over
/// ours.
#[derive(Debug)]
pub struct Http(reqwest::Client);

impl<'c> openidconnect::AsyncHttpClient<'c> for Http {
    type Error = HttpClientError<reqwest::Error>;
    type Future = Pin<Box<dyn Future<Output = Result<HttpResponse, Self::Error>> + Send + 'c>>;

    fn call(&'c self, request: HttpRequest) -> Self::Future {
        Box::pin(async move {
            let request = reqwest::Request::try_from(request).map_err(Box::new)?;
            let response = self.0.execute(request).await.map_err(Box::new)?;
            let mut reply = openidconnect::http::Response::builder()
                .status(response.status())
                .version(response.version());
            for (name, value) in response.headers() {
                reply = reply.header(name, value);
            }
            let body = response.bytes().await.map_err(Box::new)?;
            reply.body(body.to_vec()).map_err(HttpClientError::Http)
        })
    }
}
