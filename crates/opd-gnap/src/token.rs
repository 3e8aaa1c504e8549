//! Token values, hashed token storage and the interaction finish hash.

use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
use base64::Engine as _;
use opd_core::Random;
use sha2::{Digest, Sha256};

/// Random bytes in a token: 160 bits.
pub const TOKEN_BYTES: usize = 20;

/// A new opaque token (access token, continuation token, interaction
/// reference or nonce): [`TOKEN_BYTES`] random bytes as 40 upper-case hex
/// characters. URL- and header-safe; clients must treat it as opaque.
pub fn new_token(random: &dyn Random) -> String {
    let mut bytes = [0u8; TOKEN_BYTES];
    random.fill(&mut bytes);
    hex(&bytes, b"0123456789ABCDEF")
}

/// Lower-case hex SHA-256 of a token, for storing and looking up tokens
/// without keeping their values.
pub fn token_digest(token: &str) -> String {
    hex(&Sha256::digest(token.as_bytes()), b"0123456789abcdef")
}

fn hex(bytes: &[u8], digits: &[u8; 16]) -> String {
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(char::from(digits[usize::from(b >> 4)]));
        s.push(char::from(digits[usize::from(b & 0xF)]));
    }
    s
}

fn interaction_hash_bytes(
    client_nonce: &str,
    as_nonce: &str,
    interact_ref: &str,
    grant_endpoint_url: &str,
) -> [u8; 32] {
    let input = format!("{client_nonce}\n{as_nonce}\n{interact_ref}\n{grant_endpoint_url}");
    Sha256::digest(input.as_bytes()).into()
}

/// The `hash` of the interaction finish redirect: SHA-256 over
/// `client_nonce \n as_nonce \n interact_ref \n grant_endpoint_url`
/// (`grant_endpoint_url` is the URL the grant request was POSTed to),
/// encoded as **standard base64 with padding**.
///
/// RFC 9635 §4.2.3 (and openpayments.dev) say base64url without padding,
/// but the reference server and the deployed clients that check the hash
/// use standard padded base64, so that is what opd sends. Checkers should
/// use [`interaction_hash_matches`], which accepts both.
pub fn interaction_hash(
    client_nonce: &str,
    as_nonce: &str,
    interact_ref: &str,
    grant_endpoint_url: &str,
) -> String {
    STANDARD.encode(interaction_hash_bytes(
        client_nonce,
        as_nonce,
        interact_ref,
        grant_endpoint_url,
    ))
}

/// The same hash in RFC 9635's encoding (base64url without padding).
pub fn interaction_hash_rfc9635(
    client_nonce: &str,
    as_nonce: &str,
    interact_ref: &str,
    grant_endpoint_url: &str,
) -> String {
    URL_SAFE_NO_PAD.encode(interaction_hash_bytes(
        client_nonce,
        as_nonce,
        interact_ref,
        grant_endpoint_url,
    ))
}

/// Whether `candidate` is the finish hash of these inputs in either
/// encoding (standard or URL-safe alphabet, padded or not): the decoded
/// bytes are compared, in constant time.
pub fn interaction_hash_matches(
    candidate: &str,
    client_nonce: &str,
    as_nonce: &str,
    interact_ref: &str,
    grant_endpoint_url: &str,
) -> bool {
    let decoded = [STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD]
        .iter()
        .find_map(|e| e.decode(candidate.as_bytes()).ok());
    let Some(decoded) = decoded else {
        return false;
    };
    let expected = interaction_hash_bytes(client_nonce, as_nonce, interact_ref, grant_endpoint_url);
    decoded.len() == expected.len()
        && decoded
            .iter()
            .zip(expected.iter())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use opd_core::SeededRandom;

    /// auth.md §2.4: the openpayments.dev example values.
    const EXAMPLE: (&str, &str, &str, &str) = (
        "VJLO6A4CATR0KRO",
        "MBDOFXG4Y5CVJCX821LH",
        "4IFWWIKYB2PQ6U56NL1",
        "https://server.example.com/tx",
    );

    #[test]
    fn finish_hash_vectors() {
        let (c, a, r, u) = EXAMPLE;
        assert_eq!(
            interaction_hash(c, a, r, u),
            "x+gguKWTj8rQf7d7i3w3UhzvuJ5bpOlKyAlVpLxBffY="
        );
        assert_eq!(
            interaction_hash_rfc9635(c, a, r, u),
            "x-gguKWTj8rQf7d7i3w3UhzvuJ5bpOlKyAlVpLxBffY"
        );
        for ok in [
            "x+gguKWTj8rQf7d7i3w3UhzvuJ5bpOlKyAlVpLxBffY=",
            "x-gguKWTj8rQf7d7i3w3UhzvuJ5bpOlKyAlVpLxBffY",
            "x+gguKWTj8rQf7d7i3w3UhzvuJ5bpOlKyAlVpLxBffY",
            "x-gguKWTj8rQf7d7i3w3UhzvuJ5bpOlKyAlVpLxBffY=",
        ] {
            assert!(interaction_hash_matches(ok, c, a, r, u), "{ok}");
        }
        for bad in [
            "",
            "x+gguKWTj8rQf7d7i3w3UhzvuJ5bpOlKyAlVpLxBffZ=",
            "y+gguKWTj8rQf7d7i3w3UhzvuJ5bpOlKyAlVpLxBffY=",
            "x+gguKWTj8rQf7d7i3w3UhzvuJ5bpOlKyAlVpLxBf",
            "not base64!",
        ] {
            assert!(!interaction_hash_matches(bad, c, a, r, u), "{bad}");
        }
        // Any input change changes the hash.
        let h = interaction_hash(c, a, r, u);
        assert!(!interaction_hash_matches(
            &h,
            c,
            a,
            r,
            "https://server.example.com/tx/"
        ));
        assert!(!interaction_hash_matches(&h, a, c, r, u));
    }

    #[test]
    fn tokens_are_opaque_hex() {
        let r = SeededRandom::new(1);
        let a = new_token(&r);
        let b = new_token(&r);
        assert_eq!(a.len(), 40);
        assert!(a
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'A'..=b'F').contains(&b)));
        assert_ne!(a, b);
    }

    #[test]
    fn token_digest_is_sha256_hex() {
        assert_eq!(
            token_digest("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(token_digest("").len(), 64);
    }
}
