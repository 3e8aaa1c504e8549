//! Asking another server to peer: the requesting side of the reference
//! server's auto-peering protocol, so that an opd operator peers with a
//! reference-server (or opd) operator in one command.
//!
//! opd sends its static address, its ILP-over-HTTP URL, the asset and a
//! fresh token it will present there; the answer gives the other server's
//! address, endpoint and the token it will present to opd. The peer is
//! created from the answer, as the operator's own. Asking the same URL
//! again renews the peering (a new token each way), proving it is ours
//! with the token the other server gave last time, as opd's acceptor
//! requires: that token is kept sealed with the peering's record, since a
//! peer's incoming tokens are stored only as digests.
//!
//! The other server is trusted with nothing routed elsewhere: an answer
//! whose address is, is under or is above our own address or another
//! peer's address or route is refused by the check opd's acceptor makes
//! of requesters ([`conflict`]), and a renewal keeps the peer's address
//! and routes (an answer naming another address is refused).

use std::time::Duration;

use opd_core::peer::{Peer, PeerOutgoing};
use opd_core::{Asset, PeerId};
use serde::Deserialize;

use super::accept::conflict;
use crate::interledger::peers::{self, PeerInput};
use crate::platform::secrets;
use crate::{ServiceError, Services};

/// How long the other server may take to answer.
const ASK_TIMEOUT: Duration = Duration::from_secs(10);
/// The largest answer read.
const MAX_ANSWER_BYTES: usize = 16 * 1024;

/// What the operator asks for.
#[derive(Debug, Clone)]
pub struct AskPeering {
    /// The other server's auto-peering endpoint.
    pub url: String,
    pub asset: Asset,
    /// The largest packet we take from them.
    pub max_packet_amount: Option<u64>,
    /// The peer's name here [default: the name they answer with].
    pub name: Option<String>,
}

/// A peering made or renewed.
#[derive(Debug, Clone)]
pub enum Asked {
    Created(Peer),
    Renewed(Peer),
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Answer {
    static_ilp_address: String,
    /// Newer reference servers name it `ilpConnectorAddress` (opd's
    /// acceptor sends both).
    #[serde(default)]
    ilp_connector_url: Option<String>,
    #[serde(default)]
    ilp_connector_address: Option<String>,
    http_token: String,
    #[serde(default)]
    name: Option<String>,
}

fn failed(reason: impl Into<String>) -> ServiceError {
    ServiceError::PeeringFailed(reason.into())
}

/// The setting a peering asked of `url` is remembered under (sealed).
fn setting(url: &str) -> String {
    format!("asked_peering:{url}")
}

/// What is remembered of a peering asked for: the peer, and the token the
/// other server presents to us (its proof when renewing).
#[derive(Debug, serde::Serialize, Deserialize)]
struct Remembered {
    peer: String,
    their_token: String,
}

/// The peer an earlier request to `url` made, if it is still there, and
/// the token its server gave.
async fn asked_before(
    services: &Services,
    url: &str,
) -> Result<Option<(Peer, String)>, ServiceError> {
    let kept = secrets::get_sealed(
        services.store.as_ref(),
        &services.config.secrets_key,
        &setting(url),
    )
    .await?;
    let Some(kept) = kept.and_then(|b| serde_json::from_slice::<Remembered>(&b).ok()) else {
        return Ok(None);
    };
    let Some(id) = PeerId::parse(&kept.peer) else {
        return Ok(None);
    };
    match peers::get(services, id).await {
        Ok(peer) => Ok(Some((peer, kept.their_token))),
        Err(ServiceError::NotFound(_)) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Sends the peering request to `ask.url` (with the proof of an earlier
/// peering, when renewing) and reads the answer: the answer and the other
/// server's ILP-over-HTTP endpoint.
async fn request(
    services: &Services,
    ask: &AskPeering,
    ours: &str,
    proof: Option<&str>,
) -> Result<(Answer, String), ServiceError> {
    let mut body = serde_json::json!({
        "staticIlpAddress": services.config.ilp_address.as_str(),
        "ilpConnectorUrl": services.config.ilp_public_url,
        "asset": { "code": ask.asset.code.as_str(), "scale": ask.asset.scale },
        "httpToken": ours,
        "name": "opd",
    });
    if let Some(max) = ask.max_packet_amount {
        // A JSON number, as the reference server sends and reads it.
        body["maxPacketAmount"] = max.into();
    }
    let mut request = services
        .outbound
        .request(reqwest::Method::POST, &ask.url)
        .map_err(|e| failed(format!("the auto-peering URL cannot be asked: {e}")))?
        .json(&body);
    // A renewal proves the peering is ours.
    if let Some(theirs) = proof {
        request = request.bearer_auth(theirs);
    }
    let (_, answer) = services
        .outbound
        .send(request, ASK_TIMEOUT, MAX_ANSWER_BYTES)
        .await
        .map_err(|e| failed(format!("the other server did not peer: {e}")))?;
    let mut answer: Answer = serde_json::from_slice(&answer)
        .map_err(|_| failed("the other server's answer is not an auto-peering answer"))?;
    let endpoint = answer
        .ilp_connector_url
        .take()
        .or(answer.ilp_connector_address.take())
        .ok_or_else(|| failed("the other server's answer has no ILP-over-HTTP URL"))?;
    Ok((answer, endpoint))
}

/// Refuses an answer that would take packets routed elsewhere: an address
/// that is, is under or is above our own address or another peer's
/// address or route, or in a reserved scheme (the acceptor's own check,
/// [`conflict`]); and, for a renewal, an address other than the one the
/// peer has, since a renewal keeps the peer's address and routes.
async fn check_answer(
    services: &Services,
    address: &str,
    renewed: Option<&Peer>,
) -> Result<(), ServiceError> {
    if let Some(peer) = renewed {
        if peer.static_ilp_address != address {
            return Err(failed(format!(
                "the other server now answers the address {address}, but the peer it renews has \
                 the address {}: a renewal keeps the peer's address; nothing was changed",
                peer.static_ilp_address
            )));
        }
    }
    let routes = renewed.map_or_else(|| vec![address.to_owned()], |p| p.routes.clone());
    let all = peers::list(services).await?;
    let others = all.iter().filter(|p| Some(p.id) != renewed.map(|r| r.id));
    let own = services.config.ilp_address.as_str();
    if let Some(why) = conflict(address, &routes, others, own) {
        return Err(failed(format!(
            "the other server's answer is refused, nothing was changed: {why}"
        )));
    }
    Ok(())
}

/// Asks the server at `ask.url` to peer, and creates (or renews) the peer
/// from its answer. Nothing changes here unless the other server agreed
/// and its answer passes `check_answer`.
pub async fn ask_peering(services: &Services, ask: &AskPeering) -> Result<Asked, ServiceError> {
    let before = asked_before(services, &ask.url).await?;
    let mut bytes = [0u8; 24];
    services.random.fill(&mut bytes);
    let ours = opd_core::hex::lower(&bytes);
    let proof = before.as_ref().map(|(_, theirs)| theirs.as_str());
    let (answer, endpoint) = request(services, ask, &ours, proof).await?;
    let renewed = before.map(|(peer, _)| peer);
    check_answer(services, &answer.static_ilp_address, renewed.as_ref()).await?;
    // A renewal keeps the peer's address and routes.
    let input = PeerInput {
        name: None,
        static_ilp_address: None,
        asset: None,
        max_packet_amount: Some(ask.max_packet_amount),
        routes: None,
        incoming_tokens: Some(vec![answer.http_token.clone()]),
        outgoing: Some(Some(PeerOutgoing {
            endpoint,
            auth_token: ours,
        })),
        liquidity_low: None,
        liquidity_high: None,
    };
    let asked = match renewed {
        Some(peer) => Asked::Renewed(peers::update(services, peer.id, &input).await?),
        None => {
            let name = ask
                .name
                .clone()
                .or(answer.name)
                .unwrap_or_else(|| answer.static_ilp_address.clone());
            let input = PeerInput {
                name: Some(name),
                static_ilp_address: Some(answer.static_ilp_address.clone()),
                asset: Some(ask.asset.clone()),
                routes: Some(vec![answer.static_ilp_address.clone()]),
                ..input
            };
            Asked::Created(peers::create(services, &input).await?)
        }
    };
    let peer = match &asked {
        Asked::Created(p) | Asked::Renewed(p) => p,
    };
    let remembered = Remembered {
        peer: peer.id.to_string(),
        their_token: answer.http_token,
    };
    let bytes =
        serde_json::to_vec(&remembered).map_err(|e| ServiceError::Internal(e.to_string()))?;
    secrets::put_sealed(
        services.store.as_ref(),
        services.random.as_ref(),
        &services.config.secrets_key,
        &setting(&ask.url),
        &bytes,
    )
    .await?;
    tracing::info!(peer = %peer.id, address = %peer.static_ilp_address, url = %ask.url, "peered by asking");
    Ok(asked)
}
