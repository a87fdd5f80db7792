//! The one way the workspace builds an HTTP client: reqwest over rustls with the ring provider
//! and the webpki roots.
//!
//! The workspace builds reqwest without a TLS provider of its own (its default would compile a
//! second one, aws-lc, beside the ring that lettre and tokio-tungstenite use, and then rustls could
//! no longer pick a default for them). So every client starts from [`builder`], which hands reqwest
//! a ready TLS configuration. [`builder`] also installs ring as the process's default provider, so
//! a client that some library builds on its own (rmcp's, OpenTelemetry's) works too rather than
//! panicking.

use std::sync::{Arc, OnceLock};

/// A client builder with clarify's TLS set up; add timeouts, a user agent, a redirect policy.
#[allow(clippy::disallowed_methods)] // The one place reqwest's own builder is called.
pub fn builder() -> reqwest::ClientBuilder {
    let builder = reqwest::Client::builder();
    match tls() {
        Some(config) => builder.tls_backend_preconfigured(config.clone()),
        // Only when ring offers no safe protocol version, which it always does; reqwest then
        // builds its own configuration over the default provider installed by `tls`.
        None => builder,
    }
}

/// A client with clarify's TLS set up and reqwest's defaults otherwise.
pub fn client() -> reqwest::Result<reqwest::Client> {
    builder().build()
}

/// The TLS configuration every client shares, made once.
fn tls() -> Option<&'static rustls::ClientConfig> {
    static CONFIG: OnceLock<Option<rustls::ClientConfig>> = OnceLock::new();
    CONFIG
        .get_or_init(|| {
            let provider = Arc::new(rustls::crypto::ring::default_provider());
            // Fails only when another provider was installed first, which then serves as well.
            let _ = rustls::crypto::CryptoProvider::install_default((*provider).clone());
            let roots = rustls::RootCertStore {
                roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
            };
            rustls::ClientConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()
                .ok()
                .map(|config| config.with_root_certificates(roots).with_no_client_auth())
        })
        .as_ref()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[allow(clippy::disallowed_methods)] // What a library building its own client does.
    fn clients_build_and_reqwest_defaults_work_after_the_first() {
        client().expect("a client with clarify's TLS");
        // The default provider is now ring, so a client a library builds itself works too.
        reqwest::Client::builder()
            .build()
            .expect("a client built without the builder");
    }
}
