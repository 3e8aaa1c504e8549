//! Admin routes for tenants, the operator's alone:
//! `POST /tenants`, `GET /tenants`, `GET|PATCH|DELETE /tenants/{id}` and
//! `POST /tenants/{id}/token`. A tenant's admin token is in the answer to
//! its creation and to a rotation, and nowhere else: opd keeps its digest.

use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Json, Router};
use opd_core::tenant::Tenant;
use opd_service::tenants::{self, NewTenant, SiteTable, TenantPatch};
use secrecy::SecretString;
use serde::{Deserialize, Deserializer, Serialize};

use super::state::AdminState;
use crate::error::ApiResult;
use crate::extract::{non_null, JsonBody, PathParam};

/// This part's routes.
pub(super) fn routes() -> Router<AdminState> {
    Router::new()
        .route("/tenants", post(create_tenant).get(list_tenants))
        .route(
            "/tenants/{tenant}",
            get(get_tenant).patch(update_tenant).delete(delete_tenant),
        )
        .route("/tenants/{tenant}/token", post(rotate_token))
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct TenantAdmin {
    id: String,
    public_name: String,
    /// Where its wallet addresses are (the server's for the operator's).
    public_url: String,
    auth_server_url: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    webhook_url: Option<String>,
    /// Its consent app; absent: the built-in consent page.
    #[serde(skip_serializing_if = "Option::is_none")]
    idp_consent_url: Option<String>,
    operator: bool,
    created_at: String,
    updated_at: String,
    /// Only in the answers to a creation and a rotation.
    #[serde(skip_serializing_if = "Option::is_none")]
    admin_token: Option<String>,
}

fn tenant_admin(sites: &SiteTable, t: &Tenant) -> TenantAdmin {
    let site = sites.of(&t.id);
    TenantAdmin {
        id: t.id.to_string(),
        public_name: t.public_name.clone(),
        public_url: t
            .public_url
            .clone()
            .unwrap_or_else(|| site.public_url.to_string()),
        auth_server_url: site.auth_server_url.clone(),
        webhook_url: t.webhook_url.clone(),
        idp_consent_url: site.idp_consent_url.clone(),
        operator: t.id.is_operator(),
        created_at: t.created_at.to_rfc3339(),
        updated_at: t.updated_at.to_rfc3339(),
        admin_token: None,
    }
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct CreateTenant {
    id: String,
    public_name: String,
    public_url: String,
    /// Its own authorization server: the root of a host of its own.
    #[serde(default, deserialize_with = "non_null")]
    auth_server_url: Option<String>,
    #[serde(default, deserialize_with = "non_null")]
    webhook_url: Option<String>,
    /// The key of the `Opd-Signature` of its events (never shown again).
    #[serde(default, deserialize_with = "non_null")]
    webhook_secret: Option<String>,
    #[serde(default, deserialize_with = "non_null")]
    idp_consent_url: Option<String>,
    /// What its consent app sends as `x-idp-secret` (never shown again).
    #[serde(default, deserialize_with = "non_null")]
    idp_secret: Option<String>,
}

/// A field that may be absent (unchanged), `null` (cleared) or a value.
fn nullable<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Option<String>>, D::Error> {
    Option::<String>::deserialize(d).map(Some)
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct UpdateTenant {
    #[serde(default, deserialize_with = "non_null")]
    public_name: Option<String>,
    #[serde(default, deserialize_with = "non_null")]
    public_url: Option<String>,
    #[serde(default, deserialize_with = "nullable")]
    auth_server_url: Option<Option<String>>,
    #[serde(default, deserialize_with = "nullable")]
    webhook_url: Option<Option<String>>,
    #[serde(default, deserialize_with = "nullable")]
    webhook_secret: Option<Option<String>>,
    #[serde(default, deserialize_with = "nullable")]
    idp_consent_url: Option<Option<String>>,
    #[serde(default, deserialize_with = "nullable")]
    idp_secret: Option<Option<String>>,
}

async fn create_tenant(
    State(state): State<AdminState>,
    JsonBody { value: req, .. }: JsonBody<CreateTenant>,
) -> ApiResult<(StatusCode, Json<TenantAdmin>)> {
    let services = &state.app.services;
    let new = NewTenant {
        id: req.id,
        public_name: req.public_name,
        public_url: req.public_url,
        auth_server_url: req.auth_server_url,
        webhook_url: req.webhook_url,
        webhook_secret: req.webhook_secret.map(SecretString::from),
        idp_consent_url: req.idp_consent_url,
        idp_secret: req.idp_secret.map(SecretString::from),
    };
    let (tenant, token) = tenants::create(services, new).await?;
    let sites = services.sites.with(&tenant.id).await?;
    let mut body = tenant_admin(&sites, &tenant);
    body.admin_token = Some(token);
    Ok((StatusCode::CREATED, Json(body)))
}

async fn list_tenants(State(state): State<AdminState>) -> ApiResult<Json<Vec<TenantAdmin>>> {
    let services = &state.app.services;
    let all = tenants::list(services).await?;
    let sites = services.sites.table().await?;
    Ok(Json(all.iter().map(|t| tenant_admin(&sites, t)).collect()))
}

async fn get_tenant(
    State(state): State<AdminState>,
    PathParam(id): PathParam,
) -> ApiResult<Json<TenantAdmin>> {
    let services = &state.app.services;
    let tenant = tenants::get(services, &id).await?;
    let sites = services.sites.with(&tenant.id).await?;
    Ok(Json(tenant_admin(&sites, &tenant)))
}

async fn update_tenant(
    State(state): State<AdminState>,
    PathParam(id): PathParam,
    JsonBody { value: req, .. }: JsonBody<UpdateTenant>,
) -> ApiResult<Json<TenantAdmin>> {
    let services = &state.app.services;
    let patch = TenantPatch {
        public_name: req.public_name,
        public_url: req.public_url,
        auth_server_url: req.auth_server_url,
        webhook_url: req.webhook_url,
        webhook_secret: req.webhook_secret.map(|s| s.map(SecretString::from)),
        idp_consent_url: req.idp_consent_url,
        idp_secret: req.idp_secret.map(|s| s.map(SecretString::from)),
    };
    let tenant = tenants::update(services, &id, patch).await?;
    let sites = services.sites.with(&tenant.id).await?;
    Ok(Json(tenant_admin(&sites, &tenant)))
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct TokenAdmin {
    admin_token: String,
}

async fn rotate_token(
    State(state): State<AdminState>,
    PathParam(id): PathParam,
) -> ApiResult<Json<TokenAdmin>> {
    let admin_token = tenants::rotate_token(&state.app.services, &id).await?;
    Ok(Json(TokenAdmin { admin_token }))
}

async fn delete_tenant(
    State(state): State<AdminState>,
    PathParam(id): PathParam,
) -> ApiResult<StatusCode> {
    tenants::delete(&state.app.services, &id).await?;
    Ok(StatusCode::NO_CONTENT)
}
