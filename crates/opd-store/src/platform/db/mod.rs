//! The executor every store module runs its SQL through ([`Db`]; a
//! transaction is a [`Tx`]), served by both backends, which live here:
//! PostgreSQL through tokio-postgres ([`postgres`]), SQLite through the
//! synchronous driver of [`sqlite`].
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

use crate::platform::faults::{AtCommit, Faults};
use crate::{Backend, StoreResult};
use postgres::driver::{self as pg, Pg, PgTx};
use row::sqlite_rows;
use sqlite::driver;

mod param;
pub mod postgres;
mod row;
pub mod sqlite;
mod stmt;
mod tx;

pub(crate) use param::{num, params, Param};
pub(crate) use row::{Ran, Row, Want};
pub(crate) use stmt::Stmt;
use tx::TxInner;
pub(crate) use tx::{Rider, Ticket, Tx};

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
