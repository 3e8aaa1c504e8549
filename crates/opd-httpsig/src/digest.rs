//! `Content-Digest` (RFC 9530).
//!
//! Producing: always `sha-512=:<base64>:`, as the Open Payments Node client
//! does. Verifying: the header is parsed as an RFC 8941 dictionary; members
//! `sha-256` and `sha-512` are recognised, every recognised member must match
//! the body, at least one must be present, and other algorithms are ignored.

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use sha2::{Digest as _, Sha256, Sha512};

use crate::error::SigError;
use crate::sf::{self, BareItem, MemberValue};

const HEADER: &str = "Content-Digest";

/// The `Content-Digest` header value for `body`: `sha-512=:<base64>:`.
pub fn content_digest(body: &[u8]) -> String {
    format!("sha-512=:{}:", STANDARD.encode(Sha512::digest(body)))
}

/// Checks a `Content-Digest` header value against the raw body bytes.
///
/// Errors: [`SigError::MalformedHeader`] when the value is not a dictionary,
/// a recognised member is not a byte sequence of the right length, or no
/// recognised algorithm is present; [`SigError::DigestMismatch`] when a
/// recognised digest differs from the body's.
pub fn verify_content_digest(header_value: impl AsRef<[u8]>, body: &[u8]) -> Result<(), SigError> {
    let malformed = |reason: &str| SigError::MalformedHeader {
        header: HEADER,
        reason: reason.to_owned(),
    };
    let members = sf::parse_dictionary(header_value.as_ref(), false).map_err(|e| malformed(e.0))?;
    let mut recognised = 0usize;
    let mut mismatch = false;
    for member in &members {
        let expected: Vec<u8> = match member.key.as_str() {
            "sha-256" => Sha256::digest(body).to_vec(),
            "sha-512" => Sha512::digest(body).to_vec(),
            _ => continue,
        };
        let MemberValue::Item(item) = &member.value else {
            return Err(malformed("digest is not a byte sequence"));
        };
        let BareItem::ByteSeq(given) = &item.bare else {
            return Err(malformed("digest is not a byte sequence"));
        };
        if given.len() != expected.len() {
            return Err(malformed("digest has the wrong length"));
        }
        recognised += 1;
        if *given != expected {
            mismatch = true;
        }
    }
    if recognised == 0 {
        return Err(malformed("no sha-256 or sha-512 digest"));
    }
    if mismatch {
        return Err(SigError::DigestMismatch);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// RFC 9530 / RFC 9421 §B.2 body and digests (also in auth.md §5).
    const RFC_BODY: &[u8] = b"{\"hello\": \"world\"}";
    const RFC_SHA512: &str =
        "WZDPaVn/7XgHaAy8pmojAkGWoRx2UFChF41A2svX+TaPm+AbwAgBWnrIiYllu7BNNyealdVLvRwEmTHWXvJwew==";
    const RFC_SHA256: &str = "X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBPE=";

    #[test]
    fn produces_rfc_value() {
        assert_eq!(content_digest(RFC_BODY), format!("sha-512=:{RFC_SHA512}:"));
    }

    #[test]
    fn verifies_sha256_sha512_and_both() {
        verify_content_digest(format!("sha-512=:{RFC_SHA512}:"), RFC_BODY).unwrap();
        verify_content_digest(format!("sha-256=:{RFC_SHA256}:"), RFC_BODY).unwrap();
        verify_content_digest(
            format!("sha-256=:{RFC_SHA256}:, sha-512=:{RFC_SHA512}:"),
            RFC_BODY,
        )
        .unwrap();
        // Unknown algorithms are ignored when a known one is present.
        verify_content_digest(format!("md5=:AAAA:, sha-256=:{RFC_SHA256}:"), RFC_BODY).unwrap();
    }

    #[test]
    fn rejects_mismatch_and_malformed() {
        assert_eq!(
            verify_content_digest(format!("sha-512=:{RFC_SHA512}:"), b"{\"hello\":\"world\"}"),
            Err(SigError::DigestMismatch)
        );
        // One good and one bad member: all recognised members must match.
        let bad256 = STANDARD.encode([0u8; 32]);
        assert_eq!(
            verify_content_digest(
                format!("sha-256=:{bad256}:, sha-512=:{RFC_SHA512}:"),
                RFC_BODY
            ),
            Err(SigError::DigestMismatch)
        );
        for bad in [
            String::new(),
            "md5=:AAAA:".to_owned(),
            "sha-512=abc".to_owned(),
            "sha-512=:AAAA:".to_owned(),
            format!("sha-512={RFC_SHA512}"),
            format!("sha-256=:{RFC_SHA512}:"),
            "garbage!!".to_owned(),
        ] {
            assert!(
                matches!(
                    verify_content_digest(&bad, RFC_BODY),
                    Err(SigError::MalformedHeader { .. })
                ),
                "{bad:?}"
            );
        }
    }

    proptest! {
        #[test]
        fn round_trip(body in proptest::collection::vec(any::<u8>(), 0..300)) {
            prop_assert!(verify_content_digest(content_digest(&body), &body).is_ok());
        }

        #[test]
        fn never_panics(header in proptest::collection::vec(any::<u8>(), 0..200), body in proptest::collection::vec(any::<u8>(), 0..50)) {
            let _ = verify_content_digest(&header, &body);
        }
    }
}
