//! The one HTTP client for everything opd fetches from elsewhere (client
//! key sets, the rates URL, token introspection, webhooks, ILP peers), so
//! that no request can be turned against the operator's own network:
//!
//! - only `http` and `https` URLs, without user-info;
//! - the destination address is checked after DNS resolution (in the
//!   resolver, so the address checked is the address connected to): no
//!   loopback, private, link-local, shared, multicast, documentation,
//!   benchmarking or unspecified address, unless the operator allows the
//!   host or a range (`--outbound-allow`); the tests allow their loopback
//!   servers this way;
//! - redirects only within the same origin, at most three;
//! - a connect timeout, a total timeout per request, and bodies read
//!   incrementally up to a cap per use (64 KiB for a key set);
//! - failures are described in our terms ([`OutboundError`]): nothing of
//!   what an internal address answered reaches the requester.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use reqwest::dns::{Addrs, Name, Resolve, Resolving};

pub use opd_core::certificates::CertificateProblem;

/// The largest body read from a client's key set, a rates service or a
/// token introspection endpoint.
pub const MAX_DOCUMENT_BYTES: usize = 64 * 1024;

/// Why an outbound request failed, as the requester may be told.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OutboundError {
    #[error("the URL is not an http(s) URL without user-info")]
    BadUrl,
    #[error("the destination address is not allowed: opd reaches only public addresses unless the operator names it in --outbound-allow")]
    Forbidden,
    #[error("the destination could not be reached")]
    Unreachable,
    #[error("the destination did not answer in time")]
    Timeout,
    #[error("the destination answered with HTTP {0}")]
    Status(u16),
    /// The destination's TLS certificate was refused: said as such, since
    /// "could not be reached" would hide the cause from the operator.
    #[error("the destination's TLS {0}")]
    Certificate(CertificateProblem),
    #[error("the answer is larger than {0} bytes")]
    TooLarge(usize),
}

/// What the operator allows besides public addresses.
#[derive(Debug, Clone, Default)]
pub struct OutboundPolicy {
    /// Host names allowed whatever they resolve to (lower case).
    hosts: Vec<String>,
    /// Address ranges allowed: (network, prefix length).
    ranges: Vec<(IpAddr, u8)>,
}

impl OutboundPolicy {
    /// Parses entries such as `127.0.0.1`, `10.0.0.0/8`, `::1`,
    /// `rates.internal`.
    pub fn parse(entries: &[String]) -> Result<Self, String> {
        let mut policy = Self::default();
        for entry in entries.iter().map(|e| e.trim()).filter(|e| !e.is_empty()) {
            let (addr, len) = match entry.split_once('/') {
                Some((a, l)) => (a, Some(l)),
                None => (entry, None),
            };
            match (addr.parse::<IpAddr>(), len) {
                (Ok(ip), None) => policy
                    .ranges
                    .push((ip, if ip.is_ipv4() { 32 } else { 128 })),
                (Ok(ip), Some(l)) => {
                    let max = if ip.is_ipv4() { 32 } else { 128 };
                    let l: u8 = l
                        .parse()
                        .ok()
                        .filter(|l| *l <= max)
                        .ok_or_else(|| format!("bad prefix length in {entry:?}"))?;
                    policy.ranges.push((ip, l));
                }
                (Err(_), None) if is_host_name(entry) => {
                    policy.hosts.push(entry.to_ascii_lowercase());
                }
                _ => {
                    return Err(format!(
                        "{entry:?} is not an address, a range or a host name"
                    ))
                }
            }
        }
        Ok(policy)
    }

    /// Allows every address (for tests that need no protection).
    pub fn allow_all() -> Self {
        Self {
            hosts: Vec::new(),
            ranges: vec![
                (IpAddr::V4(Ipv4Addr::UNSPECIFIED), 0),
                (IpAddr::V6(Ipv6Addr::UNSPECIFIED), 0),
            ],
        }
    }

    fn host_allowed(&self, host: &str) -> bool {
        self.hosts.iter().any(|h| h.eq_ignore_ascii_case(host))
    }

    /// Whether a request may go to `ip`.
    pub fn address_allowed(&self, ip: IpAddr) -> bool {
        is_public(ip) || self.ranges.iter().any(|&(net, len)| in_range(ip, net, len))
    }
}

fn is_host_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 253
        && s.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-')
        })
}

fn in_range(ip: IpAddr, net: IpAddr, len: u8) -> bool {
    match (ip, net) {
        (IpAddr::V4(a), IpAddr::V4(n)) => {
            let mask = u32::MAX.checked_shl(32 - u32::from(len)).unwrap_or(0);
            u32::from(a) & mask == u32::from(n) & mask
        }
        (IpAddr::V6(a), IpAddr::V6(n)) => {
            let mask = u128::MAX.checked_shl(128 - u32::from(len)).unwrap_or(0);
            u128::from(a) & mask == u128::from(n) & mask
        }
        (IpAddr::V6(a), IpAddr::V4(_)) => a
            .to_ipv4_mapped()
            .is_some_and(|a| in_range(IpAddr::V4(a), net, len)),
        (IpAddr::V4(_), IpAddr::V6(_)) => false,
    }
}

/// Whether `ip` is an ordinary address on the public internet.
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(a) => {
            let o = a.octets();
            !(a.is_unspecified()
                || a.is_loopback()
                || a.is_private()
                || a.is_link_local()
                || a.is_broadcast()
                || a.is_documentation()
                || a.is_multicast()
                || o[0] == 0
                // Shared address space (carrier-grade NAT), 100.64/10.
                || (o[0] == 100 && (o[1] & 0xC0) == 64)
                // Benchmarking, 198.18/15; reserved, 240/4.
                || (o[0] == 198 && (o[1] & 0xFE) == 18)
                || o[0] >= 240
                // IETF protocol assignments, 192.0.0/24.
                || (o[0] == 192 && o[1] == 0 && o[2] == 0))
        }
        IpAddr::V6(a) => {
            if let Some(v4) = a.to_ipv4_mapped() {
                return is_public(IpAddr::V4(v4));
            }
            let s = a.segments();
            !(a.is_unspecified()
                || a.is_loopback()
                || a.is_multicast()
                // Unique local fc00::/7, link-local fe80::/10.
                || (s[0] & 0xFE00) == 0xFC00
                || (s[0] & 0xFFC0) == 0xFE80
                // Documentation 2001:db8::/32; NAT64 64:ff9b::/96 could
                // reach private IPv4 space.
                || (s[0] == 0x2001 && s[1] == 0x0DB8)
                || (s[0] == 0x0064 && s[1] == 0xFF9B))
        }
    }
}

/// Resolves names with the system resolver and keeps only the addresses
/// the policy allows; a name with none left fails.
#[derive(Debug)]
struct CheckedResolver {
    policy: Arc<OutboundPolicy>,
}

impl Resolve for CheckedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let policy = self.policy.clone();
        Box::pin(async move {
            let host = name.as_str().to_owned();
            let found = tokio::net::lookup_host((host.as_str(), 0)).await?;
            let trusted = policy.host_allowed(&host);
            let allowed: Vec<SocketAddr> = found
                .filter(|a| trusted || policy.address_allowed(a.ip()))
                .collect();
            if allowed.is_empty() {
                return Err(Box::new(Refused) as Box<dyn std::error::Error + Send + Sync>);
            }
            Ok(Box::new(allowed.into_iter()) as Addrs)
        })
    }
}

/// The resolver's refusal, recognised in [`Outbound::send`].
#[derive(Debug)]
struct Refused;

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("destination address not allowed")
    }
}

impl std::error::Error for Refused {}

/// The outbound client.
#[derive(Debug, Clone)]
pub struct Outbound {
    client: reqwest::Client,
    policy: Arc<OutboundPolicy>,
    /// Requests in flight at once: each holds a connection, so an open
    /// file, and the process's open files are shared out at start.
    in_flight: Arc<tokio::sync::Semaphore>,
}

/// Idle connections kept per host for reuse (each is an open file).
const IDLE_PER_HOST: usize = 8;

impl Outbound {
    /// A client for `policy`, sending at most `max_in_flight` requests at
    /// once, trusting the platform's trust store, the compiled-in public
    /// roots and the certificates of `extra_roots` (a PEM bundle).
    pub fn new(
        policy: OutboundPolicy,
        max_in_flight: usize,
        extra_roots: Option<&[u8]>,
    ) -> Result<Self, String> {
        let policy = Arc::new(policy);
        let redirects = reqwest::redirect::Policy::custom(|attempt| {
            let same_origin = attempt.previous().first().is_some_and(|first| {
                first.scheme() == attempt.url().scheme()
                    && first.host_str() == attempt.url().host_str()
                    && first.port_or_known_default() == attempt.url().port_or_known_default()
            });
            if same_origin && attempt.previous().len() <= 3 {
                attempt.follow()
            } else {
                attempt.stop()
            }
        });
        // rustls whatever else the build links (a test dependency can
        // bring OpenSSL into reqwest): certificate errors are read from it.
        let mut builder = reqwest::Client::builder().use_rustls_tls();
        if let Some(pem) = extra_roots {
            let roots = reqwest::Certificate::from_pem_bundle(pem)
                .map_err(|e| format!("the CA file cannot be read as PEM: {e}"))?;
            if roots.is_empty() {
                return Err("the CA file holds no certificate".into());
            }
            for root in roots {
                builder = builder.add_root_certificate(root);
            }
        }
        let client = builder
            .dns_resolver(Arc::new(CheckedResolver {
                policy: policy.clone(),
            }))
            .redirect(redirects)
            .connect_timeout(Duration::from_secs(5))
            .pool_max_idle_per_host(IDLE_PER_HOST)
            .pool_idle_timeout(Duration::from_secs(30))
            .build()
            .map_err(|e| format!("cannot build the HTTP client: {e}"))?;
        Ok(Self {
            client,
            policy,
            in_flight: Arc::new(tokio::sync::Semaphore::new(max_in_flight.max(1))),
        })
    }

    /// Checks `url` before any connection: its scheme, and its host when
    /// it is an address (names are checked when resolved). A refusal is
    /// logged for the operator (the host only: paths and queries can carry
    /// tokens), who otherwise learns of it only from whoever asked.
    pub fn check(&self, url: &str) -> Result<url::Url, OutboundError> {
        let checked = self.checked(url);
        if let Err(e) = &checked {
            let host = url::Url::parse(url)
                .ok()
                .and_then(|u| u.host_str().map(str::to_owned))
                .unwrap_or_default();
            tracing::info!(%host, error = %e, "an outbound request was refused");
        }
        checked
    }

    fn checked(&self, url: &str) -> Result<url::Url, OutboundError> {
        let url = url::Url::parse(url).map_err(|_| OutboundError::BadUrl)?;
        if !matches!(url.scheme(), "http" | "https")
            || !url.username().is_empty()
            || url.password().is_some()
        {
            return Err(OutboundError::BadUrl);
        }
        match url.host() {
            None => Err(OutboundError::BadUrl),
            Some(url::Host::Ipv4(a)) if !self.policy.address_allowed(IpAddr::V4(a)) => {
                Err(OutboundError::Forbidden)
            }
            Some(url::Host::Ipv6(a)) if !self.policy.address_allowed(IpAddr::V6(a)) => {
                Err(OutboundError::Forbidden)
            }
            Some(_) => Ok(url),
        }
    }

    /// A request to `url` (checked), to be sent with [`Outbound::send`].
    pub fn request(
        &self,
        method: reqwest::Method,
        url: &str,
    ) -> Result<reqwest::RequestBuilder, OutboundError> {
        let url = self.check(url)?;
        Ok(self.client.request(method, url))
    }

    /// Sends `request` within `timeout` and reads at most `max_bytes` of
    /// the answer; a status that is not 2xx is an error.
    pub async fn send(
        &self,
        request: reqwest::RequestBuilder,
        timeout: Duration,
        max_bytes: usize,
    ) -> Result<(reqwest::StatusCode, Vec<u8>), OutboundError> {
        let request = request.build().map_err(classify)?;
        let host = request.url().host_str().unwrap_or_default().to_owned();
        let outcome = self.execute(request, timeout, max_bytes).await;
        if let Err(e) = &outcome {
            // The host only: paths and queries can carry tokens.
            tracing::info!(%host, error = %e, "an outbound request failed");
        }
        outcome
    }

    async fn execute(
        &self,
        request: reqwest::Request,
        timeout: Duration,
        max_bytes: usize,
    ) -> Result<(reqwest::StatusCode, Vec<u8>), OutboundError> {
        let work = async {
            // Waiting for a turn counts against the request's own timeout.
            let _turn = self
                .in_flight
                .acquire()
                .await
                .map_err(|_| OutboundError::Unreachable)?;
            let mut response = self.client.execute(request).await.map_err(classify)?;
            let status = response.status();
            if !status.is_success() {
                return Err(OutboundError::Status(status.as_u16()));
            }
            if response
                .content_length()
                .is_some_and(|n| n > max_bytes as u64)
            {
                return Err(OutboundError::TooLarge(max_bytes));
            }
            let mut body = Vec::new();
            while let Some(chunk) = response.chunk().await.map_err(classify)? {
                if body.len() + chunk.len() > max_bytes {
                    return Err(OutboundError::TooLarge(max_bytes));
                }
                body.extend_from_slice(&chunk);
            }
            Ok((status, body))
        };
        tokio::time::timeout(timeout, work)
            .await
            .unwrap_or(Err(OutboundError::Timeout))
    }
}

/// A transport error in our terms: a refused address, a refused
/// certificate, a timeout, or the destination unreachable.
fn classify(e: reqwest::Error) -> OutboundError {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(&e);
    while let Some(s) = source {
        if s.is::<Refused>() {
            return OutboundError::Forbidden;
        }
        source = s.source();
    }
    if let Some(problem) = CertificateProblem::in_chain(&e) {
        tracing::info!(problem = %problem, "an outbound TLS certificate was refused");
        return OutboundError::Certificate(problem);
    }
    if e.is_timeout() {
        OutboundError::Timeout
    } else {
        OutboundError::Unreachable
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED))
    }

    #[test]
    fn internal_addresses_are_not_public() {
        for a in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "224.0.0.1",
            "255.255.255.255",
            "::1",
            "::",
            "fd00::1",
            "fe80::1",
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
            "64:ff9b::a9fe:a9fe",
        ] {
            assert!(!is_public(ip(a)), "{a}");
        }
        for a in ["93.184.216.34", "8.8.8.8", "2606:4700::1111"] {
            assert!(is_public(ip(a)), "{a}");
        }
    }

    #[test]
    fn the_operator_allows_hosts_and_ranges() {
        let p = OutboundPolicy::parse(&[
            "127.0.0.1".into(),
            "10.0.0.0/8".into(),
            "Rates.Internal".into(),
        ])
        .unwrap_or_default();
        assert!(p.address_allowed(ip("127.0.0.1")));
        assert!(!p.address_allowed(ip("127.0.0.2")));
        assert!(p.address_allowed(ip("10.200.0.1")));
        assert!(p.address_allowed(ip("::ffff:10.0.0.1")));
        assert!(!p.address_allowed(ip("192.168.0.1")));
        assert!(p.host_allowed("rates.internal"));
        assert!(OutboundPolicy::parse(&["10.0.0.0/40".into()]).is_err());
        assert!(OutboundPolicy::parse(&["http://x".into()]).is_err());
    }

    #[tokio::test]
    async fn urls_are_checked_before_connecting() {
        let o = Outbound::new(OutboundPolicy::default(), 4, None).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            o.check("ftp://example.com/").err(),
            Some(OutboundError::BadUrl)
        );
        assert_eq!(
            o.check("http://user@example.com/").err(),
            Some(OutboundError::BadUrl)
        );
        assert_eq!(
            o.check("http://127.0.0.1:8082/wallet-addresses").err(),
            Some(OutboundError::Forbidden)
        );
        assert_eq!(
            o.check("http://[::1]/").err(),
            Some(OutboundError::Forbidden)
        );
        assert!(o.check("https://wallet.example/alice").is_ok());
        // A name resolving to loopback is refused when resolved.
        let r = o
            .send(
                o.request(reqwest::Method::GET, "http://localhost:9/")
                    .unwrap_or_else(|e| panic!("{e}")),
                Duration::from_secs(5),
                10,
            )
            .await;
        assert_eq!(r.err(), Some(OutboundError::Forbidden));
    }
}
