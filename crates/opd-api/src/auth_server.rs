//! The GNAP authorization server listener.
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
//!   provider API for the operator's own consent app (`x-idp-secret`).
//!
//! Errors are GNAP error objects `{"error":{"code","description"}}`.

use axum::extract::{ConnectInfo, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use opd_gnap::{ClientIdent, GnapError, GrantRequest, RotateTokenResponse, ValidatedGrantRequest};
use opd_service::access::{self, AccessError};
use opd_service::grants::{self, Interaction};
use opd_service::Services;
use serde_json::json;
use subtle::ConstantTimeEq;

use crate::auth::{AuthRequestMeta, RequestMeta};
use crate::error::ApiError;
use crate::extract::{parse_json, PathParam, PathParams2, RawBody};
use crate::AppState;

/// The authorization server routes.
pub fn auth_router(state: AppState) -> Router {
    let router = Router::new()
        .route("/", post(grant_request))
        .route("/continue/{id}", post(continue_grant).delete(cancel_grant))
        .route("/token/{id}", post(rotate_token).delete(revoke_token))
        .route("/interact/{id}/{nonce}", get(start_interaction))
        .route("/interact/{id}/{nonce}/finish", get(finish_interaction))
        .route(
            "/consent/{id}/{nonce}",
            get(consent_page).post(consent_decision),
        )
        .route("/idp/interactions/{id}/{nonce}", get(idp_details))
        .route(
            "/idp/interactions/{id}/{nonce}/{decision}",
            post(idp_decide),
        )
        .with_state(state.clone())
        // Replayed grant requests, continuations and token calls get the
        // first response (see `crate::replays`).
        .layer(axum::middleware::from_fn_with_state(
            state,
            crate::replays::auth_server,
        ));
    crate::with_common_layers(router)
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
            Gnap::Own(crate::auth::replay_error(&e))
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
    ConnectInfo(peer): ConnectInfo<std::net::SocketAddr>,
    AuthRequestMeta(meta): AuthRequestMeta,
    RawBody(body): RawBody,
) -> GnapResult<Response> {
    let services = &state.services;
    throttled(services.grant_throttle.take(&format!("ip:{}", peer.ip())))?;
    let request: GrantRequest = parse_json(&body)?;
    let validated = ValidatedGrantRequest::parse(&request)?;
    verify(services, &meta, &body, &validated.client).await?;
    // Counted once the signature verified, so nobody else can use up a
    // client's allowance.
    let client = opd_service::access::client_identity(&validated.client);
    throttled(services.grant_throttle.take(&format!("client:{client}")))?;
    let response = grants::request_grant(services, validated).await?;
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
    AuthRequestMeta(meta): AuthRequestMeta,
    PathParam(id): PathParam,
    RawBody(body): RawBody,
) -> GnapResult<Response> {
    let services = &state.services;
    let token = presented_token(&meta)?;
    let grant = grants::grant_for_continuation(services, &id, &token).await?;
    verify(services, &meta, &body, &grant.client).await?;
    let interact_ref = if body.is_empty() {
        None
    } else {
        parse_json::<ContinueBody>(&body)?.interact_ref
    };
    let response = grants::continue_grant(services, grant, interact_ref.as_deref()).await?;
    Ok(Json(response).into_response())
}

async fn cancel_grant(
    State(state): State<AppState>,
    AuthRequestMeta(meta): AuthRequestMeta,
    PathParam(id): PathParam,
) -> GnapResult<StatusCode> {
    let services = &state.services;
    let token = presented_token(&meta)?;
    let grant = grants::grant_for_continuation(services, &id, &token).await?;
    verify(services, &meta, &[], &grant.client).await?;
    grants::cancel_grant(services, &grant).await?;
    Ok(StatusCode::NO_CONTENT)
}

async fn rotate_token(
    State(state): State<AppState>,
    AuthRequestMeta(meta): AuthRequestMeta,
    PathParam(id): PathParam,
    RawBody(body): RawBody,
) -> GnapResult<Json<RotateTokenResponse>> {
    let services = &state.services;
    let token = presented_token(&meta)?;
    let managed = grants::managed_token(services, &id, &token).await?;
    verify(services, &meta, &body, &managed.grant.client).await?;
    let access_token = grants::rotate_token(services, &managed).await?;
    Ok(Json(RotateTokenResponse { access_token }))
}

async fn revoke_token(
    State(state): State<AppState>,
    AuthRequestMeta(meta): AuthRequestMeta,
    PathParam(id): PathParam,
) -> GnapResult<StatusCode> {
    let services = &state.services;
    let token = presented_token(&meta)?;
    let managed = grants::managed_token(services, &id, &token).await?;
    verify(services, &meta, &[], &managed.grant.client).await?;
    grants::revoke_token(services, &managed).await?;
    Ok(StatusCode::NO_CONTENT)
}

// The interaction, in the user's browser.

fn html_escape(s: &str) -> String {
    s.chars()
        .map(|c| match c {
            '&' => "&amp;".to_owned(),
            '<' => "&lt;".to_owned(),
            '>' => "&gt;".to_owned(),
            '"' => "&quot;".to_owned(),
            '\'' => "&#39;".to_owned(),
            c => c.to_string(),
        })
        .collect()
}

fn page(status: StatusCode, title: &str, body: &str) -> Response {
    let html = format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width\">\
         <title>{t}</title><style>body{{font-family:sans-serif;max-width:36em;margin:2em auto;padding:0 1em}}\
         li{{margin:.3em 0}}button{{font-size:1em;padding:.4em 1em;margin-right:1em}}</style></head>\
         <body><h1>{t}</h1>{body}</body></html>",
        t = html_escape(title)
    );
    let mut response = (status, Html(html)).into_response();
    response
        .headers_mut()
        .insert("x-frame-options", HeaderValue::from_static("DENY"));
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

fn error_page(e: &GnapError) -> Response {
    let status = StatusCode::from_u16(e.status).unwrap_or(StatusCode::BAD_REQUEST);
    page(
        status,
        "This request cannot be completed",
        &format!("<p>{}</p>", html_escape(&e.description)),
    )
}

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

/// The client as the consent page shows it (HTML): the host it is served
/// from, never a user-info part (`https://my-bank.example@attacker/` is
/// `attacker`), with the `publicName` it gives itself, marked when that
/// name does not appear in the host.
async fn client_html(services: &Services, i: &Interaction) -> String {
    let url = match &i.grant.client {
        ClientIdent::WalletAddress(w) => w,
        ClientIdent::Jwk(j) => {
            return format!("<b>A client with key {}</b>", html_escape(&j.kid));
        }
    };
    let host = url::Url::parse(url)
        .ok()
        .and_then(|u| u.host_str().map(str::to_owned))
        .unwrap_or_else(|| "an unknown host".into());
    let Some(name) = grants::client_public_name(services, url).await else {
        return format!("<b>{}</b>", html_escape(&host));
    };
    let letters = |s: &str| -> String {
        s.chars()
            .filter(char::is_ascii_alphanumeric)
            .map(|c| c.to_ascii_lowercase())
            .collect()
    };
    let matches = !letters(&name).is_empty() && letters(&host).contains(&letters(&name));
    let warning = if matches {
        String::new()
    } else {
        format!(
            " <span class=\"warn\">(the name is chosen by the client: make sure you expect \
             <b>{}</b>)</span>",
            html_escape(&host)
        )
    };
    format!(
        "<b>{}</b> at <b>{}</b>{warning}",
        html_escape(&name),
        html_escape(&host)
    )
}

async fn start_interaction(
    State(state): State<AppState>,
    PathParams2(id, nonce): PathParams2,
) -> Response {
    let services = &state.services;
    let interaction = match grants::open_interaction(services, &id, &nonce).await {
        Ok(i) => i,
        Err(e) => return error_page(&e),
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
            None => error_page(&e),
        };
    }
    match &services.config.idp_consent_url {
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
        None => Redirect::to(&format!("/consent/{id}/{nonce}")).into_response(),
    }
}

fn describe_access(i: &Interaction) -> String {
    let mut out = String::from("<ul>");
    for item in &i.grant.access {
        let actions: Vec<&str> = item.actions.iter().map(|a| a.as_str()).collect();
        out.push_str(&format!(
            "<li><b>{}</b>: {}",
            html_escape(item.kind.as_str()),
            html_escape(&actions.join(", "))
        ));
        if let Some(l) = &item.limits {
            if let Some(a) = &l.debit_amount {
                out.push_str(&format!(
                    "; up to {} (minor units) of {} sent",
                    a.value,
                    html_escape(&a.asset.to_string())
                ));
            }
            if let Some(a) = &l.receive_amount {
                out.push_str(&format!(
                    "; up to {} (minor units) of {} received",
                    a.value,
                    html_escape(&a.asset.to_string())
                ));
            }
            if let Some(r) = &l.receiver {
                out.push_str(&format!("; only to {}", html_escape(r)));
            }
            if let Some(iv) = &l.interval {
                out.push_str(&format!("; per interval {}", html_escape(iv.as_str())));
            }
        }
        out.push_str("</li>");
    }
    out.push_str("</ul>");
    out
}

async fn consent_form(
    services: &Services,
    i: &Interaction,
    id: &str,
    nonce: &str,
    error: Option<&str>,
) -> String {
    let client = client_html(services, i).await;
    let wallet = services.config.public_url.wallet_address(&i.wallet.path);
    let error = error
        .map(|e| format!("<p style=\"color:#b00\">{}</p>", html_escape(e)))
        .unwrap_or_default();
    format!(
        "<p>{client} asks for access to your wallet address <b>{wallet}</b>:</p>{access}{error}\
         <form method=\"post\" action=\"/consent/{id}/{nonce}\">\
         <p><label>Password of {wallet}<br><input type=\"password\" name=\"password\" autocomplete=\"current-password\" required></label></p>\
         <p><button type=\"submit\" name=\"decision\" value=\"approve\">Approve</button>\
         <button type=\"submit\" name=\"decision\" value=\"reject\">Reject</button></p></form>",
        wallet = html_escape(&wallet),
        access = describe_access(i),
        id = html_escape(id),
        nonce = html_escape(nonce),
    )
}

async fn consent_page(
    State(state): State<AppState>,
    PathParams2(id, nonce): PathParams2,
) -> Response {
    let services = &state.services;
    let interaction = match grants::open_interaction(services, &id, &nonce).await {
        Ok(i) => i,
        Err(e) => return error_page(&e),
    };
    if let Err(e) = grants::interaction_is_open(services, &interaction) {
        return error_page(&e);
    }
    page(
        StatusCode::OK,
        "Grant access?",
        &consent_form(services, &interaction, &id, &nonce, None).await,
    )
}

/// After the decision: to the client's finish URI, or a page saying the
/// client will pick the result up (when it polls).
fn after_decision(services: &Services, i: &Interaction) -> Response {
    match grants::finish_redirect(services, i) {
        Some(url) => Redirect::to(&url).into_response(),
        None => page(
            StatusCode::ACCEPTED,
            "Done",
            "<p>You can return to the application.</p>",
        ),
    }
}

async fn consent_decision(
    State(state): State<AppState>,
    ConnectInfo(peer): ConnectInfo<std::net::SocketAddr>,
    PathParams2(id, nonce): PathParams2,
    RawBody(body): RawBody,
) -> Response {
    let services = &state.services;
    let interaction = match grants::open_interaction(services, &id, &nonce).await {
        Ok(i) => i,
        Err(e) => return error_page(&e),
    };
    let mut password = String::new();
    let mut decision = String::new();
    for (k, v) in url::form_urlencoded::parse(&body) {
        match k.as_ref() {
            "password" => password = v.into_owned(),
            "decision" => decision = v.into_owned(),
            _ => {}
        }
    }
    if let Err(e) = grants::interaction_is_open(services, &interaction) {
        return error_page(&e);
    }
    // Guessing is slowed per wallet address and per address: after three
    // wrong passwords each further one doubles the wait.
    let keys = [
        format!("wallet:{}", interaction.wallet.id),
        format!("ip:{}", peer.ip()),
    ];
    let locked = keys
        .iter()
        .filter_map(|k| services.password_lockout.check(k).err())
        .max();
    if let Some(wait) = locked {
        let secs = wait.as_secs().max(1);
        let message = format!("Too many wrong passwords. Try again in {secs} seconds.");
        let form = consent_form(services, &interaction, &id, &nonce, Some(&message)).await;
        let mut response = page(StatusCode::TOO_MANY_REQUESTS, "Grant access?", &form);
        if let Ok(v) = axum::http::HeaderValue::from_str(&secs.to_string()) {
            response
                .headers_mut()
                .insert(axum::http::header::RETRY_AFTER, v);
        }
        return response;
    }
    match grants::check_owner_password(services, interaction.wallet.id, &password).await {
        Ok(true) => keys
            .iter()
            .for_each(|k| services.password_lockout.succeeded(k)),
        Ok(false) => {
            keys.iter()
                .for_each(|k| services.password_lockout.failed(k));
            let form =
                consent_form(services, &interaction, &id, &nonce, Some("Wrong password.")).await;
            return page(StatusCode::UNAUTHORIZED, "Grant access?", &form);
        }
        Err(e) => {
            tracing::error!(error = %e, "password check failed");
            return page(
                StatusCode::INTERNAL_SERVER_ERROR,
                "Error",
                "<p>Please try again later.</p>",
            );
        }
    }
    let approve = match decision.as_str() {
        "approve" => true,
        "reject" => false,
        _ => {
            return page(
                StatusCode::BAD_REQUEST,
                "Grant access?",
                "<p>Choose Approve or Reject.</p>",
            )
        }
    };
    match grants::decide_interaction(services, &interaction, approve).await {
        Ok(decided) => after_decision(services, &decided),
        Err(e) => error_page(&e),
    }
}

async fn finish_interaction(
    State(state): State<AppState>,
    PathParams2(id, nonce): PathParams2,
) -> Response {
    let services = &state.services;
    match grants::open_interaction(services, &id, &nonce).await {
        Ok(i) if i.grant.record.interaction_state.as_deref() != Some("pending") => {
            after_decision(services, &i)
        }
        Ok(_) => error_page(&GnapError::new(
            opd_gnap::GnapErrorCode::InvalidInteraction,
            "the interaction is still pending",
        )),
        Err(e) => error_page(&e),
    }
}

// The identity-provider API, for the operator's own consent app.

fn idp_authorized(services: &Services, headers: &HeaderMap) -> Result<(), ApiError> {
    let Some(secret) = &services.config.idp_secret else {
        return Err(ApiError::not_found("route"));
    };
    let presented = headers
        .get("x-idp-secret")
        .map(|v| v.as_bytes())
        .unwrap_or_default();
    let ok = presented.len() == secret.len() && bool::from(presented.ct_eq(secret.as_bytes()));
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
    headers: HeaderMap,
    PathParams2(id, nonce): PathParams2,
) -> GnapResult<Json<serde_json::Value>> {
    let services = &state.services;
    idp_authorized(services, &headers)?;
    let i = grants::open_interaction(services, &id, &nonce).await?;
    let access: Vec<_> = i
        .grant
        .access
        .iter()
        .map(opd_gnap::AccessItem::to_wire)
        .collect();
    Ok(Json(json!({
        "grantId": i.grant.record.id.to_string(),
        "client": i.grant.client.wallet_address(),
        "walletAddress": services.config.public_url.wallet_address(&i.wallet.path),
        "access": access,
        "state": i.grant.record.interaction_state,
        "expiresAt": i.grant.record.interaction_expires_at.map(|t| t.to_rfc3339()),
    })))
}

async fn idp_decide(
    State(state): State<AppState>,
    headers: HeaderMap,
    axum::extract::Path((id, nonce, decision)): axum::extract::Path<(String, String, String)>,
) -> GnapResult<(StatusCode, Json<serde_json::Value>)> {
    let services = &state.services;
    idp_authorized(services, &headers)?;
    let approve = match decision.as_str() {
        "accept" => true,
        "reject" => false,
        _ => return Err(ApiError::not_found("route").into()),
    };
    let i = grants::open_interaction(services, &id, &nonce).await?;
    grants::decide_interaction(services, &i, approve).await?;
    Ok((
        StatusCode::ACCEPTED,
        Json(json!({ "finish": format!("/interact/{id}/{nonce}/finish") })),
    ))
}
