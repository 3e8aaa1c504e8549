//! Interledger: peers ([`peers`]) and their liquidity ([`liquidity`]), and
//! the holds of the packets this server forwards ([`holds`]).
//!
//! May use the ledger and `platform`; never `payments`, which uses it
//! (crediting an incoming payment for a peer's packets).

pub(crate) mod holds;
pub(crate) mod liquidity;
pub(crate) mod peers;

use crate::platform::db::Stmt;

/// This area's statements, for the statement tests.
pub(crate) fn statements() -> Vec<&'static Stmt> {
    [holds::STATEMENTS, peers::STATEMENTS].concat()
}
