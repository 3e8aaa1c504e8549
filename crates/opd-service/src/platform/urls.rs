//! The public URL: the base of every wallet address and resource URL, and
//! the reverse mapping from a URL a client sends back to what it names.

use std::fmt;

use opd_core::wallet_address::WalletAddressPath;
use opd_core::{IncomingPaymentId, QuoteId};
use url::Url;

/// The externally visible base URL of the Open Payments listener, such as
/// `https://wallet.example` or `https://example.com/op` (no trailing slash).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublicUrl {
    base: String,
    url: Url,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("public URL must be an absolute http(s) URL without query or fragment, such as https://wallet.example")]
pub struct PublicUrlError;

impl PublicUrl {
    pub fn parse(s: &str) -> Result<Self, PublicUrlError> {
        let url = Url::parse(s.trim_end_matches('/')).map_err(|_| PublicUrlError)?;
        if unservable(&url).is_some() {
            return Err(PublicUrlError);
        }
        let base = url.as_str().trim_end_matches('/').to_owned();
        Ok(Self { base, url })
    }

    /// The base, also the `resourceServer` of every wallet address.
    pub fn as_str(&self) -> &str {
        &self.base
    }

    /// The host, lower case (IPv6 literals in brackets).
    pub fn host(&self) -> &str {
        self.url.host_str().unwrap_or_default()
    }

    /// The path prefix the Open Payments routes live under (`""` at root).
    pub fn path_prefix(&self) -> &str {
        self.url.path().trim_end_matches('/')
    }

    pub fn wallet_address(&self, path: &WalletAddressPath) -> String {
        format!("{}/{}", self.base, path)
    }

    pub fn incoming_payment(&self, id: IncomingPaymentId) -> String {
        format!("{}/incoming-payments/{}", self.base, id)
    }

    pub fn quote(&self, id: QuoteId) -> String {
        format!("{}/quotes/{}", self.base, id)
    }

    pub fn outgoing_payment(&self, id: opd_core::OutgoingPaymentId) -> String {
        format!("{}/outgoing-payments/{}", self.base, id)
    }

    /// The part of `url` below this base, or `None` when `url` is not
    /// under it. (Whether a URL is this server's at all is a question for
    /// every tenant's base: `tenants::SiteTable::of_url`.) Scheme and host compare case-insensitively; default
    /// ports are implied.
    pub fn relative(&self, url: &str) -> Option<String> {
        self.relative_parsed(&Url::parse(url).ok()?)
    }

    /// [`PublicUrl::relative`] of a URL parsed already (to match one URL
    /// against several bases without parsing it again).
    pub fn relative_parsed(&self, parsed: &Url) -> Option<String> {
        if parsed.scheme() != self.url.scheme()
            || parsed.host_str()? != self.url.host_str()?
            || parsed.port_or_known_default() != self.url.port_or_known_default()
            || parsed.query().is_some()
            || parsed.fragment().is_some()
        {
            return None;
        }
        let path = parsed.path();
        let prefix = self.path_prefix();
        let rest = path.strip_prefix(prefix)?;
        if !prefix.is_empty() && !rest.starts_with('/') {
            return None;
        }
        Some(rest.trim_start_matches('/').to_owned())
    }

    /// The wallet address path a wallet address URL names, if it is ours.
    pub fn wallet_address_path(&self, url: &str) -> Option<WalletAddressPath> {
        WalletAddressPath::parse_any(&self.relative(url)?).ok()
    }

    /// The incoming payment a URL names, if it is ours and well formed.
    pub fn incoming_payment_id(&self, url: &str) -> Option<IncomingPaymentId> {
        let rest = self.relative(url)?;
        IncomingPaymentId::parse(rest.strip_prefix("incoming-payments/")?)
    }
}

impl fmt::Display for PublicUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.base)
    }
}

/// Why `url` cannot be a base URL this server publishes and serves
/// under (`--public-url`, `--auth-public-url`), if it cannot: it must be
/// http or https, name a host, and carry no user information, query or
/// fragment (the URLs clients build from it could not keep them).
fn unservable(url: &Url) -> Option<String> {
    if !matches!(url.scheme(), "http" | "https") {
        return Some(format!("the scheme is {}, not http or https", url.scheme()));
    }
    if url.host().is_none() {
        return Some("it names no host".into());
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Some("it carries user information".into());
    }
    if url.query().is_some() || url.fragment().is_some() {
        return Some(
            "it has a query or a fragment, which the URLs clients build from it cannot keep".into(),
        );
    }
    None
}

/// The grant endpoint an `--auth-public-url` names: the URL the wallet
/// address documents publish as `authServer`, which clients POST grant
/// requests to and sign as they send it. At the origin root it keeps its
/// trailing slash (`https://auth.example/`: clients and the Web
/// Monetization extension hash the finish over `origin + "/"`); under a
/// path it has none (`https://example.com/gnap`, as the reference server
/// publishes a tenant's), and the authorization server's routes live
/// under that path. Scheme and host are normalised (lower case, no
/// default port).
pub fn grant_endpoint(s: &str) -> Result<String, String> {
    let url = Url::parse(s).map_err(|e| format!("not an absolute URL ({e})"))?;
    if let Some(why) = unservable(&url) {
        return Err(why);
    }
    let path = url.path().trim_end_matches('/');
    if path.contains("//") {
        // Requests' empty segments are read as absent before routing (see
        // `opd_api::collapse_empty_segments`): such a path is never reached.
        return Err(format!("its path {path:?} has an empty segment"));
    }
    let origin = url.origin().ascii_serialization();
    Ok(format!(
        "{origin}{}",
        if path.is_empty() { "/" } else { path }
    ))
}

/// A grant endpoint (see [`grant_endpoint`]) split into its origin and
/// the path its routes live under (`""` at the root).
pub fn split_grant_endpoint(url: &str) -> (&str, &str) {
    let after_scheme = url.find("://").map_or(0, |i| i + 3);
    match url[after_scheme..].find('/') {
        Some(i) => {
            let (origin, path) = url.split_at(after_scheme + i);
            (origin, path.trim_end_matches('/'))
        }
        None => (url, ""),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_urls_both_ways() {
        let p = PublicUrl::parse("http://LocalHost:8080/").unwrap();
        assert_eq!(p.as_str(), "http://localhost:8080");
        let alice = WalletAddressPath::parse("alice").unwrap();
        assert_eq!(p.wallet_address(&alice), "http://localhost:8080/alice");
        assert_eq!(
            p.wallet_address_path("http://localhost:8080/Alice/"),
            Some(alice)
        );
        assert_eq!(p.wallet_address_path("https://localhost:8080/alice"), None);
        assert_eq!(p.wallet_address_path("http://other:8080/alice"), None);
        let id = "0190a1b2-0000-7000-8000-000000000000";
        assert!(p
            .incoming_payment_id(&format!("http://localhost:8080/incoming-payments/{id}"))
            .is_some());
        assert!(p
            .incoming_payment_id("http://localhost:8080/incoming-payments/nope")
            .is_none());
    }

    #[test]
    fn path_prefixes_and_default_ports() {
        let p = PublicUrl::parse("https://example.com/op").unwrap();
        assert_eq!(p.path_prefix(), "/op");
        assert_eq!(
            p.wallet_address_path("https://example.com:443/op/bob")
                .unwrap()
                .as_str(),
            "bob"
        );
        assert_eq!(p.wallet_address_path("https://example.com/opx/bob"), None);
        assert!(PublicUrl::parse("ftp://example.com").is_err());
        assert!(PublicUrl::parse("https://example.com/?a=b").is_err());
        assert!(PublicUrl::parse("not a url").is_err());
    }

    #[test]
    fn grant_endpoints_keep_their_path_and_refuse_what_cannot_be_served() {
        for (given, endpoint) in [
            ("http://127.0.0.1:8081", "http://127.0.0.1:8081/"),
            ("https://Auth.Example:443/", "https://auth.example/"),
            ("https://example.com/gnap", "https://example.com/gnap"),
            ("https://example.com/gnap/", "https://example.com/gnap"),
            ("https://example.com/a/b", "https://example.com/a/b"),
        ] {
            assert_eq!(grant_endpoint(given).as_deref(), Ok(endpoint), "{given}");
        }
        for (given, reason) in [
            ("ftp://example.com/gnap", "scheme is ftp"),
            ("https://example.com/gnap?tenant=1", "query"),
            ("https://example.com/gnap#x", "fragment"),
            ("https://me:pw@example.com/gnap", "user information"),
            ("https://example.com/a//b", "empty segment"),
            ("/gnap", "not an absolute URL"),
        ] {
            let e = grant_endpoint(given).unwrap_err();
            assert!(e.contains(reason), "{given}: {e}");
        }
        assert_eq!(
            split_grant_endpoint("https://example.com/gnap"),
            ("https://example.com", "/gnap")
        );
        assert_eq!(
            split_grant_endpoint("http://127.0.0.1:8081/"),
            ("http://127.0.0.1:8081", "")
        );
        assert_eq!(
            split_grant_endpoint("http://127.0.0.1:8081"),
            ("http://127.0.0.1:8081", "")
        );
    }
}
