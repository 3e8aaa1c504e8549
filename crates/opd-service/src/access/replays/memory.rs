//! The in-process [`ReplayLog`] of a single node (SQLite).
//!
//! Every state-changing request passes through it, and almost none is ever
//! replayed, so it is built for the write path: a claim is one map insert
//! and one queue push, a finish copies the response into a preallocated
//! byte ring, and nothing is freed one by one later: long-lived
//! allocations made and freed at the request rate are what glibc's
//! consolidation of freed chunks makes expensive (measured in
//! `BENCHMARKS.md`).
//!
//! - Entries expire in the order they were claimed: the queue is popped
//!   from the front while its head has expired. Expiry times follow the
//!   requests' `created`, which is close to arrival order, so an entry may
//!   outlive its expiry a little (allowed by the [`ReplayLog`] contract).
//! - Responses are written one after the other into a ring of `max_bytes`;
//!   a response is still there while fewer than `max_bytes` bytes were
//!   written after it. An overwritten response is reported as
//!   [`Outcome::NotKept`] (its replays are refused, never run again).
//! - Waiters share one [`Notify`], woken when a request they may be
//!   waiting for finishes (replays of running requests are rare).

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use async_trait::async_trait;
use tokio::sync::Notify;

use crate::access::replays::{
    Begun, Fingerprint, Outcome, ReplayLog, StoredResponse, KEPT_HEADERS, MAX_STORED_RESPONSE,
};
use crate::ServiceError;

/// The in-process [`ReplayLog`]: at most `capacity` entries and a ring of
/// `max_bytes` for their responses.
///
/// When `capacity` entries are live, the one claimed first is dropped (a
/// replay of it would then run again; size `capacity` above the number of
/// state-changing requests per freshness window).
#[derive(Debug)]
pub struct MemoryReplayLog {
    capacity: usize,
    inner: Mutex<Mem>,
    finished: Notify,
}

#[derive(Debug)]
struct Mem {
    entries: HashMap<Fingerprint, State>,
    /// `(expires_at, fingerprint)` in the order of the claims: one record
    /// per entry, and an entry is removed only with its record.
    order: VecDeque<(u64, Fingerprint)>,
    ring: Ring,
}

#[derive(Debug, Clone, Copy)]
enum State {
    /// Claimed; `waiters` requests wait for its outcome.
    Running {
        waiters: u32,
    },
    NotKept,
    /// The response is `len` bytes at ring position `at`.
    Kept {
        status: u16,
        at: u64,
        len: u32,
    },
}

impl Mem {
    fn purge(&mut self, now: u64) {
        while let Some(&(expires_at, _)) = self.order.front() {
            if expires_at > now {
                break;
            }
            self.pop_oldest();
        }
    }

    fn pop_oldest(&mut self) {
        if let Some((_, fp)) = self.order.pop_front() {
            self.entries.remove(&fp);
        }
    }

    fn begun(&self, state: State) -> Begun {
        match state {
            State::Running { .. } => Begun::Running,
            State::NotKept => Begun::Done(Outcome::NotKept),
            State::Kept { status, at, len } => Begun::Done(self.ring.read(status, at, len)),
        }
    }

    fn state(&self, fp: &Fingerprint) -> Option<Begun> {
        self.entries.get(fp).map(|&state| self.begun(state))
    }
}

impl MemoryReplayLog {
    /// At most `capacity` entries (at least 1) and `max_bytes` of stored
    /// responses (at least one response of [`MAX_STORED_RESPONSE`]). The
    /// ring is allocated at once; its pages are only touched as it fills.
    pub fn new(capacity: usize, max_bytes: usize) -> Self {
        Self {
            capacity: capacity.max(1),
            inner: Mutex::new(Mem {
                entries: HashMap::new(),
                order: VecDeque::new(),
                ring: Ring::new(max_bytes.max(MAX_STORED_RESPONSE + HEADER_ROOM)),
            }),
            finished: Notify::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Mem> {
        // Every mutation keeps the structures consistent before it can
        // panic (none of them does), so a poisoned lock is still usable.
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

    /// How many requests wait for `fingerprint` (a hook for tests).
    pub fn waiting(&self, fingerprint: &Fingerprint) -> usize {
        match self.lock().entries.get(fingerprint) {
            Some(State::Running { waiters }) => *waiters as usize,
            _ => 0,
        }
    }

    /// Counts this caller in (or out) of the waiters of `fp`; the state
    /// when it was running, else what it ended as.
    fn register(&self, fp: &Fingerprint, join: bool) -> Option<Begun> {
        let mut mem = self.lock();
        let state = mem.entries.get_mut(fp)?;
        if let State::Running { waiters } = state {
            *waiters = if join {
                waiters.saturating_add(1)
            } else {
                waiters.saturating_sub(1)
            };
        }
        let state = *state;
        Some(mem.begun(state))
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
        while mem.entries.len() >= self.capacity && !mem.order.is_empty() {
            mem.pop_oldest();
        }
        mem.entries
            .insert(*fingerprint, State::Running { waiters: 0 });
        mem.order.push_back((expires_at, *fingerprint));
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
        let had_waiters = {
            let mut mem = self.lock();
            let Some(&State::Running { waiters }) = mem.entries.get(fingerprint) else {
                return Ok(());
            };
            let state = match outcome {
                Outcome::Response(r) if r.size() <= MAX_STORED_RESPONSE => {
                    let (at, len) = mem.ring.write(&r);
                    State::Kept {
                        status: r.status,
                        at,
                        len,
                    }
                }
                Outcome::Response(_) | Outcome::NotKept => State::NotKept,
            };
            mem.entries.insert(*fingerprint, state);
            waiters > 0
        };
        if had_waiters {
            self.finished.notify_waiters();
        }
        Ok(())
    }

    async fn wait(
        &self,
        fingerprint: &Fingerprint,
        timeout: Duration,
    ) -> Result<Option<Outcome>, ServiceError> {
        match self.register(fingerprint, true) {
            None => return Ok(None),
            Some(Begun::Done(outcome)) => return Ok(Some(outcome)),
            Some(Begun::Running | Begun::First) => {}
        }
        let deadline = tokio::time::Instant::now() + timeout;
        let waited = loop {
            let notified = self.finished.notified();
            tokio::pin!(notified);
            // Enabled before the state is read, so a finish in between
            // still wakes it.
            notified.as_mut().enable();
            match self.lock().state(fingerprint) {
                None => break None,
                Some(Begun::Done(outcome)) => break Some(outcome),
                Some(Begun::Running | Begun::First) => {}
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                break None;
            }
        };
        self.register(fingerprint, false);
        Ok(waited)
    }
}

/// Room for the kept headers of one response, beyond its body.
const HEADER_ROOM: usize = 4096;

/// Responses, written one after the other into a fixed buffer that wraps.
/// Positions are absolute (bytes written since the start), so whether a
/// response was overwritten is one comparison.
#[derive(Debug)]
struct Ring {
    buf: Vec<u8>,
    written: u64,
}

impl Ring {
    fn new(size: usize) -> Self {
        Self {
            buf: vec![0; size],
            written: 0,
        }
    }

    fn push(&mut self, mut bytes: &[u8]) {
        let size = self.buf.len();
        while !bytes.is_empty() {
            let pos = (self.written % size as u64) as usize;
            let n = bytes.len().min(size - pos);
            self.buf[pos..pos + n].copy_from_slice(&bytes[..n]);
            self.written += n as u64;
            bytes = &bytes[n..];
        }
    }

    /// Writes `r` as: header count, then per kept header its index in
    /// [`KEPT_HEADERS`] and its value's length (u16) and bytes, then the
    /// body. Returns where it starts and its length.
    fn write(&mut self, r: &StoredResponse) -> (u64, u32) {
        let at = self.written;
        // At most the four kept headers, each shorter than 64 KiB.
        let kept = || {
            r.headers.iter().filter_map(|(name, value)| {
                let index = u8::try_from(KEPT_HEADERS.iter().position(|k| k == name)?).ok()?;
                let len = u16::try_from(value.len()).ok()?;
                Some((index, len, value.as_bytes()))
            })
        };
        self.push(&[u8::try_from(kept().count()).unwrap_or(0)]);
        for (index, len, value) in kept() {
            self.push(&[index]);
            self.push(&len.to_be_bytes());
            self.push(value);
        }
        self.push(&r.body);
        let len = u32::try_from(self.written - at).unwrap_or(u32::MAX);
        (at, len)
    }

    /// The response written at `at`, or [`Outcome::NotKept`] when it was
    /// overwritten since.
    fn read(&self, status: u16, at: u64, len: u32) -> Outcome {
        let size = self.buf.len() as u64;
        if self.written - at > size {
            return Outcome::NotKept;
        }
        let mut bytes = Vec::with_capacity(len as usize);
        let mut pos = at;
        while pos < at + u64::from(len) {
            let i = (pos % size) as usize;
            let n = ((at + u64::from(len) - pos) as usize).min(self.buf.len() - i);
            bytes.extend_from_slice(&self.buf[i..i + n]);
            pos += n as u64;
        }
        decode(status, &bytes).map_or(Outcome::NotKept, |r| Outcome::Response(Arc::new(r)))
    }
}

/// Reads back what [`Ring::write`] wrote.
fn decode(status: u16, bytes: &[u8]) -> Option<StoredResponse> {
    let (&count, mut rest) = bytes.split_first()?;
    let mut headers = Vec::with_capacity(count as usize);
    for _ in 0..count {
        let (&index, tail) = rest.split_first()?;
        let (len, tail) = tail.split_at_checked(2)?;
        let len = u16::from_be_bytes([len[0], len[1]]) as usize;
        let (value, tail) = tail.split_at_checked(len)?;
        let name = KEPT_HEADERS.get(index as usize)?;
        headers.push(((*name).to_owned(), String::from_utf8(value.to_vec()).ok()?));
        rest = tail;
    }
    Some(StoredResponse {
        status,
        headers,
        body: rest.to_vec(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fp(n: u8) -> Fingerprint {
        Fingerprint([n; 32])
    }

    fn response(body: &str) -> Outcome {
        Outcome::Response(Arc::new(StoredResponse {
            status: 201,
            headers: vec![
                ("content-type".into(), "application/json".into()),
                ("location".into(), "https://rs.example/x".into()),
            ],
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
    }

    #[tokio::test]
    async fn waiters_get_the_outcome_when_it_is_recorded() {
        let log = Arc::new(MemoryReplayLog::new(10, 1 << 20));
        assert_eq!(log.begin(&fp(1), 1300, 1000).await.unwrap(), Begun::First);
        assert_eq!(log.begin(&fp(2), 1300, 1000).await.unwrap(), Begun::First);
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
        // Another request finishing wakes them, but they keep waiting.
        log.finish(&fp(2), response("{\"b\":2}")).await.unwrap();
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
        assert_eq!(log.waiting(&fp(1)), 0);
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
    }

    #[tokio::test]
    async fn the_byte_bound_drops_the_oldest_bodies_not_the_entries() {
        let log = MemoryReplayLog::new(10, 0);
        let size = MAX_STORED_RESPONSE + HEADER_ROOM;
        // Three bodies of half the ring each: the third overwrites the
        // first, wrapping around the end of the buffer.
        let body = "x".repeat(size / 2);
        for (n, expires) in [(1, 1100), (2, 1200), (3, 1300)] {
            log.begin(&fp(n), expires, 1000).await.unwrap();
            log.finish(&fp(n), response(&body)).await.unwrap();
        }
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

    #[test]
    fn responses_read_back_exactly_across_the_wrap() {
        let mut ring = Ring::new(64);
        let r = StoredResponse {
            status: 200,
            headers: vec![("location".into(), "https://x/y".into())],
            body: b"0123456789abcdef0123456789".to_vec(),
        };
        for _ in 0..5 {
            let (at, len) = ring.write(&r);
            assert_eq!(
                ring.read(200, at, len),
                Outcome::Response(Arc::new(r.clone()))
            );
        }
    }
}
