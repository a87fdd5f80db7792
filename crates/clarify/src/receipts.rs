//! `clarify receipts`: `verify` checks a receipt offline (its signature against a key set, and
//! optionally the action and the exact arguments it approves); `rotate` makes a new signing
//! key in the store, after which receipts signed before still verify.

use std::process::ExitCode;

use anyhow::Context as _;
use clarify_model::receipt::{ReceiptClaims, verify};
use clarify_store::StoreOptions;
use jsonwebtoken::jwk::JwkSet;
use serde_json::Value;

use crate::ReceiptsCommand;
use crate::store_arg::{Missing, Use};

pub async fn run(command: ReceiptsCommand, db: &str) -> anyhow::Result<ExitCode> {
    match command {
        ReceiptsCommand::Verify {
            receipt,
            jwks,
            action,
            arguments,
        } => Ok(
            match check(&receipt, jwks.as_deref(), action, arguments).await {
                Ok(claims) => {
                    println!(
                        "clarify: the receipt verifies: {} {} by {} (jti {}, audit seq {})",
                        claims.sub, claims.status, claims.by, claims.jti, claims.seq
                    );
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    println!("clarify: the receipt does not verify: {e:#}");
                    ExitCode::FAILURE
                }
            },
        ),
        ReceiptsCommand::Rotate => {
            let options = StoreOptions {
                reaper_interval: None,
                ..StoreOptions::default()
            };
            let store = crate::store_arg::open(db, options, Missing::Refuse, Use::Write).await?;
            let key = store.rotate_receipt_key().await?;
            println!("{}", key.kid());
            eprintln!(
                "clarify: receipts are signed with key {} from now on (every server reads the keys \
                 again within 30 seconds); the keys before stay published for their window",
                key.kid()
            );
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// Verifies `receipt` against the key set at `jwks` (a URL or a file; the server at
/// `CLARIFY_URL` when absent), then what it approves.
async fn check(
    receipt: &str,
    jwks: Option<&str>,
    action: Option<String>,
    arguments: Option<String>,
) -> anyhow::Result<ReceiptClaims> {
    let receipt = read_arg(receipt).context("reading the receipt")?;
    let arguments: Option<Value> = arguments
        .map(|a| {
            let text = read_arg(&a).context("reading --arguments")?;
            serde_json::from_str(&text).context("--arguments is not JSON")
        })
        .transpose()?;
    let keys = key_set(jwks).await?;
    let claims = verify(receipt.trim(), &keys)?;
    claims.check(action.as_deref(), arguments.as_ref())?;
    Ok(claims)
}

/// `-` (standard input), `@FILE` (its content) or the text itself.
fn read_arg(value: &str) -> anyhow::Result<String> {
    if value == "-" {
        return std::io::read_to_string(std::io::stdin()).context("reading standard input");
    }
    match value.strip_prefix('@') {
        Some(path) => std::fs::read_to_string(path).with_context(|| format!("reading {path}")),
        None => Ok(value.to_owned()),
    }
}

async fn key_set(jwks: Option<&str>) -> anyhow::Result<JwkSet> {
    let url = match jwks {
        Some(source) if !source.starts_with("http://") && !source.starts_with("https://") => {
            let text = std::fs::read_to_string(source)
                .with_context(|| format!("reading the key set {source}"))?;
            return serde_json::from_str(&text)
                .with_context(|| format!("{source} is not a JSON Web Key Set"));
        }
        Some(url) => url.to_owned(),
        None => format!(
            "{}/.well-known/jwks.json",
            std::env::var("CLARIFY_URL")
                .unwrap_or_else(|_| "http://127.0.0.1:7420".to_owned())
                .trim_end_matches('/')
        ),
    };
    let client = clarify_client::http::builder()
        .timeout(std::time::Duration::from_secs(10))
        .build()
        .context("making an HTTP client")?;
    let response = client
        .get(&url)
        .send()
        .await
        .with_context(|| format!("fetching the key set {url}"))?;
    if !response.status().is_success() {
        anyhow::bail!("fetching the key set {url}: {}", response.status());
    }
    response
        .json()
        .await
        .with_context(|| format!("{url} is not a JSON Web Key Set"))
}
