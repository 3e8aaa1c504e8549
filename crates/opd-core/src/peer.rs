//! Interledger peers: the other servers this one exchanges ILP packets
//! with over ILP-over-HTTP, and the liquidity each may use.
//!
//! A peer's liquidity account holds what that peer may send us before it
//! settles with the operator (prefunding or a credit line, deposited
//! through the admin API). A packet from the peer that opd fulfils moves
//! its amount from that account to the receiving incoming payment; a packet
//! larger than what is left is rejected (T04), never credited.

use crate::ids::PeerId;
use crate::money::Asset;
use crate::time::Timestamp;

/// A peer as stored. ILP addresses and routes are kept as the validated
/// text the service layer parsed (`opd_ilp::IlpAddress`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Peer {
    pub id: PeerId,
    /// Unique, for people and logs.
    pub name: String,
    /// The peer's own ILP address (what IL-DCP hands it).
    pub static_ilp_address: String,
    /// The one asset of this peering: packet amounts are in it.
    pub asset: Asset,
    /// Larger packets from the peer are rejected with F08.
    pub max_packet_amount: Option<u64>,
    /// ILP address prefixes reached through this peer.
    pub routes: Vec<String>,
    /// Where and how opd sends packets to the peer.
    pub outgoing: Option<PeerOutgoing>,
    /// `peer.liquidity_low` when the balance falls to or below it.
    pub liquidity_low: Option<u64>,
    /// `peer.liquidity_high` when the balance rises to or above it.
    pub liquidity_high: Option<u64>,
    /// How many incoming bearer tokens the peer has (their digests are
    /// stored apart, never the tokens).
    pub incoming_tokens: u32,
    /// Who created it: the auto-peering listener may renew only its own.
    pub created_by: PeerOrigin,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

/// How a peer came to exist.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PeerOrigin {
    /// Through the admin API, the CLI or the dashboard.
    Operator,
    /// By an unauthenticated auto-peering request.
    AutoPeering,
}

impl PeerOrigin {
    /// The stored and shown name.
    pub fn as_str(self) -> &'static str {
        match self {
            PeerOrigin::Operator => "operator",
            PeerOrigin::AutoPeering => "auto-peering",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "operator" => Some(PeerOrigin::Operator),
            "auto-peering" => Some(PeerOrigin::AutoPeering),
            _ => None,
        }
    }
}

/// Whether `address` is `prefix` or lies under it, segment by segment
/// (`test.a.b` is under `test.a`; `test.ab` is not).
pub fn is_under(address: &str, prefix: &str) -> bool {
    address == prefix
        || address
            .strip_prefix(prefix)
            .is_some_and(|rest| rest.starts_with('.'))
}

/// Whether either prefix covers the other: packets to one could be routed
/// by the other.
pub fn overlaps(a: &str, b: &str) -> bool {
    is_under(a, b) || is_under(b, a)
}

/// The peer's ILP-over-HTTP endpoint and the bearer token opd presents.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeerOutgoing {
    pub endpoint: String,
    pub auth_token: String,
}

/// Where a liquidity balance stands against a peer's thresholds after a
/// movement, for the `peer.liquidity_low/high` events: crossing into a
/// zone announces it once, staying in it does not.
pub fn liquidity_crossing(peer: &Peer, before: u64, after: u64) -> Option<LiquidityZone> {
    if let Some(low) = peer.liquidity_low {
        if after <= low && before > low {
            return Some(LiquidityZone::Low);
        }
    }
    if let Some(high) = peer.liquidity_high {
        if after >= high && before < high {
            return Some(LiquidityZone::High);
        }
    }
    None
}

/// A packet forwarded from one peer to another, its amount held until the
/// next hop fulfils (posted) or rejects it, or it expires (voided).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hold {
    pub id: String,
    pub incoming_peer: PeerId,
    pub incoming_asset: Asset,
    pub outgoing_peer: PeerId,
    pub outgoing_asset: Asset,
    /// Taken from the incoming peer's liquidity.
    pub amount_in: u64,
    /// Given to the outgoing peer's liquidity when fulfilled.
    pub amount_out: u64,
    pub expires_at: Timestamp,
    pub created_at: Timestamp,
}

/// A liquidity threshold crossed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LiquidityZone {
    Low,
    High,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::money::AssetCode;

    fn peer(low: Option<u64>, high: Option<u64>) -> Peer {
        Peer {
            id: PeerId::from_uuid(uuid::Uuid::from_u128(1)),
            name: "p".into(),
            static_ilp_address: "test.p".into(),
            asset: Asset::new(
                AssetCode::parse("USD").unwrap_or_else(|_| unreachable!()),
                2,
            ),
            max_packet_amount: None,
            routes: vec![],
            outgoing: None,
            liquidity_low: low,
            liquidity_high: high,
            incoming_tokens: 0,
            created_by: PeerOrigin::Operator,
            created_at: Timestamp::from_unix_millis(0),
            updated_at: Timestamp::from_unix_millis(0),
        }
    }

    #[test]
    fn thresholds_are_announced_when_crossed_not_while_below() {
        let p = peer(Some(100), Some(1000));
        assert_eq!(liquidity_crossing(&p, 150, 100), Some(LiquidityZone::Low));
        assert_eq!(liquidity_crossing(&p, 100, 50), None);
        assert_eq!(liquidity_crossing(&p, 999, 1000), Some(LiquidityZone::High));
        assert_eq!(liquidity_crossing(&p, 1000, 2000), None);
        assert_eq!(liquidity_crossing(&peer(None, None), 5, 0), None);
    }

    #[test]
    fn prefixes_are_compared_segment_by_segment() {
        assert!(is_under("test.a.b", "test.a"));
        assert!(is_under("test.a", "test.a"));
        assert!(!is_under("test.ab", "test.a"));
        assert!(!is_under("test.a", "test.a.b"));
        assert!(overlaps("test.a", "test.a.b"));
        assert!(overlaps("test.a.b", "test.a"));
        assert!(!overlaps("test.ab", "test.a"));
        assert!(!overlaps("test.b", "test.a"));
        assert_eq!(
            PeerOrigin::parse("auto-peering"),
            Some(PeerOrigin::AutoPeering)
        );
        assert_eq!(
            PeerOrigin::parse(PeerOrigin::Operator.as_str()),
            Some(PeerOrigin::Operator)
        );
        assert_eq!(PeerOrigin::parse("x"), None);
    }
}
