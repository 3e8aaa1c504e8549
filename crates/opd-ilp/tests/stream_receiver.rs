//! One STREAM exchange end to end, with no I/O: a sender pays and probes
//! an incoming payment's credentials, and the receiver answers with the
//! pure helpers of `opd_ilp::stream::receiver`. This is the sequence the
//! I/O-side receiver follows.
#![expect(clippy::unwrap_used, reason = "tests fail loudly by design")]

use opd_ilp::stream::receiver::{assess, reply, ReplyFacts, Verdict};
use opd_ilp::{
    condition_for, condition_of, decode_destination, fulfillment_for, generate_credentials,
    ErrorCode, Frame, Fulfill, IlpAddress, Packet, PacketType, Prepare, Reject, StreamPacket,
    StreamSecret, Timestamp,
};

const TAG: &str = "6a0e5c1c-3f0a-4c55-8a35-4f0b9a2b7e11";

fn server() -> IlpAddress {
    "test.opd".parse().unwrap()
}

/// The receiver: ILP Prepare bytes in, ILP reply bytes out. A real
/// receiver would also credit `prepare.amount` to the payment before
/// fulfilling a `Verdict::Money` packet.
fn receive(secret: &StreamSecret, prepare_bytes: &[u8], reply_iv: [u8; 12]) -> Vec<u8> {
    let prepare = Prepare::decode(prepare_bytes).unwrap();
    let reject = |code: ErrorCode, data: Vec<u8>| {
        Reject {
            code,
            triggered_by: Some(server()),
            message: String::new(),
            data,
        }
        .encode()
    };
    let token = match decode_destination(secret, &server(), prepare.destination.as_str()) {
        Ok(token) => token,
        Err(e) => return reject(e.reject_code().unwrap(), vec![]),
    };
    assert_eq!(token.payment_tag, TAG);
    let Ok(request) = StreamPacket::decrypt_and_decode(&token.shared_secret, &prepare.data) else {
        return reject(ErrorCode::F06_UNEXPECTED_PAYMENT, vec![]);
    };
    let fulfillment = fulfillment_for(&token.shared_secret, &prepare.data);
    let verdict = assess(
        &request,
        prepare.amount,
        prepare.is_fulfilled_by(&fulfillment),
    );
    if verdict == Verdict::NotAPrepare {
        return reject(ErrorCode::F00_BAD_REQUEST, vec![]);
    }
    let fulfill = matches!(verdict, Verdict::ZeroAmount | Verdict::Money);
    let asset = token.asset.as_ref().map(|(c, s)| (c.as_str(), *s));
    let facts = ReplyFacts {
        fulfill,
        received_amount: prepare.amount,
        asset,
        close_connection: verdict == Verdict::ClosedBySender,
        max_money: None,
        receipt: None,
    };
    let data = reply(&request, &facts)
        .encrypt_with(&token.shared_secret, reply_iv)
        .unwrap();
    match verdict.reject_code() {
        None => Fulfill { fulfillment, data }.encode(),
        Some(code) => reject(code, data),
    }
}

/// The sender's Prepare for a STREAM request; `probe` replaces the
/// condition with one nobody can fulfill.
fn send(
    destination: &IlpAddress,
    shared_secret: &[u8; 32],
    amount: u64,
    request: &StreamPacket,
    probe: bool,
) -> (Prepare, Vec<u8>) {
    let data = request.encrypt_with(shared_secret, [0x11; 12]).unwrap();
    let execution_condition = if probe {
        [0x42; 32]
    } else {
        condition_for(shared_secret, &data)
    };
    let prepare = Prepare {
        amount,
        expires_at: Timestamp::from_unix_millis(1_767_225_600_000).unwrap(),
        execution_condition,
        destination: destination.clone(),
        data,
    };
    let bytes = prepare.encode();
    (prepare, bytes)
}

#[test]
fn pay_probe_and_close() {
    let secret = StreamSecret::from_bytes([5; 32]);
    let creds = generate_credentials(&secret, &server(), TAG, Some(("USD", 2)), [7; 12]).unwrap();

    // 1. A probe asking for asset details: F99, with the asset and the
    //    amount that arrived.
    let probe = StreamPacket {
        sequence: 1,
        ilp_packet_type: PacketType::Prepare,
        prepare_amount: 0,
        frames: vec![Frame::ConnectionNewAddress {
            source_account: String::new(),
        }],
    };
    let (_, bytes) = send(&creds.ilp_address, &creds.shared_secret, 1000, &probe, true);
    let Packet::Reject(r) = Packet::decode(&receive(&secret, &bytes, [1; 12])).unwrap() else {
        panic!("probe must be rejected");
    };
    assert_eq!(r.code, ErrorCode::F99_APPLICATION_ERROR);
    let answer = StreamPacket::decrypt_and_decode(&creds.shared_secret, &r.data).unwrap();
    assert_eq!(answer.sequence, 1);
    assert_eq!(answer.ilp_packet_type, PacketType::Reject);
    assert_eq!(answer.prepare_amount, 1000);
    assert_eq!(
        answer.frames,
        vec![Frame::ConnectionAssetDetails {
            source_asset_code: "USD".into(),
            source_asset_scale: 2
        }]
    );

    // 2. Money: fulfilled, and the fulfillment matches the condition.
    let pay = StreamPacket {
        sequence: 2,
        ilp_packet_type: PacketType::Prepare,
        prepare_amount: 990,
        frames: vec![Frame::StreamMoney {
            stream_id: 1,
            shares: 1,
        }],
    };
    let (prepare, bytes) = send(&creds.ilp_address, &creds.shared_secret, 1000, &pay, false);
    let Packet::Fulfill(f) = Packet::decode(&receive(&secret, &bytes, [2; 12])).unwrap() else {
        panic!("payment must be fulfilled");
    };
    assert!(prepare.is_fulfilled_by(&f.fulfillment));
    assert_eq!(condition_of(&f.fulfillment), prepare.execution_condition);
    let answer = StreamPacket::decrypt_and_decode(&creds.shared_secret, &f.data).unwrap();
    assert_eq!(
        (
            answer.sequence,
            answer.ilp_packet_type,
            answer.prepare_amount
        ),
        (2, PacketType::Fulfill, 1000)
    );

    // 3. Less arrived than the sender's minimum: F99.
    let (_, bytes) = send(&creds.ilp_address, &creds.shared_secret, 980, &pay, false);
    let Packet::Reject(r) = Packet::decode(&receive(&secret, &bytes, [3; 12])).unwrap() else {
        panic!("below minimum must be rejected");
    };
    assert_eq!(r.code, ErrorCode::F99_APPLICATION_ERROR);

    // 4. The sender closes: F99 echoing ConnectionClose.
    let close = StreamPacket {
        sequence: 3,
        ilp_packet_type: PacketType::Prepare,
        prepare_amount: 0,
        frames: vec![Frame::ConnectionClose {
            code: opd_ilp::StreamErrorCode::NoError,
            message: String::new(),
        }],
    };
    let (_, bytes) = send(&creds.ilp_address, &creds.shared_secret, 0, &close, false);
    let Packet::Reject(r) = Packet::decode(&receive(&secret, &bytes, [4; 12])).unwrap() else {
        panic!("close must be rejected");
    };
    let answer = StreamPacket::decrypt_and_decode(&creds.shared_secret, &r.data).unwrap();
    assert_eq!(answer.frames, close.frames);

    // 5. Data under another shared secret: F06, no data.
    let (_, bytes) = send(&creds.ilp_address, &[9; 32], 10, &pay, false);
    let Packet::Reject(r) = Packet::decode(&receive(&secret, &bytes, [5; 12])).unwrap() else {
        panic!("undecryptable data must be rejected");
    };
    assert_eq!(
        (r.code, r.data.len()),
        (ErrorCode::F06_UNEXPECTED_PAYMENT, 0)
    );

    // 6. Not addressed to this server: F02.
    let elsewhere: IlpAddress = "test.other.x".parse().unwrap();
    let (_, bytes) = send(&elsewhere, &creds.shared_secret, 10, &pay, false);
    let Packet::Reject(r) = Packet::decode(&receive(&secret, &bytes, [6; 12])).unwrap() else {
        panic!("foreign destination must be rejected");
    };
    assert_eq!(r.code, ErrorCode::F02_UNREACHABLE);
}

/// A path between sender and receiver: converts at 9/10 (rounding down)
/// and refuses packets over 500 source units with F08 and data, as a
/// connector does. Returns the receiver's answer.
fn through_path(secret: &StreamSecret, prepare: &Prepare, iv: u8) -> Packet {
    if prepare.amount > 500 {
        let data = opd_ilp::AmountTooLarge {
            received_amount: prepare.amount,
            maximum_amount: 500,
        };
        return Packet::Reject(Reject {
            code: ErrorCode::F08_AMOUNT_TOO_LARGE,
            triggered_by: Some("test.connector".parse().unwrap()),
            message: String::new(),
            data: data.encode().to_vec(),
        });
    }
    let mut converted = prepare.clone();
    converted.amount = prepare.amount * 9 / 10;
    Packet::decode(&receive(secret, &converted.encode(), [iv; 12])).unwrap()
}

#[test]
fn a_sender_quotes_and_pays_through_a_path_with_a_rate_and_a_max_packet() {
    use opd_ilp::stream::sender::{
        delivery, fixed_delivery, min_delivery, min_rate, probe_amounts, read_answer, Answer,
        Delivery, MaxPacket, RateBounds, Ratio,
    };
    let secret = StreamSecret::from_bytes([5; 32]);
    let creds = generate_credentials(&secret, &server(), TAG, Some(("EUR", 2)), [7; 12]).unwrap();
    let shared = creds.shared_secret;
    let answer_of = |packet: Packet, sequence: u64, condition: [u8; 32]| match packet {
        Packet::Fulfill(f) => read_answer(&shared, sequence, &condition, Ok(&f)),
        Packet::Reject(r) => read_answer(&shared, sequence, &condition, Err(&r)),
        Packet::Prepare(_) => panic!("a Prepare is no answer"),
    };

    // Probing: the largest amounts hit the path's maximum first.
    let mut max = MaxPacket::Unknown;
    let mut bounds: Option<RateBounds> = None;
    let mut sequence = 0;
    let mut asset = None;
    let amounts: Vec<u64> = probe_amounts(max).collect();
    for amount in amounts {
        if amount > max.limit() {
            continue;
        }
        sequence += 1;
        let request = opd_ilp::stream::sender::probe_request(sequence);
        let (prepare, _) = send(&creds.ilp_address, &shared, amount, &request, true);
        let condition = prepare.execution_condition;
        match answer_of(through_path(&secret, &prepare, 1), sequence, condition) {
            Answer::TooLarge(data) => max = max.learn(amount, data.as_ref()),
            Answer::Refused {
                received, frames, ..
            } => {
                bounds = Some(match bounds {
                    None => RateBounds::from_probe(amount, received).unwrap(),
                    Some(b) => b.narrow(amount, received),
                });
                asset = asset.or(frames.into_iter().find_map(|f| match f {
                    Frame::ConnectionAssetDetails {
                        source_asset_code,
                        source_asset_scale,
                    } => Some((source_asset_code, source_asset_scale)),
                    _ => None,
                }));
            }
            other => panic!("probe of {amount}: {other:?}"),
        }
    }
    assert_eq!(max, MaxPacket::Precise(500));
    assert_eq!(asset, Some(("EUR".to_owned(), 2)));
    let bounds = bounds.unwrap();
    assert_eq!(bounds.low, Ratio::new(9, 10).unwrap());

    // Quote 1000 EUR cents to deliver at 0.9 less 1 %.
    let minimum = min_rate(Ratio::new(9, 10).unwrap(), 100, 2, 2).unwrap();
    opd_ilp::stream::sender::check_rate(bounds, minimum).unwrap();
    let quote = fixed_delivery(1000, minimum).unwrap();
    assert_eq!(quote.max_source, 1123);

    // Pay in packets within the maximum, sized by the probed rate (so the
    // last one does not overshoot) and each asking for at least the
    // minimum rate, until the receiver has what was quoted.
    let (mut sent, mut delivered) = (0u64, 0u64);
    while delivered < quote.min_delivery {
        let left_to_deliver = quote.min_delivery - delivered;
        let amount = bounds
            .low
            .ceil_div(left_to_deliver)
            .unwrap()
            .min(max.limit())
            .min(quote.max_source - sent);
        let minimum_here = min_delivery(amount, minimum).unwrap();
        sequence += 1;
        let request = opd_ilp::stream::sender::money_request(sequence, minimum_here);
        let (prepare, _) = send(&creds.ilp_address, &shared, amount, &request, false);
        let condition = prepare.execution_condition;
        match answer_of(through_path(&secret, &prepare, 2), sequence, condition) {
            Answer::Fulfilled { claimed, .. } => {
                let Delivery::Counted(received) = delivery(claimed, minimum_here, u64::MAX) else {
                    panic!("an honest receiver claims at least the minimum");
                };
                assert!(received >= minimum_here);
                sent += amount;
                delivered += received;
            }
            other => panic!("packet of {amount}: {other:?}"),
        }
    }
    assert!(delivered >= quote.min_delivery);
    assert!(sent <= quote.max_source, "{sent} > {}", quote.max_source);
    assert_eq!((sent, delivered), (1112, 1000));
}
