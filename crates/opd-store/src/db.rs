//! The executor every store module runs its SQL through, served by both
//! backends: PostgreSQL through sqlx, SQLite through the synchronous
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
//! Every statement sent is counted ([`Db::round_trips`]): on PostgreSQL
//! each one, and each `BEGIN` and `COMMIT`, is a round trip to the server.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::faults::{AtCommit, Faults};

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
    Postgres(sqlx::postgres::PgRow),
}

impl Row {
    /// The value of `col`, decoded by the row's own driver.
    fn get<T>(&self, col: &str) -> StoreResult<T>
    where
        T: driver::Decode + for<'r> sqlx::Decode<'r, sqlx::Postgres> + sqlx::Type<sqlx::Postgres>,
    {
        use sqlx::Row as _;
        Ok(match self {
            Row::Sqlite(r) => r.try_get(col)?,
            Row::Postgres(r) => r.try_get(col)?,
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
    Postgres(sqlx::PgPool),
}

/// Where statements run, and how many were sent.
#[derive(Debug)]
pub(crate) struct Db {
    pub(crate) pools: Pools,
    round_trips: AtomicU64,
    /// Injected faults (the simulation test only).
    faults: Option<Arc<Faults>>,
}

type PgQuery<'q> = sqlx::query::Query<'q, sqlx::Postgres, sqlx::postgres::PgArguments>;

fn pg_query<'q>(sql: &'q str, params: &'q [Param]) -> PgQuery<'q> {
    let mut q = sqlx::query(sql);
    for p in params {
        q = match p {
            Param::Int(v) => q.bind(*v),
            Param::Text(v) => q.bind(v.as_deref()),
            Param::Bool(v) => q.bind(*v),
        };
    }
    q
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
enum Want {
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

async fn run_pg<'c, E>(on: E, sql: &str, params: &[Param], want: Want) -> StoreResult<Ran>
where
    E: sqlx::Executor<'c, Database = sqlx::Postgres>,
{
    let query = pg_query(sql, params);
    Ok(match want {
        Want::Changed => Ran::Changed(query.execute(on).await?.rows_affected()),
        Want::Rows => Ran::Rows(
            query
                .fetch_all(on)
                .await?
                .into_iter()
                .map(Row::Postgres)
                .collect(),
        ),
    })
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
            Pools::Postgres(pool) => {
                let size = u64::from(pool.size());
                let idle = pool.num_idle() as u64;
                vec![crate::PoolStats {
                    name: "postgres",
                    idle,
                    used: size.saturating_sub(idle),
                    max: Some(u64::from(pool.options().get_max_connections())),
                    pending: None,
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

    /// Begins a transaction (on SQLite: takes the single writer).
    pub(crate) async fn begin(&self) -> StoreResult<Tx<'_>> {
        self.count(1);
        self.fault_before_statement()?;
        let inner = match &self.pools {
            Pools::Sqlite { writer, .. } => TxInner::Sqlite(writer.begin().await?),
            Pools::Postgres(pool) => TxInner::Postgres(pool.begin().await?),
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
            (Pools::Postgres(pool), _) => run_pg(pool, sql, params, want).await,
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
            Pools::Postgres(pool) => {
                use sqlx::Executor as _;
                let mut conn = pool.acquire().await?;
                conn.prepare(sql).await?;
            }
        }
        Ok(())
    }
}

enum TxInner {
    Sqlite(driver::WriterTx),
    Postgres(sqlx::Transaction<'static, sqlx::Postgres>),
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
            TxInner::Postgres(tx) => run_pg(&mut **tx, sql, params, want).await,
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

    /// Commits; returns once the work is durable.
    pub(crate) async fn commit(self) -> StoreResult<()> {
        self.db.count(1);
        let fault = self.db.fault_at_commit();
        if fault == AtCommit::FailBefore {
            self.rollback().await?;
            return Err(crate::faults::injected());
        }
        match self.inner {
            TxInner::Sqlite(tx) => tx.commit().await?,
            TxInner::Postgres(tx) => tx.commit().await?,
        }
        if fault == AtCommit::FailAfter {
            return Err(crate::faults::injected());
        }
        Ok(())
    }

    /// Undoes the transaction's work.
    pub(crate) async fn rollback(self) -> StoreResult<()> {
        self.db.count(1);
        match self.inner {
            TxInner::Sqlite(tx) => tx.rollback()?,
            TxInner::Postgres(tx) => tx.rollback().await?,
        }
        Ok(())
    }
}
