//! The store's one error type.

/// Why a store operation failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A uniqueness rule was broken (a taken path, a repeated id or kid).
    #[error("conflict: {0}")]
    Conflict(String),
    /// The database could not be reached or timed out.
    #[error("database unavailable: {0}")]
    Unavailable(String),
    /// The disk holding the database is full: nothing was saved.
    #[error("the database's disk is full: {0}")]
    Full(String),
    /// The database URL or setup is wrong; a startup error.
    #[error("{0}")]
    Config(String),
    /// A stored row does not decode into the domain types.
    #[error("stored data is invalid: {0}")]
    Corrupt(String),
    /// The schema is behind the binary.
    #[error("{0}")]
    Migration(String),
    /// An identical request (the same replay fingerprint) committed first;
    /// nothing of this transaction was kept (see [`crate::claim`]).
    #[error("an identical request was answered first")]
    Replayed,
    /// Any other database error.
    #[error("database error: {0}")]
    Database(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// Any other error of the embedded SQLite driver.
    #[error("database error: {0}")]
    Sqlite(#[source] crate::platform::db::sqlite::driver::Error),
}

impl StoreError {
    /// The same error again, for each statement that one failure stopped
    /// (a source error becomes its message).
    pub(crate) fn duplicate(&self) -> StoreError {
        match self {
            StoreError::Conflict(m) => StoreError::Conflict(m.clone()),
            StoreError::Unavailable(m) => StoreError::Unavailable(m.clone()),
            StoreError::Full(m) => StoreError::Full(m.clone()),
            StoreError::Config(m) => StoreError::Config(m.clone()),
            StoreError::Corrupt(m) => StoreError::Corrupt(m.clone()),
            StoreError::Migration(m) => StoreError::Migration(m.clone()),
            StoreError::Replayed => StoreError::Replayed,
            StoreError::Database(e) => StoreError::Database(e.to_string().into()),
            StoreError::Sqlite(e) => StoreError::Database(e.to_string().into()),
        }
    }
}

impl From<crate::platform::db::sqlite::driver::Error> for StoreError {
    fn from(e: crate::platform::db::sqlite::driver::Error) -> Self {
        use crate::platform::db::sqlite::driver::Error as E;
        if e.is_unique_violation() {
            return StoreError::Conflict(e.to_string());
        }
        if e.is_busy() {
            return StoreError::Unavailable(e.to_string());
        }
        if e.is_full() {
            return StoreError::Full(e.to_string());
        }
        match e {
            E::ColumnNotFound(_) | E::Decode { .. } => StoreError::Corrupt(e.to_string()),
            other => StoreError::Sqlite(other),
        }
    }
}
