//! PostgreSQL through tokio-postgres, its connections pooled by
//! deadpool-postgres.
//!
//! Why not sqlx: it cannot pipeline (every statement, `BEGIN` and `COMMIT`
//! waits for the one before) and it cannot take a URL naming several hosts
//! with `target_session_attrs=read-write`, which is how nodes find the new
//! primary after a failover. tokio-postgres does both.
//!
//! - Each statement is prepared once per connection with the types opd
//!   binds (`BIGINT`, `TEXT`, `BOOLEAN`; the SQL casts where a column needs
//!   another), then runs as one round trip.
//! - A transaction's `BEGIN` is sent with its first statement, in one round
//!   trip, and a transaction that ran nothing sends neither `BEGIN` nor
//!   `COMMIT`.
//! - A transaction dropped unfinished is rolled back in a task of its own
//!   before its connection goes back to the pool.

use deadpool_postgres::{Object, Pool};
use tokio_postgres::error::SqlState;
use tokio_postgres::types::{ToSql, Type};

use crate::platform::db::{Param, Want};
use crate::{StoreError, StoreResult};

/// One result row.
pub(crate) type PgRow = tokio_postgres::Row;

/// The pool, and the settings a listening connection is opened with.
#[derive(Clone)]
pub(crate) struct Pg {
    pub(crate) pool: Pool,
    pub(crate) config: tokio_postgres::Config,
}

impl std::fmt::Debug for Pg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Pg")
    }
}

fn types(params: &[Param]) -> Vec<Type> {
    params
        .iter()
        .map(|p| match p {
            Param::Int(_) => Type::INT8,
            Param::Text(_) => Type::TEXT,
            Param::Bool(_) => Type::BOOL,
        })
        .collect()
}

fn values(params: &[Param]) -> Vec<&(dyn ToSql + Sync)> {
    params
        .iter()
        .map(|p| match p {
            Param::Int(v) => v as &(dyn ToSql + Sync),
            Param::Text(v) => v as &(dyn ToSql + Sync),
            Param::Bool(v) => v as &(dyn ToSql + Sync),
        })
        .collect()
}

/// What a statement gave back.
pub(crate) enum Got {
    Changed(u64),
    Rows(Vec<PgRow>),
}

/// A connection from the pool.
pub(crate) async fn connection(pool: &Pool) -> StoreResult<Object> {
    Ok(pool.get().await?)
}

/// Runs `sql` on `conn`; with `begin`, sends `BEGIN` first in the same
/// round trip.
pub(crate) async fn run(
    conn: &Object,
    sql: &str,
    params: &[Param],
    want: Want,
    begin: bool,
) -> StoreResult<Got> {
    let (mut got, ended) = pipeline(conn, begin, &[(sql, params, want)], None).await;
    ended?;
    got.pop().unwrap_or_else(|| Err(finished()))
}

/// One statement of a pipeline: its SQL, parameters and what it returns.
pub(crate) type Piped<'a> = (&'a str, &'a [Param], Want);

/// Sends `statements` in one round trip: after `BEGIN` when `begin`, and
/// followed by `end` (`COMMIT`) when given. Returns each statement's
/// result, in order, and the end's.
///
/// Every request is queued on the connection when its future is first
/// polled, and the futures are first polled in order, so they travel
/// together and the server answers them in order. A statement that fails
/// aborts the transaction: the ones after it fail too, and a `COMMIT`
/// after it rolls back (the caller must not read that as committed).
pub(crate) async fn pipeline(
    conn: &Object,
    begin: bool,
    statements: &[Piped<'_>],
    end: Option<&str>,
) -> (Vec<StoreResult<Got>>, StoreResult<()>) {
    // Prepared once per connection; after that this takes no round trip.
    let mut prepared = Vec::with_capacity(statements.len());
    for (sql, params, _) in statements {
        match conn.prepare_typed_cached(sql, &types(params)).await {
            Ok(s) => prepared.push(s),
            Err(e) => {
                let e = StoreError::from(e);
                let failed = statements.iter().map(|_| Err(e.duplicate())).collect();
                return (failed, Err(e));
            }
        }
    }
    let begun = async {
        if begin {
            conn.batch_execute("BEGIN").await
        } else {
            Ok(())
        }
    };
    let ran = futures_util::future::join_all(statements.iter().zip(&prepared).map(
        |((_, params, want), statement)| async move {
            let values = values(params);
            match want {
                Want::Changed => conn.execute(statement, &values).await.map(Got::Changed),
                Want::Rows => conn.query(statement, &values).await.map(Got::Rows),
            }
        },
    ));
    let ended = async {
        match end {
            Some(end) => conn.batch_execute(end).await,
            None => Ok(()),
        }
    };
    let (begun, ran, ended) = tokio::join!(begun, ran, ended);
    // Statements after a `BEGIN` that failed must not pass for done.
    let begun = begun.map_err(StoreError::from);
    let ran = ran
        .into_iter()
        .map(|r| match &begun {
            Err(e) => Err(e.duplicate()),
            Ok(()) => r.map_err(StoreError::from),
        })
        .collect();
    (ran, ended.map_err(StoreError::from))
}

/// An open transaction on one pooled connection.
pub(crate) struct PgTx {
    conn: Option<Object>,
    /// Whether `BEGIN` was sent (with the first statement).
    begun: bool,
}

impl PgTx {
    pub(crate) async fn begin(pool: &Pool) -> StoreResult<Self> {
        Ok(Self {
            conn: Some(connection(pool).await?),
            begun: false,
        })
    }

    /// Whether the next statement is the first (it carries the `BEGIN`).
    pub(crate) fn first(&self) -> bool {
        !self.begun
    }

    /// Sends `statements` (and `BEGIN` first, when this is the first
    /// round trip) in one round trip.
    pub(crate) async fn send(&mut self, statements: &[Piped<'_>]) -> Vec<StoreResult<Got>> {
        let Some(conn) = self.conn.as_ref() else {
            return statements.iter().map(|_| Err(finished())).collect();
        };
        let begin = !self.begun;
        // From here a `BEGIN` may have reached the server, whatever the
        // statements' fate: the transaction must be ended.
        self.begun = true;
        pipeline(conn, begin, statements, None).await.0
    }

    /// Sends `statements`, then `end` (`COMMIT` or `ROLLBACK`), in one
    /// round trip (nothing when the transaction never began and there is
    /// nothing to send); the connection then goes back to the pool.
    pub(crate) async fn end_with(
        mut self,
        statements: &[Piped<'_>],
        end: &str,
    ) -> (Vec<StoreResult<Got>>, StoreResult<()>) {
        let Some(conn) = self.conn.take() else {
            return (Vec::new(), Err(finished()));
        };
        if !self.begun && statements.is_empty() {
            return (Vec::new(), Ok(()));
        }
        pipeline(&conn, !self.begun, statements, Some(end)).await
    }

    pub(crate) async fn rollback(self) -> StoreResult<()> {
        self.end_with(&[], "ROLLBACK").await.1
    }
}

fn finished() -> StoreError {
    StoreError::Corrupt("the transaction has ended".into())
}

impl Drop for PgTx {
    fn drop(&mut self) {
        let Some(conn) = self.conn.take() else {
            return;
        };
        if !self.begun {
            return;
        }
        // Its row locks stand until the rollback: rolled back at once, in a
        // task, before the connection can serve anyone else. Without a
        // runtime the connection is closed instead, which rolls back too.
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                runtime.spawn(async move {
                    if conn.batch_execute("ROLLBACK").await.is_err() {
                        drop(Object::take(conn));
                    }
                });
            }
            Err(_) => drop(Object::take(conn)),
        }
    }
}

/// Errors that mean "not now" (503 with `Retry-After`): the server is
/// unreachable, restarting, shutting down, or has just become a standby.
fn unavailable(state: &SqlState) -> bool {
    state.code().starts_with("08")
        || [
            SqlState::ADMIN_SHUTDOWN,
            SqlState::CRASH_SHUTDOWN,
            SqlState::CANNOT_CONNECT_NOW,
            SqlState::READ_ONLY_SQL_TRANSACTION,
            SqlState::TOO_MANY_CONNECTIONS,
            SqlState::QUERY_CANCELED,
        ]
        .contains(state)
}

impl From<tokio_postgres::Error> for StoreError {
    fn from(e: tokio_postgres::Error) -> Self {
        if let Some(db) = e.as_db_error() {
            let state = db.code();
            if *state == SqlState::UNIQUE_VIOLATION {
                return StoreError::Conflict(db.message().to_owned());
            }
            if *state == SqlState::DISK_FULL {
                return StoreError::Full(db.message().to_owned());
            }
            if unavailable(state) {
                return StoreError::Unavailable(db.message().to_owned());
            }
            return StoreError::Database(Box::new(e));
        }
        let io = std::error::Error::source(&e).is_some_and(|s| s.is::<std::io::Error>());
        if e.is_closed() || io {
            return StoreError::Unavailable(e.to_string());
        }
        StoreError::Database(Box::new(e))
    }
}

impl From<deadpool_postgres::PoolError> for StoreError {
    fn from(e: deadpool_postgres::PoolError) -> Self {
        match e {
            deadpool_postgres::PoolError::Backend(e) => match StoreError::from(e) {
                // A connection that cannot be opened is the database being
                // away, whatever the server said.
                StoreError::Database(e) => StoreError::Unavailable(e.to_string()),
                other => other,
            },
            other => StoreError::Unavailable(other.to_string()),
        }
    }
}
