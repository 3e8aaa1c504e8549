//! The executor every store module runs its SQL through, served by both
//! backends: PostgreSQL through tokio-postgres
//! ([`crate::platform::db::postgres::driver`]), SQLite through the synchronous
//! [`driver`](crate::platform::db::sqlite::driver).
//!
//! SQL is written once per statement, as a [`Stmt`], in a portable form:
//! `?` placeholders; `?::numeric` / `?::uuid` mark parameters PostgreSQL
//! must cast (SQLite ignores the marks); a trailing `FOR UPDATE` or
//! `FOR UPDATE SKIP LOCKED` is PostgreSQL-only (SQLite has one writer and
//! needs no row locks). Each statement is translated to a dialect the first
//! time it runs there and kept, never per call. Numeric and uuid columns are
//! read back with `CAST(col AS TEXT)`, so every value arrives as text or an
//! integer on both backends.
//!
//! Every round trip is counted ([`Db::round_trips`]): on PostgreSQL each
//! statement and each `COMMIT` (a transaction's `BEGIN` travels with its
//! first statement); on SQLite each statement, `BEGIN` and `COMMIT`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::access::claim::RequestClaim;
use crate::platform::db::postgres::driver::{self as pg, Got, Pg, PgTx};
use crate::platform::db::sqlite::driver;
use crate::platform::faults::{AtCommit, Faults};
use crate::platform::rows::Columns;
use crate::{Backend, StoreError, StoreResult};

mod param;
pub mod postgres;
pub mod sqlite;
mod stmt;

pub(crate) use param::{num, params, Param};
pub(crate) use stmt::Stmt;

/// One result row of either backend.
#[derive(Debug)]
pub(crate) enum Row {
    Sqlite(driver::Row),
    Postgres(pg::PgRow),
}

impl Row {
    /// The value of `col`, decoded by the row's own driver.
    fn get<T>(&self, col: &str) -> StoreResult<T>
    where
        T: driver::Decode + for<'r> tokio_postgres::types::FromSql<'r>,
    {
        Ok(match self {
            Row::Sqlite(r) => r.try_get(col)?,
            Row::Postgres(r) => r
                .try_get(col)
                .map_err(|e| StoreError::Corrupt(format!("column {col}: {e}")))?,
        })
    }
}

impl Columns for Row {
    fn text(&self, col: &str) -> StoreResult<String> {
        self.get(col)
    }
    fn opt_text(&self, col: &str) -> StoreResult<Option<String>> {
        self.get(col)
    }
    fn int(&self, col: &str) -> StoreResult<i64> {
        self.get(col)
    }
    fn opt_int(&self, col: &str) -> StoreResult<Option<i64>> {
        self.get(col)
    }
    fn flag(&self, col: &str) -> StoreResult<bool> {
        self.get(col)
    }
}

/// The database connections of a store.
#[derive(Debug, Clone)]
pub(crate) enum Pools {
    /// One writer (SQLite allows one at a time) and a pool of readers.
    Sqlite {
        writer: driver::WritePool,
        reader: driver::ReadPool,
    },
    Postgres(Box<Pg>),
}

/// Where statements run, and how many were sent.
#[derive(Debug)]
pub(crate) struct Db {
    pub(crate) pools: Pools,
    round_trips: AtomicU64,
    /// Injected faults (the simulation test only).
    faults: Option<Arc<Faults>>,
}

/// Which connection of a store a statement outside a transaction runs on
/// (PostgreSQL has one pool for both).
#[derive(Debug, Clone, Copy)]
enum On {
    /// A read-only connection: committed data.
    Reader,
    /// The writer, in a transaction of the statement's own.
    Writer,
}

/// What a statement's caller wants back.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Want {
    /// How many rows it changed.
    Changed,
    /// The rows it returned.
    Rows,
}

/// What a statement gave back.
pub(crate) enum Ran {
    Changed(u64),
    Rows(Vec<Row>),
}

impl Ran {
    pub(crate) fn rows(self) -> Vec<Row> {
        match self {
            Ran::Rows(rows) => rows,
            Ran::Changed(_) => Vec::new(),
        }
    }

    pub(crate) fn changed(self) -> u64 {
        match self {
            Ran::Changed(n) => n,
            Ran::Rows(rows) => rows.len() as u64,
        }
    }
}

fn sqlite_rows(rows: Vec<driver::Row>) -> Ran {
    Ran::Rows(rows.into_iter().map(Row::Sqlite).collect())
}

impl From<Got> for Ran {
    fn from(got: Got) -> Self {
        match got {
            Got::Changed(n) => Ran::Changed(n),
            Got::Rows(rows) => Ran::Rows(rows.into_iter().map(Row::Postgres).collect()),
        }
    }
}

impl Db {
    pub(crate) fn new(pools: Pools) -> Self {
        Self {
            pools,
            round_trips: AtomicU64::new(0),
            faults: None,
        }
    }

    /// Fails statements as `faults` decides from now on.
    pub(crate) fn inject_faults(&mut self, faults: Arc<Faults>) {
        self.faults = Some(faults);
    }

    fn fault_before_statement(&self) -> StoreResult<()> {
        match &self.faults {
            Some(f) => f.before_statement(),
            None => Ok(()),
        }
    }

    fn fault_at_commit(&self) -> AtCommit {
        match &self.faults {
            Some(f) => f.at_commit(),
            None => AtCommit::Commit,
        }
    }

    pub(crate) fn backend(&self) -> Backend {
        match self.pools {
            Pools::Sqlite { .. } => Backend::Sqlite,
            Pools::Postgres(_) => Backend::Postgres,
        }
    }

    /// The connections of each pool, now.
    pub(crate) fn pool_stats(&self) -> Vec<crate::PoolStats> {
        match &self.pools {
            Pools::Sqlite { writer, reader } => {
                let (idle, used) = reader.stats();
                let (busy, queued) = writer.stats();
                vec![
                    crate::PoolStats {
                        name: "sqlite_read",
                        idle: idle as u64,
                        used: used as u64,
                        max: None,
                        pending: None,
                    },
                    crate::PoolStats {
                        name: "sqlite_write",
                        idle: u64::from(!busy),
                        used: u64::from(busy),
                        max: Some(1),
                        pending: Some(queued as u64),
                    },
                ]
            }
            Pools::Postgres(pg) => {
                let status = pg.pool.status();
                let idle = status.available as u64;
                vec![crate::PoolStats {
                    name: "postgres",
                    idle,
                    used: (status.size as u64).saturating_sub(idle),
                    max: Some(status.max_size as u64),
                    pending: Some(status.waiting as u64),
                }]
            }
        }
    }

    /// Statements (and transaction begins and commits) sent so far.
    pub(crate) fn round_trips(&self) -> u64 {
        self.round_trips.load(Ordering::Relaxed)
    }

    fn count(&self, n: u64) {
        self.round_trips.fetch_add(n, Ordering::Relaxed);
    }

    /// Begins a transaction (on SQLite: takes the single writer; on
    /// PostgreSQL: takes a connection, and `BEGIN` goes with the first
    /// statement).
    pub(crate) async fn begin(&self) -> StoreResult<Tx<'_>> {
        self.fault_before_statement()?;
        let inner = match &self.pools {
            Pools::Sqlite { writer, .. } => {
                self.count(1);
                TxInner::Sqlite(writer.begin().await?)
            }
            Pools::Postgres(pg) => TxInner::Postgres(Box::new(PgTx::begin(&pg.pool).await?)),
        };
        Ok(Tx::new(self, inner))
    }

    /// Sends one statement where `on` says; counts the round trip.
    async fn run(
        &self,
        on: On,
        stmt: &'static Stmt,
        params: &[Param],
        want: Want,
    ) -> StoreResult<Ran> {
        if matches!((on, &self.pools), (On::Writer, Pools::Postgres(_)))
            && crate::access::claim::current().is_some()
        {
            // The request's replay claim goes with its first write: both in
            // one transaction, sent with the `COMMIT` in one round trip.
            let mut tx = self.begin().await?;
            let ticket = tx.send(stmt, params, want);
            return tx.commit_with(ticket).await;
        }
        self.count(1);
        // A write outside a transaction commits by itself: it can fail
        // before or after its commit, like a transaction's `COMMIT`.
        let fault = match on {
            On::Reader => {
                self.fault_before_statement()?;
                AtCommit::Commit
            }
            On::Writer => self.fault_at_commit(),
        };
        if fault == AtCommit::FailBefore {
            return Err(crate::platform::faults::injected());
        }
        let sql = stmt.sql(self.backend());
        let ran = match (&self.pools, on) {
            // Reads only ever want rows.
            (Pools::Sqlite { reader, .. }, On::Reader) => {
                Ok(sqlite_rows(reader.query(sql, params)?))
            }
            (Pools::Sqlite { writer, .. }, On::Writer) => match want {
                Want::Changed => Ok(Ran::Changed(writer.execute(sql, params).await?)),
                Want::Rows => Ok(sqlite_rows(writer.query(sql, params).await?)),
            },
            (Pools::Postgres(pg), _) => {
                let conn = pg::connection(&pg.pool).await?;
                pg::run(&conn, sql, params, want, false)
                    .await
                    .map(Ran::from)
            }
        }?;
        if fault == AtCommit::FailAfter {
            return Err(crate::platform::faults::injected());
        }
        Ok(ran)
    }

    /// Rows of a read, on a reader (it sees committed data only).
    pub(crate) async fn read(
        &self,
        stmt: &'static Stmt,
        params: &[Param],
    ) -> StoreResult<Vec<Row>> {
        Ok(self.run(On::Reader, stmt, params, Want::Rows).await?.rows())
    }

    /// The first row of a read, if any.
    pub(crate) async fn read_opt(
        &self,
        stmt: &'static Stmt,
        params: &[Param],
    ) -> StoreResult<Option<Row>> {
        Ok(self.read(stmt, params).await?.into_iter().next())
    }

    /// Runs one writing statement in a transaction of its own; returns the
    /// rows it changed.
    pub(crate) async fn write(&self, stmt: &'static Stmt, params: &[Param]) -> StoreResult<u64> {
        Ok(self
            .run(On::Writer, stmt, params, Want::Changed)
            .await?
            .changed())
    }

    /// Runs one writing statement with `RETURNING` in a transaction of its
    /// own; returns every row it returned.
    pub(crate) async fn write_all(
        &self,
        stmt: &'static Stmt,
        params: &[Param],
    ) -> StoreResult<Vec<Row>> {
        Ok(self.run(On::Writer, stmt, params, Want::Rows).await?.rows())
    }

    /// Like `write_all`, for a statement that returns at most one row.
    pub(crate) async fn write_returning(
        &self,
        stmt: &'static Stmt,
        params: &[Param],
    ) -> StoreResult<Option<Row>> {
        Ok(self.write_all(stmt, params).await?.into_iter().next())
    }

    /// Prepares `stmt` without running it (the statement test).
    pub(crate) async fn prepare(&self, stmt: &Stmt) -> StoreResult<()> {
        let sql = stmt.sql(self.backend());
        match &self.pools {
            Pools::Sqlite { reader, .. } => reader.prepare(sql)?,
            Pools::Postgres(pg) => {
                let conn = pg::connection(&pg.pool).await?;
                conn.prepare(sql).await?;
            }
        }
        Ok(())
    }
}

fn ended() -> StoreError {
    StoreError::Corrupt("the transaction has ended".into())
}

enum TxInner {
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
    /// The request's replay claim this transaction carries, and its
    /// ticket (see [`crate::access::claim`]).
    claim: Option<(RequestClaim, usize)>,
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
        // Committed: `commit` took the claim first. Otherwise the work is
        // undone and the request's next write carries the claim.
        if let Some((claim, _)) = self.claim.take() {
            claim.released();
        }
    }
}

impl<'d> Tx<'d> {
    fn new(db: &'d Db, inner: TxInner) -> Self {
        let mut tx = Self {
            db,
            inner,
            results: Vec::new(),
            queued: Vec::new(),
            claim: None,
            aborted: false,
        };
        if let (TxInner::Postgres(_), Some(claim)) = (&tx.inner, crate::access::claim::current()) {
            if let Some((fingerprint, expires_at, answer)) = claim.take() {
                let ticket = match answer {
                    None => tx.send(
                        &crate::access::replays::CLAIM_IN_TX,
                        params![fingerprint, expires_at],
                        Want::Changed,
                    ),
                    Some(a) => tx.send(
                        &crate::access::replays::CLAIM_ANSWERED_IN_TX,
                        params![
                            fingerprint,
                            expires_at,
                            i64::from(a.status),
                            a.headers,
                            a.body
                        ],
                        Want::Changed,
                    ),
                };
                tx.claim = Some((claim, ticket.0));
            }
        }
        tx
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
        let claim_failed = self.claim_refused(&queued, &got);
        self.aborted |= got.iter().any(Result::is_err);
        for (q, got) in queued.iter().zip(got) {
            self.results[q.ticket] = Some(match got {
                _ if claim_failed => Err(StoreError::Replayed),
                got => got.map(Ran::from),
            });
        }
        if claim_failed {
            return Err(StoreError::Replayed);
        }
        ended
    }

    /// Whether the request's claim, sent in `queued`, was refused because
    /// an identical request holds it (then the whole transaction is that
    /// request's replay).
    fn claim_refused(&self, queued: &[Queued], got: &[StoreResult<Got>]) -> bool {
        let Some((claim, ticket)) = &self.claim else {
            return false;
        };
        let refused = queued
            .iter()
            .zip(got)
            .any(|(q, g)| q.ticket == *ticket && matches!(g, Err(StoreError::Conflict(_))));
        if refused {
            claim.replayed();
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
        if let Some((claim, _)) = self.claim.take() {
            claim.committed();
        }
        if fault == AtCommit::FailAfter {
            return Err(crate::platform::faults::injected());
        }
        Ok(())
    }
}
