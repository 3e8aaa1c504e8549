//! Interledger: peers ([`peers`]) and their liquidity ([`liquidity`]), and
//! the holds of the packets this server forwards ([`holds`]).

pub(crate) mod holds;
pub(crate) mod liquidity;
pub(crate) mod peers;

use crate::platform::db::Stmt;

/// This area's statements, for the statement tests.
pub(crate) fn statements() -> Vec<&'static Stmt> {
    [holds::STATEMENTS, peers::STATEMENTS].concat()
}
