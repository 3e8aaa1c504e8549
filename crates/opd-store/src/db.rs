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
use std::sync::OnceLock;

use opd_core::Timestamp;

use crate::rows::Columns;
use crate::sqlite::driver;
use crate::{Backend, StoreError, StoreResult};

/// One SQL statement, declared once (`static X: Stmt = Stmt::new(&[..])`)
/// from parts that are joined, then translated once per dialect.
#[derive(Debug)]
pub(crate) struct Stmt {
    parts: &'static [&'static str],
    sqlite: OnceLock<String>,
    postgres: OnceLock<String>,
}

impl Stmt {
    pub(crate) const fn new(parts: &'static [&'static str]) -> Self {
        Self {
            parts,
            sqlite: OnceLock::new(),
            postgres: OnceLock::new(),
        }
    }

    /// The statement in `backend`'s dialect.
    pub(crate) fn sql(&self, backend: Backend) -> &str {
        let cell = match backend {
            Backend::Sqlite => &self.sqlite,
            Backend::Postgres => &self.postgres,
        };
        cell.get_or_init(|| translate(&self.parts.concat(), backend))
    }
}

/// Rewrites portable SQL for one dialect: `?` becomes `$n` on PostgreSQL
/// (keeping a `::type` cast after it); SQLite drops the casts and the row
/// locks. Quoted text is copied as it is.
pub(crate) fn translate(sql: &str, backend: Backend) -> String {
    let postgres = backend == Backend::Postgres;
    let unlocked;
    let mut sql = sql.trim_end();
    if !postgres {
        unlocked = sql
            .replace(" FOR UPDATE SKIP LOCKED", "")
            .replace(" FOR UPDATE", "");
        sql = &unlocked;
    }
    let mut out = String::with_capacity(sql.len() + 16);
    let mut n = 0;
    let mut in_quote = false;
    let mut chars = sql.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\'' {
            in_quote = !in_quote;
        }
        if c != '?' || in_quote {
            out.push(c);
            continue;
        }
        n += 1;
        let mut cast = String::new();
        let mut ahead = chars.clone();
        if ahead.next() == Some(':') && ahead.next() == Some(':') {
            chars.next();
            chars.next();
            while let Some(&a) = chars.peek() {
                if !(a.is_ascii_alphanumeric() || a == '_') {
                    break;
                }
                cast.push(a);
                chars.next();
            }
        }
        if postgres {
            out.push('$');
            out.push_str(&n.to_string());
            if !cast.is_empty() {
                out.push_str("::");
                out.push_str(&cast);
            }
        } else {
            out.push('?');
        }
    }
    out
}

/// A statement parameter. Amounts travel as text (`num`) and are cast to
/// `NUMERIC` by the statement, so no value passes through a float or a
/// signed integer; nulls keep their type so PostgreSQL can infer it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Param {
    Int(Option<i64>),
    Text(Option<String>),
    Bool(bool),
}

/// An amount (or any u64) for a `?::numeric` parameter.
pub(crate) fn num(value: u64) -> Param {
    Param::Text(Some(value.to_string()))
}

impl From<i64> for Param {
    fn from(v: i64) -> Self {
        Param::Int(Some(v))
    }
}
impl From<Option<i64>> for Param {
    fn from(v: Option<i64>) -> Self {
        Param::Int(v)
    }
}
impl From<u8> for Param {
    fn from(v: u8) -> Self {
        Param::Int(Some(i64::from(v)))
    }
}
impl From<u16> for Param {
    fn from(v: u16) -> Self {
        Param::Int(Some(i64::from(v)))
    }
}
impl From<bool> for Param {
    fn from(v: bool) -> Self {
        Param::Bool(v)
    }
}
impl From<&str> for Param {
    fn from(v: &str) -> Self {
        Param::Text(Some(v.to_owned()))
    }
}
impl From<String> for Param {
    fn from(v: String) -> Self {
        Param::Text(Some(v))
    }
}
impl From<&String> for Param {
    fn from(v: &String) -> Self {
        Param::Text(Some(v.clone()))
    }
}
impl From<Option<&str>> for Param {
    fn from(v: Option<&str>) -> Self {
        Param::Text(v.map(str::to_owned))
    }
}
impl From<&Option<String>> for Param {
    fn from(v: &Option<String>) -> Self {
        Param::Text(v.clone())
    }
}
impl From<Option<String>> for Param {
    fn from(v: Option<String>) -> Self {
        Param::Text(v)
    }
}
impl From<Timestamp> for Param {
    fn from(v: Timestamp) -> Self {
        Param::Int(Some(v.unix_millis()))
    }
}
impl From<Option<Timestamp>> for Param {
    fn from(v: Option<Timestamp>) -> Self {
        Param::Int(v.map(Timestamp::unix_millis))
    }
}

/// `params![a, b, c]`: the parameters of one statement, each converted
/// with `Param::from`.
macro_rules! params {
    ($($p:expr),* $(,)?) => {
        &[$($crate::db::Param::from($p)),*]
    };
}
pub(crate) use params;

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
}

fn sqlite_query<'q>(sql: &'q str, params: &[Param]) -> driver::Query<'q> {
    let mut q = driver::query(sql);
    for p in params {
        q = match p {
            Param::Int(v) => q.bind(*v),
            Param::Text(v) => q.bind(v.clone()),
            Param::Bool(v) => q.bind(*v),
        };
    }
    q
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

impl Db {
    pub(crate) fn new(pools: Pools) -> Self {
        Self {
            pools,
            round_trips: AtomicU64::new(0),
        }
    }

    pub(crate) fn backend(&self) -> Backend {
        match self.pools {
            Pools::Sqlite { .. } => Backend::Sqlite,
            Pools::Postgres(_) => Backend::Postgres,
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
        let inner = match &self.pools {
            Pools::Sqlite { writer, .. } => TxInner::Sqlite(writer.begin().await?),
            Pools::Postgres(pool) => TxInner::Postgres(pool.begin().await?),
        };
        Ok(Tx { db: self, inner })
    }

    /// Rows of a read, on a reader (it sees committed data only).
    pub(crate) async fn read(&self, stmt: &Stmt, params: &[Param]) -> StoreResult<Vec<Row>> {
        self.count(1);
        let sql = stmt.sql(self.backend());
        Ok(match &self.pools {
            Pools::Sqlite { reader, .. } => sqlite_query(sql, params)
                .fetch_all(reader)
                .await?
                .into_iter()
                .map(Row::Sqlite)
                .collect(),
            Pools::Postgres(pool) => pg_query(sql, params)
                .fetch_all(pool)
                .await?
                .into_iter()
                .map(Row::Postgres)
                .collect(),
        })
    }

    /// The first row of a read, if any.
    pub(crate) async fn read_opt(&self, stmt: &Stmt, params: &[Param]) -> StoreResult<Option<Row>> {
        self.count(1);
        let sql = stmt.sql(self.backend());
        Ok(match &self.pools {
            Pools::Sqlite { reader, .. } => sqlite_query(sql, params)
                .fetch_optional(reader)
                .await?
                .map(Row::Sqlite),
            Pools::Postgres(pool) => pg_query(sql, params)
                .fetch_optional(pool)
                .await?
                .map(Row::Postgres),
        })
    }

    /// Runs one writing statement in a transaction of its own; returns the
    /// rows it changed.
    pub(crate) async fn write(&self, stmt: &Stmt, params: &[Param]) -> StoreResult<u64> {
        self.count(1);
        let sql = stmt.sql(self.backend());
        Ok(match &self.pools {
            Pools::Sqlite { writer, .. } => sqlite_query(sql, params)
                .execute(writer)
                .await?
                .rows_affected(),
            Pools::Postgres(pool) => pg_query(sql, params).execute(pool).await?.rows_affected(),
        })
    }

    /// Runs one writing statement with `RETURNING` in a transaction of its
    /// own; returns the first row it returned.
    pub(crate) async fn write_returning(
        &self,
        stmt: &Stmt,
        params: &[Param],
    ) -> StoreResult<Option<Row>> {
        self.count(1);
        let sql = stmt.sql(self.backend());
        Ok(match &self.pools {
            Pools::Sqlite { writer, .. } => sqlite_query(sql, params)
                .fetch_optional(writer)
                .await?
                .map(Row::Sqlite),
            Pools::Postgres(pool) => pg_query(sql, params)
                .fetch_optional(pool)
                .await?
                .map(Row::Postgres),
        })
    }

    /// Runs one writing statement with `RETURNING` in a transaction of its
    /// own; returns every row it returned.
    pub(crate) async fn write_all(&self, stmt: &Stmt, params: &[Param]) -> StoreResult<Vec<Row>> {
        self.count(1);
        let sql = stmt.sql(self.backend());
        Ok(match &self.pools {
            Pools::Sqlite { writer, .. } => sqlite_query(sql, params)
                .fetch_all(writer)
                .await?
                .into_iter()
                .map(Row::Sqlite)
                .collect(),
            Pools::Postgres(pool) => pg_query(sql, params)
                .fetch_all(pool)
                .await?
                .into_iter()
                .map(Row::Postgres)
                .collect(),
        })
    }

    /// Prepares `stmt` without running it (the statement test).
    pub(crate) async fn prepare(&self, stmt: &Stmt) -> StoreResult<()> {
        let sql = stmt.sql(self.backend());
        match &self.pools {
            Pools::Sqlite { reader, .. } => reader.prepare(sql).await?,
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
    Sqlite(driver::Tx<'static>),
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

    /// Runs a statement; returns all its rows.
    pub(crate) async fn fetch_all(
        &mut self,
        stmt: &Stmt,
        params: &[Param],
    ) -> StoreResult<Vec<Row>> {
        self.db.count(1);
        let sql = stmt.sql(self.db.backend());
        Ok(match &mut self.inner {
            TxInner::Sqlite(tx) => sqlite_query(sql, params)
                .fetch_all(&mut **tx)
                .await?
                .into_iter()
                .map(Row::Sqlite)
                .collect(),
            TxInner::Postgres(tx) => pg_query(sql, params)
                .fetch_all(&mut **tx)
                .await?
                .into_iter()
                .map(Row::Postgres)
                .collect(),
        })
    }

    /// Runs a statement; returns the rows it changed.
    pub(crate) async fn execute(&mut self, stmt: &Stmt, params: &[Param]) -> StoreResult<u64> {
        self.db.count(1);
        let sql = stmt.sql(self.db.backend());
        Ok(match &mut self.inner {
            TxInner::Sqlite(tx) => sqlite_query(sql, params)
                .execute(&mut **tx)
                .await?
                .rows_affected(),
            TxInner::Postgres(tx) => pg_query(sql, params)
                .execute(&mut **tx)
                .await?
                .rows_affected(),
        })
    }

    /// Runs a statement; returns its first row, if any.
    pub(crate) async fn fetch_opt(
        &mut self,
        stmt: &Stmt,
        params: &[Param],
    ) -> StoreResult<Option<Row>> {
        self.db.count(1);
        let sql = stmt.sql(self.db.backend());
        Ok(match &mut self.inner {
            TxInner::Sqlite(tx) => sqlite_query(sql, params)
                .fetch_optional(&mut **tx)
                .await?
                .map(Row::Sqlite),
            TxInner::Postgres(tx) => pg_query(sql, params)
                .fetch_optional(&mut **tx)
                .await?
                .map(Row::Postgres),
        })
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
        match self.inner {
            TxInner::Sqlite(tx) => tx.commit().await?,
            TxInner::Postgres(tx) => tx.commit().await?,
        }
        Ok(())
    }

    /// Undoes the transaction's work.
    pub(crate) async fn rollback(self) -> StoreResult<()> {
        self.db.count(1);
        match self.inner {
            TxInner::Sqlite(tx) => tx.rollback().await?,
            TxInner::Postgres(tx) => tx.rollback().await?,
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_per_dialect() {
        let s = "UPDATE t SET a = ?::numeric, b = ? WHERE id = ?::uuid AND c = '?'";
        assert_eq!(
            translate(s, Backend::Postgres),
            "UPDATE t SET a = $1::numeric, b = $2 WHERE id = $3::uuid AND c = '?'"
        );
        assert_eq!(
            translate(s, Backend::Sqlite),
            "UPDATE t SET a = ?, b = ? WHERE id = ? AND c = '?'"
        );
    }

    #[test]
    fn row_locks_are_postgres_only() {
        let s = "SELECT id FROM t WHERE a = ? LIMIT 1 FOR UPDATE SKIP LOCKED";
        assert_eq!(
            translate(s, Backend::Postgres),
            "SELECT id FROM t WHERE a = $1 LIMIT 1 FOR UPDATE SKIP LOCKED"
        );
        assert_eq!(
            translate(s, Backend::Sqlite),
            "SELECT id FROM t WHERE a = ? LIMIT 1"
        );
        assert_eq!(
            translate("SELECT 1 FROM t FOR UPDATE", Backend::Sqlite),
            "SELECT 1 FROM t"
        );
        assert_eq!(
            translate(
                "UPDATE t SET a = ? WHERE id IN (SELECT id FROM t LIMIT ? FOR UPDATE SKIP LOCKED)",
                Backend::Sqlite
            ),
            "UPDATE t SET a = ? WHERE id IN (SELECT id FROM t LIMIT ?)"
        );
    }

    #[test]
    fn statements_are_translated_once() {
        static S: Stmt = Stmt::new(&["SELECT ", "a FROM t WHERE b = ?::uuid"]);
        let first = S.sql(Backend::Postgres) as *const str;
        assert_eq!(
            S.sql(Backend::Postgres),
            "SELECT a FROM t WHERE b = $1::uuid"
        );
        assert_eq!(first, S.sql(Backend::Postgres) as *const str);
        assert_eq!(S.sql(Backend::Sqlite), "SELECT a FROM t WHERE b = ?");
    }
}
