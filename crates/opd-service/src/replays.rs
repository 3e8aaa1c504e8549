//! Replayed state-changing requests are answered idempotently.
//!
//! The official Node client signs without a `nonce` and with a whole-second
//! `created`, so an application repeating an identical create within one
//! second sends a byte-identical signed request. Refusing it (as a replay)
//! makes deployed clients believe their key was revoked; running it again
//! would create (or pay) twice. Instead, the first request with a given
//! [`Fingerprint`] runs, and every identical request within the signature
//! freshness window gets the first one's response (status, the headers in
//! [`KEPT_HEADERS`] and body). An identical request arriving while the
//! first still runs waits for it, for at most
//! [`ServiceConfig::replay_wait`](crate::ServiceConfig::replay_wait).
//!
//! The bookkeeping sits behind [`ReplayLog`], so that several nodes can
//! share it in the database; [`MemoryReplayLog`] is the in-process one.
//!
//! Two entry points, both only for state-changing methods:
//! - [`recall`], before anything else (the HTTP layer calls it): answers a
//!   request identical to one already seen, without verifying its signature
//!   again. This is what covers requests whose own first run invalidated
//!   the credential they present (a continuation or a token rotation
//!   replaces the token, a cancel deletes the grant). It is sound because
//!   the fingerprint covers the whole signature base and the signature:
//!   equal bytes verified before, with the key the base names.
//! - [`admit`], after the signature verified: claims the request (the
//!   caller runs it and the HTTP layer records the response) or gets the
//!   answer of an identical request. Only verified signatures reach it, so
//!   forged requests cannot fill the log.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use async_trait::async_trait;
use opd_gnap::ClientIdent;
use opd_httpsig::{parse_signature, ParsedSignature, RequestParts};
use sha2::{Digest as _, Sha256};
use tokio::sync::watch;

use crate::access::{client_identity, AccessError};
use crate::{ServiceError, Services};

/// The largest response body (plus kept headers) that is stored. A replay
/// of a request whose response was larger is refused (`replayed_request`).
pub const MAX_STORED_RESPONSE: usize = 64 * 1024;

/// The response headers a replay gets back; every other header (notably
/// `set-cookie`) is dropped.
pub const KEPT_HEADERS: [&str; 4] = [
    "content-type",
    "location",
    "retry-after",
    "www-authenticate",
];

/// Identifies one request: SHA-256 over its method, target URI, body
/// digest and either its signature (base and bytes) or, when the signature
/// has a `nonce`, the client, key id and nonce.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Fingerprint(pub [u8; 32]);

/// A response as it is replayed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredResponse {
    pub status: u16,
    /// Lower-case names, only those in [`KEPT_HEADERS`].
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl StoredResponse {
    /// The bytes this response accounts for in a size bound.
    pub fn size(&self) -> usize {
        self.body.len()
            + self
                .headers
                .iter()
                .map(|(k, v)| k.len() + v.len())
                .sum::<usize>()
    }
}

/// What the first request left behind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Its response, to be replayed.
    Response(Arc<StoredResponse>),
    /// Nothing to replay: the response was too large to keep, or the first
    /// request ended without one (its task was lost). Replays are refused.
    NotKept,
}

/// The state of a fingerprint, as [`ReplayLog::begin`] and
/// [`ReplayLog::peek`] see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Begun {
    /// Unknown until now, and now claimed by the caller (only from
    /// `begin`), which must call [`ReplayLog::finish`].
    First,
    /// Claimed by an earlier request that has not finished.
    Running,
    /// An earlier request finished.
    Done(Outcome),
}

/// The log of requests seen within the freshness window.
///
/// Contract (what an implementation shared by several nodes must keep):
/// - [`begin`](Self::begin) is one atomic claim: of any number of
///   concurrent calls with the same fingerprint (on any node), exactly one
///   gets [`Begun::First`]; the others see `Running` or `Done`. In SQL: an
///   `INSERT ... ON CONFLICT (fingerprint) DO NOTHING` of a row without a
///   response, then, when no row was inserted, a `SELECT` of the row.
/// - [`finish`](Self::finish) records the outcome of a claimed fingerprint
///   once (`UPDATE ... SET status, headers, body WHERE fingerprint = $1`);
///   a later `peek`/`begin`/`wait` anywhere returns it.
/// - an entry lives at least until `expires_at` (unix seconds, the end of
///   the signature's freshness window) and may be dropped after it (e.g. a
///   periodic `DELETE ... WHERE expires_at < now`). While it lives, the
///   fingerprint is never claimed twice. An implementation that must drop
///   live entries to bound its size may do so (then a replay would run
///   again), but should prefer dropping stored bodies (turning them into
///   [`Outcome::NotKept`], whose replays are refused).
/// - [`wait`](Self::wait) returns once the entry is finished, or `None`
///   after `timeout` (or when the entry is gone). A database
///   implementation may poll, or use `LISTEN`/`NOTIFY`.
/// - a claim whose holder dies is never released: replays then wait and
///   get a "still in progress" error until the entry expires. Running a
///   payment twice is worse than refusing its replay.
#[async_trait]
pub trait ReplayLog: Send + Sync + std::fmt::Debug + 'static {
    /// Claims `fingerprint`, or reports who has it.
    async fn begin(
        &self,
        fingerprint: &Fingerprint,
        expires_at: u64,
        now: u64,
    ) -> Result<Begun, ServiceError>;

    /// The state of `fingerprint` without claiming it; `None` when unknown
    /// (never [`Begun::First`]).
    async fn peek(
        &self,
        fingerprint: &Fingerprint,
        now: u64,
    ) -> Result<Option<Begun>, ServiceError>;

    /// Records the outcome of a claimed fingerprint.
    async fn finish(&self, fingerprint: &Fingerprint, outcome: Outcome)
        -> Result<(), ServiceError>;

    /// Waits until `fingerprint` is finished, at most `timeout`.
    async fn wait(
        &self,
        fingerprint: &Fingerprint,
        timeout: Duration,
    ) -> Result<Option<Outcome>, ServiceError>;
}

/// Computes the fingerprint of a request whose signature parsed.
///
/// Without a `nonce`, the signature base and bytes identify the request (a
/// retry signed anew is a new request). With a `nonce`, the client, key id
/// and nonce do (a retry signed anew with the same nonce is the same
/// request): that needs the verified client, so `None` is returned when
/// `client` is not known yet.
pub fn fingerprint(
    request: &RequestParts<'_>,
    parsed: &ParsedSignature,
    client: Option<&ClientIdent>,
) -> Option<Fingerprint> {
    let mut h = Sha256::new();
    // Every field is length-prefixed so that no two different field lists
    // hash the same bytes.
    let mut field = |bytes: &[u8]| {
        h.update((bytes.len() as u64).to_be_bytes());
        h.update(bytes);
    };
    field(b"opd-replay-v1");
    field(request.method.as_str().as_bytes());
    field(request.target_uri.as_bytes());
    let body: [u8; 32] = Sha256::digest(request.body.unwrap_or_default()).into();
    field(&body);
    match parsed.nonce() {
        None => {
            field(b"signature");
            field(parsed.signature_base());
            field(parsed.signature_bytes());
        }
        Some(nonce) => {
            let client = client_identity(client?);
            field(b"nonce");
            field(client.as_bytes());
            field(parsed.keyid().as_bytes());
            field(nonce.as_bytes());
        }
    }
    Some(Fingerprint(h.finalize().into()))
}

/// Whether requests with this method change state (and so are answered
/// idempotently); reads are exempt.
pub fn changes_state(method: &http::Method) -> bool {
    matches!(
        *method,
        http::Method::POST | http::Method::PUT | http::Method::PATCH | http::Method::DELETE
    )
}

/// Where the HTTP layer and the signature check meet for one request: the
/// check leaves either the claim (the layer records the response into it)
/// or the answer to send instead of the handler's.
#[derive(Debug, Clone, Default)]
pub struct ReplaySlot(Arc<Mutex<Slot>>);

/// What a [`ReplaySlot`] holds.
#[derive(Debug, Default)]
pub enum Slot {
    #[default]
    Empty,
    /// This request runs; its response is to be recorded.
    Claimed(ClaimGuard),
    /// An identical request's response, to send instead.
    Answer(Arc<StoredResponse>),
}

impl ReplaySlot {
    fn lock(&self) -> MutexGuard<'_, Slot> {
        // A slot is written once per request; a panic elsewhere cannot
        // leave it half-written.
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn put(&self, slot: Slot) {
        *self.lock() = slot;
    }

    /// Takes what the signature check left.
    pub fn take(&self) -> Slot {
        std::mem::take(&mut *self.lock())
    }
}

/// The claim on a fingerprint. [`finish`](Self::finish) records the
/// response; dropping it unfinished records [`Outcome::NotKept`] (so
/// replays are refused, never run again).
#[derive(Debug)]
pub struct ClaimGuard {
    log: Arc<dyn ReplayLog>,
    fingerprint: Fingerprint,
    finished: bool,
}

impl ClaimGuard {
    /// Records the outcome.
    pub async fn finish(mut self, outcome: Outcome) {
        self.finished = true;
        if let Err(e) = self.log.finish(&self.fingerprint, outcome).await {
            tracing::warn!(error = %e, "could not record a response for replays");
        }
    }
}

impl Drop for ClaimGuard {
    fn drop(&mut self) {
        if self.finished {
            return;
        }
        // Drop cannot wait; the log's `finish` is quick (in memory) or one
        // UPDATE, so it runs on its own.
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            let log = Arc::clone(&self.log);
            let fp = self.fingerprint;
            rt.spawn(async move {
                if let Err(e) = log.finish(&fp, Outcome::NotKept).await {
                    tracing::warn!(error = %e, "could not record a lost request for replays");
                }
            });
        }
    }
}

fn unix_now(services: &Services) -> u64 {
    u64::try_from(services.clock.now().unix_seconds()).unwrap_or(0)
}

/// Turns a finished earlier request into the answer for this one.
fn answer(outcome: Outcome) -> Result<Arc<StoredResponse>, AccessError> {
    match outcome {
        Outcome::Response(r) => Ok(r),
        Outcome::NotKept => Err(AccessError::Replayed),
    }
}

async fn wait_for(services: &Services, fp: &Fingerprint) -> Result<Outcome, AccessError> {
    match services.replays.wait(fp, services.config.replay_wait).await {
        Ok(Some(outcome)) => Ok(outcome),
        Ok(None) => Err(AccessError::ReplayPending),
        Err(e) => {
            tracing::error!(error = %e, "replay log unavailable");
            Err(AccessError::Unavailable)
        }
    }
}

/// Before anything else: the stored answer of an identical earlier request
/// (waiting while it runs), or `None` to process the request.
///
/// Requests whose signature does not parse, or has a `nonce` (which needs
/// the verified client), go on to be processed (and checked) normally.
pub async fn recall(
    services: &Services,
    request: &RequestParts<'_>,
) -> Result<Option<Arc<StoredResponse>>, AccessError> {
    if !changes_state(request.method) {
        return Ok(None);
    }
    let now = unix_now(services);
    let Ok(parsed) = parse_signature(request, &services.signature_policy, now) else {
        return Ok(None);
    };
    let Some(fp) = fingerprint(request, &parsed, None) else {
        return Ok(None);
    };
    let seen = services.replays.peek(&fp, now).await.map_err(|e| {
        tracing::error!(error = %e, "replay log unavailable");
        AccessError::Unavailable
    })?;
    match seen {
        None | Some(Begun::First) => Ok(None),
        Some(Begun::Done(outcome)) => answer(outcome).map(Some),
        Some(Begun::Running) => answer(wait_for(services, &fp).await?).map(Some),
    }
}

/// After the signature verified: claims the request for the caller (into
/// `slot`), or answers it with an identical earlier request's response
/// (into `slot`, returning [`AccessError::Answered`]).
///
/// Without a slot (no HTTP layer records responses) a replay is refused.
pub async fn admit(
    services: &Services,
    request: &RequestParts<'_>,
    parsed: &ParsedSignature,
    client: &ClientIdent,
    slot: Option<&ReplaySlot>,
) -> Result<(), AccessError> {
    if !changes_state(request.method) {
        return Ok(());
    }
    let Some(fp) = fingerprint(request, parsed, Some(client)) else {
        return Ok(());
    };
    let now = unix_now(services);
    // The same signature is accepted until `created + max_age`; a second
    // later it is stale and refused before it gets here.
    let expires_at = parsed
        .created()
        .saturating_add(services.signature_policy.max_age.as_secs())
        .saturating_add(1);
    let begun = services
        .replays
        .begin(&fp, expires_at, now)
        .await
        .map_err(|e| {
            tracing::error!(error = %e, "replay log unavailable");
            AccessError::Unavailable
        })?;
    let outcome = match begun {
        Begun::First => {
            let guard = ClaimGuard {
                log: Arc::clone(&services.replays),
                fingerprint: fp,
                finished: false,
            };
            // Without a slot the guard drops here and replays are refused.
            if let Some(slot) = slot {
                slot.put(Slot::Claimed(guard));
            }
            return Ok(());
        }
        Begun::Done(outcome) => outcome,
        Begun::Running => wait_for(services, &fp).await?,
    };
    let response = answer(outcome)?;
    match slot {
        Some(slot) => {
            slot.put(Slot::Answer(response));
            Err(AccessError::Answered)
        }
        None => Err(AccessError::Replayed),
    }
}

/// The in-process [`ReplayLog`]: bounded in entries and in stored bytes;
/// entries expire with the signature freshness window.
///
/// When `capacity` entries are live, the one expiring first is dropped (a
/// replay of it would then run again; size `capacity` above the number of
/// state-changing requests per window). When stored responses exceed
/// `max_bytes`, the bodies expiring first are dropped (their replays are
/// then refused, not run again).
#[derive(Debug)]
pub struct MemoryReplayLog {
    capacity: usize,
    max_bytes: usize,
    inner: Mutex<Mem>,
}

#[derive(Debug, Default)]
struct Mem {
    entries: HashMap<Fingerprint, Entry>,
    by_expiry: BTreeSet<(u64, Fingerprint)>,
    /// Entries holding a stored response, by expiry, with `bytes` their sum.
    with_body: BTreeSet<(u64, Fingerprint)>,
    bytes: usize,
}

#[derive(Debug)]
struct Entry {
    expires_at: u64,
    state: EntryState,
}

#[derive(Debug)]
enum EntryState {
    /// Waiters subscribe; `finish` sends the outcome.
    Running(watch::Sender<Option<Outcome>>),
    Done(Outcome),
}

impl Mem {
    fn remove(&mut self, fp: &Fingerprint) {
        if let Some(entry) = self.entries.remove(fp) {
            self.by_expiry.remove(&(entry.expires_at, *fp));
            if self.with_body.remove(&(entry.expires_at, *fp)) {
                if let EntryState::Done(Outcome::Response(r)) = &entry.state {
                    self.bytes = self.bytes.saturating_sub(r.size());
                }
            }
        }
    }

    fn purge(&mut self, now: u64) {
        while let Some(&(expires_at, fp)) = self.by_expiry.first() {
            if expires_at > now {
                break;
            }
            self.remove(&fp);
        }
    }

    fn state(&self, fp: &Fingerprint) -> Option<Begun> {
        self.entries.get(fp).map(|e| match &e.state {
            EntryState::Running(_) => Begun::Running,
            EntryState::Done(o) => Begun::Done(o.clone()),
        })
    }

    /// Drops the oldest stored bodies until `extra` more bytes fit.
    fn make_room(&mut self, extra: usize, max_bytes: usize) {
        while self.bytes.saturating_add(extra) > max_bytes {
            let Some((expires_at, fp)) = self.with_body.pop_first() else {
                break;
            };
            if let Some(entry) = self.entries.get_mut(&fp) {
                if let EntryState::Done(Outcome::Response(r)) = &entry.state {
                    self.bytes = self.bytes.saturating_sub(r.size());
                }
                debug_assert_eq!(entry.expires_at, expires_at);
                entry.state = EntryState::Done(Outcome::NotKept);
            }
        }
    }
}

impl MemoryReplayLog {
    /// At most `capacity` entries (at least 1) and `max_bytes` of stored
    /// responses (at least one response of [`MAX_STORED_RESPONSE`]).
    pub fn new(capacity: usize, max_bytes: usize) -> Self {
        Self {
            capacity: capacity.max(1),
            max_bytes: max_bytes.max(MAX_STORED_RESPONSE),
            inner: Mutex::new(Mem::default()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Mem> {
        // Every mutation keeps the maps consistent before it can panic
        // (none of them does), so a poisoned lock is still usable.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Live entries (including any expired but not yet purged).
    pub fn len(&self) -> usize {
        self.lock().entries.len()
    }

    /// True when no entry is live.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes of stored responses.
    pub fn stored_bytes(&self) -> usize {
        self.lock().bytes
    }

    /// How many requests wait for `fingerprint` (a hook for tests).
    pub fn waiting(&self, fingerprint: &Fingerprint) -> usize {
        match self.lock().entries.get(fingerprint).map(|e| &e.state) {
            Some(EntryState::Running(tx)) => tx.receiver_count(),
            _ => 0,
        }
    }
}

#[async_trait]
impl ReplayLog for MemoryReplayLog {
    async fn begin(
        &self,
        fingerprint: &Fingerprint,
        expires_at: u64,
        now: u64,
    ) -> Result<Begun, ServiceError> {
        let mut mem = self.lock();
        mem.purge(now);
        if let Some(state) = mem.state(fingerprint) {
            return Ok(state);
        }
        while mem.entries.len() >= self.capacity {
            let Some((_, oldest)) = mem.by_expiry.first().copied() else {
                break;
            };
            mem.remove(&oldest);
        }
        let (tx, _) = watch::channel(None);
        mem.entries.insert(
            *fingerprint,
            Entry {
                expires_at,
                state: EntryState::Running(tx),
            },
        );
        mem.by_expiry.insert((expires_at, *fingerprint));
        Ok(Begun::First)
    }

    async fn peek(
        &self,
        fingerprint: &Fingerprint,
        now: u64,
    ) -> Result<Option<Begun>, ServiceError> {
        let mut mem = self.lock();
        mem.purge(now);
        Ok(mem.state(fingerprint))
    }

    async fn finish(
        &self,
        fingerprint: &Fingerprint,
        outcome: Outcome,
    ) -> Result<(), ServiceError> {
        let mut mem = self.lock();
        let Some(expires_at) = mem.entries.get(fingerprint).map(|e| e.expires_at) else {
            return Ok(());
        };
        let outcome = match outcome {
            Outcome::Response(r) if r.size() > MAX_STORED_RESPONSE => Outcome::NotKept,
            Outcome::Response(r) => {
                mem.make_room(r.size(), self.max_bytes);
                mem.bytes = mem.bytes.saturating_add(r.size());
                mem.with_body.insert((expires_at, *fingerprint));
                Outcome::Response(r)
            }
            Outcome::NotKept => Outcome::NotKept,
        };
        if let Some(entry) = mem.entries.get_mut(fingerprint) {
            let previous = std::mem::replace(&mut entry.state, EntryState::Done(outcome.clone()));
            if let EntryState::Running(tx) = previous {
                tx.send_replace(Some(outcome));
            }
        }
        Ok(())
    }

    async fn wait(
        &self,
        fingerprint: &Fingerprint,
        timeout: Duration,
    ) -> Result<Option<Outcome>, ServiceError> {
        let mut rx = {
            let mem = self.lock();
            match mem.entries.get(fingerprint).map(|e| &e.state) {
                None => return Ok(None),
                Some(EntryState::Done(o)) => return Ok(Some(o.clone())),
                Some(EntryState::Running(tx)) => tx.subscribe(),
            }
        };
        // `wait_for` also sees a value sent between `subscribe` and here;
        // it fails when the entry (its sender) was dropped.
        let waited = tokio::time::timeout(timeout, rx.wait_for(Option::is_some)).await;
        Ok(match waited {
            Ok(Ok(outcome)) => outcome.clone(),
            _ => None,
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn fp(n: u8) -> Fingerprint {
        Fingerprint([n; 32])
    }

    fn response(body: &str) -> Outcome {
        Outcome::Response(Arc::new(StoredResponse {
            status: 201,
            headers: vec![("content-type".into(), "application/json".into())],
            body: body.as_bytes().to_vec(),
        }))
    }

    #[tokio::test]
    async fn the_first_claims_and_later_ones_get_its_outcome() {
        let log = MemoryReplayLog::new(10, 1 << 20);
        assert_eq!(log.peek(&fp(1), 1000).await.unwrap(), None);
        assert_eq!(log.begin(&fp(1), 1300, 1000).await.unwrap(), Begun::First);
        assert_eq!(log.begin(&fp(1), 1300, 1000).await.unwrap(), Begun::Running);
        assert_eq!(log.peek(&fp(1), 1000).await.unwrap(), Some(Begun::Running));
        log.finish(&fp(1), response("{}")).await.unwrap();
        assert_eq!(
            log.begin(&fp(1), 1300, 1001).await.unwrap(),
            Begun::Done(response("{}"))
        );
        assert_eq!(log.begin(&fp(2), 1300, 1001).await.unwrap(), Begun::First);
    }

    #[tokio::test]
    async fn entries_expire_with_the_window() {
        let log = MemoryReplayLog::new(10, 1 << 20);
        assert_eq!(log.begin(&fp(1), 1300, 1000).await.unwrap(), Begun::First);
        log.finish(&fp(1), response("{}")).await.unwrap();
        assert!(log.peek(&fp(1), 1299).await.unwrap().is_some());
        assert_eq!(log.peek(&fp(1), 1300).await.unwrap(), None);
        assert!(log.is_empty());
        assert_eq!(log.stored_bytes(), 0);
    }

    #[tokio::test]
    async fn waiters_get_the_outcome_when_it_is_recorded() {
        let log = Arc::new(MemoryReplayLog::new(10, 1 << 20));
        assert_eq!(log.begin(&fp(1), 1300, 1000).await.unwrap(), Begun::First);
        let waiters: Vec<_> = (0..3)
            .map(|_| {
                let log = Arc::clone(&log);
                tokio::spawn(async move { log.wait(&fp(1), Duration::from_secs(60)).await })
            })
            .collect();
        // Only once all three wait is the outcome recorded.
        while log.waiting(&fp(1)) < 3 {
            tokio::task::yield_now().await;
        }
        log.finish(&fp(1), response("{\"a\":1}")).await.unwrap();
        for w in waiters {
            assert_eq!(w.await.unwrap().unwrap(), Some(response("{\"a\":1}")));
        }
    }

    #[tokio::test]
    async fn a_claim_never_finished_times_waiters_out() {
        let log = MemoryReplayLog::new(10, 1 << 20);
        assert_eq!(log.begin(&fp(1), 1300, 1000).await.unwrap(), Begun::First);
        // Nothing will ever finish it: the wait must end by its bound.
        let waited = log.wait(&fp(1), Duration::from_millis(1)).await.unwrap();
        assert_eq!(waited, None);
        assert_eq!(
            log.wait(&fp(9), Duration::from_secs(60)).await.unwrap(),
            None
        );
    }

    #[tokio::test]
    async fn large_responses_are_not_kept() {
        let log = MemoryReplayLog::new(10, 1 << 20);
        log.begin(&fp(1), 1300, 1000).await.unwrap();
        let big = "x".repeat(MAX_STORED_RESPONSE + 1);
        log.finish(&fp(1), response(&big)).await.unwrap();
        assert_eq!(
            log.peek(&fp(1), 1000).await.unwrap(),
            Some(Begun::Done(Outcome::NotKept))
        );
        assert_eq!(log.stored_bytes(), 0);
    }

    #[tokio::test]
    async fn the_byte_bound_drops_the_oldest_bodies_not_the_entries() {
        let log = MemoryReplayLog::new(10, MAX_STORED_RESPONSE);
        let body = "x".repeat(MAX_STORED_RESPONSE / 2);
        for (n, expires) in [(1, 1100), (2, 1200), (3, 1300)] {
            log.begin(&fp(n), expires, 1000).await.unwrap();
            log.finish(&fp(n), response(&body)).await.unwrap();
        }
        assert!(log.stored_bytes() <= MAX_STORED_RESPONSE);
        assert_eq!(
            log.peek(&fp(1), 1000).await.unwrap(),
            Some(Begun::Done(Outcome::NotKept))
        );
        assert_eq!(
            log.peek(&fp(3), 1000).await.unwrap(),
            Some(Begun::Done(response(&body)))
        );
        assert_eq!(log.len(), 3);
    }

    #[tokio::test]
    async fn the_entry_bound_drops_the_oldest_entry() {
        let log = MemoryReplayLog::new(2, 1 << 20);
        log.begin(&fp(1), 1100, 1000).await.unwrap();
        log.begin(&fp(2), 1200, 1000).await.unwrap();
        log.begin(&fp(3), 1300, 1000).await.unwrap();
        assert_eq!(log.len(), 2);
        assert_eq!(log.peek(&fp(1), 1000).await.unwrap(), None);
        assert_eq!(log.peek(&fp(2), 1000).await.unwrap(), Some(Begun::Running));
    }

    #[tokio::test]
    async fn a_dropped_claim_records_not_kept() {
        let log: Arc<dyn ReplayLog> = Arc::new(MemoryReplayLog::new(10, 1 << 20));
        log.begin(&fp(1), 1300, 1000).await.unwrap();
        let guard = ClaimGuard {
            log: Arc::clone(&log),
            fingerprint: fp(1),
            finished: false,
        };
        drop(guard);
        // The drop hands `finish` to the runtime; waiting observes it.
        let waited = log.wait(&fp(1), Duration::from_secs(60)).await.unwrap();
        assert_eq!(waited, Some(Outcome::NotKept));
    }
}
