//! Property tests for the ILP and STREAM codecs: no input makes a decoder
//! panic, valid packets survive encode → decode unchanged, and what decodes
//! is canonical.
#![expect(clippy::unwrap_used, reason = "tests fail loudly by design")]

use opd_ilp::packet::{peek_destination, peek_type};
use opd_ilp::{
    AmountTooLarge, ErrorCode, Frame, Fulfill, IlpAddress, Packet, PacketType, Prepare, Reject,
    StreamErrorCode, StreamPacket, Timestamp,
};
use proptest::collection::vec;
use proptest::prelude::*;

fn address() -> impl Strategy<Value = IlpAddress> {
    (
        prop::sample::select(vec![
            "g", "test", "test3", "example", "private", "peer", "local",
        ]),
        vec("[a-zA-Z0-9_~-]{1,12}", 1..5),
    )
        .prop_map(|(scheme, segments)| {
            IlpAddress::new(format!("{scheme}.{}", segments.join("."))).unwrap()
        })
}

fn timestamp() -> impl Strategy<Value = Timestamp> {
    (Timestamp::MIN.unix_millis()..=Timestamp::MAX.unix_millis())
        .prop_map(|ms| Timestamp::from_unix_millis(ms).unwrap())
}

/// Lengths around the one- and two-byte OER length boundaries.
fn data() -> impl Strategy<Value = Vec<u8>> {
    vec(any::<u8>(), 0..400)
}

fn error_code() -> impl Strategy<Value = ErrorCode> {
    "[FTR][0-9]{2}".prop_map(|s| s.parse().unwrap())
}

fn prepare() -> impl Strategy<Value = Prepare> {
    (
        any::<u64>(),
        timestamp(),
        any::<[u8; 32]>(),
        address(),
        data(),
    )
        .prop_map(
            |(amount, expires_at, execution_condition, destination, data)| Prepare {
                amount,
                expires_at,
                execution_condition,
                destination,
                data,
            },
        )
}

fn fulfill() -> impl Strategy<Value = Fulfill> {
    (any::<[u8; 32]>(), data()).prop_map(|(fulfillment, data)| Fulfill { fulfillment, data })
}

fn reject() -> impl Strategy<Value = Reject> {
    (
        error_code(),
        prop::option::of(address()),
        any::<String>(),
        data(),
    )
        .prop_map(|(code, triggered_by, message, data)| Reject {
            code,
            triggered_by,
            message,
            data,
        })
}

fn packet() -> impl Strategy<Value = Packet> {
    prop_oneof![
        prepare().prop_map(Packet::Prepare),
        fulfill().prop_map(Packet::Fulfill),
        reject().prop_map(Packet::Reject),
    ]
}

fn stream_code() -> impl Strategy<Value = StreamErrorCode> {
    any::<u8>().prop_map(StreamErrorCode::from)
}

fn frame() -> impl Strategy<Value = Frame> {
    let n = any::<u64>;
    prop_oneof![
        (stream_code(), any::<String>())
            .prop_map(|(code, message)| Frame::ConnectionClose { code, message }),
        any::<String>().prop_map(|source_account| Frame::ConnectionNewAddress { source_account }),
        n().prop_map(|max_offset| Frame::ConnectionMaxData { max_offset }),
        n().prop_map(|max_offset| Frame::ConnectionDataBlocked { max_offset }),
        n().prop_map(|max_stream_id| Frame::ConnectionMaxStreamId { max_stream_id }),
        n().prop_map(|max_stream_id| Frame::ConnectionStreamIdBlocked { max_stream_id }),
        (any::<String>(), any::<u8>()).prop_map(|(source_asset_code, source_asset_scale)| {
            Frame::ConnectionAssetDetails {
                source_asset_code,
                source_asset_scale,
            }
        }),
        (n(), stream_code(), any::<String>()).prop_map(|(stream_id, code, message)| {
            Frame::StreamClose {
                stream_id,
                code,
                message,
            }
        }),
        (n(), n()).prop_map(|(stream_id, shares)| Frame::StreamMoney { stream_id, shares }),
        (n(), n(), n()).prop_map(|(stream_id, receive_max, total_received)| {
            Frame::StreamMaxMoney {
                stream_id,
                receive_max,
                total_received,
            }
        }),
        (n(), n(), n()).prop_map(|(stream_id, send_max, total_sent)| {
            Frame::StreamMoneyBlocked {
                stream_id,
                send_max,
                total_sent,
            }
        }),
        (n(), n(), data()).prop_map(|(stream_id, offset, data)| Frame::StreamData {
            stream_id,
            offset,
            data,
        }),
        (n(), n()).prop_map(|(stream_id, max_offset)| Frame::StreamMaxData {
            stream_id,
            max_offset
        }),
        (n(), n()).prop_map(|(stream_id, max_offset)| Frame::StreamDataBlocked {
            stream_id,
            max_offset
        }),
        (n(), data()).prop_map(|(stream_id, receipt)| Frame::StreamReceipt { stream_id, receipt }),
    ]
}

fn stream_packet() -> impl Strategy<Value = StreamPacket> {
    (
        any::<u64>(),
        prop::sample::select(vec![
            PacketType::Prepare,
            PacketType::Fulfill,
            PacketType::Reject,
        ]),
        any::<u64>(),
        vec(frame(), 0..6),
    )
        .prop_map(
            |(sequence, ilp_packet_type, prepare_amount, frames)| StreamPacket {
                sequence,
                ilp_packet_type,
                prepare_amount,
                frames,
            },
        )
}

/// A valid encoding with a few bytes overwritten, removed or appended:
/// closer to real garbage than uniformly random bytes.
fn mutated(valid: Vec<u8>, edits: &[(usize, u8, u8)]) -> Vec<u8> {
    let mut bytes = valid;
    for &(at, kind, value) in edits {
        if bytes.is_empty() {
            break;
        }
        let at = at % bytes.len();
        match kind % 3 {
            0 => bytes[at] = value,
            1 => {
                bytes.remove(at);
            }
            _ => bytes.insert(at, value),
        }
    }
    bytes
}

fn edits() -> impl Strategy<Value = Vec<(usize, u8, u8)>> {
    vec((any::<usize>(), any::<u8>(), any::<u8>()), 1..4)
}

/// Runs every ILP decoder on `bytes`; whatever decodes must re-encode to a
/// packet that decodes to the same value. Prepares and Fulfills have a
/// single encoding, so they must re-encode to exactly `bytes`.
fn check_ilp_decoders(bytes: &[u8]) -> Result<(), TestCaseError> {
    let _ = peek_type(bytes);
    let _ = peek_destination(bytes);
    let _ = Prepare::decode(bytes);
    let _ = Fulfill::decode(bytes);
    let _ = Reject::decode(bytes);
    if let Ok(p) = Packet::decode(bytes) {
        let again = p.encode();
        prop_assert_eq!(Packet::decode(&again), Ok(p.clone()));
        if !matches!(p, Packet::Reject(_)) {
            prop_assert_eq!(&again[..], bytes);
        }
    }
    Ok(())
}

/// Runs the STREAM decoders on `bytes`; whatever decodes must survive a
/// re-encode.
fn check_stream_decoder(bytes: &[u8]) -> Result<(), TestCaseError> {
    if let Ok(p) = StreamPacket::decode(bytes) {
        prop_assert_eq!(StreamPacket::decode(&p.encode()), Ok(p));
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn ilp_packets_round_trip(p in packet()) {
        let bytes = p.encode();
        prop_assert_eq!(peek_type(&bytes), Ok(p.packet_type()));
        prop_assert_eq!(Packet::decode(&bytes), Ok(p.clone()));
        if let Packet::Prepare(prepare) = &p {
            prop_assert_eq!(peek_destination(&bytes), Ok(prepare.destination.as_str()));
        }
    }

    #[test]
    fn stream_packets_round_trip(p in stream_packet(), iv in any::<[u8; 12]>(), secret in any::<[u8; 32]>()) {
        let bytes = p.encode();
        prop_assert_eq!(StreamPacket::decode(&bytes), Ok(p.clone()));
        let data = p.encrypt_with(&secret, iv).unwrap();
        prop_assert_eq!(StreamPacket::decrypt_and_decode(&secret, &data), Ok(p));
    }

    #[test]
    fn frames_round_trip(f in frame()) {
        let mut bytes = Vec::new();
        f.encode_to(&mut bytes);
        prop_assert_eq!(bytes.len(), f.encoded_len());
        // Type byte, then a var-octet-string of contents.
        let mut r = opd_ilp::oer::Reader::new(&bytes[1..]);
        let contents = r.read_var_octet_string().unwrap();
        prop_assert!(r.is_empty());
        prop_assert_eq!(Frame::decode(bytes[0], contents), Ok(Some(f)));
    }

    #[test]
    fn amount_too_large_round_trips(received_amount in any::<u64>(), maximum_amount in any::<u64>()) {
        let d = AmountTooLarge { received_amount, maximum_amount };
        prop_assert_eq!(AmountTooLarge::decode(&d.encode()), Ok(d));
    }

    #[test]
    fn ilp_decoders_never_panic_on_random_bytes(bytes in vec(any::<u8>(), 0..200)) {
        check_ilp_decoders(&bytes)?;
    }

    #[test]
    fn ilp_decoders_never_panic_on_typed_random_bytes(ty in 12u8..=14, len in any::<u8>(), rest in vec(any::<u8>(), 0..200)) {
        // A plausible type and length prefix reach deeper into the decoders.
        let bytes = [&[ty, len % 0x80][..], &rest[..]].concat();
        check_ilp_decoders(&bytes)?;
    }

    #[test]
    fn ilp_decoders_never_panic_on_mutated_packets(p in packet(), edits in edits()) {
        check_ilp_decoders(&mutated(p.encode(), &edits))?;
    }

    #[test]
    fn stream_decoders_never_panic(bytes in vec(any::<u8>(), 0..200), secret in any::<[u8; 32]>()) {
        check_stream_decoder(&bytes)?;
        let _ = StreamPacket::decrypt_and_decode(&secret, &bytes);
    }

    #[test]
    fn stream_decoder_never_panics_on_mutated_packets(p in stream_packet(), edits in edits()) {
        check_stream_decoder(&mutated(p.encode(), &edits))?;
    }

    #[test]
    fn frame_decoder_never_panics(ty in any::<u8>(), contents in vec(any::<u8>(), 0..64)) {
        if let Ok(Some(f)) = Frame::decode(ty, &contents) {
            prop_assert_eq!(f.frame_type() as u8, ty);
        }
    }

    #[test]
    fn small_decoders_never_panic(bytes in vec(any::<u8>(), 0..40)) {
        let _ = AmountTooLarge::decode(&bytes);
        let _ = Timestamp::from_ilp_bytes(&bytes);
        if bytes.len() >= 3 {
            let _ = ErrorCode::from_bytes([bytes[0], bytes[1], bytes[2]]);
        }
    }

    #[test]
    fn timestamps_from_digits_never_panic(s in "[0-9]{17}") {
        if let Ok(t) = Timestamp::from_ilp_bytes(s.as_bytes()) {
            prop_assert_eq!(&t.to_ilp_bytes()[..], s.as_bytes());
        }
    }
}
