//! `Services`: everything a use case may touch, assembled once at start
//! (the store, clock and random source, the configuration, the outbound
//! client, pricing, and one part per area), and how a change made on this
//! node reaches the caches of every node.

use std::sync::Arc;

use opd_core::{Clock, Random};
use opd_store::Store;

use crate::access::{self, client_keys, replays};
use crate::platform::changes::Change;
use crate::platform::{cache, outbound, secrets, throttle};
use crate::{interledger, payments, pricing, tenants, wallets, ServiceConfig, ServiceError};

/// Everything a use case may touch, shared by all requests.
pub struct Services {
    // The platform handles every area uses.
    pub store: Arc<dyn Store>,
    pub clock: Arc<dyn Clock>,
    pub random: Arc<dyn Random>,
    pub config: ServiceConfig,
    /// The one HTTP client for calls to other servers (see [`outbound`]).
    pub outbound: outbound::Outbound,
    /// Fees and exchange rates (payments and Interledger alike).
    pub pricing: pricing::Pricing,
    /// Where each tenant is on the web.
    pub sites: Arc<tenants::Sites>,
    // One part per area.
    pub access: access::AccessState,
    pub wallets: wallets::WalletCache,
    pub payments: payments::PaymentState,
    pub interledger: interledger::IlpState,
    pub limits: Limits,
    identity: tokio::sync::OnceCell<Arc<ServerIdentity>>,
}

/// Per-client limits on what costs the server (grant requests, creating
/// resources) and on guessing passwords and tokens.
pub struct Limits {
    /// Grant requests by client and by client network.
    pub grants: throttle::Throttle,
    /// Resource creation by client.
    pub creates: throttle::Throttle,
    /// Incoming payments created by key-only clients, by client network.
    pub key_only_incoming: throttle::Throttle,
    /// Failed consent-page passwords and admin tokens, by key.
    pub password_lockout: throttle::Lockout,
}

/// Who this server is when it acts as a client of other Open Payments
/// servers: its wallet address (`/.well-known/pay`) and the key published
/// there.
pub struct ServerIdentity {
    /// The wallet address URL given as the GNAP `client`.
    pub client_url: String,
    pub key: opd_httpsig::SigningKey,
}

impl std::fmt::Debug for Services {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Services")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl Services {
    /// The site of a wallet address's tenant: where its URLs are.
    pub async fn site_of(
        &self,
        wallet: &opd_core::wallet_address::WalletAddress,
    ) -> Result<Arc<tenants::Site>, ServiceError> {
        self.sites.site_of(&wallet.tenant).await
    }

    /// The server's identity as a client, created on first use.
    pub async fn server_identity(&self) -> Result<Arc<ServerIdentity>, ServiceError> {
        self.identity
            .get_or_try_init(|| async {
                let (wallet, seed) = wallets::ensure_server_identity(self).await?;
                Ok::<_, ServiceError>(Arc::new(ServerIdentity {
                    client_url: self.sites.operator().wallet_url(&wallet),
                    key: opd_httpsig::SigningKey::from_bytes(&seed),
                }))
            })
            .await
            .cloned()
    }

    /// Drops what `change` made stale on this node, then tells the other
    /// nodes (`jobs::follow_changes`). Call it after the change committed.
    pub async fn changed(&self, change: Change) {
        self.forget(change);
        if let Err(e) = self.store.announce_change(change.topic()).await {
            // The change itself is stored; other nodes then see it when
            // their caches expire (`cache_ttl`).
            tracing::warn!(error = %e, change = change.topic(), "could not announce a change to the other nodes");
        }
    }

    /// Drops this node's cached copies of what `change` touches, area by
    /// area.
    pub fn forget(&self, change: Change) {
        self.access.forget(change);
        self.wallets.forget(change);
        self.interledger.forget(change);
        if change == Change::Tenants {
            self.sites.forget();
        }
        if change == Change::Pricing {
            self.pricing.invalidate();
        }
    }

    /// Assembles the services; loads (or creates, on first start) the
    /// server secrets kept in the database.
    pub async fn new(
        store: Arc<dyn Store>,
        clock: Arc<dyn Clock>,
        random: Arc<dyn Random>,
        config: ServiceConfig,
    ) -> Result<Self, ServiceError> {
        let stream_secret = stored_secrets(store.as_ref(), random.as_ref(), &config).await?;
        let outbound = outbound_client(&config)?;
        let pricing = pricing::Pricing::new(&config, store.clone(), outbound.clone())?;
        let platform = Platform {
            store,
            clock,
            random,
            outbound,
        };
        let sites = Arc::new(tenants::Sites::new(
            platform.store.clone(),
            operator_site(&config),
            config.cache_ttl,
        ));
        sites.reload().await?;
        let access = access_state(&platform, &config, &sites);
        let credits = interledger::credits::CreditQueue::new(
            platform.store.clone(),
            platform.clock.clone(),
            platform.random.clone(),
            sites.clone(),
        );
        let cache_ttl = config.cache_ttl;
        Ok(Self {
            limits: limits(&config),
            wallets: wallets::WalletCache::new(cache_ttl),
            payments: payments::PaymentState::new(),
            interledger: interledger::IlpState::new(stream_secret, cache_ttl, credits),
            access,
            store: platform.store,
            clock: platform.clock,
            random: platform.random,
            outbound: platform.outbound,
            config,
            pricing,
            sites,
            identity: tokio::sync::OnceCell::new(),
        })
    }
}

/// The operator's own site: the server's configured URLs.
fn operator_site(config: &ServiceConfig) -> tenants::Site {
    tenants::Site {
        tenant: opd_core::TenantId::operator(),
        public_name: "default".into(),
        public_url: config.public_url.clone(),
        auth_server_url: config.auth_server_url.clone(),
        auth_tenant: opd_core::TenantId::operator(),
        webhook_url: config.webhook_url.clone(),
        idp_consent_url: config.idp_consent_url.clone(),
    }
}

/// The handles every part is built from.
struct Platform {
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
    random: Arc<dyn Random>,
    outbound: outbound::Outbound,
}

/// The STREAM secret, and the peers' outgoing tokens sealed under the
/// current key (stored in clear or under the previous key before).
async fn stored_secrets(
    store: &dyn Store,
    random: &dyn Random,
    config: &ServiceConfig,
) -> Result<opd_ilp::StreamSecret, ServiceError> {
    let stream_secret = secrets::stream_secret(store, random, &config.secrets_key).await?;
    let sealed =
        interledger::peers::seal_stored_outgoing_tokens(store, random, &config.secrets_key).await?;
    if sealed > 0 {
        tracing::info!(
            sealed,
            "sealed peers' outgoing tokens stored in clear or under the previous key"
        );
    }
    Ok(stream_secret)
}

/// The one HTTP client for calls to other servers, under the configured
/// policy.
fn outbound_client(config: &ServiceConfig) -> Result<outbound::Outbound, ServiceError> {
    let policy = outbound::OutboundPolicy::parse(&config.outbound_allow)
        .map_err(ServiceError::InvalidRequest)?;
    outbound::Outbound::new(
        policy,
        config.outbound_max_concurrent,
        config.outbound_ca_pem.as_deref(),
    )
    .map_err(ServiceError::InvalidRequest)
}

/// The resource server's door: client keys, the replay log, tokens.
fn access_state(
    platform: &Platform,
    config: &ServiceConfig,
    sites: &Arc<tenants::Sites>,
) -> access::AccessState {
    let sources = client_keys::KeySources {
        store: platform.store.clone(),
        clock: platform.clock.clone(),
        sites: sites.clone(),
        outbound: platform.outbound.clone(),
    };
    // Several nodes share a PostgreSQL database, and so its replay log;
    // a SQLite database has one node, which keeps the log in memory.
    let replays: Arc<dyn replays::ReplayLog> = match platform.store.backend() {
        opd_store::Backend::Postgres => Arc::new(replays::store::StoreReplayLog::new(
            platform.store.clone(),
            platform.clock.clone(),
        )),
        opd_store::Backend::Sqlite => Arc::new(replays::memory::MemoryReplayLog::new(
            config.replay_capacity,
            config.replay_max_bytes,
        )),
    };
    access::AccessState {
        client_keys: client_keys::ClientKeys::new(
            sources,
            config.client_keys_ttl,
            config.rates_timeout,
        ),
        replays,
        tokens: cache::TtlCache::new(config.cache_ttl, 100_000),
    }
}

/// The per-client limits, as configured.
fn limits(config: &ServiceConfig) -> Limits {
    let per_minute = |n: u32| throttle::Throttle::new(n, n);
    Limits {
        grants: per_minute(config.grant_requests_per_minute),
        creates: per_minute(config.create_requests_per_minute),
        key_only_incoming: throttle::Throttle::per_hour(config.key_only_incoming_per_hour_total),
        password_lockout: throttle::Lockout::new(3),
    }
}
