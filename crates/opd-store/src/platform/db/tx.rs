//! An open transaction ([`Tx`]): statements sent together on PostgreSQL
//! (pipelined into one round trip with the next statement whose answer is
//! needed, or with the `COMMIT`), run at once on SQLite.

use super::postgres::driver::{self as pg, Got, PgTx};
use super::row::{sqlite_rows, Ran, Row, Want};
use super::sqlite::driver;
use super::{Db, Param, Stmt};
use crate::platform::faults::AtCommit;
use crate::{Backend, StoreError, StoreResult};

fn ended() -> StoreError {
    StoreError::Corrupt("the transaction has ended".into())
}

pub(super) enum TxInner {
    Sqlite(driver::WriterTx),
    Postgres(Box<PgTx>),
    /// Committed or rolled back.
    Ended,
}

/// A statement sent with [`Tx::send`], whose result is read with
/// [`Tx::take`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Ticket(usize);

/// A statement queued on PostgreSQL until the next round trip.
struct Queued {
    ticket: usize,
    stmt: &'static Stmt,
    params: Vec<Param>,
    want: Want,
}

/// Someone a transaction carries a statement for ([`Tx::carry`]), told
/// how the transaction ended: the request's replay claim
/// (`crate::access::claim`), which commits exactly when the request's own
/// work does.
pub(crate) trait Rider: Send + Sync {
    /// The transaction committed.
    fn committed(&self);
    /// It ended without committing: nothing of it was kept.
    fn released(&self);
    /// The server refused the rider's statement: another transaction holds
    /// its key.
    fn refused(&self);
}

/// An open transaction: dropped without `commit`, nothing of it is kept.
///
/// On PostgreSQL, statements sent with [`send`](Self::send) wait and
/// travel together with the next statement whose answer is needed (or with
/// the `COMMIT`), in one round trip. On SQLite (in process) each runs at
/// once. Either way a statement's result is read with
/// [`take`](Self::take), and a transaction in which a statement failed
/// does not commit.
pub(crate) struct Tx<'d> {
    db: &'d Db,
    inner: TxInner,
    /// Results by ticket, until taken.
    results: Vec<Option<StoreResult<Ran>>>,
    /// Sent but not yet on the wire (PostgreSQL).
    queued: Vec<Queued>,
    /// What the transaction carries for someone else, and its statement's
    /// ticket ([`carry`](Self::carry)).
    rider: Option<(Box<dyn Rider>, usize)>,
    /// A statement failed on PostgreSQL: the server has aborted the
    /// transaction, and a `COMMIT` would only roll it back.
    aborted: bool,
}

impl std::fmt::Debug for Tx<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Tx")
    }
}

impl Drop for Tx<'_> {
    fn drop(&mut self) {
        // Committed: `commit` took the rider first. Otherwise the work is
        // undone, and the rider's statement with it.
        if let Some((rider, _)) = self.rider.take() {
            rider.released();
        }
    }
}

impl<'d> Tx<'d> {
    pub(super) fn new(db: &'d Db, inner: TxInner) -> Self {
        Self {
            db,
            inner,
            results: Vec::new(),
            queued: Vec::new(),
            rider: None,
            aborted: false,
        }
    }

    /// Sends `stmt` (a write) for `rider`, who is told how the transaction
    /// ends: committed, released (rolled back or dropped), or refused (the
    /// statement hit a unique key another transaction holds, which fails
    /// every statement of this one with [`StoreError::Replayed`]). One
    /// rider per transaction; sent first, it goes with the transaction's
    /// first round trip on PostgreSQL.
    pub(crate) fn carry(&mut self, stmt: &'static Stmt, params: &[Param], rider: Box<dyn Rider>) {
        let ticket = self.send(stmt, params, Want::Changed);
        self.rider = Some((rider, ticket.0));
    }

    /// Whether it carries a statement for someone ([`carry`](Self::carry)).
    pub(crate) fn carries(&self) -> bool {
        self.rider.is_some()
    }

    pub(crate) fn backend(&self) -> Backend {
        self.db.backend()
    }

    /// Sends a statement; its result is read with [`take`](Self::take).
    /// On PostgreSQL it waits for the next round trip; SQLite runs it now.
    pub(crate) fn send(&mut self, stmt: &'static Stmt, params: &[Param], want: Want) -> Ticket {
        let ticket = self.results.len();
        let result = match &mut self.inner {
            TxInner::Sqlite(tx) => {
                self.db.count(1);
                Some(self.db.fault_before_statement().and_then(|()| {
                    let sql = stmt.sql(Backend::Sqlite);
                    Ok(match want {
                        Want::Changed => Ran::Changed(tx.execute(sql, params)?),
                        Want::Rows => sqlite_rows(tx.query(sql, params)?),
                    })
                }))
            }
            TxInner::Ended => Some(Err(ended())),
            TxInner::Postgres(_) => {
                self.queued.push(Queued {
                    ticket,
                    stmt,
                    params: params.to_vec(),
                    want,
                });
                None
            }
        };
        self.results.push(result);
        Ticket(ticket)
    }

    /// The result of a statement sent earlier (sending what is queued, in
    /// one round trip, if it is not back yet).
    pub(crate) async fn take(&mut self, ticket: Ticket) -> StoreResult<Ran> {
        if !self.queued.is_empty() && self.results[ticket.0].is_none() {
            self.flush(None).await?;
        }
        self.results
            .get_mut(ticket.0)
            .and_then(Option::take)
            .unwrap_or_else(|| {
                Err(StoreError::Corrupt(
                    "a statement's result was read twice".into(),
                ))
            })
    }

    /// Sends what is queued (PostgreSQL), followed by `end` when given, in
    /// one round trip; keeps each result under its ticket. Returns the
    /// end's result.
    async fn flush(&mut self, end: Option<&str>) -> StoreResult<()> {
        if !matches!(self.inner, TxInner::Postgres(_)) {
            return Ok(());
        }
        let queued = std::mem::take(&mut self.queued);
        self.db.count(1);
        self.db.fault_before_statement()?;
        let piped: Vec<pg::Piped<'_>> = queued
            .iter()
            .map(|q| (q.stmt.sql(Backend::Postgres), q.params.as_slice(), q.want))
            .collect();
        let (got, ended) = match (end, &mut self.inner) {
            (None, TxInner::Postgres(pg)) => (pg.send(&piped).await, Ok(())),
            (Some(end), _) => match std::mem::replace(&mut self.inner, TxInner::Ended) {
                TxInner::Postgres(pg) => (*pg).end_with(&piped, end).await,
                _ => return Err(ended()),
            },
            _ => return Err(ended()),
        };
        let refused = self.rider_refused(&queued, &got);
        self.aborted |= got.iter().any(Result::is_err);
        for (q, got) in queued.iter().zip(got) {
            self.results[q.ticket] = Some(match got {
                _ if refused => Err(StoreError::Replayed),
                got => got.map(Ran::from),
            });
        }
        if refused {
            return Err(StoreError::Replayed);
        }
        ended
    }

    /// Whether the rider's statement, sent in `queued`, was refused
    /// because another transaction holds its key (for the replay claim: an
    /// identical request, and the whole transaction is that request's
    /// replay).
    fn rider_refused(&self, queued: &[Queued], got: &[StoreResult<Got>]) -> bool {
        let Some((rider, ticket)) = &self.rider else {
            return false;
        };
        let refused = queued
            .iter()
            .zip(got)
            .any(|(q, g)| q.ticket == *ticket && matches!(g, Err(StoreError::Conflict(_))));
        if refused {
            rider.refused();
        }
        refused
    }

    /// Sends a statement and waits for its result.
    async fn run(&mut self, stmt: &'static Stmt, params: &[Param], want: Want) -> StoreResult<Ran> {
        let ticket = self.send(stmt, params, want);
        self.take(ticket).await
    }

    /// Runs a statement; returns all its rows.
    pub(crate) async fn fetch_all(
        &mut self,
        stmt: &'static Stmt,
        params: &[Param],
    ) -> StoreResult<Vec<Row>> {
        Ok(self.run(stmt, params, Want::Rows).await?.rows())
    }

    /// Runs a statement; returns the rows it changed.
    pub(crate) async fn execute(
        &mut self,
        stmt: &'static Stmt,
        params: &[Param],
    ) -> StoreResult<u64> {
        Ok(self.run(stmt, params, Want::Changed).await?.changed())
    }

    /// Runs a statement; returns its first row, if any.
    pub(crate) async fn fetch_opt(
        &mut self,
        stmt: &'static Stmt,
        params: &[Param],
    ) -> StoreResult<Option<Row>> {
        Ok(self.fetch_all(stmt, params).await?.into_iter().next())
    }

    /// Runs a statement that must return a row.
    pub(crate) async fn fetch_one(
        &mut self,
        stmt: &'static Stmt,
        params: &[Param],
    ) -> StoreResult<Row> {
        self.fetch_opt(stmt, params)
            .await?
            .ok_or_else(|| StoreError::Corrupt("a statement returned no row".into()))
    }

    /// Whether ending the transaction is a round trip (a PostgreSQL
    /// transaction that ran nothing never began on the server).
    fn ends_on_server(&self) -> bool {
        match &self.inner {
            TxInner::Sqlite(_) => true,
            TxInner::Postgres(tx) => !tx.first() || !self.queued.is_empty(),
            TxInner::Ended => false,
        }
    }

    /// The first failure among results nobody read: a transaction in which
    /// a statement failed must not commit (on PostgreSQL it cannot).
    fn unread_failure(&mut self) -> Option<StoreError> {
        self.results.iter_mut().find_map(|r| match r {
            Some(Err(_)) => r.take().and_then(Result::err),
            _ => None,
        })
    }

    /// Commits (sending what is queued with the `COMMIT`); returns once the
    /// work is durable.
    pub(crate) async fn commit(mut self) -> StoreResult<()> {
        self.end(true).await
    }

    /// Commits, sending `ticket`'s statement with the `COMMIT` if it is
    /// still queued; returns its result.
    pub(crate) async fn commit_with(mut self, ticket: Ticket) -> StoreResult<Ran> {
        self.end(true).await?;
        self.take(ticket).await
    }

    /// Undoes the transaction's work.
    pub(crate) async fn rollback(mut self) -> StoreResult<()> {
        self.end(false).await
    }

    async fn end(&mut self, commit: bool) -> StoreResult<()> {
        if !commit {
            // Nothing queued needs to reach the server to be undone.
            self.queued.clear();
        } else if let Some(e) = self.unread_failure() {
            return Err(e);
        } else if self.aborted {
            return Err(StoreError::Corrupt(
                "a transaction whose statement failed cannot commit".into(),
            ));
        }
        if !self.ends_on_server() {
            self.inner = TxInner::Ended;
            return Ok(());
        }
        let fault = if commit {
            self.db.fault_at_commit()
        } else {
            AtCommit::Commit
        };
        if !commit || fault == AtCommit::FailBefore {
            self.queued.clear();
            self.db.count(1);
            match std::mem::replace(&mut self.inner, TxInner::Ended) {
                TxInner::Sqlite(tx) => tx.rollback()?,
                TxInner::Postgres(tx) => (*tx).rollback().await?,
                TxInner::Ended => {}
            }
            return match fault {
                AtCommit::FailBefore => Err(crate::platform::faults::injected()),
                _ => Ok(()),
            };
        }
        match std::mem::replace(&mut self.inner, TxInner::Ended) {
            TxInner::Sqlite(tx) => {
                self.db.count(1);
                tx.commit().await?
            }
            inner => {
                self.inner = inner;
                // The `COMMIT` goes with what is queued.
                self.flush(Some("COMMIT")).await?;
                if let Some(e) = self.unread_failure() {
                    // The server answered the `COMMIT` with a rollback.
                    return Err(e);
                }
            }
        }
        if let Some((rider, _)) = self.rider.take() {
            rider.committed();
        }
        if fault == AtCommit::FailAfter {
            return Err(crate::platform::faults::injected());
        }
        Ok(())
    }
}
