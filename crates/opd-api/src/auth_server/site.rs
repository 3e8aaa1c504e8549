//! Which authorization server a request to the authorization server
//! listener is for: a tenant's own, when its `Host` is the host of that
//! tenant's `authServerUrl` (the root of a host of its own), else the
//! server's, shared by every other tenant. The handlers find it in
//! [`AuthTenant`]; a grant, token or interaction is only found at the
//! authorization server that issued it.

use axum::extract::{FromRequestParts, Request, State};
use axum::http::request::Parts;
use axum::middleware::Next;
use axum::response::Response;
use opd_core::TenantId;

use crate::error::ApiError;
use crate::AppState;

/// Whose authorization server a request is for: a tenant with its own,
/// or the operator (the shared one).
#[derive(Debug, Clone)]
pub struct AuthTenant(pub TenantId);

impl AuthTenant {
    /// The path this authorization server's routes sit under.
    pub fn prefix(&self, services: &opd_service::Services) -> String {
        prefix_of(services, &self.0)
    }
}

/// The path the routes of `auth_tenant`'s authorization server sit under:
/// a tenant's own is at the root of its host.
pub fn prefix_of(services: &opd_service::Services, auth_tenant: &TenantId) -> String {
    if auth_tenant.is_operator() {
        services.config.auth_path_prefix().to_owned()
    } else {
        String::new()
    }
}

/// The origin of `auth_tenant`'s authorization server, which signatures
/// of requests to it cover.
pub fn origin_of(services: &opd_service::Services, auth_tenant: &TenantId) -> String {
    if auth_tenant.is_operator() {
        return services.config.auth_origin().to_owned();
    }
    let own = services.sites.auth_server_now(auth_tenant);
    own.trim_end_matches('/').to_owned()
}

impl<S: Send + Sync> FromRequestParts<S> for AuthTenant {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ApiError> {
        Ok(parts
            .extensions
            .get::<AuthTenant>()
            .cloned()
            .unwrap_or(AuthTenant(TenantId::operator())))
    }
}

/// Resolves whose authorization server the request's `Host` names.
pub async fn resolve(
    State(state): State<AppState>,
    mut request: Request,
    next: Next,
) -> Result<Response, ApiError> {
    let table = state.services.sites.table().await?;
    let host = crate::resource_server::site::request_host(&request);
    let site = table.for_auth_host(host);
    let auth = AuthTenant(site.auth_tenant.clone());
    request.extensions_mut().insert(auth);
    Ok(next.run(request).await)
}
