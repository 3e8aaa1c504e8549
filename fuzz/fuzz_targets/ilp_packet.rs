//! ILP packets (OER): any bytes decode to a packet or an error, never a
//! panic, and a packet that decodes re-encodes to something that decodes
//! to the same packet.
#![no_main]

use libfuzzer_sys::fuzz_target;
use opd_ilp::packet::{peek_destination, peek_type, AmountTooLarge, Packet};

fuzz_target!(|data: &[u8]| {
    let _ = peek_type(data);
    let _ = peek_destination(data);
    let _ = AmountTooLarge::decode(data);
    if let Ok(packet) = Packet::decode(data) {
        let again = Packet::decode(&packet.encode()).expect("an encoded packet decodes");
        assert_eq!(again, packet);
    }
});
