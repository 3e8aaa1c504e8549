//! What a statement gives back, from either backend: rows ([`Row`], read
//! through [`Columns`]) or a count of changed rows ([`Ran`]).

use super::postgres::driver::{self as pg, Got};
use super::sqlite::driver;
use crate::platform::rows::Columns;
use crate::{StoreError, StoreResult};

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

/// What a statement's caller wants back.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Want {
    /// How many rows it changed.
    Changed,
    /// The rows it returned.
    Rows,
}

/// What a statement gave back.
pub(crate) enum Ran {
    Changed(u64),
    Rows(Vec<Row>),
}

impl Ran {
    pub(crate) fn rows(self) -> Vec<Row> {
        match self {
            Ran::Rows(rows) => rows,
            Ran::Changed(_) => Vec::new(),
        }
    }

    pub(crate) fn changed(self) -> u64 {
        match self {
            Ran::Changed(n) => n,
            Ran::Rows(rows) => rows.len() as u64,
        }
    }
}

pub(super) fn sqlite_rows(rows: Vec<driver::Row>) -> Ran {
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
