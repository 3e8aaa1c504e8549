//! Sending fees and exchange rates.
//!
//! Where a value comes from, first match wins:
//! - fee of an asset: the sending wallet address's tenant's, set through
//!   the admin API; else the operator's, set there; else the configuration
//!   file; else no fee;
//! - rate from one asset to another: 1 for the same asset code; else set
//!   through the admin API; else the configuration file; else the rates URL
//!   (the admin API's, else the configuration's), `GET url?base=USD ->
//!   {"base":"USD","rates":{"EUR":0.91}}`, cached per base.
//!
//! Rates are directional (a USD->EUR rate says nothing about EUR->USD: an
//! inverse is not an exact decimal) and are read from the JSON text
//! exactly, never through a float.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use opd_core::{Asset, AssetCode, Fee, Rate, TenantId, Timestamp};
use opd_store::Store;
use serde::Deserialize;

use crate::{ServiceConfig, ServiceError};

/// The settings key of the rates URL set through the admin API.
pub const RATES_URL_SETTING: &str = "rates_url";

/// What the admin API has set, as last read from the store.
#[derive(Debug, Default)]
struct AdminSnapshot {
    fees: HashMap<(TenantId, Asset), Fee>,
    rates: HashMap<(AssetCode, AssetCode), Rate>,
    rates_url: Option<String>,
}

/// Counter asset code -> rate, of one base, as the rates URL gave them.
impl std::fmt::Debug for Pricing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pricing")
            .field("snapshot_ttl", &self.snapshot_ttl)
            .finish_non_exhaustive()
    }
}

type FetchedRates = Arc<HashMap<String, Rate>>;

/// Fee and rate lookups with their caches.
pub struct Pricing {
    /// Where the operator's fees, rates and rates URL are.
    store: Arc<dyn Store>,
    config_fees: HashMap<Asset, Fee>,
    config_rates: HashMap<AssetCode, HashMap<AssetCode, Rate>>,
    config_rates_url: Option<String>,
    snapshot_ttl: Duration,
    snapshot: RwLock<Option<(Instant, std::sync::Arc<AdminSnapshot>)>>,
    fetch_ttl: Duration,
    /// Rates fetched from the rates URL, by (URL, base). Concurrent quotes
    /// for one base share one request; other bases never wait for it.
    fetched: quick_cache::sync::Cache<(String, String), (Instant, FetchedRates)>,
    outbound: crate::platform::outbound::Outbound,
    timeout: Duration,
}

#[derive(Deserialize)]
struct RatesResponse<'a> {
    base: String,
    #[serde(borrow)]
    rates: HashMap<String, &'a serde_json::value::RawValue>,
}

impl Pricing {
    pub fn new(
        config: &ServiceConfig,
        store: Arc<dyn Store>,
        outbound: crate::platform::outbound::Outbound,
    ) -> Result<Self, ServiceError> {
        Ok(Self {
            store,
            config_fees: config.fees.clone(),
            config_rates: config.rates.clone(),
            config_rates_url: config.rates_url.clone(),
            snapshot_ttl: config.pricing_cache_ttl,
            snapshot: RwLock::new(None),
            fetch_ttl: config.rates_cache_ttl,
            fetched: quick_cache::sync::Cache::new(1_000),
            outbound,
            timeout: config.rates_timeout,
        })
    }

    /// Forgets cached admin settings and fetched rates (after an admin
    /// change on this node).
    pub fn invalidate(&self) {
        if let Ok(mut s) = self.snapshot.write() {
            *s = None;
        }
        self.fetched.clear();
    }

    async fn admin(&self) -> Result<std::sync::Arc<AdminSnapshot>, ServiceError> {
        let store = self.store.as_ref();
        if let Ok(guard) = self.snapshot.read() {
            if let Some((at, snap)) = guard.as_ref() {
                if at.elapsed() < self.snapshot_ttl {
                    return Ok(snap.clone());
                }
            }
        }
        let fees = store
            .list_fees()
            .await?
            .into_iter()
            .map(|f| ((f.tenant, f.asset), f.fee))
            .collect();
        let rates = store
            .list_rates()
            .await?
            .into_iter()
            .map(|r| ((r.base, r.counter), r.rate))
            .collect();
        let rates_url = store
            .get_setting(RATES_URL_SETTING)
            .await?
            .filter(|u| !u.is_empty());
        let snap = std::sync::Arc::new(AdminSnapshot {
            fees,
            rates,
            rates_url,
        });
        if let Ok(mut guard) = self.snapshot.write() {
            *guard = Some((Instant::now(), snap.clone()));
        }
        Ok(snap)
    }

    /// The sending fee of an asset for a wallet address of `tenant`.
    pub async fn fee(&self, tenant: &TenantId, asset: &Asset) -> Result<Fee, ServiceError> {
        let admin = self.admin().await?;
        let of = |t: TenantId| admin.fees.get(&(t, asset.clone()));
        Ok(of(tenant.clone())
            .or_else(|| of(TenantId::operator()))
            .or_else(|| self.config_fees.get(asset))
            .copied()
            .unwrap_or(Fee::NONE))
    }

    /// The rate from one asset to another (see the module docs for the
    /// order of sources).
    pub async fn rate(&self, from: &Asset, to: &Asset) -> Result<Rate, ServiceError> {
        if from.code == to.code {
            return Ok(Rate::ONE);
        }
        let admin = self.admin().await?;
        if let Some(rate) = admin.rates.get(&(from.code.clone(), to.code.clone())) {
            return Ok(*rate);
        }
        if let Some(rate) = self
            .config_rates
            .get(&from.code)
            .and_then(|m| m.get(&to.code))
        {
            return Ok(*rate);
        }
        let no_rate = || ServiceError::NoExchangeRate {
            from: from.code.to_string(),
            to: to.code.to_string(),
        };
        let Some(url) = admin
            .rates_url
            .clone()
            .or_else(|| self.config_rates_url.clone())
        else {
            return Err(no_rate());
        };
        let rates = self.fetch(&url, from.code.as_str()).await?;
        rates.get(to.code.as_str()).copied().ok_or_else(no_rate)
    }

    /// The rates of one base from the rates URL, cached for the TTL;
    /// concurrent callers for one base share one request.
    async fn fetch(
        &self,
        url: &str,
        base: &str,
    ) -> Result<Arc<HashMap<String, Rate>>, ServiceError> {
        if self.fetch_ttl.is_zero() {
            return self.fetch_now(url, base).await.map(Arc::new);
        }
        let key = (url.to_owned(), base.to_owned());
        if let Some((at, rates)) = self.fetched.get(&key) {
            if at.elapsed() < self.fetch_ttl {
                return Ok(rates);
            }
            self.fetched.remove(&key);
        }
        let fetch = async {
            let rates = self.fetch_now(url, base).await?;
            Ok::<_, ServiceError>((Instant::now(), Arc::new(rates)))
        };
        let (_, rates) = self.fetched.get_or_insert_async(&key, fetch).await?;
        Ok(rates)
    }

    /// One request to the rates URL.
    async fn fetch_now(
        &self,
        url: &str,
        base: &str,
    ) -> Result<HashMap<String, Rate>, ServiceError> {
        let unavailable = |why: String| ServiceError::RatesUnavailable(why);
        let request = self
            .outbound
            .request(reqwest::Method::GET, url)
            .map_err(|e| unavailable(format!("the rates URL: {e}")))?
            .query(&[("base", base)]);
        let (_, body) = self
            .outbound
            .send(
                request,
                self.timeout,
                crate::platform::outbound::MAX_DOCUMENT_BYTES,
            )
            .await
            .map_err(|e| unavailable(format!("the rates URL: {e}")))?;
        let parsed: RatesResponse<'_> = serde_json::from_slice(&body)
            .map_err(|e| unavailable(format!("the rates URL sent an invalid body: {e}")))?;
        if parsed.base != base {
            return Err(unavailable(format!(
                "the rates URL answered for base {:?} instead of {base:?}",
                parsed.base
            )));
        }
        let mut rates = HashMap::new();
        for (code, raw) in parsed.rates {
            let text = raw.get().trim_matches('"');
            match Rate::parse(text) {
                Ok(rate) => {
                    rates.insert(code, rate);
                }
                Err(_) => {
                    tracing::warn!(rates.base = base, rates.counter = %code, "ignoring an invalid rate from the rates URL")
                }
            }
        }
        Ok(rates)
    }
}

/// Admin use case: sets (or with `None`, removes) a tenant's fee of an
/// asset.
pub async fn set_fee(
    services: &crate::Services,
    tenant: &TenantId,
    asset: &Asset,
    fee: Option<Fee>,
) -> Result<(), ServiceError> {
    let now: Timestamp = services.clock.now();
    match fee {
        Some(fee) => services.store.set_fee(tenant, asset, fee, now).await?,
        None => {
            if !services.store.delete_fee(tenant, asset).await? {
                return Err(ServiceError::NotFound("fee"));
            }
        }
    }
    services
        .changed(crate::platform::changes::Change::Pricing)
        .await;
    Ok(())
}

/// Admin use case: replaces the explicit rates of a base asset code.
pub async fn set_rates(
    services: &crate::Services,
    base: &AssetCode,
    rates: &[(AssetCode, Rate)],
) -> Result<(), ServiceError> {
    services
        .store
        .set_rates(base, rates, services.clock.now())
        .await?;
    services
        .changed(crate::platform::changes::Change::Pricing)
        .await;
    Ok(())
}

/// Admin use case: sets one rate of a base asset code (or with `None`
/// removes it), the base's other rates kept; `false` when there was no
/// such rate to remove.
pub async fn set_rate(
    services: &crate::Services,
    base: &AssetCode,
    counter: &AssetCode,
    rate: Option<Rate>,
) -> Result<bool, ServiceError> {
    let changed = services
        .store
        .set_rate(base, counter, rate, services.clock.now())
        .await?;
    services
        .changed(crate::platform::changes::Change::Pricing)
        .await;
    Ok(changed)
}

/// Admin use case: sets or clears the rates URL.
pub async fn set_rates_url(
    services: &crate::Services,
    url: Option<&str>,
) -> Result<(), ServiceError> {
    if let Some(u) = url {
        let parsed = url::Url::parse(u)
            .map_err(|_| ServiceError::InvalidRequest("ratesUrl must be an absolute URL".into()))?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(ServiceError::InvalidRequest(
                "ratesUrl must be an http(s) URL".into(),
            ));
        }
    }
    services
        .store
        .set_setting(RATES_URL_SETTING, url.unwrap_or(""))
        .await?;
    services
        .changed(crate::platform::changes::Change::Pricing)
        .await;
    Ok(())
}
