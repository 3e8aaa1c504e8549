//! The defaults of the settings `opd serve` has flags for, in the flags'
//! units: written once, here, and used both by the flags'
//! `default_value_t`s (`crates/opd/src/config.rs`) and by
//! [`ServiceConfig::new`](crate::ServiceConfig::new) and
//! [`IlpLimits::default`](crate::IlpLimits), so that tests and embedders
//! get the defaults `opd serve` has. Each is named after its flag, whose
//! `--help` says what it means.

pub const QUOTE_LIFESPAN_SECS: u64 = 300;
pub const INCOMING_PAYMENT_EXPIRY_SECS: u64 = 30 * 24 * 3600;
pub const INCOMING_PAYMENT_MAX_EXPIRY_SECS: u64 = 365 * 24 * 3600;
pub const SLIPPAGE_BASIS_POINTS: u16 = 100;
pub const RATES_CACHE_SECS: u64 = 15;
pub const RETENTION_DAYS: u64 = 30;
pub const GRANT_REQUESTS_PER_MINUTE: u32 = 600;
pub const CREATE_REQUESTS_PER_MINUTE: u32 = 6000;
pub const MAX_PENDING_INTERACTIONS: u32 = 100;
pub const KEY_ONLY_INCOMING_PER_HOUR: u32 = 100;
pub const KEY_ONLY_INCOMING_PER_HOUR_TOTAL: u32 = 500;
pub const KEY_ONLY_INCOMING_PER_HOUR_PER_NETWORK: u32 = 100;
pub const ACCESS_TOKEN_TTL_SECS: u64 = 600;
pub const CACHE_TTL_MS: u64 = 2000;
pub const ILP_PACKET_TIMEOUT_MS: u64 = 10_000;
pub const ILP_FORWARD_TIMEOUT_MS: u64 = 20_000;
pub const ILP_PACKETS_PER_STEP: u32 = 200;
pub const ILP_PACKETS_PER_MINUTE: u32 = 2000;
pub const PAYMENT_STALL_ATTEMPTS: u32 = 8;
pub const PAYMENT_STALL_SECS: u64 = 60;
pub const SPSP: bool = true;
pub const WEB_MONETIZATION_EVENT_SECS: u64 = 60;
