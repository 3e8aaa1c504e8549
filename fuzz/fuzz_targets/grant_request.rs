//! GNAP grant requests: any JSON body is read and validated (access
//! items, limits, intervals, interaction, finish URIs) without a panic.
//! Properties: a request that was read serializes to JSON that reads back
//! to the same request, and validation gives the same answer for both.
#![no_main]

use libfuzzer_sys::fuzz_target;
use opd_gnap::wire::GrantRequest;
use opd_gnap::ValidatedGrantRequest;

fuzz_target!(|data: &[u8]| {
    if let Ok(request) = serde_json::from_slice::<GrantRequest>(data) {
        let validated = ValidatedGrantRequest::parse(&request);
        let json = serde_json::to_vec(&request).expect("a read request serializes");
        let again: GrantRequest = serde_json::from_slice(&json).expect("its JSON reads back");
        assert_eq!(again, request);
        assert_eq!(ValidatedGrantRequest::parse(&again), validated);
    }
});
