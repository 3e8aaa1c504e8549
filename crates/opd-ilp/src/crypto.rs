//! STREAM's symmetric primitives (RFC 29): HMAC-SHA256 and AES-256-GCM with
//! a 12-byte IV, no associated data, and the wire layout
//! `IV (12) ‖ tag (16) ‖ ciphertext` (the tag comes *before* the
//! ciphertext). Connection tokens and STREAM packet data share this layout.

use aes_gcm::aead::AeadInPlace;
use aes_gcm::{Aes256Gcm, KeyInit, Nonce, Tag};
use hmac::digest::Key;
use hmac::{Hmac, Mac};
use sha2::Sha256;

/// AES-GCM IV length in bytes.
pub const IV_LEN: usize = 12;
/// AES-GCM authentication tag length in bytes.
pub const TAG_LEN: usize = 16;
/// Bytes [`encrypt`] adds to the plaintext.
pub const OVERHEAD: usize = IV_LEN + TAG_LEN;

type HmacSha256 = Hmac<Sha256>;

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
