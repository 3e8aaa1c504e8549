//! End-to-end tests of the public STREAM credentials API: round trips,
//! Rafiki's size assertion, error variants, and a known-answer vector that
//! `@interledger/stream-receiver@0.2.2` reproduces byte for byte.
#![expect(clippy::unwrap_used, reason = "tests fail loudly by design")]

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use opd_ilp::{
    decode_destination, generate_credentials, ErrorCode, IlpAddress, IlpError, MalformedToken,
    StreamSecret,
};
use proptest::prelude::*;

const TAG: &str = "6a0e5c1c-3f0a-4c55-8a35-4f0b9a2b7e11";

fn secret() -> StreamSecret {
    StreamSecret::from_bytes(std::array::from_fn(|i| i as u8))
}

fn server() -> IlpAddress {
    "test.opd".parse().unwrap()
}

fn kat_iv() -> [u8; 12] {
    std::array::from_fn(|i| 0xa0 + i as u8)
}

fn token_segment<'a>(address: &'a str, server: &IlpAddress) -> &'a str {
    address
        .strip_prefix(server.as_str())
        .and_then(|r| r.strip_prefix('.'))
        .unwrap()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Hand-computed known-answer vectors: secret = 0x00..=0x1f, IV = 0xa0..=0xab,
/// server `test.opd`, tag `6a0e5c1c-...`. The values were computed with an
/// independent Python script (`hmac` + `cryptography`'s AESGCM) and confirmed
/// to be identical to what `@interledger/stream-receiver@0.2.2`'s
/// `generateCredentials` returns when its 12-byte IV source is pinned to the
/// same bytes.
#[test]
fn known_answer_with_asset() {
    let creds =
        generate_credentials(&secret(), &server(), TAG, Some(("USD", 2)), kat_iv()).unwrap();
    assert_eq!(
        creds.ilp_address.as_str(),
        "test.opd.oKGio6SlpqeoqaqrFDwdQLJjjA3Lclf3JNZIDoLR9Pl3ZaXTKJ1x5n7mKVYAE1zWTrhrgx1u0jmA1qLL10bJ8CGT1k5qTPE"
    );
    assert_eq!(
        hex(&creds.shared_secret),
        "74a4bb49b17940d93e43d5689819d9f9b1c5560e0a32a743a37b6765d930c3cc"
    );
    assert_eq!(
        creds.shared_secret_base64url(),
        "dKS7SbF5QNk-Q9VomBnZ-bHFVg4KMqdDo3tnZdkww8w"
    );
    let token = URL_SAFE_NO_PAD
        .decode(token_segment(creds.ilp_address.as_str(), &server()))
        .unwrap();
    assert_eq!(
        hex(&token),
        "a0a1a2a3a4a5a6a7a8a9aaab143c1d40b2638c0dcb7257f724d6480e82d1f4f97765a5d3289d71e67ee6295600135cd64eb86b831d6ed23980d6a2cbd746c9f02193d64e6a4cf1"
    );
}

#[test]
fn known_answer_without_asset() {
    let creds = generate_credentials(&secret(), &server(), TAG, None, kat_iv()).unwrap();
    assert_eq!(
        creds.ilp_address.as_str(),
        "test.opd.oKGio6SlpqeoqaqrWjwHCb4qsfEZgMRxRH-KG4bR9Pl3ZaXTKJ1x5n7mKVYAE1zWTrhrgx1u0jmA1qLL10bJ8CGT"
    );
    assert_eq!(
        hex(&creds.shared_secret),
        "9b181f046649fbbc8188def1160d46a885dcff8c54c9751507fa2f61f8611f3f"
    );
    let decoded = decode_destination(&secret(), &server(), creds.ilp_address.as_str()).unwrap();
    assert_eq!(decoded.payment_tag, TAG);
    assert_eq!(decoded.asset, None);
}

#[test]
fn secret_from_base64_matches_kat_secret() {
    let s = StreamSecret::from_base64("AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=").unwrap();
    assert_eq!(s.as_bytes(), secret().as_bytes());
    assert_eq!(
        s.to_base64(),
        "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="
    );
}

#[test]
fn round_trip() {
    let creds = generate_credentials(&secret(), &server(), TAG, Some(("EUR", 2)), [3; 12]).unwrap();
    let decoded = decode_destination(&secret(), &server(), creds.ilp_address.as_str()).unwrap();
    assert_eq!(decoded.payment_tag, TAG);
    assert_eq!(decoded.asset, Some(("EUR".to_owned(), 2)));
    assert_eq!(decoded.shared_secret, creds.shared_secret);
}

#[test]
fn round_trip_unicode_asset_and_long_tag() {
    let tag = "t".repeat(300);
    let creds =
        generate_credentials(&secret(), &server(), &tag, Some(("€uro", 255)), [4; 12]).unwrap();
    let decoded = decode_destination(&secret(), &server(), creds.ilp_address.as_str()).unwrap();
    assert_eq!(decoded.payment_tag, tag);
    assert_eq!(decoded.asset, Some(("€uro".to_owned(), 255)));
}

/// Rafiki's `stream-credentials/service.test.ts` asserts 95 characters.
#[test]
fn uuid_tag_with_three_letter_asset_gives_95_char_segment() {
    for iv in [[0u8; 12], [0xff; 12], kat_iv()] {
        let creds = generate_credentials(&secret(), &server(), TAG, Some(("USD", 2)), iv).unwrap();
        let segment = token_segment(creds.ilp_address.as_str(), &server());
        assert_eq!(segment.len(), 95);
        assert!(!segment.contains('.'));
    }
}

#[test]
fn shared_secret_is_unpadded_base64url() {
    for iv in 0u8..64 {
        let creds =
            generate_credentials(&secret(), &server(), TAG, Some(("USD", 2)), [iv; 12]).unwrap();
        let ss = creds.shared_secret_base64url();
        assert_eq!(ss.len(), 43);
        assert!(!ss.contains('='));
        assert!(ss
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'));
        assert_eq!(URL_SAFE_NO_PAD.decode(&ss).unwrap(), creds.shared_secret);
    }
}

#[test]
fn address_matches_open_payments_pattern() {
    for server in ["test.opd", "g.wallet.tenant-1", "test3.a_b~c"] {
        let server: IlpAddress = server.parse().unwrap();
        for iv in 0u8..32 {
            let creds =
                generate_credentials(&secret(), &server, TAG, Some(("USD", 2)), [iv; 12]).unwrap();
            let a = creds.ilp_address.as_str();
            assert!(IlpAddress::is_valid(a), "{a}");
            assert!(creds.ilp_address.starts_with(&server));
        }
    }
}

#[test]
fn different_ivs_give_different_addresses_same_tag() {
    let a = generate_credentials(&secret(), &server(), TAG, None, [1; 12]).unwrap();
    let b = generate_credentials(&secret(), &server(), TAG, None, [2; 12]).unwrap();
    assert_ne!(a.ilp_address, b.ilp_address);
    assert_ne!(a.shared_secret, b.shared_secret);
    let da = decode_destination(&secret(), &server(), a.ilp_address.as_str()).unwrap();
    let db = decode_destination(&secret(), &server(), b.ilp_address.as_str()).unwrap();
    assert_eq!(da.payment_tag, TAG);
    assert_eq!(db.payment_tag, TAG);
    assert_eq!(da.shared_secret, a.shared_secret);
    assert_eq!(db.shared_secret, b.shared_secret);
}

#[test]
fn other_secret_fails_to_decrypt() {
    let other = StreamSecret::from_bytes([0x42; 32]);
    let creds = generate_credentials(&other, &server(), TAG, Some(("USD", 2)), [5; 12]).unwrap();
    assert_eq!(
        decode_destination(&secret(), &server(), creds.ilp_address.as_str()),
        Err(IlpError::TokenDecryptionFailed)
    );
}

#[test]
fn tampered_token_fails_to_decrypt() {
    let creds =
        generate_credentials(&secret(), &server(), TAG, Some(("USD", 2)), kat_iv()).unwrap();
    let address = creds.ilp_address.as_str();
    let segment = token_segment(address, &server());
    let mut token = URL_SAFE_NO_PAD.decode(segment).unwrap();
    for i in 0..token.len() {
        token[i] ^= 0x01;
        let tampered = format!("{}.{}", server(), URL_SAFE_NO_PAD.encode(&token));
        assert_eq!(
            decode_destination(&secret(), &server(), &tampered),
            Err(IlpError::TokenDecryptionFailed),
            "flip at byte {i}"
        );
        token[i] ^= 0x01;
    }
    // Truncated (shorter than IV + tag) and truncated ciphertext.
    for len in [1, 27, 28, 40, token.len() - 1] {
        let cut = format!("{}.{}", server(), URL_SAFE_NO_PAD.encode(&token[..len]));
        assert_eq!(
            decode_destination(&secret(), &server(), &cut),
            Err(IlpError::TokenDecryptionFailed),
            "length {len}"
        );
    }
}

#[test]
fn wrong_prefix_is_not_addressed_to_server() {
    let creds = generate_credentials(&secret(), &server(), TAG, None, [6; 12]).unwrap();
    let segment = token_segment(creds.ilp_address.as_str(), &server()).to_owned();
    for dest in [
        String::new(),
        "test.opd".to_owned(),
        "test.opd.".to_owned(),
        "test.opd..x".to_owned(),
        format!("test.opdx.{segment}"),
        format!("test.op.{segment}"),
        format!("test.other.{segment}"),
        format!("g.opd.{segment}"),
        format!("test.opd{segment}"),
        format!("test.opd.{}", "A".repeat(1100)),
    ] {
        assert_eq!(
            decode_destination(&secret(), &server(), &dest),
            Err(IlpError::NotAddressedToServer),
            "{dest}"
        );
    }
    // A token minted for a child address is also "under" the parent, but
    // the parent takes the child's segment for its token and cannot use it.
    let child = server().child("alice").unwrap();
    let creds = generate_credentials(&secret(), &child, TAG, None, [6; 12]).unwrap();
    assert_eq!(
        decode_destination(&secret(), &server(), creds.ilp_address.as_str()),
        Err(IlpError::InvalidTokenEncoding)
    );
    assert!(decode_destination(&secret(), &child, creds.ilp_address.as_str()).is_ok());
}

#[test]
fn bad_base64_is_invalid_encoding() {
    for seg in ["a", "abcde", "ab~cd", "ab+c", "ab/c", "abc=", "ab c", "é"] {
        let dest = format!("test.opd.{seg}");
        assert_eq!(
            decode_destination(&secret(), &server(), &dest),
            Err(IlpError::InvalidTokenEncoding),
            "{seg}"
        );
    }
    // Non-canonical trailing bits ("AB" and "AA" both end in 0x00) are refused.
    assert_eq!(
        decode_destination(&secret(), &server(), "test.opd.AB"),
        Err(IlpError::InvalidTokenEncoding)
    );
}

#[test]
fn extra_segments_after_token_are_ignored() {
    let creds = generate_credentials(&secret(), &server(), TAG, Some(("USD", 2)), [8; 12]).unwrap();
    let dest = format!("{}.sub.account", creds.ilp_address);
    let decoded = decode_destination(&secret(), &server(), &dest).unwrap();
    assert_eq!(decoded.payment_tag, TAG);
    assert_eq!(decoded.shared_secret, creds.shared_secret);
}

/// Tokens whose authentic plaintext is malformed: mint them directly with
/// the crate's primitives and the documented key derivation.
#[test]
fn malformed_plaintext_is_reported() {
    let token_key =
        opd_ilp::crypto::hmac_sha256(secret().as_bytes(), b"ilp_stream_connection_token");
    let cases: [(&[u8], MalformedToken); 4] = [
        (
            &[],
            MalformedToken::Oer(opd_ilp::oer::OerError::UnexpectedEof),
        ),
        (
            &[1, 9, b'x'],
            MalformedToken::Oer(opd_ilp::oer::OerError::UnexpectedEof),
        ),
        (
            &[4, 3, b'U', b'S', b'D', 2],
            MalformedToken::MissingPaymentTag,
        ),
        (&[1, 1, 0xff], MalformedToken::PaymentTagNotAscii),
    ];
    for (plaintext, expected) in cases {
        let token = opd_ilp::crypto::encrypt(&token_key, [9; 12], plaintext).unwrap();
        let dest = format!("test.opd.{}", URL_SAFE_NO_PAD.encode(&token));
        let err = decode_destination(&secret(), &server(), &dest).unwrap_err();
        assert_eq!(err, IlpError::MalformedToken(expected));
        assert_eq!(err.reject_code(), Some(ErrorCode::F06_UNEXPECTED_PAYMENT));
    }
}

#[test]
fn reject_codes() {
    assert_eq!(
        IlpError::NotAddressedToServer.reject_code(),
        Some(ErrorCode::F02_UNREACHABLE)
    );
    assert_eq!(
        IlpError::InvalidTokenEncoding.reject_code(),
        Some(ErrorCode::F06_UNEXPECTED_PAYMENT)
    );
    assert_eq!(
        IlpError::TokenDecryptionFailed.reject_code(),
        Some(ErrorCode::F06_UNEXPECTED_PAYMENT)
    );
    assert_eq!(IlpError::InvalidPaymentTag("empty").reject_code(), None);
}

#[test]
fn generate_rejects_bad_tags_and_oversized_credentials() {
    assert_eq!(
        generate_credentials(&secret(), &server(), "", None, [0; 12]),
        Err(IlpError::InvalidPaymentTag("empty"))
    );
    assert_eq!(
        generate_credentials(&secret(), &server(), "tägg", None, [0; 12]),
        Err(IlpError::InvalidPaymentTag("not ASCII"))
    );
    // Largest tag that still fits: address = 8 + 1 + b64(28 + 1 + 3 + tag).
    let fits = (0..800)
        .rev()
        .find(|n| {
            generate_credentials(&secret(), &server(), &"x".repeat(*n), None, [0; 12]).is_ok()
        })
        .unwrap();
    let ok = generate_credentials(&secret(), &server(), &"x".repeat(fits), None, [0; 12]).unwrap();
    assert!(ok.ilp_address.as_str().len() <= opd_ilp::MAX_ADDRESS_LEN);
    assert!(ok.ilp_address.as_str().len() > opd_ilp::MAX_ADDRESS_LEN - 4);
    assert!(matches!(
        generate_credentials(&secret(), &server(), &"x".repeat(fits + 1), None, [0; 12]),
        Err(IlpError::CredentialsTooLong { len }) if len > opd_ilp::MAX_ADDRESS_LEN
    ));
    let decoded = decode_destination(&secret(), &server(), ok.ilp_address.as_str()).unwrap();
    assert_eq!(decoded.payment_tag.len(), fits);
}

#[test]
fn debug_output_hides_secrets() {
    let creds = generate_credentials(&secret(), &server(), TAG, None, [0; 12]).unwrap();
    let dbg = format!("{creds:?}");
    assert!(dbg.contains("<redacted>"));
    assert!(!dbg.contains(&creds.shared_secret_base64url()));
    assert!(!dbg.contains(&format!("{:?}", creds.shared_secret)));
    let decoded = decode_destination(&secret(), &server(), creds.ilp_address.as_str()).unwrap();
    let dbg = format!("{decoded:?}");
    assert!(dbg.contains(TAG) && dbg.contains("<redacted>"));
    assert!(!dbg.contains(&format!("{:?}", decoded.shared_secret)));
    assert_eq!(format!("{:?}", secret()), "StreamSecret(<redacted>)");
}

proptest! {
    #[test]
    fn decode_never_panics_on_arbitrary_strings(dest in any::<String>()) {
        let _ = decode_destination(&secret(), &server(), &dest);
    }

    #[test]
    fn decode_never_panics_on_arbitrary_suffixes(suffix in "[a-zA-Z0-9_~.-]{0,140}") {
        let dest = format!("test.opd.{suffix}");
        let r = decode_destination(&secret(), &server(), &dest);
        prop_assert!(r.is_err());
    }

    #[test]
    fn decode_never_panics_on_arbitrary_token_bytes(token in proptest::collection::vec(any::<u8>(), 0..120)) {
        let dest = format!("test.opd.{}", URL_SAFE_NO_PAD.encode(&token));
        let r = decode_destination(&secret(), &server(), &dest);
        prop_assert!(r.is_err());
    }

    #[test]
    fn round_trip_any_ascii_tag(
        tag in "[ -~]{1,200}",
        asset in proptest::option::of(("[A-Z]{0,12}", any::<u8>())),
        iv in any::<[u8; 12]>(),
    ) {
        let creds = generate_credentials(
            &secret(), &server(), &tag, asset.as_ref().map(|(c, s)| (c.as_str(), *s)), iv,
        ).unwrap();
        prop_assert!(IlpAddress::is_valid(creds.ilp_address.as_str()));
        let decoded = decode_destination(&secret(), &server(), creds.ilp_address.as_str()).unwrap();
        prop_assert_eq!(decoded.payment_tag, tag);
        prop_assert_eq!(decoded.asset, asset);
        prop_assert_eq!(decoded.shared_secret, creds.shared_secret);
    }
}
