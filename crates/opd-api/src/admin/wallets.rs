//! Admin routes for wallet addresses: create, list, read, deactivate,
//! their keys, their owners' consent passwords, and token introspection
//! for resource servers deployed apart.

use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::{delete, get, post, put};
use axum::{Json, Router};
use opd_core::wallet_address::{PublicKey, WalletAddress, WalletAddressKey};
use opd_core::{Asset, TenantId, WalletAddressId};
use opd_service::tenants::SiteTable;
use opd_service::{operator, wallets};
use serde::{Deserialize, Serialize};

use super::scope::AdminScope;
use super::state::AdminState;
use crate::error::{ApiError, ApiResult};
use crate::extract::{non_null, JsonBody, PathParam, PathParams2, QueryPairs};
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
    tenant: String,
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

fn wallet_admin(sites: &SiteTable, w: &WalletAddress) -> WalletAddressAdmin {
    WalletAddressAdmin {
        id: w.id.to_string(),
        tenant: w.tenant.to_string(),
        path: w.path.to_string(),
        url: sites.wallet_url(w),
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
    /// The tenant it belongs to; the operator's when absent.
    #[serde(default, deserialize_with = "non_null")]
    tenant: Option<String>,
    path: String,
    asset_code: String,
    asset_scale: i64,
    #[serde(default, deserialize_with = "non_null")]
    public_name: Option<String>,
}

/// A tenant named in a request; the operator's when absent, and an
/// unknown one is not found.
pub(super) fn tenant_param(tenant: Option<&str>) -> ApiResult<TenantId> {
    match tenant {
        None => Ok(TenantId::operator()),
        Some(t) => TenantId::parse(t).map_err(|_| ApiError::not_found("tenant")),
    }
}

/// Finds a wallet address the scope may see by id, by path (in the
/// scope's tenant; the operator's own for the operator), or by
/// `tenant:path`. Another tenant's is not found.
pub(super) async fn resolve(
    state: &AdminState,
    scope: &AdminScope,
    reference: &str,
) -> ApiResult<WalletAddress> {
    let services = &state.app.services;
    let not_found = || ApiError::not_found("wallet address");
    let wallet = if let Some(id) = WalletAddressId::parse(reference) {
        wallets::get(services, id).await?
    } else {
        let own = scope.tenant().cloned().unwrap_or_else(TenantId::operator);
        let (tenant, path) = match reference.split_once(':') {
            Some((tenant, path)) => (tenant_param(Some(tenant))?, path),
            None => (own, reference),
        };
        let path = opd_core::wallet_address::WalletAddressPath::parse_any(path)
            .map_err(|_| not_found())?;
        operator::wallet_address_at(services, &tenant, &path)
            .await?
            .ok_or_else(not_found)?
    };
    if !scope.may_see(&wallet) {
        return Err(not_found());
    }
    Ok(wallet)
}

async fn create_wallet_address(
    State(state): State<AdminState>,
    scope: AdminScope,
    JsonBody { value: req, .. }: JsonBody<CreateWalletAddress>,
) -> ApiResult<(StatusCode, Json<WalletAddressAdmin>)> {
    let asset = Asset::parse(&req.asset_code, req.asset_scale)
        .map_err(|e| ApiError::invalid_request(e.to_string()))?;
    let services = &state.app.services;
    let tenant = scope
        .tenant_asked(req.tenant.as_deref())?
        .unwrap_or_else(TenantId::operator);
    let wallet = wallets::create(services, &tenant, &req.path, asset, req.public_name).await?;
    let sites = services.sites.with(&tenant).await?;
    Ok((StatusCode::CREATED, Json(wallet_admin(&sites, &wallet))))
}

/// `GET /wallet-addresses[?tenant=<id>]`: every tenant's, or one's.
async fn list_wallet_addresses(
    State(state): State<AdminState>,
    scope: AdminScope,
    query: QueryPairs,
) -> ApiResult<Json<Vec<WalletAddressAdmin>>> {
    let services = &state.app.services;
    let tenant = scope.tenant_asked(query.single("tenant")?)?;
    let all = wallets::list(services, tenant.as_ref()).await?;
    let sites = services.sites.table().await?;
    Ok(Json(all.iter().map(|w| wallet_admin(&sites, w)).collect()))
}

/// The site table, for wallet addresses' URLs.
async fn sites(state: &AdminState) -> ApiResult<std::sync::Arc<SiteTable>> {
    Ok(state.app.services.sites.table().await?)
}

async fn get_wallet_address(
    State(state): State<AdminState>,
    scope: AdminScope,
    PathParam(reference): PathParam,
) -> ApiResult<Json<WalletAddressAdmin>> {
    let wallet = resolve(&state, &scope, &reference).await?;
    Ok(Json(wallet_admin(&*sites(&state).await?, &wallet)))
}

async fn deactivate_wallet_address(
    State(state): State<AdminState>,
    scope: AdminScope,
    PathParam(reference): PathParam,
) -> ApiResult<Json<WalletAddressAdmin>> {
    let wallet = resolve(&state, &scope, &reference).await?;
    let wallet = wallets::deactivate(&state.app.services, wallet.id).await?;
    Ok(Json(wallet_admin(&*sites(&state).await?, &wallet)))
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
    scope: AdminScope,
    PathParam(reference): PathParam,
) -> ApiResult<Json<Vec<KeyAdmin>>> {
    let wallet = resolve(&state, &scope, &reference).await?;
    let keys = wallets::keys(&state.app.services, wallet.id).await?;
    Ok(Json(keys.iter().map(KeyAdmin::from).collect()))
}

async fn add_key(
    State(state): State<AdminState>,
    scope: AdminScope,
    PathParam(reference): PathParam,
    JsonBody { value: req, .. }: JsonBody<AddKey>,
) -> ApiResult<(StatusCode, Json<KeyAdmin>)> {
    let wallet = resolve(&state, &scope, &reference).await?;
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
    scope: AdminScope,
    PathParams2(reference, kid): PathParams2,
) -> ApiResult<StatusCode> {
    let wallet = resolve(&state, &scope, &reference).await?;
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
    scope: AdminScope,
    PathParam(reference): PathParam,
    JsonBody { value: req, .. }: JsonBody<OwnerPassword>,
) -> ApiResult<StatusCode> {
    let wallet = resolve(&state, &scope, &reference).await?;
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
