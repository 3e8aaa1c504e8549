//! Configuration: command-line flags, `OPD_*` environment variables and an
//! optional TOML file, in that order of precedence, over built-in defaults.
//!
//! Each setting is declared once, as a field of [`CommonArgs`] (settings
//! of every subcommand) or [`ServeArgs`] (settings of `opd serve`). The
//! field's doc comment is its `--help` text; its `#[arg]` attribute gives
//! its flag (the field's name in kebab-case), its environment variable
//! and its built-in default; its name in snake_case is its key in the
//! configuration file. The configuration table of the operator's guide
//! (`docs/operating.md`) is checked against these declarations by a test
//! (`config/tests.rs`).
//!
//! The layers are merged by two generic steps, never field by field:
//!
//! 1. The file is deserialized into the same structs, whose serde default
//!    is the built-in defaults ([`built_in_defaults`]): keys the file does
//!    not set keep their built-in default.
//! 2. The command line is parsed again with the built-in defaults removed
//!    ([`without_defaults`]), so that its matches hold only what a flag or
//!    an environment variable gave (clap itself puts a flag before its
//!    variable), and clap's derived `update_from_arg_matches` writes
//!    exactly those over the file's values.
//!
//! Secrets (the admin token, the identity-provider and webhook secrets,
//! the introspection token and the database URL, which may carry a
//! password) are `SecretString`s, whose `Debug` prints `[REDACTED]`.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use clap::{Arg, ArgAction, Args, Command, CommandFactory, FromArgMatches};
use secrecy::SecretString;
use serde::Deserialize;

use opd_service::defaults;
use opd_service::platform::network::Ipv6PrefixLen;

use crate::cli::Cli;
use crate::logging::LogFormat;

/// Settings shared by every subcommand.
#[derive(Debug, Clone, Args, Deserialize)]
#[serde(default)]
pub struct CommonArgs {
    /// TOML configuration file [default: ./opd.toml when it exists].
    #[arg(long, env = "OPD_CONFIG", global = true)]
    // The file cannot name another file.
    #[serde(skip)]
    pub config: Option<PathBuf>,
    /// Directory for the SQLite database and the admin token.
    #[arg(long, env = "OPD_DATA_DIR", global = true, default_value = "opd-data")]
    pub data_dir: PathBuf,
    /// Database URL: sqlite://PATH or postgres://USER@HOST/DB [default: sqlite://<data-dir>/opd.sqlite].
    #[arg(long, env = "OPD_DATABASE_URL", global = true, hide_env_values = true)]
    pub database_url: Option<SecretString>,
    /// Admin API listen address.
    #[arg(
        long,
        env = "OPD_ADMIN_LISTEN",
        global = true,
        default_value = "127.0.0.1:8082"
    )]
    pub admin_listen: SocketAddr,
    /// Where the admin helpers (`tenant`, `wallet-address`, `key`, `peer`, `rate`, `fee`, `incoming-payment`) reach the admin API [default: http://<admin-listen>].
    #[arg(long, env = "OPD_ADMIN_URL", global = true)]
    pub admin_url: Option<String>,
    /// Admin API bearer token [default: generated on first start into <data-dir>/admin-token].
    #[arg(long, env = "OPD_ADMIN_TOKEN", global = true, hide_env_values = true)]
    pub admin_token: Option<SecretString>,
    /// Log line format on standard error: text, or json (one object per line).
    #[arg(long, env = "OPD_LOG_FORMAT", global = true, value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
}

impl CommonArgs {
    /// Whether no database URL is configured: the default SQLite database
    /// in the data directory is then used, and created when missing.
    pub fn database_is_default(&self) -> bool {
        self.database_url.is_none()
    }

    /// The database URL: the configured one, else the SQLite database in
    /// the data directory.
    pub fn database_url(&self) -> SecretString {
        match &self.database_url {
            Some(url) => url.clone(),
            None => format!("sqlite://{}", self.data_dir.join("opd.sqlite").display()).into(),
        }
    }
}

/// Settings of `opd serve`.
#[derive(Debug, Clone, Args, Deserialize)]
#[serde(default)]
pub struct ServeArgs {
    /// Open Payments listen address.
    #[arg(long, env = "OPD_LISTEN", default_value = "127.0.0.1:8080")]
    pub listen: SocketAddr,
    /// Authorization server listen address.
    #[arg(long, env = "OPD_AUTH_LISTEN", default_value = "127.0.0.1:8081")]
    pub auth_listen: SocketAddr,
    /// Public base URL of the Open Payments listener, used in every id and for @target-uri behind proxies [default: http://<listen>].
    #[arg(long, env = "OPD_PUBLIC_URL")]
    pub public_url: Option<String>,
    /// Public URL of the authorization server [default: http://<auth-listen>].
    #[arg(long, env = "OPD_AUTH_PUBLIC_URL")]
    pub auth_public_url: Option<String>,
    /// Let the admin API listen on a non-loopback address.
    #[arg(long, env = "OPD_ALLOW_REMOTE_ADMIN", action = ArgAction::Set, num_args = 0..=1, default_missing_value = "true", default_value_t = false)]
    pub allow_remote_admin: bool,
    /// Apply pending PostgreSQL migrations at start (SQLite always migrates).
    #[arg(long, env = "OPD_MIGRATE", action = ArgAction::Set, num_args = 0..=1, default_missing_value = "true", default_value_t = false)]
    pub migrate: bool,
    /// Seed the demo wallet addresses alice and bob (USD, scale 2).
    #[arg(long, env = "OPD_DEMO", action = ArgAction::Set, num_args = 0..=1, default_missing_value = "true", default_value_t = false)]
    pub demo: bool,
    /// This server's ILP address.
    #[arg(long, env = "OPD_ILP_ADDRESS", default_value = "test.opd")]
    pub ilp_address: String,
    /// ILP-over-HTTP listen address, where peers send packets.
    #[arg(long, env = "OPD_ILP_LISTEN", default_value = "127.0.0.1:8083")]
    pub ilp_listen: SocketAddr,
    /// Public URL of the ILP-over-HTTP listener, as peers reach it [default: http://<ilp-listen>/ilp].
    #[arg(long, env = "OPD_ILP_PUBLIC_URL")]
    pub ilp_public_url: Option<String>,
    /// Listen for auto-peering requests (the reference server's protocol) on this address [default: off].
    #[arg(long, env = "OPD_AUTO_PEERING_LISTEN")]
    pub auto_peering_listen: Option<SocketAddr>,
    /// Liquidity deposited for a peer created by auto-peering, in its asset's minor units, at most (see --auto-peering-liquidity-total).
    #[arg(long, env = "OPD_AUTO_PEERING_LIQUIDITY", default_value_t = 0)]
    pub auto_peering_liquidity: u64,
    /// Liquidity deposited into all peers created by auto-peering together, ever, shared by every node: a new peer gets the smaller of --auto-peering-liquidity and what is left.
    #[arg(long, env = "OPD_AUTO_PEERING_LIQUIDITY_TOTAL", default_value_t = 0)]
    pub auto_peering_liquidity_total: u64,
    /// Peers created by auto-peering that may exist at once, counted in the database (shared by every node).
    #[arg(long, env = "OPD_AUTO_PEERING_MAX_PEERS", default_value_t = 100)]
    pub auto_peering_max_peers: u64,
    /// Auto-peering requests allowed per minute per requester client network (also the burst), per node; 0: no limit.
    #[arg(
        long,
        env = "OPD_AUTO_PEERING_REQUESTS_PER_MINUTE",
        default_value_t = 10
    )]
    pub auto_peering_requests_per_minute: u32,
    /// Quote lifetime in seconds.
    #[arg(long, env = "OPD_QUOTE_LIFESPAN_SECS", default_value_t = defaults::QUOTE_LIFESPAN_SECS)]
    pub quote_lifespan_secs: u64,
    /// Default incoming payment lifetime in seconds (30 days).
    #[arg(long, env = "OPD_INCOMING_PAYMENT_EXPIRY_SECS", default_value_t = defaults::INCOMING_PAYMENT_EXPIRY_SECS)]
    pub incoming_payment_expiry_secs: u64,
    /// Longest incoming payment lifetime a client may ask for, in seconds (365 days).
    #[arg(long, env = "OPD_INCOMING_PAYMENT_MAX_EXPIRY_SECS", default_value_t = defaults::INCOMING_PAYMENT_MAX_EXPIRY_SECS)]
    pub incoming_payment_max_expiry_secs: u64,
    /// Exchange rates URL, called as GET <url>?base=USD.
    #[arg(long, env = "OPD_RATES_URL")]
    pub rates_url: Option<String>,
    /// How long fetched rates are reused, in seconds.
    #[arg(long, env = "OPD_RATES_CACHE_SECS", default_value_t = defaults::RATES_CACHE_SECS)]
    pub rates_cache_secs: u64,
    /// Access token lifetime in seconds.
    #[arg(long, env = "OPD_ACCESS_TOKEN_TTL_SECS", default_value_t = defaults::ACCESS_TOKEN_TTL_SECS)]
    pub access_token_ttl_secs: u64,
    /// Shared secret of the operator's consent app (identity-provider API, header x-idp-secret); without it that API is off.
    #[arg(long, env = "OPD_IDP_SECRET", hide_env_values = true)]
    pub idp_secret: Option<SecretString>,
    /// The operator's consent page; users are sent there instead of the built-in page.
    #[arg(long, env = "OPD_IDP_CONSENT_URL")]
    pub idp_consent_url: Option<String>,
    /// Introspect access tokens at this URL (a separate authorization server) instead of in process.
    #[arg(long, env = "OPD_INTROSPECTION_URL")]
    pub introspection_url: Option<String>,
    /// Bearer token for the introspection URL.
    #[arg(long, env = "OPD_INTROSPECTION_TOKEN", hide_env_values = true)]
    pub introspection_token: Option<SecretString>,
    /// Oldest accepted signature `created`, in seconds before now.
    #[arg(long, env = "OPD_SIGNATURE_MAX_AGE_SECS", default_value_t = opd_httpsig::VerifyPolicy::DEFAULT_MAX_AGE_SECS)]
    pub signature_max_age_secs: u64,
    /// Latest accepted signature `created`, in seconds after now.
    #[arg(long, env = "OPD_SIGNATURE_MAX_FUTURE_SECS", default_value_t = opd_httpsig::VerifyPolicy::DEFAULT_MAX_FUTURE_SKEW_SECS)]
    pub signature_max_future_secs: u64,
    /// Accept the open-payments Rust SDK's non-RFC signature format.
    #[arg(long, env = "OPD_ACCEPT_SDK_SIGNATURES", action = ArgAction::Set, default_value_t = opd_httpsig::VerifyPolicy::DEFAULT_ACCEPT_SDK_COMPAT_FORMAT)]
    pub accept_sdk_signatures: bool,
    /// Where webhook events are POSTed; without it they are kept in the outbox.
    #[arg(long, env = "OPD_WEBHOOK_URL")]
    pub webhook_url: Option<String>,
    /// Key of the Opd-Signature HMAC on webhooks.
    #[arg(long, env = "OPD_WEBHOOK_SECRET", hide_env_values = true)]
    pub webhook_secret: Option<SecretString>,
    /// Run the background workers (payments, expiry, webhooks).
    #[arg(long, env = "OPD_WORKERS", action = ArgAction::Set, default_value_t = true)]
    pub workers: bool,
    /// How long access tokens and wallet addresses are cached in memory, in ms; other nodes see revocations within this time.
    #[arg(long, env = "OPD_CACHE_TTL_MS", default_value_t = defaults::CACHE_TTL_MS)]
    pub cache_ttl_ms: u64,
    /// Incoming payments a client identified by a key alone (no wallet address) may create per hour on one wallet address.
    #[arg(long, env = "OPD_KEY_ONLY_INCOMING_PER_HOUR", default_value_t = defaults::KEY_ONLY_INCOMING_PER_HOUR)]
    pub key_only_incoming_per_hour: u32,
    /// Incoming payments all clients identified by a key alone may create together per hour on one wallet address (counted in the database), and from one client network across wallet addresses (per node).
    #[arg(
        long,
        env = "OPD_KEY_ONLY_INCOMING_PER_HOUR_TOTAL",
        default_value_t = defaults::KEY_ONLY_INCOMING_PER_HOUR_TOTAL
    )]
    pub key_only_incoming_per_hour_total: u32,
    /// Incoming payments clients identified by a key alone may create per hour on one wallet address from one client network (counted in the database), so that one source cannot spend the wallet address's whole total.
    #[arg(
        long,
        env = "OPD_KEY_ONLY_INCOMING_PER_HOUR_PER_NETWORK",
        default_value_t = defaults::KEY_ONLY_INCOMING_PER_HOUR_PER_NETWORK
    )]
    pub key_only_incoming_per_hour_per_network: u32,
    /// Leading bits of an IPv6 address that make one client network for every per-address limit (32 to 128).
    #[arg(long, env = "OPD_IPV6_PREFIX_LEN", value_parser = clap::value_parser!(u8).range(32..=128), default_value_t = Ipv6PrefixLen::DEFAULT.bits())]
    pub ipv6_prefix_len: u8,
    /// Addresses or CIDR ranges of the reverse proxies in front of opd, comma-separated: their connections are not capped per address, and their requests' client is read from X-Forwarded-For.
    #[arg(long, env = "OPD_TRUSTED_PROXIES", value_delimiter = ',')]
    pub trusted_proxies: Vec<String>,
    /// File holding the 32-byte key (64 hex digits) server secrets are sealed with in the database; every node of one database needs the same [default: <data-dir>/secrets-key, created on first start]. OPD_SECRETS_KEY (hex) takes precedence.
    #[arg(long, env = "OPD_SECRETS_KEY_FILE")]
    pub secrets_key_file: Option<PathBuf>,
    /// The previous secrets key file, during a rotation: secrets sealed with it are sealed again with the current key.
    #[arg(long, env = "OPD_SECRETS_KEY_PREVIOUS_FILE")]
    pub secrets_key_previous_file: Option<PathBuf>,
    /// Grant requests allowed per minute per client and per client network (also the burst); 0: no limit.
    #[arg(long, env = "OPD_GRANT_REQUESTS_PER_MINUTE", default_value_t = defaults::GRANT_REQUESTS_PER_MINUTE)]
    pub grant_requests_per_minute: u32,
    /// Incoming payments, quotes and outgoing payments one client may create per minute (also the burst), per node; 0: no limit.
    #[arg(long, env = "OPD_CREATE_REQUESTS_PER_MINUTE", default_value_t = defaults::CREATE_REQUESTS_PER_MINUTE)]
    pub create_requests_per_minute: u32,
    /// How far, in basis points, the exchange rate of an Interledger path to another server may fall below the configured rate for a quote (100 is 1 %).
    #[arg(long, env = "OPD_SLIPPAGE_BASIS_POINTS", value_parser = clap::value_parser!(u16).range(0..10000), default_value_t = defaults::SLIPPAGE_BASIS_POINTS)]
    pub slippage_basis_points: u16,
    /// Interactive grants one client may have waiting for a decision at once.
    #[arg(long, env = "OPD_MAX_PENDING_INTERACTIONS", default_value_t = defaults::MAX_PENDING_INTERACTIONS)]
    pub max_pending_interactions: u32,
    /// Days revoked or rotated-away tokens, expired tokens of grants given without consent, finished grants, unused expired quotes, delivered webhook events and settled ILP holds are kept (and the client network stored with a key-only client's incoming payment); 0 keeps them forever.
    #[arg(long, env = "OPD_RETENTION_DAYS", default_value_t = defaults::RETENTION_DAYS)]
    pub retention_days: u64,
    /// Seconds a client has to send a request's head, on every listener; an idle keep-alive connection is closed after it too.
    #[arg(long, env = "OPD_HEADER_TIMEOUT_SECS", default_value_t = 10)]
    pub header_timeout_secs: u64,
    /// Seconds a request (body included) may take to be received and answered.
    #[arg(long, env = "OPD_REQUEST_TIMEOUT_SECS", default_value_t = 30)]
    pub request_timeout_secs: u64,
    /// Connections at once per public listener; refused at start if the public listeners' caps do not fit in the open-file limit beside what the database, outbound requests and the admin listener need [default: derived from the open-file limit, at most 4096].
    #[arg(long, env = "OPD_MAX_CONNECTIONS")]
    pub max_connections: Option<usize>,
    /// Connections one client network (an IPv4 address, an IPv6 /64, loopback, a private range) may hold at once on one public listener; --trusted-proxies are not counted; 0 lifts the cap [default: half of --max-connections].
    #[arg(long, env = "OPD_MAX_CONNECTIONS_PER_ADDRESS")]
    pub max_connections_per_address: Option<usize>,
    /// Hosts, addresses or ranges (CIDR) outbound requests may reach besides public addresses, comma-separated; the hosts of --rates-url, --webhook-url and --introspection-url are added.
    #[arg(long, env = "OPD_OUTBOUND_ALLOW", value_delimiter = ',')]
    pub outbound_allow: Vec<String>,
    /// PEM bundle of certificate authorities outbound requests trust besides the platform's trust store and the compiled-in roots (a private CA).
    #[arg(long, env = "OPD_CA_FILE")]
    pub ca_file: Option<PathBuf>,
    /// PEM certificate chain: the public listeners serve TLS with it, and the admin listener with --allow-remote-admin (reloaded on SIGHUP and when the file changes); needs --tls-key.
    #[arg(long, env = "OPD_TLS_CERT", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// PEM private key of --tls-cert.
    #[arg(long, env = "OPD_TLS_KEY", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Outgoing payments wait until funded through the admin API instead of from the wallet balance.
    #[arg(long, env = "OPD_EXTERNAL_FUNDING", action = ArgAction::Set, num_args = 0..=1, default_missing_value = "true", default_value_t = false)]
    pub external_funding: bool,
    /// Wallet addresses answer SPSP queries (Accept: application/spsp4+json) with STREAM credentials and take money paid by their payment pointer.
    #[arg(long, env = "OPD_SPSP", action = ArgAction::Set, num_args = 0..=1, default_missing_value = "true", default_value_t = defaults::SPSP)]
    pub spsp: bool,
    /// Seconds between wallet_address.web_monetization events of one wallet address (at most one per interval): the next is due this long after the first SPSP payment since the last.
    #[arg(long, env = "OPD_WEB_MONETIZATION_EVENT_SECS", default_value_t = defaults::WEB_MONETIZATION_EVENT_SECS)]
    pub web_monetization_event_secs: u64,
    /// Milliseconds an Interledger packet this server sends may take (its expiry, and how long its answer is awaited).
    #[arg(long, env = "OPD_ILP_PACKET_TIMEOUT_MS", default_value_t = defaults::ILP_PACKET_TIMEOUT_MS)]
    pub ilp_packet_timeout_ms: u64,
    /// Milliseconds a forwarded Interledger packet may take downstream; kept at least a second below --request-timeout-secs so a peer always gets an ILP reply.
    #[arg(long, env = "OPD_ILP_FORWARD_TIMEOUT_MS", default_value_t = defaults::ILP_FORWARD_TIMEOUT_MS)]
    pub ilp_forward_timeout_ms: u64,
    /// Most Interledger packets one outgoing payment sends in one worker step.
    #[arg(long, env = "OPD_ILP_PACKETS_PER_STEP", default_value_t = defaults::ILP_PACKETS_PER_STEP)]
    pub ilp_packets_per_step: u32,
    /// Most Interledger packets one outgoing payment sends in any minute, across nodes.
    #[arg(long, env = "OPD_ILP_PACKETS_PER_MINUTE", default_value_t = defaults::ILP_PACKETS_PER_MINUTE)]
    pub ilp_packets_per_minute: u32,
    /// Attempts in a row without progress after which a sending outgoing payment fails with its money back.
    #[arg(long, env = "OPD_PAYMENT_STALL_ATTEMPTS", default_value_t = defaults::PAYMENT_STALL_ATTEMPTS)]
    pub payment_stall_attempts: u32,
    /// Seconds without progress after which a sending outgoing payment fails with its money back.
    #[arg(long, env = "OPD_PAYMENT_STALL_SECS", default_value_t = defaults::PAYMENT_STALL_SECS)]
    pub payment_stall_secs: u64,
}

// The serde default of the settings structs: keys the file leaves out
// keep their built-in default.
impl Default for CommonArgs {
    fn default() -> Self {
        built_in_defaults()
    }
}

impl Default for ServeArgs {
    fn default() -> Self {
        built_in_defaults()
    }
}

/// A settings struct holding the built-in defaults declared in its
/// `#[arg]` attributes, so that each is written once. The environment is
/// not read.
fn built_in_defaults<T: Args + FromArgMatches>() -> T {
    let command = T::augment_args(Command::new("opd")).mut_args(|arg| arg.env(None));
    command
        .try_get_matches_from(["opd"])
        .and_then(|matches| T::from_arg_matches(&matches))
        // The defaults are constants: the unit tests catch one that does
        // not parse.
        .unwrap_or_else(|e| panic!("a built-in default does not parse: {e}"))
}

/// Changes every setting's argument, of `opd` (the common ones) and of
/// `opd serve`.
fn map_settings_args(command: Command, change: impl Fn(Arg) -> Arg + Copy) -> Command {
    command
        .mut_args(change)
        .mut_subcommand("serve", |serve| serve.mut_args(change))
}

/// `opd`'s command line without its built-in defaults: its matches hold
/// only what the flags and the environment variables say.
fn without_defaults(command: Command) -> Command {
    map_settings_args(command, |arg| arg.default_value(None))
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

/// Exchange rates in the configuration file: base -> counter -> rate (a
/// decimal string, such as "0.91").
pub type RatesConfig = BTreeMap<String, BTreeMap<String, String>>;

/// What only the configuration file can hold: tables, not flags.
#[derive(Debug, Clone, Default, Deserialize)]
struct FileTables {
    #[serde(default)]
    fees: Vec<FeeConfig>,
    #[serde(default)]
    rates: RatesConfig,
}

/// The keys the configuration file may hold besides the settings.
const FILE_TABLES: [&str; 2] = ["fees", "rates"];

/// The configuration file over the built-in defaults: its keys are the
/// settings' names in snake_case, plus the `fees` and `rates` tables.
#[derive(Debug, Clone, Default)]
pub struct ConfigFile {
    pub common: CommonArgs,
    pub serve: ServeArgs,
    pub fees: Vec<FeeConfig>,
    pub rates: RatesConfig,
}

impl ConfigFile {
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
        Self::parse(&text).with_context(|| format!("invalid configuration file {}", path.display()))
    }

    /// Reads the file's text. Each struct is deserialized from the whole
    /// text (ignoring the others' keys), so that an error names its line;
    /// a key none of them knows is refused here.
    pub fn parse(text: &str) -> anyhow::Result<Self> {
        let keys: toml::Table = toml::from_str(text)?;
        let known = file_keys();
        if let Some(unknown) = keys.keys().find(|key| !known.contains(key)) {
            bail!(
                "unknown key `{unknown}`: the keys are the flags of `opd serve --help` in snake_case, `fees` and `rates`"
            );
        }
        let tables: FileTables = toml::from_str(text)?;
        Ok(Self {
            common: toml::from_str(text)?,
            serve: toml::from_str(text)?,
            fees: tables.fees,
            rates: tables.rates,
        })
    }
}

/// The keys of the configuration file: every setting but `config`, and
/// the tables.
fn file_keys() -> Vec<String> {
    let settings = CommonArgs::augment_args(ServeArgs::augment_args(Command::new("opd")));
    settings
        .get_arguments()
        .map(|arg| arg.get_id().to_string())
        .filter(|id| id != "config")
        .chain(FILE_TABLES.map(String::from))
        .collect()
}

/// The resolved settings the server runs with.
#[derive(Debug, Clone)]
pub struct Settings {
    pub common: CommonArgs,
    /// `opd serve`'s settings; for the other subcommands, the file's and
    /// the defaults.
    pub serve: ServeArgs,
    pub fees: Vec<FeeConfig>,
    pub rates: RatesConfig,
}

impl Settings {
    /// Parses `opd`'s command line (and so the environment) and lays its
    /// settings over the file's. `args` is the whole command line, the
    /// program's name first, already checked by `Cli::parse`.
    pub fn from_command_line<I, T>(args: I, file: ConfigFile) -> Result<Self, clap::Error>
    where
        I: IntoIterator<Item = T>,
        T: Into<OsString> + Clone,
    {
        Self::layered(Cli::command(), args, file)
    }

    /// The settings of `file`, overwritten by those `command` finds in
    /// `args` and the environment.
    fn layered<I, T>(command: Command, args: I, file: ConfigFile) -> Result<Self, clap::Error>
    where
        I: IntoIterator<Item = T>,
        T: Into<OsString> + Clone,
    {
        let given = without_defaults(command).try_get_matches_from(args)?;
        let ConfigFile {
            mut common,
            mut serve,
            fees,
            rates,
        } = file;
        // clap's derived update writes only the settings present in the
        // matches, which are those a flag or a variable gave.
        common.update_from_arg_matches(&given)?;
        if let Some(given) = given.subcommand_matches("serve") {
            serve.update_from_arg_matches(given)?;
        }
        Ok(Self {
            common,
            serve,
            fees,
            rates,
        })
    }

    /// The built-in defaults only, with a data directory; for tests.
    pub fn for_data_dir(data_dir: &Path) -> Self {
        let ConfigFile {
            mut common,
            serve,
            fees,
            rates,
        } = ConfigFile::default();
        common.data_dir = data_dir.to_path_buf();
        Self {
            common,
            serve,
            fees,
            rates,
        }
    }
}

#[cfg(test)]
mod tests;
