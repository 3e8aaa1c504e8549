//! Interledger: peers and their liquidity, and the holds of packets this
//! server forwards.

pub(crate) mod holds;
pub(crate) mod peers;

use crate::platform::db::Stmt;

/// This area's statements, for the statement tests.
pub(crate) fn statements() -> Vec<&'static Stmt> {
    [holds::STATEMENTS, peers::STATEMENTS].concat()
}
