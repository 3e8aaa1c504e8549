//! Serving the admin listener (admin API, dashboard, metrics) so that no
//! other client can keep the operator out.
//!
//! On loopback (the default) every local process has the operator's
//! address, so a cap per address cannot tell them apart: a process holding
//! every connection the listener allows, idle and renewed as they are cut
//! off, kept the operator out. What tells them apart is the admin
//! credential: a connection is *proven* once a request on it carries the
//! admin token or a live dashboard session (`opd_api::admin::Proof`).
//!
//! - The listener keeps accepting: when it holds its `max_connections`
//!   (less one kept for accepting), a new connection closes an *unproven*
//!   one to make room. Only a connection that has had [`GRACE`] to prove
//!   itself is closed so; idle ones before ones with a request in flight,
//!   then from the address holding the most, then the oldest. A proven
//!   connection is never closed for room. So a new connection always gets
//!   [`GRACE`] to show the token, and a flood gains nothing by holding
//!   connections: it only makes the listener accept more often.
//! - While every unproven connection is younger than [`GRACE`], new ones
//!   wait in the kernel's backlog (a flood arriving faster than that waits
//!   there too, ahead of the operator, but its share of the listener turns
//!   over every [`GRACE`]).
//! - Unproven connections from one client network that is not loopback (with
//!   `--allow-remote-admin`) are capped at a quarter of the listener; past
//!   it, that network's own oldest is closed (or, while all are in their
//!   grace, the new one), so one remote network (an IPv6 /64) cannot take
//!   it all.
//! - Request heads must arrive within [`HEADER_TIMEOUT`] (or the public
//!   header timeout when shorter): idle connections end sooner than on
//!   the public listeners. Requests are bounded like theirs, and the
//!   descriptors held never exceed `max_connections`
//!   (`crate::descriptors` set them aside).

use std::cmp::Reverse;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::{ConnectInfo, Request};
use axum::middleware::{self, Next};
use axum::response::Response;
use axum::Router;
use hyper_util::service::TowerToHyperService;
use opd_api::admin::Proof;
use opd_service::platform::network::{ClientNetwork, Ipv6PrefixLen};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{oneshot, watch, Notify, OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;
use tower::ServiceExt as _;

use crate::listener::{self, stopping};

/// How long a new admin connection has to show the admin credential
/// before it may be closed to make room: a client that sends its request
/// at once (as the operator's tools and browsers do) needs far less, even
/// over TLS from across the world; a flood's share turns over this often.
pub const GRACE: Duration = Duration::from_millis(250);

/// The longest the admin listener waits for a request head (idle
/// keep-alive connections included): its clients send at once, and an
/// idle connection only holds room.
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(3);

/// The limits of the admin listener.
#[derive(Debug, Clone, Copy)]
pub struct AdminLimits {
    pub header_read_timeout: Duration,
    pub request_timeout: Duration,
    /// Connections (descriptors) at once.
    pub max_connections: usize,
    /// How addresses are grouped for the per-network share (IPv6 by this
    /// prefix), as on the public listeners.
    pub ipv6_prefix: Ipv6PrefixLen,
}

impl AdminLimits {
    /// With the public listeners' timeouts (the header one cut to
    /// [`HEADER_TIMEOUT`]) and grouping, and `max_connections` descriptors.
    #[must_use]
    pub fn new(
        header_timeout: Duration,
        request_timeout: Duration,
        max_connections: usize,
        ipv6_prefix: Ipv6PrefixLen,
    ) -> Self {
        Self {
            header_read_timeout: header_timeout.min(HEADER_TIMEOUT),
            request_timeout,
            max_connections,
            ipv6_prefix,
        }
    }
}

/// What the decisions are made with.
#[derive(Debug, Clone, Copy)]
struct Caps {
    /// Connections kept at once (one descriptor fewer than allowed, so the
    /// listener can always accept the connection that closes another).
    live: usize,
    /// Unproven connections one non-loopback address may hold.
    per_address: usize,
    grace: Duration,
}

impl Caps {
    fn of(max_connections: usize) -> Self {
        let live = max_connections.max(2) - 1;
        Self {
            live,
            per_address: (live / 4).max(1),
            grace: GRACE,
        }
    }
}

/// One open connection, as the decisions see it.
#[derive(Debug, Clone, Copy)]
struct Seen {
    id: u64,
    peer: ClientNetwork,
    accepted: Instant,
    proven: bool,
    busy: bool,
}

/// When the listener may accept again.
#[derive(Debug, PartialEq, Eq)]
enum Room {
    Now,
    /// When an unproven connection's grace ends.
    At(Instant),
    /// Every connection is proven: when one ends.
    WhenOneEnds,
}

/// What becomes of a connection just accepted.
#[derive(Debug, PartialEq, Eq)]
enum Admission {
    Admit,
    /// Admitted, closing this one.
    Evict(u64),
    /// Closed at once.
    Refuse,
}

/// Whether the per-network cap applies to `peer`: not on loopback, where
/// every local process shares the operator's address.
fn shared_address(peer: ClientNetwork) -> bool {
    !peer.is_loopback()
}

/// The unproven connection to close for room (only from `from` when
/// given): one past its grace; idle before busy (a request in flight may
/// be someone's), then from the address holding the most, then the oldest.
fn victim(
    seen: &[Seen],
    now: Instant,
    grace: Duration,
    from: Option<ClientNetwork>,
) -> Option<u64> {
    let mut held: HashMap<ClientNetwork, usize> = HashMap::new();
    for s in seen.iter().filter(|s| !s.proven) {
        *held.entry(s.peer).or_default() += 1;
    }
    seen.iter()
        .filter(|s| !s.proven && now.saturating_duration_since(s.accepted) >= grace)
        .filter(|s| from.is_none_or(|a| s.peer == a))
        .min_by_key(|s| (s.busy, Reverse(held.get(&s.peer)), s.accepted))
        .map(|s| s.id)
}

/// Whether the listener may accept now: below its cap, or with a
/// connection to close for room; else when one will be.
fn room(seen: &[Seen], now: Instant, caps: Caps) -> Room {
    if seen.len() < caps.live || victim(seen, now, caps.grace, None).is_some() {
        return Room::Now;
    }
    match seen.iter().filter(|s| !s.proven).map(|s| s.accepted).min() {
        Some(oldest) => Room::At(oldest + caps.grace),
        None => Room::WhenOneEnds,
    }
}

/// What becomes of a connection from `peer` accepted at `now`.
fn admission(seen: &[Seen], peer: ClientNetwork, now: Instant, caps: Caps) -> Admission {
    let or_refuse = |v: Option<u64>| v.map_or(Admission::Refuse, Admission::Evict);
    if shared_address(peer) {
        let held = seen.iter().filter(|s| !s.proven && s.peer == peer).count();
        if held >= caps.per_address {
            return or_refuse(victim(seen, now, caps.grace, Some(peer)));
        }
    }
    if seen.len() < caps.live {
        return Admission::Admit;
    }
    or_refuse(victim(seen, now, caps.grace, None))
}

/// Requests in flight on one connection (HTTP/1.1: none or one).
#[derive(Debug, Clone, Default)]
struct Busy(Arc<AtomicUsize>);

/// One request in flight until dropped.
struct InFlight(Busy);

impl Busy {
    fn enter(self) -> InFlight {
        self.0.fetch_add(1, Ordering::Relaxed);
        InFlight(self)
    }

    fn is_busy(&self) -> bool {
        self.0.load(Ordering::Relaxed) > 0
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        (self.0).0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Counts the request as in flight on its connection while it is answered.
/// `Keep-Alive: timeout=N`: idle connections here close after the short
/// header timeout, sooner than clients keep theirs by default (Node's
/// fetch keeps them 4 s), and a client that sends on a connection the
/// server is closing gets a failed request. Clients that read this hint
/// (Node's among them) stop reusing a connection before then; the others
/// retry a request on a reused connection that was closed.
fn keep_alive_hint(idle: Duration) -> axum::http::HeaderValue {
    let secs = idle.as_secs().max(1);
    axum::http::HeaderValue::from_str(&format!("timeout={secs}"))
        .unwrap_or_else(|_| axum::http::HeaderValue::from_static("timeout=1"))
}

async fn track_busy(request: Request, next: Next) -> Response {
    let _in_flight = request.extensions().get::<Busy>().cloned().map(Busy::enter);
    next.run(request).await
}

/// An open connection in the pool.
struct Entry {
    id: u64,
    peer: ClientNetwork,
    accepted: Instant,
    proof: Proof,
    busy: Busy,
    /// Closes the connection when sent on (or dropped with the entry).
    close: oneshot::Sender<()>,
}

/// The admin listener's open connections.
#[derive(Default)]
struct Pool {
    entries: Mutex<(u64, Vec<Entry>)>,
    /// Signalled when a connection ends.
    freed: Notify,
}

/// A connection admitted to the pool, and taken out of it when dropped.
struct Admitted {
    pool: Arc<Pool>,
    id: u64,
    proof: Proof,
    busy: Busy,
}

impl Pool {
    fn seen(entries: &[Entry]) -> Vec<Seen> {
        entries
            .iter()
            .map(|e| Seen {
                id: e.id,
                peer: e.peer,
                accepted: e.accepted,
                proven: e.proof.is_proven(),
                busy: e.busy.is_busy(),
            })
            .collect()
    }

    fn room(&self, caps: Caps) -> Room {
        let entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        room(&Self::seen(&entries.1), Instant::now(), caps)
    }

    /// Waits until the listener may accept; false when stopping.
    async fn wait_for_room(&self, caps: Caps, stop: &mut watch::Receiver<bool>) -> bool {
        loop {
            let until = match self.room(caps) {
                Room::Now => return true,
                Room::At(at) => Some(at),
                Room::WhenOneEnds => None,
            };
            let grace_ends = async {
                match until {
                    Some(at) => tokio::time::sleep_until(at).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                () = self.freed.notified() => {}
                () = grace_ends => {}
                () = stopping(stop) => return false,
            }
        }
    }

    /// Admits a connection from `peer`, closing another when that is the
    /// decision; `None` when it is refused.
    fn admit(
        self: &Arc<Self>,
        peer: ClientNetwork,
        caps: Caps,
    ) -> Option<(Admitted, oneshot::Receiver<()>)> {
        let now = Instant::now();
        let mut guard = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        let (next, entries) = &mut *guard;
        match admission(&Self::seen(entries), peer, now, caps) {
            Admission::Refuse => return None,
            Admission::Admit => {}
            Admission::Evict(id) => {
                if let Some(at) = entries.iter().position(|e| e.id == id) {
                    let evicted = entries.swap_remove(at);
                    let _ = evicted.close.send(());
                    tracing::debug!(peer = %evicted.peer, "admin connection closed to make room");
                }
            }
        }
        *next += 1;
        let (close, closed) = oneshot::channel();
        let (proof, busy) = (Proof::new(), Busy::default());
        entries.push(Entry {
            id: *next,
            peer,
            accepted: now,
            proof: proof.clone(),
            busy: busy.clone(),
            close,
        });
        let admitted = Admitted {
            pool: self.clone(),
            id: *next,
            proof,
            busy,
        };
        Some((admitted, closed))
    }
}

impl Drop for Admitted {
    fn drop(&mut self) {
        let mut entries = self.pool.entries.lock().unwrap_or_else(|e| e.into_inner());
        entries.1.retain(|e| e.id != self.id);
        drop(entries);
        self.pool.freed.notify_one();
    }
}

/// Resolves when the pool closes the connection to make room.
async fn closed_for_room(closed: oneshot::Receiver<()>) {
    if closed.await.is_err() {
        // The entry is gone without a word: the connection ends on its own.
        std::future::pending::<()>().await;
    }
}

/// Serves `router` on `listener` until `stop` turns true; over TLS when
/// `tls` is given.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    limits: AdminLimits,
    tls: Option<tokio_rustls::TlsAcceptor>,
    mut stop: watch::Receiver<bool>,
) -> std::io::Result<()> {
    let timeout = limits.request_timeout;
    let idle = keep_alive_hint(limits.header_read_timeout);
    let router = router
        .layer(middleware::from_fn(track_busy))
        .layer(middleware::from_fn(move |req: Request, next: Next| {
            listener::within(timeout, req, next)
        }))
        .layer(middleware::map_response(move |mut response: Response| {
            let headers = response.headers_mut();
            if !headers.contains_key(axum::http::header::CONNECTION) {
                headers.insert("keep-alive", idle.clone());
            }
            std::future::ready(response)
        }));
    let caps = Caps::of(limits.max_connections);
    let permits = Arc::new(Semaphore::new(caps.live + 1));
    let pool = Arc::new(Pool::default());
    loop {
        if !pool.wait_for_room(caps, &mut stop).await {
            return Ok(());
        }
        // The permit is held by each connection until its descriptor is
        // closed, a closed one's included: the descriptors never exceed
        // the budget.
        let (permit, stream, peer) = match listener::accept(&listener, &permits, &mut stop).await {
            listener::Accepted::Connection(permit, stream, peer) => (permit, stream, peer),
            listener::Accepted::Retry => continue,
            listener::Accepted::Stopping => return Ok(()),
        };
        let Some((admitted, closed)) =
            pool.admit(ClientNetwork::of(peer.ip(), limits.ipv6_prefix), caps)
        else {
            // Closed at once: the permit and the descriptor come back.
            continue;
        };
        let connection = Connection {
            stream,
            peer,
            admitted,
            permit,
        };
        tokio::spawn(connection.serve(router.clone(), limits, tls.clone(), stop.clone(), closed));
    }
}

/// An admitted connection and what it holds.
struct Connection {
    stream: TcpStream,
    peer: SocketAddr,
    admitted: Admitted,
    permit: OwnedSemaphorePermit,
}

impl Connection {
    /// Serves the connection until it ends, `stop` turns true (its current
    /// request finishes) or the pool closes it for room (at once).
    async fn serve(
        self,
        router: Router,
        limits: AdminLimits,
        tls: Option<tokio_rustls::TlsAcceptor>,
        stop: watch::Receiver<bool>,
        closed: oneshot::Receiver<()>,
    ) {
        let Self {
            stream,
            peer,
            admitted,
            permit,
        } = self;
        let (proof, busy) = (admitted.proof.clone(), admitted.busy.clone());
        // Handlers that limit by client address read it as `ConnectInfo`;
        // the admin checks mark the connection's proof.
        let service = TowerToHyperService::new(router.map_request(
            move |mut request: hyper::Request<hyper::body::Incoming>| {
                request.extensions_mut().insert(ConnectInfo(peer));
                request.extensions_mut().insert(proof.clone());
                request.extensions_mut().insert(busy.clone());
                opd_api::collapse_empty_segments(&mut request);
                request
            },
        ));
        let http = listener::Limits {
            header_read_timeout: limits.header_read_timeout,
            request_timeout: limits.request_timeout,
            ..listener::Limits::default()
        };
        let serving = async move {
            match tls {
                None => listener::serve_connection(stream, service, http, stop).await,
                // The handshake is bounded like a request head.
                Some(acceptor) => {
                    let handshake = acceptor.accept(stream);
                    if let Ok(Ok(stream)) =
                        tokio::time::timeout(limits.header_read_timeout, handshake).await
                    {
                        listener::serve_connection(stream, service, http, stop).await;
                    }
                }
            }
        };
        tokio::select! {
            () = serving => {}
            () = closed_for_room(closed) => {}
        }
        // The descriptor is closed (above, with `serving`) before the
        // connection leaves the pool and gives its permit back.
        drop((admitted, permit));
    }
}

#[cfg(test)]
mod tests {
    use std::net::IpAddr;

    use super::*;

    fn network(ip: IpAddr) -> ClientNetwork {
        ClientNetwork::of(ip, Ipv6PrefixLen::default())
    }

    fn local() -> ClientNetwork {
        network(IpAddr::V4(std::net::Ipv4Addr::LOCALHOST))
    }

    fn remote(last: u8) -> ClientNetwork {
        network(IpAddr::V4(std::net::Ipv4Addr::new(192, 0, 2, last)))
    }

    fn caps(live: usize, per_address: usize) -> Caps {
        Caps {
            live,
            per_address,
            grace: GRACE,
        }
    }

    /// A connection accepted `ms` milliseconds before `now`.
    fn conn(id: u64, peer: ClientNetwork, now: Instant, ms: u64) -> Seen {
        Seen {
            id,
            peer,
            accepted: now - Duration::from_millis(ms),
            proven: false,
            busy: false,
        }
    }

    #[test]
    fn one_ipv6_network_holds_one_share() {
        let now = Instant::now();
        let (a, b) = (
            network("2001:db8:1:2::a".parse().unwrap()),
            network("2001:db8:1:2:ffff::b".parse().unwrap()),
        );
        let seen = vec![conn(1, a, now, 900)];
        // Another address of the same /64 is at the share: it loses the
        // network's own oldest, as the first address would.
        assert_eq!(admission(&seen, b, now, caps(8, 1)), Admission::Evict(1));
        let elsewhere = network("2001:db8:1:3::a".parse().unwrap());
        assert_eq!(
            admission(&seen, elsewhere, now, caps(8, 1)),
            Admission::Admit
        );
    }

    #[test]
    fn loopback_shares_no_per_address_cap() {
        for local in ["127.0.0.1", "127.0.0.2", "::1", "::ffff:127.0.0.1"] {
            assert!(!shared_address(network(local.parse().unwrap())), "{local}");
        }
        for far in ["192.0.2.1", "2001:db8::1", "::ffff:192.0.2.1"] {
            assert!(shared_address(network(far.parse().unwrap())), "{far}");
        }
    }

    #[test]
    fn a_full_listener_closes_an_unproven_connection_past_its_grace() {
        let now = Instant::now();
        let mut seen = vec![conn(1, local(), now, 900), conn(2, local(), now, 600)];
        seen[0].proven = true;
        // Below the cap: admitted as it comes.
        assert_eq!(admission(&seen, local(), now, caps(3, 1)), Admission::Admit);
        // Full: the unproven one goes, never the proven one.
        assert_eq!(
            admission(&seen, local(), now, caps(2, 1)),
            Admission::Evict(2)
        );
        seen[1].proven = true;
        assert_eq!(
            admission(&seen, local(), now, caps(2, 1)),
            Admission::Refuse
        );
    }

    #[test]
    fn idle_connections_go_before_busy_ones_and_the_oldest_first() {
        let now = Instant::now();
        let mut seen = vec![
            conn(1, local(), now, 900),
            conn(2, local(), now, 800),
            conn(3, local(), now, 700),
            conn(4, local(), now, 10),
        ];
        seen[0].busy = true;
        assert_eq!(victim(&seen, now, GRACE, None), Some(2));
        seen[1].proven = true;
        assert_eq!(victim(&seen, now, GRACE, None), Some(3));
        seen[2].busy = true;
        // Only busy ones past their grace are left: the oldest of them.
        assert_eq!(victim(&seen, now, GRACE, None), Some(1));
    }

    #[test]
    fn a_new_connection_always_has_its_grace() {
        let now = Instant::now();
        let seen = vec![conn(1, local(), now, 200), conn(2, local(), now, 100)];
        assert_eq!(victim(&seen, now, GRACE, None), None);
        assert_eq!(
            admission(&seen, local(), now, caps(2, 1)),
            Admission::Refuse
        );
        // So the listener waits to accept until the oldest one's grace ends.
        let ends = now - Duration::from_millis(200) + GRACE;
        assert_eq!(room(&seen, now, caps(2, 1)), Room::At(ends));
        assert_eq!(room(&seen, ends, caps(2, 1)), Room::Now);
        assert_eq!(room(&seen, now, caps(3, 1)), Room::Now);
        let proven: Vec<Seen> = seen.iter().map(|s| Seen { proven: true, ..*s }).collect();
        assert_eq!(room(&proven, ends, caps(2, 1)), Room::WhenOneEnds);
    }

    #[test]
    fn one_remote_address_cannot_take_the_listener() {
        let now = Instant::now();
        let (a, b) = (remote(1), remote(2));
        let mut seen = vec![
            conn(1, a, now, 900),
            conn(2, a, now, 800),
            conn(3, b, now, 700),
        ];
        // At its share, an address closes its own oldest, not another's.
        assert_eq!(admission(&seen, a, now, caps(10, 2)), Admission::Evict(1));
        assert_eq!(admission(&seen, b, now, caps(10, 2)), Admission::Admit);
        // Its own all in their grace: the new one is refused.
        seen[0].accepted = now;
        seen[1].accepted = now;
        assert_eq!(admission(&seen, a, now, caps(10, 2)), Admission::Refuse);
        // A full listener takes room from the address holding the most.
        let seen = vec![
            conn(1, b, now, 900),
            conn(2, a, now, 800),
            conn(3, a, now, 700),
        ];
        assert_eq!(
            admission(&seen, remote(3), now, caps(3, 2)),
            Admission::Evict(2)
        );
        // Proven connections count against no address's share.
        let mut seen = vec![conn(1, a, now, 900), conn(2, a, now, 800)];
        seen[0].proven = true;
        assert_eq!(admission(&seen, a, now, caps(10, 2)), Admission::Admit);
    }

    #[test]
    fn the_caps_keep_a_descriptor_for_accepting() {
        let c = Caps::of(256);
        assert_eq!((c.live, c.per_address), (255, 63));
        let c = Caps::of(16);
        assert_eq!((c.live, c.per_address), (15, 3));
        assert_eq!(Caps::of(0).live, 1);
    }
}
