//! The client network of a request, the key of every per-address limit
//! (grant requests, the consent lockout, key-only incoming payments,
//! auto-peering requests): the connection's address, or behind a trusted
//! proxy the client `X-Forwarded-For` names, grouped as
//! `opd_service::platform::network` says. Resolved once per request and
//! kept in its extensions, so every limit of one request counts the same
//! network.

use std::net::SocketAddr;

use axum::extract::{ConnectInfo, FromRef, FromRequestParts};
use axum::http::request::Parts;
use opd_service::platform::network::ClientNetwork;

use crate::error::ApiError;
use crate::AppState;

/// The request's client network.
#[derive(Debug, Clone, Copy)]
pub struct ClientNet(pub ClientNetwork);

impl<S> FromRequestParts<S> for ClientNet
where
    AppState: FromRef<S>,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        if let Some(network) = parts.extensions.get::<ClientNetwork>() {
            return Ok(Self(*network));
        }
        // Every listener (`crates/opd/src/listener.rs`) gives the
        // connection's address; a router served some other way has none to
        // count by, and counting all its requests as one client would be
        // a silent outage.
        let Some(ConnectInfo(peer)) = parts.extensions.get::<ConnectInfo<SocketAddr>>() else {
            tracing::error!("a request without the connection's address");
            return Err(ApiError::internal());
        };
        let app = AppState::from_ref(state);
        let network = app
            .services
            .config
            .networks
            .client_network(peer.ip(), &parts.headers);
        parts.extensions.insert(network);
        Ok(Self(network))
    }
}
