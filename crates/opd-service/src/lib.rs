#![doc = include_str!("../README.md")]

mod error;
pub mod incoming_payments;
pub mod pricing;
pub mod quotes;
pub mod secrets;
pub mod urls;
pub mod wallet_addresses;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use opd_core::{Asset, AssetCode, Clock, Fee, Random, Rate};
use opd_ilp::{IlpAddress, StreamSecret};
use opd_store::Store;

pub use error::ServiceError;
pub use urls::PublicUrl;

/// The configuration the use cases need (a subset of the binary's).
#[derive(Debug, Clone)]
pub struct ServiceConfig {
    /// Base of every wallet address and resource URL.
    pub public_url: PublicUrl,
    /// The authorization server URL published in wallet address documents.
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
    /// Where to fetch rates not set explicitly: `GET url?base=USD`.
    pub rates_url: Option<String>,
    /// How long fetched rates are reused.
    pub rates_cache_ttl: Duration,
    /// How long a rates request may take.
    pub rates_timeout: Duration,
    /// How long admin-set fees and rates are cached in memory (other nodes
    /// see a change within this time).
    pub pricing_cache_ttl: Duration,
}

impl ServiceConfig {
    /// Defaults for everything but the URLs and the ILP address.
    pub fn new(public_url: PublicUrl, auth_server_url: String, ilp_address: IlpAddress) -> Self {
        Self {
            public_url,
            auth_server_url,
            ilp_address,
            quote_lifespan: Duration::from_secs(300),
            incoming_payment_default_expiry: Duration::from_secs(30 * 24 * 3600),
            incoming_payment_max_expiry: Duration::from_secs(365 * 24 * 3600),
            fees: HashMap::new(),
            rates: HashMap::new(),
            rates_url: None,
            rates_cache_ttl: Duration::from_secs(15),
            rates_timeout: Duration::from_secs(5),
            pricing_cache_ttl: Duration::from_secs(2),
        }
    }
}

/// Everything a use case may touch, shared by all requests.
pub struct Services {
    pub store: Arc<dyn Store>,
    pub clock: Arc<dyn Clock>,
    pub random: Arc<dyn Random>,
    pub config: ServiceConfig,
    pub pricing: pricing::Pricing,
    stream_secret: StreamSecret,
}

impl std::fmt::Debug for Services {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Services")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl Services {
    /// Assembles the services; loads (or creates, on first start) the
    /// server secrets kept in the database.
    pub async fn new(
        store: Arc<dyn Store>,
        clock: Arc<dyn Clock>,
        random: Arc<dyn Random>,
        config: ServiceConfig,
    ) -> Result<Self, ServiceError> {
        let stream_secret = secrets::stream_secret(store.as_ref(), random.as_ref()).await?;
        let pricing = pricing::Pricing::new(&config)?;
        Ok(Self {
            store,
            clock,
            random,
            config,
            pricing,
            stream_secret,
        })
    }
}
