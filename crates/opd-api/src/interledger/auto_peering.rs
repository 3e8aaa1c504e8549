//! The auto-peering acceptor (opt-in, its own listener): the reference
//! server's `POST /` protocol, so the operator of a reference server can
//! peer with opd in one call. The request names the requester's static ILP
//! address, ILP-over-HTTP endpoint, asset and the token it will present;
//! the answer gives ours. The new peer's liquidity is the operator's
//! configured amount (0 by default: it cannot send until the operator
//! deposits, where the reference server grants 2^53 − 1 at once), within
//! a total for all auto-peered peers.
//!
//! Requesters are unauthenticated, so the listener only creates peers
//! (`opd_service::interledger::peers::accept_peering` says which), at most
//! `--auto-peering-requests-per-minute` per requester address: a renewal
//! must carry `Authorization: Bearer <the httpToken opd answered last
//! time>`. A reference server's `createOrUpdatePeerByUrl` sends no such
//! header, so its second call is refused and its first peering keeps
//! working unchanged on both sides.

use std::sync::Arc;

use axum::extract::{FromRef, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::routing::post;
use axum::{Json, Router};
use opd_core::Asset;
use opd_service::interledger::peers::AutoPeeringLimits;
use opd_service::interledger::{accept_peering, PeeringRequest};
use opd_service::platform::throttle::Throttle;
use serde::{Deserialize, Serialize};

use crate::client_network::ClientNet;
use crate::error::{ApiError, ApiResult};
use crate::extract::JsonBody;
use crate::AppState;

/// What the acceptor answers with, besides the new peer.
#[derive(Debug, Clone)]
pub struct AutoPeering {
    pub app: AppState,
    /// Our ILP-over-HTTP endpoint, as peers reach it.
    pub ilp_connector_url: String,
    /// Our name in the answer.
    pub name: String,
    /// How many peers it may create, and the liquidity it may deposit.
    pub limits: AutoPeeringLimits,
    /// Requests per requester address.
    pub throttle: Arc<Throttle>,
}

impl FromRef<AutoPeering> for AppState {
    fn from_ref(state: &AutoPeering) -> Self {
        state.app.clone()
    }
}

/// The acceptor's routes.
pub fn auto_peering_router(state: AutoPeering) -> Router {
    let routes = Router::new().route("/", post(accept)).with_state(state);
    crate::with_common_layers(routes)
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct AssetWire {
    code: String,
    scale: i64,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Request {
    static_ilp_address: String,
    /// Newer reference servers name it `ilpConnectorAddress`.
    #[serde(alias = "ilpConnectorAddress")]
    ilp_connector_url: String,
    asset: AssetWire,
    http_token: String,
    #[serde(default)]
    max_packet_amount: Option<serde_json::Value>,
    #[serde(default)]
    name: Option<String>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Answer {
    static_ilp_address: String,
    ilp_connector_url: String,
    /// The same URL under the name newer reference servers read.
    ilp_connector_address: String,
    http_token: String,
    name: String,
}

/// The reference server sends `maxPacketAmount` as a JSON number; a
/// string of digits is taken too.
fn max_packet(v: Option<serde_json::Value>) -> ApiResult<Option<u64>> {
    let bad = || ApiError::invalid_request("maxPacketAmount must be a positive integer");
    match v {
        None | Some(serde_json::Value::Null) => Ok(None),
        Some(serde_json::Value::Number(n)) => {
            n.as_u64().filter(|&n| n > 0).map(Some).ok_or_else(bad)
        }
        Some(serde_json::Value::String(s)) => opd_core::money::parse_u64_canonical(&s)
            .ok()
            .filter(|&n| n > 0)
            .map(Some)
            .ok_or_else(bad),
        Some(_) => Err(bad()),
    }
}

/// The bearer token of the `Authorization` header, if any. A header that
/// is present but no bearer token is no proof: the request is refused
/// later as any renewal without one.
fn bearer(headers: &HeaderMap) -> Option<String> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    (scheme.eq_ignore_ascii_case("bearer") && !token.trim().is_empty())
        .then(|| token.trim().to_owned())
}

async fn accept(
    State(state): State<AutoPeering>,
    ClientNet(from): ClientNet,
    headers: HeaderMap,
    JsonBody { value: req, .. }: JsonBody<Request>,
) -> ApiResult<(StatusCode, Json<Answer>)> {
    state.throttle.take(&from.to_string()).map_err(|wait| {
        let mut e = ApiError::new(
            StatusCode::TOO_MANY_REQUESTS,
            "too_many_requests",
            "too many peering requests from this network; try again later",
        );
        e.retry_after = Some(u32::try_from(wait.as_secs()).unwrap_or(u32::MAX).max(1));
        e
    })?;
    let asset = Asset::parse(&req.asset.code, req.asset.scale)
        .map_err(|e| ApiError::invalid_request(format!("asset: {e}")))?;
    let request = PeeringRequest {
        static_ilp_address: req.static_ilp_address,
        ilp_connector_url: req.ilp_connector_url,
        asset,
        http_token: req.http_token,
        max_packet_amount: max_packet(req.max_packet_amount)?,
        name: req.name,
        proof: bearer(&headers),
    };
    let services = &state.app.services;
    let (_, token) = accept_peering(services, &request, state.limits).await?;
    Ok((
        StatusCode::OK,
        Json(Answer {
            static_ilp_address: services.config.ilp_address.as_str().to_owned(),
            ilp_connector_url: state.ilp_connector_url.clone(),
            ilp_connector_address: state.ilp_connector_url.clone(),
            http_token: token,
            name: state.name.clone(),
        }),
    ))
}
