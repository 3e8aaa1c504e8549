//! The Open Payments listener: wallet address documents and JWKS, incoming
//! payments and quotes.
//!
//! Every resource endpoint needs a GNAP access token and an HTTP message
//! signature by the token's client: its handler takes an
//! [`Authorized`] naming the access it needs (see `crate::resource_server::auth`). The
//! exception is the public incoming payment GET: without an
//! `Authorization` header it answers the public view (`receivedAmount`,
//! `authServer`). A wallet address asked for `application/spsp4+json`
//! answers SPSP credentials instead of its document ([`spsp`]).

pub mod auth;
mod outgoing;
pub mod site;
pub mod spsp;

pub use outgoing::PAYMENT_STATE_HEADER;

use axum::extract::State;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use opd_core::pagination::PageRequest;
use opd_core::quote::QuoteTarget;
use opd_core::{IncomingPaymentId, QuoteId, Timestamp};
use opd_gnap::{AccessType, Action};
use opd_service::access::{Authenticated, Required};
use opd_service::payments::incoming::{self, NewIncomingPayment};
use opd_service::payments::quotes::{self, NewQuote};
use opd_service::wallets;

use crate::client_network::ClientNet;
use crate::error::{ApiError, ApiResult};
use crate::extract::{parse_json, PathParam, QueryPairs};
use crate::replays::Created;
use crate::resource_server::auth::{action, kind, Authorized};
use crate::resource_server::site::RequestSite;
use crate::wire::{
    parse_amount, CreateIncomingPaymentRequest, CreateQuoteRequest, IncomingPaymentWire, JwkWire,
    Jwks, ListWire, PublicIncomingPaymentWire, QuoteWire, WalletAddressDoc,
};
use crate::AppState;

/// The resource server and wallet address server routes, the same for
/// every tenant: a request is first resolved to its tenant's site, which
/// takes off the site's path prefix (see [`site`]).
pub fn open_payments_router(state: AppState) -> Router {
    let routes = Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .route(
            "/incoming-payments",
            post(create_incoming_payment).get(list_incoming_payments),
        )
        .route("/incoming-payments/{id}", get(get_incoming_payment))
        .route(
            "/incoming-payments/{id}/complete",
            post(complete_incoming_payment),
        )
        .route(
            "/outgoing-payments",
            post(outgoing::create_outgoing_payment).get(outgoing::list_outgoing_payments),
        )
        .route(
            "/outgoing-payments/{id}",
            get(outgoing::get_outgoing_payment),
        )
        .route(
            "/outgoing-payment-grant",
            get(outgoing::get_outgoing_payment_grant),
        )
        .route("/quotes", post(create_quote))
        .route("/quotes/{id}", get(get_quote))
        .route("/{*path}", get(wallet_address_or_jwks))
        .route_layer(axum::middleware::from_fn(crate::metrics::remember_route))
        .with_state(state.clone());
    // Replayed creates get the first response (see `crate::replays`).
    let routes = crate::with_fallbacks(routes).layer(axum::middleware::from_fn_with_state(
        state.clone(),
        crate::replays::resource_server,
    ));
    let router = Router::new()
        .fallback_service(routes)
        .layer(axum::middleware::from_fn_with_state(state, site::resolve));
    crate::edge_layers(router)
}

/// `GET /healthz`: the process is up and serving. Nothing else is asked,
/// the database least of all: a liveness probe that failed with the
/// database would have every node restarted for an outage no restart
/// cures.
async fn healthz() -> Json<serde_json::Value> {
    Json(serde_json::json!({ "status": "ok" }))
}

/// How long `/readyz` waits for the database (probes time out after 1 s
/// by default; an answer within it says more than a probe timeout).
const READY_TIMEOUT: std::time::Duration = std::time::Duration::from_millis(900);

/// `GET /readyz`: the database answers and has every migration this binary
/// needs; otherwise 503 (`service_unavailable` or `migrations_pending`),
/// so a load balancer sends requests elsewhere meanwhile.
async fn readyz(State(state): State<AppState>) -> ApiResult<Json<serde_json::Value>> {
    use opd_service::platform::health::{readiness, NotReady};
    match readiness(state.services.store.as_ref(), READY_TIMEOUT).await {
        Ok(()) => Ok(Json(serde_json::json!({ "status": "ready" }))),
        Err(NotReady::DatabaseUnreachable) => Err(ApiError::unavailable()),
        Err(NotReady::MigrationsPending { applied, latest }) => {
            let applied = applied.map_or_else(|| "none".to_owned(), |v| v.to_string());
            let mut e = ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "migrations_pending",
                format!(
                    "the database schema is behind this binary (latest migration applied: {applied}, needed: {latest}); run `opd migrate`"
                ),
            );
            e.retry_after = Some(5);
            Err(e)
        }
    }
}

/// `GET /{path}` (the document, or SPSP credentials: see [`spsp`]) and
/// `GET /{path}/jwks.json`.
async fn wallet_address_or_jwks(
    State(state): State<AppState>,
    site: RequestSite,
    PathParam(path): PathParam,
    headers: axum::http::HeaderMap,
) -> ApiResult<Response> {
    let tenant = &site.0.tenant;
    let services = &state.services;
    let not_found = |e: opd_service::ServiceError| match e {
        opd_service::ServiceError::UnknownWalletAddress => ApiError::new(
            StatusCode::NOT_FOUND,
            "unknown_wallet_address",
            "unknown wallet address",
        ),
        other => other.into(),
    };
    if let Some(wallet_path) = path.strip_suffix("/jwks.json") {
        let keys = wallets::jwks(services, tenant, wallet_path)
            .await
            .map_err(not_found)?;
        let body = Jwks {
            keys: keys.iter().map(JwkWire::from).collect(),
        };
        return Ok(cached(Json(body).into_response(), "max-age=10"));
    }
    let accept = headers.get(header::ACCEPT).and_then(|a| a.to_str().ok());
    let wanted = spsp::negotiate(accept, opd_service::interledger::spsp::enabled(services));
    let wallet = wallets::by_path(services, tenant, &path)
        .await
        .map_err(not_found)?;
    let mut response = match wanted {
        spsp::Wanted::NotAcceptable => return Err(spsp::not_acceptable()),
        spsp::Wanted::Spsp => {
            let receipt = spsp::receipt_setup(&headers)?;
            spsp::answer(services, &wallet, receipt.as_ref())?
        }
        spsp::Wanted::Json => {
            let doc = WalletAddressDoc::new(&wallet, site.public_url(), &site.0.auth_server_url);
            cached(Json(doc).into_response(), "max-age=60")
        }
    };
    // One URL, two answers: caches keep them apart by `Accept`.
    response
        .headers_mut()
        .insert(header::VARY, HeaderValue::from_static("Accept"));
    Ok(response)
}

fn cached(mut response: Response, policy: &'static str) -> Response {
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static(policy));
    response
}

/// Refuses a wallet address URL (in a body or a query) that is not under
/// the request's tenant's public URL, as an unknown wallet address.
async fn own_wallet_url(state: &AppState, site: &RequestSite, url: &str) -> ApiResult<()> {
    let table = state.services.sites.table().await?;
    match table.of_url(url) {
        Some((s, _)) if s.tenant == site.0.tenant => Ok(()),
        _ => Err(opd_service::ServiceError::UnknownWalletAddress.into()),
    }
}

/// Whether the token may read every incoming payment of the wallet address.
fn auth_reads_all(auth: &Authenticated, wallet_url: &str) -> bool {
    let read = Required {
        kind: AccessType::IncomingPayment,
        action: Action::Read,
        wallet_address: Some(wallet_url),
    };
    auth.require(read)
        .is_ok_and(|c| c.action == Action::ReadAll)
}

/// The per-client limit on creating resources (`--create-requests-per-minute`):
/// 429 `too_many_requests` with `Retry-After` when the client is over it.
fn creation_allowed(state: &AppState, client: &str) -> ApiResult<()> {
    state.services.limits.creates.take(client).map_err(|wait| {
        let mut e = ApiError::new(
            StatusCode::TOO_MANY_REQUESTS,
            "too_many_requests",
            "this client creates resources too fast; try again later",
        );
        e.retry_after = Some(u32::try_from(wait.as_secs()).unwrap_or(u32::MAX).max(1));
        e
    })
}

async fn create_incoming_payment(
    State(state): State<AppState>,
    site: RequestSite,
    ClientNet(network): ClientNet,
    auth: Authorized<kind::IncomingPayment, action::Create>,
) -> ApiResult<Response> {
    let services = &state.services;
    let req: CreateIncomingPaymentRequest = parse_json(auth.body())?;
    own_wallet_url(&state, &site, &req.wallet_address).await?;
    let caller = auth.caller_for(&req.wallet_address)?;
    creation_allowed(&state, &caller.client)?;
    let incoming_amount = req
        .incoming_amount
        .as_ref()
        .map(|a| parse_amount("incomingAmount", a))
        .transpose()?;
    let expires_at = req
        .expires_at
        .as_deref()
        .map(|t| {
            Timestamp::parse_rfc3339(t).map_err(|e| {
                ApiError::new(
                    StatusCode::BAD_REQUEST,
                    "invalid_expiry",
                    format!("expiresAt: {e}"),
                )
            })
        })
        .transpose()?;
    let input = NewIncomingPayment {
        wallet_address: req.wallet_address,
        incoming_amount,
        expires_at,
        metadata: req.metadata,
        client: Some(caller.client),
        client_network: Some(network),
    };
    // Known before the payment is stored: recorded for replays with it.
    let mut created = Created::new();
    let respond = |p: &_, w: &_| created.answer(&full_view(services, &site, p, w));
    let claim = auth.claim();
    let (payment, wallet) = incoming::create_answered(services, input, claim, respond).await?;
    Ok(created.respond(|| full_view(services, &site, &payment, &wallet)))
}

/// The view with payment methods (create and authenticated GET).
fn full_view(
    services: &opd_service::Services,
    site: &RequestSite,
    payment: &opd_core::incoming_payment::IncomingPayment,
    wallet: &opd_core::wallet_address::WalletAddress,
) -> IncomingPaymentWire {
    let methods = incoming::payment_methods(services, payment);
    IncomingPaymentWire::new(payment, wallet, site.public_url(), Some(methods))
}

fn parse_page(query: &QueryPairs) -> ApiResult<(String, PageRequest)> {
    let wallet = query
        .single("wallet-address")?
        .ok_or_else(|| ApiError::invalid_request("query parameter wallet-address is required"))?
        .to_owned();
    let page = PageRequest::parse(
        query.single("first")?,
        query.single("last")?,
        query.single("cursor")?,
    )
    .map_err(|e| ApiError::invalid_request(e.to_string()))?;
    Ok((wallet, page))
}

async fn list_incoming_payments(
    State(state): State<AppState>,
    site: RequestSite,
    query: QueryPairs,
    auth: Authorized<kind::IncomingPayment, action::List>,
) -> ApiResult<Json<ListWire<IncomingPaymentWire>>> {
    let services = &state.services;
    let (wallet_url, page) = parse_page(&query)?;
    own_wallet_url(&state, &site, &wallet_url).await?;
    let caller = auth.caller_for(&wallet_url)?;
    let (page, wallet) = incoming::list(services, &wallet_url, caller.list_filter(), &page).await?;
    let public = site.public_url();
    Ok(Json(ListWire::new(
        &page,
        |p| p.id.to_string(),
        |p| IncomingPaymentWire::new(p, &wallet, public, None),
    )))
}

fn incoming_payment_id(raw: &str) -> ApiResult<IncomingPaymentId> {
    IncomingPaymentId::parse(raw).ok_or_else(|| ApiError::not_found("incoming payment"))
}

/// One of the request's tenant's incoming payments; another tenant's is
/// not found.
async fn tenants_incoming(
    services: &opd_service::Services,
    site: &RequestSite,
    id: &str,
) -> ApiResult<(
    opd_core::incoming_payment::IncomingPayment,
    opd_core::wallet_address::WalletAddress,
)> {
    let (payment, wallet) = incoming::get(services, incoming_payment_id(id)?).await?;
    if !site.owns(&wallet) {
        return Err(ApiError::not_found("incoming payment"));
    }
    Ok((payment, wallet))
}

async fn get_incoming_payment(
    State(state): State<AppState>,
    site: RequestSite,
    PathParam(id): PathParam,
    auth: Option<Authorized<kind::IncomingPayment, action::Read>>,
) -> ApiResult<Response> {
    let services = &state.services;
    let (payment, wallet) = tenants_incoming(services, &site, &id).await?;
    let Some(auth) = auth else {
        let body = PublicIncomingPaymentWire {
            received_amount: (&payment.received_amount()).into(),
            auth_server: site.0.auth_server_url.clone(),
        };
        return Ok(Json(body).into_response());
    };
    let wallet_url = site.wallet_url(&wallet);
    let caller = auth.caller_for(&wallet_url)?;
    if !caller.may_see(payment.client.as_deref()) {
        return Err(ApiError::not_found("incoming payment"));
    }
    Ok(Json(full_view(services, &site, &payment, &wallet)).into_response())
}

async fn complete_incoming_payment(
    State(state): State<AppState>,
    site: RequestSite,
    PathParam(id): PathParam,
    auth: Authorized<kind::IncomingPayment, action::Complete>,
) -> ApiResult<Json<IncomingPaymentWire>> {
    let services = &state.services;
    let (payment, wallet) = tenants_incoming(services, &site, &id).await?;
    let id = payment.id;
    let wallet_url = site.wallet_url(&wallet);
    let caller = auth.caller_for(&wallet_url)?;
    // `complete` has no "-all" form: a client completes what it created,
    // unless its token may read every payment of the wallet address.
    if payment.client.as_deref() != Some(caller.client.as_str())
        && !auth_reads_all(auth.authenticated(), &wallet_url)
    {
        return Err(ApiError::not_found("incoming payment"));
    }
    let (payment, wallet) = incoming::complete(services, id, auth.claim()).await?;
    Ok(Json(IncomingPaymentWire::new(
        &payment,
        &wallet,
        site.public_url(),
        None,
    )))
}

async fn create_quote(
    State(state): State<AppState>,
    site: RequestSite,
    auth: Authorized<kind::Quote, action::Create>,
) -> ApiResult<Response> {
    let services = &state.services;
    let req: CreateQuoteRequest = parse_json(auth.body())?;
    own_wallet_url(&state, &site, &req.wallet_address).await?;
    let caller = auth.caller_for(&req.wallet_address)?;
    creation_allowed(&state, &caller.client)?;
    if req.method != "ilp" {
        return Err(ApiError::invalid_request(
            "method must be \"ilp\", the only payment method",
        ));
    }
    let target = match (&req.debit_amount, &req.receive_amount) {
        (Some(_), Some(_)) => {
            return Err(ApiError::new(
                StatusCode::BAD_REQUEST,
                "invalid_amount",
                "give debitAmount or receiveAmount, not both",
            ))
        }
        (Some(d), None) => QuoteTarget::FixedSend(parse_amount("debitAmount", d)?),
        (None, Some(r)) => QuoteTarget::FixedReceive(parse_amount("receiveAmount", r)?),
        (None, None) => QuoteTarget::Remaining,
    };
    let input = NewQuote {
        wallet_address: req.wallet_address,
        receiver: req.receiver,
        target,
        client: Some(caller.client),
    };
    let wire = |quote: &_, wallet: &_| QuoteWire::new(quote, wallet, site.public_url());
    // Known before the quote is stored: recorded for replays with it.
    let mut created = Created::new();
    let respond = |quote: &_, wallet: &_| created.answer(&wire(quote, wallet));
    let (quote, wallet) = quotes::create_answered(services, input, auth.claim(), respond).await?;
    Ok(created.respond(|| wire(&quote, &wallet)))
}

async fn get_quote(
    State(state): State<AppState>,
    site: RequestSite,
    PathParam(id): PathParam,
    auth: Authorized<kind::Quote, action::Read>,
) -> ApiResult<Json<QuoteWire>> {
    let services = &state.services;
    let id = QuoteId::parse(&id).ok_or_else(|| ApiError::not_found("quote"))?;
    let (quote, wallet) = quotes::get(services, id).await?;
    if !site.owns(&wallet) {
        return Err(ApiError::not_found("quote"));
    }
    let wallet_url = site.wallet_url(&wallet);
    let caller = auth.caller_for(&wallet_url)?;
    if !caller.may_see(quote.client.as_deref()) {
        return Err(ApiError::not_found("quote"));
    }
    Ok(Json(QuoteWire::new(&quote, &wallet, site.public_url())))
}
