//! Auto-peering, the reference server's protocol: unauthenticated
//! requesters get a peer, within the operator's limits, and only the
//! requester that proves a peering is theirs may renew it. Every refusal is
//! the same [`ServiceError::PeeringRefused`], so a refusal tells nothing of
//! what exists. What a peering's address and routes may not touch
//! ([`conflict`]) is one check for both sides: the requesting side
//! (`super::ask`) makes it of the acceptor's answer.

use opd_core::peer::{is_under, Peer, PeerOrigin, PeerOutgoing};
use opd_core::Asset;
use opd_store::{AutoPeerOutcome, StoreError};

use crate::interledger::peers::{list, new_peer, sealed, update, AutoPeeringLimits, PeerInput};
use crate::platform::changes::Change;
use crate::{ServiceError, Services};

/// A peering request of the reference server's auto-peering protocol.
#[derive(Debug, Clone)]
pub struct PeeringRequest {
    pub static_ilp_address: String,
    /// The requester's ILP-over-HTTP endpoint.
    pub ilp_connector_url: String,
    pub asset: Asset,
    /// The token the requester will present to us.
    pub http_token: String,
    pub max_packet_amount: Option<u64>,
    pub name: Option<String>,
    /// The bearer token of the request's `Authorization` header: to renew
    /// a peering, the token opd gave the requester when it created it.
    pub proof: Option<String>,
}

/// ILP allocation schemes a peer's address may not be in: `peer` (IL-DCP
/// and other link-local protocols), `self` and `local` (this node).
const RESERVED_SCHEMES: [&str; 3] = ["peer", "self", "local"];

fn refused(reason: impl Into<String>) -> ServiceError {
    ServiceError::PeeringRefused(reason.into())
}

/// What a peering's static address and routes may not touch, naming the
/// first conflict: an address in a reserved scheme, or an address or route
/// that is, is under or is above (segment by segment) our own address or
/// the static address or a route of one of `others` — every peer but the
/// one being renewed. The longest prefix wins routing, so such a peering
/// would take packets meant for us or for another peer.
///
/// Both sides of auto-peering ask it: the acceptor of a requester's
/// address ([`accept_peering`]), the requester of the acceptor's answer
/// (`super::ask`).
pub(super) fn conflict<'a>(
    address: &str,
    routes: &[String],
    others: impl IntoIterator<Item = &'a Peer>,
    own: &str,
) -> Option<String> {
    let mine: Vec<&str> = std::iter::once(address)
        .chain(routes.iter().map(String::as_str))
        .collect();
    for m in &mine {
        let scheme = m.split('.').next().unwrap_or(m);
        if RESERVED_SCHEMES.contains(&scheme) {
            return Some(format!("{m} is in the reserved scheme {scheme}"));
        }
        if let Some(how) = relation(m, own) {
            return Some(format!("{m} {how} our own address {own}"));
        }
    }
    for peer in others {
        let theirs = std::iter::once(("address", &peer.static_ilp_address))
            .chain(peer.routes.iter().map(|r| ("route", r)));
        for (what, t) in theirs {
            for m in &mine {
                if let Some(how) = relation(m, t) {
                    let name = &peer.name;
                    return Some(format!("{m} {how} the {what} {t} of the peer {name:?}"));
                }
            }
        }
    }
    None
}

/// How `mine` stands to `theirs`, if either prefix covers the other.
fn relation(mine: &str, theirs: &str) -> Option<&'static str> {
    if mine == theirs {
        Some("is")
    } else if is_under(mine, theirs) {
        Some("is under")
    } else if is_under(theirs, mine) {
        Some("is above")
    } else {
        None
    }
}

/// Any refusal of the store that says what exists (a taken name, address
/// or token) becomes the one refusal.
fn refused_if_taken(e: StoreError) -> ServiceError {
    match e {
        StoreError::Conflict(m) => refused(m),
        other => other.into(),
    }
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    use subtle::ConstantTimeEq;
    a.len() == b.len() && bool::from(a.ct_eq(b))
}

/// Accepts a peering request; returns the peer and the fresh token opd
/// will present to it, which the requester must accept from us.
///
/// - A new static address: creates the peer (its one route is that
///   address) and deposits min(`limits.liquidity_per_peer`, what is left
///   of `limits.liquidity_total`), unless `limits.max_peers` auto-peered
///   peers exist.
/// - The static address of a peer auto-peering created: renews its
///   incoming token, endpoint, outgoing token and max packet amount, only
///   when `req.proof` is the token opd gave the requester last time. No
///   second deposit.
/// - Anything else — an operator's peer, no or a wrong proof, another
///   asset, an address in a reserved scheme, under or above our address or
///   any peer's route or address, a name or token in use — is the same
///   [`ServiceError::PeeringRefused`], so a refusal tells nothing of what
///   exists.
pub async fn accept_peering(
    services: &Services,
    req: &PeeringRequest,
    limits: AutoPeeringLimits,
) -> Result<(Peer, String), ServiceError> {
    let mut bytes = [0u8; 24];
    services.random.fill(&mut bytes);
    let ours = opd_core::hex::lower(&bytes);
    let input = PeerInput {
        name: Some(
            req.name
                .clone()
                .unwrap_or_else(|| req.static_ilp_address.clone()),
        ),
        static_ilp_address: Some(req.static_ilp_address.clone()),
        asset: Some(req.asset.clone()),
        max_packet_amount: Some(req.max_packet_amount),
        routes: None,
        incoming_tokens: Some(vec![req.http_token.clone()]),
        outgoing: Some(Some(PeerOutgoing {
            endpoint: req.ilp_connector_url.clone(),
            auth_token: ours.clone(),
        })),
        liquidity_low: None,
        liquidity_high: None,
    };
    // Malformed input is told apart (400) before anything stored is read.
    let (peer, digests) = new_peer(services, &input, PeerOrigin::AutoPeering)?;
    let peers = list(services).await?;
    let existing = peers
        .iter()
        .find(|p| p.static_ilp_address == peer.static_ilp_address);
    // A renewal keeps its address and routes: they are what is checked.
    let claimed = existing.unwrap_or(&peer);
    let others = peers.iter().filter(|p| p.id != claimed.id);
    let own = services.config.ilp_address.as_str();
    if let Some(why) = conflict(&claimed.static_ilp_address, &claimed.routes, others, own) {
        return Err(refused(why));
    }
    if let Some(existing) = existing {
        return renew(services, existing.clone(), req, &input, ours).await;
    }
    let key = format!("peer-deposit:{}:auto-peering", peer.id);
    let outcome = services
        .store
        .create_auto_peer(&sealed(services, &peer), &digests, limits, &key)
        .await
        .map_err(refused_if_taken)?;
    match outcome {
        AutoPeerOutcome::Created { deposited } => {
            tracing::info!(peer = %peer.id, address = %peer.static_ilp_address, deposited, "auto-peering created a peer");
        }
        AutoPeerOutcome::QuotaReached => return Err(ServiceError::PeeringQuotaReached),
        // Checked above; the store checks again in the transaction that
        // inserts, against a request on another node at the same time.
        AutoPeerOutcome::Overlaps => {
            return Err(refused(format!(
                "{} overlaps another peer's route or address",
                peer.static_ilp_address
            )))
        }
    }
    services.changed(Change::Peers).await;
    Ok((peer, ours))
}

/// Renews a peering auto-peering created, for the requester that proves
/// it is theirs.
async fn renew(
    services: &Services,
    existing: Peer,
    req: &PeeringRequest,
    input: &PeerInput,
    ours: String,
) -> Result<(Peer, String), ServiceError> {
    if existing.created_by != PeerOrigin::AutoPeering {
        return Err(refused("the address is an operator's peer"));
    }
    // Checked before anything else about it is told: without the proof,
    // the asset (or anything) of the peer stays unknown.
    let proven = match (&existing.outgoing, &req.proof) {
        (Some(o), Some(p)) => constant_time_eq(o.auth_token.as_bytes(), p.as_bytes()),
        _ => false,
    };
    if !proven {
        return Err(refused(
            "a renewal without the token opd gave the requester",
        ));
    }
    if existing.asset != req.asset {
        return Err(refused("a renewal in another asset"));
    }
    // The name and routes stay; no second deposit.
    let input = PeerInput {
        name: None,
        asset: None,
        ..input.clone()
    };
    let peer = update(services, existing.id, &input)
        .await
        .map_err(|e| match e {
            ServiceError::Conflict { message, .. } => refused(message),
            other => other,
        })?;
    tracing::info!(peer = %peer.id, "auto-peering renewed a peer");
    Ok((peer, ours))
}

#[cfg(test)]
mod tests {
    use super::*;
    use opd_core::{AssetCode, PeerId, Timestamp};

    fn peer(n: u128, name: &str, address: &str, routes: &[&str]) -> Peer {
        Peer {
            id: PeerId::from_uuid(uuid::Uuid::from_u128(n)),
            name: name.into(),
            static_ilp_address: address.into(),
            asset: Asset::new(
                AssetCode::parse("USD").unwrap_or_else(|_| unreachable!()),
                2,
            ),
            max_packet_amount: None,
            routes: routes.iter().map(|r| (*r).to_owned()).collect(),
            outgoing: None,
            liquidity_low: None,
            liquidity_high: None,
            incoming_tokens: 1,
            created_by: PeerOrigin::Operator,
            created_at: Timestamp::from_unix_millis(0),
            updated_at: Timestamp::from_unix_millis(0),
        }
    }

    /// What `address` (its one route) conflicts with, among a peer at
    /// `test.evilry` routing `test.s2` and our own `test.opd`.
    fn of(address: &str) -> Option<String> {
        let hub = peer(1, "hub", "test.evilry", &["test.s2"]);
        conflict(address, &[address.to_owned()], [&hub], "test.opd")
    }

    #[test]
    fn under_above_or_equal_to_a_peers_prefix_conflicts_and_is_named() {
        let under = of("test.s2.x");
        assert_eq!(
            under.as_deref(),
            Some("test.s2.x is under the route test.s2 of the peer \"hub\"")
        );
        let above = of("test");
        assert!(
            above.as_deref().is_some_and(|m| m.contains("above")),
            "{above:?}"
        );
        assert!(of("test.s2").is_some());
        assert!(of("test.evilry").is_some());
        assert!(of("test.evilry.sub").is_some());
        // Segment by segment: `test.s20` is not under `test.s2`.
        assert_eq!(of("test.s20"), None);
        assert_eq!(of("test.evil"), None);
        assert_eq!(of("test.other"), None);
    }

    #[test]
    fn our_own_address_and_reserved_schemes_conflict() {
        assert_eq!(
            of("test.opd").as_deref(),
            Some("test.opd is our own address test.opd")
        );
        assert!(of("test.opd.wallets").is_some_and(|m| m.contains("under our own")));
        assert_eq!(of("test.opdx"), None);
        for reserved in ["peer.config", "self.x", "local.y"] {
            assert!(
                of(reserved).is_some_and(|m| m.contains("reserved")),
                "{reserved}"
            );
        }
    }

    #[test]
    fn every_route_is_checked_and_the_renewed_peer_is_not_another() {
        let hub = peer(1, "hub", "test.evilry", &["test.s2"]);
        let routes = ["test.fine".to_owned(), "test.s2.y".to_owned()];
        let found = conflict("test.fine", &routes, [&hub], "test.opd");
        assert!(found.is_some_and(|m| m.starts_with("test.s2.y is under the route test.s2")));
        // A renewal is checked against the others only: its own address
        // and routes are no conflict.
        let mine = peer(2, "mine", "test.mine", &["test.mine"]);
        let all = [hub, mine.clone()];
        let others = all.iter().filter(|p| p.id != mine.id);
        assert_eq!(
            conflict("test.mine", &mine.routes, others, "test.opd"),
            None
        );
        assert!(conflict("test.mine", &mine.routes, &all, "test.opd").is_some());
    }
}
