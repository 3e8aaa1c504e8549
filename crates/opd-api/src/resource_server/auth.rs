//! Resource server access control at the HTTP edge: the request's method,
//! target URI (as the client saw it, from the public URL), headers and raw
//! body go to `opd_service::access`, and its refusals become JSON errors
//! (401s with `WWW-Authenticate: GNAP as_uri=...`).
//!
//! Every protected Open Payments handler takes an [`Authorized`] extractor
//! naming the access it needs, `Authorized<kind::Quote, action::Create>`:
//! the token and signature are checked before the handler runs, and the
//! handler then asks for the [`Caller`] on the wallet address the resource
//! belongs to (`auth.caller_for(&wallet_url)?`), which it only knows after
//! reading the body or the resource.

use std::marker::PhantomData;

use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, OptionalFromRequest, OriginalUri, Request};
use axum::http::request::Parts;
use axum::http::{header, HeaderMap, Method, StatusCode};
use opd_gnap::{AccessType, Action};
use opd_service::access::replays::{ReplaySlot, RequestClaim};
use opd_service::access::{self, AccessError, Authenticated, Caller, Required};

use crate::error::{ApiError, ApiResult};
use crate::extract::RawBody;
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
    /// The authorization server a 401's challenge names: the request's
    /// tenant's.
    pub as_uri: String,
}

/// The authorization server of the request's tenant (the server's when
/// no tenant was resolved).
pub(crate) fn as_uri_of(extensions: &axum::http::Extensions, state: &AppState) -> String {
    match extensions.get::<super::site::RequestSite>() {
        Some(site) => site.0.auth_server_url.clone(),
        None => state.services.config.auth_server_url.clone(),
    }
}

/// The path and query as the client sent them: before any nesting
/// stripped a prefix, and with the empty segments
/// [`crate::collapse_empty_segments`] reads as absent.
fn sent_path_and_query(parts: &Parts) -> &str {
    let sent = parts
        .extensions
        .get::<crate::SentUri>()
        .map(|s| &s.0)
        .or_else(|| parts.extensions.get::<OriginalUri>().map(|o| &o.0))
        .unwrap_or(&parts.uri);
    sent.path_and_query().map_or("/", |p| p.as_str())
}

/// The target URI of a resource server request: its tenant's public URL's
/// origin plus the path and query as sent.
pub(crate) fn rs_target_uri(parts: &Parts, state: &AppState) -> String {
    let public = match parts.extensions.get::<super::site::RequestSite>() {
        Some(site) => site.public_url(),
        None => &state.services.config.public_url,
    };
    let prefix = public.path_prefix();
    let public = public.as_str();
    let origin = &public[..public.len() - prefix.len()];
    format!("{origin}{}", sent_path_and_query(parts))
}

/// The target URI of an authorization server request: its public origin
/// plus the path (under the grant endpoint's) and query as sent, which is
/// what the client signed: `https://example.com/gnap` for a grant request
/// to that `authServer`, `https://example.com/gnap/` for one sent there.
pub(crate) fn as_target_uri(parts: &Parts, state: &AppState) -> String {
    let auth = parts
        .extensions
        .get::<crate::auth_server::site::AuthTenant>()
        .map(|a| a.0.clone())
        .unwrap_or_else(opd_core::TenantId::operator);
    let origin = crate::auth_server::site::origin_of(&state.services, &auth);
    format!("{origin}{}", sent_path_and_query(parts))
}

impl FromRequestParts<AppState> for RequestMeta {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        Ok(Self {
            method: parts.method.clone(),
            target_uri: rs_target_uri(parts, state),
            headers: parts.headers.clone(),
            replay: parts.extensions.get::<ReplaySlot>().cloned(),
            as_uri: as_uri_of(&parts.extensions, state),
        })
    }
}

impl RequestMeta {
    /// The request's replay claim, for the use case whose store write
    /// carries it (see `opd_service::access::replays`).
    pub fn claim(&self) -> Option<&RequestClaim> {
        self.replay.as_ref().map(ReplaySlot::claim)
    }
}

/// The same for the authorization server listener, whose routes sit
/// under the path of its public URL (a proxy forwards them unchanged).
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
            as_uri: state.services.config.auth_server_url.clone(),
        }))
    }
}

/// Maps an access refusal to its response.
pub fn access_error(as_uri: &str, e: AccessError) -> ApiError {
    let challenge = format!("GNAP as_uri={as_uri}");
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
async fn authenticate(
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
        .map_err(|e| access_error(&meta.as_uri, e))
}

/// The kind of resource a protected handler serves (the access item's
/// `type`); implemented by the markers in [`kind`].
pub trait AccessKind {
    const KIND: AccessType;
}

/// What a protected handler does with it (the access item's action);
/// implemented by the markers in [`action`].
pub trait AccessAction {
    const ACTION: Action;
}

/// The resource kinds, as type parameters of [`Authorized`].
pub mod kind {
    use super::{AccessKind, AccessType};

    /// `incoming-payment`.
    #[derive(Debug)]
    pub struct IncomingPayment;
    impl AccessKind for IncomingPayment {
        const KIND: AccessType = AccessType::IncomingPayment;
    }

    /// `quote`.
    #[derive(Debug)]
    pub struct Quote;
    impl AccessKind for Quote {
        const KIND: AccessType = AccessType::Quote;
    }

    /// `outgoing-payment`.
    #[derive(Debug)]
    pub struct OutgoingPayment;
    impl AccessKind for OutgoingPayment {
        const KIND: AccessType = AccessType::OutgoingPayment;
    }
}

/// The actions, as type parameters of [`Authorized`]. A token granting
/// `read-all` or `list-all` satisfies `Read` or `List`; the [`Caller`]'s
/// action says which it holds.
pub mod action {
    use super::{AccessAction, Action};

    /// `create`.
    #[derive(Debug)]
    pub struct Create;
    impl AccessAction for Create {
        const ACTION: Action = Action::Create;
    }

    /// `read` (or `read-all`).
    #[derive(Debug)]
    pub struct Read;
    impl AccessAction for Read {
        const ACTION: Action = Action::Read;
    }

    /// `list` (or `list-all`).
    #[derive(Debug)]
    pub struct List;
    impl AccessAction for List {
        const ACTION: Action = Action::List;
    }

    /// `complete`.
    #[derive(Debug)]
    pub struct Complete;
    impl AccessAction for Complete {
        const ACTION: Action = Action::Complete;
    }
}

/// A request whose access token and signature are valid for `K` and `A`.
///
/// Extracting it checks the token and the signature (over the body too,
/// for a POST) before the handler sees anything, so an unauthenticated
/// caller learns nothing from validation errors. Whether the token allows
/// `A` on `K` of a given wallet address is asked afterwards, with
/// [`Authorized::caller_for`]: the wallet address is in the body or the
/// stored resource. Refusals are the same JSON errors as everywhere on the
/// resource server ([`access_error`]).
///
/// As `Option<Authorized<..>>` it is `None` for a request without an
/// `Authorization` header (the public view of an incoming payment).
///
/// It reads the body, so it comes last among a handler's arguments.
#[derive(Debug)]
pub struct Authorized<K, A> {
    authenticated: Authenticated,
    body: Bytes,
    /// Where the signature check left its replay claim (state-changing
    /// requests).
    replay: Option<ReplaySlot>,
    /// The authorization server refusals name.
    as_uri: String,
    // `fn() -> _`: the markers are only names, whatever their auto traits.
    access: PhantomData<fn() -> (K, A)>,
}

impl<K: AccessKind, A: AccessAction> Authorized<K, A> {
    /// The raw body the signature covered (empty but for a POST).
    pub fn body(&self) -> &[u8] {
        &self.body
    }

    /// The caller, when the token allows `A` on `K` of the wallet address
    /// at `wallet_address` (its URL); 403 `insufficient_access` otherwise.
    pub fn caller_for(&self, wallet_address: &str) -> ApiResult<Caller> {
        self.require(Some(wallet_address))
    }

    /// The caller, when the token allows `A` on `K` of whatever wallet
    /// address it names: for what belongs to the grant itself (its
    /// spending), not to one wallet address's resources.
    pub fn caller(&self) -> ApiResult<Caller> {
        self.require(None)
    }

    /// The request's replay claim, for the use case whose store write
    /// carries it (see `opd_service::access::replays`); `None` for a
    /// request the replay layer does not claim (a read).
    pub fn claim(&self) -> Option<&RequestClaim> {
        self.replay.as_ref().map(ReplaySlot::claim)
    }

    /// The checked token, to ask about other access than `A` on `K`.
    pub fn authenticated(&self) -> &Authenticated {
        &self.authenticated
    }

    fn require(&self, wallet_address: Option<&str>) -> ApiResult<Caller> {
        let required = Required {
            kind: K::KIND,
            action: A::ACTION,
            wallet_address,
        };
        self.authenticated
            .require(required)
            .map_err(|e| access_error(&self.as_uri, e))
    }
}

impl<K: AccessKind, A: AccessAction> FromRequest<AppState> for Authorized<K, A> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &AppState) -> Result<Self, ApiError> {
        let (mut parts, body) = req.into_parts();
        let meta = RequestMeta::from_request_parts(&mut parts, state).await?;
        // The resource server's POSTs sign their body (Content-Digest); a
        // GET is signed without it, and whatever body it has is not read.
        let body = if parts.method == Method::POST {
            RawBody::from_request(Request::from_parts(parts, body), state)
                .await?
                .0
        } else {
            Bytes::new()
        };
        let authenticated = authenticate(state, &meta, Some(&body), K::KIND, A::ACTION).await?;
        Ok(Self {
            authenticated,
            body,
            replay: meta.replay,
            as_uri: meta.as_uri,
            access: PhantomData,
        })
    }
}

impl<K: AccessKind, A: AccessAction> OptionalFromRequest<AppState> for Authorized<K, A> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &AppState) -> Result<Option<Self>, ApiError> {
        if !req.headers().contains_key(header::AUTHORIZATION) {
            return Ok(None);
        }
        let authorized = <Self as FromRequest<AppState>>::from_request(req, state).await?;
        Ok(Some(authorized))
    }
}
