//! ILP packets from peers: every Prepare gets a Fulfill or a Reject, never
//! an error (the ILP-over-HTTP endpoint answers 200 with these bytes).
//!
//! In order:
//! 1. a body that is not an ILP Prepare → F01;
//! 2. an expired Prepare → R00;
//! 3. `peer.config` → IL-DCP: the peer's address and asset (only for a
//!    zero-amount request with the peer protocol condition: F01 or F05
//!    otherwise);
//! 4. above the peer's max packet amount → F08 with the amounts;
//! 5. addressed to one of our incoming payments, or to a wallet address
//!    paid by its payment pointer (`spsp`) → the STREAM receiver:
//!    the destination's token gives the receiver and the shared secret;
//!    probes (unfulfillable) get F99 with the STREAM reply; money is
//!    credited, from the peer's liquidity to the payment, in the same
//!    transaction as the payment's received amount, and then fulfilled;
//! 6. anything else goes on to another peer (`crate::interledger::connector`).
//!
//! One rule for every packet's money: it moves only before the packet's
//! deadline, its expiry less what its answer needs on the way back
//! (`deadline`), checked where it moves. An ILP credit checks it inside
//! its transaction once every row is locked (R00 when it passed; a
//! packet still queued for its group at its deadline leaves the queue
//! with R00); the connector posts a hold only for an answer that came
//! before the expiry it gave the next hop, a second before the incoming
//! one (R02 when less than that is left).
//!
//! The credit commits before the Fulfill is sent. If the Fulfill is lost
//! on its way, the money stays with the payment (as with any ILP receiver):
//! the peer and the operator settle on the ledger's record.
//!
//! Lives here: this packet path (`receive`, `reply`, `connector`), the
//! sending side's paths, probes and prepares (`paths`), peers (`peers`,
//! `peering`: asking and accepting) and the webhooks of money moved by packets (`events`). May
//! call `pricing`, `webhooks`, `wallets`, `ledger`, the store and
//! `platform`; the payments area calls in (to send), never the other way.

pub mod connector;
pub(crate) mod credits;
pub mod paths;
mod peering;
pub mod peers;
mod receive;
pub(crate) mod reply;
pub mod spsp;

pub use peering::{accept_peering, ask_peering, AskPeering, Asked, PeeringRequest};
pub use receive::ReceiverFacts;

use opd_core::peer::Peer;
use opd_ilp::packet::{Fulfill, Prepare};
use opd_ilp::{condition_of, AmountTooLarge, ErrorCode};

use std::sync::Arc;

use opd_ilp::StreamSecret;

use crate::platform::cache::TtlCache;
use crate::platform::changes::Change;
use crate::{ServiceError, Services};
use reply::{reject, reject_with};

/// What the Interledger area keeps between packets.
pub struct IlpState {
    /// The secret STREAM credentials of incoming payments derive from.
    pub(crate) stream_secret: StreamSecret,
    /// Peers by the digest of their incoming token.
    pub peers: TtlCache<String, Peer>,
    /// Every peer, for routing forwarded packets.
    pub routes: TtlCache<(), Arc<Vec<Peer>>>,
    /// What packets need of their incoming payment (wallet address, asset):
    /// fixed once it exists, so never stale on any node.
    pub receivers: TtlCache<opd_core::IncomingPaymentId, ReceiverFacts>,
    /// What probing found per path, used for a few seconds of the
    /// server's clock (`paths::PATH_TTL`; the cache's own TTL only
    /// bounds how long an entry takes memory).
    pub paths: TtlCache<paths::PathKey, paths::KeptPath>,
    /// Packets waiting to be credited with others (group commit).
    pub(crate) credits: credits::CreditQueue,
}

impl IlpState {
    /// The Interledger area's state; its credits go through `credits`.
    pub fn new(
        stream_secret: StreamSecret,
        ttl: std::time::Duration,
        credits: credits::CreditQueue,
    ) -> Self {
        Self {
            stream_secret,
            peers: TtlCache::new(ttl, 10_000),
            routes: TtlCache::new(ttl, 1),
            receivers: TtlCache::new(std::time::Duration::from_secs(600), 10_000),
            paths: TtlCache::new(std::time::Duration::from_secs(60), 10_000),
            credits,
        }
    }

    /// Packets waiting for their turn to be credited (queued behind a
    /// credit under way for the same incoming payment and peer).
    pub fn credits_waiting(&self) -> usize {
        self.credits.waiting()
    }

    /// Drops what `change` made stale.
    pub fn forget(&self, change: Change) {
        if change == Change::Peers {
            self.peers.clear();
            self.routes.clear();
        }
    }
}

/// The IL-DCP destination.
const ILDCP_DESTINATION: &str = "peer.config";

/// What a packet's expiry keeps for its answer's way back to the peer:
/// money moves for it here only before its expiry less this.
pub const ANSWER_MARGIN_MS: i64 = 500;

/// The last moment the money of a packet expiring at `expires_at` may
/// move here.
pub(crate) fn deadline(expires_at: &opd_ilp::Timestamp) -> opd_core::Timestamp {
    opd_core::Timestamp::from_unix_millis(expires_at.unix_millis().saturating_sub(ANSWER_MARGIN_MS))
}

/// Answers one ILP packet from `peer`: the bytes of a Fulfill or Reject.
pub async fn handle_packet(services: &Services, peer: &Peer, bytes: &[u8]) -> Vec<u8> {
    let reply = match Prepare::decode(bytes) {
        Ok(prepare) => match answer(services, peer, &prepare).await {
            Ok(reply) => reply,
            Err(e) => {
                tracing::error!(error = %e, peer = %peer.name, "could not process an ILP packet");
                reject(
                    &services.config.ilp_address,
                    ErrorCode::T00_INTERNAL_ERROR,
                    "internal error",
                )
            }
        },
        Err(e) => reject(
            &services.config.ilp_address,
            ErrorCode::F01_INVALID_PACKET,
            &e.to_string(),
        ),
    };
    crate::platform::metrics::ilp_packet(
        crate::platform::metrics::Direction::Incoming,
        Some(&reply),
    );
    reply
}

async fn answer(
    services: &Services,
    peer: &Peer,
    prepare: &Prepare,
) -> Result<Vec<u8>, ServiceError> {
    if prepare.expires_at.unix_millis() <= services.clock.now().unix_millis() {
        return Ok(reject(
            &services.config.ilp_address,
            ErrorCode::R00_TRANSFER_TIMED_OUT,
            "packet expired",
        ));
    }
    if prepare.destination.as_str() == ILDCP_DESTINATION {
        // IL-DCP carries no money and uses the well-known condition; a
        // Fulfill for anything else would be a proof of payment for
        // nothing (a peer could show it to its own peers).
        if prepare.amount != 0 {
            let message = "IL-DCP requests carry no amount";
            return Ok(reject(
                &services.config.ilp_address,
                ErrorCode::F01_INVALID_PACKET,
                message,
            ));
        }
        if prepare.execution_condition != condition_of(&[0; 32]) {
            let message = "IL-DCP requests use the peer protocol condition";
            return Ok(reject(
                &services.config.ilp_address,
                ErrorCode::F05_WRONG_CONDITION,
                message,
            ));
        }
        return Ok(ildcp(peer));
    }
    if let Some(max) = peer.max_packet_amount {
        if prepare.amount > max {
            let data = AmountTooLarge {
                received_amount: prepare.amount,
                maximum_amount: max,
            };
            return Ok(reject_with(
                &services.config.ilp_address,
                ErrorCode::F08_AMOUNT_TOO_LARGE,
                "packet amount exceeds the maximum",
                data.encode().to_vec(),
            ));
        }
    }
    let ours = prepare
        .destination
        .as_str()
        .strip_prefix(services.config.ilp_address.as_str())
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('.'));
    if ours {
        receive::receive(services, peer, prepare).await
    } else {
        crate::interledger::connector::forward(services, peer, prepare).await
    }
}

/// The IL-DCP answer: the peer's address and the peering's asset, in a
/// Fulfill with the all-zero fulfillment (what IL-DCP clients expect).
fn ildcp(peer: &Peer) -> Vec<u8> {
    let mut data = Vec::new();
    opd_ilp::oer::write_var_octet_string(&mut data, peer.static_ilp_address.as_bytes());
    data.push(peer.asset.scale);
    opd_ilp::oer::write_var_octet_string(&mut data, peer.asset.code.as_str().as_bytes());
    Fulfill {
        fulfillment: [0; 32],
        data,
    }
    .encode()
}
