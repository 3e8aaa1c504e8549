//! The STREAM receiver: Prepares addressed to our incoming payments. The
//! destination's token gives the payment and the shared secret; probes
//! (unfulfillable) get F99 with the STREAM reply; money is credited, from
//! the peer's liquidity to the payment, in the same transaction as the
//! payment's received amount (the rule is `IncomingPayment::receive`), and
//! then fulfilled.

use opd_core::incoming_payment::Receivable;
use opd_core::peer::Peer;
use opd_core::{Asset, IncomingPaymentId};
use opd_ilp::packet::Prepare;
use opd_ilp::stream::receiver::{self, ReplyFacts, Verdict};
use opd_ilp::{condition_of, decode_destination, fulfillment_for, ErrorCode, StreamPacket};
use opd_store::{IlpCredit, IlpReceive};

use super::reply::{fulfill, reject, stream_reject};
use crate::{ServiceError, Services};

/// The STREAM receiver for Prepares addressed to our incoming payments.
pub(super) async fn receive(
    services: &Services,
    peer: &Peer,
    prepare: &Prepare,
) -> Result<Vec<u8>, ServiceError> {
    let token = match decode_destination(
        &services.interledger.stream_secret,
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
        deadline: super::deadline(&prepare.expires_at),
    };
    let credited = services
        .interledger
        .credits
        .credit(services, peer, credit, &wallet);
    match credited.await? {
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
        // Its credit could not commit before its deadline: nothing moved.
        IlpCredit::Expired => Ok(reject(
            services,
            ErrorCode::R00_TRANSFER_TIMED_OUT,
            "packet expired",
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
    if let Some(facts) = services.interledger.receivers.get(&id) {
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
    services.interledger.receivers.insert(id, facts.clone());
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
