//! Money on the wire: amounts, assets and decimal rates parse or fail
//! cleanly, and conversions never panic or overflow silently.
#![no_main]

use libfuzzer_sys::fuzz_target;
use opd_core::{Amount, Rate};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let mut parts = text.splitn(3, ' ');
    let value = parts.next().unwrap_or_default();
    let code = parts.next().unwrap_or_default();
    let rest = parts.next().unwrap_or_default();
    let _ = Amount::parse(value, code, i64::from(data.first().copied().unwrap_or(0)));
    if let Ok(rate) = Rate::parse(rest) {
        let v = value.parse::<u64>().unwrap_or(u64::MAX);
        let (from, to) = (
            data.first().copied().unwrap_or(0),
            data.last().copied().unwrap_or(0),
        );
        let _ = rate.convert_floor(v, from, to);
        let _ = rate.convert_ceil_inverse(v, from, to);
    }
});
