//! Wallet addresses and their keys: the admin use cases and the public
//! lookups behind `GET /{path}` and `GET /{path}/jwks.json`.

use base64::Engine;
use opd_core::wallet_address::{PublicKey, WalletAddress, WalletAddressKey, WalletAddressPath};
use opd_core::{Asset, TenantId, WalletAddressId};
use opd_store::StoreError;

use crate::platform::cache::TtlCache;
use crate::platform::changes::Change;
use crate::{platform::secrets, ServiceError, Services};

/// The kid of the server's own key.
pub const SERVER_KEY_ID: &str = "opd-server-key";

/// Wallet addresses by id and by path, cached (dropped everywhere when
/// one is deactivated).
pub struct WalletCache {
    pub by_id: TtlCache<WalletAddressId, WalletAddress>,
    pub by_path: TtlCache<String, WalletAddress>,
}

impl WalletCache {
    pub fn new(ttl: std::time::Duration) -> Self {
        Self {
            by_id: TtlCache::new(ttl, 100_000),
            by_path: TtlCache::new(ttl, 100_000),
        }
    }

    /// Drops what `change` made stale.
    pub fn forget(&self, change: Change) {
        if change == Change::Wallets {
            self.by_id.clear();
            self.by_path.clear();
        }
    }
}

/// Admin: creates a wallet address of a tenant. The path is lowercased.
pub async fn create(
    services: &Services,
    tenant: &TenantId,
    path: &str,
    asset: Asset,
    public_name: Option<String>,
) -> Result<WalletAddress, ServiceError> {
    let path =
        WalletAddressPath::parse(path).map_err(|e| ServiceError::InvalidRequest(e.to_string()))?;
    if public_name
        .as_ref()
        .is_some_and(|n| n.is_empty() || n.len() > 256)
    {
        return Err(ServiceError::InvalidRequest(
            "publicName must be 1 to 256 characters".into(),
        ));
    }
    room_for(services, tenant, &path).await?;
    let now = services.clock.now();
    let wallet = WalletAddress {
        id: WalletAddressId::new(now, services.random.as_ref()),
        tenant: tenant.clone(),
        path,
        asset,
        public_name,
        created_at: now,
        deactivated_at: None,
    };
    match services.store.create_wallet_address(&wallet).await {
        Ok(()) => Ok(wallet),
        Err(StoreError::Conflict(_)) => Err(ServiceError::Conflict {
            code: "wallet_address_exists",
            message: format!(
                "a wallet address with path {:?} exists already",
                wallet.path.as_str()
            ),
        }),
        Err(e) => Err(e.into()),
    }
}

/// Refuses a wallet address of a tenant that does not exist, or one of the
/// operator's whose first segment is where a tenant's site is (the tenant
/// would hide it).
async fn room_for(
    services: &Services,
    tenant: &TenantId,
    path: &WalletAddressPath,
) -> Result<(), ServiceError> {
    if services.store.get_tenant(tenant).await?.is_none() {
        return Err(ServiceError::NotFound("tenant"));
    }
    if !tenant.is_operator() {
        return Ok(());
    }
    let table = services.sites.table().await?;
    let operator = services.sites.operator();
    let first = path.as_str().split('/').next().unwrap_or_default();
    let hidden = table.all().iter().any(|s| {
        s.public_url.host() == operator.public_url.host()
            && s.public_url
                .path_prefix()
                .trim_start_matches('/')
                .split('/')
                .next()
                == Some(first)
    });
    if hidden {
        return Err(ServiceError::Conflict {
            code: "wallet_address_exists",
            message: format!("{first:?} is where a tenant's wallet addresses are"),
        });
    }
    Ok(())
}

/// Admin: one wallet address by id.
pub async fn get(services: &Services, id: WalletAddressId) -> Result<WalletAddress, ServiceError> {
    services
        .store
        .get_wallet_address(id)
        .await?
        .ok_or(ServiceError::NotFound("wallet address"))
}

/// Admin: every wallet address, or a tenant's.
pub async fn list(
    services: &Services,
    tenant: Option<&TenantId>,
) -> Result<Vec<WalletAddress>, ServiceError> {
    Ok(services.store.list_wallet_addresses(tenant).await?)
}

/// Admin: deactivates a wallet address (it then answers 404 publicly).
pub async fn deactivate(
    services: &Services,
    id: WalletAddressId,
) -> Result<WalletAddress, ServiceError> {
    let wallet = services
        .store
        .deactivate_wallet_address(id, services.clock.now())
        .await?
        .ok_or(ServiceError::NotFound("wallet address"))?;
    services
        .changed(crate::platform::changes::Change::Wallets)
        .await;
    Ok(wallet)
}

/// Admin: adds a public key to a wallet address.
pub async fn add_key(
    services: &Services,
    id: WalletAddressId,
    key: PublicKey,
) -> Result<WalletAddressKey, ServiceError> {
    get(services, id).await?;
    let stored = WalletAddressKey {
        wallet_address_id: id,
        key,
        created_at: services.clock.now(),
        revoked_at: None,
    };
    match services.store.add_key(&stored).await {
        Ok(()) => {
            services
                .changed(crate::platform::changes::Change::Keys)
                .await;
            Ok(stored)
        }
        Err(StoreError::Conflict(_)) => Err(ServiceError::Conflict {
            code: "key_exists",
            message: format!(
                "the wallet address has a key with kid {:?} already",
                stored.key.kid
            ),
        }),
        Err(e) => Err(e.into()),
    }
}

/// A public key as a person pastes it: a JWK (`{"kid", "kty", "crv",
/// "x", ...}`), the admin API's `{"jwk": {...}}`, a key set with one key
/// (`{"keys": [...]}`), or any of these in base64 (what the Web
/// Monetization extension shows its user to copy).
pub fn pasted_key(text: &str) -> Result<PublicKey, String> {
    let text = text.trim();
    let json: serde_json::Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(_) => base64::engine::general_purpose::STANDARD
            .decode(text.replace(['\n', '\r', ' '], ""))
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .ok_or("that is not a JWK: paste the key's JSON, or its base64")?,
    };
    let jwk = if let Some(keys) = json["keys"].as_array() {
        match keys.as_slice() {
            [one] => one.clone(),
            _ => return Err("the key set must hold exactly one key".into()),
        }
    } else if json["jwk"].is_object() {
        json["jwk"].clone()
    } else {
        json
    };
    let member = |name: &str| jwk[name].as_str().unwrap_or_default().to_owned();
    let optional = |name: &str| jwk[name].as_str().map(str::to_owned);
    PublicKey::from_jwk_parts(
        &member("kid"),
        &member("kty"),
        &member("crv"),
        optional("alg").as_deref(),
        optional("use").as_deref(),
        &member("x"),
    )
    .map_err(|e| e.to_string())
}

/// Admin: revokes a key; it disappears from the JWKS at once.
pub async fn revoke_key(
    services: &Services,
    id: WalletAddressId,
    kid: &str,
) -> Result<(), ServiceError> {
    get(services, id).await?;
    if services
        .store
        .revoke_key(id, kid, services.clock.now())
        .await?
    {
        // Every node stops accepting the key at once.
        services
            .changed(crate::platform::changes::Change::Keys)
            .await;
        Ok(())
    } else {
        Err(ServiceError::NotFound("key"))
    }
}

/// Admin: a wallet address's keys, revoked ones included.
pub async fn keys(
    services: &Services,
    id: WalletAddressId,
) -> Result<Vec<WalletAddressKey>, ServiceError> {
    get(services, id).await?;
    Ok(services.store.list_keys(id, true).await?)
}

/// The tenant's wallet address at a path, if it exists and is active now;
/// the error for a deactivated one is the caller's choice.
async fn active_at(
    services: &Services,
    tenant: &TenantId,
    path: &WalletAddressPath,
    when_inactive: ServiceError,
) -> Result<WalletAddress, ServiceError> {
    let key = format!("{tenant} {path}");
    let wallet = match services.wallets.by_path.get(&key) {
        Some(w) => w,
        None => {
            let w = services
                .store
                .get_wallet_address_by_path(tenant, path)
                .await?
                .ok_or(ServiceError::UnknownWalletAddress)?;
            services.wallets.by_path.insert(key, w.clone());
            w
        }
    };
    if wallet.is_active(services.clock.now()) {
        Ok(wallet)
    } else {
        Err(when_inactive)
    }
}

/// Public: the tenant's active wallet address at a path (any case). A
/// deactivated one is unknown to the public.
pub async fn by_path(
    services: &Services,
    tenant: &TenantId,
    path: &str,
) -> Result<WalletAddress, ServiceError> {
    let path =
        WalletAddressPath::parse_any(path).map_err(|_| ServiceError::UnknownWalletAddress)?;
    active_at(services, tenant, &path, ServiceError::UnknownWalletAddress).await
}

/// Public: the unrevoked keys of the tenant's active wallet address at a
/// path.
pub async fn jwks(
    services: &Services,
    tenant: &TenantId,
    path: &str,
) -> Result<Vec<PublicKey>, ServiceError> {
    let wallet = by_path(services, tenant, path).await?;
    Ok(services
        .store
        .list_keys(wallet.id, false)
        .await?
        .into_iter()
        .map(|k| k.key)
        .collect())
}

/// The wallet address a request body names by URL: ours (under some
/// tenant's public URL) and active.
pub async fn by_url(services: &Services, url: &str) -> Result<WalletAddress, ServiceError> {
    let (site, rest) = services
        .sites
        .table()
        .await?
        .of_url(url)
        .ok_or(ServiceError::UnknownWalletAddress)?;
    let path =
        WalletAddressPath::parse_any(&rest).map_err(|_| ServiceError::UnknownWalletAddress)?;
    active_at(
        services,
        &site.tenant,
        &path,
        ServiceError::InactiveWalletAddress,
    )
    .await
}

/// The server's own identity: the wallet address at `.well-known/pay`
/// (asset `XXX`, "no currency", scale 0: it never holds money) and its
/// Ed25519 key, created on first start. Returns the wallet address and the
/// key's 32-byte seed.
pub async fn ensure_server_identity(
    services: &Services,
) -> Result<(WalletAddress, [u8; 32]), ServiceError> {
    let seed = secrets::server_signing_seed(
        services.store.as_ref(),
        services.random.as_ref(),
        &services.config.secrets_key,
    )
    .await?;
    let path = WalletAddressPath::server();
    let operator = TenantId::operator();
    let wallet = match services
        .store
        .get_wallet_address_by_path(&operator, &path)
        .await?
    {
        Some(w) => w,
        None => {
            let now = services.clock.now();
            let asset =
                Asset::parse("XXX", 0).map_err(|e| ServiceError::InvalidRequest(e.to_string()))?;
            let wallet = WalletAddress {
                id: WalletAddressId::new(now, services.random.as_ref()),
                tenant: operator.clone(),
                path: path.clone(),
                asset,
                public_name: Some("opd server".into()),
                created_at: now,
                deactivated_at: None,
            };
            match services.store.create_wallet_address(&wallet).await {
                Ok(()) => wallet,
                // Another node created it at the same moment.
                Err(StoreError::Conflict(_)) => services
                    .store
                    .get_wallet_address_by_path(&operator, &path)
                    .await?
                    .ok_or(ServiceError::NotFound("server wallet address"))?,
                Err(e) => return Err(e.into()),
            }
        }
    };
    let keys = services.store.list_keys(wallet.id, true).await?;
    if !keys.iter().any(|k| k.key.kid == SERVER_KEY_ID) {
        let public = ed25519_dalek::SigningKey::from_bytes(&seed).verifying_key();
        let x = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(public.as_bytes());
        let key = WalletAddressKey {
            wallet_address_id: wallet.id,
            key: PublicKey {
                kid: SERVER_KEY_ID.into(),
                x,
            },
            created_at: services.clock.now(),
            revoked_at: None,
        };
        match services.store.add_key(&key).await {
            Ok(()) | Err(StoreError::Conflict(_)) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok((wallet, seed))
}

impl crate::Services {
    /// A wallet address by id, from the cache when fresh.
    pub async fn wallet_by_id(
        &self,
        id: opd_core::WalletAddressId,
    ) -> Result<Option<opd_core::wallet_address::WalletAddress>, ServiceError> {
        if let Some(w) = self.wallets.by_id.get(&id) {
            return Ok(Some(w));
        }
        let found = self.store.get_wallet_address(id).await?;
        if let Some(w) = &found {
            self.wallets.by_id.insert(id, w.clone());
        }
        Ok(found)
    }
}

#[cfg(test)]
mod tests {
    use super::pasted_key;
    use base64::Engine as _;

    const JWK: &str = r#"{"kid":"wm-key","kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}"#;

    #[test]
    fn a_key_is_read_however_it_was_copied() {
        let b64 = base64::engine::general_purpose::STANDARD.encode(JWK);
        for pasted in [
            JWK.to_owned(),
            format!("  {JWK}\n"),
            format!(r#"{{"jwk":{JWK}}}"#),
            format!(r#"{{"keys":[{JWK}]}}"#),
            b64.clone(),
            format!("{}\n{}", &b64[..20], &b64[20..]),
        ] {
            let key = pasted_key(&pasted).unwrap_or_else(|e| panic!("{pasted}: {e}"));
            assert_eq!(key.kid, "wm-key");
        }
        for bad in [
            "",
            "hello",
            r#"{"keys":[]}"#,
            r#"{"kid":"k","kty":"RSA","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}"#,
        ] {
            assert!(pasted_key(bad).is_err(), "{bad}");
        }
    }
}
