//! Tenants, as the operator manages them: create one (its admin token is
//! shown once and stored as a digest), read, change, rotate its token,
//! delete an empty one. Where each tenant is on the web is [`sites`].

pub mod secrets;
pub mod sites;

use opd_core::tenant::{parse_public_name, Tenant};
use opd_core::wallet_address::WalletAddressPath;
use opd_core::TenantId;
use opd_store::{StoreError, TenantDeletion};
use sha2::{Digest, Sha256};

pub use opd_store::TenantSecret;
pub use sites::{Site, SiteTable, Sites};

use crate::platform::changes::Change;
use crate::platform::urls::{grant_endpoint, PublicUrl};
use crate::{ServiceError, Services};
use secrecy::SecretString;

/// What the operator gives to make a tenant.
#[derive(Debug, Clone)]
pub struct NewTenant {
    pub id: String,
    pub public_name: String,
    pub public_url: String,
    /// Its own authorization server (see [`check_auth_server`]).
    pub auth_server_url: Option<String>,
    pub webhook_url: Option<String>,
    /// The key of its events' `Opd-Signature`, stored sealed.
    pub webhook_secret: Option<SecretString>,
    /// Its consent app (`None`: the built-in consent page).
    pub idp_consent_url: Option<String>,
    /// What its consent app calls the identity-provider API with.
    pub idp_secret: Option<SecretString>,
}

/// What the operator changes; `None` leaves a field as it is, and
/// `Some(None)` clears an optional one (back to the server's).
#[derive(Debug, Clone, Default)]
pub struct TenantPatch {
    pub public_name: Option<String>,
    pub public_url: Option<String>,
    pub auth_server_url: Option<Option<String>>,
    pub webhook_url: Option<Option<String>>,
    pub webhook_secret: Option<Option<SecretString>>,
    pub idp_consent_url: Option<Option<String>>,
    pub idp_secret: Option<Option<SecretString>>,
}

impl TenantPatch {
    /// Whether it changes anything the operator's tenant takes from the
    /// server's configuration (everything but its name).
    fn configured(&self) -> bool {
        self.public_url.is_some()
            || self.auth_server_url.is_some()
            || self.webhook_url.is_some()
            || self.webhook_secret.is_some()
            || self.idp_consent_url.is_some()
            || self.idp_secret.is_some()
    }
}

/// A tenant's admin token as shown once: `opd_tenant_` and 64 hex digits.
pub fn new_token(random: &dyn opd_core::Random) -> String {
    let mut bytes = [0u8; 32];
    random.fill(&mut bytes);
    format!("opd_tenant_{}", opd_core::hex::lower(&bytes))
}

/// What is stored of an admin token: its SHA-256, hex. The token carries
/// 256 random bits, so a digest without salt cannot be reversed.
pub fn token_digest(token: &str) -> String {
    opd_core::hex::lower(&Sha256::digest(token.as_bytes()))
}

fn invalid(e: impl ToString) -> ServiceError {
    ServiceError::InvalidRequest(e.to_string())
}

/// The base URL a tenant asks for, if no other site is there: an own host,
/// or a prefix on a host whose first segment is no route and no wallet
/// address of the operator's.
pub fn check_public_url(
    url: &str,
    tenant: &TenantId,
    table: &SiteTable,
    operator_paths: &[WalletAddressPath],
) -> Result<PublicUrl, ServiceError> {
    let url = PublicUrl::parse(url).map_err(|e| invalid(format!("publicUrl: {e}")))?;
    let prefix = url.path_prefix().trim_start_matches('/');
    let first = prefix.split('/').next().unwrap_or_default();
    let path_ok = WalletAddressPath::parse(prefix).is_ok() && prefix == prefix.to_ascii_lowercase();
    if !prefix.is_empty() && !path_ok {
        return Err(invalid(format!(
            "publicUrl: its path {prefix:?} is reserved or not a valid path segment"
        )));
    }
    let clash = table.all().iter().any(|s| {
        &s.tenant != tenant
            && s.public_url.host() == url.host()
            && s.public_url.path_prefix() == url.path_prefix()
    });
    let shadows = !first.is_empty()
        && operator_paths
            .iter()
            .any(|p| p.as_str().split('/').next() == Some(first));
    if clash || shadows {
        return Err(ServiceError::Conflict {
            code: "public_url_taken",
            message: format!("{url} is already where another tenant or a wallet address is"),
        });
    }
    Ok(url)
}

/// A tenant's own authorization server: the root of a host of its own
/// (`https://auth.bank-a.example/`), routed to the authorization server
/// listener. At the root, because clients such as the Web Monetization
/// extension take the grant endpoint to be the origin with `/` when they
/// check the finish hash. Another tenant's or the server's host is taken.
fn check_auth_server(
    url: Option<String>,
    tenant: &TenantId,
    table: &SiteTable,
) -> Result<Option<String>, ServiceError> {
    let Some(url) = url else {
        return Ok(None);
    };
    let endpoint = grant_endpoint(&url).map_err(|e| invalid(format!("authServerUrl: {e}")))?;
    let parsed = url::Url::parse(&endpoint).map_err(|_| invalid("authServerUrl"))?;
    if parsed.path() != "/" {
        return Err(invalid(
            "authServerUrl must be the root of a host of the tenant's own, such as https://auth.bank-a.example/",
        ));
    }
    let host = parsed.host_str().unwrap_or_default();
    let taken = table.all().iter().any(|s| {
        &s.tenant != tenant
            && url::Url::parse(&s.auth_server_url).is_ok_and(|u| u.host_str() == Some(host))
    });
    if taken {
        return Err(ServiceError::Conflict {
            code: "public_url_taken",
            message: format!("{endpoint} is already another authorization server's host"),
        });
    }
    Ok(Some(endpoint))
}

/// An absolute http(s) URL a tenant gives (`what` names the field).
fn check_url(url: Option<String>, what: &str) -> Result<Option<String>, ServiceError> {
    url.map(|u| match url::Url::parse(&u) {
        Ok(p) if matches!(p.scheme(), "http" | "https") => Ok(u),
        _ => Err(invalid(format!("{what} must be an absolute http(s) URL"))),
    })
    .transpose()
}

async fn operator_paths(services: &Services) -> Result<Vec<WalletAddressPath>, ServiceError> {
    let wallets = services
        .store
        .list_wallet_addresses(Some(&TenantId::operator()))
        .await?;
    Ok(wallets.into_iter().map(|w| w.path).collect())
}

/// Creates a tenant; returns it with its admin token (shown this once).
pub async fn create(services: &Services, new: NewTenant) -> Result<(Tenant, String), ServiceError> {
    let id = TenantId::parse_new(&new.id).map_err(invalid)?;
    let table = services.sites.table().await?;
    let paths = operator_paths(services).await?;
    let url = check_public_url(&new.public_url, &id, &table, &paths)?;
    let now = services.clock.now();
    let own_auth = check_auth_server(new.auth_server_url, &id, &table)?;
    let tenant = Tenant {
        id,
        public_name: parse_public_name(&new.public_name).map_err(invalid)?,
        public_url: Some(url.to_string()),
        auth_server_url: own_auth,
        webhook_url: check_url(new.webhook_url, "webhookUrl")?,
        idp_consent_url: check_url(new.idp_consent_url, "idpConsentUrl")?,
        created_at: now,
        updated_at: now,
    };
    let token = new_token(services.random.as_ref());
    match services
        .store
        .create_tenant(&tenant, &token_digest(&token))
        .await
    {
        Ok(()) => {}
        Err(StoreError::Conflict(_)) => {
            return Err(ServiceError::Conflict {
                code: "tenant_exists",
                message: format!("a tenant {} or at {url} exists already", tenant.id),
            })
        }
        Err(e) => return Err(e.into()),
    }
    let given = [
        (TenantSecret::Webhook, new.webhook_secret),
        (TenantSecret::Idp, new.idp_secret),
    ];
    for (which, secret) in given {
        if let Some(secret) = secret {
            secrets::set(services, &tenant.id, which, Some(&secret)).await?;
        }
    }
    services.changed(Change::Tenants).await;
    Ok((tenant, token))
}

/// Every tenant, the operator's first.
pub async fn list(services: &Services) -> Result<Vec<Tenant>, ServiceError> {
    let mut all = services.store.list_tenants().await?;
    all.sort_by_key(|t| (!t.id.is_operator(), t.id.clone()));
    Ok(all)
}

/// One tenant by id.
pub async fn get(services: &Services, id: &str) -> Result<Tenant, ServiceError> {
    let id = TenantId::parse(id).map_err(|_| ServiceError::NotFound("tenant"))?;
    services
        .store
        .get_tenant(&id)
        .await?
        .ok_or(ServiceError::NotFound("tenant"))
}

/// Changes a tenant. The operator's tenant takes only a new name: its
/// URLs are the server's configuration.
pub async fn update(
    services: &Services,
    id: &str,
    patch: TenantPatch,
) -> Result<Tenant, ServiceError> {
    let mut tenant = get(services, id).await?;
    if tenant.id.is_operator() && patch.configured() {
        return Err(invalid(
            "the operator's tenant takes its URLs from the server's configuration",
        ));
    }
    if let Some(name) = patch.public_name {
        tenant.public_name = parse_public_name(&name).map_err(invalid)?;
    }
    if let Some(url) = patch.public_url {
        let table = services.sites.table().await?;
        let paths = operator_paths(services).await?;
        let url = check_public_url(&url, &tenant.id, &table, &paths)?;
        tenant.public_url = Some(url.to_string());
    }
    if let Some(url) = patch.auth_server_url {
        let table = services.sites.table().await?;
        tenant.auth_server_url = check_auth_server(url, &tenant.id, &table)?;
    }
    if let Some(url) = patch.webhook_url {
        tenant.webhook_url = check_url(url, "webhookUrl")?;
    }
    if let Some(url) = patch.idp_consent_url {
        tenant.idp_consent_url = check_url(url, "idpConsentUrl")?;
    }
    tenant.updated_at = services.clock.now();
    match services.store.update_tenant(&tenant).await {
        Ok(true) => {}
        Ok(false) => return Err(ServiceError::NotFound("tenant")),
        Err(StoreError::Conflict(_)) => {
            return Err(ServiceError::Conflict {
                code: "public_url_taken",
                message: "another tenant is already at that public URL".into(),
            })
        }
        Err(e) => return Err(e.into()),
    }
    let given = [
        (TenantSecret::Webhook, patch.webhook_secret),
        (TenantSecret::Idp, patch.idp_secret),
    ];
    for (which, secret) in given {
        if let Some(secret) = secret {
            secrets::set(services, &tenant.id, which, secret.as_ref()).await?;
        }
    }
    services.changed(Change::Tenants).await;
    Ok(tenant)
}

/// Gives a tenant a new admin token (the old one stops working at once);
/// returns it, shown this once. The operator's token is the server's
/// (`opd admin-token`), not rotated here.
pub async fn rotate_token(services: &Services, id: &str) -> Result<String, ServiceError> {
    let tenant = get(services, id).await?;
    if tenant.id.is_operator() {
        return Err(invalid(
            "the operator's admin token is the server's: rotate it with the server's configuration",
        ));
    }
    let token = new_token(services.random.as_ref());
    let at = services.clock.now();
    if !services
        .store
        .set_tenant_token(&tenant.id, &token_digest(&token), at)
        .await?
    {
        return Err(ServiceError::NotFound("tenant"));
    }
    Ok(token)
}

/// Deletes a tenant without wallet addresses (so without money).
pub async fn delete(services: &Services, id: &str) -> Result<(), ServiceError> {
    let id = TenantId::parse(id).map_err(|_| ServiceError::NotFound("tenant"))?;
    if id.is_operator() {
        return Err(invalid("the operator's tenant cannot be deleted"));
    }
    match services.store.delete_tenant(&id).await? {
        TenantDeletion::Deleted => {}
        TenantDeletion::NotFound => return Err(ServiceError::NotFound("tenant")),
        TenantDeletion::HasWalletAddresses => {
            return Err(ServiceError::Conflict {
                code: "tenant_not_empty",
                message: format!(
                    "tenant {id} has wallet addresses, which may hold money; it cannot be deleted"
                ),
            })
        }
    }
    services.changed(Change::Tenants).await;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use opd_core::Timestamp;

    fn table() -> SiteTable {
        let operator = Site {
            tenant: TenantId::operator(),
            public_name: "opd".into(),
            public_url: PublicUrl::parse("https://opd.example").unwrap(),
            auth_server_url: "https://opd.example/auth".into(),
            auth_tenant: TenantId::operator(),
            webhook_url: None,
            idp_consent_url: None,
        };
        let a = Tenant {
            id: TenantId::parse("a").unwrap(),
            public_name: "A".into(),
            public_url: Some("https://wallet.a.example".into()),
            auth_server_url: None,
            webhook_url: None,
            idp_consent_url: None,
            created_at: Timestamp::from_unix_millis(0),
            updated_at: Timestamp::from_unix_millis(0),
        };
        SiteTable::new(operator, &[a])
    }

    #[test]
    fn public_urls_do_not_overlap() {
        let t = table();
        let b = TenantId::parse("b").unwrap();
        let a = TenantId::parse("a").unwrap();
        let alice = [WalletAddressPath::parse("alice").unwrap()];
        let check = |url: &str, who: &TenantId| check_public_url(url, who, &t, &alice);
        assert!(check("https://wallet.b.example", &b).is_ok());
        assert!(check("https://opd.example/b", &b).is_ok());
        assert!(check("https://wallet.a.example/b", &b).is_ok());
        // Another tenant's place, the operator's, or one of its wallets'.
        for taken in [
            "https://wallet.a.example",
            "https://opd.example",
            "https://opd.example/alice",
        ] {
            let e = check(taken, &b).unwrap_err();
            assert!(matches!(e, ServiceError::Conflict { .. }), "{taken}: {e}");
        }
        // A tenant keeps its own place.
        assert!(check("https://wallet.a.example", &a).is_ok());
        for bad in [
            "ftp://x.example",
            "https://opd.example/quotes",
            "https://opd.example/B",
        ] {
            let e = check(bad, &b).unwrap_err();
            assert!(matches!(e, ServiceError::InvalidRequest(_)), "{bad}: {e}");
        }
    }

    #[test]
    fn tokens_are_stored_as_digests() {
        let token = new_token(&opd_core::SeededRandom::new(7));
        assert!(token.starts_with("opd_tenant_") && token.len() == 11 + 64);
        let digest = token_digest(&token);
        assert_eq!(digest.len(), 64);
        assert!(!digest.contains(&token[11..]));
        assert_ne!(digest, token_digest("opd_tenant_other"));
    }
}
