//! The STREAM receiver: Prepares addressed to our incoming payments, or to
//! wallet addresses paid by their payment pointer (SPSP, see
//! `super::spsp`). The destination's token gives the receiver and the
//! shared secret; probes (unfulfillable) get F99 with the STREAM reply;
//! money is credited, from the peer's liquidity to the receiver, in the same
//! transaction as the payment's received amount (the rule is
//! `IncomingPayment::receive`) or the wallet address's SPSP totals, and then
//! fulfilled, with a STREAM receipt when the connection asked for them.

use opd_core::incoming_payment::Receivable;
use opd_core::peer::Peer;
use opd_core::wallet_address::WalletAddress;
use opd_core::{Asset, IncomingPaymentId};
use opd_ilp::packet::Prepare;
use opd_ilp::stream::receipt::RECEIPT_LEN;
use opd_ilp::stream::receiver::{self, ReplyFacts, Verdict};
use opd_ilp::{
    condition_of, create_receipt, decode_destination, fulfillment_for, ErrorCode, StreamPacket,
    TokenReceipt,
};
use opd_store::{CreditTo, IlpCredit, IlpReceive, SpspWallet};

use super::reply::{fulfill, reject, stream_reject};
use super::spsp::PaymentTag;
use crate::platform::metrics::Via;
use crate::{ServiceError, Services};

/// The STREAM receiver for Prepares addressed to our incoming payments and
/// payment pointers: reads the connection ([`open`]), decides what the
/// packet's request gets ([`reply_for_verdict`]), credits money
/// ([`credit`]) and answers by what the credit did ([`reply_for_credit`]),
/// with the receipt it earned ([`receipt_for`]).
pub(super) async fn receive(
    services: &Services,
    peer: &Peer,
    prepare: &Prepare,
) -> Result<Vec<u8>, ServiceError> {
    let conn = match open(services, peer, prepare).await? {
        Ok(conn) => conn,
        Err(reply) => return Ok(answer(services, None, reply, None)),
    };
    let verdict = receiver::assess(&conn.request, conn.arriving, conn.fulfillable);
    let (reply, receipt) = match reply_for_verdict(verdict) {
        Some(reply) => (reply, None),
        None => {
            let credited = credit(services, peer, prepare, &conn).await?;
            (reply_for_credit(&credited), receipt_for(&conn, &credited))
        }
    };
    Ok(answer(services, Some(&conn), reply, receipt.as_ref()))
}

/// A Prepare's STREAM connection, as read before any money moves.
struct Connection {
    secret: [u8; 32],
    request: StreamPacket,
    payment: Receiver,
    /// What arrives, in the receiver's asset.
    arriving: u64,
    fulfillment: [u8; 32],
    fulfillable: bool,
}

/// Whom a connection pays.
enum Receiver {
    /// An incoming payment.
    Incoming(ReceiverFacts),
    /// A wallet address paid by its payment pointer, with the receipt
    /// setup its SPSP query gave, if any.
    Wallet(WalletAddress, Option<TokenReceipt>),
}

impl Receiver {
    fn asset(&self) -> &Asset {
        match self {
            Receiver::Incoming(facts) => &facts.asset,
            Receiver::Wallet(wallet, _) => &wallet.asset,
        }
    }
}

/// What opd answers a Prepare addressed to an incoming payment or a
/// payment pointer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reply {
    /// Fulfill, with the STREAM reply.
    Fulfill,
    /// Reject with the STREAM reply (F99 unless `code` says otherwise);
    /// `close` ends the connection.
    Stream { code: ErrorCode, close: bool },
    /// Reject without STREAM data.
    Plain(ErrorCode, &'static str),
}

/// Reads what the Prepare names: the connection behind its destination,
/// its STREAM request, the incoming payment and the amount arriving in the
/// payment's asset; or the reply when one of them is not there.
async fn open(
    services: &Services,
    peer: &Peer,
    prepare: &Prepare,
) -> Result<Result<Connection, Reply>, ServiceError> {
    let token = match decode_destination(
        &services.interledger.stream_secret,
        &services.config.ilp_address,
        prepare.destination.as_str(),
    ) {
        Ok(t) => t,
        Err(e) => {
            let code = e.reject_code().unwrap_or(ErrorCode::F02_UNREACHABLE);
            return Ok(Err(Reply::Plain(code, "no such receiver")));
        }
    };
    let secret = token.shared_secret;
    let Ok(request) = StreamPacket::decrypt_and_decode(&secret, &prepare.data) else {
        return Ok(Err(Reply::Plain(ErrorCode::F06_UNEXPECTED_PAYMENT, "")));
    };
    let Some(payment) = lookup(services, &token.payment_tag, token.receipt).await? else {
        return Ok(Err(Reply::Plain(
            ErrorCode::F02_UNREACHABLE,
            "no such receiver",
        )));
    };
    let arriving = match convert(services, prepare.amount, &peer.asset, payment.asset()).await {
        Ok(v) => v,
        Err(e) => return reply_for_conversion(e).map(Err),
    };
    let fulfillment = fulfillment_for(&secret, &prepare.data);
    Ok(Ok(Connection {
        fulfillable: condition_of(&fulfillment) == prepare.execution_condition,
        secret,
        request,
        payment,
        arriving,
        fulfillment,
    }))
}

/// The reply when the amount cannot be converted into the payment's asset;
/// other errors are the server's.
fn reply_for_conversion(e: ServiceError) -> Result<Reply, ServiceError> {
    match e {
        ServiceError::NoExchangeRate { .. } => {
            Ok(Reply::Plain(ErrorCode::F02_UNREACHABLE, "no exchange rate"))
        }
        ServiceError::AmountOverflow => Ok(Reply::Plain(
            ErrorCode::F08_AMOUNT_TOO_LARGE,
            "amount too large",
        )),
        e => Err(e),
    }
}

/// The reply the request's verdict alone decides; `None` for money, which
/// the credit decides.
fn reply_for_verdict(verdict: Verdict) -> Option<Reply> {
    match verdict {
        Verdict::NotAPrepare => Some(Reply::Plain(ErrorCode::F00_BAD_REQUEST, "")),
        Verdict::ZeroAmount => Some(Reply::Fulfill),
        Verdict::Money => None,
        // A probe, too little arriving, or the sender closing: the reply
        // (echoing the close) in a reject.
        refused => Some(Reply::Stream {
            code: refused
                .reject_code()
                .unwrap_or(ErrorCode::F99_APPLICATION_ERROR),
            close: refused == Verdict::ClosedBySender,
        }),
    }
}

/// Credits the packet's money, from the peer's liquidity to the incoming
/// payment or the wallet address (grouped with others arriving together,
/// see `super::credits`).
async fn credit(
    services: &Services,
    peer: &Peer,
    prepare: &Prepare,
    conn: &Connection,
) -> Result<IlpCredit, ServiceError> {
    let (to, wallet, receipt_connection) = match &conn.payment {
        Receiver::Incoming(facts) => {
            let wallet = services.wallet_by_id(facts.wallet_address_id).await?;
            let wallet = wallet.ok_or_else(|| {
                ServiceError::Internal("an incoming payment without wallet address".into())
            })?;
            (CreditTo::Incoming(facts.id), wallet, None)
        }
        Receiver::Wallet(wallet, receipt) => {
            let to = CreditTo::Wallet(SpspWallet {
                id: wallet.id,
                asset: wallet.asset.clone(),
                report_after_ms: services.config.web_monetization_event_interval_ms(),
            });
            (to, wallet.clone(), receipt.as_ref().map(|r| r.connection))
        }
    };
    let credit = IlpReceive {
        to,
        amount: prepare.amount,
        deliver: conn.arriving,
        receipts: services.config.receipts(),
        receipt_connection,
        at: services.clock.now(),
        deadline: super::deadline(&prepare.expires_at),
    };
    let credited = services.interledger.credits.credit(peer, credit, &wallet);
    let credited = credited.await?;
    let metrics = crate::platform::metrics::incoming_received;
    match &credited {
        // A completed payment refuses credit, so one that reads completed
        // now was completed by this packet.
        IlpCredit::Credited(payment) => {
            metrics(
                &payment.asset,
                conn.arriving,
                Via::Interledger,
                payment.completed,
            );
        }
        IlpCredit::ToWallet { .. } => metrics(&wallet.asset, conn.arriving, Via::Spsp, false),
        _ => {}
    }
    Ok(credited)
}

/// The STREAM receipt of a credited packet whose connection asked for
/// receipts: for stream 1, what the connection received in all (a total
/// past u64::MAX is signed as u64::MAX: a receipt says "at least").
fn receipt_for(conn: &Connection, credited: &IlpCredit) -> Option<[u8; RECEIPT_LEN]> {
    let (Receiver::Wallet(_, Some(receipt)), IlpCredit::ToWallet { receipt_total }) =
        (&conn.payment, credited)
    else {
        return None;
    };
    let total = u64::try_from((*receipt_total)?).unwrap_or(u64::MAX);
    Some(create_receipt(&receipt.setup, 1, total))
}

/// The reply to a packet by what its credit did.
fn reply_for_credit(credit: &IlpCredit) -> Reply {
    let f99 = ErrorCode::F99_APPLICATION_ERROR;
    match credit {
        IlpCredit::Credited(_) | IlpCredit::ToWallet { .. } => Reply::Fulfill,
        IlpCredit::Unknown => Reply::Plain(ErrorCode::F02_UNREACHABLE, "no such receiver"),
        // Completed or expired: tell the sender the connection is over.
        IlpCredit::Refused(Receivable::Closed) => Reply::Stream {
            code: f99,
            close: true,
        },
        // More than the payment can take: refused, the connection stays
        // open for a smaller amount.
        IlpCredit::Refused(_) | IlpCredit::Overflow => Reply::Stream {
            code: f99,
            close: false,
        },
        IlpCredit::InsufficientLiquidity { .. } => Reply::Plain(
            ErrorCode::T04_INSUFFICIENT_LIQUIDITY,
            "insufficient liquidity",
        ),
        // Its credit could not commit before its deadline: nothing moved.
        IlpCredit::Expired => Reply::Plain(ErrorCode::R00_TRANSFER_TIMED_OUT, "packet expired"),
    }
}

/// The packet `reply` says, with the STREAM reply encrypted for `conn`
/// (and a fulfill's `receipt`).
fn answer(
    services: &Services,
    conn: Option<&Connection>,
    reply: Reply,
    receipt: Option<&[u8; RECEIPT_LEN]>,
) -> Vec<u8> {
    let Some(conn) = conn.filter(|_| !matches!(reply, Reply::Plain(..))) else {
        return match reply {
            Reply::Plain(code, message) => reject(&services.config.ilp_address, code, message),
            // A STREAM reply needs the connection that `open` read.
            _ => reject(
                &services.config.ilp_address,
                ErrorCode::F99_APPLICATION_ERROR,
                "",
            ),
        };
    };
    let asset = conn.payment.asset();
    let asset = (asset.code.as_str(), asset.scale);
    let facts = |fulfill: bool, close: bool| ReplyFacts {
        fulfill,
        received_amount: conn.arriving,
        asset: Some(asset),
        close_connection: close,
        max_money: None,
        receipt,
    };
    match reply {
        Reply::Fulfill => {
            let stream = receiver::reply(&conn.request, &facts(true, false));
            fulfill(
                services.random.as_ref(),
                &conn.secret,
                conn.fulfillment,
                &stream,
            )
        }
        Reply::Stream { code, close } => {
            let stream = receiver::reply(&conn.request, &facts(false, close));
            stream_reject(
                &services.config.ilp_address,
                services.random.as_ref(),
                code,
                &conn.secret,
                &stream,
            )
        }
        Reply::Plain(code, message) => reject(&services.config.ilp_address, code, message),
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

/// Whom a token's payment tag names, as far as it is there to be paid.
async fn lookup(
    services: &Services,
    tag: &str,
    receipt: Option<TokenReceipt>,
) -> Result<Option<Receiver>, ServiceError> {
    Ok(match PaymentTag::parse(tag) {
        None => None,
        Some(PaymentTag::Incoming(id)) => incoming(services, id).await?.map(Receiver::Incoming),
        Some(PaymentTag::Wallet(id)) => super::spsp::receiver(services, id)
            .await?
            .map(|wallet| Receiver::Wallet(wallet, receipt)),
    })
}

async fn incoming(
    services: &Services,
    id: IncomingPaymentId,
) -> Result<Option<ReceiverFacts>, ServiceError> {
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
    let rate = services.pricing.rate(from, to).await?;
    rate.convert_floor(amount, from.scale, to.scale)
        .map_err(|_| ServiceError::AmountOverflow)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn money_is_left_to_the_credit_and_the_rest_answered_at_once() {
        assert_eq!(reply_for_verdict(Verdict::Money), None);
        assert_eq!(reply_for_verdict(Verdict::ZeroAmount), Some(Reply::Fulfill));
        assert_eq!(
            reply_for_verdict(Verdict::NotAPrepare),
            Some(Reply::Plain(ErrorCode::F00_BAD_REQUEST, ""))
        );
        let f99 = ErrorCode::F99_APPLICATION_ERROR;
        for (verdict, close) in [
            (Verdict::Unfulfillable, false),
            (Verdict::BelowMinimum, false),
            (Verdict::ClosedBySender, true),
        ] {
            let reply = reply_for_verdict(verdict);
            assert_eq!(
                reply,
                Some(Reply::Stream { code: f99, close }),
                "{verdict:?}"
            );
        }
    }

    #[test]
    fn each_credit_gets_its_answer() {
        let f99 = ErrorCode::F99_APPLICATION_ERROR;
        let cases = [
            (
                IlpCredit::Unknown,
                Reply::Plain(ErrorCode::F02_UNREACHABLE, "no such receiver"),
            ),
            (
                IlpCredit::Refused(Receivable::Closed),
                Reply::Stream {
                    code: f99,
                    close: true,
                },
            ),
            (
                IlpCredit::Refused(Receivable::TooMuch { room: 3 }),
                Reply::Stream {
                    code: f99,
                    close: false,
                },
            ),
            (
                IlpCredit::Overflow,
                Reply::Stream {
                    code: f99,
                    close: false,
                },
            ),
            (
                IlpCredit::InsufficientLiquidity { available: 1 },
                Reply::Plain(
                    ErrorCode::T04_INSUFFICIENT_LIQUIDITY,
                    "insufficient liquidity",
                ),
            ),
            // Never fulfilled once its deadline passed.
            (
                IlpCredit::Expired,
                Reply::Plain(ErrorCode::R00_TRANSFER_TIMED_OUT, "packet expired"),
            ),
        ];
        for (credit, reply) in cases {
            assert_eq!(reply_for_credit(&credit), reply, "{credit:?}");
        }
    }

    #[test]
    fn an_amount_that_cannot_be_converted_is_rejected_final() {
        let no_rate = ServiceError::NoExchangeRate {
            from: "USD".into(),
            to: "EUR".into(),
        };
        assert_eq!(
            reply_for_conversion(no_rate).ok(),
            Some(Reply::Plain(ErrorCode::F02_UNREACHABLE, "no exchange rate"))
        );
        assert_eq!(
            reply_for_conversion(ServiceError::AmountOverflow).ok(),
            Some(Reply::Plain(
                ErrorCode::F08_AMOUNT_TOO_LARGE,
                "amount too large"
            ))
        );
        assert!(reply_for_conversion(ServiceError::Internal("db".into())).is_err());
    }
}
