//! Golden vectors: RFC 9421 §B.2.6 and the Open Payments examples produced
//! by the official Node client (auth.md §1.3), plus sign→verify round trips
//! and the Rust SDK's non-RFC format.
#![expect(clippy::unwrap_used, reason = "tests fail loudly by design")]

mod common;

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use common::*;
use ed25519_dalek::Signer as _;
use http::{HeaderMap, Method};
use opd_httpsig::{
    build_signature_base, content_digest, parse_signature, sign_request, Jwk, Jwks, RequestParts,
    SigError, SigningKey, VerifyPolicy, VerifyingKey,
};

// ---------------------------------------------------------------------------
// RFC 9421 Appendix B.2.6

/// PKCS#8 DER of the RFC 9421 `test-key-ed25519` private key.
const RFC9421_PKCS8: &str = "MC4CAQAwBQYDK2VwBCIEIJ+DYvh6SEqVTm50DFtMDoQikTmiCqirVv9mWG9qfSnF";
/// SPKI DER of the matching public key.
const RFC9421_SPKI: &str = "MCowBQYDK2VwAyEAJrQLj5P/89iXES9+vFgrIy29clF9CC/oPPsw3c5D0bs=";
const RFC9421_B26_SIG: &str =
    "wqcAqbmYJ2ji2glfAMaRy4gruYYnx2nEFN2HN6jrnDnQCK1u02Gb04v9EDgwUPiu4A0w6vuQv5lIp5WPpBKRCw==";

fn last_32(b64: &str) -> [u8; 32] {
    let der = STANDARD.decode(b64).unwrap();
    der[der.len() - 32..].try_into().unwrap()
}

fn rfc9421_request_headers() -> HeaderMap {
    headers(&[
        ("host", "example.com"),
        ("date", "Tue, 20 Apr 2021 02:07:55 GMT"),
        ("content-type", "application/json"),
        (
            "content-digest",
            "sha-512=:WZDPaVn/7XgHaAy8pmojAkGWoRx2UFChF41A2svX+TaPm+AbwAgBWnrIiYllu7BNNyealdVLvRwEmTHWXvJwew==:",
        ),
        ("content-length", "18"),
    ])
}

#[test]
fn rfc9421_b26_ed25519() {
    let key = SigningKey::from_bytes(&last_32(RFC9421_PKCS8));
    let public = VerifyingKey::from_bytes(&last_32(RFC9421_SPKI)).unwrap();
    assert_eq!(key.verifying_key(), public);

    let body = b"{\"hello\": \"world\"}";
    let h = rfc9421_request_headers();
    assert_eq!(
        content_digest(body),
        h.get("content-digest").unwrap().to_str().unwrap()
    );
    let uri = "https://example.com/foo?param=Value&Pet=dog";
    let req = RequestParts::new(&Method::POST, uri, &h, Some(body));
    let components = [
        "date",
        "@method",
        "@path",
        "@authority",
        "content-type",
        "content-length",
    ];
    let params = r#"("date" "@method" "@path" "@authority" "content-type" "content-length");created=1618884473;keyid="test-key-ed25519""#;
    let base = build_signature_base(&req, &components, params).unwrap();
    let expected_base = concat!(
        "\"date\": Tue, 20 Apr 2021 02:07:55 GMT\n",
        "\"@method\": POST\n",
        "\"@path\": /foo\n",
        "\"@authority\": example.com\n",
        "\"content-type\": application/json\n",
        "\"content-length\": 18\n",
        "\"@signature-params\": (\"date\" \"@method\" \"@path\" \"@authority\" ",
        "\"content-type\" \"content-length\");created=1618884473;keyid=\"test-key-ed25519\""
    );
    assert_eq!(String::from_utf8(base.clone()).unwrap(), expected_base);
    assert_eq!(STANDARD.encode(key.sign(&base).to_bytes()), RFC9421_B26_SIG);

    // The full RFC message through the verifier: the parse and the base
    // are fine, but the Open Payments profile requires @target-uri.
    let mut h = h;
    set(&mut h, "signature-input", &format!("sig-b26={params}"));
    set(&mut h, "signature", &format!("sig-b26=:{RFC9421_B26_SIG}:"));
    let req = RequestParts::new(&Method::POST, uri, &h, Some(body));
    assert_eq!(
        parse_signature(&req, &VerifyPolicy::default(), 1_618_884_473),
        Err(SigError::MissingComponent("@target-uri".into()))
    );
}

// ---------------------------------------------------------------------------
// Open Payments examples A, B, C (auth.md §1.3), produced by the Node client.

struct Example {
    method: Method,
    uri: &'static str,
    authorization: Option<&'static str>,
    body: Option<&'static [u8]>,
    content_digest: Option<&'static str>,
    signature_input: &'static str,
    signature: &'static str,
    base: String,
}

fn examples() -> Vec<Example> {
    let a_body: &[u8] = br#"{"access_token":{"access":[{"type":"incoming-payment","actions":["create","read"]}]},"client":"https://wallet.example/alice"}"#;
    let a_digest = "sha-512=:7GKvf20Y8h4ZTpYojwRq6VMuuoAGYDAFlQSrSTseAFPoQ9bDIicLUC2wJXGJ+kw4NH9OR1dt/CH8dZjQEMKoIA==:";
    let a_input = r#"sig1=("@method" "@target-uri" "content-digest" "content-length" "content-type");keyid="test-key-ed25519";created=1700000000"#;
    let b_input = r#"sig1=("@method" "@target-uri" "authorization");keyid="test-key-ed25519";created=1700000000"#;
    let c_body: &[u8] = br#"{"interact_ref":"ad82597c-bbfa-4eb0-b72e-328e005b8689"}"#;
    let c_digest = "sha-512=:lPBxmTfsG3yECPYRY09vhhA9WJjNBGQd3OGZ5kga4vlR5TwOCB6iBpdMf0nNEpaKC08S6EQjSJ/t65dn8TDLSw==:";
    let c_input = r#"sig1=("@method" "@target-uri" "authorization" "content-digest" "content-length" "content-type");keyid="test-key-ed25519";created=1700000000"#;
    vec![
        Example {
            method: Method::POST,
            uri: "https://auth.example/",
            authorization: None,
            body: Some(a_body),
            content_digest: Some(a_digest),
            signature_input: a_input,
            signature: "sig1=:3M1c1fejsJhycylURSwGSgFkEYSre/NjJowfh3duNpKMO75CHp+ecgGYziwCU8VM/oqehYK6H2Ufe+jYVIfaCw==:",
            // Verbatim from auth.md §1.3.
            base: [
                "\"@method\": POST",
                "\"@target-uri\": https://auth.example/",
                &format!("\"content-digest\": {a_digest}"),
                "\"content-length\": 125",
                "\"content-type\": application/json",
                "\"@signature-params\": (\"@method\" \"@target-uri\" \"content-digest\" \"content-length\" \"content-type\");keyid=\"test-key-ed25519\";created=1700000000",
            ]
            .join("\n"),
        },
        Example {
            method: Method::GET,
            uri: "https://rs.example/incoming-payments/123",
            authorization: Some("GNAP OS9M2PMHKUR64TB8N6BW7OZB8CDFONP219RP1LT0"),
            body: None,
            content_digest: None,
            signature_input: b_input,
            signature: "sig1=:RsxFHEXGv7EpEB9hf5wqW1FGYhJBfo58h+OlrxmMNMdoAqYDEA4O9cCEAto/wKxbOSz6hVcvqu6W913NYDgFAg==:",
            base: [
                "\"@method\": GET",
                "\"@target-uri\": https://rs.example/incoming-payments/123",
                "\"authorization\": GNAP OS9M2PMHKUR64TB8N6BW7OZB8CDFONP219RP1LT0",
                &format!("\"@signature-params\": {}", &b_input[5..]),
            ]
            .join("\n"),
        },
        Example {
            method: Method::POST,
            uri: "https://auth.example/continue/4CF492MLVMSW9MKMXKHQ",
            authorization: Some("GNAP 33OMUKMKSKU80UPRY5NM"),
            body: Some(c_body),
            content_digest: Some(c_digest),
            signature_input: c_input,
            signature: "sig1=:ljHChN9gYZ1o83iDp0ix01MlklgBTzabYVmu5ingr9+cMfMkPh7fCIxp6yU6SisNQJaWxUrdy0gzWJE/0rqpBA==:",
            base: [
                "\"@method\": POST",
                "\"@target-uri\": https://auth.example/continue/4CF492MLVMSW9MKMXKHQ",
                "\"authorization\": GNAP 33OMUKMKSKU80UPRY5NM",
                &format!("\"content-digest\": {c_digest}"),
                "\"content-length\": 55",
                "\"content-type\": application/json",
                &format!("\"@signature-params\": {}", &c_input[5..]),
            ]
            .join("\n"),
        },
    ]
}

/// Headers as the Node client sends them before signing: ky's defaults
/// (Accept and Content-Type on every request) plus Authorization.
fn node_headers(authorization: Option<&str>) -> HeaderMap {
    let mut h = headers(&[
        ("accept", "application/json"),
        ("content-type", "application/json"),
    ]);
    if let Some(a) = authorization {
        set(&mut h, "authorization", a);
    }
    h
}

#[test]
fn node_examples_sign_byte_for_byte() {
    let key = rfc8037_key();
    for ex in examples() {
        let h = node_headers(ex.authorization);
        let signed = sign_request(&ex.method, ex.uri, &h, ex.body, &key, KID, CREATED).unwrap();
        assert_eq!(signed.signature_input, ex.signature_input, "{}", ex.uri);
        assert_eq!(signed.signature, ex.signature, "{}", ex.uri);
        assert_eq!(signed.content_digest.as_deref(), ex.content_digest);
        assert_eq!(
            signed.content_length,
            ex.body.map(|b| b.len().to_string()),
            "{}",
            ex.uri
        );
        assert_eq!(
            signed.content_type.as_deref(),
            ex.body.map(|_| "application/json")
        );
    }
    let lens: Vec<_> = examples().iter().map(|e| e.body.map(<[u8]>::len)).collect();
    assert_eq!(lens, [Some(125), None, Some(55)]);
}

/// The headers every opd client builds with (`signed_request_headers`)
/// carry the Node client's exact signature, and the token as it sends it.
#[test]
fn node_examples_from_the_shared_request_headers() {
    let key = rfc8037_key();
    for ex in examples() {
        let token = ex.authorization.map(|a| a.strip_prefix("GNAP ").unwrap());
        let h = opd_httpsig::signed_request_headers(
            &ex.method, ex.uri, token, ex.body, &key, KID, CREATED,
        )
        .unwrap();
        let get = |name: &str| h.get(name).map(|v| v.to_str().unwrap().to_owned());
        assert_eq!(get("authorization").as_deref(), ex.authorization);
        assert_eq!(
            get("signature-input").unwrap(),
            ex.signature_input,
            "{}",
            ex.uri
        );
        assert_eq!(get("signature").unwrap(), ex.signature, "{}", ex.uri);
        assert_eq!(get("content-digest").as_deref(), ex.content_digest);
    }
    let bad = opd_httpsig::signed_request_headers(
        &Method::GET,
        "https://x.example/",
        Some("a\nb"),
        None,
        &key,
        KID,
        CREATED,
    );
    assert!(bad.is_err(), "a token that is no header value is refused");
}

#[test]
fn node_examples_verify_byte_for_byte() {
    let key = rfc8037_key();
    let jwk: Jwk = serde_json::from_str(&format!(
        r#"{{"kid":"{KID}","alg":"EdDSA","kty":"OKP","crv":"Ed25519","x":"{RFC8037_X}"}}"#
    ))
    .unwrap();
    assert_eq!(jwk, Jwk::from_signing_key(&key, KID));
    for ex in examples() {
        // Headers exactly as on the wire, independent of our signer.
        let mut h = node_headers(ex.authorization);
        if let (Some(body), Some(digest)) = (ex.body, ex.content_digest) {
            set(&mut h, "content-digest", digest);
            set(&mut h, "content-length", &body.len().to_string());
        }
        set(&mut h, "signature-input", ex.signature_input);
        set(&mut h, "signature", ex.signature);
        let req = RequestParts::new(&ex.method, ex.uri, &h, ex.body);
        let parsed = parse_signature(&req, &VerifyPolicy::default(), CREATED + 5).unwrap();
        assert_eq!(
            String::from_utf8(parsed.signature_base().to_vec()).unwrap(),
            ex.base,
            "{}",
            ex.uri
        );
        assert_eq!(parsed.keyid(), KID);
        assert_eq!(parsed.label(), "sig1");
        assert_eq!(parsed.created(), CREATED);
        assert_eq!(parsed.expires(), None);
        assert_eq!(parsed.alg(), None);
        assert!(!parsed.used_compat_format());
        assert_eq!(parsed.signature_params(), &ex.signature_input[5..]);
        parsed.verify(&jwk).unwrap();
        parsed.verify(&key.verifying_key()).unwrap();
        parsed.verify(&[jwk.clone()][..]).unwrap();
        parsed
            .verify(&Jwks {
                keys: vec![Jwk::from_signing_key(&random_key(), "other"), jwk.clone()],
            })
            .unwrap();
        // The same signature also passes with compat disabled.
        let strict = VerifyPolicy {
            accept_sdk_compat_format: false,
            ..VerifyPolicy::default()
        };
        parse_signature(&req, &strict, CREATED)
            .unwrap()
            .verify(&jwk)
            .unwrap();
    }
}

// ---------------------------------------------------------------------------
// Round trips

/// Method, target URI, Authorization, body.
type Case = (
    Method,
    &'static str,
    Option<&'static str>,
    Option<&'static [u8]>,
);

#[test]
fn sign_verify_round_trips() {
    let key = random_key();
    let jwk = Jwk::from_signing_key(&key, "rt");
    let cases: Vec<Case> = vec![
        (Method::GET, "https://rs.example/", None, None),
        (
            Method::GET,
            "http://localhost:8080/alice/incoming-payments?cursor=abc&first=10",
            Some("GNAP tok"),
            None,
        ),
        (
            Method::DELETE,
            "https://auth.example/token/1",
            Some("GNAP tok"),
            None,
        ),
        (
            Method::POST,
            "https://auth.example/token/1",
            Some("GNAP tok"),
            Some(b""),
        ),
        (
            Method::POST,
            "https://rs.example/quotes",
            Some("GNAP tok"),
            Some(br#"{"method":"ilp"}"#),
        ),
        (
            Method::POST,
            "https://auth.example/",
            None,
            Some("{\"a\":\"caf\u{e9}\"}".as_bytes()),
        ),
    ];
    for (method, uri, auth, body) in cases {
        let mut h = HeaderMap::new();
        if let Some(a) = auth {
            set(&mut h, "authorization", a);
        }
        let signed = sign_request(&method, uri, &h, body, &key, "rt", CREATED).unwrap();
        signed.apply_to(&mut h).unwrap();
        let req = RequestParts::new(&method, uri, &h, body);
        let parsed = parse_signature(&req, &VerifyPolicy::default(), CREATED).unwrap();
        parsed.verify(&jwk).unwrap();
        let expected_components: Vec<&str> = {
            let mut c = vec!["@method", "@target-uri"];
            if auth.is_some() {
                c.push("authorization");
            }
            if body.is_some_and(|b| !b.is_empty()) {
                c.extend(["content-digest", "content-length", "content-type"]);
            }
            c
        };
        assert_eq!(parsed.components(), expected_components, "{uri}");
    }
}

#[test]
fn kid_is_escaped_and_invalid_kids_are_refused() {
    let key = random_key();
    let h = HeaderMap::new();
    let signed = sign_request(
        &Method::GET,
        "https://h.example/",
        &h,
        None,
        &key,
        r#"a"b\c"#,
        CREATED,
    )
    .unwrap();
    assert!(signed
        .signature_input
        .ends_with(r#";keyid="a\"b\\c";created=1700000000"#));
    let mut h = h;
    signed.apply_to(&mut h).unwrap();
    let req = RequestParts::new(&Method::GET, "https://h.example/", &h, None);
    let parsed = parse_signature(&req, &VerifyPolicy::default(), CREATED).unwrap();
    assert_eq!(parsed.keyid(), r#"a"b\c"#);
    parsed.verify(&key.verifying_key()).unwrap();

    for bad in ["", "caf\u{e9}", "new\nline"] {
        assert_eq!(
            sign_request(
                &Method::GET,
                "https://h.example/",
                &h,
                None,
                &key,
                bad,
                CREATED
            ),
            Err(SigError::InvalidKeyId)
        );
    }
}

#[test]
fn verifier_accepts_other_labels_params_and_multiple_signatures() {
    let key = random_key();
    let uri = "https://rs.example/outgoing-payments";
    let body: &[u8] = br#"{"x":1}"#;
    let mut h = headers(&[
        ("authorization", "GNAP t"),
        ("content-type", "application/json"),
    ]);
    set(&mut h, "content-digest", &content_digest(body));
    let comps = ["@target-uri", "content-digest", "@method", "authorization"];
    let params = format!(
        r#"{};created={CREATED};expires={};keyid="k";alg="ed25519";nonce="n1";tag="gnap""#,
        list(&comps),
        CREATED + 100
    );
    sign_custom(
        &Method::POST,
        uri,
        &mut h,
        Some(body),
        &key,
        "custom",
        &comps,
        &params,
    );
    // Prepend a label that lacks authorization (and has a junk signature):
    // the verifier must skip it and choose "custom".
    let input = h
        .get("signature-input")
        .unwrap()
        .to_str()
        .unwrap()
        .to_owned();
    let sig = h.get("signature").unwrap().to_str().unwrap().to_owned();
    set(
        &mut h,
        "signature-input",
        &format!(
            r#"weak=("@method" "@target-uri" "content-digest");created={CREATED};keyid="k", {input}"#
        ),
    );
    set(&mut h, "signature", &format!("weak=:AAAA:, {sig}"));
    let req = RequestParts::new(&Method::POST, uri, &h, Some(body));
    let parsed = parse_signature(&req, &VerifyPolicy::default(), CREATED).unwrap();
    assert_eq!(parsed.label(), "custom");
    assert_eq!(parsed.alg(), Some("ed25519"));
    assert_eq!(parsed.nonce(), Some("n1"));
    assert_eq!(parsed.tag(), Some("gnap"));
    assert_eq!(parsed.expires(), Some(CREATED + 100));
    assert_eq!(parsed.components(), comps);
    parsed.verify(&key.verifying_key()).unwrap();
}

#[test]
fn signature_input_split_over_several_header_lines() {
    let key = random_key();
    let uri = "https://rs.example/x";
    let mut h = HeaderMap::new();
    let signed = sign_request(&Method::GET, uri, &h, None, &key, "k", CREATED).unwrap();
    signed.apply_to(&mut h).unwrap();
    h.append(
        "signature-input",
        http::HeaderValue::from_static(r#"other=("@method");created=1;keyid="z""#),
    );
    h.append("signature", http::HeaderValue::from_static("other=:AAAA:"));
    let req = RequestParts::new(&Method::GET, uri, &h, None);
    let parsed = parse_signature(&req, &VerifyPolicy::default(), CREATED).unwrap();
    assert_eq!(parsed.label(), "sig1");
    parsed.verify(&key.verifying_key()).unwrap();
}

// ---------------------------------------------------------------------------
// Rust SDK (`open-payments` 0.2.0) compatibility

/// Builds headers the way the Rust SDK does: unquoted components
/// `@method @target-uri content-type [authorization] [content-digest
/// content-length]`, `;created=…;keyid="…"`, bare base64 Signature. The
/// base is written out here by hand, independently of the crate.
fn sdk_request(
    key: &SigningKey,
    method: &Method,
    uri: &str,
    authorization: Option<&str>,
    body: Option<&[u8]>,
) -> HeaderMap {
    let mut h = headers(&[("content-type", "application/json")]);
    let mut components = vec!["@method", "@target-uri", "content-type"];
    let mut lines = vec![
        format!("\"@method\": {method}"),
        format!("\"@target-uri\": {uri}"),
        "\"content-type\": application/json".to_owned(),
    ];
    if let Some(a) = authorization {
        set(&mut h, "authorization", a);
        components.push("authorization");
        lines.push(format!("\"authorization\": {a}"));
    }
    if let Some(b) = body {
        let digest = content_digest(b);
        set(&mut h, "content-digest", &digest);
        set(&mut h, "content-length", &b.len().to_string());
        components.extend(["content-digest", "content-length"]);
        lines.push(format!("\"content-digest\": {digest}"));
        lines.push(format!("\"content-length\": {}", b.len()));
    }
    let params = format!(
        "({});created={CREATED};keyid=\"sdk-key\"",
        components.join(" ")
    );
    lines.push(format!("\"@signature-params\": {params}"));
    let base = lines.join("\n");
    set(&mut h, "signature-input", &format!("sig1={params}"));
    set(
        &mut h,
        "signature",
        &STANDARD.encode(key.sign(base.as_bytes()).to_bytes()),
    );
    h
}

#[test]
fn rust_sdk_format_is_accepted_in_compat_mode() {
    let key = random_key();
    let jwk = Jwk::from_signing_key(&key, "sdk-key");
    let body: &[u8] = br#"{"walletAddress":"https://w.example/a","incomingAmount":{"value":"10","assetCode":"USD","assetScale":2}}"#;
    let cases: Vec<Case> = vec![
        (
            Method::POST,
            "https://rs.example/incoming-payments",
            Some("GNAP abc"),
            Some(body),
        ),
        (
            Method::GET,
            "https://rs.example/incoming-payments/1",
            Some("GNAP abc"),
            None,
        ),
        (Method::POST, "https://auth.example/", None, Some(body)),
        (Method::GET, "https://w.example/a", None, None),
    ];
    for (method, uri, auth, body) in cases {
        let h = sdk_request(&key, &method, uri, auth, body);
        let req = RequestParts::new(&method, uri, &h, body);
        let parsed = parse_signature(&req, &VerifyPolicy::default(), CREATED).unwrap();
        assert!(parsed.used_compat_format(), "{uri}");
        assert_eq!(parsed.keyid(), "sdk-key");
        assert_eq!(
            parsed.components()[..3],
            ["@method", "@target-uri", "content-type"]
        );
        assert!(parsed
            .signature_params()
            .starts_with("(@method @target-uri content-type"));
        parsed.verify(&jwk).unwrap();

        let strict = VerifyPolicy {
            accept_sdk_compat_format: false,
            ..VerifyPolicy::default()
        };
        assert!(matches!(
            parse_signature(&req, &strict, CREATED),
            Err(SigError::MalformedHeader {
                header: "Signature-Input",
                ..
            })
        ));
    }
}

#[test]
fn compat_signature_forms_with_strict_input() {
    // A strict Signature-Input with a Signature that is bare base64, or
    // `sig1=<b64>` without colons: accepted only in compat mode.
    let key = random_key();
    let uri = "https://rs.example/x";
    let mut h = HeaderMap::new();
    let signed = sign_request(&Method::GET, uri, &h, None, &key, "k", CREATED).unwrap();
    signed.apply_to(&mut h).unwrap();
    let b64 = signed
        .signature
        .strip_prefix("sig1=:")
        .and_then(|s| s.strip_suffix(':'))
        .unwrap()
        .to_owned();
    for form in [b64.clone(), format!("sig1={b64}"), format!(":{b64}:")] {
        set(&mut h, "signature", &form);
        let req = RequestParts::new(&Method::GET, uri, &h, None);
        let parsed = parse_signature(&req, &VerifyPolicy::default(), CREATED).unwrap();
        assert!(parsed.used_compat_format(), "{form}");
        parsed.verify(&key.verifying_key()).unwrap();
        let strict = VerifyPolicy {
            accept_sdk_compat_format: false,
            ..VerifyPolicy::default()
        };
        assert!(matches!(
            parse_signature(&req, &strict, CREATED),
            Err(SigError::MalformedHeader {
                header: "Signature",
                ..
            })
        ));
    }
}

#[test]
fn strict_input_with_tokens_needs_compat() {
    // `(content-type)` is valid RFC 8941 (a token) but not RFC 9421, which
    // requires quoted strings: only compat accepts it.
    let key = random_key();
    let uri = "https://rs.example/x";
    let mut h = headers(&[("x-a", "1")]);
    let params = format!(r#"("@method" "@target-uri" x-a);created={CREATED};keyid="k""#);
    sign_custom(
        &Method::GET,
        uri,
        &mut h,
        None,
        &key,
        "sig1",
        &["@method", "@target-uri", "x-a"],
        &params,
    );
    let req = RequestParts::new(&Method::GET, uri, &h, None);
    let parsed = parse_signature(&req, &VerifyPolicy::default(), CREATED).unwrap();
    assert!(parsed.used_compat_format());
    parsed.verify(&key.verifying_key()).unwrap();
    let strict = VerifyPolicy {
        accept_sdk_compat_format: false,
        ..VerifyPolicy::default()
    };
    assert!(matches!(
        parse_signature(&req, &strict, CREATED),
        Err(SigError::MalformedHeader {
            header: "Signature-Input",
            ..
        })
    ));
}
