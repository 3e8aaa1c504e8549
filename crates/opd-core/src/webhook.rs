//! Webhook events: what happened, kept in an outbox written in the same
//! transaction as the change it describes, until delivered.

use std::fmt;

use crate::time::Timestamp;

/// The kinds of event opd announces.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EventKind {
    IncomingPaymentCreated,
    IncomingPaymentCompleted,
    IncomingPaymentExpired,
    OutgoingPaymentCreated,
    OutgoingPaymentCompleted,
    OutgoingPaymentFailed,
    PeerLiquidityLow,
    PeerLiquidityHigh,
    /// What a wallet address received over SPSP since the last such event.
    WalletAddressWebMonetization,
}

impl EventKind {
    /// Every kind of event opd sends.
    pub const ALL: [EventKind; 9] = [
        Self::IncomingPaymentCreated,
        Self::IncomingPaymentCompleted,
        Self::IncomingPaymentExpired,
        Self::OutgoingPaymentCreated,
        Self::OutgoingPaymentCompleted,
        Self::OutgoingPaymentFailed,
        Self::PeerLiquidityLow,
        Self::PeerLiquidityHigh,
        Self::WalletAddressWebMonetization,
    ];

    /// The event's `type` on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::IncomingPaymentCreated => "incoming_payment.created",
            Self::IncomingPaymentCompleted => "incoming_payment.completed",
            Self::IncomingPaymentExpired => "incoming_payment.expired",
            Self::OutgoingPaymentCreated => "outgoing_payment.created",
            Self::OutgoingPaymentCompleted => "outgoing_payment.completed",
            Self::OutgoingPaymentFailed => "outgoing_payment.failed",
            Self::PeerLiquidityLow => "peer.liquidity_low",
            Self::PeerLiquidityHigh => "peer.liquidity_high",
            Self::WalletAddressWebMonetization => "wallet_address.web_monetization",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.as_str() == s)
    }
}

impl fmt::Display for EventKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An event in the outbox.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebhookEvent {
    pub id: String,
    /// The tenant whose webhook URL it goes to (the operator's for events
    /// of the server's own, such as a peer's liquidity).
    pub tenant: crate::tenant::TenantId,
    pub kind: EventKind,
    /// The JSON body to deliver.
    pub data: String,
    pub attempts: i64,
    pub next_attempt_at: Timestamp,
    pub delivered_at: Option<Timestamp>,
    pub created_at: Timestamp,
}

#[cfg(test)]
mod tests {
    use super::EventKind;

    #[test]
    fn kinds_display_as_their_names() {
        assert_eq!(
            EventKind::OutgoingPaymentCompleted.to_string(),
            EventKind::OutgoingPaymentCompleted.as_str()
        );
    }

    #[test]
    fn kinds_round_trip() {
        for s in [
            "incoming_payment.created",
            "incoming_payment.completed",
            "incoming_payment.expired",
            "outgoing_payment.created",
            "outgoing_payment.completed",
            "outgoing_payment.failed",
            "peer.liquidity_low",
            "peer.liquidity_high",
            "wallet_address.web_monetization",
        ] {
            assert_eq!(EventKind::parse(s).map(EventKind::as_str), Some(s));
        }
        assert_eq!(EventKind::parse("payment.done"), None);
    }

    /// The operator's guide's list of webhooks (`docs/operating.md`,
    /// "Payments and the ledger") names every kind opd sends, and no other
    /// (`a.b|c` stands for `a.b` and `a.c`).
    #[test]
    fn the_operating_guide_lists_every_webhook() {
        let guide = include_str!("../../../docs/operating.md");
        let start = guide
            .find("- Webhooks (")
            .expect("the operator's guide lists the webhooks");
        let list = &guide[start..];
        let list = &list[..list.find(") are written").expect("the list ends")];
        let mut named: Vec<String> = Vec::new();
        for quoted in list.split('`').skip(1).step_by(2) {
            let (kind, events) = quoted.split_once('.').expect("kind.event");
            named.extend(events.split('|').map(|e| format!("{kind}.{e}")));
        }
        named.sort();
        let mut sent: Vec<String> = EventKind::ALL
            .iter()
            .map(|k| k.as_str().to_owned())
            .collect();
        sent.sort();
        assert_eq!(named, sent);
    }
}
