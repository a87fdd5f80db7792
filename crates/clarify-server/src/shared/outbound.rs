//! The outbound guard: what an outbound call to an address someone else chose (a request's
//! `callback_url`; later a browser's Web Push endpoint, an A2A client's push URL) may reach.
//!
//! By default only public addresses: loopback, private (RFC 1918, IPv6 unique-local and
//! site-local), link-local (cloud metadata at 169.254.169.254 included), shared (CGNAT,
//! 100.64.0.0/10), multicast, unspecified, broadcast and reserved addresses are refused, and so
//! are the IPv6 spellings that carry an IPv4 address inside (IPv4-mapped `::ffff:a.b.c.d`,
//! IPv4-compatible `::a.b.c.d`, NAT64 `64:ff9b::/96`, 6to4 `2002::/16`), judged by the IPv4
//! address they carry. Decimal and octal spellings of IPv4 (`http://2130706433/`,
//! `http://0177.0.0.1/`) never reach the guard as such: URLs are parsed by the WHATWG rules,
//! which read them as `127.0.0.1`.
//!
//! The check is made on the address actually connected to: [`OutboundGuard::client`] builds a
//! `reqwest` client whose DNS resolver (`GuardedResolver`) hands the connector only the
//! addresses the guard allows, and refuses the name when none is, so a name that changes its
//! answer between an earlier check and the connection is still caught. `reqwest` does not resolve an address written in the URL, so
//! [`OutboundGuard::check_literal`] is called before each send. The client follows no redirect
//! and uses no proxy (a proxy would resolve the name itself, out of the guard's sight).
//!
//! `[server] outbound_allow` (or `--outbound-allow`) lists what an admin allows besides: CIDR
//! ranges (`10.20.0.0/16`), single addresses, and host names (`hooks.internal`, matched
//! exactly, ignoring case), whose every address is then allowed.
//!
//! Addresses an admin wrote in the configuration (a chat platform's API URL, the gate's
//! `--url`) are the admin's own and are not guarded.

use std::fmt;
use std::future::Future;
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use axum::http::StatusCode;
use ipnet::IpNet;

use crate::shared::error::ApiError;

/// How long the check at creation waits for a name to resolve; a name that does not resolve
/// in time is checked again when it is delivered to.
const LOOKUP_TIMEOUT: Duration = Duration::from_secs(2);

/// Why an address is refused: the rule, named as the error message names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    Loopback,
    Private,
    LinkLocal,
    /// 100.64.0.0/10, the shared address space of carrier-grade NAT.
    Shared,
    Multicast,
    Unspecified,
    Broadcast,
    Reserved,
}

impl Rule {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Loopback => "loopback",
            Self::Private => "private",
            Self::LinkLocal => "link-local",
            Self::Shared => "shared (CGNAT)",
            Self::Multicast => "multicast",
            Self::Unspecified => "unspecified",
            Self::Broadcast => "broadcast",
            Self::Reserved => "reserved",
        }
    }
}

/// The rule refusing `ip` by default, or `None` for a public address.
pub fn rule_for(ip: IpAddr) -> Option<Rule> {
    match ip {
        IpAddr::V4(v4) => rule_for_v4(v4),
        IpAddr::V6(v6) => rule_for_v6(v6),
    }
}

fn rule_for_v4(ip: Ipv4Addr) -> Option<Rule> {
    let [a, b, c, _] = ip.octets();
    Some(match (a, b, c) {
        (0, ..) => Rule::Unspecified,
        (127, ..) => Rule::Loopback,
        (10, ..) | (172, 16..=31, _) | (192, 168, _) => Rule::Private,
        (169, 254, _) => Rule::LinkLocal,
        (100, 64..=127, _) => Rule::Shared,
        (224..=239, ..) => Rule::Multicast,
        (255, 255, 255) if ip.is_broadcast() => Rule::Broadcast,
        // IETF protocol assignments, benchmarking, documentation, and the former class E.
        (192, 0, 0) | (192, 0, 2) | (198, 18..=19, _) | (198, 51, 100) | (203, 0, 113) => {
            Rule::Reserved
        }
        (240..=255, ..) => Rule::Reserved,
        _ => return None,
    })
}

fn rule_for_v6(ip: Ipv6Addr) -> Option<Rule> {
    if ip.is_unspecified() {
        return Some(Rule::Unspecified);
    }
    if ip.is_loopback() {
        return Some(Rule::Loopback);
    }
    if let Some(v4) = embedded_v4(ip) {
        return rule_for_v4(v4);
    }
    let s = ip.segments();
    Some(match s[0] {
        0xfc00..=0xfdff => Rule::Private,
        // Site-local, deprecated, still routed inside some networks.
        0xfec0..=0xfeff => Rule::Private,
        0xfe80..=0xfebf => Rule::LinkLocal,
        0xff00..=0xffff => Rule::Multicast,
        // Documentation.
        0x2001 if s[1] == 0x0db8 => Rule::Reserved,
        // The rest of ::/8 (besides the forms carrying IPv4 above), and discard-only 100::/64.
        0x0000..=0x00ff => Rule::Reserved,
        0x0100 if s[1..4] == [0, 0, 0] => Rule::Reserved,
        _ => return None,
    })
}

/// The IPv4 address an IPv6 address carries: IPv4-mapped (`::ffff:a.b.c.d`), IPv4-compatible
/// (`::a.b.c.d`), NAT64 (`64:ff9b::a.b.c.d`) or 6to4 (`2002:aabb:ccdd::`).
fn embedded_v4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    let s = ip.segments();
    let low = |hi: u16, lo: u16| Ipv4Addr::from((u32::from(hi) << 16) | u32::from(lo));
    match s {
        [0, 0, 0, 0, 0, 0xffff, hi, lo] | [0, 0, 0, 0, 0, 0, hi, lo] => Some(low(hi, lo)),
        [0x64, 0xff9b, 0, 0, 0, 0, hi, lo] => Some(low(hi, lo)),
        [0x2002, hi, lo, ..] => Some(low(hi, lo)),
        _ => None,
    }
}

/// A refused address: the rule, the address, and the name that resolved to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub rule: Rule,
    pub addr: IpAddr,
    /// The host name the address was resolved from; `None` for an address written as such.
    pub host: Option<String>,
}

impl fmt::Display for Refusal {
    /// `address not allowed (loopback 127.0.0.1)`, or for a name `address not allowed
    /// (hooks.example resolves to a private address)`: a name's addresses are not repeated to
    /// whoever chose the name.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.host {
            None => write!(
                f,
                "address not allowed ({} {})",
                self.rule.as_str(),
                self.addr
            ),
            Some(host) => write!(
                f,
                "address not allowed ({host} resolves to a {} address)",
                self.rule.as_str()
            ),
        }
    }
}

impl std::error::Error for Refusal {}

/// An entry of `outbound_allow` that is neither a range, an address nor a host name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not a CIDR range (10.20.0.0/16), an address or a host name (hooks.internal)")]
pub struct BadAllowEntry(pub String);

/// Resolves host names to addresses: the system's resolver, or one given (for a network whose
/// names must be answered otherwise).
pub trait Lookup: Send + Sync + fmt::Debug {
    fn lookup(&self, host: &str) -> Pin<Box<dyn Future<Output = io::Result<Vec<IpAddr>>> + Send>>;
}

/// The system's resolver (`getaddrinfo`, through tokio).
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemLookup;

impl Lookup for SystemLookup {
    fn lookup(&self, host: &str) -> Pin<Box<dyn Future<Output = io::Result<Vec<IpAddr>>> + Send>> {
        let host = host.to_owned();
        Box::pin(async move {
            Ok(tokio::net::lookup_host((host.as_str(), 0))
                .await?
                .map(|a| a.ip())
                .collect())
        })
    }
}

/// What outbound calls to addresses others chose may reach. See the module documentation.
#[derive(Debug, Clone)]
pub struct OutboundGuard {
    ranges: Vec<IpNet>,
    /// Lowercase, without a trailing dot.
    hosts: Vec<String>,
    lookup: Arc<dyn Lookup>,
}

impl Default for OutboundGuard {
    fn default() -> Self {
        Self::public_only()
    }
}

impl OutboundGuard {
    /// Public addresses only.
    pub fn public_only() -> Self {
        Self {
            ranges: Vec::new(),
            hosts: Vec::new(),
            lookup: Arc::new(SystemLookup),
        }
    }

    /// Public addresses and those `allow` names: CIDR ranges, addresses and host names.
    pub fn allowing<S: AsRef<str>>(allow: &[S]) -> Result<Self, BadAllowEntry> {
        let mut guard = Self::public_only();
        for entry in allow {
            let entry = entry.as_ref().trim();
            if let Ok(net) = entry.parse::<IpNet>() {
                guard.ranges.push(net.trunc());
            } else if let Ok(ip) = entry.parse::<IpAddr>() {
                guard.ranges.push(IpNet::from(ip));
            } else if let Some(host) = host_name(entry) {
                guard.hosts.push(host);
            } else {
                return Err(BadAllowEntry(entry.to_owned()));
            }
        }
        Ok(guard)
    }

    /// This guard, also allowing `host` (a name, or an address written in a URL): for an
    /// address the admin configured, such as an `[[agui]]` agent's.
    pub fn with_host(mut self, host: &str) -> Self {
        let bare = host.trim_start_matches('[').trim_end_matches(']');
        if let Ok(ip) = bare.parse::<IpAddr>() {
            self.ranges.push(IpNet::from(ip));
        } else if let Some(host) = host_name(bare) {
            self.hosts.push(host);
        }
        self
    }

    /// This guard, resolving names with `lookup` instead of the system's resolver.
    pub fn with_lookup(mut self, lookup: Arc<dyn Lookup>) -> Self {
        self.lookup = lookup;
        self
    }

    /// Whether `ip` may be reached: public, or in an allowed range.
    pub fn check_ip(&self, ip: IpAddr) -> Result<(), Refusal> {
        let Some(rule) = rule_for(ip) else {
            return Ok(());
        };
        // An IPv4-mapped address is allowed by the range its IPv4 address is in, too.
        let mapped = match ip {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map(IpAddr::V4),
            IpAddr::V4(_) => None,
        };
        let allowed = self
            .ranges
            .iter()
            .any(|r| r.contains(&ip) || mapped.is_some_and(|m| r.contains(&m)));
        if allowed {
            Ok(())
        } else {
            Err(Refusal {
                rule,
                addr: ip,
                host: None,
            })
        }
    }

    /// Whether `host` is a name an admin allowed, whatever it resolves to.
    pub fn allows_host(&self, host: &str) -> bool {
        let host = host.trim_end_matches('.');
        self.hosts.iter().any(|h| h.eq_ignore_ascii_case(host))
    }

    /// The addresses `host` resolved to that may be reached (all of them for an allowed name),
    /// or, when none may, the refusal of the first.
    pub fn check_resolved(&self, host: &str, addrs: &[IpAddr]) -> Result<Vec<IpAddr>, Refusal> {
        if self.allows_host(host) {
            return Ok(addrs.to_vec());
        }
        let mut first = None;
        let mut allowed = Vec::with_capacity(addrs.len());
        for ip in addrs {
            match self.check_ip(*ip) {
                Ok(()) => allowed.push(*ip),
                Err(refusal) => {
                    first.get_or_insert(Refusal {
                        host: Some(host.to_owned()),
                        ..refusal
                    });
                }
            }
        }
        match first {
            Some(refusal) if allowed.is_empty() => Err(refusal),
            _ => Ok(allowed),
        }
    }

    /// The check made before each send: an address written in the URL (which no resolver
    /// sees). Names are checked by the client's resolver when it connects.
    pub fn check_literal(&self, url: &url::Url) -> Result<(), Refusal> {
        match url.host() {
            Some(url::Host::Ipv4(v4)) => self.check_ip(IpAddr::V4(v4)),
            Some(url::Host::Ipv6(v6)) => self.check_ip(IpAddr::V6(v6)),
            Some(url::Host::Domain(_)) | None => Ok(()),
        }
    }

    /// The check made when an address is given (a request created with a `callback_url`): an
    /// address written in the URL, or every address its name resolves to now. A name that does
    /// not resolve (yet) passes; it is checked again on every connection.
    pub async fn check_url(&self, url: &url::Url) -> Result<(), Refusal> {
        self.check_literal(url)?;
        let Some(url::Host::Domain(host)) = url.host() else {
            return Ok(());
        };
        if self.allows_host(host) {
            return Ok(());
        }
        match tokio::time::timeout(LOOKUP_TIMEOUT, self.lookup.lookup(host)).await {
            Ok(Ok(addrs)) => self.check_resolved(host, &addrs).map(drop),
            Ok(Err(_)) | Err(_) => Ok(()),
        }
    }

    /// [`check_url`](Self::check_url) of the URL in request field `field`, refused as the API
    /// refuses it: `422 address_not_allowed`, naming the field, the rule and what to do. A value
    /// that is not a URL passes (the field's own validation reads it).
    pub async fn check_field(&self, field: &str, url: &str) -> Result<(), ApiError> {
        let Ok(parsed) = url::Url::parse(url) else {
            return Ok(());
        };
        self.check_url(&parsed).await.map_err(|refusal| {
            let mut error = ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "address_not_allowed",
                format!("{field}: {refusal}; allow it with [server] outbound_allow"),
            );
            error.field = Some(field.to_owned());
            error
        })
    }

    /// An HTTP client for addresses others chose: names resolved through this guard, no
    /// redirects followed, no proxy. `builder` carries the caller's other settings (timeout,
    /// user agent).
    pub fn client(&self, builder: reqwest::ClientBuilder) -> reqwest::Result<reqwest::Client> {
        builder
            .dns_resolver(Arc::new(GuardedResolver(self.clone())))
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .build()
    }

    /// The refusal behind a failed send of a [`client`](Self::client), if the guard refused it.
    pub fn refusal_of(error: &reqwest::Error) -> Option<Refusal> {
        let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error);
        while let Some(e) = source {
            if let Some(refusal) = e.downcast_ref::<Refusal>() {
                return Some(refusal.clone());
            }
            source = e.source();
        }
        None
    }
}

/// A host name as `outbound_allow` may list it: letters, digits, `-`, `_` and dots, lowercased,
/// without a trailing dot.
fn host_name(entry: &str) -> Option<String> {
    let host = entry.trim_end_matches('.').to_ascii_lowercase();
    let valid = !host.is_empty()
        && host.len() <= 253
        && host.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && label
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        });
    valid.then_some(host)
}

/// The DNS resolver of a guarded client: resolves with the guard's lookup, then hands on only
/// the addresses the guard allows, refusing the name when none is.
#[derive(Debug)]
struct GuardedResolver(OutboundGuard);

impl reqwest::dns::Resolve for GuardedResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let guard = self.0.clone();
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let addrs = guard.lookup.lookup(&host).await?;
            let addrs = guard.check_resolved(&host, &addrs)?;
            let addrs: reqwest::dns::Addrs =
                Box::new(addrs.into_iter().map(|ip| SocketAddr::new(ip, 0)));
            Ok(addrs)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().expect("an address")
    }

    #[test]
    fn every_non_public_address_is_refused_by_its_rule() {
        for (addr, rule) in [
            ("127.0.0.1", Some(Rule::Loopback)),
            ("127.255.0.9", Some(Rule::Loopback)),
            ("::1", Some(Rule::Loopback)),
            ("10.0.0.1", Some(Rule::Private)),
            ("172.16.0.1", Some(Rule::Private)),
            ("172.31.255.255", Some(Rule::Private)),
            ("172.32.0.1", None),
            ("192.168.1.1", Some(Rule::Private)),
            ("fd00::1", Some(Rule::Private)),
            ("169.254.169.254", Some(Rule::LinkLocal)),
            ("fe80::1", Some(Rule::LinkLocal)),
            ("100.64.0.1", Some(Rule::Shared)),
            ("100.127.255.255", Some(Rule::Shared)),
            ("100.128.0.1", None),
            ("224.0.0.1", Some(Rule::Multicast)),
            ("ff02::1", Some(Rule::Multicast)),
            ("0.0.0.0", Some(Rule::Unspecified)),
            ("::", Some(Rule::Unspecified)),
            ("255.255.255.255", Some(Rule::Broadcast)),
            ("240.0.0.1", Some(Rule::Reserved)),
            ("::ffff:127.0.0.1", Some(Rule::Loopback)),
            ("::ffff:169.254.169.254", Some(Rule::LinkLocal)),
            ("::ffff:8.8.8.8", None),
            ("::127.0.0.1", Some(Rule::Loopback)),
            ("64:ff9b::10.0.0.1", Some(Rule::Private)),
            ("2002:7f00:1::", Some(Rule::Loopback)),
            ("8.8.8.8", None),
            ("93.184.216.34", None),
            ("2606:4700::1111", None),
        ] {
            assert_eq!(rule_for(ip(addr)), rule, "{addr}");
        }
    }

    #[test]
    fn allowed_ranges_addresses_and_names_pass() {
        let guard =
            OutboundGuard::allowing(&["127.0.0.0/8", "10.20.0.0/16", "fd00::5", "Hooks.Internal."])
                .expect("valid");
        assert_eq!(guard.check_ip(ip("127.0.0.1")), Ok(()));
        assert_eq!(guard.check_ip(ip("::ffff:127.0.0.1")), Ok(()), "mapped");
        assert_eq!(guard.check_ip(ip("10.20.3.4")), Ok(()));
        assert!(guard.check_ip(ip("10.21.0.1")).is_err());
        assert_eq!(guard.check_ip(ip("fd00::5")), Ok(()));
        assert!(guard.check_ip(ip("fd00::6")).is_err());
        assert!(
            guard.check_ip(ip("::1")).is_err(),
            "127/8 does not allow ::1"
        );
        assert_eq!(
            guard.check_resolved("hooks.internal", &[ip("192.168.0.1")]),
            Ok(vec![ip("192.168.0.1")])
        );
        assert_eq!(
            guard.check_resolved("other.internal", &[ip("192.168.0.1"), ip("8.8.8.8")]),
            Ok(vec![ip("8.8.8.8")]),
            "only the public address is connected to"
        );
        let refused = guard
            .check_resolved("other.internal", &[ip("192.168.0.1"), ip("::1")])
            .expect_err("no address may be reached");
        assert_eq!(
            refused.to_string(),
            "address not allowed (other.internal resolves to a private address)"
        );
        assert_eq!(
            OutboundGuard::public_only()
                .check_ip(ip("169.254.169.254"))
                .expect_err("metadata")
                .to_string(),
            "address not allowed (link-local 169.254.169.254)"
        );
    }

    #[test]
    fn bad_allow_entries_are_named() {
        for bad in ["", "10.0.0.0/33", "not a host", "http://x/", "a..b"] {
            assert_eq!(
                OutboundGuard::allowing(&[bad]).map(drop),
                Err(BadAllowEntry(bad.trim().to_owned())),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn urls_spelling_loopback_otherwise_are_read_as_loopback() {
        let guard = OutboundGuard::public_only();
        for url in [
            "http://127.0.0.1/",
            "http://2130706433/",
            "http://0177.0.0.1/",
            "http://0x7f.1/",
            "http://[::ffff:127.0.0.1]/",
            "http://[::1]:8080/x",
        ] {
            let parsed = url::Url::parse(url).expect("a URL");
            let refusal = guard.check_literal(&parsed).expect_err(url);
            assert_eq!(refusal.rule, Rule::Loopback, "{url}");
        }
        let public = url::Url::parse("https://example.com/hook").expect("a URL");
        assert_eq!(guard.check_literal(&public), Ok(()));
    }
}
