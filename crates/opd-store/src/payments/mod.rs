//! Payments: quotes ([`quotes`]), incoming payments ([`incoming`]) and
//! the money they hold for the operator ([`receipts`]), outgoing payments
//! through their lifecycle and their packets ([`outgoing`]), the
//! credit that moves money to a receiver ([`credits`]), and what wallet
//! addresses received over SPSP ([`spsp`]: reports, totals, withdrawals).
//!
//! May use the ledger, `interledger` (a peer's liquidity), `access` (the
//! replay claim a request's write carries) and `platform`.

pub(crate) mod credits;
pub(crate) mod incoming;
pub(crate) mod outgoing;
pub(crate) mod quotes;
pub(crate) mod receipts;
pub(crate) mod spsp;

use crate::platform::db::Stmt;
use crate::Backend;

/// This area's statements on `backend`, for the statement tests.
pub(crate) fn statements(backend: Backend) -> Vec<&'static Stmt> {
    let mut all = [
        credits::STATEMENTS,
        incoming::STATEMENTS,
        quotes::STATEMENTS,
        receipts::STATEMENTS,
        spsp::STATEMENTS,
    ]
    .concat();
    all.extend(outgoing::statements(backend));
    if backend == Backend::Postgres {
        all.extend_from_slice(credits::PG_STATEMENTS);
    }
    all
}
