//! Open Payments request bodies (`POST /incoming-payments`, `/quotes`,
//! `/outgoing-payments`): any bytes are read as each body, and the values
//! found are parsed as the handlers parse them (amounts, `expiresAt`,
//! metadata size), without a panic. Properties: an amount that parses
//! gives back its exact wire form, and a parsed `expiresAt` survives an
//! RFC 3339 round trip.
#![no_main]

use libfuzzer_sys::fuzz_target;
use opd_core::requests::{
    CreateIncomingPaymentRequest, CreateOutgoingPaymentRequest, CreateQuoteRequest,
};
use opd_core::{Amount, AmountWire, Timestamp};

fn amount(wire: &Option<AmountWire>) {
    if let Some(w) = wire {
        if let Ok(a) = Amount::try_from(w) {
            // Only canonical values parse, so nothing is lost.
            assert_eq!(&AmountWire::from(&a), w);
        }
    }
}

fn metadata(m: &Option<opd_core::incoming_payment::Metadata>) {
    if let Some(m) = m {
        let _ = serde_json::Value::Object(m.clone()).to_string().len();
    }
}

fuzz_target!(|data: &[u8]| {
    if let Ok(r) = serde_json::from_slice::<CreateIncomingPaymentRequest>(data) {
        amount(&r.incoming_amount);
        if let Some(t) = &r.expires_at {
            if let Ok(ts) = Timestamp::parse_rfc3339(t) {
                // Shown in UTC to the millisecond, which is what was kept.
                assert_eq!(Timestamp::parse_rfc3339(&ts.to_rfc3339()), Ok(ts));
            }
        }
        metadata(&r.metadata);
    }
    if let Ok(r) = serde_json::from_slice::<CreateQuoteRequest>(data) {
        amount(&r.debit_amount);
        amount(&r.receive_amount);
    }
    if let Ok(r) = serde_json::from_slice::<CreateOutgoingPaymentRequest>(data) {
        amount(&r.debit_amount);
        metadata(&r.metadata);
    }
});
