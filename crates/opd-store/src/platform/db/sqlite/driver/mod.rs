//! A small synchronous SQLite driver over rusqlite: reads on a pool of
//! read-only connections ([`ReadPool::query`]), and writes on the single
//! writer, alone ([`WritePool::execute`], [`WritePool::query`]) or in a
//! transaction ([`WritePool::begin`], [`WriterTx`]) with group commit.
//! The store reaches it only through `crate::platform::db`, which binds
//! its parameters (anything `rusqlite::ToSql`). The writer is in
//! `writer.rs`.
//!
//! Why not sqlx here: sqlx runs each SQLite connection on a thread of its
//! own and hands it every statement over a channel, so each statement costs
//! two thread switches — about 40 % of the server's CPU under load, and the
//! single writer sat idle between the statements of a transaction while the
//! task owning it waited to be scheduled. Here every statement runs on the
//! calling task's thread: reads on a pooled read-only connection, writes on
//! the one writer connection behind an async mutex. Waiting writers queue
//! without blocking a thread; a transaction, once it holds the writer, runs
//! to its commit without yielding, because every call below completes
//! without waiting. SQLite calls take microseconds, less than any hand-off
//! to another thread.

use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rusqlite::types::Value;
use rusqlite::{Connection, ErrorCode, OpenFlags, ToSql};

mod writer;

pub use writer::{GroupFailure, WritePool, WriterTx};

/// Prepared statements kept per connection.
const STATEMENT_CACHE: usize = 256;

/// A driver failure.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Sqlite(#[from] rusqlite::Error),
    #[error("no column {0:?} in the result")]
    ColumnNotFound(String),
    #[error("column {column:?} holds {found}, expected {expected}")]
    Decode {
        column: String,
        expected: &'static str,
        found: &'static str,
    },
    #[error("the transaction has already ended")]
    TransactionEnded,
    #[error("{0}")]
    GroupCommit(GroupFailure),
    #[error("cannot start the checkpoint thread: {0}")]
    Thread(#[source] std::io::Error),
}

impl Error {
    /// A UNIQUE or PRIMARY KEY constraint refused the row.
    pub fn is_unique_violation(&self) -> bool {
        matches!(self, Error::Sqlite(rusqlite::Error::SqliteFailure(e, _))
            if e.extended_code == rusqlite::ffi::SQLITE_CONSTRAINT_UNIQUE
                || e.extended_code == rusqlite::ffi::SQLITE_CONSTRAINT_PRIMARYKEY)
    }

    /// The disk, or the file size the process may write, is full.
    pub fn is_full(&self) -> bool {
        match self {
            Error::Sqlite(e) => is_full(e),
            Error::GroupCommit(g) => g.full,
            _ => false,
        }
    }

    /// The database stayed locked by another process past the busy timeout.
    pub fn is_busy(&self) -> bool {
        matches!(self, Error::Sqlite(rusqlite::Error::SqliteFailure(e, _))
            if matches!(e.code, ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked))
    }
}

/// Whether SQLite failed for lack of space: `SQLITE_FULL`, or a write the
/// operating system cut short (`SQLITE_IOERR_WRITE`, which a file size limit
/// gives).
fn is_full(e: &rusqlite::Error) -> bool {
    matches!(e, rusqlite::Error::SqliteFailure(f, _)
        if f.code == ErrorCode::DiskFull || f.extended_code == rusqlite::ffi::SQLITE_IOERR_WRITE)
}

/// A Rust value a column can be read as.
pub trait Decode: Sized {
    fn decode(value: &Value, column: &str) -> Result<Self, Error>;
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "NULL",
        Value::Integer(_) => "an integer",
        Value::Real(_) => "a real",
        Value::Text(_) => "text",
        Value::Blob(_) => "a blob",
    }
}

fn mismatch(value: &Value, column: &str, expected: &'static str) -> Error {
    Error::Decode {
        column: column.to_owned(),
        expected,
        found: kind(value),
    }
}

impl Decode for String {
    fn decode(value: &Value, column: &str) -> Result<Self, Error> {
        match value {
            Value::Text(s) => Ok(s.clone()),
            other => Err(mismatch(other, column, "text")),
        }
    }
}

impl Decode for i64 {
    fn decode(value: &Value, column: &str) -> Result<Self, Error> {
        match value {
            Value::Integer(i) => Ok(*i),
            other => Err(mismatch(other, column, "an integer")),
        }
    }
}

impl Decode for bool {
    fn decode(value: &Value, column: &str) -> Result<Self, Error> {
        Ok(i64::decode(value, column)? != 0)
    }
}

impl<T: Decode> Decode for Option<T> {
    fn decode(value: &Value, column: &str) -> Result<Self, Error> {
        match value {
            Value::Null => Ok(None),
            other => T::decode(other, column).map(Some),
        }
    }
}

/// One result row, owned.
#[derive(Debug, Clone)]
pub struct Row {
    columns: Arc<[String]>,
    values: Vec<Value>,
}

impl Row {
    /// The value of `column`.
    pub fn try_get<T: Decode>(&self, column: &str) -> Result<T, Error> {
        let index = self
            .columns
            .iter()
            .position(|c| c == column)
            .ok_or_else(|| Error::ColumnNotFound(column.to_owned()))?;
        T::decode(&self.values[index], column)
    }
}

/// Runs `sql` to its end; returns how many rows it changed (for a
/// statement that changes none, SQLite reports the previous change count:
/// only writes ask). Stepped rather than `execute`d, which refuses
/// statements that return rows.
fn execute<P: ToSql>(conn: &Connection, sql: &str, params: &[P]) -> Result<u64, Error> {
    let mut statement = conn.prepare_cached(sql)?;
    let mut rows = statement.query(rusqlite::params_from_iter(params))?;
    while rows.next()?.is_some() {}
    drop(rows);
    Ok(conn.changes())
}

/// Runs `sql`; returns every row.
fn query<P: ToSql>(conn: &Connection, sql: &str, params: &[P]) -> Result<Vec<Row>, Error> {
    let mut statement = conn.prepare_cached(sql)?;
    let columns: Arc<[String]> = statement
        .column_names()
        .into_iter()
        .map(str::to_owned)
        .collect();
    let width = columns.len();
    let mut rows = statement.query(rusqlite::params_from_iter(params))?;
    let mut out = Vec::new();
    while let Some(row) = rows.next()? {
        let mut values = Vec::with_capacity(width);
        for i in 0..width {
            values.push(row.get::<_, Value>(i)?);
        }
        out.push(Row {
            columns: columns.clone(),
            values,
        });
    }
    Ok(out)
}

/// Settings every connection gets.
fn configure(conn: &Connection) -> Result<(), Error> {
    conn.busy_timeout(Duration::from_secs(5))?;
    conn.pragma_update(None, "foreign_keys", "ON")?;
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    // 16 MiB of page cache per connection (SQLite's default is 2 MiB): the
    // ledger's indexes of a busy server stay in memory instead of being
    // read back from the OS on every insert.
    conn.pragma_update(None, "cache_size", -16_384)?;
    // Each transaction of a commit group is a savepoint, so SQLite keeps
    // the pages it changes in a sub-journal to undo it alone. By default
    // a sub-journal past 64 KiB spills to a temporary file, opened and
    // deleted each time: under `pay-remote` that was about 130 files and
    // 4 000 writes a second. In memory it costs only the memory.
    conn.pragma_update(None, "temp_store", "MEMORY")?;
    conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
    Ok(())
}

/// Read-only connections, opened on demand and kept for reuse. A read runs
/// on the caller's thread while it holds one, so there are never more than
/// the runtime has threads.
#[derive(Debug, Clone)]
pub struct ReadPool {
    path: Arc<Path>,
    idle: Arc<Mutex<Vec<Connection>>>,
    keep: usize,
    /// Connections running a read now (for metrics).
    in_use: Arc<std::sync::atomic::AtomicUsize>,
}

impl ReadPool {
    pub fn open(path: &Path, keep: usize) -> Result<Self, Error> {
        let pool = Self {
            path: Arc::from(path),
            idle: Arc::new(Mutex::new(Vec::new())),
            keep: keep.max(1),
            in_use: Arc::new(std::sync::atomic::AtomicUsize::new(0)),
        };
        // Fail at start, not on the first read, if the file cannot be read.
        let first = pool.connect()?;
        pool.give_back(first);
        Ok(pool)
    }

    fn connect(&self) -> Result<Connection, Error> {
        let conn = Connection::open_with_flags(
            &self.path,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        configure(&conn)?;
        Ok(conn)
    }

    fn take(&self) -> Result<Connection, Error> {
        let idle = self
            .idle
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop();
        match idle {
            Some(conn) => Ok(conn),
            None => self.connect(),
        }
    }

    fn give_back(&self, conn: Connection) {
        let mut idle = self.idle.lock().unwrap_or_else(PoisonError::into_inner);
        if idle.len() < self.keep {
            idle.push(conn);
        }
    }
}

impl ReadPool {
    /// Idle and busy connections, now.
    pub fn stats(&self) -> (usize, usize) {
        let idle = self
            .idle
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len();
        (idle, self.in_use.load(std::sync::atomic::Ordering::Relaxed))
    }

    /// Runs a read; returns every row. It runs on the caller's thread
    /// while holding one connection.
    pub fn query<P: ToSql>(&self, sql: &str, params: &[P]) -> Result<Vec<Row>, Error> {
        self.with(|conn| query(conn, sql, params))
    }

    /// Compiles `sql` without running it (the store's statement test);
    /// SQLite compiles writes on a read-only connection too.
    pub fn prepare(&self, sql: &str) -> Result<(), Error> {
        self.with(|conn| {
            conn.prepare(sql)?;
            Ok(())
        })
    }

    /// The `detail` lines of SQLite's plan for `sql`, its parameters left
    /// unbound (the store's statement test).
    pub fn query_plan(&self, sql: &str) -> Result<Vec<String>, Error> {
        self.with(|conn| {
            let mut stmt = conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}"))?;
            let mut rows = stmt.raw_query();
            let mut details = Vec::new();
            while let Some(row) = rows.next()? {
                details.push(row.get::<_, String>(3)?);
            }
            Ok(details)
        })
    }

    fn with<R>(&self, work: impl FnOnce(&Connection) -> Result<R, Error>) -> Result<R, Error> {
        let conn = self.take()?;
        self.in_use
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let result = work(&conn);
        self.in_use
            .fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
        self.give_back(conn);
        result
    }
}

#[cfg(test)]
mod tests;
