//! GNAP grant requests: any JSON body is read and validated (access
//! items, limits, intervals, interaction, finish URIs) without a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use opd_gnap::wire::GrantRequest;
use opd_gnap::ValidatedGrantRequest;

fuzz_target!(|data: &[u8]| {
    if let Ok(request) = serde_json::from_slice::<GrantRequest>(data) {
        let _ = ValidatedGrantRequest::parse(&request);
    }
});
