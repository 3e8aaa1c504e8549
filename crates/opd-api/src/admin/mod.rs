//! The admin API (loopback by default). Every request carries
//! `Authorization: Bearer <admin token>`, compared in constant time.
//!
//! Routes:
//! - `POST /wallet-addresses`, `GET /wallet-addresses`,
//!   `GET /wallet-addresses/{ref}`, `POST /wallet-addresses/{ref}/deactivate`
//! - `GET|POST /wallet-addresses/{ref}/keys`,
//!   `DELETE /wallet-addresses/{ref}/keys/{kid}`
//! - `GET /fees`, `PUT|DELETE /fees/{assetCode}/{assetScale}`
//! - `GET /rates`, `PUT /rates/{base}`, `PUT /rates-url`
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
//! - `GET /ledger/check`: the ledger invariants
//! - the Interledger peers (`crate::admin::peers`)
//! - `GET /metrics`: Prometheus metrics (`crate::metrics`), the one route
//!   without the token
//! - `/dashboard/...`: the operator dashboard (`crate::admin::dashboard`), HTML
//!   pages with their own sign-in
//!
//! `{ref}` is a wallet address id or its path (with `/` as `%2F`).

mod dashboard;
mod money;
mod peers;
mod pricing;
mod state;
mod wallets;

pub use state::AdminState;

use axum::extract::{Request, State};
use axum::http::{header, StatusCode};
use axum::middleware::{self, Next};
use axum::response::Response;
use axum::routing::get;
use axum::Router;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::error::ApiError;

/// The admin routes, all behind the bearer token.
pub fn admin_router(state: AdminState) -> Router {
    let routes = Router::new()
        .merge(wallets::routes())
        .merge(pricing::routes())
        .merge(money::routes())
        .merge(peers::routes())
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
    // Guessing is slowed per address: after three wrong tokens each
    // further one doubles the wait, during which no token is checked.
    let peer = request
        .extensions()
        .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
        .map(|c| c.0.ip().to_string())
        .unwrap_or_default();
    let key = format!("admin:{peer}");
    let lockout = &state.app.services.limits.password_lockout;
    if let Err(wait) = lockout.check(&key) {
        let mut e = ApiError::new(
            StatusCode::TOO_MANY_REQUESTS,
            "too_many_attempts",
            "too many wrong admin tokens from this address; try again later",
        );
        e.retry_after = Some(u32::try_from(wait.as_secs().max(1)).unwrap_or(u32::MAX));
        return Err(e);
    }
    let digest: [u8; 32] = Sha256::digest(token.as_bytes()).into();
    if !bool::from(digest.ct_eq(state.token_sha256())) {
        lockout.failed(&key);
        return Err(refused());
    }
    lockout.succeeded(&key);
    Ok(next.run(request).await)
}
