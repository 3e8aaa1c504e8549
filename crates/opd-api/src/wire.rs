//! Wire types: the JSON bodies exactly as the Open Payments spec has them
//! (camelCase, no `null`, optional fields left out), and their conversion
//! from domain values.

use opd_core::pagination::Page;
use opd_core::quote::Quote;
use opd_core::wallet_address::{PublicKey, WalletAddress};
use opd_core::{Amount, AmountWire};
use opd_service::PublicUrl;
use serde::{Deserialize, Serialize};

pub use opd_core::requests::{
    CreateIncomingPaymentRequest, CreateOutgoingPaymentRequest, CreateQuoteRequest,
};
/// The Open Payments views of payments, shared with the webhooks.
pub use opd_service::views::{IlpMethodWire, IncomingPaymentWire, OutgoingPaymentWire};

/// `GET /{wallet address}`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WalletAddressDoc {
    pub id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub public_name: Option<String>,
    pub asset_code: String,
    pub asset_scale: u8,
    pub auth_server: String,
    pub resource_server: String,
}

impl WalletAddressDoc {
    pub fn new(w: &WalletAddress, public_url: &PublicUrl, auth_server: &str) -> Self {
        Self {
            id: public_url.wallet_address(&w.path),
            public_name: w.public_name.clone(),
            asset_code: w.asset.code.to_string(),
            asset_scale: w.asset.scale,
            auth_server: auth_server.to_owned(),
            resource_server: public_url.as_str().to_owned(),
        }
    }
}

/// One key of a JWKS.
#[derive(Debug, Serialize, Deserialize, Clone, PartialEq, Eq)]
pub struct JwkWire {
    pub kid: String,
    pub alg: String,
    #[serde(rename = "use")]
    pub use_: String,
    pub kty: String,
    pub crv: String,
    pub x: String,
}

impl From<&PublicKey> for JwkWire {
    fn from(k: &PublicKey) -> Self {
        Self {
            kid: k.kid.clone(),
            alg: "EdDSA".into(),
            use_: "sig".into(),
            kty: "OKP".into(),
            crv: "Ed25519".into(),
            x: k.x.clone(),
        }
    }
}

/// `GET /{wallet address}/jwks.json`.
#[derive(Debug, Serialize)]
pub struct Jwks {
    pub keys: Vec<JwkWire>,
}

/// `GET /incoming-payments/{id}` without authorization.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PublicIncomingPaymentWire {
    pub received_amount: AmountWire,
    pub auth_server: String,
}

/// A quote.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct QuoteWire {
    pub id: String,
    pub wallet_address: String,
    pub receiver: String,
    pub receive_amount: AmountWire,
    pub debit_amount: AmountWire,
    pub method: &'static str,
    pub created_at: String,
    pub expires_at: String,
}

impl QuoteWire {
    pub fn new(q: &Quote, wallet: &WalletAddress, public_url: &PublicUrl) -> Self {
        Self {
            id: public_url.quote(q.id),
            wallet_address: public_url.wallet_address(&wallet.path),
            receiver: q.receiver.clone(),
            receive_amount: AmountWire::from(&q.receive_amount),
            debit_amount: AmountWire::from(&q.debit_amount),
            method: "ilp",
            created_at: q.created_at.to_rfc3339(),
            expires_at: q.expires_at.to_rfc3339(),
        }
    }
}

/// `pagination` of a list response.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PageInfo {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_cursor: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub end_cursor: Option<String>,
    pub has_next_page: bool,
    pub has_previous_page: bool,
}

/// A list response.
#[derive(Debug, Serialize)]
pub struct ListWire<T> {
    pub pagination: PageInfo,
    pub result: Vec<T>,
}

impl<T> ListWire<T> {
    pub fn new<U>(page: &Page<U>, id: impl Fn(&U) -> String, item: impl Fn(&U) -> T) -> Self {
        Self {
            pagination: PageInfo {
                start_cursor: page.items.first().map(&id),
                end_cursor: page.items.last().map(&id),
                has_next_page: page.has_next_page,
                has_previous_page: page.has_previous_page,
            },
            result: page.items.iter().map(item).collect(),
        }
    }
}

/// Parses a wire amount, naming the field in the error.
pub fn parse_amount(field: &str, wire: &AmountWire) -> Result<Amount, crate::error::ApiError> {
    Amount::try_from(wire).map_err(|e| {
        crate::error::ApiError::new(
            axum::http::StatusCode::BAD_REQUEST,
            "invalid_amount",
            format!("{field}: {e}"),
        )
    })
}

/// `GET /outgoing-payment-grant`: both keys always present, `null` when
/// nothing was spent.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GrantSpentWire {
    pub spent_debit_amount: Option<AmountWire>,
    pub spent_receive_amount: Option<AmountWire>,
}
