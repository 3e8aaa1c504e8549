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
//! share it in the database;
//! [`MemoryReplayLog`](crate::access::replays::memory::MemoryReplayLog) is the
//! in-process one.
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
//!
//! Lives here: the `ReplayLog` trait and its two homes, `memory` (SQLite,
//! one node) and `store` (PostgreSQL, every node). May call the parent's
//! identity helpers, the store and `platform`.

mod claimed;
pub mod memory;
pub mod store;

pub use claimed::{answer_ahead, answer_at_commit, settle};
pub use opd_store::claim::RequestClaim;

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use async_trait::async_trait;
use opd_gnap::ClientIdent;
use opd_httpsig::{parse_signature, ParsedSignature, RequestParts};
use sha2::{Digest as _, Sha256};

use crate::access::{client_identity, unix_now, AccessError};
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

    /// Whether a request's claim is written by the request's own
    /// transaction (the store operation the service hands it to, see
    /// [`opd_store::claim`]) rather than by [`begin`](Self::begin): only
    /// for a log kept in that same database.
    fn claims_in_transaction(&self) -> bool {
        false
    }

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
///
/// It also carries the request's [`RequestClaim`]: with a replay log kept
/// in the database, the signature check arms it, the handler hands it
/// ([`claim`](Self::claim)) to the use case, and the use case to the store
/// operation that does the request's work, which commits it with that work
/// (see [`opd_store::claim`]), so the claim costs no round trip of its own.
#[derive(Debug, Clone, Default)]
pub struct ReplaySlot {
    slot: Arc<Mutex<Slot>>,
    claim: RequestClaim,
}

/// What a [`ReplaySlot`] holds.
#[derive(Debug, Default)]
pub enum Slot {
    #[default]
    Empty,
    /// This request runs; its response is to be recorded.
    Claimed(ClaimGuard),
    /// An identical request's response, to send instead.
    Answer(Arc<StoredResponse>),
    /// This request runs; its claim rides with its own write (the slot's
    /// [`RequestClaim`] says how that went).
    Deferred(Fingerprint),
}

impl ReplaySlot {
    fn lock(&self) -> MutexGuard<'_, Slot> {
        // A slot is written once per request; a panic elsewhere cannot
        // leave it half-written.
        self.slot.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The request's replay claim, for the store operation that does its
    /// work: that operation's transaction carries it.
    pub fn claim(&self) -> &RequestClaim {
        &self.claim
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

/// Turns a finished earlier request into the answer for this one.
fn answer(outcome: Outcome) -> Result<Arc<StoredResponse>, AccessError> {
    match outcome {
        Outcome::Response(r) => Ok(r),
        Outcome::NotKept => Err(AccessError::Replayed),
    }
}

async fn wait_for(services: &Services, fp: &Fingerprint) -> Result<Outcome, AccessError> {
    match services
        .access
        .replays
        .wait(fp, services.config.replay_wait)
        .await
    {
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
    let Ok(parsed) = parse_signature(request, &services.config.signature_policy, now) else {
        return Ok(None);
    };
    let Some(fp) = fingerprint(request, &parsed, None) else {
        return Ok(None);
    };
    let seen = services.access.replays.peek(&fp, now).await.map_err(|e| {
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
        .saturating_add(services.config.signature_policy.max_age.as_secs())
        .saturating_add(1);
    if let Some(slot) = slot.filter(|_| services.access.replays.claims_in_transaction()) {
        // The request's own write claims it (or finds it answered): the
        // handler hands the slot's claim to its use case.
        let expires = i64::try_from(expires_at).unwrap_or(i64::MAX);
        slot.claim.arm(opd_core::hex::lower(&fp.0), expires);
        slot.put(Slot::Deferred(fp));
        return Ok(());
    }
    let begun = services
        .access
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
                log: Arc::clone(&services.access.replays),
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

/// Deletes the replay log's entries whose signatures can no longer be
/// presented (past the freshness window); returns how many.
pub async fn prune_once(services: &Services) -> Result<u64, ServiceError> {
    let now = services.clock.now().unix_seconds();
    Ok(services.store.prune_requests(now).await?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::access::replays::memory::MemoryReplayLog;

    #[tokio::test]
    async fn a_dropped_claim_records_not_kept() {
        let fp = Fingerprint([1; 32]);
        let log: Arc<dyn ReplayLog> = Arc::new(MemoryReplayLog::new(10, 1 << 20));
        log.begin(&fp, 1300, 1000).await.unwrap();
        let guard = ClaimGuard {
            log: Arc::clone(&log),
            fingerprint: fp,
            finished: false,
        };
        drop(guard);
        // The drop hands `finish` to the runtime; waiting observes it.
        let waited = log.wait(&fp, Duration::from_secs(60)).await.unwrap();
        assert_eq!(waited, Some(Outcome::NotKept));
    }
}
