//! Which tenant an Open Payments request is for, resolved from its `Host`
//! and path before routing (`opd_service::tenants::SiteTable::for_request`):
//! the tenant's path prefix is taken off, so every tenant has the same
//! routes, and the handlers find the tenant's site in [`RequestSite`].
//! Whatever a request names (a wallet address, a resource by id) is looked
//! for in that tenant only: another tenant's is answered as if it did not
//! exist.

use std::sync::Arc;

use axum::extract::{FromRequestParts, OriginalUri, Request, State};
use axum::http::request::Parts;
use axum::http::{header, Uri};
use axum::middleware::Next;
use axum::response::Response;
use opd_core::wallet_address::WalletAddress;
use opd_service::tenants::Site;

use crate::error::ApiError;
use crate::AppState;

/// The site (tenant) a request is for.
#[derive(Debug, Clone)]
pub struct RequestSite(pub Arc<Site>);

impl RequestSite {
    /// Whether a wallet address is this tenant's.
    pub fn owns(&self, wallet: &WalletAddress) -> bool {
        wallet.tenant == self.0.tenant
    }

    /// A wallet address's URL (under this tenant's public URL).
    pub fn wallet_url(&self, wallet: &WalletAddress) -> String {
        self.0.wallet_url(wallet)
    }

    /// The base URL, and so the origin, of this tenant's resources.
    pub fn public_url(&self) -> &opd_service::PublicUrl {
        &self.0.public_url
    }
}

impl FromRequestParts<AppState> for RequestSite {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &AppState) -> Result<Self, ApiError> {
        parts
            .extensions
            .get::<RequestSite>()
            .cloned()
            .ok_or_else(|| ApiError::not_found("route"))
    }
}

/// The request's host: `Host`, or the authority of an HTTP/2 request.
pub(crate) fn request_host(request: &Request) -> Option<&str> {
    request
        .headers()
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .or_else(|| request.uri().authority().map(|a| a.as_str()))
}

/// Resolves the request's site, takes its path prefix off the URI, and
/// leaves the site for the handlers; no site there is a 404.
pub async fn resolve(
    State(state): State<AppState>,
    mut request: Request,
    next: Next,
) -> Result<Response, ApiError> {
    let table = state.services.sites.table().await?;
    let path = request.uri().path();
    let (site, prefix) = table
        .for_request(request_host(&request), path)
        .ok_or_else(|| ApiError::not_found("route"))?;
    if prefix > 0 {
        // Signatures cover the URI as sent (see `auth::sent_path_and_query`).
        if request.extensions().get::<OriginalUri>().is_none() {
            let sent = OriginalUri(request.uri().clone());
            request.extensions_mut().insert(sent);
        }
        let path = request.uri().path();
        let rest = match &path[prefix..] {
            "" => "/",
            rest => rest,
        };
        let rewritten = match request.uri().query() {
            Some(q) => format!("{rest}?{q}"),
            None => rest.to_owned(),
        };
        let uri: Uri = rewritten
            .parse()
            .map_err(|_| ApiError::not_found("route"))?;
        *request.uri_mut() = uri;
    }
    request.extensions_mut().insert(RequestSite(site));
    Ok(next.run(request).await)
}
