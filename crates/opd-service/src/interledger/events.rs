//! The webhook events of Interledger money movements: a peer's liquidity
//! crossing its thresholds, and an incoming payment completed by a packet.
//! The store's transactions call these builders, so each event commits
//! with the movement that caused it.

use opd_core::peer::{LiquidityZone, Peer};
use opd_core::webhook::{EventKind, WebhookEvent};
use opd_store::{LiquidityEvents, ReceiveEvents};

use crate::webhooks::{event, incoming_event_data};
use crate::Services;

/// The `peer.liquidity_*` events of liquidity movements.
pub(crate) struct Events<'a> {
    pub(crate) services: &'a Services,
}

impl LiquidityEvents for Events<'_> {
    fn liquidity(&self, peer: &Peer, zone: LiquidityZone, balance: u64) -> WebhookEvent {
        liquidity_event(self.services, peer, zone, balance)
    }
}

/// The events of an ILP credit to an incoming payment of `wallet` (looked
/// up before the transaction).
pub(crate) struct ReceiveWithWallet<'a> {
    pub(crate) services: &'a Services,
    pub(crate) wallet: opd_core::wallet_address::WalletAddress,
}

impl LiquidityEvents for ReceiveWithWallet<'_> {
    fn liquidity(&self, peer: &Peer, zone: LiquidityZone, balance: u64) -> WebhookEvent {
        liquidity_event(self.services, peer, zone, balance)
    }
}

impl ReceiveEvents for ReceiveWithWallet<'_> {
    fn completed(
        &self,
        payment: &opd_core::incoming_payment::IncomingPayment,
        to_withdraw: u64,
    ) -> WebhookEvent {
        let mut data = incoming_event_data(self.services, payment, &self.wallet);
        crate::webhooks::add_withdrawal(&mut data, payment, to_withdraw);
        event(self.services, EventKind::IncomingPaymentCompleted, data)
    }

    fn as_liquidity(&self) -> &dyn LiquidityEvents {
        self
    }
}

fn liquidity_event(
    services: &Services,
    peer: &Peer,
    zone: LiquidityZone,
    balance: u64,
) -> WebhookEvent {
    let (kind, threshold) = match zone {
        LiquidityZone::Low => (EventKind::PeerLiquidityLow, peer.liquidity_low),
        LiquidityZone::High => (EventKind::PeerLiquidityHigh, peer.liquidity_high),
    };
    let data = serde_json::json!({
        "id": peer.id.to_string(),
        "name": peer.name,
        "asset": {"code": peer.asset.code.as_str(), "scale": peer.asset.scale},
        "liquidityThreshold": threshold.map(|t| t.to_string()),
        "balance": balance.to_string(),
    });
    event(services, kind, data)
}
