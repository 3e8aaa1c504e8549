//! The replay claim of the request being served, written in that request's
//! own first write (PostgreSQL only).
//!
//! Several nodes share one replay log in the `signed_requests` table. A
//! state-changing request claims its fingerprint there so that an identical
//! request never runs twice. Claiming in a statement of its own costs a
//! round trip and a commit on every such request. Instead, the HTTP layer
//! arms a [`RequestClaim`] for the request ([`scope`]), and the request's
//! first write transaction on this store inserts the claim as its first
//! statement, in the same round trip as its other work:
//! - the claim commits if and only if that write commits, so a request
//!   whose work is rolled back leaves no claim (an identical request may
//!   run; nothing of the first was kept);
//! - the claim is a plain `INSERT` on the fingerprint's unique key: an
//!   identical request running at the same time waits at that insert until
//!   the first commits, then fails with a unique violation, which aborts
//!   its whole transaction. That request's store calls then fail with
//!   [`StoreError::Replayed`](crate::StoreError::Replayed), and the claim
//!   says [`ClaimState::Replayed`]: the HTTP layer answers it with the
//!   first request's stored response.
//!
//! What this relies on: a request's writes run in its own task (the claim
//! is task-local). A write from a task the request spawned would not carry
//! the claim; no handler writes that way.

use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard};

/// Where a request's claim stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClaimState {
    /// Not armed: the request has no fingerprint (yet).
    Unarmed,
    /// Armed; no write has carried it yet.
    Waiting,
    /// Carried by a transaction that has not ended.
    InTransaction,
    /// Committed with the request's work: its response must be recorded.
    Committed,
    /// Committed with the request's work and its response, given ahead
    /// ([`answer_ahead`]): nothing more to record.
    Answered,
    /// An identical request committed first: answer with its response.
    Replayed,
}

#[derive(Debug)]
struct Inner {
    fingerprint: String,
    expires_at: i64,
    state: ClaimState,
    /// The response, when the request knew it before its write.
    answer: Option<Answer>,
    /// Whether the transaction carrying the claim carries `answer` too.
    answer_taken: bool,
}

/// A response as the replay log stores it: status, headers as JSON, body
/// as base64.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    pub status: u16,
    pub headers: String,
    pub body: String,
}

/// The claim of one request, shared between the HTTP layer (which arms it
/// and reads its end state) and the store (which writes it).
#[derive(Debug, Clone)]
pub struct RequestClaim(Arc<Mutex<Inner>>);

impl Default for RequestClaim {
    fn default() -> Self {
        Self(Arc::new(Mutex::new(Inner {
            fingerprint: String::new(),
            expires_at: 0,
            state: ClaimState::Unarmed,
            answer: None,
            answer_taken: false,
        })))
    }
}

impl RequestClaim {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        // The state is plain data: a panic elsewhere leaves it usable.
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Arms the claim: the request's first write will insert
    /// `fingerprint` (lower-case hex), live until `expires_at` (unix
    /// seconds).
    pub fn arm(&self, fingerprint: String, expires_at: i64) {
        let mut inner = self.lock();
        inner.fingerprint = fingerprint;
        inner.expires_at = expires_at;
        inner.state = ClaimState::Waiting;
    }

    /// Where it stands now.
    pub fn state(&self) -> ClaimState {
        self.lock().state
    }

    /// The fingerprint it was armed with.
    pub fn fingerprint(&self) -> String {
        self.lock().fingerprint.clone()
    }

    /// For a transaction starting: the fingerprint, expiry and response
    /// (if given ahead) to insert, when the claim waits for a write (it is
    /// then that transaction's).
    pub(crate) fn take(&self) -> Option<(String, i64, Option<Answer>)> {
        let mut inner = self.lock();
        if inner.state != ClaimState::Waiting {
            return None;
        }
        inner.state = ClaimState::InTransaction;
        inner.answer_taken = inner.answer.is_some();
        Some((
            inner.fingerprint.clone(),
            inner.expires_at,
            inner.answer.clone(),
        ))
    }

    /// The transaction carrying it committed.
    pub(crate) fn committed(&self) {
        let mut inner = self.lock();
        if inner.state == ClaimState::InTransaction {
            inner.state = match inner.answer_taken {
                true => ClaimState::Answered,
                false => ClaimState::Committed,
            };
        }
    }

    /// The transaction carrying it ended without committing: the next
    /// write carries it, without the response given for this one.
    pub(crate) fn released(&self) {
        let mut inner = self.lock();
        if inner.state == ClaimState::InTransaction {
            inner.state = ClaimState::Waiting;
            inner.answer = None;
            inner.answer_taken = false;
        }
    }

    /// An identical request holds the fingerprint.
    pub(crate) fn replayed(&self) {
        self.lock().state = ClaimState::Replayed;
    }
}

tokio::task_local! {
    static CURRENT: RequestClaim;
}

/// Runs `f` (a request's handler) with `claim` as its request claim.
pub async fn scope<F: Future>(claim: RequestClaim, f: F) -> F::Output {
    CURRENT.scope(claim, f).await
}

/// Gives the response of the request this task serves ahead of its write:
/// the write that carries the claim records it too, and nothing is left
/// to record after the request (one round trip less). Only for a response
/// known before the write and fixed by what it writes (a created
/// resource's representation). `answer` is called only when a claim waits
/// for a write (so a request without one, or on SQLite, renders nothing
/// for it).
pub fn answer_ahead(answer: impl FnOnce() -> Option<Answer>) {
    let _ = CURRENT.try_with(|claim| {
        if claim.state() != ClaimState::Waiting {
            return;
        }
        if let Some(answer) = answer() {
            claim.lock().answer = Some(answer);
        }
    });
}

/// The claim of the request this task serves, if armed and waiting for a
/// write.
pub(crate) fn current() -> Option<RequestClaim> {
    CURRENT
        .try_with(RequestClaim::clone)
        .ok()
        .filter(|c| c.state() == ClaimState::Waiting)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_claim_is_carried_once_and_released_on_rollback() {
        let claim = RequestClaim::default();
        assert!(scope(claim.clone(), async { current() }).await.is_none());
        claim.arm("ab".into(), 10);
        let seen = scope(claim.clone(), async { current() }).await.unwrap();
        assert_eq!(seen.take(), Some(("ab".to_owned(), 10, None)));
        // Taken: the next transaction does not carry it too.
        assert!(scope(claim.clone(), async { current() }).await.is_none());
        seen.released();
        assert_eq!(claim.state(), ClaimState::Waiting);
        assert!(claim.take().is_some());
        claim.committed();
        assert_eq!(claim.state(), ClaimState::Committed);
        // Outside a request there is none.
        assert!(current().is_none());
    }

    #[tokio::test]
    async fn an_answer_given_ahead_goes_with_the_claim_until_a_rollback() {
        let claim = RequestClaim::default();
        claim.arm("cd".into(), 20);
        let answer = Answer {
            status: 201,
            headers: "[]".into(),
            body: "e30=".into(),
        };
        scope(claim.clone(), async {
            answer_ahead(|| Some(answer.clone()))
        })
        .await;
        assert_eq!(
            claim.take(),
            Some(("cd".to_owned(), 20, Some(answer.clone())))
        );
        // Rolled back: the next write carries the claim, not that answer.
        claim.released();
        assert_eq!(claim.take(), Some(("cd".to_owned(), 20, None)));
        claim.committed();
        assert_eq!(claim.state(), ClaimState::Committed);
        let answered = RequestClaim::default();
        answered.arm("ef".into(), 30);
        scope(answered.clone(), async { answer_ahead(|| Some(answer)) }).await;
        assert!(answered.take().is_some());
        answered.committed();
        assert_eq!(answered.state(), ClaimState::Answered);
    }
}
