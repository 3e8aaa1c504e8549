//! ISO 8601 repeating intervals and durations (grant limits): no panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use opd_gnap::{IsoDuration, RepeatingInterval};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let _ = IsoDuration::parse(&text);
    let _ = RepeatingInterval::parse(&text);
});
