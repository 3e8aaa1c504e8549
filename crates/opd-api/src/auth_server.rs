//! The authorization server listener. Its GNAP grant endpoint (the origin
//! root, `POST /`) is built by the authentication work; until then every
//! route answers a JSON 501 so clients get a clear error, not a hang.

use axum::http::StatusCode;
use axum::routing::any;
use axum::Router;

use crate::error::ApiError;
use crate::AppState;

/// The authorization server routes.
pub fn auth_router(_state: AppState) -> Router {
    let not_yet = || async {
        ApiError::new(
            StatusCode::NOT_IMPLEMENTED,
            "not_implemented",
            "the GNAP authorization server is not available in this version of opd",
        )
    };
    crate::with_common_layers(
        Router::new()
            .route("/", any(not_yet))
            .route("/{*rest}", any(not_yet)),
    )
}
