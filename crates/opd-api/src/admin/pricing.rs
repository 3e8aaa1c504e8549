//! Admin routes for fees and exchange rates (they take precedence over
//! the configuration file's). Fees are per tenant (a tenant's token sets
//! its own; the operator's sets any with `?tenant=`, its own without);
//! exchange rates are the server's, as its connector converts on its one
//! ILP address. `PUT /rates/{base}` replaces every rate of a base;
//! `PUT|DELETE /rates/{base}/{counter}` sets or removes one, the base's
//! others kept (as the dashboard and `opd rate set` do).

use std::collections::BTreeMap;

use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::{get, put};
use axum::{Json, Router};
use opd_core::{Asset, AssetCode, Fee, Rate, TenantId};
use opd_service::{operator, pricing};
use serde::{Deserialize, Serialize};

use super::scope::AdminScope;
use super::state::AdminState;
use crate::error::{ApiError, ApiResult};
use crate::extract::{JsonBody, PathParam, PathParams2, QueryPairs};

/// This part's routes.
pub(super) fn routes() -> Router<AdminState> {
    Router::new()
        .route("/fees", get(list_fees))
        .route("/fees/{code}/{scale}", put(set_fee).delete(delete_fee))
        .route("/rates", get(list_rates))
        .route("/rates/{base}", put(set_rates))
        .route(
            "/rates/{base}/{counter}",
            put(set_one_rate).delete(delete_one_rate),
        )
        .route("/rates-url", put(set_rates_url))
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct FeeInput {
    /// Minor units, as a decimal string like every amount.
    fixed: String,
    basis_points: i64,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct FeeAdmin {
    tenant: String,
    asset_code: String,
    asset_scale: u8,
    fixed: String,
    basis_points: u16,
    updated_at: String,
}

fn parse_asset_path(code: &str, scale: &str) -> ApiResult<Asset> {
    let scale: i64 = scale
        .parse()
        .map_err(|_| ApiError::invalid_request("asset scale must be an integer from 0 to 255"))?;
    Asset::parse(code, scale).map_err(|e| ApiError::invalid_request(e.to_string()))
}

/// The tenant a fee request is about: `?tenant=` for the operator (its
/// own when absent, every tenant's when listing), the token's own for a
/// tenant (another's is not found).
fn fee_tenant(scope: &AdminScope, query: &QueryPairs) -> ApiResult<Option<TenantId>> {
    scope.tenant_asked(query.single("tenant")?)
}

async fn list_fees(
    State(state): State<AdminState>,
    scope: AdminScope,
    query: QueryPairs,
) -> ApiResult<Json<Vec<FeeAdmin>>> {
    let tenant = fee_tenant(&scope, &query)?;
    let fees = operator::fees(&state.app.services, tenant.as_ref()).await?;
    Ok(Json(
        fees.iter()
            .map(|f| FeeAdmin {
                tenant: f.tenant.to_string(),
                asset_code: f.asset.code.to_string(),
                asset_scale: f.asset.scale,
                fixed: f.fee.fixed.to_string(),
                basis_points: f.fee.basis_points,
                updated_at: f.updated_at.to_rfc3339(),
            })
            .collect(),
    ))
}

async fn set_fee(
    State(state): State<AdminState>,
    scope: AdminScope,
    query: QueryPairs,
    PathParams2(code, scale): PathParams2,
    JsonBody { value: req, .. }: JsonBody<FeeInput>,
) -> ApiResult<StatusCode> {
    let tenant = fee_tenant(&scope, &query)?.unwrap_or_else(TenantId::operator);
    let services = &state.app.services;
    if services
        .store
        .get_tenant(&tenant)
        .await
        .map_err(opd_service::ServiceError::from)?
        .is_none()
    {
        return Err(ApiError::not_found("tenant"));
    }
    let asset = parse_asset_path(&code, &scale)?;
    let fixed = opd_core::money::parse_u64_canonical(&req.fixed).map_err(|e| {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            "invalid_amount",
            format!("fixed: {e}"),
        )
    })?;
    let bp = u16::try_from(req.basis_points).ok();
    let fee = bp.and_then(|bp| Fee::new(fixed, bp).ok()).ok_or_else(|| {
        ApiError::invalid_request("basisPoints must be an integer from 0 to 10000")
    })?;
    pricing::set_fee(services, &tenant, &asset, Some(fee)).await?;
    Ok(StatusCode::NO_CONTENT)
}

async fn delete_fee(
    State(state): State<AdminState>,
    scope: AdminScope,
    query: QueryPairs,
    PathParams2(code, scale): PathParams2,
) -> ApiResult<StatusCode> {
    let tenant = fee_tenant(&scope, &query)?.unwrap_or_else(TenantId::operator);
    let asset = parse_asset_path(&code, &scale)?;
    pricing::set_fee(&state.app.services, &tenant, &asset, None).await?;
    Ok(StatusCode::NO_CONTENT)
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct RatesAdmin {
    /// base -> counter -> rate, as exact decimal strings.
    rates: BTreeMap<String, BTreeMap<String, String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    rates_url: Option<String>,
}

async fn list_rates(State(state): State<AdminState>) -> ApiResult<Json<RatesAdmin>> {
    let services = &state.app.services;
    let mut rates: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    for r in operator::rates(services).await? {
        rates
            .entry(r.base.to_string())
            .or_default()
            .insert(r.counter.to_string(), r.rate.to_string());
    }
    let rates_url = operator::rates_url(services).await?;
    Ok(Json(RatesAdmin { rates, rates_url }))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SetRates {
    /// counter -> rate; rates may be strings (`"0.91"`) or numbers.
    rates: BTreeMap<String, Rate>,
}

async fn set_rates(
    State(state): State<AdminState>,
    PathParam(base): PathParam,
    JsonBody { value: req, .. }: JsonBody<SetRates>,
) -> ApiResult<StatusCode> {
    let base = AssetCode::parse(&base).map_err(|e| ApiError::invalid_request(e.to_string()))?;
    let mut rates = Vec::new();
    for (counter, rate) in req.rates {
        let counter =
            AssetCode::parse(&counter).map_err(|e| ApiError::invalid_request(e.to_string()))?;
        rates.push((counter, rate));
    }
    pricing::set_rates(&state.app.services, &base, &rates).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// The body of `PUT /rates/{base}/{counter}`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SetRate {
    /// A string (`"0.91"`) or a number.
    rate: Rate,
}

/// The asset codes of `/rates/{base}/{counter}`.
fn rate_pair(base: &str, counter: &str) -> ApiResult<(AssetCode, AssetCode)> {
    let code = |c: &str| AssetCode::parse(c).map_err(|e| ApiError::invalid_request(e.to_string()));
    Ok((code(base)?, code(counter)?))
}

/// `PUT /rates/{base}/{counter}` `{rate}`: sets one rate, the base's
/// others kept.
async fn set_one_rate(
    State(state): State<AdminState>,
    PathParams2(base, counter): PathParams2,
    JsonBody { value: req, .. }: JsonBody<SetRate>,
) -> ApiResult<StatusCode> {
    let (base, counter) = rate_pair(&base, &counter)?;
    pricing::set_rate(&state.app.services, &base, &counter, Some(req.rate)).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// `DELETE /rates/{base}/{counter}`: removes one rate, the base's others
/// kept; 404 when there is none.
async fn delete_one_rate(
    State(state): State<AdminState>,
    PathParams2(base, counter): PathParams2,
) -> ApiResult<StatusCode> {
    let (base, counter) = rate_pair(&base, &counter)?;
    if !pricing::set_rate(&state.app.services, &base, &counter, None).await? {
        return Err(ApiError::not_found("rate"));
    }
    Ok(StatusCode::NO_CONTENT)
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SetRatesUrl {
    url: Option<String>,
}

async fn set_rates_url(
    State(state): State<AdminState>,
    JsonBody { value: req, .. }: JsonBody<SetRatesUrl>,
) -> ApiResult<StatusCode> {
    pricing::set_rates_url(&state.app.services, req.url.as_deref()).await?;
    Ok(StatusCode::NO_CONTENT)
}
