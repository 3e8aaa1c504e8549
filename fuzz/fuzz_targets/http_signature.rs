//! HTTP message signatures: `Signature-Input` and `Signature` headers (and
//! the digest) from the input, parsed and verified against a fixed key:
//! never a panic, only an error.
#![no_main]

use http::{HeaderMap, HeaderValue, Method};
use libfuzzer_sys::fuzz_target;
use opd_httpsig::{parse_signature, verify_content_digest, RequestParts, SigningKey, VerifyPolicy};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let mut parts = text.splitn(3, '\n');
    let input = parts.next().unwrap_or_default();
    let signature = parts.next().unwrap_or_default();
    let body = parts.next().unwrap_or_default().as_bytes();
    let mut headers = HeaderMap::new();
    for (name, value) in [
        ("signature-input", input),
        ("signature", signature),
        ("content-digest", input),
        ("authorization", "GNAP token"),
    ] {
        if let Ok(v) = HeaderValue::from_str(value) {
            headers.insert(name, v);
        }
    }
    let method = Method::POST;
    let request = RequestParts::new(
        &method,
        "https://rs.example/incoming-payments",
        &headers,
        Some(body),
    );
    let _ = verify_content_digest(input, body);
    if let Ok(parsed) = parse_signature(&request, &VerifyPolicy::default(), 1_700_000_000) {
        let key = SigningKey::from_bytes(&[9; 32]).verifying_key();
        let _ = parsed.verify(&key);
    }
});
