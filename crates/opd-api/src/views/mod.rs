//! What the operator's dashboard and the wallet owner's own page both show,
//! in the same words: a grant's access ([`grant_access`]) and a wallet
//! address's balance history ([`wallet_history`]).

pub(crate) mod grant_access;
pub(crate) mod wallet_history;
