//! The admin API's Interledger peers:
//! - `POST /peers`, `GET /peers`, `GET|PATCH|DELETE /peers/{id}`
//! - `POST /peers/auto-peer` `{url, asset, maxPacketAmount?, name?}`: asks
//!   the server at `url` to peer (the reference server's auto-peering
//!   protocol) and creates the peer from its answer (201), or renews the
//!   one an earlier request to `url` made (200)
//! - `POST /peers/{id}/deposits|withdrawals` `{amount, idempotencyKey}`,
//!   `GET /peers/{id}/balance|transfers`
//!
//! Incoming tokens are write-only: a peer shows how many it has, never
//! them; the outgoing token is not shown either.

use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Json, Router};
use opd_core::peer::{Peer, PeerOutgoing};
use opd_core::{Asset, PeerId};
use opd_service::interledger::peers::{self, PeerInput};
use serde::{Deserialize, Deserializer, Serialize};

use super::money::{idempotent_status, MoveMoney, TransferAdmin};
use super::state::AdminState;
use crate::error::{ApiError, ApiResult};
use crate::extract::{JsonBody, PathParam};

/// The peer routes (the caller adds the admin token check).
pub(crate) fn routes() -> Router<AdminState> {
    Router::new()
        .route("/peers", post(create).get(list))
        .route("/peers/auto-peer", post(auto_peer))
        .route("/peers/{id}", get(read).patch(update).delete(remove))
        .route("/peers/{id}/deposits", post(deposit))
        .route("/peers/{id}/withdrawals", post(withdraw))
        .route("/peers/{id}/balance", get(balance))
        .route("/peers/{id}/transfers", get(transfers))
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct AssetWire {
    code: String,
    scale: i64,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct IncomingWire {
    auth_tokens: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct OutgoingWire {
    endpoint: String,
    auth_token: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct HttpWire {
    #[serde(default)]
    incoming: Option<IncomingWire>,
    #[serde(default, deserialize_with = "nullable")]
    outgoing: Option<Option<OutgoingWire>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ThresholdWire {
    #[serde(default, deserialize_with = "nullable")]
    low: Option<Option<String>>,
    #[serde(default, deserialize_with = "nullable")]
    high: Option<Option<String>>,
}

/// The body of `POST /peers` and `PATCH /peers/{id}` (where every field is
/// optional, and `null` removes an optional setting).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct PeerWire {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    static_ilp_address: Option<String>,
    #[serde(default)]
    asset: Option<AssetWire>,
    #[serde(default, deserialize_with = "nullable")]
    max_packet_amount: Option<Option<String>>,
    #[serde(default)]
    routes: Option<Vec<String>>,
    #[serde(default)]
    http: Option<HttpWire>,
    #[serde(default)]
    liquidity_threshold: Option<ThresholdWire>,
}

/// `Some(None)` for an explicit `null`, `None` (by `default`) when absent.
fn nullable<'de, D, T>(d: D) -> Result<Option<Option<T>>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(d).map(Some)
}

fn amount(text: &str, what: &str) -> ApiResult<u64> {
    opd_core::money::parse_u64_canonical(text).map_err(|_| {
        ApiError::invalid_request(format!("{what} must be an unsigned 64-bit integer string"))
    })
}

fn opt_amount(v: Option<Option<String>>, what: &str) -> ApiResult<Option<Option<u64>>> {
    v.map(|inner| inner.map(|t| amount(&t, what)).transpose())
        .transpose()
}

impl PeerWire {
    fn into_input(self) -> ApiResult<PeerInput> {
        let asset = self
            .asset
            .map(|a| Asset::parse(&a.code, a.scale))
            .transpose()
            .map_err(|e| ApiError::invalid_request(format!("asset: {e}")))?;
        let http = self.http.unwrap_or_default();
        let threshold = self.liquidity_threshold.unwrap_or_default();
        Ok(PeerInput {
            name: self.name,
            static_ilp_address: self.static_ilp_address,
            asset,
            max_packet_amount: opt_amount(self.max_packet_amount, "maxPacketAmount")?,
            routes: self.routes,
            incoming_tokens: http.incoming.map(|i| i.auth_tokens),
            outgoing: http.outgoing.map(|o| {
                o.map(|o| PeerOutgoing {
                    endpoint: o.endpoint,
                    auth_token: o.auth_token,
                })
            }),
            liquidity_low: opt_amount(threshold.low, "liquidityThreshold.low")?,
            liquidity_high: opt_amount(threshold.high, "liquidityThreshold.high")?,
        })
    }
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct PeerAdmin {
    id: String,
    name: String,
    static_ilp_address: String,
    asset: serde_json::Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_packet_amount: Option<String>,
    routes: Vec<String>,
    http: serde_json::Value,
    liquidity_threshold: serde_json::Value,
    /// The liquidity balance, in the peer's asset.
    liquidity: String,
    /// `operator` or `auto-peering`.
    created_by: &'static str,
    created_at: String,
    updated_at: String,
}

fn peer_admin(p: &Peer, liquidity: u64) -> PeerAdmin {
    let mut http = serde_json::json!({ "incoming": { "authTokens": p.incoming_tokens } });
    if let Some(o) = &p.outgoing {
        http["outgoing"] = serde_json::json!({ "endpoint": o.endpoint });
    }
    PeerAdmin {
        id: p.id.to_string(),
        name: p.name.clone(),
        static_ilp_address: p.static_ilp_address.clone(),
        asset: serde_json::json!({ "code": p.asset.code.as_str(), "scale": p.asset.scale }),
        max_packet_amount: p.max_packet_amount.map(|v| v.to_string()),
        routes: p.routes.clone(),
        http,
        liquidity_threshold: serde_json::json!({
            "low": p.liquidity_low.map(|v| v.to_string()),
            "high": p.liquidity_high.map(|v| v.to_string()),
        }),
        liquidity: liquidity.to_string(),
        created_by: p.created_by.as_str(),
        created_at: p.created_at.to_rfc3339(),
        updated_at: p.updated_at.to_rfc3339(),
    }
}

async fn shown(state: &AdminState, p: &Peer) -> ApiResult<PeerAdmin> {
    let liquidity = peers::liquidity(&state.app.services, p).await?;
    Ok(peer_admin(p, liquidity))
}

fn peer_id(text: &str) -> ApiResult<PeerId> {
    PeerId::parse(text).ok_or_else(|| ApiError::not_found("peer"))
}

async fn find(state: &AdminState, id: &str) -> ApiResult<Peer> {
    Ok(peers::get(&state.app.services, peer_id(id)?).await?)
}

async fn create(
    State(state): State<AdminState>,
    JsonBody { value: req, .. }: JsonBody<PeerWire>,
) -> ApiResult<(StatusCode, Json<PeerAdmin>)> {
    let peer = peers::create(&state.app.services, &req.into_input()?).await?;
    Ok((StatusCode::CREATED, Json(shown(&state, &peer).await?)))
}

/// The body of `POST /peers/auto-peer`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct AutoPeerWire {
    url: String,
    asset: AssetWire,
    #[serde(default)]
    max_packet_amount: Option<String>,
    #[serde(default)]
    name: Option<String>,
}

async fn auto_peer(
    State(state): State<AdminState>,
    JsonBody { value: req, .. }: JsonBody<AutoPeerWire>,
) -> ApiResult<(StatusCode, Json<PeerAdmin>)> {
    use opd_service::interledger::{ask_peering, AskPeering, Asked};
    let asset = Asset::parse(&req.asset.code, req.asset.scale)
        .map_err(|e| ApiError::invalid_request(format!("asset: {e}")))?;
    let ask = AskPeering {
        url: req.url,
        asset,
        max_packet_amount: req
            .max_packet_amount
            .map(|t| amount(&t, "maxPacketAmount"))
            .transpose()?,
        name: req.name,
    };
    let (status, peer) = match ask_peering(&state.app.services, &ask).await? {
        Asked::Created(p) => (StatusCode::CREATED, p),
        Asked::Renewed(p) => (StatusCode::OK, p),
    };
    Ok((status, Json(shown(&state, &peer).await?)))
}

async fn list(State(state): State<AdminState>) -> ApiResult<Json<Vec<PeerAdmin>>> {
    let all = peers::list(&state.app.services).await?;
    let mut out = Vec::with_capacity(all.len());
    for p in &all {
        out.push(shown(&state, p).await?);
    }
    Ok(Json(out))
}

async fn read(
    State(state): State<AdminState>,
    PathParam(id): PathParam,
) -> ApiResult<Json<PeerAdmin>> {
    let peer = find(&state, &id).await?;
    Ok(Json(shown(&state, &peer).await?))
}

async fn update(
    State(state): State<AdminState>,
    PathParam(id): PathParam,
    JsonBody { value: req, .. }: JsonBody<PeerWire>,
) -> ApiResult<Json<PeerAdmin>> {
    let peer = peers::update(&state.app.services, peer_id(&id)?, &req.into_input()?).await?;
    Ok(Json(shown(&state, &peer).await?))
}

async fn remove(
    State(state): State<AdminState>,
    PathParam(id): PathParam,
) -> ApiResult<StatusCode> {
    peers::delete(&state.app.services, peer_id(&id)?).await?;
    Ok(StatusCode::NO_CONTENT)
}

async fn move_liquidity(
    state: &AdminState,
    id: &str,
    req: MoveMoney,
    deposit: bool,
) -> ApiResult<(StatusCode, Json<serde_json::Value>)> {
    let peer = find(state, id).await?;
    let value = amount(&req.amount, "amount")?;
    let services = &state.app.services;
    let (transfer, new) =
        peers::move_liquidity(services, &peer, value, deposit, &req.idempotency_key).await?;
    let balance = peers::liquidity(services, &peer).await?;
    let status = idempotent_status(new);
    Ok((
        status,
        Json(serde_json::json!({
            "transfer": TransferAdmin::from(&transfer),
            "balance": balance.to_string(),
        })),
    ))
}

async fn deposit(
    State(state): State<AdminState>,
    PathParam(id): PathParam,
    JsonBody { value: req, .. }: JsonBody<MoveMoney>,
) -> ApiResult<(StatusCode, Json<serde_json::Value>)> {
    move_liquidity(&state, &id, req, true).await
}

async fn withdraw(
    State(state): State<AdminState>,
    PathParam(id): PathParam,
    JsonBody { value: req, .. }: JsonBody<MoveMoney>,
) -> ApiResult<(StatusCode, Json<serde_json::Value>)> {
    move_liquidity(&state, &id, req, false).await
}

async fn balance(
    State(state): State<AdminState>,
    PathParam(id): PathParam,
) -> ApiResult<Json<serde_json::Value>> {
    let peer = find(&state, &id).await?;
    let balance = peers::liquidity(&state.app.services, &peer).await?;
    Ok(Json(serde_json::json!({
        "balance": balance.to_string(),
        "asset": { "code": peer.asset.code.as_str(), "scale": peer.asset.scale },
    })))
}

async fn transfers(
    State(state): State<AdminState>,
    PathParam(id): PathParam,
) -> ApiResult<Json<Vec<TransferAdmin>>> {
    let peer = find(&state, &id).await?;
    let list = peers::transfers(&state.app.services, &peer, 100).await?;
    Ok(Json(list.iter().map(TransferAdmin::from).collect()))
}
