//! What wallet addresses received over SPSP (paid by their payment
//! pointer, without an incoming payment) after the credit itself (which is
//! `crate::payments::credits`): the `wallet_address.web_monetization`
//! reports, each announcing what arrived since the one before, claimed
//! once across nodes ([`SpspStore::claim_spsp_reports`]); the running
//! totals; and, in external mode, the operator's withdrawal of what a
//! wallet address's SPSP account holds ([`SpspStore::withdraw_spsp`]).

use async_trait::async_trait;
use opd_core::ledger::{AccountKind, LedgerOutcome};
use opd_core::{Asset, Timestamp, WalletAddressId};

use crate::ledger::AccountRef;
use crate::payments::receipts::withdraw_all;
use crate::platform::db::{params, Stmt};
use crate::platform::facts::Uncommitted;
use crate::platform::rows::{self, corrupt, Columns};
use crate::{SqlStore, StoreResult};

/// A `wallet_address.web_monetization` report, claimed: what arrived over
/// SPSP since the last report, and what the wallet address's SPSP account
/// holds for the operator (external mode; 0 in balance mode).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpspReport {
    pub wallet: WalletAddressId,
    pub amount: u64,
    pub to_withdraw: u64,
}

/// What arrived at a wallet address over SPSP in all, and how much of it
/// its reports announced.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SpspTotals {
    pub received: u128,
    pub reported: u128,
    /// When the next report is due (`None`: nothing waits).
    pub report_at: Option<Timestamp>,
}

/// Money received over SPSP, after its credit.
#[async_trait]
pub trait SpspStore: Send + Sync {
    /// Claims up to `limit` wallet addresses whose report is due at `now`
    /// and marks what they received reported, in a transaction that waits
    /// for the reports' events (`Uncommitted::commit`): committed, each
    /// report is made once, whatever the number of nodes (a row another
    /// transaction holds, crediting or claiming it, is skipped and comes
    /// back later); dropped, nothing was claimed. A report announces at
    /// most u64::MAX; the rest is due again at once.
    async fn claim_spsp_reports(
        &self,
        now: Timestamp,
        limit: i64,
    ) -> StoreResult<Uncommitted<'_, Vec<SpspReport>>>;
    /// The wallet address's totals (zero before it received anything).
    async fn spsp_totals(&self, wallet: WalletAddressId) -> StoreResult<SpspTotals>;
    /// Moves everything the wallet address's SPSP account holds out of opd
    /// (to the settlement account), once per idempotency key: a repeat
    /// with the same request digest returns the first transfer, another
    /// request `KeyReused`. A withdrawal of nothing posts (and records)
    /// nothing: its transfer has amount 0, and the key stays unused.
    async fn withdraw_spsp(
        &self,
        wallet: WalletAddressId,
        asset: &Asset,
        key: &str,
        request_digest: &str,
        at: Timestamp,
    ) -> StoreResult<LedgerOutcome>;
}

/// By `spsp_received_due` (report_at). The held balance is read by the
/// accounts' unique index (kind, owner): NULL when there is no SPSP
/// account (balance mode, or nothing received in external mode).
static DUE_REPORTS: Stmt = Stmt::new(&[
    "SELECT CAST(s.wallet_address_id AS TEXT) AS wallet_address_id, \
     CAST(s.received AS TEXT) AS received, CAST(s.reported AS TEXT) AS reported, \
     (SELECT CAST(a.balance AS TEXT) FROM ledger_accounts a WHERE a.kind = 'spsp' \
     AND a.owner_id = CAST(s.wallet_address_id AS TEXT) LIMIT 1) AS held \
     FROM spsp_received s WHERE s.report_at <= ? ORDER BY s.report_at LIMIT ? \
     FOR UPDATE SKIP LOCKED",
]);
/// Whether any report is due: a read, so that the housekeeping pass that
/// finds nothing (the rule) takes no transaction.
static ANY_DUE: Stmt =
    Stmt::new(&["SELECT wallet_address_id FROM spsp_received WHERE report_at <= ? LIMIT 1"]);
static SET_REPORTED: Stmt = Stmt::new(&[
    "UPDATE spsp_received SET reported = ?::numeric, report_at = ?, updated_at = ? \
     WHERE wallet_address_id = ?::uuid",
]);
static TOTALS: Stmt = Stmt::new(&[
    "SELECT CAST(received AS TEXT) AS received, CAST(reported AS TEXT) AS reported, report_at \
     FROM spsp_received WHERE wallet_address_id = ?::uuid",
]);

pub(crate) static STATEMENTS: &[&Stmt] = &[&ANY_DUE, &DUE_REPORTS, &SET_REPORTED, &TOTALS];

fn total(text: &str) -> StoreResult<u128> {
    text.parse::<u128>().map_err(|_| corrupt("an SPSP total"))
}

/// What a report announces of `received` when `reported` was announced
/// before: all of it, up to u64::MAX; and what is announced then.
fn announce(received: u128, reported: u128) -> (u64, u128) {
    let amount = u64::try_from(received.saturating_sub(reported)).unwrap_or(u64::MAX);
    (amount, reported + u128::from(amount))
}

#[async_trait]
impl SpspStore for SqlStore {
    async fn claim_spsp_reports(
        &self,
        now: Timestamp,
        limit: i64,
    ) -> StoreResult<Uncommitted<'_, Vec<SpspReport>>> {
        if self.db.read(&ANY_DUE, params![now]).await?.is_empty() {
            return Ok(Uncommitted::settled(Vec::new()));
        }
        let mut tx = self.db.begin().await?;
        let due = tx.fetch_all(&DUE_REPORTS, params![now, limit]).await?;
        if due.is_empty() {
            return Ok(Uncommitted::settled(Vec::new()));
        }
        let mut reports = Vec::with_capacity(due.len());
        for row in &due {
            let id = row.text("wallet_address_id")?;
            let wallet = WalletAddressId::parse(&id).ok_or_else(|| corrupt("a wallet id"))?;
            let received = total(&row.text("received")?)?;
            let (amount, reported) = announce(received, total(&row.text("reported")?)?);
            // What is left past u64::MAX is due again at once.
            let next = (reported < received).then_some(now);
            let p = params![reported.to_string(), next, now, &id];
            tx.execute(&SET_REPORTED, p).await?;
            let to_withdraw = match row.opt_text("held")? {
                Some(held) => rows::u64_from_text(&held, "SPSP balance")?,
                None => 0,
            };
            if amount > 0 {
                reports.push(SpspReport {
                    wallet,
                    amount,
                    to_withdraw,
                });
            }
        }
        Ok(Uncommitted::open(tx, reports, Vec::new()))
    }

    async fn spsp_totals(&self, wallet: WalletAddressId) -> StoreResult<SpspTotals> {
        let rows = self.db.read(&TOTALS, params![wallet.to_string()]).await?;
        let Some(row) = rows.first() else {
            return Ok(SpspTotals::default());
        };
        Ok(SpspTotals {
            received: total(&row.text("received")?)?,
            reported: total(&row.text("reported")?)?,
            report_at: row.opt_int("report_at")?.map(Timestamp::from_unix_millis),
        })
    }

    async fn withdraw_spsp(
        &self,
        wallet: WalletAddressId,
        asset: &Asset,
        key: &str,
        request_digest: &str,
        at: Timestamp,
    ) -> StoreResult<LedgerOutcome> {
        let id = wallet.to_string();
        let from = AccountRef::new(AccountKind::Spsp, &id, asset);
        let tx = self.db.begin().await?;
        withdraw_all(tx, from, &id, (key, request_digest), at).await
    }
}

#[cfg(test)]
mod tests {
    use super::announce;

    #[test]
    fn a_report_announces_what_arrived_since_the_last_up_to_u64_max() {
        assert_eq!(announce(150, 100), (50, 150));
        assert_eq!(announce(100, 100), (0, 100));
        let past = u128::from(u64::MAX) + 7;
        assert_eq!(announce(past, 0), (u64::MAX, u128::from(u64::MAX)));
        assert_eq!(announce(past, u128::from(u64::MAX)), (7, past));
    }
}
