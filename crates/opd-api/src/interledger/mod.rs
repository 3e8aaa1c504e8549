//! The ILP-over-HTTP listener (RFC 35, as the reference server speaks
//! it): `POST` on any path, `Authorization: Bearer <token>` naming a peer,
//! `Content-Type: application/octet-stream` (or the older
//! `application/ilp+octet-stream`), the body one ILP Prepare. Every
//! authenticated request is answered 200 with the Fulfill or Reject bytes,
//! whatever the packet holds; only a missing or unknown token (401), a
//! wrong content type (400) or an oversized body (413) get a JSON error.

pub mod auto_peering;

use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;
use opd_core::peer::Peer;
use opd_service::{interledger, interledger::peers};

use crate::error::{ApiError, ApiResult};
use crate::extract::RawBody;
use crate::AppState;

/// The ILP-over-HTTP routes.
pub fn ilp_router(state: AppState) -> Router {
    let routes = Router::new()
        .route("/", post(packet))
        .route("/{*path}", post(packet))
        .with_state(state);
    // The common body limit (`extract::MAX_BODY_BYTES`) is far above the
    // largest ILP packet (32 767 bytes of data and a short header); a
    // larger body is not a Prepare and gets an F01 reject.
    crate::with_common_layers(routes)
}

async fn packet(
    State(state): State<AppState>,
    headers: HeaderMap,
    RawBody(body): RawBody,
) -> ApiResult<Response> {
    let services = &state.services;
    let peer = authenticate(services, &headers).await?;
    check_content_type(&headers)?;
    // The packet is answered in a task of its own: if the peer hangs up,
    // the handler is dropped but a forward still ends (its hold settled)
    // instead of being cut off halfway.
    let task_services = state.services.clone();
    let reply =
        tokio::spawn(async move { interledger::handle_packet(&task_services, &peer, &body).await })
            .await
            .map_err(|_| ApiError::internal())?;
    Ok((
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/octet-stream")],
        reply,
    )
        .into_response())
}

fn unauthorized(description: &str) -> ApiError {
    ApiError::new(StatusCode::UNAUTHORIZED, "invalid_peer_token", description)
}

async fn authenticate(services: &opd_service::Services, headers: &HeaderMap) -> ApiResult<Peer> {
    let value = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .ok_or_else(|| unauthorized("a peer bearer token is required"))?;
    let token = match value.split_once(' ') {
        Some((scheme, token)) if scheme.eq_ignore_ascii_case("bearer") && !token.is_empty() => {
            token
        }
        _ => return Err(unauthorized("a peer bearer token is required")),
    };
    peers::by_token(services, token)
        .await?
        .ok_or_else(|| unauthorized("unknown peer token"))
}

fn check_content_type(headers: &HeaderMap) -> ApiResult<()> {
    let media = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .map(|v| v.trim().to_ascii_lowercase());
    match media.as_deref() {
        Some("application/octet-stream" | "application/ilp+octet-stream") => Ok(()),
        _ => Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "invalid_content_type",
            "ILP packets are sent as application/octet-stream",
        )),
    }
}
