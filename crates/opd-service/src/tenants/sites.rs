//! Sites: where each tenant is on the web. A request to the Open Payments
//! listener is resolved to its tenant's site from its `Host` and path
//! before anything else; a URL a client sends back (a wallet address, a
//! receiver) is ours when it lies under some tenant's public URL.
//!
//! The table is read from the database and kept in memory: a change made
//! on any node reaches the others through the change feed
//! (`Change::Tenants`), and the table is read again after `ttl` anyway.

use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use opd_core::tenant::Tenant;
use opd_core::wallet_address::{WalletAddress, WalletAddressPath};
use opd_core::{IncomingPaymentId, QuoteId, TenantId};
use opd_store::Store;

use crate::platform::urls::PublicUrl;
use crate::ServiceError;

/// One tenant's place on the web.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Site {
    pub tenant: TenantId,
    pub public_name: String,
    /// The base of its wallet addresses and resources.
    pub public_url: PublicUrl,
    /// The `authServer` its wallet address documents name: its own (at
    /// the root of a host of its own, see [`Site::auth_tenant`]) or the
    /// server's, shared.
    pub auth_server_url: String,
    /// Whose authorization server that is: this tenant's when it has its
    /// own, else the operator's. Grants record it, and a grant, token or
    /// interaction is only found at its authorization server.
    pub auth_tenant: TenantId,
    /// Where its webhook events go, if it has a URL of its own (the
    /// operator's: the server's `--webhook-url`).
    pub webhook_url: Option<String>,
    /// Its consent app, if it has one (the operator's: the server's
    /// `--idp-consent-url`); else the built-in consent page.
    pub idp_consent_url: Option<String>,
}

impl Site {
    /// The URL of one of its wallet addresses.
    pub fn wallet_url(&self, wallet: &WalletAddress) -> String {
        self.public_url.wallet_address(&wallet.path)
    }

    /// Lower-case host of its public URL.
    fn host(&self) -> &str {
        self.public_url.host()
    }
}

/// The operator's site, as configured, and the tenants' sites as stored.
#[derive(Debug)]
pub struct SiteTable {
    operator: Arc<Site>,
    sites: Vec<Arc<Site>>,
}

impl SiteTable {
    /// The table for `tenants` (the operator's row gives only its name:
    /// its URLs are the server's configuration). A stored URL that no
    /// longer parses leaves its tenant off the web, with a warning.
    pub fn new(operator: Site, tenants: &[Tenant]) -> Self {
        let operator = Arc::new(operator);
        let mut sites = vec![operator.clone()];
        for t in tenants.iter().filter(|t| !t.id.is_operator()) {
            match site_of(t, &operator) {
                Some(site) => sites.push(Arc::new(site)),
                None => {
                    tracing::warn!(tenant = %t.id, "tenant has no usable public URL; its wallet addresses are not served")
                }
            }
        }
        Self { operator, sites }
    }

    /// The site of `tenant`, if it is in this table.
    pub fn get(&self, tenant: &TenantId) -> Option<Arc<Site>> {
        self.sites.iter().find(|s| &s.tenant == tenant).cloned()
    }

    /// The site of `tenant` (the operator's for an unknown one, which no
    /// stored wallet address can name: a tenant with wallet addresses is
    /// never deleted).
    pub fn of(&self, tenant: &TenantId) -> Arc<Site> {
        self.sites
            .iter()
            .find(|s| &s.tenant == tenant)
            .unwrap_or(&self.operator)
            .clone()
    }

    /// The site a request to the Open Payments listener is for, and the
    /// length of the path prefix that site's routes sit under. A host no
    /// tenant claims is taken as the operator's host, so probes and
    /// single-tenant servers reached by any name behave as before; a
    /// claimed host with no matching prefix is no site (`None`).
    pub fn for_request(&self, host: Option<&str>, path: &str) -> Option<(Arc<Site>, usize)> {
        let host = host.map(host_only).unwrap_or_default();
        let claimed = self.sites.iter().any(|s| s.host() == host);
        let host = if claimed { &host } else { self.operator.host() };
        self.sites
            .iter()
            .filter(|s| s.host() == host)
            .filter(|s| under_prefix(path, s.public_url.path_prefix()))
            .max_by_key(|s| s.public_url.path_prefix().len())
            .map(|s| (s.clone(), s.public_url.path_prefix().len()))
    }

    /// The site a URL a client sent lies under (scheme, host and port as
    /// published), and the part of it below that site's base.
    pub fn of_url(&self, url: &str) -> Option<(Arc<Site>, String)> {
        let parsed = url::Url::parse(url).ok()?;
        self.sites
            .iter()
            .filter_map(|s| s.public_url.relative_parsed(&parsed).map(|rest| (s, rest)))
            .max_by_key(|(s, _)| s.public_url.path_prefix().len())
            .map(|(s, rest)| (s.clone(), rest))
    }

    /// The tenant and wallet address path a URL names, if it is under
    /// some tenant's public URL.
    pub fn wallet_path(&self, url: &str) -> Option<(TenantId, WalletAddressPath)> {
        let (site, rest) = self.of_url(url)?;
        let path = WalletAddressPath::parse_any(&rest).ok()?;
        Some((site.tenant.clone(), path))
    }

    /// The tenant and id of an incoming payment URL under some tenant's
    /// public URL.
    pub fn incoming_payment(&self, url: &str) -> Option<(TenantId, IncomingPaymentId)> {
        let (site, rest) = self.of_url(url)?;
        let id = IncomingPaymentId::parse(rest.strip_prefix("incoming-payments/")?)?;
        Some((site.tenant.clone(), id))
    }

    /// The tenant and id of a quote URL under some tenant's public URL (a
    /// trailing slash is tolerated).
    pub fn quote(&self, url: &str) -> Option<(TenantId, QuoteId)> {
        let (site, rest) = self.of_url(url.trim_end_matches('/'))?;
        let id = QuoteId::parse(rest.strip_prefix("quotes/")?)?;
        Some((site.tenant.clone(), id))
    }

    /// Whether a URL is under some tenant's public URL.
    pub fn is_ours(&self, url: &str) -> bool {
        self.of_url(url).is_some()
    }

    /// The URL of a wallet address, under its tenant's public URL.
    pub fn wallet_url(&self, wallet: &WalletAddress) -> String {
        self.of(&wallet.tenant).wallet_url(wallet)
    }

    /// The site whose own authorization server a request to the
    /// authorization server listener is for, from its `Host`; the
    /// operator's (the shared one) for any other host.
    /// The wallet owner's own page: `/wallet/<path>` at the authorization
    /// server that approves its grants, `<path>` read below the public URL
    /// of the site that server is for (its tenant's own, or the server's).
    /// None for a tenant on a host of its own that shares the server's
    /// authorization server.
    pub fn owner_page(&self, wallet: &WalletAddress) -> Option<String> {
        let site = self.of(&wallet.tenant);
        let served = if site.auth_tenant == site.tenant {
            &site
        } else {
            &self.operator
        };
        let url = site.wallet_url(wallet);
        let base = served.public_url.as_str().trim_end_matches('/');
        let rest = url.strip_prefix(base)?.strip_prefix('/')?;
        let auth = site.auth_server_url.trim_end_matches('/');
        Some(format!("{auth}/wallet/{rest}"))
    }

    pub fn for_auth_host(&self, host: Option<&str>) -> Arc<Site> {
        let host = host.map(host_only).unwrap_or_default();
        let own_host = |s: &&Arc<Site>| {
            url::Url::parse(&s.auth_server_url).is_ok_and(|u| u.host_str() == Some(host.as_str()))
        };
        self.sites
            .iter()
            .filter(|s| !s.tenant.is_operator() && s.auth_tenant == s.tenant)
            .find(own_host)
            .unwrap_or(&self.operator)
            .clone()
    }

    /// The grant endpoint of the authorization server of `auth_tenant`
    /// (the operator's: the server's).
    pub fn auth_server_of(&self, auth_tenant: &TenantId) -> String {
        self.of(auth_tenant).auth_server_url.clone()
    }

    /// Every site, the operator's first.
    pub fn all(&self) -> &[Arc<Site>] {
        &self.sites
    }
}

fn site_of(t: &Tenant, operator: &Site) -> Option<Site> {
    let public_url = PublicUrl::parse(t.public_url.as_deref()?).ok()?;
    Some(Site {
        tenant: t.id.clone(),
        public_name: t.public_name.clone(),
        public_url,
        auth_server_url: t
            .auth_server_url
            .clone()
            .unwrap_or_else(|| operator.auth_server_url.clone()),
        auth_tenant: match &t.auth_server_url {
            Some(_) => t.id.clone(),
            None => TenantId::operator(),
        },
        webhook_url: t.webhook_url.clone(),
        idp_consent_url: t.idp_consent_url.clone(),
    })
}

/// `Host` without its port, lower case.
fn host_only(host: &str) -> String {
    let host = host.trim();
    let host = match host.strip_prefix('[') {
        // An IPv6 literal keeps its brackets, as `url` writes hosts.
        Some(rest) => rest.split(']').next().map(|h| format!("[{h}]")),
        None => host.split(':').next().map(str::to_owned),
    };
    host.unwrap_or_default().to_ascii_lowercase()
}

fn under_prefix(path: &str, prefix: &str) -> bool {
    prefix.is_empty()
        || path
            .strip_prefix(prefix)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
}

/// The site table, read again when it changed or grew old.
pub struct Sites {
    store: Arc<dyn Store>,
    operator: Site,
    ttl: Duration,
    table: RwLock<(Arc<SiteTable>, Option<Instant>)>,
}

impl Sites {
    /// Sites with only the operator's until [`Sites::reload`] runs.
    pub fn new(store: Arc<dyn Store>, operator: Site, ttl: Duration) -> Self {
        let table = Arc::new(SiteTable::new(operator.clone(), &[]));
        Self {
            store,
            operator,
            ttl,
            table: RwLock::new((table, None)),
        }
    }

    /// Reads the tenants again.
    pub async fn reload(&self) -> Result<Arc<SiteTable>, ServiceError> {
        let tenants = self.store.list_tenants().await?;
        let table = Arc::new(SiteTable::new(self.operator.clone(), &tenants));
        let mut slot = self.table.write().unwrap_or_else(|e| e.into_inner());
        *slot = (table.clone(), Some(Instant::now()));
        Ok(table)
    }

    /// Marks the table stale: the next use reads it again.
    pub fn forget(&self) {
        let mut slot = self.table.write().unwrap_or_else(|e| e.into_inner());
        slot.1 = None;
    }

    /// The current table, read again first when stale.
    pub async fn table(&self) -> Result<Arc<SiteTable>, ServiceError> {
        let (table, fresh) = {
            let slot = self.table.read().unwrap_or_else(|e| e.into_inner());
            let fresh = slot.1.is_some_and(|at| at.elapsed() < self.ttl);
            (slot.0.clone(), fresh)
        };
        if fresh {
            return Ok(table);
        }
        self.reload().await
    }

    /// A table that has `tenant`'s site: the current one, or read again
    /// when the tenant is newer than it (made on another node a moment
    /// ago). A wallet address's tenant always exists, so its site is
    /// then found.
    pub async fn with(&self, tenant: &TenantId) -> Result<Arc<SiteTable>, ServiceError> {
        let table = self.table().await?;
        if table.get(tenant).is_some() {
            return Ok(table);
        }
        self.reload().await
    }

    /// The site of a tenant (see [`Sites::with`]).
    pub async fn site_of(&self, tenant: &TenantId) -> Result<Arc<Site>, ServiceError> {
        Ok(self.with(tenant).await?.of(tenant))
    }

    /// The grant endpoint of `auth_tenant`'s authorization server, from the
    /// table as last read (a grant's tenant was resolved from it moments
    /// before); the server's when the table does not have it.
    pub fn auth_server_now(&self, auth_tenant: &TenantId) -> String {
        let table = self
            .table
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .0
            .clone();
        table.auth_server_of(auth_tenant)
    }

    /// The operator's site.
    pub fn operator(&self) -> &Site {
        &self.operator
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use opd_core::Timestamp;

    fn operator() -> Site {
        Site {
            tenant: TenantId::operator(),
            public_name: "opd".into(),
            public_url: PublicUrl::parse("https://opd.example").unwrap(),
            auth_server_url: "https://auth.opd.example/".into(),
            auth_tenant: TenantId::operator(),
            webhook_url: None,
            idp_consent_url: None,
        }
    }

    fn tenant(id: &str, url: &str) -> Tenant {
        Tenant {
            id: TenantId::parse(id).unwrap(),
            public_name: id.to_uppercase(),
            public_url: Some(url.into()),
            auth_server_url: None,
            webhook_url: None,
            idp_consent_url: None,
            created_at: Timestamp::from_unix_millis(0),
            updated_at: Timestamp::from_unix_millis(0),
        }
    }

    fn table() -> SiteTable {
        SiteTable::new(
            operator(),
            &[
                tenant("a", "https://wallet.a.example"),
                tenant("b", "https://opd.example/b"),
                tenant("c", "https://shared.example/c"),
            ],
        )
    }

    fn resolved(host: Option<&str>, path: &str) -> Option<(String, usize)> {
        table()
            .for_request(host, path)
            .map(|(s, n)| (s.tenant.to_string(), n))
    }

    #[test]
    fn requests_go_to_the_tenant_of_their_host_and_prefix() {
        let r = |h, p| resolved(Some(h), p);
        assert_eq!(r("wallet.a.example", "/alice"), Some(("a".into(), 0)));
        assert_eq!(r("WALLET.A.example:443", "/alice"), Some(("a".into(), 0)));
        assert_eq!(r("opd.example", "/b/alice"), Some(("b".into(), 2)));
        assert_eq!(r("opd.example", "/b"), Some(("b".into(), 2)));
        assert_eq!(r("opd.example", "/bob"), Some(("default".into(), 0)));
        assert_eq!(r("opd.example", "/alice"), Some(("default".into(), 0)));
        // Hosts no tenant claims are the operator's (probes, other names).
        assert_eq!(r("10.0.0.7:8080", "/healthz"), Some(("default".into(), 0)));
        assert_eq!(r("10.0.0.7:8080", "/b/x"), Some(("b".into(), 2)));
        assert_eq!(resolved(None, "/alice"), Some(("default".into(), 0)));
        // A claimed host with no tenant at that path is no one's.
        assert_eq!(r("shared.example", "/alice"), None);
        assert_eq!(r("shared.example", "/c/alice"), Some(("c".into(), 2)));
        assert_eq!(r("shared.example", "/cc/alice"), None);
    }

    #[test]
    fn urls_map_back_to_their_tenant() {
        let t = table();
        let of = |u: &str| t.of_url(u).map(|(s, rest)| (s.tenant.to_string(), rest));
        assert_eq!(
            of("https://wallet.a.example/alice"),
            Some(("a".into(), "alice".into()))
        );
        assert_eq!(
            of("https://opd.example/b/incoming-payments/x"),
            Some(("b".into(), "incoming-payments/x".into()))
        );
        assert_eq!(
            of("https://opd.example/bob"),
            Some(("default".into(), "bob".into()))
        );
        assert_eq!(of("http://wallet.a.example/alice"), None);
        assert_eq!(of("https://elsewhere.example/alice"), None);
        assert_eq!(t.of(&TenantId::parse("b").unwrap()).public_name, "B");
        assert_eq!(
            t.of(&TenantId::parse("gone").unwrap()).tenant,
            TenantId::operator()
        );
    }

    #[test]
    fn an_owners_page_is_at_the_authorization_server_of_its_wallet() {
        let mut own = tenant("d", "https://d.example");
        own.auth_server_url = Some("https://auth.d.example/".into());
        let t = SiteTable::new(
            operator(),
            &[
                own,
                tenant("b", "https://opd.example/b"),
                tenant("a", "https://wallet.a.example"),
            ],
        );
        let wallet = |tenant: &str, path: &str| WalletAddress {
            id: opd_core::WalletAddressId::new(
                Timestamp::from_unix_millis(0),
                &opd_core::SeededRandom::new(1),
            ),
            tenant: TenantId::parse(tenant).unwrap(),
            path: WalletAddressPath::parse(path).unwrap(),
            asset: opd_core::Asset::parse("USD", 2).unwrap(),
            public_name: None,
            created_at: Timestamp::from_unix_millis(0),
            deactivated_at: None,
        };
        let page = |tenant: &str, path: &str| t.owner_page(&wallet(tenant, path));
        assert_eq!(
            page("default", "alice").as_deref(),
            Some("https://auth.opd.example/wallet/alice")
        );
        assert_eq!(
            page("d", "alice").as_deref(),
            Some("https://auth.d.example/wallet/alice")
        );
        assert_eq!(
            page("b", "alice").as_deref(),
            Some("https://auth.opd.example/wallet/b/alice")
        );
        assert_eq!(page("a", "alice"), None);
    }

    #[test]
    fn a_tenant_without_a_usable_url_is_left_off() {
        let mut bad = tenant("bad", "https://x.example");
        bad.public_url = Some("ftp://x.example".into());
        let t = SiteTable::new(operator(), &[bad]);
        assert_eq!(t.all().len(), 1);
    }
}
