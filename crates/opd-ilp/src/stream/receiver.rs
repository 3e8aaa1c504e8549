//! The pure part of a stateless STREAM receiver: what to do with an
//! authentic STREAM request, and the STREAM reply to encrypt into the ILP
//! Fulfill or Reject. It follows `@interledger/stream-receiver` (the
//! library Rafiki uses); the I/O side (credits, ILP-over-HTTP) lives
//! elsewhere.
//!
//! For an incoming ILP Prepare, a receiver
//!
//! 1. recovers the payment tag, asset and shared secret from the
//!    destination ([`crate::decode_destination`]), rejecting with F02 or
//!    F06 ([`crate::IlpError::reject_code`]);
//! 2. decrypts `prepare.data` ([`StreamPacket::decrypt_and_decode`]),
//!    rejecting with F06 and no data if that fails;
//! 3. checks whether it can fulfill: `condition_of(fulfillment_for(secret,
//!    &prepare.data)) == prepare.execution_condition`;
//! 4. calls [`assess`] and acts on the [`Verdict`];
//! 5. builds the STREAM reply with [`reply`], encrypts it with a fresh IV
//!    and sends it as the `data` of a Fulfill (with the fulfillment) or of a
//!    Reject (code from the verdict or the application, `triggered_by` its
//!    own address, empty message).
//!
//! Unfulfillable requests (a sender's rate probes) get F99, as RFC 29 and
//! `stream-receiver` 0.2.2 do. `stream-receiver` 0.3.3-alpha.4 answers F05,
//! which `@interledger/pay` up to 0.4.0-alpha.9 treats as fatal, so F99 is
//! the compatible choice.

use crate::error_code::ErrorCode;
use crate::packet::PacketType;
use crate::stream::{Frame, StreamErrorCode, StreamPacket};

/// What a receiver does with an authentic STREAM request, before any
/// money is credited.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Verdict {
    /// The STREAM packet does not say it rides in a Prepare (a protocol
    /// violation, or packets swapped in transit): reject F00 with no STREAM
    /// data, since the request cannot be trusted to match this Prepare.
    NotAPrepare,
    /// The request carries a ConnectionClose: reject F99, echoing a
    /// ConnectionClose in the reply (`close_connection: true`).
    ClosedBySender,
    /// Less arrived than the request's `prepare_amount`: reject F99. The
    /// reply tells the sender how much did arrive.
    BelowMinimum,
    /// The condition is not this connection's (a probe or a quote): reject
    /// F99, with the amount that arrived in the reply.
    Unfulfillable,
    /// Zero amount and fulfillable: fulfill, crediting nothing. Senders
    /// use such packets to exchange frames, and `ilp-protocol-stream`
    /// misbehaves if they are rejected.
    ZeroAmount,
    /// Money to credit. The application either accepts (Fulfill), declines
    /// for now (reject T00) or declines for good (reject F99 with
    /// `close_connection: true`).
    Money,
}

impl Verdict {
    /// The reject code when the verdict alone decides on a reject; `None`
    /// for [`Verdict::ZeroAmount`] (fulfill) and [`Verdict::Money`] (the
    /// application decides).
    pub fn reject_code(self) -> Option<ErrorCode> {
        match self {
            Self::NotAPrepare => Some(ErrorCode::F00_BAD_REQUEST),
            Self::ClosedBySender | Self::BelowMinimum | Self::Unfulfillable => {
                Some(ErrorCode::F99_APPLICATION_ERROR)
            }
            Self::ZeroAmount | Self::Money => None,
        }
    }
}

/// Decides about `request`, which arrived in a Prepare of `amount` (in the
/// receiver's units) that the receiver can (`fulfillable`) or cannot
/// fulfill. The checks run in `stream-receiver`'s order.
pub fn assess(request: &StreamPacket, amount: u64, fulfillable: bool) -> Verdict {
    if request.ilp_packet_type != PacketType::Prepare {
        Verdict::NotAPrepare
    } else if has(request, |f| matches!(f, Frame::ConnectionClose { .. })) {
        Verdict::ClosedBySender
    } else if amount < request.prepare_amount {
        Verdict::BelowMinimum
    } else if !fulfillable {
        Verdict::Unfulfillable
    } else if amount == 0 {
        Verdict::ZeroAmount
    } else {
        Verdict::Money
    }
}

/// Limits to advertise on each stream that carried money, as
/// StreamMaxMoney frames.
///
/// `stream-receiver` sends none (limits belong to the application layer,
/// and senders assume no limit). `@interledger/pay` caps what it sends on
/// stream 1 at the advertised `receive_max`, so only advertise numbers that
/// are true for this connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct MaxMoney {
    /// Most the receiver accepts in total (`u64::MAX`: no limit).
    pub receive_max: u64,
    /// What it has received so far.
    pub total_received: u64,
}

/// What the receiver knows when it answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplyFacts<'a> {
    /// The reply rides in an ILP Fulfill (else in a Reject).
    pub fulfill: bool,
    /// The Prepare's amount as it arrived, in the receiver's units.
    pub received_amount: u64,
    /// The receiver's asset (code, scale), from the connection token; sent
    /// when the request carries ConnectionNewAddress.
    pub asset: Option<(&'a str, u8)>,
    /// Close the connection: add ConnectionClose(NoError).
    pub close_connection: bool,
    /// Add StreamMaxMoney frames; see [`MaxMoney`].
    pub max_money: Option<MaxMoney>,
    /// A STREAM receipt ([`super::receipt`]) to add, in a StreamReceipt
    /// frame for the stream it names; only fulfills carry one.
    pub receipt: Option<&'a [u8; super::receipt::RECEIPT_LEN]>,
}

/// The STREAM reply to `request`: same sequence, ILP type 13 or 14,
/// `prepare_amount` = the amount received, and frames:
///
/// - ConnectionAssetDetails if the request has ConnectionNewAddress and
///   the asset is known (not when echoing the sender's ConnectionClose);
/// - StreamMaxMoney for each stream id with a StreamMoney frame, in order
///   of first appearance, if `max_money` is set;
/// - StreamReceipt with `receipt` if the reply rides in a Fulfill;
/// - ConnectionClose(NoError, "") if `close_connection`.
pub fn reply(request: &StreamPacket, facts: &ReplyFacts<'_>) -> StreamPacket {
    let mut frames = Vec::new();
    let sender_closed = has(request, |f| matches!(f, Frame::ConnectionClose { .. }));
    let new_address = has(request, |f| matches!(f, Frame::ConnectionNewAddress { .. }));
    if let (Some((code, scale)), true, false) = (facts.asset, new_address, sender_closed) {
        frames.push(Frame::ConnectionAssetDetails {
            source_asset_code: code.to_owned(),
            source_asset_scale: scale,
        });
    }
    if let Some(max) = facts.max_money {
        let mut seen = Vec::new();
        for frame in &request.frames {
            if let Frame::StreamMoney { stream_id, .. } = frame {
                if !seen.contains(stream_id) {
                    seen.push(*stream_id);
                    frames.push(Frame::StreamMaxMoney {
                        stream_id: *stream_id,
                        receive_max: max.receive_max,
                        total_received: max.total_received,
                    });
                }
            }
        }
    }
    if let (Some(receipt), true) = (facts.receipt, facts.fulfill) {
        frames.push(Frame::StreamReceipt {
            stream_id: u64::from(receipt[17]),
            receipt: receipt.to_vec(),
        });
    }
    if facts.close_connection {
        frames.push(Frame::ConnectionClose {
            code: StreamErrorCode::NoError,
            message: String::new(),
        });
    }
    StreamPacket {
        sequence: request.sequence,
        ilp_packet_type: if facts.fulfill {
            PacketType::Fulfill
        } else {
            PacketType::Reject
        },
        prepare_amount: facts.received_amount,
        frames,
    }
}

fn has(packet: &StreamPacket, pred: impl Fn(&Frame) -> bool) -> bool {
    packet.frames.iter().any(pred)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(prepare_amount: u64, frames: Vec<Frame>) -> StreamPacket {
        StreamPacket {
            sequence: 7,
            ilp_packet_type: PacketType::Prepare,
            prepare_amount,
            frames,
        }
    }

    fn money(stream_id: u64) -> Frame {
        Frame::StreamMoney {
            stream_id,
            shares: 1,
        }
    }

    fn close() -> Frame {
        Frame::ConnectionClose {
            code: StreamErrorCode::NoError,
            message: String::new(),
        }
    }

    #[test]
    fn verdicts_in_order() {
        let mut not_prepare = request(0, vec![close()]);
        not_prepare.ilp_packet_type = PacketType::Fulfill;
        assert_eq!(assess(&not_prepare, 10, true), Verdict::NotAPrepare);
        assert_eq!(
            assess(&request(50, vec![close()]), 10, false),
            Verdict::ClosedBySender
        );
        assert_eq!(
            assess(&request(11, vec![]), 10, false),
            Verdict::BelowMinimum
        );
        assert_eq!(
            assess(&request(10, vec![]), 10, false),
            Verdict::Unfulfillable
        );
        assert_eq!(assess(&request(0, vec![]), 0, true), Verdict::ZeroAmount);
        assert_eq!(
            assess(&request(10, vec![money(1)]), 10, true),
            Verdict::Money
        );

        assert_eq!(
            Verdict::NotAPrepare.reject_code(),
            Some(ErrorCode::F00_BAD_REQUEST)
        );
        assert_eq!(
            Verdict::Unfulfillable.reject_code(),
            Some(ErrorCode::F99_APPLICATION_ERROR)
        );
        assert_eq!(Verdict::Money.reject_code(), None);
    }

    #[test]
    fn probe_reply_carries_asset_details_and_amount() {
        let probe = request(
            0,
            vec![Frame::ConnectionNewAddress {
                source_account: String::new(),
            }],
        );
        let facts = ReplyFacts {
            fulfill: false,
            received_amount: 1234,
            asset: Some(("USD", 2)),
            close_connection: false,
            max_money: None,
            receipt: None,
        };
        assert_eq!(
            reply(&probe, &facts),
            StreamPacket {
                sequence: 7,
                ilp_packet_type: PacketType::Reject,
                prepare_amount: 1234,
                frames: vec![Frame::ConnectionAssetDetails {
                    source_asset_code: "USD".into(),
                    source_asset_scale: 2
                }],
            }
        );
        // Without a known asset, or without ConnectionNewAddress: nothing.
        let no_asset = ReplyFacts {
            asset: None,
            ..facts
        };
        assert!(reply(&probe, &no_asset).frames.is_empty());
        assert!(reply(&request(0, vec![]), &facts).frames.is_empty());
    }

    #[test]
    fn close_echo_and_max_money() {
        let closing = request(
            0,
            vec![
                Frame::ConnectionNewAddress {
                    source_account: "test.sender".into(),
                },
                close(),
            ],
        );
        let facts = ReplyFacts {
            fulfill: false,
            received_amount: 0,
            asset: Some(("USD", 2)),
            close_connection: true,
            max_money: None,
            receipt: None,
        };
        assert_eq!(reply(&closing, &facts).frames, vec![close()]);

        let paying = request(5, vec![money(1), money(3), money(1)]);
        let facts = ReplyFacts {
            fulfill: true,
            received_amount: 5,
            asset: None,
            close_connection: false,
            max_money: Some(MaxMoney {
                receive_max: u64::MAX,
                total_received: 40,
            }),
            receipt: None,
        };
        let r = reply(&paying, &facts);
        assert_eq!(r.ilp_packet_type, PacketType::Fulfill);
        assert_eq!(
            r.frames,
            vec![
                Frame::StreamMaxMoney {
                    stream_id: 1,
                    receive_max: u64::MAX,
                    total_received: 40
                },
                Frame::StreamMaxMoney {
                    stream_id: 3,
                    receive_max: u64::MAX,
                    total_received: 40
                },
            ]
        );
    }

    #[test]
    fn only_fulfills_carry_the_receipt_on_its_stream() {
        let setup = crate::stream::receipt::ReceiptSetup {
            nonce: [1; 16],
            secret: [2; 32],
        };
        let receipt = crate::stream::receipt::create_receipt(&setup, 1, 77);
        let paying = request(5, vec![money(1)]);
        let facts = ReplyFacts {
            fulfill: true,
            received_amount: 5,
            asset: None,
            close_connection: false,
            max_money: None,
            receipt: Some(&receipt),
        };
        assert_eq!(
            reply(&paying, &facts).frames,
            vec![Frame::StreamReceipt {
                stream_id: 1,
                receipt: receipt.to_vec()
            }]
        );
        let refused = ReplyFacts {
            fulfill: false,
            ..facts
        };
        assert!(reply(&paying, &refused).frames.is_empty());
    }
}
