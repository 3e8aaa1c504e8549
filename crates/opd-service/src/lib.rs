#![doc = include_str!("../README.md")]

pub mod access;
mod error;
pub mod grants;
pub mod interledger;
pub mod jobs;
pub mod ledger;
pub mod operator;
pub mod payments;
pub mod platform;
pub mod pricing;
pub mod views;
pub mod wallets;
pub mod webhooks;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use opd_core::wallet_address::WalletAddress;
use opd_core::{Asset, AssetCode, Clock, Fee, Random, Rate, WalletAddressId};
use opd_ilp::IlpAddress;
use opd_store::Store;
use secrecy::SecretString;

use access::{client_keys, replays};
use platform::changes::Change;
use platform::{cache, outbound, secrets, throttle};

pub use error::ServiceError;
pub use platform::urls::PublicUrl;

pub mod defaults;

/// The configuration the use cases need (a subset of the binary's). Its
/// secrets are `SecretString`s, so that its `Debug` never shows them.
#[derive(Debug, Clone)]
pub struct ServiceConfig {
    /// Base of every wallet address and resource URL.
    pub public_url: PublicUrl,
    /// The authorization server URL published in wallet address documents:
    /// its grant endpoint (see `platform::urls::grant_endpoint`).
    pub auth_server_url: String,
    /// This server's ILP address; incoming payments' addresses extend it.
    pub ilp_address: IlpAddress,
    /// How long a quote stays valid.
    pub quote_lifespan: Duration,
    /// `expiresAt` of an incoming payment created without one.
    pub incoming_payment_default_expiry: Duration,
    /// The furthest `expiresAt` a client may ask for.
    pub incoming_payment_max_expiry: Duration,
    /// Sending fees per asset from the configuration file; the admin API's
    /// fees take precedence.
    pub fees: HashMap<Asset, Fee>,
    /// Exchange rates from the configuration file (base -> counter -> rate);
    /// the admin API's rates take precedence.
    pub rates: HashMap<AssetCode, HashMap<AssetCode, Rate>>,
    /// How far (in basis points) the rate of an Interledger path to another
    /// server may fall below the configured rate for a quote to be made.
    pub slippage_basis_points: u16,
    /// Where to fetch rates not set explicitly: `GET url?base=USD`.
    pub rates_url: Option<String>,
    /// How long fetched rates are reused.
    pub rates_cache_ttl: Duration,
    /// How long a rates request may take.
    pub rates_timeout: Duration,
    /// Hosts and address ranges outbound requests may reach besides public
    /// addresses (see [`outbound`]).
    pub outbound_allow: Vec<String>,
    /// The key server secrets are sealed with in the database.
    pub secrets_key: secrets::SecretsKey,
    /// Grant requests allowed per minute per client and per client network
    /// (each may also burst to this many at once); 0: no limit.
    pub grant_requests_per_minute: u32,
    /// Incoming payments, quotes and outgoing payments one client may
    /// create per minute (also the burst); 0: no limit.
    pub create_requests_per_minute: u32,
    /// Interactive grants a client may have waiting for a decision at once.
    pub max_pending_interactions: u32,
    /// Incoming payments a client identified by a key alone may create per
    /// hour on one wallet address.
    pub key_only_incoming_per_hour: u32,
    /// Incoming payments all clients identified by a key alone may create
    /// together per hour on one wallet address, and from one client
    /// network across wallet addresses (per node).
    pub key_only_incoming_per_hour_total: u32,
    /// Incoming payments clients identified by a key alone may create per
    /// hour on one wallet address from one client network (counted in the
    /// database): below the total, so one source cannot spend everyone's
    /// share.
    pub key_only_incoming_per_hour_per_network: u32,
    /// How requests' client networks are found (every per-address limit
    /// counts by them).
    pub networks: platform::network::NetworkPolicy,
    /// Outbound HTTP requests at once (each holds a connection, and so an
    /// open file); more wait their turn within their own timeout.
    pub outbound_max_concurrent: usize,
    /// PEM certificates outbound requests trust besides the platform's
    /// trust store and the compiled-in roots (`--ca-file`).
    pub outbound_ca_pem: Option<Vec<u8>>,
    /// Our ILP-over-HTTP endpoint as peers reach it (given to a server
    /// asked to peer).
    pub ilp_public_url: String,
    /// How long expired or revoked tokens and grants, unused expired
    /// quotes, delivered webhook events and settled ILP holds are kept
    /// (zero: forever).
    pub retention: Duration,
    /// How long admin-set fees and rates are cached in memory (other nodes
    /// see a change within this time).
    pub pricing_cache_ttl: Duration,
    /// How long a client's key set is cached (a revoked key stops working
    /// within this time on other nodes; at once on the node that revoked it).
    pub client_keys_ttl: Duration,
    /// Lifetime of access tokens.
    pub access_token_ttl: Duration,
    /// How long a user has to finish an interaction.
    pub interaction_ttl: Duration,
    /// The `wait` (seconds) between continuation requests.
    pub continue_wait_secs: u64,
    /// The shared secret of the operator's consent app (identity-provider
    /// API); `None` disables that API.
    pub idp_secret: Option<SecretString>,
    /// The operator's consent page; `None` uses the built-in one.
    pub idp_consent_url: Option<String>,
    /// Introspect tokens at this URL (another authorization server, such as
    /// a separate opd's admin `/introspect` or a Rafiki auth server) instead
    /// of in process.
    pub introspection_url: Option<String>,
    /// Bearer token sent to `introspection_url`, when it needs one.
    pub introspection_token: Option<SecretString>,
    /// Freshness window and format leniency of request signatures.
    pub signature_policy: opd_httpsig::VerifyPolicy,
    /// How long a request identical to one still running waits for that
    /// one's response before it is answered `request_in_progress`.
    pub replay_wait: Duration,
    /// How many state-changing requests the in-memory replay log remembers
    /// (size it above the number of such requests per freshness window).
    pub replay_capacity: usize,
    /// How many bytes of responses the in-memory replay log keeps.
    pub replay_max_bytes: usize,
    /// Where webhook events are POSTed; `None` keeps them in the outbox.
    pub webhook_url: Option<String>,
    /// The key of the webhook signature header.
    pub webhook_secret: Option<SecretString>,
    /// How long hot-path lookups (access tokens, wallet addresses) are
    /// cached in memory. Changes on this node clear the caches at once;
    /// other nodes notice within this time. Zero disables caching.
    pub cache_ttl: Duration,
    /// Outgoing payments wait in `funding` until the operator funds them
    /// through the admin API (after the `outgoing_payment.created`
    /// webhook), instead of being funded from the wallet address's balance;
    /// and money received by incoming payments waits on them until the
    /// operator withdraws it, instead of going to the wallet address
    /// ([`ServiceConfig::receipts`]).
    pub external_funding: bool,
    /// Bounds on Interledger work: packet lifetimes and how many packets a
    /// payment may send.
    pub ilp: IlpLimits,
}

impl ServiceConfig {
    /// Where money received by incoming payments goes: the wallet
    /// address's balance, or held for the operator in external mode.
    pub fn receipts(&self) -> opd_core::ledger::Receipts {
        opd_core::ledger::Receipts::for_external_funding(self.external_funding)
    }

    /// The path the authorization server's routes live under: `""` when
    /// its grant endpoint is at the origin root, `/gnap` for
    /// `https://example.com/gnap`.
    pub fn auth_path_prefix(&self) -> &str {
        platform::urls::split_grant_endpoint(&self.auth_server_url).1
    }

    /// The authorization server's origin (`https://example.com`).
    pub fn auth_origin(&self) -> &str {
        platform::urls::split_grant_endpoint(&self.auth_server_url).0
    }
}

/// Bounds on Interledger work, so that no peer, next hop or receiver can
/// make a payment or a forward run, wait or retry without end.
#[derive(Debug, Clone)]
pub struct IlpLimits {
    /// How long a packet this server sends may take: its expiry, and how
    /// long its answer is awaited.
    pub packet_timeout: Duration,
    /// How long a forwarded packet may take downstream: its expiry there,
    /// and how long the next hop's answer is awaited. Kept below the ILP
    /// listener's request timeout, so that the peer always gets an ILP
    /// reply rather than an HTTP timeout.
    pub forward_timeout: Duration,
    /// Most packets one payment sends in one worker step.
    pub packets_per_step: u32,
    /// Most packets one payment sends in any minute (counted in the
    /// database, so across nodes).
    pub packets_per_minute: u32,
    /// How long a sending payment may go without progress.
    pub stall: StallBounds,
}

/// How long a sending outgoing payment may go without progress (money
/// moving) before it fails with its money back: whichever bound comes
/// first. Temporary errors and silence are retried with a backoff until
/// then; other answers that deliver nothing end the payment at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StallBounds {
    /// Attempts (worker steps) in a row without progress.
    pub attempts: u32,
    /// Time since the payment last moved money (or was created).
    pub time: Duration,
}

impl Default for IlpLimits {
    fn default() -> Self {
        Self {
            packet_timeout: Duration::from_millis(defaults::ILP_PACKET_TIMEOUT_MS),
            forward_timeout: Duration::from_millis(defaults::ILP_FORWARD_TIMEOUT_MS),
            packets_per_step: defaults::ILP_PACKETS_PER_STEP,
            packets_per_minute: defaults::ILP_PACKETS_PER_MINUTE,
            stall: StallBounds {
                attempts: defaults::PAYMENT_STALL_ATTEMPTS,
                time: Duration::from_secs(defaults::PAYMENT_STALL_SECS),
            },
        }
    }
}

impl ServiceConfig {
    /// Defaults for everything but the URLs and the ILP address.
    pub fn new(public_url: PublicUrl, auth_server_url: String, ilp_address: IlpAddress) -> Self {
        Self {
            public_url,
            auth_server_url,
            ilp_address,
            quote_lifespan: Duration::from_secs(defaults::QUOTE_LIFESPAN_SECS),
            incoming_payment_default_expiry: Duration::from_secs(
                defaults::INCOMING_PAYMENT_EXPIRY_SECS,
            ),
            incoming_payment_max_expiry: Duration::from_secs(
                defaults::INCOMING_PAYMENT_MAX_EXPIRY_SECS,
            ),
            fees: HashMap::new(),
            rates: HashMap::new(),
            slippage_basis_points: defaults::SLIPPAGE_BASIS_POINTS,
            rates_url: None,
            rates_cache_ttl: Duration::from_secs(defaults::RATES_CACHE_SECS),
            rates_timeout: Duration::from_secs(5),
            outbound_allow: Vec::new(),
            retention: Duration::from_secs(defaults::RETENTION_DAYS * 24 * 3600),
            // A fixed key for tests and embedding; `opd serve` always sets
            // its own (see `crates/opd/src/app.rs`).
            secrets_key: secrets::SecretsKey {
                current: [0; 32],
                previous: None,
            },
            grant_requests_per_minute: defaults::GRANT_REQUESTS_PER_MINUTE,
            create_requests_per_minute: defaults::CREATE_REQUESTS_PER_MINUTE,
            max_pending_interactions: defaults::MAX_PENDING_INTERACTIONS,
            key_only_incoming_per_hour: defaults::KEY_ONLY_INCOMING_PER_HOUR,
            key_only_incoming_per_hour_total: defaults::KEY_ONLY_INCOMING_PER_HOUR_TOTAL,
            key_only_incoming_per_hour_per_network:
                defaults::KEY_ONLY_INCOMING_PER_HOUR_PER_NETWORK,
            networks: platform::network::NetworkPolicy::default(),
            outbound_max_concurrent: 256,
            outbound_ca_pem: None,
            ilp_public_url: "http://127.0.0.1:8083/ilp".into(),
            pricing_cache_ttl: Duration::from_secs(2),
            client_keys_ttl: Duration::from_secs(10),
            access_token_ttl: Duration::from_secs(defaults::ACCESS_TOKEN_TTL_SECS),
            interaction_ttl: Duration::from_secs(600),
            continue_wait_secs: 5,
            idp_secret: None,
            idp_consent_url: None,
            introspection_url: None,
            introspection_token: None,
            signature_policy: opd_httpsig::VerifyPolicy::default(),
            replay_wait: Duration::from_secs(30),
            replay_capacity: 1 << 20,
            replay_max_bytes: 16 << 20,
            webhook_url: None,
            webhook_secret: None,
            external_funding: false,
            cache_ttl: Duration::from_millis(defaults::CACHE_TTL_MS),
            ilp: IlpLimits::default(),
        }
    }
}

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
    /// A wallet address by id, from the cache when fresh.
    pub async fn wallet_by_id(
        &self,
        id: WalletAddressId,
    ) -> Result<Option<WalletAddress>, ServiceError> {
        if let Some(w) = self.wallets.by_id.get(&id) {
            return Ok(Some(w));
        }
        let found = self.store.get_wallet_address(id).await?;
        if let Some(w) = &found {
            self.wallets.by_id.insert(id, w.clone());
        }
        Ok(found)
    }

    /// The server's identity as a client, created on first use.
    pub async fn server_identity(&self) -> Result<Arc<ServerIdentity>, ServiceError> {
        self.identity
            .get_or_try_init(|| async {
                let (wallet, seed) = wallets::ensure_server_identity(self).await?;
                Ok::<_, ServiceError>(Arc::new(ServerIdentity {
                    client_url: self.config.public_url.wallet_address(&wallet.path),
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
        if change == Change::Pricing {
            self.pricing.invalidate();
        }
    }

    /// A quote by id, from the cache when this node stored or read it.
    pub async fn quote_by_id(
        &self,
        id: opd_core::QuoteId,
    ) -> Result<Option<opd_core::quote::Quote>, ServiceError> {
        if let Some(q) = self.payments.quotes.get(&id) {
            return Ok(Some(q));
        }
        let found = self.store.get_quote(id).await?;
        if let Some(q) = &found {
            self.payments.quotes.insert(id, q.clone());
        }
        Ok(found)
    }

    /// Assembles the services; loads (or creates, on first start) the
    /// server secrets kept in the database.
    pub async fn new(
        store: Arc<dyn Store>,
        clock: Arc<dyn Clock>,
        random: Arc<dyn Random>,
        config: ServiceConfig,
    ) -> Result<Self, ServiceError> {
        let stream_secret =
            secrets::stream_secret(store.as_ref(), random.as_ref(), &config.secrets_key).await?;
        let sealed = interledger::peers::seal_stored_outgoing_tokens(
            store.as_ref(),
            random.as_ref(),
            &config.secrets_key,
        )
        .await?;
        if sealed > 0 {
            tracing::info!(
                sealed,
                "sealed peers' outgoing tokens stored in clear or under the previous key"
            );
        }
        let policy = outbound::OutboundPolicy::parse(&config.outbound_allow)
            .map_err(ServiceError::InvalidRequest)?;
        let outbound = outbound::Outbound::new(
            policy,
            config.outbound_max_concurrent,
            config.outbound_ca_pem.as_deref(),
        )
        .map_err(ServiceError::InvalidRequest)?;
        let pricing = pricing::Pricing::new(&config, outbound.clone())?;
        let client_keys =
            client_keys::ClientKeys::new(config.client_keys_ttl, config.rates_timeout);
        let cache_ttl = config.cache_ttl;
        let create_throttle = throttle::Throttle::new(
            config.create_requests_per_minute,
            config.create_requests_per_minute,
        );
        let key_only_incoming =
            throttle::Throttle::per_hour(config.key_only_incoming_per_hour_total);
        let grant_throttle = throttle::Throttle::new(
            config.grant_requests_per_minute,
            config.grant_requests_per_minute,
        );
        // Several nodes share a PostgreSQL database, and so its replay log;
        // a SQLite database has one node, which keeps the log in memory.
        let replays: Arc<dyn replays::ReplayLog> = match store.backend() {
            opd_store::Backend::Postgres => Arc::new(replays::store::StoreReplayLog::new(
                store.clone(),
                clock.clone(),
            )),
            opd_store::Backend::Sqlite => Arc::new(replays::memory::MemoryReplayLog::new(
                config.replay_capacity,
                config.replay_max_bytes,
            )),
        };
        Ok(Self {
            store,
            clock,
            random,
            config,
            outbound,
            pricing,
            access: access::AccessState {
                client_keys,
                replays,
                tokens: cache::TtlCache::new(cache_ttl, 100_000),
            },
            wallets: wallets::WalletCache::new(cache_ttl),
            payments: payments::PaymentState::new(),
            interledger: interledger::IlpState::new(stream_secret, cache_ttl),
            limits: Limits {
                grants: grant_throttle,
                creates: create_throttle,
                key_only_incoming,
                password_lockout: throttle::Lockout::new(3),
            },
            identity: tokio::sync::OnceCell::new(),
        })
    }
}
