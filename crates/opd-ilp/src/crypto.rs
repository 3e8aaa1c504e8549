//! STREAM's symmetric primitives (RFC 29): HMAC-SHA256 and AES-256-GCM with
//! a 12-byte IV, no associated data, and the wire layout
//! `IV (12) ‖ tag (16) ‖ ciphertext` (the tag comes *before* the
//! ciphertext). Connection tokens and STREAM packet data share this layout.
//!
//! Also ILP's condition (the SHA-256 of a fulfillment, RFC 27) and the way
//! STREAM derives a packet's fulfillment from the shared secret:
//!
//! ```text
//! fulfillment = HMAC-SHA256(HMAC-SHA256(sharedSecret, "ilp_stream_fulfillment"), prepare.data)
//! condition   = SHA-256(fulfillment)
//! ```
//!
//! `prepare.data` is the *encrypted* STREAM packet as it travels, so only the
//! two ends, which know the shared secret, can compute the fulfillment.

use aes_gcm::aead::AeadInPlace;
use aes_gcm::{Aes256Gcm, KeyInit, Nonce, Tag};
use hmac::digest::Key;
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};

/// AES-GCM IV length in bytes.
pub const IV_LEN: usize = 12;
/// AES-GCM authentication tag length in bytes.
pub const TAG_LEN: usize = 16;
/// Bytes [`encrypt`] adds to the plaintext.
pub const OVERHEAD: usize = IV_LEN + TAG_LEN;

/// Derivation string for the STREAM encryption key.
pub const ENCRYPTION_KEY_STRING: &[u8] = b"ilp_stream_encryption";
/// Derivation string for the STREAM fulfillment key.
pub const FULFILLMENT_KEY_STRING: &[u8] = b"ilp_stream_fulfillment";

type HmacSha256 = Hmac<Sha256>;

/// The condition a fulfillment satisfies: its SHA-256.
pub fn condition_of(fulfillment: &[u8; 32]) -> [u8; 32] {
    Sha256::digest(fulfillment).into()
}

/// SHA-256 of `data`.
pub fn sha256(data: &[u8]) -> [u8; 32] {
    Sha256::digest(data).into()
}

/// The AES-256-GCM key a STREAM connection encrypts its packets with.
pub fn stream_encryption_key(shared_secret: &[u8; 32]) -> [u8; 32] {
    hmac_sha256(shared_secret, ENCRYPTION_KEY_STRING)
}

/// The fulfillment of a STREAM Prepare carrying `data` (the encrypted
/// STREAM packet, exactly as in the ILP Prepare).
pub fn fulfillment_for(shared_secret: &[u8; 32], data: &[u8]) -> [u8; 32] {
    let key = hmac_sha256(shared_secret, FULFILLMENT_KEY_STRING);
    hmac_sha256(&key, data)
}

/// The condition a STREAM sender puts in a Prepare carrying `data`, so that
/// the receiver can fulfill it: `condition_of(fulfillment_for(..))`.
pub fn condition_for(shared_secret: &[u8; 32], data: &[u8]) -> [u8; 32] {
    condition_of(&fulfillment_for(shared_secret, data))
}

/// HMAC-SHA256 with a 32-byte key.
pub fn hmac_sha256(key: &[u8; 32], data: &[u8]) -> [u8; 32] {
    // HMAC zero-pads keys shorter than the hash block (64 bytes), so keying
    // with the padded block is the same function as keying with `key`, and
    // avoids the fallible variable-length constructor.
    let mut block = Key::<HmacSha256>::default();
    for (dst, src) in block.iter_mut().zip(key) {
        *dst = *src;
    }
    let mut mac = <HmacSha256 as KeyInit>::new(&block);
    mac.update(data);
    mac.finalize().into_bytes().into()
}

/// Encrypts `plaintext` under `key` with the given IV, returning
/// `IV ‖ tag ‖ ciphertext`. `None` only if the plaintext exceeds AES-GCM's
/// limit (about 64 GiB).
pub fn encrypt(key: &[u8; 32], iv: [u8; IV_LEN], plaintext: &[u8]) -> Option<Vec<u8>> {
    let cipher = Aes256Gcm::new(&(*key).into());
    let nonce = Nonce::from(iv);
    let mut buf = plaintext.to_vec();
    let tag = cipher
        .encrypt_in_place_detached(&nonce, b"", &mut buf)
        .ok()?;
    let mut out = Vec::with_capacity(OVERHEAD + buf.len());
    out.extend_from_slice(&iv);
    out.extend_from_slice(&tag);
    out.extend_from_slice(&buf);
    Some(out)
}

/// Decrypts `IV ‖ tag ‖ ciphertext` under `key`. `None` if the input is
/// shorter than 28 bytes or does not authenticate.
pub fn decrypt(key: &[u8; 32], data: &[u8]) -> Option<Vec<u8>> {
    let (iv, rest) = data.split_at_checked(IV_LEN)?;
    let (tag, ciphertext) = rest.split_at_checked(TAG_LEN)?;
    let iv: [u8; IV_LEN] = iv.try_into().ok()?;
    let tag: [u8; TAG_LEN] = tag.try_into().ok()?;
    let cipher = Aes256Gcm::new(&(*key).into());
    let mut buf = ciphertext.to_vec();
    cipher
        .decrypt_in_place_detached(&Nonce::from(iv), b"", &mut buf, &Tag::from(tag))
        .ok()?;
    Some(buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    #[test]
    fn hmac_matches_variable_length_constructor() {
        let key = [0x5au8; 32];
        let mut mac = <HmacSha256 as Mac>::new_from_slice(&key).unwrap();
        mac.update(b"ilp_stream_shared_secret");
        let expected: [u8; 32] = mac.finalize().into_bytes().into();
        assert_eq!(hmac_sha256(&key, b"ilp_stream_shared_secret"), expected);
    }

    #[test]
    fn hmac_rfc4231_case_1_zero_padded_key() {
        // RFC 4231 test case 1 uses a 20-byte key; pad-equivalence means a
        // 32-byte key made of those 20 bytes and 12 zeros gives the same MAC.
        let mut key = [0u8; 32];
        key[..20].copy_from_slice(&[0x0b; 20]);
        assert_eq!(
            hmac_sha256(&key, b"Hi There").to_vec(),
            hex("b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7")
        );
    }

    fn b64(s: &str) -> Vec<u8> {
        use base64::Engine as _;
        base64::engine::general_purpose::STANDARD.decode(s).unwrap()
    }

    /// `ilp-protocol-stream` keys with whatever the shared secret is; its
    /// tests use the 3-byte secret "foo". HMAC zero-pads short keys, so
    /// "foo" followed by 29 zero bytes is the same key.
    fn padded(short: &[u8]) -> [u8; 32] {
        let mut key = [0u8; 32];
        key[..short.len()].copy_from_slice(short);
        key
    }

    // Vectors from interledgerjs/interledgerjs
    // packages/ilp-protocol-stream/test/crypto.spec.ts (fba2dfe8).
    #[test]
    fn js_key_fulfillment_and_condition_vectors() {
        assert_eq!(
            stream_encryption_key(&padded(b"foo")).to_vec(),
            b64("zfOGMU/uY+EOUCE6tN3WhE77bF/N6pS0wSOmMgEAMEA=")
        );
        assert_eq!(
            hmac_sha256(&padded(b"foo"), FULFILLMENT_KEY_STRING).to_vec(),
            b64("lh8nGJCJosvfUePaU0uxxXK3jNvV2Y+5ivt1GH1Muhs=")
        );
        // generateFulfillment(key = 32 zero bytes, data = "foo"): the inner
        // HMAC step alone.
        assert_eq!(
            hmac_sha256(&[0u8; 32], b"foo").to_vec(),
            b64("DA2Y9+PZ1F5y6Id7wbEEMn77nAexjy/+ztdtgTB/H/8=")
        );
        assert_eq!(
            condition_of(&[0u8; 32]).to_vec(),
            b64("Zmh6rfhivXdsj8GLjp+OIAiXFIVu4jOzkCpZHQ1fKSU=")
        );
        // "decrypts known data": the key is given directly.
        let key: [u8; 32] = b64("AOStyoBvoK9/OFhdmf2TzQRrJsCkxH/cj49Ya7RFOEc=")
            .try_into()
            .unwrap();
        let ciphertext = b64("Y1UiXpDA1GwAv+h95CEv67O49MOAJQrnYEQMrOFsbv6rrlE=");
        assert_eq!(decrypt(&key, &ciphertext).unwrap(), b"foo bar");
    }

    // Vectors from interledger/interledger-rs
    // crates/interledger-stream/src/crypto.rs (544b6dbc), which says they
    // match the JavaScript implementation.
    #[test]
    fn interledger_rs_fulfillment_and_encryption_vectors() {
        let shared_secret: [u8; 32] = [
            126, 219, 117, 93, 118, 248, 249, 211, 20, 211, 65, 110, 237, 80, 253, 179, 81, 146,
            229, 67, 231, 49, 92, 127, 254, 230, 144, 102, 103, 166, 150, 36,
        ];
        let data = [
            119, 248, 213, 234, 63, 200, 224, 140, 212, 222, 105, 159, 246, 203, 66, 155, 151, 172,
            68, 24, 76, 232, 90, 10, 237, 146, 189, 73, 248, 196, 177, 108, 115, 223,
        ];
        let fulfillment = [
            24, 6, 56, 73, 229, 236, 88, 227, 82, 112, 152, 49, 152, 73, 182, 183, 198, 7, 233,
            124, 119, 65, 13, 68, 54, 108, 120, 193, 59, 226, 107, 39,
        ];
        assert_eq!(fulfillment_for(&shared_secret, &data), fulfillment);
        assert_eq!(
            condition_for(&shared_secret, &data),
            condition_of(&fulfillment)
        );

        // The same `data` is the encryption of [99, 0, 12, 255, 77, 31]
        // under that shared secret with IV = its first 12 bytes.
        let key = stream_encryption_key(&shared_secret);
        let iv: [u8; IV_LEN] = data[..IV_LEN].try_into().unwrap();
        let plaintext = [99, 0, 12, 255, 77, 31];
        assert_eq!(encrypt(&key, iv, &plaintext).unwrap(), data);
        assert_eq!(decrypt(&key, &data).unwrap(), plaintext);
    }

    #[test]
    fn layout_and_round_trip() {
        let key = [7u8; 32];
        let iv = [9u8; IV_LEN];
        let ct = encrypt(&key, iv, b"hello").unwrap();
        assert_eq!(ct.len(), OVERHEAD + 5);
        assert_eq!(&ct[..IV_LEN], &iv);
        assert_eq!(decrypt(&key, &ct).unwrap(), b"hello");
        assert!(decrypt(&[8u8; 32], &ct).is_none());
        assert!(decrypt(&key, &ct[..OVERHEAD - 1]).is_none());
        let empty = encrypt(&key, iv, b"").unwrap();
        assert_eq!(decrypt(&key, &empty).unwrap(), b"");
    }

    #[test]
    fn every_bit_flip_is_detected() {
        let key = [1u8; 32];
        let ct = encrypt(&key, [2u8; IV_LEN], b"payload").unwrap();
        for i in 0..ct.len() {
            for bit in 0..8 {
                let mut t = ct.clone();
                t[i] ^= 1 << bit;
                assert!(decrypt(&key, &t).is_none(), "flip at byte {i} bit {bit}");
            }
        }
    }
}
