//! STREAM receipts (Interledger RFC 39): a receiver's signed proof of the
//! total it has received on a stream, for a verifier that handed it a
//! receipt nonce and secret (through the SPSP query's `Receipt-Nonce` and
//! `Receipt-Secret` headers).
//!
//! A receipt is 58 bytes, canonical OER:
//!
//! ```text
//! version (u8, 1) ‖ nonce (16) ‖ stream id (u8) ‖ total received (u64 BE)
//! ‖ HMAC-SHA256(receipt secret, the 26 bytes before it) (32)
//! ```
//!
//! It travels in a StreamReceipt frame of the Fulfill's STREAM reply. The
//! verifier keeps, per nonce and stream, the highest total it has seen:
//! each receipt replaces the ones before it.

use std::fmt;

use crate::crypto::hmac_sha256;

/// The only receipt version.
pub const RECEIPT_VERSION: u8 = 1;
/// Length of a receipt in bytes.
pub const RECEIPT_LEN: usize = 58;
/// Length of the signed part (everything before the HMAC).
const SIGNED_LEN: usize = 26;

/// What a verifier gave the receiver: the nonce that names the connection
/// in its receipts, and the key they are signed with.
///
/// Its `Debug` output never shows the secret.
#[derive(Clone, PartialEq, Eq)]
pub struct ReceiptSetup {
    /// Unique per connection (the verifier's choice).
    pub nonce: [u8; 16],
    /// The HMAC key of the receipts.
    pub secret: [u8; 32],
}

impl fmt::Debug for ReceiptSetup {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReceiptSetup")
            .field("nonce", &self.nonce)
            .field("secret", &"<redacted>")
            .finish()
    }
}

/// A receipt's fields, read from its bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Receipt {
    /// Names the connection (from the receipt setup).
    pub nonce: [u8; 16],
    /// The stream the total is for.
    pub stream_id: u8,
    /// Everything received on that stream so far, in the receiver's units.
    pub total_received: u64,
}

/// Why a receipt was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReceiptError {
    /// Not 58 bytes.
    Length,
    /// A version other than 1.
    Version,
    /// The HMAC does not match the secret.
    Signature,
}

/// The receipt for `total_received` on `stream_id`, signed with the setup's
/// secret.
pub fn create_receipt(setup: &ReceiptSetup, stream_id: u8, total_received: u64) -> [u8; 58] {
    let mut out = [0u8; RECEIPT_LEN];
    out[0] = RECEIPT_VERSION;
    out[1..17].copy_from_slice(&setup.nonce);
    out[17] = stream_id;
    out[18..SIGNED_LEN].copy_from_slice(&total_received.to_be_bytes());
    let hmac = hmac_sha256(&setup.secret, &out[..SIGNED_LEN]);
    out[SIGNED_LEN..].copy_from_slice(&hmac);
    out
}

/// Reads a receipt without checking its signature.
pub fn decode_receipt(bytes: &[u8]) -> Result<Receipt, ReceiptError> {
    let bytes: &[u8; RECEIPT_LEN] = bytes.try_into().map_err(|_| ReceiptError::Length)?;
    if bytes[0] != RECEIPT_VERSION {
        return Err(ReceiptError::Version);
    }
    let mut nonce = [0u8; 16];
    nonce.copy_from_slice(&bytes[1..17]);
    let mut total = [0u8; 8];
    total.copy_from_slice(&bytes[18..SIGNED_LEN]);
    Ok(Receipt {
        nonce,
        stream_id: bytes[17],
        total_received: u64::from_be_bytes(total),
    })
}

/// Reads a receipt and checks its HMAC with `secret` (what a verifier
/// does before crediting anything).
pub fn verify_receipt(bytes: &[u8], secret: &[u8; 32]) -> Result<Receipt, ReceiptError> {
    let receipt = decode_receipt(bytes)?;
    let expected = hmac_sha256(secret, &bytes[..SIGNED_LEN]);
    // Not secret-dependent timing that matters here (the verifier's own
    // check), but compare in full anyway.
    let differs = expected
        .iter()
        .zip(&bytes[SIGNED_LEN..])
        .fold(0u8, |acc, (a, b)| acc | (a ^ b));
    if differs != 0 {
        return Err(ReceiptError::Signature);
    }
    Ok(receipt)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setup() -> ReceiptSetup {
        ReceiptSetup {
            nonce: std::array::from_fn(|i| i as u8),
            secret: [0x5a; 32],
        }
    }

    #[test]
    fn the_layout_is_the_rfcs() {
        let r = create_receipt(&setup(), 1, 0x0102_0304_0506_0708);
        assert_eq!(r.len(), 58);
        assert_eq!(r[0], 1);
        assert_eq!(&r[1..17], &setup().nonce);
        assert_eq!(r[17], 1);
        assert_eq!(&r[18..26], &[1, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(&r[26..], &hmac_sha256(&[0x5a; 32], &r[..26]));
    }

    #[test]
    fn receipts_verify_with_their_secret_only() {
        let r = create_receipt(&setup(), 3, u64::MAX);
        let read = verify_receipt(&r, &[0x5a; 32]).unwrap();
        assert_eq!(
            read,
            Receipt {
                nonce: setup().nonce,
                stream_id: 3,
                total_received: u64::MAX
            }
        );
        assert_eq!(
            verify_receipt(&r, &[0x5b; 32]),
            Err(ReceiptError::Signature)
        );
        for i in 0..58 {
            let mut bad = r;
            bad[i] ^= 1;
            assert!(verify_receipt(&bad, &[0x5a; 32]).is_err(), "byte {i}");
        }
        // Two bytes of the HMAC changed alike (their differences would
        // cancel out if they were only XORed together) are still refused.
        let mut twice = r;
        twice[30] ^= 0x10;
        twice[40] ^= 0x10;
        assert_eq!(
            verify_receipt(&twice, &[0x5a; 32]),
            Err(ReceiptError::Signature)
        );
        assert_eq!(
            verify_receipt(&r[..57], &[0x5a; 32]),
            Err(ReceiptError::Length)
        );
        let mut v2 = r;
        v2[0] = 2;
        assert_eq!(decode_receipt(&v2), Err(ReceiptError::Version));
    }

    #[test]
    fn the_secret_is_not_shown() {
        let shown = format!("{:?}", setup());
        assert!(
            shown.contains("<redacted>") && !shown.contains("90"),
            "{shown}"
        );
    }
}
