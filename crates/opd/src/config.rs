//! Configuration: command-line flags, `OPD_*` environment variables and an
//! optional TOML file, in that order of precedence, over built-in defaults.
//! `docs/configuration.md` lists every setting.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use clap::Args;
use serde::Deserialize;

use crate::logging::LogFormat;

/// Settings shared by every subcommand.
#[derive(Debug, Clone, Default, Args)]
pub struct CommonArgs {
    /// TOML configuration file [default: ./opd.toml when it exists].
    #[arg(long, env = "OPD_CONFIG", global = true)]
    pub config: Option<PathBuf>,
    /// Directory for the SQLite database and the admin token [default: ./opd-data].
    #[arg(long, env = "OPD_DATA_DIR", global = true)]
    pub data_dir: Option<PathBuf>,
    /// Database URL: sqlite://PATH or postgres://USER@HOST/DB [default: sqlite://<data-dir>/opd.sqlite].
    #[arg(long, env = "OPD_DATABASE_URL", global = true)]
    pub database_url: Option<String>,
    /// Admin API listen address [default: 127.0.0.1:8082].
    #[arg(long, env = "OPD_ADMIN_LISTEN", global = true)]
    pub admin_listen: Option<SocketAddr>,
    /// Admin API bearer token [default: generated on first start into <data-dir>/admin-token].
    #[arg(long, env = "OPD_ADMIN_TOKEN", global = true, hide_env_values = true)]
    pub admin_token: Option<String>,
    /// Log line format on standard error: text, or json (one object per line) [default: text].
    #[arg(long, env = "OPD_LOG_FORMAT", global = true, value_enum)]
    pub log_format: Option<LogFormat>,
}

/// Settings of `opd serve`.
#[derive(Debug, Clone, Default, Args)]
pub struct ServeArgs {
    /// Open Payments listen address [default: 127.0.0.1:8080].
    #[arg(long, env = "OPD_LISTEN")]
    pub listen: Option<SocketAddr>,
    /// Authorization server listen address [default: 127.0.0.1:8081].
    #[arg(long, env = "OPD_AUTH_LISTEN")]
    pub auth_listen: Option<SocketAddr>,
    /// Public base URL of the Open Payments listener, used in every id and for @target-uri behind proxies [default: http://<listen>].
    #[arg(long, env = "OPD_PUBLIC_URL")]
    pub public_url: Option<String>,
    /// Public URL of the authorization server [default: http://<auth-listen>].
    #[arg(long, env = "OPD_AUTH_PUBLIC_URL")]
    pub auth_public_url: Option<String>,
    /// Let the admin API listen on a non-loopback address.
    #[arg(long, env = "OPD_ALLOW_REMOTE_ADMIN", num_args = 0..=1, default_missing_value = "true")]
    pub allow_remote_admin: Option<bool>,
    /// Apply pending PostgreSQL migrations at start (SQLite always migrates).
    #[arg(long, env = "OPD_MIGRATE", num_args = 0..=1, default_missing_value = "true")]
    pub migrate: Option<bool>,
    /// Seed the demo wallet addresses alice and bob (USD, scale 2).
    #[arg(long, env = "OPD_DEMO", num_args = 0..=1, default_missing_value = "true")]
    pub demo: Option<bool>,
    /// This server's ILP address [default: test.opd].
    #[arg(long, env = "OPD_ILP_ADDRESS")]
    pub ilp_address: Option<String>,
    /// ILP-over-HTTP listen address, where peers send packets [default: 127.0.0.1:8083].
    #[arg(long, env = "OPD_ILP_LISTEN")]
    pub ilp_listen: Option<SocketAddr>,
    /// Public URL of the ILP-over-HTTP listener, as peers reach it [default: http://<ilp-listen>/ilp].
    #[arg(long, env = "OPD_ILP_PUBLIC_URL")]
    pub ilp_public_url: Option<String>,
    /// Listen for auto-peering requests (the reference server's protocol) on this address [default: off].
    #[arg(long, env = "OPD_AUTO_PEERING_LISTEN")]
    pub auto_peering_listen: Option<SocketAddr>,
    /// Liquidity deposited for a peer created by auto-peering, in its asset's minor units, at most (see --auto-peering-liquidity-total) [default: 0].
    #[arg(long, env = "OPD_AUTO_PEERING_LIQUIDITY")]
    pub auto_peering_liquidity: Option<u64>,
    /// Liquidity deposited into all peers created by auto-peering together, ever, shared by every node: a new peer gets the smaller of --auto-peering-liquidity and what is left [default: 0].
    #[arg(long, env = "OPD_AUTO_PEERING_LIQUIDITY_TOTAL")]
    pub auto_peering_liquidity_total: Option<u64>,
    /// Peers created by auto-peering that may exist at once, counted in the database (shared by every node) [default: 100].
    #[arg(long, env = "OPD_AUTO_PEERING_MAX_PEERS")]
    pub auto_peering_max_peers: Option<u64>,
    /// Auto-peering requests allowed per minute per requester address (also the burst), per node; 0: no limit [default: 10].
    #[arg(long, env = "OPD_AUTO_PEERING_REQUESTS_PER_MINUTE")]
    pub auto_peering_requests_per_minute: Option<u32>,
    /// Quote lifetime in seconds [default: 300].
    #[arg(long, env = "OPD_QUOTE_LIFESPAN_SECS")]
    pub quote_lifespan_secs: Option<u64>,
    /// Default incoming payment lifetime in seconds [default: 2592000, 30 days].
    #[arg(long, env = "OPD_INCOMING_PAYMENT_EXPIRY_SECS")]
    pub incoming_payment_expiry_secs: Option<u64>,
    /// Longest incoming payment lifetime a client may ask for, in seconds [default: 31536000, 365 days].
    #[arg(long, env = "OPD_INCOMING_PAYMENT_MAX_EXPIRY_SECS")]
    pub incoming_payment_max_expiry_secs: Option<u64>,
    /// Exchange rates URL, called as GET <url>?base=USD.
    #[arg(long, env = "OPD_RATES_URL")]
    pub rates_url: Option<String>,
    /// How long fetched rates are reused, in seconds [default: 15].
    #[arg(long, env = "OPD_RATES_CACHE_SECS")]
    pub rates_cache_secs: Option<u64>,
    /// Access token lifetime in seconds [default: 600].
    #[arg(long, env = "OPD_ACCESS_TOKEN_TTL_SECS")]
    pub access_token_ttl_secs: Option<u64>,
    /// Shared secret of the operator's consent app (identity-provider API, header x-idp-secret) [default: API off].
    #[arg(long, env = "OPD_IDP_SECRET", hide_env_values = true)]
    pub idp_secret: Option<String>,
    /// The operator's consent page; users are sent there instead of the built-in page.
    #[arg(long, env = "OPD_IDP_CONSENT_URL")]
    pub idp_consent_url: Option<String>,
    /// Introspect access tokens at this URL (a separate authorization server) instead of in process.
    #[arg(long, env = "OPD_INTROSPECTION_URL")]
    pub introspection_url: Option<String>,
    /// Bearer token for the introspection URL.
    #[arg(long, env = "OPD_INTROSPECTION_TOKEN", hide_env_values = true)]
    pub introspection_token: Option<String>,
    /// Oldest accepted signature `created`, in seconds before now [default: 300].
    #[arg(long, env = "OPD_SIGNATURE_MAX_AGE_SECS")]
    pub signature_max_age_secs: Option<u64>,
    /// Latest accepted signature `created`, in seconds after now [default: 60].
    #[arg(long, env = "OPD_SIGNATURE_MAX_FUTURE_SECS")]
    pub signature_max_future_secs: Option<u64>,
    /// Accept the open-payments Rust SDK's non-RFC signature format [default: true].
    #[arg(long, env = "OPD_ACCEPT_SDK_SIGNATURES")]
    pub accept_sdk_signatures: Option<bool>,
    /// Where webhook events are POSTed [default: kept in the outbox].
    #[arg(long, env = "OPD_WEBHOOK_URL")]
    pub webhook_url: Option<String>,
    /// Key of the Opd-Signature HMAC on webhooks.
    #[arg(long, env = "OPD_WEBHOOK_SECRET", hide_env_values = true)]
    pub webhook_secret: Option<String>,
    /// Run the background workers (payments, expiry, webhooks) [default: true].
    #[arg(long, env = "OPD_WORKERS")]
    pub workers: Option<bool>,
    /// How long access tokens and wallet addresses are cached in memory, in ms; other nodes see revocations within this time [default: 2000].
    #[arg(long, env = "OPD_CACHE_TTL_MS")]
    pub cache_ttl_ms: Option<u64>,
    /// Incoming payments a client identified by a key alone (no wallet address) may create per hour on one wallet address [default: 100].
    #[arg(long, env = "OPD_KEY_ONLY_INCOMING_PER_HOUR")]
    pub key_only_incoming_per_hour: Option<u32>,
    /// File holding the 32-byte key (64 hex digits) server secrets are sealed with in the database; every node of one database needs the same [default: <data-dir>/secrets-key, created on first start]. OPD_SECRETS_KEY (hex) takes precedence.
    #[arg(long, env = "OPD_SECRETS_KEY_FILE")]
    pub secrets_key_file: Option<PathBuf>,
    /// The previous secrets key file, during a rotation: secrets sealed with it are sealed again with the current key.
    #[arg(long, env = "OPD_SECRETS_KEY_PREVIOUS_FILE")]
    pub secrets_key_previous_file: Option<PathBuf>,
    /// Grant requests allowed per minute per client and per client address (also the burst); 0: no limit [default: 600].
    #[arg(long, env = "OPD_GRANT_REQUESTS_PER_MINUTE")]
    pub grant_requests_per_minute: Option<u32>,
    /// Incoming payments, quotes and outgoing payments one client may create per minute (also the burst), per node; 0: no limit [default: 6000].
    #[arg(long, env = "OPD_CREATE_REQUESTS_PER_MINUTE")]
    pub create_requests_per_minute: Option<u32>,
    /// How far, in basis points, the exchange rate of an Interledger path to another server may fall below the configured rate for a quote [default: 100, i.e. 1 %].
    #[arg(long, env = "OPD_SLIPPAGE_BASIS_POINTS", value_parser = clap::value_parser!(u16).range(0..10000))]
    pub slippage_basis_points: Option<u16>,
    /// Interactive grants one client may have waiting for a decision at once [default: 100].
    #[arg(long, env = "OPD_MAX_PENDING_INTERACTIONS")]
    pub max_pending_interactions: Option<u32>,
    /// Days expired or revoked tokens and grants, unused expired quotes, delivered webhook events and settled ILP holds are kept; 0 keeps them forever [default: 30].
    #[arg(long, env = "OPD_RETENTION_DAYS")]
    pub retention_days: Option<u64>,
    /// Seconds a client has to send a request's head, on every listener; an idle keep-alive connection is closed after it too [default: 10].
    #[arg(long, env = "OPD_HEADER_TIMEOUT_SECS")]
    pub header_timeout_secs: Option<u64>,
    /// Seconds a request (body included) may take to be received and answered [default: 30].
    #[arg(long, env = "OPD_REQUEST_TIMEOUT_SECS")]
    pub request_timeout_secs: Option<u64>,
    /// Connections at once per public listener (the admin listener has its own 256) [default: 4096].
    #[arg(long, env = "OPD_MAX_CONNECTIONS")]
    pub max_connections: Option<usize>,
    /// Hosts, addresses or ranges (CIDR) outbound requests may reach besides public addresses, comma-separated [default: none; the hosts of --rates-url, --webhook-url and --introspection-url are added].
    #[arg(long, env = "OPD_OUTBOUND_ALLOW", value_delimiter = ',')]
    pub outbound_allow: Vec<String>,
    /// Outgoing payments wait until funded through the admin API instead of from the wallet balance.
    #[arg(long, env = "OPD_EXTERNAL_FUNDING", num_args = 0..=1, default_missing_value = "true")]
    pub external_funding: Option<bool>,
    /// Milliseconds an Interledger packet this server sends may take (its expiry, and how long its answer is awaited) [default: 10000].
    #[arg(long, env = "OPD_ILP_PACKET_TIMEOUT_MS")]
    pub ilp_packet_timeout_ms: Option<u64>,
    /// Milliseconds a forwarded Interledger packet may take downstream; kept at least a second below --request-timeout-secs so a peer always gets an ILP reply [default: 20000].
    #[arg(long, env = "OPD_ILP_FORWARD_TIMEOUT_MS")]
    pub ilp_forward_timeout_ms: Option<u64>,
    /// Most Interledger packets one outgoing payment sends in one worker step [default: 200].
    #[arg(long, env = "OPD_ILP_PACKETS_PER_STEP")]
    pub ilp_packets_per_step: Option<u32>,
    /// Most Interledger packets one outgoing payment sends in any minute, across nodes [default: 2000].
    #[arg(long, env = "OPD_ILP_PACKETS_PER_MINUTE")]
    pub ilp_packets_per_minute: Option<u32>,
}

/// A fee in the configuration file.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct FeeConfig {
    pub asset_code: String,
    pub asset_scale: u8,
    /// Minor units.
    #[serde(default)]
    pub fixed: u64,
    #[serde(default)]
    pub basis_points: u16,
}

/// The TOML file: the same names as the flags, in snake_case, plus fees
/// and rates.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileConfig {
    pub data_dir: Option<PathBuf>,
    pub database_url: Option<String>,
    pub listen: Option<SocketAddr>,
    pub auth_listen: Option<SocketAddr>,
    pub admin_listen: Option<SocketAddr>,
    pub public_url: Option<String>,
    pub auth_public_url: Option<String>,
    pub admin_token: Option<String>,
    pub log_format: Option<LogFormat>,
    pub allow_remote_admin: Option<bool>,
    pub migrate: Option<bool>,
    pub demo: Option<bool>,
    pub ilp_address: Option<String>,
    pub ilp_listen: Option<SocketAddr>,
    pub ilp_public_url: Option<String>,
    pub auto_peering_listen: Option<SocketAddr>,
    pub auto_peering_liquidity: Option<u64>,
    pub auto_peering_liquidity_total: Option<u64>,
    pub auto_peering_max_peers: Option<u64>,
    pub auto_peering_requests_per_minute: Option<u32>,
    pub quote_lifespan_secs: Option<u64>,
    pub incoming_payment_expiry_secs: Option<u64>,
    pub incoming_payment_max_expiry_secs: Option<u64>,
    pub rates_url: Option<String>,
    pub rates_cache_secs: Option<u64>,
    pub access_token_ttl_secs: Option<u64>,
    pub idp_secret: Option<String>,
    pub idp_consent_url: Option<String>,
    pub introspection_url: Option<String>,
    pub introspection_token: Option<String>,
    pub signature_max_age_secs: Option<u64>,
    pub signature_max_future_secs: Option<u64>,
    pub accept_sdk_signatures: Option<bool>,
    pub webhook_url: Option<String>,
    pub webhook_secret: Option<String>,
    pub workers: Option<bool>,
    pub external_funding: Option<bool>,
    pub ilp_packet_timeout_ms: Option<u64>,
    pub ilp_forward_timeout_ms: Option<u64>,
    pub ilp_packets_per_step: Option<u32>,
    pub ilp_packets_per_minute: Option<u32>,
    pub cache_ttl_ms: Option<u64>,
    pub key_only_incoming_per_hour: Option<u32>,
    pub secrets_key_file: Option<PathBuf>,
    pub secrets_key_previous_file: Option<PathBuf>,
    pub grant_requests_per_minute: Option<u32>,
    pub create_requests_per_minute: Option<u32>,
    pub slippage_basis_points: Option<u16>,
    pub max_pending_interactions: Option<u32>,
    pub retention_days: Option<u64>,
    pub header_timeout_secs: Option<u64>,
    pub request_timeout_secs: Option<u64>,
    pub max_connections: Option<usize>,
    #[serde(default)]
    pub outbound_allow: Vec<String>,
    #[serde(default)]
    pub fees: Vec<FeeConfig>,
    /// base -> counter -> rate (a decimal string, such as "0.91").
    #[serde(default)]
    pub rates: BTreeMap<String, BTreeMap<String, String>>,
}

impl FileConfig {
    /// The log format: the flag (or `OPD_LOG_FORMAT`), else the file's,
    /// else text. Resolved apart from [`Settings`], since logging starts
    /// before them.
    pub fn log_format(&self, common: &CommonArgs) -> LogFormat {
        common.log_format.or(self.log_format).unwrap_or_default()
    }

    /// Reads the file named, or `./opd.toml` when none is named and it
    /// exists. A named file that is missing is an error.
    pub fn load(path: Option<&Path>) -> anyhow::Result<Self> {
        let (path, required) = match path {
            Some(p) => (p.to_path_buf(), true),
            None => (PathBuf::from("opd.toml"), false),
        };
        if !path.exists() {
            if required {
                bail!("configuration file {} does not exist", path.display());
            }
            return Ok(Self::default());
        }
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        toml::from_str(&text)
            .with_context(|| format!("invalid configuration file {}", path.display()))
    }
}

/// The resolved settings the server runs with.
#[derive(Debug, Clone)]
pub struct Settings {
    pub data_dir: PathBuf,
    pub database_url: String,
    /// Whether the database is the default one, which is created when
    /// missing.
    pub database_is_default: bool,
    pub listen: SocketAddr,
    pub auth_listen: SocketAddr,
    pub admin_listen: SocketAddr,
    pub public_url: Option<String>,
    pub auth_public_url: Option<String>,
    pub admin_token: Option<String>,
    pub allow_remote_admin: bool,
    pub migrate: bool,
    pub demo: bool,
    pub ilp_address: String,
    pub ilp_listen: SocketAddr,
    pub ilp_public_url: Option<String>,
    pub auto_peering_listen: Option<SocketAddr>,
    pub auto_peering_liquidity: u64,
    pub auto_peering_liquidity_total: u64,
    pub auto_peering_max_peers: u64,
    pub auto_peering_requests_per_minute: u32,
    pub quote_lifespan_secs: u64,
    pub incoming_payment_expiry_secs: u64,
    pub incoming_payment_max_expiry_secs: u64,
    pub rates_url: Option<String>,
    pub rates_cache_secs: u64,
    pub access_token_ttl_secs: u64,
    pub idp_secret: Option<String>,
    pub idp_consent_url: Option<String>,
    pub introspection_url: Option<String>,
    pub introspection_token: Option<String>,
    pub signature_max_age_secs: u64,
    pub signature_max_future_secs: u64,
    pub accept_sdk_signatures: bool,
    pub webhook_url: Option<String>,
    pub webhook_secret: Option<String>,
    pub workers: bool,
    pub external_funding: bool,
    pub ilp_packet_timeout_ms: u64,
    pub ilp_forward_timeout_ms: u64,
    pub ilp_packets_per_step: u32,
    pub ilp_packets_per_minute: u32,
    pub cache_ttl_ms: u64,
    pub key_only_incoming_per_hour: u32,
    pub secrets_key_file: Option<PathBuf>,
    pub secrets_key_previous_file: Option<PathBuf>,
    pub grant_requests_per_minute: u32,
    pub create_requests_per_minute: u32,
    pub slippage_basis_points: u16,
    pub max_pending_interactions: u32,
    pub retention_days: u64,
    pub header_timeout_secs: u64,
    pub request_timeout_secs: u64,
    pub max_connections: usize,
    pub outbound_allow: Vec<String>,
    pub fees: Vec<FeeConfig>,
    pub rates: BTreeMap<String, BTreeMap<String, String>>,
}

fn addr(s: &str) -> SocketAddr {
    // Constant literals below; a parse failure is a programming error caught by tests.
    s.parse()
        .unwrap_or_else(|_| SocketAddr::from(([127, 0, 0, 1], 0)))
}

impl Settings {
    /// Merges flags and environment (already merged by clap), the file and
    /// the defaults.
    pub fn resolve(common: &CommonArgs, serve: &ServeArgs, file: FileConfig) -> Self {
        let data_dir = common
            .data_dir
            .clone()
            .or(file.data_dir)
            .unwrap_or_else(|| PathBuf::from("opd-data"));
        let explicit_db = common.database_url.clone().or(file.database_url);
        let database_is_default = explicit_db.is_none();
        let database_url = explicit_db
            .unwrap_or_else(|| format!("sqlite://{}", data_dir.join("opd.sqlite").display()));
        Self {
            data_dir,
            database_url,
            database_is_default,
            listen: serve
                .listen
                .or(file.listen)
                .unwrap_or_else(|| addr("127.0.0.1:8080")),
            auth_listen: serve
                .auth_listen
                .or(file.auth_listen)
                .unwrap_or_else(|| addr("127.0.0.1:8081")),
            admin_listen: common
                .admin_listen
                .or(file.admin_listen)
                .unwrap_or_else(|| addr("127.0.0.1:8082")),
            public_url: serve.public_url.clone().or(file.public_url),
            auth_public_url: serve.auth_public_url.clone().or(file.auth_public_url),
            admin_token: common.admin_token.clone().or(file.admin_token),
            allow_remote_admin: serve
                .allow_remote_admin
                .or(file.allow_remote_admin)
                .unwrap_or(false),
            migrate: serve.migrate.or(file.migrate).unwrap_or(false),
            demo: serve.demo.or(file.demo).unwrap_or(false),
            ilp_address: serve
                .ilp_address
                .clone()
                .or(file.ilp_address)
                .unwrap_or_else(|| "test.opd".into()),
            ilp_listen: serve
                .ilp_listen
                .or(file.ilp_listen)
                .unwrap_or_else(|| addr("127.0.0.1:8083")),
            ilp_public_url: serve.ilp_public_url.clone().or(file.ilp_public_url),
            auto_peering_listen: serve.auto_peering_listen.or(file.auto_peering_listen),
            auto_peering_liquidity: serve
                .auto_peering_liquidity
                .or(file.auto_peering_liquidity)
                .unwrap_or(0),
            auto_peering_liquidity_total: serve
                .auto_peering_liquidity_total
                .or(file.auto_peering_liquidity_total)
                .unwrap_or(0),
            auto_peering_max_peers: serve
                .auto_peering_max_peers
                .or(file.auto_peering_max_peers)
                .unwrap_or(100),
            auto_peering_requests_per_minute: serve
                .auto_peering_requests_per_minute
                .or(file.auto_peering_requests_per_minute)
                .unwrap_or(10),
            quote_lifespan_secs: serve
                .quote_lifespan_secs
                .or(file.quote_lifespan_secs)
                .unwrap_or(300),
            incoming_payment_expiry_secs: serve
                .incoming_payment_expiry_secs
                .or(file.incoming_payment_expiry_secs)
                .unwrap_or(30 * 24 * 3600),
            incoming_payment_max_expiry_secs: serve
                .incoming_payment_max_expiry_secs
                .or(file.incoming_payment_max_expiry_secs)
                .unwrap_or(365 * 24 * 3600),
            rates_url: serve.rates_url.clone().or(file.rates_url),
            access_token_ttl_secs: serve
                .access_token_ttl_secs
                .or(file.access_token_ttl_secs)
                .unwrap_or(600),
            idp_secret: serve.idp_secret.clone().or(file.idp_secret),
            idp_consent_url: serve.idp_consent_url.clone().or(file.idp_consent_url),
            introspection_url: serve.introspection_url.clone().or(file.introspection_url),
            introspection_token: serve
                .introspection_token
                .clone()
                .or(file.introspection_token),
            signature_max_age_secs: serve
                .signature_max_age_secs
                .or(file.signature_max_age_secs)
                .unwrap_or(300),
            signature_max_future_secs: serve
                .signature_max_future_secs
                .or(file.signature_max_future_secs)
                .unwrap_or(60),
            accept_sdk_signatures: serve
                .accept_sdk_signatures
                .or(file.accept_sdk_signatures)
                .unwrap_or(true),
            webhook_url: serve.webhook_url.clone().or(file.webhook_url),
            webhook_secret: serve.webhook_secret.clone().or(file.webhook_secret),
            workers: serve.workers.or(file.workers).unwrap_or(true),
            external_funding: serve
                .external_funding
                .or(file.external_funding)
                .unwrap_or(false),
            ilp_packet_timeout_ms: serve
                .ilp_packet_timeout_ms
                .or(file.ilp_packet_timeout_ms)
                .unwrap_or(10_000),
            ilp_forward_timeout_ms: serve
                .ilp_forward_timeout_ms
                .or(file.ilp_forward_timeout_ms)
                .unwrap_or(20_000),
            ilp_packets_per_step: serve
                .ilp_packets_per_step
                .or(file.ilp_packets_per_step)
                .unwrap_or(200),
            ilp_packets_per_minute: serve
                .ilp_packets_per_minute
                .or(file.ilp_packets_per_minute)
                .unwrap_or(2000),
            cache_ttl_ms: serve.cache_ttl_ms.or(file.cache_ttl_ms).unwrap_or(2000),
            key_only_incoming_per_hour: serve
                .key_only_incoming_per_hour
                .or(file.key_only_incoming_per_hour)
                .unwrap_or(100),
            secrets_key_file: serve.secrets_key_file.clone().or(file.secrets_key_file),
            secrets_key_previous_file: serve
                .secrets_key_previous_file
                .clone()
                .or(file.secrets_key_previous_file),
            grant_requests_per_minute: serve
                .grant_requests_per_minute
                .or(file.grant_requests_per_minute)
                .unwrap_or(600),
            create_requests_per_minute: serve
                .create_requests_per_minute
                .or(file.create_requests_per_minute)
                .unwrap_or(6000),
            slippage_basis_points: serve
                .slippage_basis_points
                .or(file.slippage_basis_points)
                .unwrap_or(100),
            max_pending_interactions: serve
                .max_pending_interactions
                .or(file.max_pending_interactions)
                .unwrap_or(100),
            retention_days: serve.retention_days.or(file.retention_days).unwrap_or(30),
            header_timeout_secs: serve
                .header_timeout_secs
                .or(file.header_timeout_secs)
                .unwrap_or(10),
            request_timeout_secs: serve
                .request_timeout_secs
                .or(file.request_timeout_secs)
                .unwrap_or(30),
            max_connections: serve
                .max_connections
                .or(file.max_connections)
                .unwrap_or(4096),
            outbound_allow: if serve.outbound_allow.is_empty() {
                file.outbound_allow.clone()
            } else {
                serve.outbound_allow.clone()
            },
            rates_cache_secs: serve
                .rates_cache_secs
                .or(file.rates_cache_secs)
                .unwrap_or(15),
            fees: file.fees,
            rates: file.rates,
        }
    }

    /// Defaults only, with a data directory; for tests.
    pub fn for_data_dir(data_dir: &Path) -> Self {
        let common = CommonArgs {
            data_dir: Some(data_dir.to_path_buf()),
            ..CommonArgs::default()
        };
        Self::resolve(&common, &ServeArgs::default(), FileConfig::default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_beat_the_file_and_the_file_beats_defaults() {
        let file: FileConfig = toml::from_str(
            r#"
            listen = "127.0.0.1:9000"
            auth_listen = "127.0.0.1:9001"
            ilp_address = "test.file"
            [[fees]]
            asset_code = "USD"
            asset_scale = 2
            fixed = 5
            basis_points = 100
            [rates.USD]
            EUR = "0.91"
            "#,
        )
        .unwrap();
        let serve = ServeArgs {
            listen: Some(addr("127.0.0.1:7000")),
            ..ServeArgs::default()
        };
        let s = Settings::resolve(&CommonArgs::default(), &serve, file);
        assert_eq!(s.listen, addr("127.0.0.1:7000"));
        assert_eq!(s.auth_listen, addr("127.0.0.1:9001"));
        assert_eq!(s.admin_listen, addr("127.0.0.1:8082"));
        assert_eq!(s.ilp_address, "test.file");
        assert_eq!(s.fees.len(), 1);
        assert_eq!(s.rates["USD"]["EUR"], "0.91");
        assert!(s.database_is_default);
        assert_eq!(s.database_url, "sqlite://opd-data/opd.sqlite");
    }

    #[test]
    fn the_log_format_comes_from_the_flag_then_the_file() {
        let file: FileConfig = toml::from_str(r#"log_format = "json""#).unwrap();
        assert_eq!(file.log_format(&CommonArgs::default()), LogFormat::Json);
        let flag = CommonArgs {
            log_format: Some(LogFormat::Text),
            ..CommonArgs::default()
        };
        assert_eq!(file.log_format(&flag), LogFormat::Text);
        assert_eq!(
            FileConfig::default().log_format(&CommonArgs::default()),
            LogFormat::Text
        );
        assert!(toml::from_str::<FileConfig>(r#"log_format = "xml""#).is_err());
    }

    #[test]
    fn unknown_file_keys_are_rejected() {
        assert!(toml::from_str::<FileConfig>("lisen = \"127.0.0.1:1\"").is_err());
    }
}
