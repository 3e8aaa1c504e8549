//! Rejections: each check in `parse_signature` / `verify`, and replays.
#![expect(clippy::unwrap_used, reason = "tests fail loudly by design")]

mod common;

use common::*;
use http::{HeaderMap, Method};
use opd_httpsig::{
    content_digest, parse_signature, sign_request, Jwk, Jwks, ParsedSignature, RequestParts,
    SigError, SigningKey, VerifyPolicy,
};

const URI: &str = "https://rs.example/incoming-payments";
const BODY: &[u8] = br#"{"walletAddress":"https://w.example/alice"}"#;
const AUTH: &str = "GNAP OS9M2PMHKUR64TB8N6BW7OZB8CDFONP219RP1LT0";

/// A correctly signed POST with Authorization and a body.
fn signed_post(key: &SigningKey) -> HeaderMap {
    let mut h = headers(&[("authorization", AUTH)]);
    let signed = sign_request(&Method::POST, URI, &h, Some(BODY), key, KID, CREATED).unwrap();
    signed.apply_to(&mut h).unwrap();
    h
}

fn parse(
    method: &Method,
    uri: &str,
    h: &HeaderMap,
    body: Option<&[u8]>,
    now: u64,
) -> Result<ParsedSignature, SigError> {
    parse_signature(
        &RequestParts::new(method, uri, h, body),
        &VerifyPolicy::default(),
        now,
    )
}

fn parse_post(h: &HeaderMap, body: &[u8]) -> Result<ParsedSignature, SigError> {
    parse(&Method::POST, URI, h, Some(body), CREATED)
}

/// Signs a POST with Authorization and body, covering only `components`.
fn post_covering(key: &SigningKey, components: &[&str], extra_params: &str) -> HeaderMap {
    let mut h = headers(&[
        ("authorization", AUTH),
        ("content-type", "application/json"),
    ]);
    set(&mut h, "content-digest", &content_digest(BODY));
    set(&mut h, "content-length", &BODY.len().to_string());
    let params = format!(
        r#"{};keyid="{KID}";created={CREATED}{extra_params}"#,
        list(components)
    );
    sign_custom(
        &Method::POST,
        URI,
        &mut h,
        Some(BODY),
        key,
        "sig1",
        components,
        &params,
    );
    h
}

#[test]
fn baseline_is_valid() {
    let key = random_key();
    parse_post(&signed_post(&key), BODY)
        .unwrap()
        .verify(&key.verifying_key())
        .unwrap();
    let h = post_covering(
        &key,
        &["@method", "@target-uri", "authorization", "content-digest"],
        "",
    );
    parse_post(&h, BODY)
        .unwrap()
        .verify(&key.verifying_key())
        .unwrap();
}

#[test]
fn each_required_component_missing() {
    let key = random_key();
    let all = ["@method", "@target-uri", "authorization", "content-digest"];
    for missing in all {
        let comps: Vec<&str> = all.iter().copied().filter(|c| *c != missing).collect();
        let h = post_covering(&key, &comps, "");
        assert_eq!(
            parse_post(&h, BODY),
            Err(SigError::MissingComponent(missing.into())),
            "{missing}"
        );
    }
}

#[test]
fn authorization_and_digest_only_required_when_present() {
    let key = random_key();
    // GET without Authorization or body: @method + @target-uri suffice.
    let mut h = HeaderMap::new();
    let params = format!(
        r#"{};keyid="k";created={CREATED}"#,
        list(&["@method", "@target-uri"])
    );
    sign_custom(
        &Method::GET,
        URI,
        &mut h,
        None,
        &key,
        "sig1",
        &["@method", "@target-uri"],
        &params,
    );
    parse(&Method::GET, URI, &h, None, CREATED)
        .unwrap()
        .verify(&key.verifying_key())
        .unwrap();
    // Empty body counts as no body.
    parse(&Method::GET, URI, &h, Some(b""), CREATED).unwrap();
    // Adding an Authorization header makes it required.
    set(&mut h, "authorization", AUTH);
    assert_eq!(
        parse(&Method::GET, URI, &h, None, CREATED),
        Err(SigError::MissingComponent("authorization".into()))
    );
}

#[test]
fn tampered_body() {
    let key = random_key();
    let h = signed_post(&key);
    assert_eq!(
        parse_post(&h, br#"{"walletAddress":"https://w.example/mallory"}"#),
        Err(SigError::DigestMismatch)
    );
    // Attacker also recomputes the digest: the signature no longer matches.
    let evil: &[u8] = br#"{"walletAddress":"https://w.example/mallory"}"#;
    let mut h = h;
    set(&mut h, "content-digest", &content_digest(evil));
    assert_eq!(
        parse_post(&h, evil).unwrap().verify(&key.verifying_key()),
        Err(SigError::BadSignature)
    );
}

#[test]
fn wrong_or_missing_digest() {
    let key = random_key();
    let mut h = signed_post(&key);
    set(&mut h, "content-digest", &content_digest(b"something else"));
    assert_eq!(parse_post(&h, BODY), Err(SigError::DigestMismatch));
    set(&mut h, "content-digest", "sha-512=:AAAA:");
    assert!(matches!(
        parse_post(&h, BODY),
        Err(SigError::MalformedHeader {
            header: "Content-Digest",
            ..
        })
    ));
    set(&mut h, "content-digest", "md5=:AAAA:");
    assert!(matches!(
        parse_post(&h, BODY),
        Err(SigError::MalformedHeader {
            header: "Content-Digest",
            ..
        })
    ));
    h.remove("content-digest");
    assert_eq!(
        parse_post(&h, BODY),
        Err(SigError::MissingHeader("Content-Digest"))
    );
}

#[test]
fn wrong_key() {
    let key = random_key();
    let other = random_key();
    let parsed = parse_post(&signed_post(&key), BODY).unwrap();
    assert_eq!(
        parsed.verify(&other.verifying_key()),
        Err(SigError::BadSignature)
    );
    assert_eq!(
        parsed.verify(&Jwk::from_signing_key(&other, KID)),
        Err(SigError::BadSignature)
    );
    // Right key, wrong kid.
    assert_eq!(
        parsed.verify(&Jwk::from_signing_key(&key, "someone-else")),
        Err(SigError::UnknownKey(KID.into()))
    );
    assert_eq!(
        parsed.verify(&Jwks::default()),
        Err(SigError::UnknownKey(KID.into()))
    );
    // Right kid, unusable JWK.
    let mut bad = Jwk::from_signing_key(&key, KID);
    bad.crv = "X25519".into();
    assert!(matches!(
        parsed.verify(&[bad][..]),
        Err(SigError::InvalidKey(_))
    ));
}

#[test]
fn tampered_covered_parts() {
    let key = random_key();
    let vk = key.verifying_key();
    let mut h = signed_post(&key);
    set(&mut h, "authorization", "GNAP another-token");
    assert_eq!(
        parse_post(&h, BODY).unwrap().verify(&vk),
        Err(SigError::BadSignature)
    );

    let h = signed_post(&key);
    let p = parse(
        &Method::POST,
        "https://rs.example/outgoing-payments",
        &h,
        Some(BODY),
        CREATED,
    );
    assert_eq!(p.unwrap().verify(&vk), Err(SigError::BadSignature));
    let p = parse(&Method::PUT, URI, &h, Some(BODY), CREATED);
    assert_eq!(p.unwrap().verify(&vk), Err(SigError::BadSignature));

    // Changing created in Signature-Input changes @signature-params.
    let mut h = signed_post(&key);
    let input = h
        .get("signature-input")
        .unwrap()
        .to_str()
        .unwrap()
        .replace(&CREATED.to_string(), &(CREATED + 1).to_string());
    set(&mut h, "signature-input", &input);
    assert_eq!(
        parse_post(&h, BODY).unwrap().verify(&vk),
        Err(SigError::BadSignature)
    );
}

#[test]
fn freshness_window() {
    let key = random_key();
    let h = signed_post(&key);
    let at = |now| parse(&Method::POST, URI, &h, Some(BODY), now);
    assert!(at(CREATED + 300).is_ok());
    assert_eq!(
        at(CREATED + 301),
        Err(SigError::Stale {
            created: CREATED,
            now: CREATED + 301
        })
    );
    assert!(at(CREATED - 60).is_ok());
    assert_eq!(
        at(CREATED - 61),
        Err(SigError::Future {
            created: CREATED,
            now: CREATED - 61
        })
    );
    let lax = VerifyPolicy {
        max_age: std::time::Duration::from_secs(3600),
        ..VerifyPolicy::default()
    };
    let req = RequestParts::new(&Method::POST, URI, &h, Some(BODY));
    assert!(parse_signature(&req, &lax, CREATED + 3600).is_ok());
}

#[test]
fn expired() {
    let key = random_key();
    let comps = ["@method", "@target-uri", "authorization", "content-digest"];
    let h = post_covering(&key, &comps, &format!(";expires={}", CREATED + 10));
    let at = |now| parse(&Method::POST, URI, &h, Some(BODY), now);
    assert!(at(CREATED + 9).is_ok());
    assert_eq!(
        at(CREATED + 10),
        Err(SigError::Expired {
            expires: CREATED + 10,
            now: CREATED + 10
        })
    );
    let h = post_covering(&key, &comps, ";expires=\"soon\"");
    assert!(matches!(
        parse_post(&h, BODY),
        Err(SigError::MalformedHeader {
            header: "Signature-Input",
            ..
        })
    ));
}

#[test]
fn parameter_errors() {
    let key = random_key();
    let comps = ["@method", "@target-uri", "authorization", "content-digest"];
    let mut h = headers(&[("authorization", AUTH)]);
    set(&mut h, "content-digest", &content_digest(BODY));
    let cases = [
        (
            format!("{};created={CREATED}", list(&comps)),
            SigError::MissingKeyId,
        ),
        (
            format!(r#"{};keyid="";created={CREATED}"#, list(&comps)),
            SigError::MissingKeyId,
        ),
        (
            format!(r#"{};keyid="k""#, list(&comps)),
            SigError::MissingCreated,
        ),
        (
            format!(r#"{};keyid="k";created=-5"#, list(&comps)),
            SigError::InvalidCreated,
        ),
        (
            format!(r#"{};keyid="k";created="1700000000""#, list(&comps)),
            SigError::InvalidCreated,
        ),
        (
            format!(r#"{};keyid="k";created=1700000000.5"#, list(&comps)),
            SigError::InvalidCreated,
        ),
        (
            format!(
                r#"{};keyid="k";created={CREATED};alg="rsa-pss-sha512""#,
                list(&comps)
            ),
            SigError::UnsupportedAlg("rsa-pss-sha512".into()),
        ),
        (
            format!(
                r#"{};keyid="k";created={CREATED};alg="hmac-sha256""#,
                list(&comps)
            ),
            SigError::UnsupportedAlg("hmac-sha256".into()),
        ),
    ];
    for (params, err) in cases {
        sign_custom(
            &Method::POST,
            URI,
            &mut h,
            Some(BODY),
            &key,
            "sig1",
            &comps,
            &params,
        );
        assert_eq!(parse_post(&h, BODY), Err(err), "{params}");
    }
    // keyid must be a string.
    let params = format!("{};keyid=k;created={CREATED}", list(&comps));
    sign_custom(
        &Method::POST,
        URI,
        &mut h,
        Some(BODY),
        &key,
        "sig1",
        &comps,
        &params,
    );
    assert!(matches!(
        parse_post(&h, BODY),
        Err(SigError::MalformedHeader {
            header: "Signature-Input",
            ..
        })
    ));
}

#[test]
fn component_errors() {
    let h0 = headers(&[("authorization", AUTH)]);
    let base = ["@method", "@target-uri", "authorization"];
    let signed_with = |extra: &str| {
        let mut h = h0.clone();
        let comps: Vec<&str> = base.iter().copied().chain([extra]).collect();
        let params = format!(r#"{};keyid="k";created={CREATED}"#, list(&comps));
        h.insert("signature-input", format!("sig1={params}").parse().unwrap());
        h.insert(
            "signature",
            format!("sig1=:{}:", "A".repeat(86) + "==").parse().unwrap(),
        );
        parse(&Method::GET, URI, &h, None, CREATED)
    };
    assert_eq!(
        signed_with("content-type"),
        Err(SigError::ComponentNotPresent("content-type".into()))
    );
    assert_eq!(
        signed_with("@status"),
        Err(SigError::UnsupportedComponent("@status".into()))
    );
    assert_eq!(
        signed_with("@method"),
        Err(SigError::UnsupportedComponent("@method".into()))
    );
    assert_eq!(
        signed_with("Date"),
        Err(SigError::UnsupportedComponent("Date".into()))
    );
    assert_eq!(
        signed_with("@signature-params"),
        Err(SigError::UnsupportedComponent("@signature-params".into()))
    );
    // Component parameters are not supported.
    let mut h = h0.clone();
    h.insert(
        "signature-input",
        format!(r#"sig1=("@method" "@target-uri" "authorization";sf);keyid="k";created={CREATED}"#)
            .parse()
            .unwrap(),
    );
    h.insert("signature", "sig1=:AAAA:".parse().unwrap());
    assert!(matches!(
        parse(&Method::GET, URI, &h, None, CREATED),
        Err(SigError::UnsupportedComponent(_))
    ));
}

#[test]
fn missing_headers() {
    let key = random_key();
    let full = signed_post(&key);

    let mut h = full.clone();
    h.remove("signature-input");
    assert_eq!(
        parse_post(&h, BODY),
        Err(SigError::MissingHeader("Signature-Input"))
    );

    let mut h = full.clone();
    h.remove("signature");
    assert_eq!(
        parse_post(&h, BODY),
        Err(SigError::MissingHeader("Signature"))
    );

    let mut h = full;
    h.remove("signature");
    h.remove("signature-input");
    assert_eq!(
        parse_post(&h, BODY),
        Err(SigError::MissingHeader("Signature-Input"))
    );
}

#[test]
fn signature_label_mismatch() {
    let key = random_key();
    let mut h = signed_post(&key);
    let sig = h
        .get("signature")
        .unwrap()
        .to_str()
        .unwrap()
        .replace("sig1=", "sig2=");
    set(&mut h, "signature", &sig);
    assert_eq!(
        parse_post(&h, BODY),
        Err(SigError::MissingSignatureLabel("sig1".into()))
    );
}

#[test]
fn garbage_headers() {
    let key = random_key();
    let full = signed_post(&key);
    let garbage_inputs = [
        "",
        "garbage",
        "sig1",
        "sig1=",
        "sig1=:AAAA:",
        "sig1=(\"@method\"",
        "sig1=(\"@method\" \"@target-uri\");created=abc;keyid=\"k\"",
        "SIG1=(\"@method\")",
        "sig1=(\"@method\" \"@target-uri\"),",
        "sig1=(1 2 3);created=1;keyid=\"k\"",
    ];
    for g in garbage_inputs {
        let mut h = full.clone();
        h.insert(
            "signature-input",
            http::HeaderValue::from_bytes(g.as_bytes()).unwrap(),
        );
        let err = parse_post(&h, BODY).unwrap_err();
        assert!(
            matches!(
                err,
                SigError::MalformedHeader {
                    header: "Signature-Input",
                    ..
                } | SigError::MissingComponent(_)
            ),
            "{g:?}: {err:?}"
        );
    }
    let garbage_sigs = [
        "",
        "garbage!",
        "sig1=:AAAA:",
        "sig1=:!!!!:",
        "sig1=\"abc\"",
        "sig1=(:AAAA:)",
        "sig1=:AAAA",
    ];
    for g in garbage_sigs {
        let mut h = full.clone();
        h.insert("signature", http::HeaderValue::from_str(g).unwrap());
        let err = parse_post(&h, BODY).unwrap_err();
        assert!(
            matches!(
                err,
                SigError::MalformedHeader {
                    header: "Signature",
                    ..
                }
            ),
            "{g:?}: {err:?}"
        );
    }
    // Non-UTF-8 bytes (obs-text) in the headers.
    let mut h = full.clone();
    h.insert(
        "signature",
        http::HeaderValue::from_bytes(b"sig1=:\xff\xfe:").unwrap(),
    );
    assert!(matches!(
        parse_post(&h, BODY),
        Err(SigError::MalformedHeader {
            header: "Signature",
            ..
        })
    ));
}

/// What a caller's replay log relies on (opd's is `opd_service::access::replays`):
/// a resent request shows the same signature bytes for as long as it is
/// fresh, then goes stale; a new signature of the same request differs.
#[test]
fn a_replay_shows_the_same_signature_bytes_until_it_goes_stale() {
    let key = random_key();
    let policy = VerifyPolicy::default();
    let h = signed_post(&key);
    let parse = |h: &HeaderMap, now: u64| -> Result<Vec<u8>, SigError> {
        let parsed = parse_signature(
            &RequestParts::new(&Method::POST, URI, h, Some(BODY)),
            &policy,
            now,
        )?;
        parsed.verify(&key.verifying_key())?;
        Ok(parsed.signature_bytes().to_vec())
    };
    let first = parse(&h, CREATED).unwrap();
    assert_eq!(parse(&h, CREATED + 1), Ok(first.clone()));
    assert_eq!(parse(&h, CREATED + 300), Ok(first.clone()));
    assert!(matches!(
        parse(&h, CREATED + 301),
        Err(SigError::Stale { .. })
    ));
    // A fresh signature of the same request is another key for the log.
    let mut h2 = headers(&[("authorization", AUTH)]);
    sign_request(
        &Method::POST,
        URI,
        &h2.clone(),
        Some(BODY),
        &key,
        KID,
        CREATED + 1,
    )
    .unwrap()
    .apply_to(&mut h2)
    .unwrap();
    assert_ne!(parse(&h2, CREATED + 2).unwrap(), first);
}

#[test]
fn error_messages_read_as_sentences() {
    let prefix = "Signature validation error: ";
    let cases = [
        (
            SigError::MissingHeader("Signature-Input"),
            "missing Signature-Input header",
        ),
        (
            SigError::MissingComponent("authorization".into()),
            "signature does not cover required component authorization",
        ),
        (
            SigError::DigestMismatch,
            "content digest does not match the request body",
        ),
        (
            SigError::Stale {
                created: 1,
                now: 999,
            },
            "signature is too old",
        ),
        (SigError::BadSignature, "signature does not verify"),
        (SigError::UnknownKey("k".into()), "no key found for keyid k"),
        (SigError::Replayed, "signature has already been used"),
    ];
    for (err, text) in cases {
        assert_eq!(format!("{prefix}{err}"), format!("{prefix}{text}"));
    }
}

/// `h` with its signature's bytes replaced by `bytes`.
fn with_signature(h: &HeaderMap, bytes: &[u8; 64]) -> HeaderMap {
    use base64::Engine as _;
    let mut h = h.clone();
    let value = h["signature"].to_str().unwrap().to_owned();
    let label = value.split('=').next().unwrap();
    let encoded = base64::engine::general_purpose::STANDARD.encode(bytes);
    set(&mut h, "signature", &format!("{label}=:{encoded}:"));
    h
}

#[test]
fn a_signature_whose_s_is_not_canonical_is_refused() {
    let key = random_key();
    let h = signed_post(&key);
    let parsed = parse_post(&h, BODY).unwrap();
    let mut bytes: [u8; 64] = parsed.signature_bytes().try_into().unwrap();
    // S + L, the group's order: the same point, another encoding of S.
    const L: [u8; 32] = [
        0xed, 0xd3, 0xf5, 0x5c, 0x1a, 0x63, 0x12, 0x58, 0xd6, 0x9c, 0xf7, 0xa2, 0xde, 0xf9, 0xde,
        0x14, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x10,
    ];
    let mut carry = 0u16;
    for (s, l) in bytes[32..].iter_mut().zip(L) {
        let sum = u16::from(*s) + u16::from(l) + carry;
        *s = sum as u8;
        carry = sum >> 8;
    }
    assert_eq!(carry, 0);
    let forged = parse_post(&with_signature(&h, &bytes), BODY).unwrap();
    assert_eq!(
        forged.verify(&key.verifying_key()),
        Err(SigError::BadSignature)
    );
}

#[test]
fn a_key_of_small_order_verifies_nothing_even_a_signature_that_fits_it() {
    // The identity point as a key: [k]A is the identity whatever the
    // message, so R = [1]B and S = 1 satisfy [S]B - [k]A = R for every
    // message. Only the small-order check stops it.
    let mut identity = [0u8; 32];
    identity[0] = 1;
    let weak = ed25519_dalek::VerifyingKey::from_bytes(&identity).unwrap();
    let mut bytes = [0u8; 64];
    // The base point B, compressed: y = 4/5.
    bytes[0] = 0x58;
    bytes[1..32].fill(0x66);
    bytes[32] = 1;
    let h = with_signature(&signed_post(&random_key()), &bytes);
    let parsed = parse_post(&h, BODY).unwrap();
    assert_eq!(parsed.verify(&weak), Err(SigError::BadSignature));
}
