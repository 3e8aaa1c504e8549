//! Access: the log of signed requests that keeps a replayed request from
//! running twice ([`replays`]), and the claim a request's own transaction
//! carries into that log ([`claim`]). May use `platform` only.

pub mod claim;
pub(crate) mod replays;

use crate::platform::db::Stmt;

/// This area's statements, for the statement tests.
pub(crate) fn statements() -> Vec<&'static Stmt> {
    [claim::STATEMENTS, replays::STATEMENTS].concat()
}
