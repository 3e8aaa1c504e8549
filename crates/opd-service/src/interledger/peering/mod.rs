//! Auto-peering, both sides of the reference server's protocol: asking
//! another server to peer ([`ask`]) and accepting another server's request
//! ([`accept`]). Both refuse an answer or a request whose address or routes
//! would sit under or above an existing peer's, with one check
//! (`accept::conflict`).

mod accept;
mod ask;

pub use accept::{accept_peering, PeeringRequest};
pub use ask::{ask_peering, AskPeering, Asked};
