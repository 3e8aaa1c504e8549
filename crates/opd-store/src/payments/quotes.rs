//! Quotes.

use async_trait::async_trait;
use opd_core::quote::Quote;
use opd_core::{Amount, QuoteId, Timestamp, WalletAddressId};

use crate::access::claim::{self, RequestClaim};
use crate::platform::db::{num, params, Stmt};
use crate::platform::rows::{asset, id, time, u64_from_text, Columns};
use crate::{SqlStore, StoreResult};

/// Quotes.
#[async_trait]
pub trait QuoteStore: Send + Sync {
    /// Stores a new quote; `claim` (the request's replay claim, see
    /// [`crate::claim`]) is written with it.
    async fn create_quote(&self, quote: &Quote, claim: Option<&RequestClaim>) -> StoreResult<()>;
    async fn get_quote(&self, id: QuoteId) -> StoreResult<Option<Quote>>;
    /// The newest quote of `wallet` to `receiver` not expired at `now`,
    /// among the wallet address's newest `RECENT_QUOTES` (50) (a bounded read
    /// for the consent page, which names what the receiver gets).
    async fn latest_quote_to(
        &self,
        wallet: WalletAddressId,
        receiver: &str,
        now: Timestamp,
    ) -> StoreResult<Option<Quote>>;
}

/// How many of a wallet address's newest quotes [`QuoteStore::latest_quote_to`]
/// looks through.
pub const RECENT_QUOTES: i64 = 50;

const QUOTE_COLUMNS: &str = "CAST(id AS TEXT) AS id, \
    CAST(wallet_address_id AS TEXT) AS wallet_address_id, receiver, \
    CAST(debit_value AS TEXT) AS debit_value, debit_asset_code, \
    CAST(debit_asset_scale AS BIGINT) AS debit_asset_scale, \
    CAST(receive_value AS TEXT) AS receive_value, receive_asset_code, \
    CAST(receive_asset_scale AS BIGINT) AS receive_asset_scale, CAST(fee AS TEXT) AS fee, \
    CAST(debit_minus_fees AS TEXT) AS debit_minus_fees, client, created_at, expires_at";

static INSERT_QUOTE: Stmt = Stmt::new(&[
    "INSERT INTO quotes (id, wallet_address_id, receiver, debit_value, debit_asset_code, \
     debit_asset_scale, receive_value, receive_asset_code, receive_asset_scale, fee, \
     debit_minus_fees, client, created_at, expires_at) \
     VALUES (?::uuid, ?::uuid, ?, ?::numeric, ?, ?, ?::numeric, ?, ?, ?::numeric, ?::numeric, ?, ?, ?)",
]);
static QUOTE_BY_ID: Stmt =
    Stmt::new(&["SELECT ", QUOTE_COLUMNS, " FROM quotes WHERE id = ?::uuid"]);

// Ids are time-ordered: the newest quotes of a wallet address are the end
// of its `quotes_by_wallet` index.
static LATEST_QUOTE_TO: Stmt = Stmt::new(&[
    "SELECT * FROM (SELECT ",
    QUOTE_COLUMNS,
    " FROM quotes WHERE wallet_address_id = ?::uuid ORDER BY id DESC LIMIT ?) recent \
     WHERE receiver = ? AND expires_at > ? ORDER BY id DESC LIMIT 1",
]);

pub(crate) static STATEMENTS: &[&Stmt] = &[&INSERT_QUOTE, &QUOTE_BY_ID, &LATEST_QUOTE_TO];

pub(crate) fn quote_from_row(row: &impl Columns) -> StoreResult<Quote> {
    let amount = |prefix: &str| -> StoreResult<Amount> {
        let value = row.text(&format!("{prefix}_value"))?;
        let code = row.text(&format!("{prefix}_asset_code"))?;
        let scale = row.int(&format!("{prefix}_asset_scale"))?;
        Ok(Amount::new(
            u64_from_text(&value, prefix)?,
            asset(&code, scale)?,
        ))
    };
    Ok(Quote {
        id: QuoteId::from_uuid(id(row, "id")?),
        wallet_address_id: WalletAddressId::from_uuid(id(row, "wallet_address_id")?),
        receiver: row.text("receiver")?,
        debit_amount: amount("debit")?,
        receive_amount: amount("receive")?,
        fee: u64_from_text(&row.text("fee")?, "fee")?,
        debit_minus_fees: u64_from_text(&row.text("debit_minus_fees")?, "debit_minus_fees")?,
        client: row.opt_text("client")?,
        created_at: time(row, "created_at")?,
        expires_at: time(row, "expires_at")?,
    })
}

#[async_trait]
impl QuoteStore for SqlStore {
    async fn create_quote(&self, q: &Quote, claim: Option<&RequestClaim>) -> StoreResult<()> {
        let params = &[
            q.id.to_string().into(),
            q.wallet_address_id.to_string().into(),
            (&q.receiver).into(),
            num(q.debit_amount.value),
            q.debit_amount.asset.code.as_str().into(),
            q.debit_amount.asset.scale.into(),
            num(q.receive_amount.value),
            q.receive_amount.asset.code.as_str().into(),
            q.receive_amount.asset.scale.into(),
            num(q.fee),
            num(q.debit_minus_fees),
            (&q.client).into(),
            q.created_at.into(),
            q.expires_at.into(),
        ];
        claim::write(&self.db, claim, &INSERT_QUOTE, params).await?;
        Ok(())
    }

    async fn get_quote(&self, id: QuoteId) -> StoreResult<Option<Quote>> {
        let row = self
            .db
            .read_opt(&QUOTE_BY_ID, params![id.to_string()])
            .await?;
        row.as_ref().map(quote_from_row).transpose()
    }

    async fn latest_quote_to(
        &self,
        wallet: WalletAddressId,
        receiver: &str,
        now: Timestamp,
    ) -> StoreResult<Option<Quote>> {
        let row = self
            .db
            .read_opt(
                &LATEST_QUOTE_TO,
                params![wallet.to_string(), RECENT_QUOTES, receiver, now],
            )
            .await?;
        row.as_ref().map(quote_from_row).transpose()
    }
}
