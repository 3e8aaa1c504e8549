//! The GNAP authorization server listener. Its routes live under the path
//! of its grant endpoint (the published `authServer`): below, `/` is
//! `https://example.com/gnap` when that is the grant endpoint.
//!
//! - `POST /`: grant request, signed by the client's key (from its wallet
//!   address's JWKS, or the `jwk` in the request);
//! - `POST|DELETE /continue/{id}`: continue or cancel, with
//!   `Authorization: GNAP <continuation token>`;
//! - `POST|DELETE /token/{id}`: rotate or revoke, with
//!   `Authorization: GNAP <access token>`;
//! - `GET /interact/{id}/{nonce}`: the user's browser starts here, and is
//!   sent to the operator's consent app or the built-in consent page
//!   (`/consent/{id}/{nonce}`), then to `/interact/{id}/{nonce}/finish`,
//!   which redirects to the client's finish URI;
//! - `/idp/interactions/{id}/{nonce}[/accept|/reject]`: the identity
//!   provider API for the operator's own consent app (`x-idp-secret`);
//! - `GET|POST /wallet/<path>`: the wallet owner's own page ([`owner`]).
//!
//! Errors are GNAP error objects `{"error":{"code","description"}}`.

mod consent;
mod consent_words;
mod owner;
mod password;
pub mod site;

use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use opd_gnap::{
    ClientIdent, GnapError, GnapErrorCode, GrantRequest, RotateTokenResponse, ValidatedGrantRequest,
};
use opd_service::access::{self, AccessError};
use opd_service::grants::{self, Interaction};
use opd_service::Services;
use secrecy::ExposeSecret;
use serde_json::json;
use subtle::ConstantTimeEq;

use crate::client_network::ClientNet;
use crate::error::ApiError;
use crate::extract::{parse_json, PathParam, PathParams2, RawBody};
use crate::pages;
use crate::resource_server::auth::{AuthRequestMeta, RequestMeta};
use crate::AppState;
use consent::{after_decision, error_page};
use site::AuthTenant;

/// The authorization server routes, under the path of its grant endpoint
/// (`/gnap/continue/{id}` for `https://example.com/gnap`): a proxy
/// forwards them unchanged. The grant endpoint itself also answers with a
/// trailing slash (`/gnap/`); each request's signature covers the URL as
/// sent.
pub fn auth_router(state: AppState) -> Router {
    let prefix = state.services.config.auth_path_prefix().to_owned();
    let routes = Router::new()
        .route("/", post(grant_request))
        .route("/continue/{id}", post(continue_grant).delete(cancel_grant))
        .route("/token/{id}", post(rotate_token).delete(revoke_token))
        .route("/interact/{id}/{nonce}", get(start_interaction))
        .route("/interact/{id}/{nonce}/finish", get(finish_interaction))
        .route(
            "/consent/{id}/{nonce}",
            get(consent::consent_page).post(consent::consent_decision),
        )
        .route(pages::AUTH_CSS, get(pages::stylesheet))
        .route("/wallet/{*path}", get(owner::page).post(owner::act))
        .route("/idp/interactions/{id}/{nonce}", get(idp_details))
        .route(
            "/idp/interactions/{id}/{nonce}/{decision}",
            post(idp_decide),
        );
    let router = if prefix.is_empty() {
        routes
    } else {
        Router::new()
            .route(&format!("{prefix}/"), post(grant_request))
            .nest(&prefix, routes)
    };
    let router = router
        .with_state(state.clone())
        // Replayed grant requests, continuations and token calls get the
        // first response (see `crate::replays`).
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            crate::replays::auth_server,
        ));
    let routes = crate::with_fallbacks(router)
        .route_layer(axum::middleware::from_fn(crate::metrics::remember_route));
    let router = Router::new()
        .fallback_service(routes)
        .layer(axum::middleware::from_fn_with_state(state, site::resolve));
    crate::edge_layers(router)
}

/// A GNAP error as a response, or one of opd's own (same JSON shape) where
/// no GNAP code fits.
enum Gnap {
    Protocol(GnapError),
    Own(ApiError),
}

impl IntoResponse for Gnap {
    fn into_response(self) -> Response {
        match self {
            Gnap::Protocol(e) => {
                let status = StatusCode::from_u16(e.status).unwrap_or(StatusCode::BAD_REQUEST);
                (status, Json(e.to_response())).into_response()
            }
            Gnap::Own(e) => e.into_response(),
        }
    }
}

impl From<GnapError> for Gnap {
    fn from(e: GnapError) -> Self {
        Self::Protocol(e)
    }
}

impl From<ApiError> for Gnap {
    fn from(e: ApiError) -> Self {
        Self::Protocol(GnapError::invalid_request(e.description).with_status(e.status.as_u16()))
    }
}

type GnapResult<T> = Result<T, Gnap>;

/// Signature failures at the authorization server: an unknown key or client
/// is 400 `invalid_client` (deployed clients then treat the key as revoked);
/// any other signature failure is 401 `invalid_client`. A replay is never
/// `invalid_client`: it is answered with the first response (by the replay
/// layer), or refused with `replayed_request` / `request_in_progress`.
fn signature_error(e: AccessError) -> Gnap {
    match e {
        AccessError::UnknownKey(m) => Gnap::Protocol(GnapError::invalid_client(m).with_status(400)),
        AccessError::Replayed | AccessError::ReplayPending | AccessError::Answered => {
            Gnap::Own(crate::resource_server::auth::replay_error(&e))
        }
        AccessError::Unavailable => Gnap::Own(ApiError::unavailable()),
        other => Gnap::Protocol(GnapError::invalid_client(other.to_string()).with_status(401)),
    }
}

async fn verify(
    services: &Services,
    meta: &RequestMeta,
    body: &[u8],
    client: &ClientIdent,
) -> GnapResult<()> {
    let body = Some(body).filter(|b| !b.is_empty());
    let parts = opd_httpsig::RequestParts::new(&meta.method, &meta.target_uri, &meta.headers, body);
    access::verify_signature(services, &parts, client, meta.replay.as_ref())
        .await
        .map_err(signature_error)
}

/// The token in `Authorization: GNAP <token>`.
fn presented_token(meta: &RequestMeta) -> GnapResult<String> {
    let header = meta
        .headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    access::gnap_token(header).map(str::to_owned).map_err(|_| {
        Gnap::Protocol(
            GnapError::invalid_client("missing or malformed Authorization: GNAP <token>")
                .with_status(401),
        )
    })
}

async fn grant_request(
    State(state): State<AppState>,
    AuthTenant(tenant): AuthTenant,
    ClientNet(network): ClientNet,
    AuthRequestMeta(meta): AuthRequestMeta,
    RawBody(body): RawBody,
) -> GnapResult<Response> {
    let services = &state.services;
    throttled(services.limits.grants.take(&format!("ip:{network}")))?;
    let request: GrantRequest = parse_json(&body)?;
    let validated = ValidatedGrantRequest::parse(&request)?;
    verify(services, &meta, &body, &validated.client).await?;
    // Counted once the signature verified, so nobody else can use up a
    // client's allowance.
    let client = opd_service::access::client_identity(&validated.client);
    throttled(services.limits.grants.take(&format!("client:{client}")))?;
    let response = grants::request_grant(services, &tenant, validated, meta.claim()).await?;
    Ok(Json(response).into_response())
}

/// A 429 `too_many_attempts` with `Retry-After` when a limit says wait.
fn throttled(verdict: Result<(), std::time::Duration>) -> GnapResult<()> {
    verdict.map_err(|wait| {
        let mut e = ApiError::new(
            StatusCode::TOO_MANY_REQUESTS,
            "too_many_attempts",
            "too many grant requests; try again later",
        );
        e.retry_after = Some(u32::try_from(wait.as_secs().max(1)).unwrap_or(u32::MAX));
        Gnap::Own(e)
    })
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct ContinueBody {
    #[serde(default)]
    interact_ref: Option<String>,
}

async fn continue_grant(
    State(state): State<AppState>,
    AuthTenant(tenant): AuthTenant,
    AuthRequestMeta(meta): AuthRequestMeta,
    PathParam(id): PathParam,
    RawBody(body): RawBody,
) -> GnapResult<Response> {
    let services = &state.services;
    let token = presented_token(&meta)?;
    let grant = grants::grant_for_continuation(services, &tenant, &id, &token).await?;
    verify(services, &meta, &body, &grant.client).await?;
    let interact_ref = if body.is_empty() {
        None
    } else {
        parse_json::<ContinueBody>(&body)?.interact_ref
    };
    let interact_ref = interact_ref.as_deref();
    let response = grants::continue_grant(services, grant, interact_ref, meta.claim()).await?;
    Ok(Json(response).into_response())
}

async fn cancel_grant(
    State(state): State<AppState>,
    AuthTenant(tenant): AuthTenant,
    AuthRequestMeta(meta): AuthRequestMeta,
    PathParam(id): PathParam,
) -> GnapResult<StatusCode> {
    let services = &state.services;
    let token = presented_token(&meta)?;
    let grant = grants::grant_for_continuation(services, &tenant, &id, &token).await?;
    verify(services, &meta, &[], &grant.client).await?;
    grants::cancel_grant(services, &grant, meta.claim()).await?;
    Ok(StatusCode::NO_CONTENT)
}

async fn rotate_token(
    State(state): State<AppState>,
    AuthTenant(tenant): AuthTenant,
    AuthRequestMeta(meta): AuthRequestMeta,
    PathParam(id): PathParam,
    RawBody(body): RawBody,
) -> GnapResult<Json<RotateTokenResponse>> {
    let services = &state.services;
    let token = presented_token(&meta)?;
    let managed = grants::managed_token(services, &tenant, &id, &token).await?;
    verify(services, &meta, &body, &managed.grant.client).await?;
    let access_token = grants::rotate_token(services, &managed, meta.claim()).await?;
    Ok(Json(RotateTokenResponse { access_token }))
}

async fn revoke_token(
    State(state): State<AppState>,
    AuthTenant(tenant): AuthTenant,
    AuthRequestMeta(meta): AuthRequestMeta,
    PathParam(id): PathParam,
) -> GnapResult<StatusCode> {
    let services = &state.services;
    let token = presented_token(&meta)?;
    let managed = grants::managed_token(services, &tenant, &id, &token).await?;
    verify(services, &meta, &[], &managed.grant.client).await?;
    grants::revoke_token(services, &managed, meta.claim()).await?;
    Ok(StatusCode::NO_CONTENT)
}

// The interaction, in the user's browser.

/// `uri` with the pairs appended to its query.
fn with_query(uri: &str, pairs: &[(&str, &str)]) -> String {
    let sep = if uri.contains('?') { '&' } else { '?' };
    let mut q = url::form_urlencoded::Serializer::new(String::new());
    for (k, v) in pairs {
        q.append_pair(k, v);
    }
    format!("{uri}{sep}{}", q.finish())
}

/// The client as the operator's consent app is told it: its wallet
/// address, or its key for a directed-identity client.
fn client_name(i: &Interaction) -> String {
    match &i.grant.client {
        ClientIdent::WalletAddress(w) => w.clone(),
        ClientIdent::Jwk(j) => format!("a client with key {}", j.kid),
    }
}

async fn start_interaction(
    State(state): State<AppState>,
    tenant: AuthTenant,
    PathParams2(id, nonce): PathParams2,
) -> Response {
    let services = &state.services;
    let interaction = match grants::open_interaction(services, &tenant.0, &id, &nonce).await {
        Ok(i) => i,
        Err(e) => return error_page(services, &e),
    };
    if let Err(e) = grants::interaction_is_open(services, &interaction) {
        return match interaction.grant.record.finish_uri.as_deref() {
            Some(uri) => Redirect::to(&with_query(
                uri,
                &[
                    ("result", "invalid_interaction"),
                    ("message", &e.description),
                ],
            ))
            .into_response(),
            None => error_page(services, &e),
        };
    }
    // The wallet address's tenant's consent app, if it has one.
    let consent = match services.site_of(&interaction.wallet).await {
        Ok(site) => site.idp_consent_url.clone(),
        Err(e) => {
            tracing::error!(error = %e, "the consent app of an interaction's tenant could not be read");
            let unavailable = "the server cannot answer now; try again in a moment";
            return error_page(
                services,
                &GnapError::new(GnapErrorCode::RequestDenied, unavailable),
            );
        }
    };
    match &consent {
        Some(consent) => {
            let name = client_name(&interaction);
            let uri = interaction
                .grant
                .client
                .wallet_address()
                .unwrap_or_default();
            let pairs = [
                ("interactId", id.as_str()),
                ("nonce", nonce.as_str()),
                ("clientName", &name),
                ("clientUri", uri),
            ];
            Redirect::to(&with_query(consent, &pairs)).into_response()
        }
        None => {
            let prefix = tenant.prefix(services);
            Redirect::to(&format!("{prefix}/consent/{id}/{nonce}")).into_response()
        }
    }
}

async fn finish_interaction(
    State(state): State<AppState>,
    AuthTenant(tenant): AuthTenant,
    PathParams2(id, nonce): PathParams2,
) -> Response {
    let services = &state.services;
    match grants::open_interaction(services, &tenant, &id, &nonce).await {
        Ok(i) if i.grant.record.interaction_state.as_deref() != Some("pending") => {
            after_decision(services, &i)
        }
        Ok(_) => error_page(
            services,
            &GnapError::new(
                opd_gnap::GnapErrorCode::InvalidInteraction,
                "the interaction is still pending",
            ),
        ),
        Err(e) => error_page(services, &e),
    }
}

// The identity-provider API, for the operator's own consent app.

/// Whether the request carries the `x-idp-secret` of the consent app of
/// `wallet`'s tenant (the server's `--idp-secret` for the operator's): one
/// tenant's app never decides another's interactions.
async fn idp_authorized(
    services: &Services,
    headers: &HeaderMap,
    wallet: &opd_core::wallet_address::WalletAddress,
) -> Result<(), ApiError> {
    let secret = if wallet.tenant.is_operator() {
        services.config.idp_secret.clone()
    } else {
        let which = opd_service::tenants::TenantSecret::Idp;
        opd_service::tenants::secrets::get(services, &wallet.tenant, which).await?
    };
    let Some(secret) = &secret else {
        return Err(ApiError::not_found("route"));
    };
    let presented = headers
        .get("x-idp-secret")
        .map(|v| v.as_bytes())
        .unwrap_or_default();
    let secret = secret.expose_secret().as_bytes();
    let ok = presented.len() == secret.len() && bool::from(presented.ct_eq(secret));
    if ok {
        Ok(())
    } else {
        Err(ApiError::new(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "x-idp-secret is missing or wrong",
        ))
    }
}

async fn idp_details(
    State(state): State<AppState>,
    AuthTenant(tenant): AuthTenant,
    headers: HeaderMap,
    PathParams2(id, nonce): PathParams2,
) -> GnapResult<Json<serde_json::Value>> {
    let services = &state.services;
    let i = grants::open_interaction(services, &tenant, &id, &nonce).await?;
    idp_authorized(services, &headers, &i.wallet).await?;
    let access: Vec<_> = i
        .grant
        .access
        .iter()
        .map(opd_gnap::AccessItem::to_wire)
        .collect();
    Ok(Json(json!({
        "grantId": i.grant.record.id.to_string(),
        "client": i.grant.client.wallet_address(),
        "walletAddress": services
            .site_of(&i.wallet)
            .await
            .map_err(|e| Gnap::from(ApiError::from(e)))?
            .wallet_url(&i.wallet),
        "access": access,
        "state": i.grant.record.interaction_state,
        "expiresAt": i.grant.record.interaction_expires_at.map(|t| t.to_rfc3339()),
    })))
}

async fn idp_decide(
    State(state): State<AppState>,
    tenant: AuthTenant,
    headers: HeaderMap,
    axum::extract::Path((id, nonce, decision)): axum::extract::Path<(String, String, String)>,
) -> GnapResult<(StatusCode, Json<serde_json::Value>)> {
    let services = &state.services;
    let approve = match decision.as_str() {
        "accept" => true,
        "reject" => false,
        _ => return Err(ApiError::not_found("route").into()),
    };
    let i = grants::open_interaction(services, &tenant.0, &id, &nonce).await?;
    idp_authorized(services, &headers, &i.wallet).await?;
    grants::decide_interaction(services, &i, approve).await?;
    // A path on the authorization server's origin (under its path).
    let prefix = tenant.prefix(services);
    Ok((
        StatusCode::ACCEPTED,
        Json(json!({ "finish": format!("{prefix}/interact/{id}/{nonce}/finish") })),
    ))
}
