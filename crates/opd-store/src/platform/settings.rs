//! Settings (server secrets and the like), and the fees and exchange rates
//! the operator sets through the admin API.

use async_trait::async_trait;
use opd_core::{Asset, AssetCode, Fee, Rate, TenantId, Timestamp};

use crate::platform::db::{num, params, Stmt};
use crate::platform::rows::{self, corrupt, Columns};
use crate::{SqlStore, StoreResult};

/// A fee row as the admin API shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FeeRow {
    /// Whose fee it is.
    pub tenant: TenantId,
    pub asset: Asset,
    pub fee: Fee,
    pub updated_at: Timestamp,
}

/// One exchange rate: `rate` units of `counter` per unit of `base`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RateRow {
    pub base: AssetCode,
    pub counter: AssetCode,
    pub rate: Rate,
    pub updated_at: Timestamp,
}

/// Settings, fees and exchange rates.
#[async_trait]
pub trait SettingsStore: Send + Sync {
    async fn get_setting(&self, key: &str) -> StoreResult<Option<String>>;
    async fn set_setting(&self, key: &str, value: &str) -> StoreResult<()>;
    /// Stores `value` under `key` unless a value is there already, and
    /// returns the value that is stored. Safe when several nodes start at
    /// once: all of them end up with the same value.
    async fn setting_or_insert(&self, key: &str, value: &str) -> StoreResult<String>;

    /// Sets a tenant's fee of an asset.
    async fn set_fee(
        &self,
        tenant: &TenantId,
        asset: &Asset,
        fee: Fee,
        at: Timestamp,
    ) -> StoreResult<()>;
    /// `false` when the tenant had no fee for the asset.
    async fn delete_fee(&self, tenant: &TenantId, asset: &Asset) -> StoreResult<bool>;
    /// Every tenant's fees.
    async fn list_fees(&self) -> StoreResult<Vec<FeeRow>>;
    /// Replaces every rate of `base` with `rates`.
    async fn set_rates(
        &self,
        base: &AssetCode,
        rates: &[(AssetCode, Rate)],
        at: Timestamp,
    ) -> StoreResult<()>;
    /// Sets one rate of `base` (or with `None` removes it), its other
    /// rates kept; `false` when there was no such rate to remove.
    async fn set_rate(
        &self,
        base: &AssetCode,
        counter: &AssetCode,
        rate: Option<Rate>,
        at: Timestamp,
    ) -> StoreResult<bool>;
    async fn list_rates(&self) -> StoreResult<Vec<RateRow>>;
}

static GET_SETTING: Stmt = Stmt::new(&["SELECT value FROM settings WHERE key = ?"]);
static SET_SETTING: Stmt = Stmt::new(&["INSERT INTO settings (key, value) VALUES (?, ?) \
     ON CONFLICT (key) DO UPDATE SET value = excluded.value"]);
static INSERT_SETTING: Stmt =
    Stmt::new(&["INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT (key) DO NOTHING"]);
static SET_FEE: Stmt = Stmt::new(&[
    "INSERT INTO fees (tenant_id, asset_code, asset_scale, fixed, basis_points, updated_at) \
     VALUES (?, ?, ?, ?::numeric, ?, ?) \
     ON CONFLICT (tenant_id, asset_code, asset_scale) DO UPDATE \
     SET fixed = excluded.fixed, basis_points = excluded.basis_points, updated_at = excluded.updated_at",
]);
static DELETE_FEE: Stmt =
    Stmt::new(&["DELETE FROM fees WHERE tenant_id = ? AND asset_code = ? AND asset_scale = ?"]);
static LIST_FEES: Stmt = Stmt::new(&[
    "SELECT tenant_id, asset_code, CAST(asset_scale AS BIGINT) AS asset_scale, \
     CAST(fixed AS TEXT) AS fixed, CAST(basis_points AS BIGINT) AS basis_points, updated_at \
     FROM fees ORDER BY tenant_id, asset_code, asset_scale",
]);
static DELETE_RATES: Stmt = Stmt::new(&["DELETE FROM exchange_rates WHERE base = ?"]);
static INSERT_RATE: Stmt = Stmt::new(&[
    "INSERT INTO exchange_rates (base, counter, rate, updated_at) VALUES (?, ?, ?, ?)",
]);
static UPSERT_RATE: Stmt = Stmt::new(&[
    "INSERT INTO exchange_rates (base, counter, rate, updated_at) VALUES (?, ?, ?, ?) \
     ON CONFLICT (base, counter) DO UPDATE SET rate = excluded.rate, updated_at = excluded.updated_at",
]);
static DELETE_RATE: Stmt =
    Stmt::new(&["DELETE FROM exchange_rates WHERE base = ? AND counter = ?"]);
static LIST_RATES: Stmt = Stmt::new(&[
    "SELECT base, counter, rate, updated_at FROM exchange_rates ORDER BY base, counter",
]);

pub(crate) static STATEMENTS: &[&Stmt] = &[
    &GET_SETTING,
    &SET_SETTING,
    &INSERT_SETTING,
    &SET_FEE,
    &DELETE_FEE,
    &LIST_FEES,
    &DELETE_RATES,
    &INSERT_RATE,
    &UPSERT_RATE,
    &DELETE_RATE,
    &LIST_RATES,
];

fn fee_from_row(row: &impl Columns) -> StoreResult<FeeRow> {
    let bp = u16::try_from(row.int("basis_points")?).map_err(|_| corrupt("basis points"))?;
    let fixed = rows::u64_from_text(&row.text("fixed")?, "fee")?;
    Ok(FeeRow {
        tenant: TenantId::parse(&row.text("tenant_id")?).map_err(|_| corrupt("tenant id"))?,
        asset: rows::asset(&row.text("asset_code")?, row.int("asset_scale")?)?,
        fee: Fee::new(fixed, bp).map_err(|_| corrupt("basis points"))?,
        updated_at: Timestamp::from_unix_millis(row.int("updated_at")?),
    })
}

fn rate_from_row(row: &impl Columns) -> StoreResult<RateRow> {
    let code = |col: &str| -> StoreResult<AssetCode> {
        AssetCode::parse(&row.text(col)?).map_err(|_| corrupt("asset code"))
    };
    Ok(RateRow {
        base: code("base")?,
        counter: code("counter")?,
        rate: rows::rate(&row.text("rate")?)?,
        updated_at: Timestamp::from_unix_millis(row.int("updated_at")?),
    })
}

#[async_trait]
impl SettingsStore for SqlStore {
    async fn get_setting(&self, key: &str) -> StoreResult<Option<String>> {
        self.db
            .read_opt(&GET_SETTING, params![key])
            .await?
            .map(|r| r.text("value"))
            .transpose()
    }

    async fn set_setting(&self, key: &str, value: &str) -> StoreResult<()> {
        self.db.write(&SET_SETTING, params![key, value]).await?;
        Ok(())
    }

    async fn setting_or_insert(&self, key: &str, value: &str) -> StoreResult<String> {
        let mut tx = self.db.begin().await?;
        tx.execute(&INSERT_SETTING, params![key, value]).await?;
        let stored = tx
            .fetch_one(&GET_SETTING, params![key])
            .await?
            .text("value")?;
        tx.commit().await?;
        Ok(stored)
    }

    async fn set_fee(
        &self,
        tenant: &TenantId,
        asset: &Asset,
        fee: Fee,
        at: Timestamp,
    ) -> StoreResult<()> {
        self.db
            .write(
                &SET_FEE,
                &[
                    tenant.as_str().into(),
                    asset.code.as_str().into(),
                    asset.scale.into(),
                    num(fee.fixed),
                    fee.basis_points.into(),
                    at.into(),
                ],
            )
            .await?;
        Ok(())
    }

    async fn delete_fee(&self, tenant: &TenantId, asset: &Asset) -> StoreResult<bool> {
        let n = self
            .db
            .write(
                &DELETE_FEE,
                params![tenant.as_str(), asset.code.as_str(), asset.scale],
            )
            .await?;
        Ok(n > 0)
    }

    async fn list_fees(&self) -> StoreResult<Vec<FeeRow>> {
        self.db
            .read(&LIST_FEES, &[])
            .await?
            .iter()
            .map(fee_from_row)
            .collect()
    }

    async fn set_rates(
        &self,
        base: &AssetCode,
        rates: &[(AssetCode, Rate)],
        at: Timestamp,
    ) -> StoreResult<()> {
        let mut tx = self.db.begin().await?;
        tx.execute(&DELETE_RATES, params![base.as_str()]).await?;
        for (counter, rate) in rates {
            tx.execute(
                &INSERT_RATE,
                params![base.as_str(), counter.as_str(), rate.to_string(), at],
            )
            .await?;
        }
        tx.commit().await
    }

    async fn set_rate(
        &self,
        base: &AssetCode,
        counter: &AssetCode,
        rate: Option<Rate>,
        at: Timestamp,
    ) -> StoreResult<bool> {
        let n = match rate {
            Some(rate) => {
                let params = params![base.as_str(), counter.as_str(), rate.to_string(), at];
                self.db.write(&UPSERT_RATE, params).await?
            }
            None => {
                let params = params![base.as_str(), counter.as_str()];
                self.db.write(&DELETE_RATE, params).await?
            }
        };
        Ok(n > 0)
    }

    async fn list_rates(&self) -> StoreResult<Vec<RateRow>> {
        self.db
            .read(&LIST_RATES, &[])
            .await?
            .iter()
            .map(rate_from_row)
            .collect()
    }
}
