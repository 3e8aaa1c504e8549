//! STREAM packets and frames, in clear and encrypted: no panic on any
//! bytes, and a decoded packet survives a round trip exactly.
//!
//! The STREAM decoder is lenient on purpose (RFC 29 and
//! `ilp-protocol-stream`): it skips unknown frames, ignores bytes after the
//! last frame and after a known frame's fields, accepts var-uints with
//! leading zero bytes, reads non-UTF-8 text lossily and saturates two
//! maxima above 2^64 − 1. So decoded input does not in general re-encode
//! to the same bytes. What is checked instead, for every input that
//! decodes to a packet `p`:
//!
//! - `decode(encode(p)) == p` (every field and frame, not only a few);
//! - `encode` is stable: `encode(decode(encode(p))) == encode(p)`;
//! - encrypted with a fixed key and IV, it decrypts to the same packet.
#![no_main]

use libfuzzer_sys::fuzz_target;
use opd_ilp::stream::MAX_PLAINTEXT_LEN;
use opd_ilp::StreamPacket;

const SECRET: [u8; 32] = [7; 32];

fuzz_target!(|data: &[u8]| {
    if let Ok(packet) = StreamPacket::decode(data) {
        let encoded = packet.encode();
        let again = StreamPacket::decode(&encoded).expect("an encoded packet decodes");
        assert_eq!(again, packet);
        assert_eq!(again.encode(), encoded, "encoding is stable");
        if encoded.len() <= MAX_PLAINTEXT_LEN {
            let sealed = packet
                .encrypt_with(&SECRET, [3; 12])
                .expect("fits in an ILP packet");
            assert_eq!(
                StreamPacket::decrypt_and_decode(&SECRET, &sealed),
                Ok(packet)
            );
        }
    }
    let _ = StreamPacket::decrypt_and_decode(&SECRET, data);
});
