//! Auto-peering, the reference server's protocol: unauthenticated
//! requesters get a peer, within the operator's limits, and only the
//! requester that proves a peering is theirs may renew it. Every refusal is
//! the same [`ServiceError::PeeringRefused`], so a refusal tells nothing of
//! what exists.

use opd_core::peer::{overlaps, Peer, PeerOrigin, PeerOutgoing};
use opd_core::Asset;
use opd_store::{AutoPeerOutcome, StoreError};

use super::peers::{list, new_peer, sealed, update, AutoPeeringLimits, PeerInput};
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

/// Whether the address may be given to an auto-peered peer, whatever is
/// stored: not in a reserved scheme, not under or above our own address.
pub(super) fn routable(services: &Services, address: &str) -> Result<(), ServiceError> {
    let scheme = address.split('.').next().unwrap_or(address);
    if RESERVED_SCHEMES.contains(&scheme) {
        return Err(refused(format!("{address} is in a reserved scheme")));
    }
    if overlaps(address, services.config.ilp_address.as_str()) {
        return Err(refused(format!("{address} overlaps our own address")));
    }
    Ok(())
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
    routable(services, &peer.static_ilp_address)?;
    let existing = list(services)
        .await?
        .into_iter()
        .find(|p| p.static_ilp_address == peer.static_ilp_address);
    if let Some(existing) = existing {
        return renew(services, existing, req, &input, ours).await;
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
