//! HTTP message signatures: `Signature-Input` and `Signature` headers (and
//! the digest) from the input, parsed and verified against a fixed key:
//! never a panic, only an error. Properties checked:
//!
//! - parsing is deterministic: the same request parses to the same
//!   [`ParsedSignature`](opd_httpsig::ParsedSignature) twice;
//! - the signature base is deterministic: rebuilt from the parsed
//!   components and `@signature-params` text, it is byte for byte the base
//!   the parser built (there is no public Signature-Input serializer, so
//!   the exact `@signature-params` text is what is compared);
//! - signing round-trips: a request signed with a key id and an
//!   `Authorization` value taken from the input parses, carries that key
//!   id, and verifies with the key's public half.
#![no_main]

use http::{HeaderMap, HeaderValue, Method};
use libfuzzer_sys::fuzz_target;
use opd_httpsig::{
    build_signature_base, parse_signature, sign_request, verify_content_digest, RequestParts,
    SigError, SigningKey, VerifyPolicy,
};

const URI: &str = "https://rs.example/incoming-payments";
const NOW: u64 = 1_700_000_000;

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
    let request = RequestParts::new(&method, URI, &headers, Some(body));
    let _ = verify_content_digest(input, body);
    let key = SigningKey::from_bytes(&[9; 32]);
    let policy = VerifyPolicy::default();
    let first = parse_signature(&request, &policy, NOW);
    assert_eq!(
        first,
        parse_signature(&request, &policy, NOW),
        "parsing is deterministic"
    );
    if let Ok(parsed) = first {
        let base = build_signature_base(&request, parsed.components(), parsed.signature_params())
            .expect("the parser built this base already");
        assert_eq!(base, parsed.signature_base());
        let _ = parsed.verify(&key.verifying_key());
    }

    // Sign a request with the input's second line as the key id and its
    // first as the Authorization value, then read it back.
    let mut to_sign = HeaderMap::new();
    if let Ok(v) = HeaderValue::from_str(input) {
        to_sign.insert("authorization", v);
    }
    let body = Some(body).filter(|b| !b.is_empty());
    match sign_request(&method, URI, &to_sign, body, &key, signature, NOW) {
        Ok(signed) => {
            let mut sent = to_sign.clone();
            signed
                .apply_to(&mut sent)
                .expect("signed headers are valid values");
            let request = RequestParts::new(&method, URI, &sent, body);
            let parsed = parse_signature(&request, &policy, NOW).expect("a signed request parses");
            assert_eq!(parsed.keyid(), signature);
            assert!(!parsed.used_compat_format());
            parsed
                .verify(&key.verifying_key())
                .expect("a signed request verifies");
        }
        Err(e) => assert_eq!(e, SigError::InvalidKeyId, "only the key id can be refused"),
    }
});
