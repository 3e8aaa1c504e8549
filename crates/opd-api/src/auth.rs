//! Resource server access control at the HTTP edge: the request's method,
//! target URI (as the client saw it, from the public URL), headers and raw
//! body go to `opd_service::access`, and its refusals become JSON errors
//! (401s with `WWW-Authenticate: GNAP as_uri=...`).

use axum::extract::{FromRequestParts, OriginalUri};
use axum::http::request::Parts;
use axum::http::{header, HeaderMap, Method, StatusCode};
use opd_service::access::{self, AccessError, Authenticated};
use opd_service::Services;

use crate::error::ApiError;
use crate::AppState;

/// The parts of a request its signature covers.
#[derive(Debug)]
pub struct RequestMeta {
    pub method: Method,
    /// The absolute URL the client called: the public URL's origin plus the
    /// original path and query.
    pub target_uri: String,
    pub headers: HeaderMap,
}

impl FromRequestParts<AppState> for RequestMeta {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let original = OriginalUri::from_request_parts(parts, state)
            .await
            .map_or_else(|_| parts.uri.clone(), |o| o.0);
        let path_and_query = original.path_and_query().map_or("/", |p| p.as_str());
        let public = state.services.config.public_url.as_str();
        let prefix = state.services.config.public_url.path_prefix();
        let origin = &public[..public.len() - prefix.len()];
        Ok(Self {
            method: parts.method.clone(),
            target_uri: format!("{origin}{path_and_query}"),
            headers: parts.headers.clone(),
        })
    }
}

/// The same for the authorization server listener, whose routes sit at
/// the root of its public URL (a proxy may map a path prefix onto it).
#[derive(Debug)]
pub struct AuthRequestMeta(pub RequestMeta);

impl FromRequestParts<AppState> for AuthRequestMeta {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let path_and_query = parts.uri.path_and_query().map_or("/", |p| p.as_str());
        let base = state.services.config.auth_server_url.trim_end_matches('/');
        Ok(Self(RequestMeta {
            method: parts.method.clone(),
            target_uri: format!("{base}{path_and_query}"),
            headers: parts.headers.clone(),
        }))
    }
}

impl RequestMeta {
    /// Whether the request carries an `Authorization` header at all.
    pub fn has_authorization(&self) -> bool {
        self.headers.contains_key(header::AUTHORIZATION)
    }
}

/// Maps an access refusal to its response.
pub fn access_error(services: &Services, e: AccessError) -> ApiError {
    let challenge = format!("GNAP as_uri={}", services.config.auth_server_url);
    let unauthorized = |code: &'static str, description: String| {
        let mut err = ApiError::new(StatusCode::UNAUTHORIZED, code, description);
        err.www_authenticate = Some(challenge.clone());
        err
    };
    match e {
        AccessError::MissingToken => unauthorized("missing_token", e.to_string()),
        // Deployed clients rotate their token on exactly this description.
        AccessError::InvalidToken => unauthorized("invalid_token", "Invalid Token".into()),
        AccessError::Signature(_) | AccessError::UnknownKey(_) => {
            unauthorized("invalid_signature", e.to_string())
        }
        // A client that sent the same request twice within one second (its
        // signatures carry no nonce) may simply retry: `Retry-After` says
        // so. The description deliberately lacks "Signature validation
        // error", which clients read as a revoked key. 401 is the status the
        // spec documents for authentication failures.
        AccessError::Replayed => {
            let mut err = unauthorized("replayed_request", e.to_string());
            err.retry_after = Some(1);
            err
        }
        AccessError::Forbidden(m) => ApiError::new(StatusCode::FORBIDDEN, "insufficient_access", m),
        AccessError::Unavailable => ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "service_unavailable",
            "the database is unavailable; try again later",
        ),
    }
}

/// Checks token and signature of a request with the given raw body.
pub async fn authenticate(
    state: &AppState,
    meta: &RequestMeta,
    body: Option<&[u8]>,
    kind: opd_gnap::AccessType,
    action: opd_gnap::Action,
) -> Result<Authenticated, ApiError> {
    let services = &state.services;
    let body = body.filter(|b| !b.is_empty());
    let parts = opd_httpsig::RequestParts::new(&meta.method, &meta.target_uri, &meta.headers, body);
    let authorization = meta
        .headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    access::authenticate(services, &parts, authorization, kind, action)
        .await
        .map_err(|e| access_error(services, e))
}
