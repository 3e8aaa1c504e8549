//! The replay claim of the request being served ([`RequestClaim`]),
//! written by that request's own transaction (PostgreSQL only).
//!
//! Several nodes share one replay log in the `signed_requests` table. A
//! state-changing request claims its fingerprint there so that an identical
//! request never runs twice. Claiming in a statement of its own costs a
//! round trip and a commit on every such request. Instead, the HTTP layer
//! arms a [`RequestClaim`] for the request, and the service hands it to the
//! store operation that does the request's work: `create_quote(&quote,
//! claim)`, `create_grant(&grant, token, claim)`, ... That operation
//! begins its transaction with `claim::begin` (or writes with
//! `claim::write`), which inserts the claim as the transaction's first
//! statement, in the same round trip as its other work:
//! - the claim commits if and only if that work commits, so a request
//!   whose work is rolled back leaves no claim (an identical request may
//!   run; nothing of the first was kept), and the next operation given the
//!   claim carries it;
//! - the claim is a plain `INSERT` on the fingerprint's unique key: an
//!   identical request running at the same time waits at that insert until
//!   the first commits, then fails with a unique violation, which aborts
//!   its whole transaction. That request's store call then fails with
//!   [`StoreError::Replayed`](crate::StoreError::Replayed), and the claim
//!   says [`ClaimState::Replayed`]: the HTTP layer answers it with the
//!   first request's stored response.
//!
//! A created resource's response is known before its write: given ahead
//! ([`RequestClaim::answer_ahead`]), it is inserted with the claim, and
//! nothing is left to record after the request.

use std::sync::{Arc, Mutex, MutexGuard};

use crate::platform::db::{params, Db, Param, Rider, Stmt, Tx, Want};
use crate::{Backend, StoreResult};

/// Where a request's claim stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClaimState {
    /// Not armed: the request has no fingerprint (yet).
    Unarmed,
    /// Armed; no transaction has carried it yet.
    Waiting,
    /// Carried by a transaction that has not ended.
    InTransaction,
    /// Committed with the request's work: its response must be recorded.
    Committed,
    /// Committed with the request's work and its response, given ahead
    /// ([`RequestClaim::answer_ahead`]): nothing more to record.
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
/// and reads its end state) and the store operation the service hands it
/// to (which writes it with the request's work).
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

    /// Arms the claim: the first store operation given it inserts
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

    /// Gives the response of the request ahead of its write: the
    /// transaction that carries the claim inserts it too, and nothing is
    /// left to record after the request (one round trip less). Only for a
    /// response known before the write and fixed by what it writes (a
    /// created resource's representation). `answer` is called only when
    /// the claim waits for a write (so a request without one, or on SQLite,
    /// renders nothing for it).
    pub fn answer_ahead(&self, answer: impl FnOnce() -> Option<Answer>) {
        if self.state() != ClaimState::Waiting {
            return;
        }
        if let Some(answer) = answer() {
            self.lock().answer = Some(answer);
        }
    }

    /// For a transaction starting: the fingerprint, expiry and response
    /// (if given ahead) to insert, when the claim waits for a write (it is
    /// then that transaction's).
    fn take(&self) -> Option<(String, i64, Option<Answer>)> {
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
}

impl Rider for RequestClaim {
    /// The transaction carrying it committed.
    fn committed(&self) {
        let mut inner = self.lock();
        if inner.state == ClaimState::InTransaction {
            inner.state = match inner.answer_taken {
                true => ClaimState::Answered,
                false => ClaimState::Committed,
            };
        }
    }

    /// The transaction carrying it ended without committing: the next
    /// operation given the claim carries it, without the response given
    /// for this one.
    fn released(&self) {
        let mut inner = self.lock();
        if inner.state == ClaimState::InTransaction {
            inner.state = ClaimState::Waiting;
            inner.answer = None;
            inner.answer_taken = false;
        }
    }

    /// An identical request holds the fingerprint.
    fn refused(&self) {
        self.lock().state = ClaimState::Replayed;
    }
}

/// The claim a request's own transaction carries: a plain insert, so
/// that an identical request waits for the first one's commit and then
/// fails on the unique key. An expired entry is pruned within a
/// housekeeping pass (and its fingerprint can no longer be presented: the
/// signature is stale).
static CLAIM_IN_TX: Stmt = Stmt::new(&[
    "INSERT INTO signed_requests (fingerprint, expires_at, finished) VALUES (?, ?, FALSE)",
]);
/// [`CLAIM_IN_TX`] with the request's response, known before its write.
static CLAIM_ANSWERED_IN_TX: Stmt = Stmt::new(&[
    "INSERT INTO signed_requests (fingerprint, expires_at, finished, status, headers, body) \
     VALUES (?, ?, TRUE, ?, ?, ?)",
]);

pub(crate) static STATEMENTS: &[&Stmt] = &[&CLAIM_IN_TX, &CLAIM_ANSWERED_IN_TX];

/// Whether `claim` waits for a transaction to carry it here: only
/// PostgreSQL carries claims (SQLite's replay log is in memory).
fn waiting<'c>(db: &Db, claim: Option<&'c RequestClaim>) -> Option<&'c RequestClaim> {
    claim.filter(|c| db.backend() == Backend::Postgres && c.state() == ClaimState::Waiting)
}

/// Begins a transaction that carries `claim`, when it waits for one: the
/// claim's insert is the transaction's first statement, sent with its first
/// round trip, and commits with the transaction's work or not at all.
pub(crate) async fn begin<'d>(db: &'d Db, claim: Option<&RequestClaim>) -> StoreResult<Tx<'d>> {
    let mut tx = db.begin().await?;
    if let Some(claim) = waiting(db, claim) {
        carry(&mut tx, claim);
    }
    Ok(tx)
}

fn carry(tx: &mut Tx<'_>, claim: &RequestClaim) {
    let Some((fingerprint, expires_at, answer)) = claim.take() else {
        return;
    };
    let rider = Box::new(claim.clone());
    match answer {
        None => tx.carry(&CLAIM_IN_TX, params![fingerprint, expires_at], rider),
        Some(a) => {
            let status = i64::from(a.status);
            let insert = params![fingerprint, expires_at, status, a.headers, a.body];
            tx.carry(&CLAIM_ANSWERED_IN_TX, insert, rider);
        }
    }
}

/// Runs one writing statement carrying `claim` (see [`begin`]): in a
/// transaction of its own with the claim when it waits for one (one round
/// trip with the `COMMIT`), else alone. Returns the rows it changed.
pub(crate) async fn write(
    db: &Db,
    claim: Option<&RequestClaim>,
    stmt: &'static Stmt,
    params: &[Param],
) -> StoreResult<u64> {
    let Some(claim) = waiting(db, claim) else {
        return db.write(stmt, params).await;
    };
    let mut tx = begin(db, Some(claim)).await?;
    let ticket = tx.send(stmt, params, Want::Changed);
    Ok(tx.commit_with(ticket).await?.changed())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_claim_is_carried_once_and_released_on_rollback() {
        let claim = RequestClaim::default();
        // Not armed: nothing to carry.
        assert!(claim.take().is_none());
        claim.arm("ab".into(), 10);
        assert_eq!(claim.take(), Some(("ab".to_owned(), 10, None)));
        // Taken: another transaction does not carry it too.
        assert!(claim.take().is_none());
        assert_eq!(claim.state(), ClaimState::InTransaction);
        claim.released();
        assert_eq!(claim.state(), ClaimState::Waiting);
        assert!(claim.take().is_some());
        claim.committed();
        assert_eq!(claim.state(), ClaimState::Committed);
        assert!(claim.take().is_none());
    }

    #[test]
    fn an_answer_given_ahead_goes_with_the_claim_until_a_rollback() {
        let claim = RequestClaim::default();
        let answer = Answer {
            status: 201,
            headers: "[]".into(),
            body: "e30=".into(),
        };
        // Not armed: the answer is not even rendered.
        claim.answer_ahead(|| panic!("rendered for an unarmed claim"));
        claim.arm("cd".into(), 20);
        claim.answer_ahead(|| Some(answer.clone()));
        assert_eq!(
            claim.take(),
            Some(("cd".to_owned(), 20, Some(answer.clone())))
        );
        // Rolled back: the next transaction carries the claim, not that
        // answer.
        claim.released();
        assert_eq!(claim.take(), Some(("cd".to_owned(), 20, None)));
        claim.committed();
        assert_eq!(claim.state(), ClaimState::Committed);
        let answered = RequestClaim::default();
        answered.arm("ef".into(), 30);
        answered.answer_ahead(|| Some(answer));
        assert!(answered.take().is_some());
        answered.committed();
        assert_eq!(answered.state(), ClaimState::Answered);
    }

    #[test]
    fn a_refused_claim_says_the_request_is_a_replay() {
        let claim = RequestClaim::default();
        claim.arm("gh".into(), 40);
        assert!(claim.take().is_some());
        claim.refused();
        assert_eq!(claim.state(), ClaimState::Replayed);
    }
}
