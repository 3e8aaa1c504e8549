//! What every area stands on: the SQL executor and its two backends
//! ([`db`]), row decoding, migrations, errors, the webhook outbox, change
//! notices, settings, retention, pagination and injected faults. Nothing
//! here uses an area.

pub(crate) mod changes;
pub(crate) mod db;
pub(crate) mod error;
pub(crate) mod facts;
pub(crate) mod faults;
pub(crate) mod migrations;
pub(crate) mod outbox;
pub(crate) mod pages;
pub(crate) mod retention;
pub(crate) mod rows;
pub(crate) mod settings;

use crate::Backend;
use db::Stmt;

/// The statements of the platform on `backend`, for the statement tests.
pub(crate) fn statements(backend: Backend) -> Vec<&'static Stmt> {
    let mut all = [
        outbox::STATEMENTS,
        retention::STATEMENTS,
        settings::STATEMENTS,
    ]
    .concat();
    if backend == Backend::Postgres {
        all.extend_from_slice(changes::PG_STATEMENTS);
    }
    all
}
