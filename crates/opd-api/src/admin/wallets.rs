//! Admin routes for wallet addresses: create, list, read, deactivate,
//! their keys, their owners' consent passwords, and token introspection
//! for resource servers deployed apart.

use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::{delete, get, post, put};
use axum::{Json, Router};
use opd_core::wallet_address::{PublicKey, WalletAddress, WalletAddressKey};
use opd_core::{Asset, WalletAddressId};
use opd_service::{operator, wallets};
use serde::{Deserialize, Serialize};

use super::state::AdminState;
use crate::error::{ApiError, ApiResult};
use crate::extract::{non_null, JsonBody, PathParam, PathParams2};
use crate::wire::JwkWire;

/// This part's routes.
pub(super) fn routes() -> Router<AdminState> {
    Router::new()
        .route(
            "/wallet-addresses",
            post(create_wallet_address).get(list_wallet_addresses),
        )
        .route("/wallet-addresses/{wallet}", get(get_wallet_address))
        .route(
            "/wallet-addresses/{wallet}/deactivate",
            post(deactivate_wallet_address),
        )
        .route(
            "/wallet-addresses/{wallet}/keys",
            get(list_keys).post(add_key),
        )
        .route("/wallet-addresses/{wallet}/keys/{kid}", delete(revoke_key))
        .route(
            "/wallet-addresses/{wallet}/owner-password",
            put(set_owner_password),
        )
        .route("/introspect", post(introspect))
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct WalletAddressAdmin {
    id: String,
    path: String,
    url: String,
    asset_code: String,
    asset_scale: u8,
    #[serde(skip_serializing_if = "Option::is_none")]
    public_name: Option<String>,
    created_at: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    deactivated_at: Option<String>,
}

fn wallet_admin(state: &AdminState, w: &WalletAddress) -> WalletAddressAdmin {
    WalletAddressAdmin {
        id: w.id.to_string(),
        path: w.path.to_string(),
        url: state.app.services.config.public_url.wallet_address(&w.path),
        asset_code: w.asset.code.to_string(),
        asset_scale: w.asset.scale,
        public_name: w.public_name.clone(),
        created_at: w.created_at.to_rfc3339(),
        deactivated_at: w.deactivated_at.map(|t| t.to_rfc3339()),
    }
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct CreateWalletAddress {
    path: String,
    asset_code: String,
    asset_scale: i64,
    #[serde(default, deserialize_with = "non_null")]
    public_name: Option<String>,
}

/// Finds a wallet address by id or by path.
pub(super) async fn resolve(state: &AdminState, reference: &str) -> ApiResult<WalletAddress> {
    let services = &state.app.services;
    if let Some(id) = WalletAddressId::parse(reference) {
        return Ok(wallets::get(services, id).await?);
    }
    let path = opd_core::wallet_address::WalletAddressPath::parse_any(reference)
        .map_err(|_| ApiError::not_found("wallet address"))?;
    operator::wallet_address_at(services, &path)
        .await?
        .ok_or_else(|| ApiError::not_found("wallet address"))
}

async fn create_wallet_address(
    State(state): State<AdminState>,
    JsonBody { value: req, .. }: JsonBody<CreateWalletAddress>,
) -> ApiResult<(StatusCode, Json<WalletAddressAdmin>)> {
    let asset = Asset::parse(&req.asset_code, req.asset_scale)
        .map_err(|e| ApiError::invalid_request(e.to_string()))?;
    let wallet = wallets::create(&state.app.services, &req.path, asset, req.public_name).await?;
    Ok((StatusCode::CREATED, Json(wallet_admin(&state, &wallet))))
}

async fn list_wallet_addresses(
    State(state): State<AdminState>,
) -> ApiResult<Json<Vec<WalletAddressAdmin>>> {
    let all = wallets::list(&state.app.services).await?;
    Ok(Json(all.iter().map(|w| wallet_admin(&state, w)).collect()))
}

async fn get_wallet_address(
    State(state): State<AdminState>,
    PathParam(reference): PathParam,
) -> ApiResult<Json<WalletAddressAdmin>> {
    let wallet = resolve(&state, &reference).await?;
    Ok(Json(wallet_admin(&state, &wallet)))
}

async fn deactivate_wallet_address(
    State(state): State<AdminState>,
    PathParam(reference): PathParam,
) -> ApiResult<Json<WalletAddressAdmin>> {
    let wallet = resolve(&state, &reference).await?;
    let wallet = wallets::deactivate(&state.app.services, wallet.id).await?;
    Ok(Json(wallet_admin(&state, &wallet)))
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct KeyAdmin {
    jwk: JwkWire,
    created_at: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    revoked_at: Option<String>,
}

impl From<&WalletAddressKey> for KeyAdmin {
    fn from(k: &WalletAddressKey) -> Self {
        Self {
            jwk: JwkWire::from(&k.key),
            created_at: k.created_at.to_rfc3339(),
            revoked_at: k.revoked_at.map(|t| t.to_rfc3339()),
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct JwkInput {
    kid: String,
    kty: String,
    crv: String,
    x: String,
    #[serde(default, deserialize_with = "non_null")]
    alg: Option<String>,
    #[serde(default, rename = "use", deserialize_with = "non_null")]
    use_: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct AddKey {
    jwk: JwkInput,
}

async fn list_keys(
    State(state): State<AdminState>,
    PathParam(reference): PathParam,
) -> ApiResult<Json<Vec<KeyAdmin>>> {
    let wallet = resolve(&state, &reference).await?;
    let keys = wallets::keys(&state.app.services, wallet.id).await?;
    Ok(Json(keys.iter().map(KeyAdmin::from).collect()))
}

async fn add_key(
    State(state): State<AdminState>,
    PathParam(reference): PathParam,
    JsonBody { value: req, .. }: JsonBody<AddKey>,
) -> ApiResult<(StatusCode, Json<KeyAdmin>)> {
    let wallet = resolve(&state, &reference).await?;
    let j = req.jwk;
    let key = PublicKey::from_jwk_parts(
        &j.kid,
        &j.kty,
        &j.crv,
        j.alg.as_deref(),
        j.use_.as_deref(),
        &j.x,
    )
    .map_err(|e| ApiError::invalid_request(e.to_string()))?;
    let stored = wallets::add_key(&state.app.services, wallet.id, key).await?;
    Ok((StatusCode::CREATED, Json(KeyAdmin::from(&stored))))
}

async fn revoke_key(
    State(state): State<AdminState>,
    PathParams2(reference, kid): PathParams2,
) -> ApiResult<StatusCode> {
    let wallet = resolve(&state, &reference).await?;
    wallets::revoke_key(&state.app.services, wallet.id, &kid).await?;
    Ok(StatusCode::NO_CONTENT)
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct OwnerPassword {
    password: String,
}

async fn set_owner_password(
    State(state): State<AdminState>,
    PathParam(reference): PathParam,
    JsonBody { value: req, .. }: JsonBody<OwnerPassword>,
) -> ApiResult<StatusCode> {
    let wallet = resolve(&state, &reference).await?;
    opd_service::grants::set_owner_password(&state.app.services, wallet.id, &req.password).await?;
    Ok(StatusCode::NO_CONTENT)
}

async fn introspect(
    State(state): State<AdminState>,
    JsonBody { value: req, .. }: JsonBody<opd_gnap::IntrospectionRequest>,
) -> ApiResult<Json<opd_gnap::IntrospectionResponse>> {
    let services = &state.app.services;
    let Some(active) = opd_service::grants::introspect(services, &req.access_token).await? else {
        return Ok(Json(opd_gnap::IntrospectionResponse::Inactive));
    };
    let access = match &req.access {
        Some(requested) => opd_gnap::introspection_matches(&active.access, requested)
            .map_err(|e| ApiError::invalid_request(e.description))?
            .into_iter()
            .map(opd_gnap::AccessItem::to_wire)
            .collect(),
        None => Vec::new(),
    };
    Ok(Json(opd_gnap::IntrospectionResponse::Active(
        opd_gnap::TokenInfo {
            grant: active.grant_id.to_string(),
            access,
            client: active.client.to_wire(),
        },
    )))
}
