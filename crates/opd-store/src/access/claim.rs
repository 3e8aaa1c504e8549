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
//!
//! A created outgoing payment's response also says what its grant had
//! spent before it, which only its transaction reads: given as a function
//! of that ([`RequestClaim::answer_at_commit`]), it is rendered once the
//! transaction has read it and sent with the `COMMIT`
//! ([`answer_before_commit`]).

use std::sync::{Arc, Mutex, MutexGuard};

use opd_core::outgoing_payment::GrantSpent;

use crate::platform::db::{params, Db, Param, Rider, Stmt, Ticket, Tx, Want};
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
    /// The response, rendered from what the grant spent before the
    /// request ([`RequestClaim::answer_at_commit`]).
    late: Option<Late>,
}

/// A response rendered from what a grant had spent before the request,
/// read in the request's own transaction.
pub type LateAnswer = Box<dyn FnOnce(&GrantSpent) -> Option<Answer> + Send>;

struct Late(LateAnswer);

impl std::fmt::Debug for Late {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LateAnswer")
    }
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
            late: None,
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

    /// Gives the response of the request as a function of what its grant
    /// had spent before it, read by the transaction that carries the claim:
    /// that transaction records it with its `COMMIT`
    /// ([`answer_before_commit`]), and nothing is left to record after the
    /// request. Kept only while the claim waits for a write (so a request
    /// without one, or on SQLite, renders nothing).
    pub fn answer_at_commit(&self, answer: LateAnswer) {
        let mut inner = self.lock();
        if inner.state == ClaimState::Waiting {
            inner.late = Some(Late(answer));
        }
    }

    /// For a transaction about to commit with the claim: its fingerprint
    /// and the response to render, if given with
    /// [`answer_at_commit`](Self::answer_at_commit) and not recorded yet.
    fn take_late(&self) -> Option<(String, LateAnswer)> {
        let mut inner = self.lock();
        if inner.state != ClaimState::InTransaction || inner.answer_taken {
            return None;
        }
        let late = inner.late.take()?;
        Some((inner.fingerprint.clone(), late.0))
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
            inner.late = None;
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

/// The response of a request whose claim this transaction inserted,
/// rendered from what the transaction read ([`answer_before_commit`]).
static ANSWER_IN_TX: Stmt = Stmt::new(&[
    "UPDATE signed_requests SET finished = TRUE, status = ?, headers = ?, body = ? \
     WHERE fingerprint = ?",
]);

pub(crate) static STATEMENTS: &[&Stmt] = &[&CLAIM_IN_TX, &CLAIM_ANSWERED_IN_TX, &ANSWER_IN_TX];

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

/// Just before the `COMMIT` of a transaction that carries `claim`: sends
/// the response given with [`RequestClaim::answer_at_commit`], rendered
/// from `spent`, to travel with the `COMMIT`; its ticket, if sent. Nothing
/// when the claim rides another transaction (it committed with the quote a
/// payment was made on) or none.
pub(crate) fn answer_before_commit(
    tx: &mut Tx<'_>,
    claim: Option<&RequestClaim>,
    spent: &GrantSpent,
) -> Option<Ticket> {
    let claim = claim.filter(|_| tx.carries())?;
    let (fingerprint, render) = claim.take_late()?;
    let a = render(spent)?;
    let status = i64::from(a.status);
    let answer = params![status, a.headers, a.body, fingerprint];
    let ticket = tx.send(&ANSWER_IN_TX, answer, Want::Changed);
    claim.lock().answer_taken = true;
    Some(ticket)
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
    fn a_late_answer_is_rendered_once_by_the_transaction_carrying_the_claim() {
        let spent = GrantSpent::default();
        let late = || -> LateAnswer {
            Box::new(|_: &GrantSpent| {
                Some(Answer {
                    status: 201,
                    headers: "[]".into(),
                    body: "e30=".into(),
                })
            })
        };
        let claim = RequestClaim::default();
        // Not armed: not kept.
        claim.answer_at_commit(late());
        claim.arm("ij".into(), 50);
        assert!(claim.take().is_some());
        assert!(claim.take_late().is_none(), "given before arming");
        claim.released();
        claim.answer_at_commit(late());
        // Not before a transaction carries the claim.
        assert!(claim.take_late().is_none());
        assert_eq!(claim.take(), Some(("ij".to_owned(), 50, None)));
        // Rolled back: forgotten.
        claim.released();
        assert!(claim.take().is_some());
        assert!(claim.take_late().is_none());
        claim.released();
        claim.answer_at_commit(late());
        assert!(claim.take().is_some());
        let (fingerprint, render) = claim.take_late().expect("carried");
        assert_eq!(fingerprint, "ij");
        assert_eq!(render(&spent).map(|a| a.status), Some(201));
        assert!(claim.take_late().is_none(), "once");
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
