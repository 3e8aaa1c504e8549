//! The replay log kept in the database ([`opd_store::ReplayStore`]), so
//! that every node sharing a PostgreSQL database answers a replay with the
//! first response, wherever the first request ran. Waiting for a request
//! still running elsewhere polls its row.
//!
//! A request's claim rides with its own write: the store operation the
//! service hands it to ([`opd_store::claim`]). Its response is recorded in a group commit:
//! responses of requests that finish while a recording is under way are
//! recorded together in the next one (one round trip for all), and each
//! request waits for its own to be durable before it answers, as before.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use async_trait::async_trait;
use base64::Engine as _;
use opd_core::Clock;
use opd_store::{FinishedRequest, Store};
use tokio::sync::{mpsc, oneshot};

use crate::access::replays::{Begun, Fingerprint, Outcome, ReplayLog, StoredResponse};
use crate::ServiceError;

/// How often a waiter looks at a request still running.
const POLL: Duration = Duration::from_millis(10);

/// [`ReplayLog`] over the store.
#[derive(Clone)]
pub struct StoreReplayLog {
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
    /// The group commit of responses, started by the first one.
    recorder: Arc<OnceLock<mpsc::UnboundedSender<Recording>>>,
}

/// A response to record, and who waits for it.
struct Recording {
    fingerprint: String,
    /// `(status, headers JSON, body base64)`, or `None`: not kept.
    response: Option<(u16, String, String)>,
    done: oneshot::Sender<Result<(), String>>,
}

/// The most responses recorded in one transaction.
const MAX_GROUP: usize = 64;

impl std::fmt::Debug for StoreReplayLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StoreReplayLog")
    }
}

impl StoreReplayLog {
    pub fn new(store: Arc<dyn Store>, clock: Arc<dyn Clock>) -> Self {
        Self {
            store,
            clock,
            recorder: Arc::new(OnceLock::new()),
        }
    }
}

fn key(fp: &Fingerprint) -> String {
    opd_core::hex::lower(&fp.0)
}

fn secs(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// A response as the table keeps it: status, headers as JSON, body as
/// base64.
pub(crate) fn encode(r: &StoredResponse) -> Option<(u16, String, String)> {
    let headers = serde_json::to_string(&r.headers).ok()?;
    let body = base64::engine::general_purpose::STANDARD.encode(&r.body);
    Some((r.status, headers, body))
}

fn outcome(response: Option<(u16, String, String)>) -> Result<Outcome, ServiceError> {
    let Some((status, headers, body)) = response else {
        return Ok(Outcome::NotKept);
    };
    let headers: Vec<(String, String)> =
        serde_json::from_str(&headers).map_err(|_| ServiceError::corrupt("replayed headers"))?;
    let body = base64::engine::general_purpose::STANDARD
        .decode(body)
        .map_err(|_| ServiceError::corrupt("replayed body"))?;
    Ok(Outcome::Response(Arc::new(StoredResponse {
        status,
        headers,
        body,
    })))
}

/// Records responses as they come, each group in one transaction, until
/// the log is dropped.
async fn record_groups(store: Arc<dyn Store>, mut queue: mpsc::UnboundedReceiver<Recording>) {
    while let Some(first) = queue.recv().await {
        let mut group = vec![first];
        while group.len() < MAX_GROUP {
            match queue.try_recv() {
                Ok(next) => group.push(next),
                Err(_) => break,
            }
        }
        let finished: Vec<FinishedRequest<'_>> = group
            .iter()
            .map(|r| {
                let response = r
                    .response
                    .as_ref()
                    .map(|(s, h, b)| (*s, h.as_str(), b.as_str()));
                (r.fingerprint.as_str(), response)
            })
            .collect();
        let result = store
            .finish_requests(&finished)
            .await
            .map_err(|e| e.to_string());
        for r in group {
            // The requester may have gone; its response is recorded anyway.
            let _ = r.done.send(result.clone());
        }
    }
}

impl StoreReplayLog {
    async fn state(&self, fp: &Fingerprint, now: i64) -> Result<Option<Begun>, ServiceError> {
        let Some(entry) = self.store.get_request(&key(fp), now).await? else {
            return Ok(None);
        };
        if !entry.finished {
            return Ok(Some(Begun::Running));
        }
        Ok(Some(Begun::Done(outcome(entry.response)?)))
    }
}

#[async_trait]
impl ReplayLog for StoreReplayLog {
    async fn begin(
        &self,
        fingerprint: &Fingerprint,
        expires_at: u64,
        now: u64,
    ) -> Result<Begun, ServiceError> {
        let (k, now) = (key(fingerprint), secs(now));
        if self.store.claim_request(&k, secs(expires_at), now).await? {
            return Ok(Begun::First);
        }
        // Claimed by someone else; it may have expired in between, which
        // reads as running (the caller waits, then is told to retry).
        Ok(self
            .state(fingerprint, now)
            .await?
            .unwrap_or(Begun::Running))
    }

    async fn peek(
        &self,
        fingerprint: &Fingerprint,
        now: u64,
    ) -> Result<Option<Begun>, ServiceError> {
        self.state(fingerprint, secs(now)).await
    }

    async fn finish(
        &self,
        fingerprint: &Fingerprint,
        outcome: Outcome,
    ) -> Result<(), ServiceError> {
        let response = match outcome {
            Outcome::NotKept => None,
            Outcome::Response(r) => {
                Some(encode(&r).ok_or_else(|| ServiceError::Internal("replayed headers".into()))?)
            }
        };
        let recorder = self.recorder.get_or_init(|| {
            let (queue, groups) = mpsc::unbounded_channel();
            tokio::spawn(record_groups(Arc::clone(&self.store), groups));
            queue
        });
        let (done, recorded) = oneshot::channel();
        let recording = Recording {
            fingerprint: key(fingerprint),
            response,
            done,
        };
        let gone = || ServiceError::Unavailable("the replay recorder stopped".into());
        recorder.send(recording).map_err(|_| gone())?;
        recorded
            .await
            .map_err(|_| gone())?
            .map_err(ServiceError::Unavailable)
    }

    fn claims_in_transaction(&self) -> bool {
        true
    }

    async fn wait(
        &self,
        fingerprint: &Fingerprint,
        timeout: Duration,
    ) -> Result<Option<Outcome>, ServiceError> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let now = self.clock.now().unix_seconds();
            match self.state(fingerprint, now).await? {
                Some(Begun::Done(o)) => return Ok(Some(o)),
                None => return Ok(None),
                Some(_) => {}
            }
            if tokio::time::Instant::now() >= deadline {
                return Ok(None);
            }
            tokio::time::sleep(POLL).await;
        }
    }
}
