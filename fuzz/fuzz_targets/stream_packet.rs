//! STREAM packets and frames, in clear and encrypted: no panic on any
//! bytes, and decoded packets survive a round trip.
#![no_main]

use libfuzzer_sys::fuzz_target;
use opd_ilp::StreamPacket;

fuzz_target!(|data: &[u8]| {
    if let Ok(packet) = StreamPacket::decode(data) {
        let again = StreamPacket::decode(&packet.encode()).expect("an encoded packet decodes");
        assert_eq!(again.sequence, packet.sequence);
        assert_eq!(again.prepare_amount, packet.prepare_amount);
    }
    let _ = StreamPacket::decrypt_and_decode(&[7; 32], data);
});
