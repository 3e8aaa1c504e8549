//! ILP packets (OER): any bytes decode to a packet or an error, never a
//! panic; the encoding is canonical, so a packet that decodes re-encodes to
//! exactly the input bytes.
//!
//! Why that holds: the decoder accepts only the shortest OER length
//! prefixes, refuses trailing bytes and checks every field (timestamp,
//! address, code) against the one form the encoder writes. The single
//! exception is a Reject whose `message` is not UTF-8: it is decoded
//! lossily (RFC 27 leniency), so its bytes change; for it the check is
//! that the re-encoded packet decodes to the same packet and re-encodes to
//! the same bytes again.
#![no_main]

use libfuzzer_sys::fuzz_target;
use opd_ilp::packet::{peek_destination, peek_type, AmountTooLarge, Packet};

fuzz_target!(|data: &[u8]| {
    let peeked_type = peek_type(data);
    let peeked_destination = peek_destination(data);
    if let Ok(f08) = AmountTooLarge::decode(data) {
        assert_eq!(&f08.encode()[..], data);
    }
    let Ok(packet) = Packet::decode(data) else {
        return;
    };
    assert_eq!(peeked_type, Ok(packet.packet_type()));
    if let Packet::Prepare(prepare) = &packet {
        assert_eq!(peeked_destination, Ok(prepare.destination.as_str()));
    }
    let encoded = packet.encode();
    let lossy_message =
        matches!(&packet, Packet::Reject(r) if r.message.as_bytes() != raw_message(data));
    if lossy_message {
        let again = Packet::decode(&encoded).expect("an encoded packet decodes");
        assert_eq!(again, packet);
        assert_eq!(again.encode(), encoded);
    } else {
        assert_eq!(encoded, data, "a decoded packet re-encodes to its bytes");
    }
});

/// The raw `message` bytes of a Reject that decoded: type byte, envelope
/// length, 3-byte code, `triggeredBy`, then `message`. Read here with a
/// minimal OER length reader so the check does not depend on the decoder.
fn raw_message(data: &[u8]) -> &[u8] {
    fn var_octets(buf: &[u8]) -> (&[u8], &[u8]) {
        let (len, header) = match buf[0] {
            n if n < 0x80 => (usize::from(n), 1),
            n => {
                let k = usize::from(n & 0x7f);
                let len = buf[1..=k]
                    .iter()
                    .fold(0usize, |acc, b| (acc << 8) | usize::from(*b));
                (len, 1 + k)
            }
        };
        buf[header..].split_at(len)
    }
    let (contents, _) = var_octets(&data[1..]);
    let (_triggered_by, rest) = var_octets(&contents[3..]);
    var_octets(rest).0
}
