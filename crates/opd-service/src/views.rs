//! The Open Payments JSON view of incoming and outgoing payments, exactly
//! as the spec has them (camelCase, no `null`, optional fields left out):
//! the one view the API answers with and the webhooks carry, so a
//! webhook's `data` reads like the resource a client would `GET`.

use opd_core::incoming_payment::{IncomingPayment, Metadata};
use opd_core::outgoing_payment::OutgoingPayment;
use opd_core::wallet_address::WalletAddress;
use opd_core::AmountWire;
use serde::Serialize;

use crate::PublicUrl;

/// An ILP payment method of an incoming payment: its STREAM credentials
/// (the shared secret in unpadded base64url).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct IlpMethodWire {
    #[serde(rename = "type")]
    pub type_: &'static str,
    pub ilp_address: String,
    pub shared_secret: String,
}

/// An incoming payment; `methods` only where the spec has them (create and
/// authenticated GET).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct IncomingPaymentWire {
    pub id: String,
    pub wallet_address: String,
    pub completed: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub incoming_amount: Option<AmountWire>,
    pub received_amount: AmountWire,
    pub expires_at: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
    pub created_at: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub methods: Option<Vec<IlpMethodWire>>,
}

impl IncomingPaymentWire {
    pub fn new(
        p: &IncomingPayment,
        wallet: &WalletAddress,
        public_url: &PublicUrl,
        methods: Option<Vec<IlpMethodWire>>,
    ) -> Self {
        Self {
            id: public_url.incoming_payment(p.id),
            wallet_address: public_url.wallet_address(&wallet.path),
            completed: p.completed,
            incoming_amount: p.incoming_amount().as_ref().map(AmountWire::from),
            received_amount: AmountWire::from(&p.received_amount()),
            expires_at: p.expires_at.to_rfc3339(),
            metadata: p.metadata.clone(),
            created_at: p.created_at.to_rfc3339(),
            methods,
        }
    }
}

/// An outgoing payment (`grantSpent*` only in the create response).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OutgoingPaymentWire {
    pub id: String,
    pub wallet_address: String,
    pub quote_id: String,
    pub failed: bool,
    pub receiver: String,
    pub receive_amount: AmountWire,
    pub debit_amount: AmountWire,
    pub sent_amount: AmountWire,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub grant_spent_debit_amount: Option<AmountWire>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub grant_spent_receive_amount: Option<AmountWire>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
    pub created_at: String,
}

impl OutgoingPaymentWire {
    pub fn new(p: &OutgoingPayment, wallet: &WalletAddress, public_url: &PublicUrl) -> Self {
        Self {
            id: public_url.outgoing_payment(p.id),
            wallet_address: public_url.wallet_address(&wallet.path),
            quote_id: public_url.quote(p.quote_id),
            failed: p.state.is_failed(),
            receiver: p.receiver.clone(),
            receive_amount: AmountWire::from(&p.receive),
            debit_amount: AmountWire::from(&p.debit),
            sent_amount: AmountWire::from(&p.sent_amount()),
            grant_spent_debit_amount: None,
            grant_spent_receive_amount: None,
            metadata: p.metadata.clone(),
            created_at: p.created_at.to_rfc3339(),
        }
    }
}
