//! Payments: incoming payments (what a wallet address receives), quotes,
//! receivers (local or on another server) and the whole life of an
//! outgoing payment. May call `access`'s results, `interledger` (to send),
//! `wallets`, `ledger`, `pricing`, `webhooks` and `platform`.

pub mod incoming;
pub mod outgoing;
pub mod quotes;
pub mod receivers;
