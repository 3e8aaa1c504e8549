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
    /// Any other database error.
    #[error("database error: {0}")]
    Database(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// Any other error of the embedded SQLite driver.
    #[error("database error: {0}")]
    Sqlite(#[source] crate::sqlite::driver::Error),
}

impl From<crate::sqlite::driver::Error> for StoreError {
    fn from(e: crate::sqlite::driver::Error) -> Self {
        use crate::sqlite::driver::Error as E;
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
