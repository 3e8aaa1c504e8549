//! The admin API (loopback by default). Every request carries
//! `Authorization: Bearer <admin token>`, compared in constant time; a
//! wrong one is answered after a fixed delay (`AdminState::token_matches`).
//!
//! Routes:
//! - `POST /wallet-addresses`, `GET /wallet-addresses`,
//!   `GET /wallet-addresses/{ref}`, `POST /wallet-addresses/{ref}/deactivate`
//! - `GET|POST /wallet-addresses/{ref}/keys`,
//!   `DELETE /wallet-addresses/{ref}/keys/{kid}`
//! - `GET /fees`, `PUT|DELETE /fees/{assetCode}/{assetScale}`
//! - `GET /rates`, `PUT /rates/{base}` (all of a base's),
//!   `PUT|DELETE /rates/{base}/{counter}` (one), `PUT /rates-url`
//! - `PUT /wallet-addresses/{ref}/owner-password`: the password the owner
//!   approves grants with on the built-in consent page
//! - `POST /introspect`: GNAP token introspection (token-introspection.yaml)
//!   for resource servers deployed apart from this authorization server
//! - `POST /wallet-addresses/{ref}/deposits|withdrawals` `{amount,
//!   idempotencyKey}`, `GET /wallet-addresses/{ref}/balance|transfers`
//! - `POST /outgoing-payments/{id}/cancel`: before it is sent
//! - `POST /outgoing-payments/{id}/fund`: with external funding
//! - `POST /incoming-payments/{id}/withdrawals {idempotencyKey}`: with
//!   external funding, takes what the incoming payment received out of opd
//! - `POST /wallet-addresses/{ref}/spsp-withdrawals {idempotencyKey}`: with
//!   external funding, takes what the wallet address received over SPSP
//!   (paid by its payment pointer) out of opd
//! - `GET /ledger/check`: the ledger invariants
//! - the Interledger peers (`crate::admin::peers`)
//! - the tenants (`crate::admin::tenants`); `POST /wallet-addresses` takes
//!   a `tenant`, `GET /wallet-addresses?tenant=` lists one tenant's, and
//!   `{ref}` may be `tenant:path`
//! - `GET /metrics`: Prometheus metrics (`crate::metrics`), the one route
//!   without the token
//! - `/dashboard/...`: the operator dashboard (`crate::admin::dashboard`), HTML
//!   pages with their own sign-in
//!
//! `{ref}` is a wallet address id or its path (with `/` as `%2F`).
//!
//! A request whose admin credential checks out (the token here or at the
//! dashboard's sign-in, or a live dashboard session) marks its connection
//! proven ([`Proof`]): the admin listener never closes such a connection to
//! make room for another.

mod dashboard;
mod money;
mod peers;
mod pricing;
mod proof;
mod scope;
mod state;
mod tenants;
mod wallets;

use scope::AdminScope;

pub use proof::Proof;
pub use state::{AdminState, Node};

use axum::extract::{MatchedPath, Request, State};
use axum::http::{header, StatusCode};
use axum::middleware::{self, Next};
use axum::response::Response;
use axum::routing::get;
use axum::Router;

use crate::error::ApiError;

/// The admin routes, all behind the bearer token.
pub fn admin_router(state: AdminState) -> Router {
    let routes = Router::new()
        .merge(wallets::routes())
        .merge(pricing::routes())
        .merge(money::routes())
        .merge(peers::routes())
        .merge(tenants::routes())
        .with_state(state.clone());
    // The token is checked before routing: without it, every path (unknown
    // ones too) answers 401, so the API's shape is not revealed.
    let protected = crate::with_common_layers(routes)
        .layer(middleware::from_fn_with_state(state.clone(), require_token));
    // `GET /metrics` alone needs no token, so Prometheus scrapes it as it
    // scrapes any target: the listener is loopback-only unless the
    // operator opens it (`--allow-remote-admin`).
    Router::new()
        .route(
            "/metrics",
            get(crate::metrics::scrape).fallback(crate::method_not_allowed_fallback),
        )
        .with_state(state.app.clone())
        // The dashboard's pages have their own sign-in (a session cookie).
        .merge(dashboard::routes(state))
        .merge(protected)
}

async fn require_token(
    State(state): State<AdminState>,
    request: Request,
    next: Next,
) -> Result<Response, ApiError> {
    let presented = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim);
    let refused = || {
        ApiError::new(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "the admin API needs Authorization: Bearer <admin token>",
        )
    };
    let Some(token) = presented else {
        return Err(refused());
    };
    let scope = match state.tenant_of(token).await? {
        Some(tenant) => AdminScope::Tenant(tenant),
        // Slowed, not locked out: see `AdminState::token_matches`.
        None if state.token_matches(token).await => AdminScope::Operator,
        None => return Err(refused()),
    };
    if scope != AdminScope::Operator {
        let route = request.extensions().get::<MatchedPath>();
        if !scope::tenant_may_use(route.map(MatchedPath::as_str)) {
            return Err(ApiError::not_found("route"));
        }
    }
    proof::prove(request.extensions());
    let mut request = request;
    request.extensions_mut().insert(scope);
    Ok(next.run(request).await)
}
