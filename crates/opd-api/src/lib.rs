#![doc = include_str!("../README.md")]

pub mod admin;
pub mod auth_server;
pub mod client_network;
mod csrf;
pub mod display;
mod drain;
pub mod error;
pub mod extract;
pub mod interledger;
pub mod metrics;
mod pages;
mod replays;
pub mod resource_server;
mod views;
pub mod wire;

use std::sync::Arc;

use axum::extract::DefaultBodyLimit;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Router;
use opd_service::Services;

pub use error::{ApiError, ApiResult};

/// Shared state of every router.
#[derive(Clone, Debug)]
pub struct AppState {
    pub services: Arc<Services>,
}

/// JSON 404 for unknown routes.
pub async fn not_found_fallback() -> ApiError {
    ApiError::not_found("route")
}

/// JSON 405 for a known route with another method.
pub async fn method_not_allowed_fallback() -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        "method not allowed on this route",
    )
}

/// Turns a panic in a handler into a JSON 500 (the panic is logged).
fn panic_to_json(err: Box<dyn std::any::Any + Send + 'static>) -> Response {
    let what = err
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| err.downcast_ref::<&str>().copied())
        .unwrap_or("unknown panic");
    tracing::error!(panic = what, "handler panicked");
    ApiError::internal().into_response()
}

/// The layers every listener gets: body limit, JSON panics and errors,
/// request tracing (method and path only: headers carry secrets, and
/// [`loggable_path`] takes the rest out of the path).
pub(crate) fn with_common_layers(router: Router) -> Router {
    edge_layers(with_fallbacks(router))
}

/// JSON answers for unknown routes and methods.
pub(crate) fn with_fallbacks(router: Router) -> Router {
    router
        .fallback(not_found_fallback)
        .method_not_allowed_fallback(method_not_allowed_fallback)
}

/// What every listener does around its routes: the body limit, reading
/// what a handler left unread, panics as JSON 500s, and a trace span.
pub(crate) fn edge_layers(router: Router) -> Router {
    router
        .layer(DefaultBodyLimit::max(extract::MAX_BODY_BYTES))
        .layer(axum::middleware::from_fn(drain::drain_unread))
        .layer(tower_http::catch_panic::CatchPanicLayer::custom(
            panic_to_json,
        ))
        .layer(
            tower_http::trace::TraceLayer::new_for_http().make_span_with(
                |request: &axum::http::Request<_>| {
                    tracing::debug_span!(
                        "request",
                        method = %request.method(),
                        path = %loggable_path(request.uri().path()),
                    )
                },
            ),
        )
}

/// The request's URI as the client sent it, kept when
/// [`collapse_empty_segments`] rewrote it: signatures cover what was sent.
#[derive(Debug, Clone)]
pub struct SentUri(pub axum::http::Uri);

/// Reads empty path segments as absent (`//token/1` as `/token/1`) before
/// routing, keeping the URI as sent in [`SentUri`]. The reference server
/// builds management and continuation URLs as `${authServer}/token/<id>`,
/// and an `authServer` ending in `/` (as opd publishes it) makes `//`.
pub fn collapse_empty_segments<B>(request: &mut axum::http::Request<B>) {
    let path = request.uri().path();
    if !path.contains("//") {
        return;
    }
    let mut collapsed = String::with_capacity(path.len());
    for c in path.chars() {
        if !(c == '/' && collapsed.ends_with('/')) {
            collapsed.push(c);
        }
    }
    if let Some(query) = request.uri().query() {
        collapsed.push('?');
        collapsed.push_str(query);
    }
    let mut parts = request.uri().clone().into_parts();
    let Ok(path_and_query) = collapsed.parse() else {
        return;
    };
    parts.path_and_query = Some(path_and_query);
    let Ok(uri) = axum::http::Uri::from_parts(parts) else {
        return;
    };
    let sent = std::mem::replace(request.uri_mut(), uri);
    request.extensions_mut().insert(SentUri(sent));
}

/// Paths under which a URL carries an interaction's id and nonce: whoever
/// reads them can act in the user's place (see the consent page).
const INTERACTION_PATHS: [&str; 3] = ["/interact/", "/consent/", "/idp/interactions/"];

/// A request's path as logs may show it: what follows an interaction path
/// is cut off, and the query string is never shown (the caller passes
/// the path alone).
pub fn loggable_path(path: &str) -> std::borrow::Cow<'_, str> {
    for marker in INTERACTION_PATHS {
        if let Some(at) = path.find(marker) {
            return format!("{}…", &path[..at + marker.len()]).into();
        }
    }
    path.into()
}

#[cfg(test)]
mod path_tests {
    use super::*;

    fn collapsed(uri: &str) -> (String, Option<String>) {
        let mut request = axum::http::Request::builder().uri(uri).body(()).unwrap();
        collapse_empty_segments(&mut request);
        let sent = request
            .extensions()
            .get::<SentUri>()
            .map(|s| s.0.to_string());
        (request.uri().to_string(), sent)
    }

    #[test]
    fn empty_segments_are_read_as_absent_and_the_sent_uri_kept() {
        assert_eq!(
            collapsed("//token/abc"),
            ("/token/abc".into(), Some("//token/abc".into()))
        );
        assert_eq!(
            collapsed("/a///b/?x=//y"),
            ("/a/b/?x=//y".into(), Some("/a///b/?x=//y".into()))
        );
        assert_eq!(collapsed("/token/abc"), ("/token/abc".into(), None));
    }
}
