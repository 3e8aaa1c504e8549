//! The single writer: statements alone or in a transaction
//! ([`WriterTx`]), queued without blocking a thread, and committed in
//! groups (one `COMMIT` for the transactions that finished together).

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, ToSql};

use super::{configure, execute, is_full, query, Error, Row};

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
    pub(super) full: bool,
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
    use super::super::tests::{count, database, NONE};

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
}
