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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn optional_members_are_read_or_refused_as_null() {
        let body =
            r#"{"walletAddress":"https://w.example/alice","expiresAt":"2030-01-01T00:00:00Z"}"#;
        let r: CreateIncomingPaymentRequest = serde_json::from_str(body).unwrap();
        assert_eq!(r.expires_at.as_deref(), Some("2030-01-01T00:00:00Z"));
        assert!(r.incoming_amount.is_none());
        let null = r#"{"walletAddress":"https://w.example/alice","expiresAt":null}"#;
        assert!(serde_json::from_str::<CreateIncomingPaymentRequest>(null).is_err());
    }
}
