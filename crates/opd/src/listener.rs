//! Serving one listener with limits a slow or hostile client cannot get
//! around:
//! - the request head must arrive within `header_read_timeout` (a client
//!   trickling headers, or holding an idle keep-alive connection, is cut
//!   off), enforced by hyper;
//! - a whole request, body included, must be answered within
//!   `request_timeout` (a body sent byte by byte, or a `Content-Length`
//!   larger than what is sent): JSON 408 `request_timeout`;
//! - at most `max_connections` connections at once per listener, so a
//!   flood on a public listener leaves the admin listener its own room
//!   (`crate::descriptors` shares the open files out); further clients
//!   wait in the kernel's backlog;
//! - at most `max_per_address` of them from one client network (an IPv4
//!   address, an IPv6 /64, loopback: `opd_service::platform::network`), so
//!   one client holding all it can leaves room for the others (a
//!   connection past it is closed as soon as it is accepted); a trusted
//!   proxy's connections are not counted so, since they carry everyone's
//!   requests (the request-level limits count its clients instead);
//! - an accept error (out of file descriptors) is logged and retried after
//!   a pause instead of ending the listener or spinning.
//!
//! At shutdown the listener stops accepting and open connections finish
//! their current request.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::{ConnectInfo, Request};
use axum::http::StatusCode;
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use opd_service::platform::network::{ClientNetwork, NetworkPolicy};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, OwnedSemaphorePermit, Semaphore};
use tower::ServiceExt as _;

/// The limits of one listener.
#[derive(Debug, Clone)]
pub struct Limits {
    pub header_read_timeout: Duration,
    pub request_timeout: Duration,
    pub max_connections: usize,
    pub max_per_address: usize,
    /// How connections are grouped for `max_per_address`.
    pub networks: Arc<NetworkPolicy>,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            header_read_timeout: Duration::from_secs(10),
            request_timeout: Duration::from_secs(30),
            max_connections: 4096,
            max_per_address: 2048,
            networks: Arc::default(),
        }
    }
}

/// Connections open now, by client network.
#[derive(Debug, Default)]
struct ByAddress(Mutex<HashMap<ClientNetwork, usize>>);

/// One connection counted against its network until dropped.
struct Counted {
    by_address: Arc<ByAddress>,
    address: ClientNetwork,
}

impl ByAddress {
    /// Counts a connection from `address`, unless it already has `max`.
    fn take(self: &Arc<Self>, address: ClientNetwork, max: usize) -> Option<Counted> {
        let mut open = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let n = open.entry(address).or_insert(0);
        if *n >= max {
            return None;
        }
        *n += 1;
        Some(Counted {
            by_address: self.clone(),
            address,
        })
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        let mut open = self.by_address.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(n) = open.get_mut(&self.address) {
            *n -= 1;
            if *n == 0 {
                open.remove(&self.address);
            }
        }
    }
}

/// Answers JSON 408 when the request (body included) takes longer than
/// `limit`.
pub(crate) async fn within(limit: Duration, request: Request, next: Next) -> Response {
    match tokio::time::timeout(limit, next.run(request)).await {
        Ok(response) => response,
        Err(_) => opd_api::ApiError::new(
            StatusCode::REQUEST_TIMEOUT,
            "request_timeout",
            "the request was not received and answered in time",
        )
        .into_response(),
    }
}

/// Resolves once `stop` turns true (or its sender is gone).
pub(crate) async fn stopping(stop: &mut watch::Receiver<bool>) {
    let _ = stop.wait_for(|s| *s).await;
}

/// What one accept step of a listener gave.
pub(crate) enum Accepted {
    /// A connection, with the descriptor permit it holds until closed.
    Connection(OwnedSemaphorePermit, TcpStream, SocketAddr),
    /// The accept failed (out of descriptors): logged, after a pause.
    Retry,
    /// `stop` turned true (or the permits were closed).
    Stopping,
}

/// Takes a descriptor permit, then the next connection; an accept error
/// is logged and retried after a pause instead of ending the listener or
/// spinning.
pub(crate) async fn accept(
    listener: &TcpListener,
    permits: &Arc<Semaphore>,
    stop: &mut watch::Receiver<bool>,
) -> Accepted {
    let permit = tokio::select! {
        p = permits.clone().acquire_owned() => match p {
            Ok(p) => p,
            Err(_) => return Accepted::Stopping,
        },
        () = stopping(stop) => return Accepted::Stopping,
    };
    tokio::select! {
        accepted = listener.accept() => match accepted {
            Ok((stream, peer)) => Accepted::Connection(permit, stream, peer),
            Err(e) => {
                let local = listener.local_addr().ok();
                tracing::warn!(error = %e, ?local, "cannot accept a connection; retrying shortly");
                tokio::time::sleep(Duration::from_millis(100)).await;
                Accepted::Retry
            }
        },
        () = stopping(stop) => Accepted::Stopping,
    }
}

/// Serves HTTP/1.1 on one connection (plain or TLS) until it ends or
/// `stop` turns true (then its current request finishes).
pub(crate) async fn serve_connection<S, Svc>(
    stream: S,
    service: Svc,
    limits: Limits,
    mut stop: watch::Receiver<bool>,
) where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    Svc: hyper::service::Service<
            hyper::Request<hyper::body::Incoming>,
            Response = Response,
            Error = std::convert::Infallible,
        > + Send
        + 'static,
    Svc::Future: Send + 'static,
{
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout)
        .keep_alive(true);
    let io = TokioIo::new(crate::parse_errors::JsonParseErrors::new(stream));
    let connection = builder.serve_connection(io, service);
    tokio::pin!(connection);
    tokio::select! {
        _ = connection.as_mut() => {}
        () = stopping(&mut stop) => {
            connection.as_mut().graceful_shutdown();
            let _ = connection.await;
        }
    }
}

/// Serves `router` on `listener` until `stop` turns true; over TLS when
/// `tls` is given.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    limits: Limits,
    tls: Option<tokio_rustls::TlsAcceptor>,
    mut stop: watch::Receiver<bool>,
) -> std::io::Result<()> {
    let timeout = limits.request_timeout;
    let router = router.layer(middleware::from_fn(move |req: Request, next: Next| {
        within(timeout, req, next)
    }));
    let permits = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let by_address = Arc::new(ByAddress::default());
    loop {
        let (permit, stream, peer) = match accept(&listener, &permits, &mut stop).await {
            Accepted::Connection(permit, stream, peer) => (permit, stream, peer),
            Accepted::Retry => continue,
            Accepted::Stopping => return Ok(()),
        };
        let counted = if limits.networks.is_trusted_proxy(peer.ip()) {
            None
        } else {
            let network = limits.networks.group(peer.ip());
            let Some(counted) = by_address.take(network, limits.max_per_address.max(1)) else {
                // Closed at once: the permit and the descriptor come back.
                drop(stream);
                continue;
            };
            Some(counted)
        };
        // Handlers that limit by client network resolve it from
        // `ConnectInfo` (`opd_api::client_network`).
        let service = TowerToHyperService::new(router.clone().map_request(
            move |mut request: hyper::Request<hyper::body::Incoming>| {
                request.extensions_mut().insert(ConnectInfo(peer));
                opd_api::collapse_empty_segments(&mut request);
                request
            },
        ));
        let (stop, tls, limits) = (stop.clone(), tls.clone(), limits.clone());
        tokio::spawn(async move {
            let (_permit, _counted) = (permit, counted);
            match tls {
                None => serve_connection(stream, service, limits, stop).await,
                // The handshake is bounded like a request head.
                Some(acceptor) => {
                    let handshake = acceptor.accept(stream);
                    if let Ok(Ok(stream)) =
                        tokio::time::timeout(limits.header_read_timeout, handshake).await
                    {
                        serve_connection(stream, service, limits, stop).await;
                    }
                }
            }
        });
    }
}
