//! Resource server access control at the HTTP edge: the request's method,
//! target URI (as the client saw it, from the public URL), headers and raw
//! body go to `opd_service::access`, and its refusals become JSON errors
//! (401s with `WWW-Authenticate: GNAP as_uri=...`).

use axum::extract::{FromRequestParts, OriginalUri};
use axum::http::request::Parts;
use axum::http::{header, HeaderMap, Method, StatusCode};
use opd_service::access::{self, AccessError, Authenticated};
use opd_service::replays::ReplaySlot;
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
    /// Where the signature check leaves its replay claim or answer (set by
    /// the replay layer on state-changing requests, see `crate::replays`).
    pub replay: Option<ReplaySlot>,
}

/// The target URI of a resource server request: the public URL's origin
/// plus the original path and query (before any nesting stripped them).
pub(crate) fn rs_target_uri(parts: &Parts, state: &AppState) -> String {
    let original = parts
        .extensions
        .get::<OriginalUri>()
        .map_or(&parts.uri, |o| &o.0);
    let path_and_query = original.path_and_query().map_or("/", |p| p.as_str());
    let public = state.services.config.public_url.as_str();
    let prefix = state.services.config.public_url.path_prefix();
    let origin = &public[..public.len() - prefix.len()];
    format!("{origin}{path_and_query}")
}

/// The target URI of an authorization server request.
pub(crate) fn as_target_uri(parts: &Parts, state: &AppState) -> String {
    let path_and_query = parts.uri.path_and_query().map_or("/", |p| p.as_str());
    let base = state.services.config.auth_server_url.trim_end_matches('/');
    format!("{base}{path_and_query}")
}

impl FromRequestParts<AppState> for RequestMeta {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        Ok(Self {
            method: parts.method.clone(),
            target_uri: rs_target_uri(parts, state),
            headers: parts.headers.clone(),
            replay: parts.extensions.get::<ReplaySlot>().cloned(),
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
        Ok(Self(RequestMeta {
            method: parts.method.clone(),
            target_uri: as_target_uri(parts, state),
            headers: parts.headers.clone(),
            replay: parts.extensions.get::<ReplaySlot>().cloned(),
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
        AccessError::Replayed | AccessError::ReplayPending | AccessError::Answered => {
            let mut err = replay_error(&e);
            if err.status == StatusCode::UNAUTHORIZED {
                err.www_authenticate = Some(challenge);
            }
            err
        }
        AccessError::Forbidden(m) => ApiError::new(StatusCode::FORBIDDEN, "insufficient_access", m),
        AccessError::Unavailable => ApiError::unavailable(),
    }
}

/// The refusal of a replayed request that cannot be answered with the
/// first one's response (on both listeners). Neither description contains
/// "Signature validation error" and neither code is `invalid_client`:
/// deployed clients read those as a revoked key.
pub fn replay_error(e: &AccessError) -> ApiError {
    match e {
        // Still running after the wait bound (or its node died): the answer
        // may come later, so say when to ask again.
        AccessError::ReplayPending => {
            let mut err = ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "request_in_progress",
                e.to_string(),
            );
            err.retry_after = Some(1);
            err
        }
        // `Answered` only reaches a client if no replay layer is installed
        // (then the answer cannot be sent): refused like a lost response.
        _ => ApiError::new(
            StatusCode::UNAUTHORIZED,
            "replayed_request",
            AccessError::Replayed.to_string(),
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
    let slot = meta.replay.as_ref();
    access::authenticate(services, &parts, authorization, kind, action, slot)
        .await
        .map_err(|e| access_error(services, e))
}
