//! The configuration the use cases need (a subset of the binary's, which
//! `opd`'s flags fill in), with the defaults of `crate::defaults`.

use std::collections::HashMap;
use std::time::Duration;

use opd_core::{Asset, AssetCode, Fee, Rate};
use opd_ilp::IlpAddress;
use secrecy::SecretString;

use crate::platform::{self, secrets};
use crate::{defaults, PublicUrl};

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
    /// addresses (see `outbound`).
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
    /// Wallet addresses answer SPSP queries (`Accept:
    /// application/spsp4+json`) and take money paid by their payment
    /// pointer (`--spsp`).
    pub spsp: bool,
    /// At most one `wallet_address.web_monetization` event per wallet
    /// address per this interval: the next is due this long after the
    /// first SPSP credit since the last one.
    pub web_monetization_event_interval: Duration,
}

impl ServiceConfig {
    /// Where money received by incoming payments goes: the wallet
    /// address's balance, or held for the operator in external mode.
    pub fn receipts(&self) -> opd_core::ledger::Receipts {
        opd_core::ledger::Receipts::for_external_funding(self.external_funding)
    }

    /// [`ServiceConfig::web_monetization_event_interval`] in milliseconds.
    pub fn web_monetization_event_interval_ms(&self) -> i64 {
        i64::try_from(self.web_monetization_event_interval.as_millis()).unwrap_or(i64::MAX)
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
            spsp: defaults::SPSP,
            web_monetization_event_interval: Duration::from_secs(
                defaults::WEB_MONETIZATION_EVENT_SECS,
            ),
        }
    }
}
