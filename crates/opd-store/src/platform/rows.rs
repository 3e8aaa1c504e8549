//! Decoding shared by both backends: rows back into domain types (both
//! schemas read back as the same text and integer columns), failing with
//! `Corrupt` instead of panicking.

use opd_core::incoming_payment::IncomingPayment;
use opd_core::money::parse_u64_canonical;
use opd_core::quote::Quote;
use opd_core::wallet_address::{PublicKey, WalletAddress, WalletAddressKey, WalletAddressPath};
use opd_core::{
    Amount, Asset, GrantId, IncomingPaymentId, QuoteId, Rate, Timestamp, WalletAddressId,
};
use uuid::Uuid;

use crate::{AccessTokenRecord, GrantRecord, StoreError, StoreResult};

/// The column reads the decoders need, for either backend's rows.
pub(crate) trait Columns {
    fn text(&self, col: &str) -> StoreResult<String>;
    fn opt_text(&self, col: &str) -> StoreResult<Option<String>>;
    fn int(&self, col: &str) -> StoreResult<i64>;
    fn opt_int(&self, col: &str) -> StoreResult<Option<i64>>;
    fn flag(&self, col: &str) -> StoreResult<bool>;
}

fn id(row: &impl Columns, col: &str) -> StoreResult<Uuid> {
    uuid_from_text(&row.text(col)?)
}

fn time(row: &impl Columns, col: &str) -> StoreResult<Timestamp> {
    Ok(Timestamp::from_unix_millis(row.int(col)?))
}

fn opt_time(row: &impl Columns, col: &str) -> StoreResult<Option<Timestamp>> {
    Ok(row.opt_int(col)?.map(Timestamp::from_unix_millis))
}

pub(crate) fn wallet_from_row(row: &impl Columns) -> StoreResult<WalletAddress> {
    Ok(WalletAddress {
        id: WalletAddressId::from_uuid(id(row, "id")?),
        path: WalletAddressPath::parse_any(&row.text("path")?)
            .map_err(|_| corrupt("wallet address path"))?,
        asset: asset(&row.text("asset_code")?, row.int("asset_scale")?)?,
        public_name: row.opt_text("public_name")?,
        created_at: time(row, "created_at")?,
        deactivated_at: opt_time(row, "deactivated_at")?,
    })
}

pub(crate) fn key_from_row(row: &impl Columns) -> StoreResult<WalletAddressKey> {
    Ok(WalletAddressKey {
        wallet_address_id: WalletAddressId::from_uuid(id(row, "wallet_address_id")?),
        key: PublicKey {
            kid: row.text("kid")?,
            x: row.text("x")?,
        },
        created_at: time(row, "created_at")?,
        revoked_at: opt_time(row, "revoked_at")?,
    })
}

pub(crate) fn incoming_from_row(row: &impl Columns) -> StoreResult<IncomingPayment> {
    Ok(IncomingPayment {
        id: IncomingPaymentId::from_uuid(id(row, "id")?),
        wallet_address_id: WalletAddressId::from_uuid(id(row, "wallet_address_id")?),
        asset: asset(&row.text("asset_code")?, row.int("asset_scale")?)?,
        incoming_amount: opt_u64_from_text(row.opt_text("incoming_amount")?, "incoming_amount")?,
        received_amount: u64_from_text(&row.text("received_amount")?, "received_amount")?,
        completed: row.flag("completed")?,
        expires_at: time(row, "expires_at")?,
        metadata: metadata_from_text(row.opt_text("metadata")?)?,
        client: row.opt_text("client")?,
        client_network: row.opt_text("client_network")?,
        created_at: time(row, "created_at")?,
        updated_at: time(row, "updated_at")?,
    })
}

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

pub(crate) fn grant_from_row(row: &impl Columns) -> StoreResult<GrantRecord> {
    Ok(GrantRecord {
        id: GrantId::from_uuid(id(row, "id")?),
        state: row.text("state")?,
        finalization: row.opt_text("finalization")?,
        client_wallet_address: row.opt_text("client_wallet_address")?,
        client_jwk: row.opt_text("client_jwk")?,
        access: row.text("access")?,
        continue_id: row.text("continue_id")?,
        continue_token_digest: row.text("continue_token_digest")?,
        interact_id: row.opt_text("interact_id")?,
        interact_nonce: row.opt_text("interact_nonce")?,
        interact_ref: row.opt_text("interact_ref")?,
        interaction_state: row.opt_text("interaction_state")?,
        interaction_expires_at: opt_time(row, "interaction_expires_at")?,
        finish_uri: row.opt_text("finish_uri")?,
        client_nonce: row.opt_text("client_nonce")?,
        wallet_address_id: row
            .opt_text("wallet_address_id")?
            .map(|s| uuid_from_text(&s).map(WalletAddressId::from_uuid))
            .transpose()?,
        last_continued_at: time(row, "last_continued_at")?,
        version: row.int("version")?,
        created_at: time(row, "created_at")?,
        updated_at: time(row, "updated_at")?,
    })
}

pub(crate) fn token_from_row(row: &impl Columns) -> StoreResult<AccessTokenRecord> {
    Ok(AccessTokenRecord {
        digest: row.text("digest")?,
        management_id: row.text("management_id")?,
        grant_id: GrantId::from_uuid(id(row, "grant_id")?),
        access: row.text("access")?,
        expires_at: time(row, "expires_at")?,
        revoked_at: opt_time(row, "revoked_at")?,
        created_at: time(row, "created_at")?,
    })
}

pub(crate) fn corrupt(what: &str) -> StoreError {
    StoreError::Corrupt(what.to_owned())
}

pub(crate) fn u64_from_text(s: &str, what: &str) -> Result<u64, StoreError> {
    parse_u64_canonical(s).map_err(|_| corrupt(what))
}

pub(crate) fn opt_u64_from_text(s: Option<String>, what: &str) -> Result<Option<u64>, StoreError> {
    s.map(|s| u64_from_text(&s, what)).transpose()
}

pub(crate) fn asset(code: &str, scale: i64) -> Result<Asset, StoreError> {
    Asset::parse(code, scale).map_err(|_| corrupt("asset"))
}

pub(crate) fn rate(s: &str) -> Result<Rate, StoreError> {
    Rate::parse(s).map_err(|_| corrupt("exchange rate"))
}

pub(crate) fn uuid_from_text(s: &str) -> Result<Uuid, StoreError> {
    Uuid::try_parse(s).map_err(|_| corrupt("id"))
}

pub(crate) fn metadata_from_text(
    s: Option<String>,
) -> Result<Option<serde_json::Map<String, serde_json::Value>>, StoreError> {
    s.map(|s| serde_json::from_str(&s).map_err(|_| corrupt("metadata")))
        .transpose()
}

pub(crate) fn metadata_to_text(
    m: &Option<serde_json::Map<String, serde_json::Value>>,
) -> Option<String> {
    m.as_ref()
        .map(|m| serde_json::Value::Object(m.clone()).to_string())
}
