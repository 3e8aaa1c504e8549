//! Money received by incoming payments after the credit itself (which is
//! `crate::payments::credits`): in balance mode the
//! credit goes straight to the wallet address, and [`ReceiptStore::settle_received`]
//! moves money still held on incoming payments' accounts (as a database
//! first run in external mode, or written before balance mode, holds it)
//! to their wallet addresses; in external mode the money waits on the incoming
//! payment's account until the operator withdraws it
//! ([`ReceiptStore::withdraw_received`]).

use async_trait::async_trait;
use opd_core::ledger::{AccountKind, LedgerOutcome, PostError, TransferKind};
use opd_core::{IncomingPaymentId, Timestamp};

use crate::ledger::{self, post, repeated, AccountRef, Posting};
use crate::platform::db::{params, Stmt, Tx};
use crate::platform::rows::{self, corrupt, Columns};
use crate::{SqlStore, StoreResult};

/// Received money and where it goes.
#[async_trait]
pub trait ReceiptStore: Send + Sync {
    /// Moves whatever incoming payments' accounts and wallet addresses'
    /// SPSP accounts hold to their wallet addresses (balance mode), one
    /// transaction per account, each taking the balance it locked: running
    /// it again, or on two nodes at once, moves nothing twice. Returns how
    /// many accounts it emptied.
    async fn settle_received(&self, at: Timestamp) -> StoreResult<u64>;
    /// Moves everything the incoming payment's account holds out of opd
    /// (to the settlement account), once per idempotency key: a repeat with
    /// the same request digest returns the first transfer, another request
    /// `KeyReused`. `None` when there is no such incoming payment. A
    /// withdrawal of nothing posts (and records) nothing: its transfer has
    /// amount 0, and the key stays unused.
    async fn withdraw_received(
        &self,
        incoming: IncomingPaymentId,
        key: &str,
        request_digest: &str,
        at: Timestamp,
    ) -> StoreResult<Option<LedgerOutcome>>;
    /// What the incoming payment's account holds: received and not yet
    /// withdrawn (always 0 in balance mode).
    async fn unwithdrawn(&self, incoming: IncomingPaymentId) -> StoreResult<u64>;
}

/// Incoming payments' accounts (by the accounts' unique index on kind).
static INCOMING_ACCOUNTS: Stmt = Stmt::new(&[
    "SELECT id, owner_id, asset_code, CAST(asset_scale AS BIGINT) AS asset_scale, \
     CAST(balance AS TEXT) AS balance FROM ledger_accounts WHERE kind = 'incoming' ORDER BY id",
]);
/// Wallet addresses' SPSP accounts (the same index), owned by the wallet
/// address itself.
static SPSP_ACCOUNTS: Stmt = Stmt::new(&[
    "SELECT id, owner_id, asset_code, CAST(asset_scale AS BIGINT) AS asset_scale, \
     CAST(balance AS TEXT) AS balance FROM ledger_accounts WHERE kind = 'spsp' ORDER BY id",
]);
static INCOMING_PAYMENT: Stmt = Stmt::new(&[
    "SELECT CAST(wallet_address_id AS TEXT) AS wallet_address_id, asset_code, \
     CAST(asset_scale AS BIGINT) AS asset_scale FROM incoming_payments WHERE id = ?::uuid",
]);
static ACCOUNT_BALANCE: Stmt =
    Stmt::new(&["SELECT CAST(balance AS TEXT) AS balance FROM ledger_accounts WHERE id = ?"]);

pub(crate) static STATEMENTS: &[&Stmt] = &[
    &INCOMING_ACCOUNTS,
    &SPSP_ACCOUNTS,
    &INCOMING_PAYMENT,
    &ACCOUNT_BALANCE,
];

/// Moves everything `from` holds (received money: an incoming payment's
/// account, a wallet address's SPSP account) to the settlement account
/// under an idempotency key, committing when it posted: a repeat with the
/// same request digest answers the first transfer, another request
/// `KeyReused`; nothing held posts (and records) nothing, with amount 0.
pub(crate) async fn withdraw_all(
    mut tx: Tx<'_>,
    from: AccountRef<'_>,
    reference: &str,
    (key, request_digest): (&str, &str),
    at: Timestamp,
) -> StoreResult<LedgerOutcome> {
    // The balance locked first: a concurrent request with the same key
    // waits here (PostgreSQL), then finds the first one's transfer
    // below and answers it, rather than withdrawing what is left.
    let amount = locked_balance(&mut tx, &from.id()).await?;
    if let Some(repeat) = repeated(&mut tx, key, request_digest).await? {
        return Ok(repeat);
    }
    let posting = Posting {
        debit: from,
        credit: AccountRef::settlement(from.asset),
        amount,
        kind: TransferKind::Withdrawal,
        reference: Some(reference),
        key: Some((key, request_digest)),
        at,
    };
    match post(&mut tx, posting).await? {
        Ok(t) => {
            tx.commit().await?;
            Ok(LedgerOutcome::Posted(t))
        }
        // The whole balance, locked: neither can happen.
        Err(PostError::Insufficient { .. }) | Err(PostError::Overflow) => {
            Err(corrupt("a withdrawal of received money"))
        }
    }
}

/// The balance of `account` locked for this transaction, 0 when it does
/// not exist (nothing was ever received).
pub(crate) async fn locked_balance(tx: &mut Tx<'_>, account: &str) -> StoreResult<u64> {
    if !ledger::account_exists(tx, account).await? {
        return Ok(0);
    }
    let balance = ledger::balance_of(tx, account).await?;
    u64::try_from(balance).map_err(|_| corrupt("received money's balance"))
}

impl SqlStore {
    /// [`ReceiptStore::settle_received`] of the SPSP accounts.
    async fn settle_spsp(&self, at: Timestamp) -> StoreResult<u64> {
        let rows = self.db.read(&SPSP_ACCOUNTS, &[]).await?;
        let mut settled = 0;
        for row in &rows {
            if row.text("balance")? == "0" {
                continue;
            }
            let (account, wallet) = (row.text("id")?, row.text("owner_id")?);
            let asset = rows::asset(&row.text("asset_code")?, row.int("asset_scale")?)?;
            let mut tx = self.db.begin().await?;
            let amount = locked_balance(&mut tx, &account).await?;
            let posting = Posting {
                debit: AccountRef::new(AccountKind::Spsp, &wallet, &asset),
                credit: AccountRef::new(AccountKind::Wallet, &wallet, &asset),
                amount,
                kind: TransferKind::Settle,
                reference: Some(&wallet),
                key: None,
                at,
            };
            if amount == 0 || post(&mut tx, posting).await?.is_err() {
                // Nothing left, or the wallet would pass u64::MAX: left
                // where it is (`opd check` reports it).
                continue;
            }
            tx.commit().await?;
            settled += 1;
        }
        Ok(settled)
    }
}

#[async_trait]
impl ReceiptStore for SqlStore {
    async fn settle_received(&self, at: Timestamp) -> StoreResult<u64> {
        let rows = self.db.read(&INCOMING_ACCOUNTS, &[]).await?;
        let mut settled = 0;
        for row in &rows {
            // Empty accounts are the rule: skip them without a transaction.
            if row.text("balance")? == "0" {
                continue;
            }
            let account = row.text("id")?;
            let incoming = row.text("owner_id")?;
            let asset = rows::asset(&row.text("asset_code")?, row.int("asset_scale")?)?;
            let mut tx = self.db.begin().await?;
            let Some(payment) = tx.fetch_opt(&INCOMING_PAYMENT, params![&incoming]).await? else {
                // Money on an account whose payment is gone has no owner
                // to go to: `opd check` keeps reporting it.
                continue;
            };
            let wallet = payment.text("wallet_address_id")?;
            let amount = locked_balance(&mut tx, &account).await?;
            if amount == 0 {
                continue;
            }
            let posting = Posting {
                debit: AccountRef::new(AccountKind::Incoming, &incoming, &asset),
                credit: AccountRef::new(AccountKind::Wallet, &wallet, &asset),
                amount,
                kind: TransferKind::Settle,
                reference: Some(&incoming),
                key: None,
                at,
            };
            if post(&mut tx, posting).await?.is_err() {
                // The wallet would pass u64::MAX: leave it where it is,
                // reported by `opd check`, rather than fail the start.
                tracing::warn!(%account, "received money left on the incoming payment: the wallet address's balance would overflow");
                continue;
            }
            tx.commit().await?;
            settled += 1;
        }
        Ok(settled + self.settle_spsp(at).await?)
    }

    async fn withdraw_received(
        &self,
        incoming: IncomingPaymentId,
        key: &str,
        request_digest: &str,
        at: Timestamp,
    ) -> StoreResult<Option<LedgerOutcome>> {
        let id = incoming.to_string();
        let mut tx = self.db.begin().await?;
        let Some(payment) = tx.fetch_opt(&INCOMING_PAYMENT, params![&id]).await? else {
            return Ok(None);
        };
        let asset = rows::asset(&payment.text("asset_code")?, payment.int("asset_scale")?)?;
        let from = AccountRef::new(AccountKind::Incoming, &id, &asset);
        let key = (key, request_digest);
        Ok(Some(withdraw_all(tx, from, &id, key, at).await?))
    }

    async fn unwithdrawn(&self, incoming: IncomingPaymentId) -> StoreResult<u64> {
        let id = incoming.to_string();
        let rows = self.db.read(&INCOMING_PAYMENT, params![&id]).await?;
        let Some(payment) = rows.first() else {
            return Ok(0);
        };
        let asset = rows::asset(&payment.text("asset_code")?, payment.int("asset_scale")?)?;
        let account = AccountKind::Incoming.account_id(&id, &asset);
        let rows = self.db.read(&ACCOUNT_BALANCE, params![&account]).await?;
        match rows.first() {
            None => Ok(0),
            Some(r) => rows::u64_from_text(&r.text("balance")?, "balance"),
        }
    }
}
