//! The public keys of client wallet addresses, for verifying request
//! signatures. A wallet address on this server is read from the store; any
//! other is fetched from `<wallet address>/jwks.json`. Both are cached for a
//! short time (so a revoked key stops working within the TTL), a key id not
//! in the cached set triggers one refetch, and revocations on this node
//! clear the cache at once.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use opd_core::wallet_address::WalletAddressPath;
use opd_core::Clock;
use opd_httpsig::{Jwk, VerifyingKey};
use opd_store::Store;

use crate::platform::outbound::{Outbound, OutboundError};
use crate::tenants::Sites;
use crate::ServiceError;

/// Why a client key could not be found.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyLookupError {
    #[error("the client's keys could not be fetched: {0}")]
    Unreachable(String),
    #[error("key {0:?} is not in the client's key set")]
    UnknownKey(String),
    #[error("the client wallet address is unknown")]
    UnknownClient,
}

/// A key set with each key already decoded (point decompression is a
/// sizeable part of a verification, so it is done once per fetch).
type KeySet = Vec<(String, VerifyingKey)>;

#[derive(Debug)]
struct Cached {
    at: Instant,
    keys: KeySet,
}

/// The cache of client key sets, and where they come from.
pub struct ClientKeys {
    /// Where this server's own wallet addresses' keys are.
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
    /// Tells this server's wallet addresses from others'.
    sites: Arc<Sites>,
    /// Fetches other servers' key sets.
    outbound: Outbound,
    ttl: Duration,
    /// The least time between two fetches of one key set caused by unknown
    /// key ids (so garbage key ids cannot make us hammer a client).
    refetch_floor: Duration,
    cache: Mutex<HashMap<String, Cached>>,
    /// How long fetching a key set may take.
    timeout: Duration,
}

impl std::fmt::Debug for ClientKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientKeys")
            .field("ttl", &self.ttl)
            .finish_non_exhaustive()
    }
}

/// Where [`ClientKeys`] finds key sets.
pub struct KeySources {
    pub store: Arc<dyn Store>,
    pub clock: Arc<dyn Clock>,
    /// Where each tenant's wallet addresses are: theirs are read from the
    /// store, not fetched.
    pub sites: Arc<Sites>,
    pub outbound: Outbound,
}

impl ClientKeys {
    /// Key sets from `sources`, cached for `ttl`; a fetch from another
    /// server may take `timeout`.
    pub fn new(sources: KeySources, ttl: Duration, timeout: Duration) -> Self {
        Self {
            store: sources.store,
            clock: sources.clock,
            sites: sources.sites,
            outbound: sources.outbound,
            ttl,
            refetch_floor: Duration::from_secs(1),
            cache: Mutex::new(HashMap::new()),
            timeout,
        }
    }

    /// Forgets every cached key set (after a key change on this node).
    pub fn invalidate(&self) {
        if let Ok(mut c) = self.cache.lock() {
            c.clear();
        }
    }

    fn cached(&self, wallet: &str) -> Option<(Duration, KeySet)> {
        let c = self.cache.lock().ok()?;
        c.get(wallet).map(|e| (e.at.elapsed(), e.keys.clone()))
    }

    fn store(&self, wallet: &str, keys: KeySet) {
        if let Ok(mut c) = self.cache.lock() {
            if c.len() > 10_000 {
                c.clear();
            }
            c.insert(
                wallet.to_owned(),
                Cached {
                    at: Instant::now(),
                    keys,
                },
            );
        }
    }

    /// The key `kid` of the client wallet address `wallet`.
    pub async fn key(&self, wallet: &str, kid: &str) -> Result<VerifyingKey, KeyLookupError> {
        let find = |keys: &KeySet| keys.iter().find(|k| k.0 == kid).map(|k| k.1);
        let mut age = None;
        if let Some((a, keys)) = self.cached(wallet) {
            if a < self.ttl {
                if let Some(k) = find(&keys) {
                    return Ok(k);
                }
                age = Some(a);
            }
        }
        if age.is_some_and(|a| a < self.refetch_floor) {
            return Err(KeyLookupError::UnknownKey(kid.to_owned()));
        }
        let keys: KeySet = self
            .load(wallet)
            .await?
            .into_iter()
            .filter_map(|j| j.verifying_key().ok().map(|k| (j.kid, k)))
            .collect();
        let found = find(&keys);
        self.store(wallet, keys);
        found.ok_or_else(|| KeyLookupError::UnknownKey(kid.to_owned()))
    }

    async fn load(&self, wallet: &str) -> Result<Vec<Jwk>, KeyLookupError> {
        let sites = self
            .sites
            .table()
            .await
            .map_err(|e| KeyLookupError::Unreachable(e.to_string()))?;
        if sites.of_url(wallet).is_some() {
            let (tenant, path) = sites
                .wallet_path(wallet)
                .ok_or(KeyLookupError::UnknownClient)?;
            return self.load_ours(&tenant, &path).await;
        }
        self.fetch(wallet).await
    }

    /// The unrevoked keys of this server's active wallet address at `path`.
    async fn load_ours(
        &self,
        tenant: &opd_core::TenantId,
        path: &WalletAddressPath,
    ) -> Result<Vec<Jwk>, KeyLookupError> {
        let unreachable = |e: opd_store::StoreError| {
            KeyLookupError::Unreachable(ServiceError::from(e).to_string())
        };
        let wallet = self
            .store
            .get_wallet_address_by_path(tenant, path)
            .await
            .map_err(unreachable)?
            .filter(|w| w.is_active(self.clock.now()))
            .ok_or(KeyLookupError::UnknownClient)?;
        let keys = self
            .store
            .list_keys(wallet.id, false)
            .await
            .map_err(unreachable)?;
        Ok(keys
            .into_iter()
            .map(|k| Jwk {
                kid: k.key.kid,
                alg: Some("EdDSA".into()),
                use_: Some("sig".into()),
                kty: "OKP".into(),
                crv: "Ed25519".into(),
                x: k.key.x,
            })
            .collect())
    }

    /// Another server's key set, from `<wallet>/jwks.json`.
    async fn fetch(&self, wallet: &str) -> Result<Vec<Jwk>, KeyLookupError> {
        #[derive(serde::Deserialize)]
        struct JwksDoc {
            keys: Vec<serde_json::Value>,
        }
        let url = format!("{}/jwks.json", wallet.trim_end_matches('/'));
        let request = self
            .outbound
            .request(reqwest::Method::GET, &url)
            .map_err(|e| KeyLookupError::Unreachable(e.to_string()))?;
        let body = match self
            .outbound
            .send(
                request,
                self.timeout,
                crate::platform::outbound::MAX_DOCUMENT_BYTES,
            )
            .await
        {
            Ok((_, body)) => body,
            Err(OutboundError::Status(404)) => return Err(KeyLookupError::UnknownClient),
            Err(e) => return Err(KeyLookupError::Unreachable(e.to_string())),
        };
        let doc: JwksDoc = serde_json::from_slice(&body).map_err(|_| {
            KeyLookupError::Unreachable("the key set is not a JWKS document".into())
        })?;
        // Keys that are not valid Ed25519 JWKs are skipped, not fatal.
        Ok(doc
            .keys
            .into_iter()
            .filter_map(|v| serde_json::from_value::<Jwk>(v).ok())
            .filter(|k| k.validate().is_ok())
            .collect())
    }
}
