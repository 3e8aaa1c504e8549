//! Payments: quotes ([`quotes`]), incoming payments ([`incoming`]) and
//! the money they hold for the operator ([`receipts`]), outgoing payments
//! through their lifecycle and their packets ([`outgoing`]), and the
//! credit that moves money to a receiver ([`credits`]).
//!
//! May use the ledger, `interledger` (a peer's liquidity), `access` (the
//! replay claim a request's write carries) and `platform`.

pub(crate) mod credits;
pub(crate) mod incoming;
pub(crate) mod outgoing;
pub(crate) mod quotes;
pub(crate) mod receipts;

use crate::platform::db::Stmt;
use crate::Backend;

/// This area's statements on `backend`, for the statement tests.
pub(crate) fn statements(backend: Backend) -> Vec<&'static Stmt> {
    let mut all = [
        credits::STATEMENTS,
        incoming::STATEMENTS,
        quotes::STATEMENTS,
        receipts::STATEMENTS,
    ]
    .concat();
    all.extend(outgoing::statements(backend));
    all
}
