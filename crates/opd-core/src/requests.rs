//! The Open Payments request bodies as they arrive (camelCase, unknown
//! fields refused, `null` refused where a field is optional), before their
//! values are parsed into domain types by the handlers. They live here, in
//! the pure core, so the fuzz targets (`fuzz/`) read exactly what the
//! server reads.

use serde::Deserialize;

use crate::incoming_payment::Metadata;
use crate::AmountWire;

/// Rejects JSON `null` where a value is optional but must have a type when
/// present: `#[serde(default, deserialize_with = "non_null")]`.
pub fn non_null<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::Deserialize<'de>,
{
    T::deserialize(d).map(Some)
}

/// `POST /incoming-payments`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CreateIncomingPaymentRequest {
    pub wallet_address: String,
    #[serde(default, deserialize_with = "non_null")]
    pub incoming_amount: Option<AmountWire>,
    #[serde(default, deserialize_with = "non_null")]
    pub expires_at: Option<String>,
    #[serde(default, deserialize_with = "non_null")]
    pub metadata: Option<Metadata>,
}

/// `POST /quotes` (all three variants).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CreateQuoteRequest {
    pub wallet_address: String,
    pub receiver: String,
    pub method: String,
    #[serde(default, deserialize_with = "non_null")]
    pub debit_amount: Option<AmountWire>,
    #[serde(default, deserialize_with = "non_null")]
    pub receive_amount: Option<AmountWire>,
}

/// `POST /outgoing-payments` (both variants).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CreateOutgoingPaymentRequest {
    pub wallet_address: String,
    #[serde(default, deserialize_with = "non_null")]
    pub quote_id: Option<String>,
    #[serde(default, deserialize_with = "non_null")]
    pub incoming_payment: Option<String>,
    #[serde(default, deserialize_with = "non_null")]
    pub debit_amount: Option<AmountWire>,
    #[serde(default, deserialize_with = "non_null")]
    pub metadata: Option<Metadata>,
}
