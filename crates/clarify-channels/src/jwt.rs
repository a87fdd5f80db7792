//! Bearer tokens platforms sign (Microsoft's Bot Framework, Google for Chat): the keys they
//! publish, fetched and cached, and the checks every such token must pass. The signature itself
//! is `jsonwebtoken`'s to check (RS256 only); what clarify adds is which keys to trust, the
//! issuer and audience, and the validity window read against an injected `now`.
//!
//! Keys are published either as a JSON Web Key Set (found through OpenID metadata, as the Bot
//! Framework does, or at a URL) or as a map of key id to X.509 certificate (Google's service
//! account certificates). They are cached for a day (the Bot Framework asks for a refresh at
//! least that often) and fetched again at once when a token names a key not yet seen, at most
//! once a minute, so a stream of forged key ids cannot make clarify hammer the platform.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde_json::Value;
use tokio::sync::Mutex;

/// How long fetched keys are trusted before they are fetched again.
const KEYS_FOR: Duration = Duration::from_secs(24 * 3_600);
/// The least time between two fetches forced by an unknown key id.
const REFETCH_AFTER: Duration = Duration::from_secs(60);
/// Clock skew allowed on `exp` and `nbf`: the Bot Framework's five minutes.
pub const LEEWAY_SECONDS: i64 = 300;

/// Where a platform publishes its signing keys.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeySource {
    /// OpenID metadata whose `jwks_uri` names a JSON Web Key Set.
    OpenId(url::Url),
    /// A JSON Web Key Set.
    Jwks(url::Url),
    /// A JSON object of key id to PEM certificate.
    Certificates(url::Url),
}

/// One published key.
#[derive(Clone)]
pub struct Key {
    pub key: DecodingKey,
    /// The channels the key may sign for (the Bot Framework's `endorsements`), when listed.
    pub endorsements: Option<Vec<String>>,
}

impl std::fmt::Debug for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Key")
            .field("endorsements", &self.endorsements)
            .finish_non_exhaustive()
    }
}

#[derive(Default)]
struct Cached {
    keys: HashMap<String, Key>,
    fetched: Option<Instant>,
}

/// A platform's keys, fetched when needed; cheap to clone (clones share the cache).
#[derive(Clone)]
pub struct Keys {
    source: KeySource,
    cached: Arc<Mutex<Cached>>,
}

impl std::fmt::Debug for Keys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Keys")
            .field("source", &self.source)
            .finish_non_exhaustive()
    }
}

/// Why a token was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Refused(pub String);

fn refused(why: impl Into<String>) -> Refused {
    Refused(why.into())
}

impl Keys {
    pub fn new(source: KeySource) -> Self {
        Self {
            source,
            cached: Arc::new(Mutex::new(Cached::default())),
        }
    }

    pub fn source(&self) -> &KeySource {
        &self.source
    }

    /// The key `kid`, fetching the published keys when they are stale or do not have it.
    pub async fn get(&self, client: &reqwest::Client, kid: &str) -> Result<Key, Refused> {
        let mut cached = self.cached.lock().await;
        let age = cached.fetched.map(|at| at.elapsed());
        let stale = age.is_none_or(|a| a > KEYS_FOR);
        let unknown = !cached.keys.contains_key(kid) && age.is_none_or(|a| a > REFETCH_AFTER);
        if stale || unknown {
            match self.fetch(client).await {
                Ok(keys) => {
                    cached.keys = keys;
                    cached.fetched = Some(Instant::now());
                }
                // Keys fetched earlier still serve while the platform cannot be reached.
                Err(e) if cached.keys.is_empty() => return Err(e),
                Err(e) => tracing::warn!(error = %e, "refreshing a platform's signing keys failed"),
            }
        }
        cached
            .keys
            .get(kid)
            .cloned()
            .ok_or_else(|| refused(format!("no published key has the id {kid:?}")))
    }

    async fn fetch(&self, client: &reqwest::Client) -> Result<HashMap<String, Key>, Refused> {
        match &self.source {
            KeySource::OpenId(url) => {
                let metadata = get_json(client, url.as_str()).await?;
                let jwks = metadata["jwks_uri"]
                    .as_str()
                    .ok_or_else(|| refused("the OpenID metadata names no jwks_uri"))?;
                parse_jwks(&get_json(client, jwks).await?)
            }
            KeySource::Jwks(url) => parse_jwks(&get_json(client, url.as_str()).await?),
            KeySource::Certificates(url) => {
                parse_certificates(&get_json(client, url.as_str()).await?)
            }
        }
    }
}

async fn get_json(client: &reqwest::Client, url: &str) -> Result<Value, Refused> {
    let response = client.get(url).send().await.map_err(|e| {
        refused(format!(
            "the signing keys at {url} could not be fetched: {e}"
        ))
    })?;
    if !response.status().is_success() {
        return Err(refused(format!(
            "the signing keys at {url} could not be fetched: {}",
            response.status()
        )));
    }
    response
        .json()
        .await
        .map_err(|e| refused(format!("the signing keys at {url} are not JSON: {e}")))
}

/// The RSA keys of a JSON Web Key Set, with their endorsements; other keys are skipped.
pub fn parse_jwks(set: &Value) -> Result<HashMap<String, Key>, Refused> {
    let keys = set["keys"]
        .as_array()
        .ok_or_else(|| refused("the key set has no keys"))?;
    let mut out = HashMap::new();
    for k in keys {
        let (Some(kid), Some("RSA"), Some(n), Some(e)) = (
            k["kid"].as_str(),
            k["kty"].as_str(),
            k["n"].as_str(),
            k["e"].as_str(),
        ) else {
            continue;
        };
        let Ok(key) = DecodingKey::from_rsa_components(n, e) else {
            continue;
        };
        let endorsements = k["endorsements"].as_array().map(|list| {
            list.iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect()
        });
        out.insert(kid.to_owned(), Key { key, endorsements });
    }
    Ok(out)
}

/// The keys of a map of key id to PEM certificate (or public key).
pub fn parse_certificates(map: &Value) -> Result<HashMap<String, Key>, Refused> {
    let map = map
        .as_object()
        .ok_or_else(|| refused("the certificates are not a JSON object"))?;
    Ok(map
        .iter()
        .filter_map(|(kid, pem)| {
            let key = DecodingKey::from_rsa_pem(pem.as_str()?.as_bytes()).ok()?;
            Some((
                kid.clone(),
                Key {
                    key,
                    endorsements: None,
                },
            ))
        })
        .collect())
}

/// What a token must say.
#[derive(Debug, Clone)]
pub struct Expect<'a> {
    /// Accepted issuers (`iss`).
    pub issuers: &'a [&'a str],
    /// The audience (`aud`): the app's id, or the project number.
    pub audience: &'a str,
}

/// The `kid` of a token's header, read before its signature is checked, only to find the key.
pub fn key_id(token: &str) -> Result<String, Refused> {
    let header = jsonwebtoken::decode_header(token)
        .map_err(|e| refused(format!("the token cannot be read: {e}")))?;
    if header.alg != Algorithm::RS256 {
        return Err(refused(format!(
            "the token is signed with {:?}; only RS256 is accepted",
            header.alg
        )));
    }
    header
        .kid
        .ok_or_else(|| refused("the token names no key (kid)"))
}

/// Checks `token`'s signature with `key` (RS256 only), its issuer and audience, and that `now`
/// is within its validity (with [`LEEWAY_SECONDS`]); returns its claims.
pub fn check(
    token: &str,
    key: &DecodingKey,
    expect: &Expect<'_>,
    now: DateTime<Utc>,
) -> Result<serde_json::Map<String, Value>, Refused> {
    let mut validation = Validation::new(Algorithm::RS256);
    validation.set_issuer(expect.issuers);
    validation.set_audience(&[expect.audience]);
    validation.set_required_spec_claims(&["exp", "iss", "aud"]);
    // The validity window is read against clarify's clock below, not the library's.
    validation.validate_exp = false;
    validation.validate_nbf = false;
    let data = jsonwebtoken::decode::<serde_json::Map<String, Value>>(token, key, &validation)
        .map_err(|e| refused(format!("the token is not valid: {e}")))?;
    let claims = data.claims;
    let now = now.timestamp();
    let exp = claims
        .get("exp")
        .and_then(Value::as_i64)
        .ok_or_else(|| refused("the token has no expiry (exp)"))?;
    if now > exp + LEEWAY_SECONDS {
        return Err(refused("the token has expired"));
    }
    if let Some(nbf) = claims.get("nbf").and_then(Value::as_i64)
        && now + LEEWAY_SECONDS < nbf
    {
        return Err(refused("the token is not valid yet"));
    }
    Ok(claims)
}

/// The token of an `Authorization: Bearer <token>` header.
pub fn bearer(header: Option<&str>) -> Result<&str, Refused> {
    let value = header.ok_or_else(|| refused("Authorization: Bearer <token> is required"))?;
    let (scheme, token) = value
        .split_once(' ')
        .ok_or_else(|| refused("Authorization must be Bearer <token>"))?;
    if !scheme.eq_ignore_ascii_case("bearer") || token.trim().is_empty() {
        return Err(refused("Authorization must be Bearer <token>"));
    }
    Ok(token.trim())
}
