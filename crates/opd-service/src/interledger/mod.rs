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
//! 5. addressed to one of our incoming payments → the STREAM receiver:
//!    the destination's token gives the payment and the shared secret;
//!    probes (unfulfillable) get F99 with the STREAM reply; money is
//!    credited, from the peer's liquidity to the payment, in the same
//!    transaction as the payment's received amount, and then fulfilled;
//! 6. anything else goes on to another peer (`crate::interledger::connector`).
//!
//! The credit commits before the Fulfill is sent. If the Fulfill is lost
//! on its way, the money stays with the payment (as with any ILP receiver):
//! the peer and the operator settle on the ledger's record.

pub mod connector;
pub mod peers;
pub mod sender;

use opd_core::incoming_payment::Receivable;
use opd_core::peer::Peer;
use opd_core::{Asset, IncomingPaymentId};
use opd_ilp::packet::{Fulfill, Prepare, Reject};
use opd_ilp::stream::receiver::{self, ReplyFacts, Verdict};
use opd_ilp::{
    condition_of, decode_destination, fulfillment_for, AmountTooLarge, ErrorCode, StreamPacket,
};
use opd_store::{IlpCredit, IlpReceive};

use crate::interledger::peers::ReceiveWithWallet;
use crate::{ServiceError, Services};

/// The IL-DCP destination.
const ILDCP_DESTINATION: &str = "peer.config";

/// Answers one ILP packet from `peer`: the bytes of a Fulfill or Reject.
pub async fn handle_packet(services: &Services, peer: &Peer, bytes: &[u8]) -> Vec<u8> {
    let reply = match Prepare::decode(bytes) {
        Ok(prepare) => match answer(services, peer, &prepare).await {
            Ok(reply) => reply,
            Err(e) => {
                tracing::error!(error = %e, peer = %peer.name, "could not process an ILP packet");
                reject(services, ErrorCode::T00_INTERNAL_ERROR, "internal error")
            }
        },
        Err(e) => reject(services, ErrorCode::F01_INVALID_PACKET, &e.to_string()),
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
    let now_ms = services.clock.now().unix_millis();
    if prepare.expires_at.unix_millis() <= now_ms {
        return Ok(reject(
            services,
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
            return Ok(reject(services, ErrorCode::F01_INVALID_PACKET, message));
        }
        if prepare.execution_condition != condition_of(&[0; 32]) {
            let message = "IL-DCP requests use the peer protocol condition";
            return Ok(reject(services, ErrorCode::F05_WRONG_CONDITION, message));
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
                services,
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
        receive(services, peer, prepare).await
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

/// The STREAM receiver for Prepares addressed to our incoming payments.
async fn receive(
    services: &Services,
    peer: &Peer,
    prepare: &Prepare,
) -> Result<Vec<u8>, ServiceError> {
    let token = match decode_destination(
        &services.stream_secret,
        &services.config.ilp_address,
        prepare.destination.as_str(),
    ) {
        Ok(t) => t,
        Err(e) => {
            let code = e.reject_code().unwrap_or(ErrorCode::F02_UNREACHABLE);
            return Ok(reject(services, code, "no such receiver"));
        }
    };
    let secret = token.shared_secret;
    let Ok(request) = StreamPacket::decrypt_and_decode(&secret, &prepare.data) else {
        return Ok(reject(services, ErrorCode::F06_UNEXPECTED_PAYMENT, ""));
    };
    let Some(payment) = lookup(services, &token.payment_tag).await? else {
        return Ok(reject(
            services,
            ErrorCode::F02_UNREACHABLE,
            "no such receiver",
        ));
    };
    let arriving = match convert(services, prepare.amount, &peer.asset, &payment.asset).await {
        Ok(v) => v,
        Err(ServiceError::NoExchangeRate { .. }) => {
            return Ok(reject(
                services,
                ErrorCode::F02_UNREACHABLE,
                "no exchange rate",
            ))
        }
        Err(ServiceError::AmountOverflow) => {
            return Ok(reject(
                services,
                ErrorCode::F08_AMOUNT_TOO_LARGE,
                "amount too large",
            ))
        }
        Err(e) => return Err(e),
    };
    let fulfillment = fulfillment_for(&secret, &prepare.data);
    let fulfillable = condition_of(&fulfillment) == prepare.execution_condition;
    let asset = (payment.asset.code.as_str(), payment.asset.scale);
    let facts = |fulfill: bool, close: bool| ReplyFacts {
        fulfill,
        received_amount: arriving,
        asset: Some(asset),
        close_connection: close,
        max_money: None,
    };
    match receiver::assess(&request, arriving, fulfillable) {
        Verdict::NotAPrepare => return Ok(reject(services, ErrorCode::F00_BAD_REQUEST, "")),
        Verdict::ZeroAmount => {
            let reply = receiver::reply(&request, &facts(true, false));
            return Ok(fulfill(services, &secret, fulfillment, &reply));
        }
        Verdict::Money => {}
        // A probe, too little arriving, or the sender closing: F99 with
        // the reply (echoing the close).
        refused => {
            let close = refused == Verdict::ClosedBySender;
            let reply = receiver::reply(&request, &facts(false, close));
            let code = refused
                .reject_code()
                .unwrap_or(ErrorCode::F99_APPLICATION_ERROR);
            return Ok(stream_reject(services, code, &secret, &reply));
        }
    }
    let wallet = services
        .wallet_by_id(payment.wallet_address_id)
        .await?
        .ok_or_else(|| {
            ServiceError::Internal("an incoming payment without wallet address".into())
        })?;
    let credit = IlpReceive {
        incoming: payment.id,
        amount: prepare.amount,
        deliver: arriving,
        receipts: services.config.receipts(),
        at: services.clock.now(),
    };
    let events = ReceiveWithWallet { services, wallet };
    match services.store.ilp_receive(peer, &credit, &events).await? {
        IlpCredit::Credited(credited) => {
            // A completed payment refuses credit, so one that reads
            // completed now was completed by this packet.
            crate::platform::metrics::incoming_received(
                &credited.asset,
                arriving,
                crate::platform::metrics::Via::Interledger,
                credited.completed,
            );
            let reply = receiver::reply(&request, &facts(true, false));
            Ok(fulfill(services, &secret, fulfillment, &reply))
        }
        IlpCredit::Unknown => Ok(reject(
            services,
            ErrorCode::F02_UNREACHABLE,
            "no such receiver",
        )),
        IlpCredit::Refused(Receivable::Closed) => {
            // Completed or expired: tell the sender the connection is over.
            let reply = receiver::reply(&request, &facts(false, true));
            Ok(stream_reject(
                services,
                ErrorCode::F99_APPLICATION_ERROR,
                &secret,
                &reply,
            ))
        }
        IlpCredit::Refused(_) | IlpCredit::Overflow => {
            // More than the payment can take: refused, the connection
            // stays open for a smaller amount.
            let reply = receiver::reply(&request, &facts(false, false));
            Ok(stream_reject(
                services,
                ErrorCode::F99_APPLICATION_ERROR,
                &secret,
                &reply,
            ))
        }
        IlpCredit::InsufficientLiquidity { .. } => Ok(reject(
            services,
            ErrorCode::T04_INSUFFICIENT_LIQUIDITY,
            "insufficient liquidity",
        )),
    }
}

/// What a packet needs of its incoming payment before the transaction:
/// facts that never change once it exists, so they are cached (the
/// transaction reads the payment's state itself).
#[derive(Debug, Clone)]
pub struct ReceiverFacts {
    id: IncomingPaymentId,
    wallet_address_id: opd_core::WalletAddressId,
    asset: Asset,
}

async fn lookup(services: &Services, tag: &str) -> Result<Option<ReceiverFacts>, ServiceError> {
    let Some(id) = IncomingPaymentId::parse(tag) else {
        return Ok(None);
    };
    if let Some(facts) = services.receiver_cache.get(&id) {
        return Ok(Some(facts));
    }
    let Some(p) = services.store.get_incoming_payment(id).await? else {
        return Ok(None);
    };
    let facts = ReceiverFacts {
        id,
        wallet_address_id: p.wallet_address_id,
        asset: p.asset,
    };
    services.receiver_cache.insert(id, facts.clone());
    Ok(Some(facts))
}

/// `amount` of the peer's asset in the payment's asset, rounded down.
async fn convert(
    services: &Services,
    amount: u64,
    from: &Asset,
    to: &Asset,
) -> Result<u64, ServiceError> {
    if from == to {
        return Ok(amount);
    }
    let rate = services
        .pricing
        .rate(services.store.as_ref(), from, to)
        .await?;
    rate.convert_floor(amount, from.scale, to.scale)
        .map_err(|_| ServiceError::AmountOverflow)
}

fn fulfill(
    services: &Services,
    secret: &[u8; 32],
    fulfillment: [u8; 32],
    reply: &StreamPacket,
) -> Vec<u8> {
    Fulfill {
        fulfillment,
        data: encrypt(services, secret, reply),
    }
    .encode()
}

fn stream_reject(
    services: &Services,
    code: ErrorCode,
    secret: &[u8; 32],
    reply: &StreamPacket,
) -> Vec<u8> {
    reject_with(services, code, "", encrypt(services, secret, reply))
}

fn encrypt(services: &Services, secret: &[u8; 32], reply: &StreamPacket) -> Vec<u8> {
    let mut iv = [0u8; 12];
    services.random.fill(&mut iv);
    // A reply is a few frames: far below the ILP data limit.
    reply.encrypt_with(secret, iv).unwrap_or_default()
}

pub(crate) fn reject(services: &Services, code: ErrorCode, message: &str) -> Vec<u8> {
    reject_with(services, code, message, Vec::new())
}

pub(crate) fn reject_with(
    services: &Services,
    code: ErrorCode,
    message: &str,
    data: Vec<u8>,
) -> Vec<u8> {
    Reject {
        code,
        triggered_by: Some(services.config.ilp_address.clone()),
        message: message.to_owned(),
        data,
    }
    .encode()
}
