//! The executor every store module runs its SQL through, served by both
//! backends: PostgreSQL through tokio-postgres
//! ([`crate::postgres::driver`]), SQLite through the synchronous
//! [`driver`](crate::sqlite::driver).
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

use crate::faults::{AtCommit, Faults};
use crate::postgres::driver::{self as pg, Got, Pg, PgTx};
use crate::rows::Columns;
use crate::sqlite::driver;
use crate::{Backend, StoreError, StoreResult};

mod param;
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
enum Ran {
    Changed(u64),
    Rows(Vec<Row>),
}

impl Ran {
    fn rows(self) -> Vec<Row> {
        match self {
            Ran::Rows(rows) => rows,
            Ran::Changed(_) => Vec::new(),
        }
    }

    fn changed(self) -> u64 {
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
        Ok(Tx { db: self, inner })
    }

    /// Sends one statement where `on` says; counts the round trip.
    async fn run(&self, on: On, stmt: &Stmt, params: &[Param], want: Want) -> StoreResult<Ran> {
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
            return Err(crate::faults::injected());
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
            return Err(crate::faults::injected());
        }
        Ok(ran)
    }

    /// Rows of a read, on a reader (it sees committed data only).
    pub(crate) async fn read(&self, stmt: &Stmt, params: &[Param]) -> StoreResult<Vec<Row>> {
        Ok(self.run(On::Reader, stmt, params, Want::Rows).await?.rows())
    }

    /// The first row of a read, if any.
    pub(crate) async fn read_opt(&self, stmt: &Stmt, params: &[Param]) -> StoreResult<Option<Row>> {
        Ok(self.read(stmt, params).await?.into_iter().next())
    }

    /// Runs one writing statement in a transaction of its own; returns the
    /// rows it changed.
    pub(crate) async fn write(&self, stmt: &Stmt, params: &[Param]) -> StoreResult<u64> {
        Ok(self
            .run(On::Writer, stmt, params, Want::Changed)
            .await?
            .changed())
    }

    /// Runs one writing statement with `RETURNING` in a transaction of its
    /// own; returns every row it returned.
    pub(crate) async fn write_all(&self, stmt: &Stmt, params: &[Param]) -> StoreResult<Vec<Row>> {
        Ok(self.run(On::Writer, stmt, params, Want::Rows).await?.rows())
    }

    /// Like `write_all`, for a statement that returns at most one row.
    pub(crate) async fn write_returning(
        &self,
        stmt: &Stmt,
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

enum TxInner {
    Sqlite(driver::WriterTx),
    Postgres(Box<PgTx>),
}

/// An open transaction: dropped without `commit`, nothing of it is kept.
pub(crate) struct Tx<'d> {
    db: &'d Db,
    inner: TxInner,
}

impl std::fmt::Debug for Tx<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Tx")
    }
}

impl Tx<'_> {
    pub(crate) fn backend(&self) -> Backend {
        self.db.backend()
    }

    /// Sends one statement in the transaction; counts the round trip.
    async fn run(&mut self, stmt: &Stmt, params: &[Param], want: Want) -> StoreResult<Ran> {
        self.db.count(1);
        self.db.fault_before_statement()?;
        let sql = stmt.sql(self.db.backend());
        match &mut self.inner {
            TxInner::Sqlite(tx) => Ok(match want {
                Want::Changed => Ran::Changed(tx.execute(sql, params)?),
                Want::Rows => sqlite_rows(tx.query(sql, params)?),
            }),
            TxInner::Postgres(tx) => tx.run(sql, params, want).await.map(Ran::from),
        }
    }

    /// Runs a statement; returns all its rows.
    pub(crate) async fn fetch_all(
        &mut self,
        stmt: &Stmt,
        params: &[Param],
    ) -> StoreResult<Vec<Row>> {
        Ok(self.run(stmt, params, Want::Rows).await?.rows())
    }

    /// Runs a statement; returns the rows it changed.
    pub(crate) async fn execute(&mut self, stmt: &Stmt, params: &[Param]) -> StoreResult<u64> {
        Ok(self.run(stmt, params, Want::Changed).await?.changed())
    }

    /// Runs a statement; returns its first row, if any.
    pub(crate) async fn fetch_opt(
        &mut self,
        stmt: &Stmt,
        params: &[Param],
    ) -> StoreResult<Option<Row>> {
        Ok(self.fetch_all(stmt, params).await?.into_iter().next())
    }

    /// Runs a statement that must return a row.
    pub(crate) async fn fetch_one(&mut self, stmt: &Stmt, params: &[Param]) -> StoreResult<Row> {
        self.fetch_opt(stmt, params)
            .await?
            .ok_or_else(|| StoreError::Corrupt("a statement returned no row".into()))
    }

    /// Whether ending the transaction is a round trip (a PostgreSQL
    /// transaction that ran nothing never began on the server).
    fn ends_on_server(&self) -> bool {
        match &self.inner {
            TxInner::Sqlite(_) => true,
            TxInner::Postgres(tx) => !tx.first(),
        }
    }

    /// Commits; returns once the work is durable.
    pub(crate) async fn commit(self) -> StoreResult<()> {
        if self.ends_on_server() {
            self.db.count(1);
        }
        let fault = self.db.fault_at_commit();
        if fault == AtCommit::FailBefore {
            self.rollback().await?;
            return Err(crate::faults::injected());
        }
        match self.inner {
            TxInner::Sqlite(tx) => tx.commit().await?,
            TxInner::Postgres(tx) => (*tx).commit().await?,
        }
        if fault == AtCommit::FailAfter {
            return Err(crate::faults::injected());
        }
        Ok(())
    }

    /// Undoes the transaction's work.
    pub(crate) async fn rollback(self) -> StoreResult<()> {
        if self.ends_on_server() {
            self.db.count(1);
        }
        match self.inner {
            TxInner::Sqlite(tx) => tx.rollback()?,
            TxInner::Postgres(tx) => (*tx).rollback().await?,
        }
        Ok(())
    }
}
