//! A small synchronous SQLite driver over rusqlite: reads on a pool of
//! read-only connections ([`ReadPool::query`]), and writes on the single
//! writer, alone ([`WritePool::execute`], [`WritePool::query`]) or in a
//! transaction ([`WritePool::begin`], [`WriterTx`]) with group commit.
//! The store reaches it only through [`crate::platform::db`], which binds its
//! parameters (anything `rusqlite::ToSql`).
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

/// Most transactions one commit may carry.
const MAX_GROUP: usize = 32;

/// How long a transaction waits for the commit of its group before it
/// commits the group itself (it only happens when the writer's next taker
/// gave up waiting for it).
const GROUP_WAIT: Duration = Duration::from_millis(5);

/// The outcome of one group's commit: `None` while it is open.
type GroupOutcome = Option<Result<(), GroupFailure>>;

/// Why a commit group failed, shared by every member of the group.
#[derive(Debug, Clone)]
pub struct GroupFailure {
    message: Arc<str>,
    /// The disk (or the file size limit) was full.
    full: bool,
}

impl GroupFailure {
    fn new(message: impl Into<Arc<str>>) -> Self {
        Self {
            message: message.into(),
            full: false,
        }
    }
}

impl std::fmt::Display for GroupFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// An open database transaction carrying the released transactions of
/// several callers.
#[derive(Debug)]
struct Group {
    id: u64,
    released: usize,
    outcome: tokio::sync::watch::Sender<GroupOutcome>,
}

/// The writer connection and the group it has open, if any.
#[derive(Debug)]
struct Writer {
    conn: Connection,
    group: Option<Group>,
    next_group: u64,
}

impl Writer {
    /// Starts a caller's transaction: a savepoint inside the open group, or
    /// inside a new one.
    fn begin_member(&mut self) -> Result<(), Error> {
        if self.group.is_some() && self.conn.is_autocommit() {
            // SQLite rolled the group's transaction back on its own (an I/O
            // error, say): its released members must not read as committed.
            let _lost = self.end_group(Err(GroupFailure::new(
                "the transaction was rolled back by the database",
            )));
        }
        if self.group.is_none() {
            self.conn.execute_batch("BEGIN IMMEDIATE")?;
            self.next_group += 1;
            self.group = Some(Group {
                id: self.next_group,
                released: 0,
                outcome: tokio::sync::watch::channel(None).0,
            });
        }
        if let Err(e) = self.conn.execute_batch("SAVEPOINT member") {
            if self.group.as_ref().is_some_and(|g| g.released == 0) {
                // Nothing in it yet: end it rather than leave it open.
                let _empty = self.end_group(Ok(()));
            }
            return Err(e.into());
        }
        Ok(())
    }

    /// Undoes a caller's transaction, leaving the group's others intact.
    fn rollback_member(&mut self) -> Result<(), Error> {
        self.conn
            .execute_batch("ROLLBACK TO member; RELEASE member")?;
        Ok(())
    }

    /// Commits the open group (or rolls it back if `outcome` is an error)
    /// and tells every member waiting for it.
    fn end_group(&mut self, outcome: Result<(), GroupFailure>) -> Result<(), GroupFailure> {
        let Some(group) = self.group.take() else {
            return outcome;
        };
        let outcome = match outcome {
            Ok(()) if self.conn.is_autocommit() => Err(GroupFailure::new(
                "the transaction was rolled back by the database",
            )),
            Ok(()) => self.conn.execute_batch("COMMIT").map_err(|e| {
                let failure = GroupFailure {
                    message: Arc::from(format!("commit failed: {e}")),
                    full: is_full(&e),
                };
                if !self.conn.is_autocommit() {
                    let _ = self.conn.execute_batch("ROLLBACK");
                }
                failure
            }),
            Err(e) => {
                if !self.conn.is_autocommit() {
                    let _ = self.conn.execute_batch("ROLLBACK");
                }
                Err(e)
            }
        };
        group.outcome.send_replace(Some(outcome.clone()));
        outcome
    }
}

/// The one writer connection, with group commit: when a transaction
/// commits while other callers are queued for the writer, its work is
/// released into the open database transaction and the next caller carries
/// on in it; the last one commits for the whole group (or `MAX_GROUP` is
/// reached). Each caller's `commit` returns only once its group is
/// committed (or fails with it), and each caller's rollback undoes only its own
/// work (a savepoint per caller). One commit writes a page once for the
/// whole group, which under load is most of what a write costs.
#[derive(Debug, Clone)]
pub struct WritePool {
    writer: Arc<tokio::sync::Mutex<Writer>>,
    /// Callers waiting for the writer.
    queued: Arc<std::sync::atomic::AtomicUsize>,
    /// Keeps the checkpointing thread alive while the pool lives.
    _checkpoints: Arc<Checkpointer>,
}

/// How often the background thread checkpoints the WAL. Often, so each
/// checkpoint's sync is small: once a second measured the same throughput
/// but a p99 latency 2.5 times as long (the sync stalls the WAL writes).
const CHECKPOINT_EVERY: Duration = Duration::from_millis(100);

/// WAL pages after which a commit checkpoints by itself: only a backstop,
/// in case the background thread cannot keep up or has stopped.
const AUTOCHECKPOINT_PAGES: i64 = 20_000;

/// A thread that copies the WAL into the database file (and syncs it), so
/// that commits on the request path only append to the WAL. Stops when
/// dropped.
#[derive(Debug)]
struct Checkpointer {
    _stop: std::sync::mpsc::Sender<()>,
}

impl Checkpointer {
    fn start(path: &Path) -> Result<Self, Error> {
        let conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        configure(&conn)?;
        let (stop, stopped) = std::sync::mpsc::channel::<()>();
        std::thread::Builder::new()
            .name("opd-sqlite-checkpoint".into())
            .spawn(move || {
                // Runs until the pool drops its sender.
                while let Err(std::sync::mpsc::RecvTimeoutError::Timeout) =
                    stopped.recv_timeout(CHECKPOINT_EVERY)
                {
                    // PASSIVE: never waits for, nor blocks, the writer or
                    // readers; what it cannot copy now it copies next time.
                    let done = conn
                        .query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| r.get::<_, i64>(0));
                    if let Err(e) = done {
                        tracing::warn!(error = %e, "SQLite WAL checkpoint failed");
                    }
                }
            })
            .map_err(Error::Thread)?;
        Ok(Self { _stop: stop })
    }
}

/// Counts a caller as queued for the writer until it has it (or gives up).
struct Queued<'a>(&'a std::sync::atomic::AtomicUsize);

impl<'a> Queued<'a> {
    fn new(counter: &'a std::sync::atomic::AtomicUsize) -> Self {
        counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Self(counter)
    }
}

impl Drop for Queued<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
    }
}

impl WritePool {
    /// Opens (or creates) the database for writing, in WAL mode.
    pub fn open(path: &Path, create: bool) -> Result<Self, Error> {
        let mut flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        if create {
            flags |= OpenFlags::SQLITE_OPEN_CREATE;
        }
        let conn = Connection::open_with_flags(path, flags)?;
        configure(&conn)?;
        let _mode: String = conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))?;
        let _pages: i64 = conn.query_row(
            &format!("PRAGMA wal_autocheckpoint = {AUTOCHECKPOINT_PAGES}"),
            [],
            |r| r.get(0),
        )?;
        Ok(Self {
            writer: Arc::new(tokio::sync::Mutex::new(Writer {
                conn,
                group: None,
                next_group: 0,
            })),
            queued: Arc::new(std::sync::atomic::AtomicUsize::new(0)),
            _checkpoints: Arc::new(Checkpointer::start(path)?),
        })
    }

    async fn take(&self) -> tokio::sync::OwnedMutexGuard<Writer> {
        let _queued = Queued::new(&self.queued);
        self.writer.clone().lock_owned().await
    }

    /// Whether the writer is taken now, and how many callers wait for it.
    pub fn stats(&self) -> (bool, usize) {
        // Taking the lock for an instant is all a busy check costs; a
        // writer arriving meanwhile queues for that instant.
        let busy = self.writer.try_lock().is_err();
        (busy, self.queued.load(std::sync::atomic::Ordering::SeqCst))
    }

    fn others_queued(&self) -> bool {
        self.queued.load(std::sync::atomic::Ordering::SeqCst) > 0
    }

    /// Takes the writer and begins a transaction on it; the writer is
    /// released when the transaction commits, rolls back or is dropped.
    pub async fn begin(&self) -> Result<WriterTx, Error> {
        let mut writer = self.take().await;
        writer.begin_member()?;
        Ok(WriterTx {
            writer: Some(writer),
            pool: self.clone(),
        })
    }

    /// Runs one writing statement in a transaction of its own; returns how
    /// many rows it changed once that is committed.
    pub async fn execute<P: ToSql>(&self, sql: &str, params: &[P]) -> Result<u64, Error> {
        let mut tx = self.begin().await?;
        let changed = tx.execute(sql, params)?;
        tx.commit().await?;
        Ok(changed)
    }

    /// Runs one writing statement with `RETURNING` in a transaction of its
    /// own; returns its rows once that is committed.
    pub async fn query<P: ToSql>(&self, sql: &str, params: &[P]) -> Result<Vec<Row>, Error> {
        let mut tx = self.begin().await?;
        let rows = tx.query(sql, params)?;
        tx.commit().await?;
        Ok(rows)
    }

    /// Waits for group `id` to be committed; commits it if nobody else
    /// does in time.
    async fn await_group(
        &self,
        id: u64,
        mut outcome: tokio::sync::watch::Receiver<GroupOutcome>,
    ) -> Result<(), Error> {
        let waited = tokio::time::timeout(GROUP_WAIT, outcome.wait_for(|o| o.is_some()))
            .await
            .ok()
            .and_then(|done| done.ok().and_then(|o| o.clone()));
        if let Some(result) = waited {
            return result.map_err(Error::GroupCommit);
        }
        let mut writer = self.take().await;
        if writer.group.as_ref().is_some_and(|g| g.id == id) {
            return writer.end_group(Ok(())).map_err(Error::GroupCommit);
        }
        drop(writer);
        let result = outcome.borrow().clone();
        match result {
            Some(r) => r.map_err(Error::GroupCommit),
            None => Err(Error::GroupCommit(GroupFailure::new(
                "the commit's outcome was lost",
            ))),
        }
    }
}

/// A caller's transaction on the writer. Every statement runs to its end
/// without awaiting, so the writer is never held across an await except
/// by `commit`, which waits for its group's commit after releasing it.
#[derive(Debug)]
pub struct WriterTx {
    /// `None` once the transaction has ended.
    writer: Option<tokio::sync::OwnedMutexGuard<Writer>>,
    pool: WritePool,
}

impl WriterTx {
    fn conn(&self) -> Result<&Connection, Error> {
        self.writer
            .as_ref()
            .map(|w| &w.conn)
            .ok_or(Error::TransactionEnded)
    }

    /// Runs a statement; returns how many rows it changed.
    pub fn execute<P: ToSql>(&mut self, sql: &str, params: &[P]) -> Result<u64, Error> {
        execute(self.conn()?, sql, params)
    }

    /// Runs a statement; returns every row.
    pub fn query<P: ToSql>(&mut self, sql: &str, params: &[P]) -> Result<Vec<Row>, Error> {
        query(self.conn()?, sql, params)
    }

    /// Ends a group that nobody queued is going to carry on.
    fn close_group_if_last(&self, writer: &mut Writer) -> Result<(), GroupFailure> {
        if writer.group.is_some() && !self.pool.others_queued() {
            return writer.end_group(Ok(()));
        }
        Ok(())
    }

    /// Commits: returns once the work is committed to the database.
    pub async fn commit(mut self) -> Result<(), Error> {
        let mut writer = self.writer.take().ok_or(Error::TransactionEnded)?;
        if let Err(e) = writer.conn.execute_batch("RELEASE member") {
            let _ = writer.rollback_member();
            let _ = self.close_group_if_last(&mut writer);
            return Err(e.into());
        }
        let Some(group) = writer.group.as_mut() else {
            return Err(Error::TransactionEnded);
        };
        group.released += 1;
        if self.pool.others_queued() && group.released < MAX_GROUP {
            // Let the next caller carry the group on; wait for its commit.
            let (id, outcome) = (group.id, group.outcome.subscribe());
            drop(writer);
            return self.pool.await_group(id, outcome).await;
        }
        writer.end_group(Ok(())).map_err(Error::GroupCommit)
    }

    /// Undoes this transaction's work.
    pub fn rollback(mut self) -> Result<(), Error> {
        let mut writer = self.writer.take().ok_or(Error::TransactionEnded)?;
        let undone = writer.rollback_member();
        let _ = self.close_group_if_last(&mut writer);
        undone
    }
}

impl Drop for WriterTx {
    fn drop(&mut self) {
        if let Some(mut writer) = self.writer.take() {
            // An early return or an error: nothing of it is kept.
            if let Err(e) = writer.rollback_member() {
                tracing::error!(error = %e, "rolling back an abandoned SQLite transaction failed");
                let _ = writer.end_group(Err(GroupFailure::new(format!("rollback failed: {e}"))));
            }
            if let Err(e) = self.close_group_if_last(&mut writer) {
                tracing::error!(error = %e, "committing a SQLite transaction group failed");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NONE: [&dyn ToSql; 0] = [];

    /// A fresh database with one table made by `create`, its writer and
    /// `readers` read connections.
    async fn database(create: &str, readers: usize) -> (tempfile::TempDir, WritePool, ReadPool) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.sqlite");
        let writer = WritePool::open(&path, true).unwrap();
        writer.execute(create, &NONE).await.unwrap();
        let readers = ReadPool::open(&path, readers).unwrap();
        (dir, writer, readers)
    }

    fn count(readers: &ReadPool) -> i64 {
        let rows = readers.query("SELECT COUNT(*) AS n FROM t", &NONE).unwrap();
        rows[0].try_get("n").unwrap()
    }

    /// Every connection keeps its sub-journals (a group member's undo) in
    /// memory: a spill to a temporary file costs a file per large group.
    #[tokio::test]
    async fn every_connection_keeps_temporary_data_in_memory() {
        let (_dir, writer, readers) = database("CREATE TABLE t (id INTEGER PRIMARY KEY)", 1).await;
        let mut tx = writer.begin().await.unwrap();
        let on_writer = tx.query("PRAGMA temp_store", &NONE).unwrap();
        tx.commit().await.unwrap();
        let on_reader = readers.query("PRAGMA temp_store", &NONE).unwrap();
        for rows in [on_writer, on_reader] {
            // 2 is MEMORY.
            assert_eq!(rows[0].try_get::<i64>("temp_store").unwrap(), 2);
        }
    }

    #[tokio::test]
    async fn statements_transactions_and_rollback_on_drop() {
        let (_dir, writer, readers) = database(
            "CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT, flag INTEGER)",
            2,
        )
        .await;

        let mut tx = writer.begin().await.unwrap();
        let changed = tx
            .execute(
                "INSERT INTO t (id, name, flag) VALUES (?, ?, ?)",
                &[&1_i64 as &dyn ToSql, &"one", &true],
            )
            .unwrap();
        assert_eq!(changed, 1);
        tx.commit().await.unwrap();

        {
            let mut tx = writer.begin().await.unwrap();
            tx.execute(
                "INSERT INTO t (id, name, flag) VALUES (?, ?, ?)",
                &[&2_i64 as &dyn ToSql, &None::<String>, &false],
            )
            .unwrap();
            // Dropped without commit: rolled back, writer released.
        }

        let rows = readers
            .query("SELECT id, name, flag FROM t ORDER BY id", &NONE)
            .unwrap();
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].try_get::<i64>("id").unwrap(), 1);
        assert_eq!(rows[0].try_get::<String>("name").unwrap(), "one");
        assert!(rows[0].try_get::<bool>("flag").unwrap());
        assert!(rows[0].try_get::<String>("missing").is_err());
        assert!(rows[0].try_get::<String>("id").is_err());
        let none = readers
            .query("SELECT name FROM t WHERE id = ?", &[5_i64])
            .unwrap();
        assert!(none.is_empty());
        assert_eq!(count(&readers), 1);

        let dup = writer
            .execute("INSERT INTO t (id) VALUES (?)", &[1_i64])
            .await
            .unwrap_err();
        assert!(dup.is_unique_violation());
        // Writes return their rows too.
        let returned = writer
            .query("INSERT INTO t (id) VALUES (?) RETURNING id", &[7_i64])
            .await
            .unwrap();
        assert_eq!(returned[0].try_get::<i64>("id").unwrap(), 7);
        // Statements that return rows can be executed too.
        let mut tx = writer.begin().await.unwrap();
        tx.execute("SELECT 1", &NONE).unwrap();
        tx.rollback().unwrap();
    }

    /// Many concurrent writers: each one's commit is visible to readers as
    /// soon as it returns, and a rollback undoes only its own work, even
    /// when commits are grouped.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn grouped_commits_are_visible_on_return_and_rollbacks_stay_private() {
        let (_dir, writer, readers) = database("CREATE TABLE t (id INTEGER PRIMARY KEY)", 4).await;
        let mut tasks = Vec::new();
        for id in 0..200_i64 {
            let (writer, readers) = (writer.clone(), readers.clone());
            tasks.push(tokio::spawn(async move {
                let mut tx = writer.begin().await.unwrap();
                tx.execute("INSERT INTO t (id) VALUES (?)", &[id]).unwrap();
                tokio::task::yield_now().await;
                match id % 3 {
                    0 => tx.commit().await.unwrap(),
                    1 => tx.rollback().unwrap(),
                    _ => drop(tx),
                }
                let seen = readers
                    .query("SELECT id FROM t WHERE id = ?", &[id])
                    .unwrap();
                assert_eq!(!seen.is_empty(), id % 3 == 0, "row {id}");
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
        assert_eq!(count(&readers), 67);
        // The writer is free and no transaction is left open.
        let mut tx = writer.begin().await.unwrap();
        tx.execute("INSERT INTO t (id) VALUES (1000)", &NONE)
            .unwrap();
        tx.commit().await.unwrap();
        let state = writer.writer.lock().await;
        assert!(state.conn.is_autocommit());
        // Queued writers did share commits.
        assert!(state.next_group < 100, "{} groups", state.next_group);
    }

    /// If the database drops the group's transaction (here a raw ROLLBACK
    /// from the next member), a member already released into the group is
    /// told its commit failed, and its work is indeed gone.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_lost_group_fails_every_member() {
        let (_dir, writer, readers) = database("CREATE TABLE t (id INTEGER PRIMARY KEY)", 1).await;
        let mut first = writer.begin().await.unwrap();
        first
            .execute("INSERT INTO t (id) VALUES (1)", &NONE)
            .unwrap();
        let second = {
            let writer = writer.clone();
            tokio::spawn(async move {
                let mut tx = writer.begin().await.unwrap();
                tx.execute("ROLLBACK", &NONE).unwrap();
                tx.commit().await
            })
        };
        // Commit only once the second caller is queued, so the first is
        // released into the group rather than committed alone.
        while !writer.others_queued() {
            tokio::task::yield_now().await;
        }
        let committed = first.commit().await;
        assert!(committed.is_err(), "{committed:?}");
        assert!(second.await.unwrap().is_err());
        assert_eq!(count(&readers), 0);
        // The writer works again afterwards.
        writer
            .execute("INSERT INTO t (id) VALUES (2)", &NONE)
            .await
            .unwrap();
    }

    #[tokio::test]
    async fn read_only_connections_cannot_write() {
        let (_dir, _writer, readers) = database("CREATE TABLE t (id INTEGER)", 1).await;
        assert!(readers
            .query("INSERT INTO t (id) VALUES (1)", &NONE)
            .is_err());
    }
}
