//! Signed requests seen within the signature freshness window and the
//! response each got, shared by every node, so that a replayed request is
//! answered with the first one's response and never runs twice.

use async_trait::async_trait;

use crate::platform::db::{params, Stmt, Want};
use crate::platform::rows::Columns;
use crate::{SqlStore, StoreResult};

/// A response as stored: status, headers as JSON, body as base64.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredRequest {
    /// `false` while the first request still runs.
    pub finished: bool,
    /// `None` once finished: the response was not kept.
    pub response: Option<(u16, String, String)>,
}

/// A claimed request's end: its fingerprint, and its response as `(status,
/// headers JSON, body base64)` or `None` when not kept.
pub type FinishedRequest<'a> = (&'a str, Option<(u16, &'a str, &'a str)>);

/// The log of signed requests.
#[async_trait]
pub trait ReplayStore: Send + Sync {
    /// Claims `fingerprint` until `expires_at` (unix seconds); `true` for
    /// exactly one of any number of concurrent callers on any node. An
    /// entry past its expiry (at `now`) is claimed anew.
    async fn claim_request(
        &self,
        fingerprint: &str,
        expires_at: i64,
        now: i64,
    ) -> StoreResult<bool>;
    /// The entry of `fingerprint`, if any and not expired at `now`.
    async fn get_request(&self, fingerprint: &str, now: i64) -> StoreResult<Option<StoredRequest>>;
    /// Records how claimed requests ended, each as its fingerprint with
    /// `(status, headers JSON, body base64)`, or `None` when its response
    /// is not kept. All in one transaction (one round trip on PostgreSQL),
    /// so that requests finishing together commit together.
    async fn finish_requests(&self, finished: &[FinishedRequest<'_>]) -> StoreResult<()>;
    /// Deletes entries expired at `now`; returns how many.
    async fn prune_requests(&self, now: i64) -> StoreResult<u64>;
}

static CLAIM: Stmt = Stmt::new(&[
    "INSERT INTO signed_requests (fingerprint, expires_at, finished) VALUES (?, ?, FALSE) \
     ON CONFLICT (fingerprint) DO UPDATE SET expires_at = excluded.expires_at, finished = FALSE, \
     status = NULL, headers = NULL, body = NULL WHERE signed_requests.expires_at < ?",
]);
static GET: Stmt = Stmt::new(&[
    "SELECT finished, CAST(status AS BIGINT) AS status, headers, body FROM signed_requests \
     WHERE fingerprint = ? AND expires_at >= ?",
]);
static FINISH: Stmt = Stmt::new(&[
    "UPDATE signed_requests SET finished = TRUE, status = ?, headers = ?, body = ? \
     WHERE fingerprint = ?",
]);
static PRUNE: Stmt = Stmt::new(&["DELETE FROM signed_requests WHERE expires_at < ?"]);

pub(crate) static STATEMENTS: &[&Stmt] = &[&CLAIM, &GET, &FINISH, &PRUNE];

#[async_trait]
impl ReplayStore for SqlStore {
    async fn claim_request(
        &self,
        fingerprint: &str,
        expires_at: i64,
        now: i64,
    ) -> StoreResult<bool> {
        let claimed = self
            .db
            .write(&CLAIM, params![fingerprint, expires_at, now])
            .await?;
        Ok(claimed == 1)
    }

    async fn get_request(&self, fingerprint: &str, now: i64) -> StoreResult<Option<StoredRequest>> {
        // From the writer's side on SQLite would be stricter, but a reader
        // sees every committed claim and finish, which is all this needs.
        let Some(row) = self.db.read_opt(&GET, params![fingerprint, now]).await? else {
            return Ok(None);
        };
        let finished = row.flag("finished")?;
        let response = match row.opt_int("status")? {
            Some(status) if finished => Some((
                u16::try_from(status).map_err(|_| crate::platform::rows::corrupt("status"))?,
                row.opt_text("headers")?.unwrap_or_default(),
                row.opt_text("body")?.unwrap_or_default(),
            )),
            _ => None,
        };
        Ok(Some(StoredRequest { finished, response }))
    }

    async fn finish_requests(&self, finished: &[FinishedRequest<'_>]) -> StoreResult<()> {
        let mut tx = self.db.begin().await?;
        for (fingerprint, response) in finished {
            let (status, headers, body) = match response {
                Some((s, h, b)) => (Some(i64::from(*s)), Some(*h), Some(*b)),
                None => (None, None, None),
            };
            tx.send(
                &FINISH,
                params![status, headers, body, *fingerprint],
                Want::Changed,
            );
        }
        tx.commit().await
    }

    async fn prune_requests(&self, now: i64) -> StoreResult<u64> {
        self.db.write(&PRUNE, params![now]).await
    }
}
