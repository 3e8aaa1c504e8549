//! Stateless STREAM credentials for incoming payments, byte-compatible with
//! `@interledger/stream-receiver`'s `generateCredentials` (the scheme Rafiki
//! uses for `methods: [{type: "ilp", ilpAddress, sharedSecret}]`).
//!
//! From a 32-byte server secret:
//!
//! - `tokenKey = HMAC-SHA256(secret, "ilp_stream_connection_token")`;
//! - `ssKey = HMAC-SHA256(secret, "ilp_stream_shared_secret")`;
//! - token plaintext = `flags (u8)` ‖ payment tag (var-octet-string, ASCII)
//!   ‖ \[receipt nonce (16) ‖ receipt secret (32) if flag 2\]
//!   ‖ \[asset code (var-octet-string, UTF-8) ‖ asset scale (u8) if flag 4\],
//!   with flags 1 = payment tag, 2 = receipt, 4 = asset;
//! - `token = IV ‖ tag ‖ AES-256-GCM(tokenKey, IV, plaintext)`;
//! - `ilpAddress = serverAddress + "." + base64url_nopad(token)`;
//! - `sharedSecret = HMAC-SHA256(ssKey, token)`.
//!
//! Nothing is stored: [`decode_destination`] recovers the payment tag and
//! the shared secret from a packet's destination address alone, and the
//! receipt nonce and secret when the credentials were made with them (an
//! SPSP query with `Receipt-Nonce` and `Receipt-Secret`,
//! [`generate_credentials_with_receipts`]).

use std::fmt;

use base64::alphabet;
use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig, URL_SAFE_NO_PAD};
use base64::engine::DecodePaddingMode;
use base64::Engine as _;
use rand::{CryptoRng, RngCore};

use crate::address::{IlpAddress, MAX_ADDRESS_LEN};
use crate::crypto::{self, hmac_sha256, IV_LEN, OVERHEAD};
use crate::error::{IlpError, MalformedToken};
use crate::oer::{self, Reader};
use crate::stream::receipt::ReceiptSetup;

/// Derivation string for the key that encrypts connection tokens.
pub const TOKEN_KEY_STRING: &[u8] = b"ilp_stream_connection_token";
/// Derivation string for the key that turns tokens into shared secrets.
pub const SHARED_SECRET_KEY_STRING: &[u8] = b"ilp_stream_shared_secret";

/// Token flag: a payment tag follows.
pub const FLAG_PAYMENT_TAG: u8 = 1;
/// Token flag: a receipt nonce and receipt secret follow.
pub const FLAG_RECEIPT: u8 = 2;
/// Token flag: an asset code and scale follow.
pub const FLAG_ASSET: u8 = 4;

const LENIENT_PADDING: GeneralPurposeConfig =
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent);
const STANDARD_LENIENT: GeneralPurpose = GeneralPurpose::new(&alphabet::STANDARD, LENIENT_PADDING);
const URL_SAFE_LENIENT: GeneralPurpose = GeneralPurpose::new(&alphabet::URL_SAFE, LENIENT_PADDING);

/// The 32-byte STREAM server secret (Rafiki's `STREAM_SECRET`).
///
/// Its `Debug` output never shows the bytes, and it deliberately has no
/// `Display` or `PartialEq`.
#[derive(Clone)]
pub struct StreamSecret([u8; 32]);

impl StreamSecret {
    /// Wraps raw secret bytes.
    pub fn from_bytes(bytes: [u8; 32]) -> Self {
        Self(bytes)
    }

    /// Parses 32 bytes of base64, standard (`+/`) or url-safe (`-_`)
    /// alphabet, padded or not. Surrounding ASCII whitespace (a trailing
    /// newline in an environment file) is ignored.
    pub fn from_base64(text: &str) -> Result<Self, IlpError> {
        let text = text.trim_ascii();
        let engine = if text.contains(['-', '_']) {
            &URL_SAFE_LENIENT
        } else {
            &STANDARD_LENIENT
        };
        let bytes = engine
            .decode(text)
            .map_err(|_| IlpError::InvalidSecret("not valid base64"))?;
        let bytes: [u8; 32] = bytes
            .try_into()
            .map_err(|_| IlpError::InvalidSecret("must decode to exactly 32 bytes"))?;
        Ok(Self(bytes))
    }

    /// A fresh secret from a cryptographic RNG.
    pub fn random<R: RngCore + CryptoRng>(rng: &mut R) -> Self {
        let mut bytes = [0u8; 32];
        rng.fill_bytes(&mut bytes);
        Self(bytes)
    }

    /// Standard padded base64, the form Rafiki's `STREAM_SECRET` uses.
    pub fn to_base64(&self) -> String {
        base64::engine::general_purpose::STANDARD.encode(self.0)
    }

    /// The raw secret bytes.
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    fn token_key(&self) -> [u8; 32] {
        hmac_sha256(&self.0, TOKEN_KEY_STRING)
    }

    fn shared_secret_key(&self) -> [u8; 32] {
        hmac_sha256(&self.0, SHARED_SECRET_KEY_STRING)
    }
}

impl fmt::Debug for StreamSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("StreamSecret(<redacted>)")
    }
}

/// A random 12-byte IV for [`generate_credentials`].
pub fn random_iv<R: RngCore + CryptoRng>(rng: &mut R) -> [u8; IV_LEN] {
    let mut iv = [0u8; IV_LEN];
    rng.fill_bytes(&mut iv);
    iv
}

/// What an incoming payment advertises as its `ilp` payment method.
#[derive(Clone, PartialEq, Eq)]
pub struct StreamCredentials {
    /// `server_address + "." + base64url(token)`.
    pub ilp_address: IlpAddress,
    /// The STREAM shared secret for this connection.
    pub shared_secret: [u8; 32],
}

impl StreamCredentials {
    /// The shared secret as unpadded base64url, the Open Payments wire form.
    pub fn shared_secret_base64url(&self) -> String {
        URL_SAFE_NO_PAD.encode(self.shared_secret)
    }
}

impl fmt::Debug for StreamCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StreamCredentials")
            .field("ilp_address", &self.ilp_address)
            .field("shared_secret", &"<redacted>")
            .finish()
    }
}

/// Builds the token plaintext. The tag must already be validated.
fn token_plaintext(
    payment_tag: &str,
    asset: Option<(&str, u8)>,
    receipt: Option<&ReceiptSetup>,
) -> Vec<u8> {
    let mut out = Vec::with_capacity(112);
    let flags = FLAG_PAYMENT_TAG
        | if receipt.is_some() { FLAG_RECEIPT } else { 0 }
        | if asset.is_some() { FLAG_ASSET } else { 0 };
    out.push(flags);
    oer::write_var_octet_string(&mut out, payment_tag.as_bytes());
    if let Some(receipt) = receipt {
        out.extend_from_slice(&receipt.nonce);
        out.extend_from_slice(&receipt.secret);
    }
    if let Some((code, scale)) = asset {
        oer::write_var_octet_string(&mut out, code.as_bytes());
        out.push(scale);
    }
    out
}

/// Mints STREAM credentials for `payment_tag` (the incoming payment's id),
/// optionally embedding the asset (code, scale) so the receiver can answer
/// a new connection with ConnectionAssetDetails.
///
/// The caller supplies the random IV (see [`random_iv`]); everything else
/// is deterministic. Different IVs give different addresses and shared
/// secrets that all decode to the same payment.
///
/// Errors: [`IlpError::InvalidPaymentTag`] for an empty or non-ASCII tag,
/// [`IlpError::CredentialsTooLong`] if the address would exceed 1023 bytes.
/// No receipt details are embedded (Open Payments never enables them; SPSP
/// does, with [`generate_credentials_with_receipts`]).
pub fn generate_credentials(
    secret: &StreamSecret,
    server_address: &IlpAddress,
    payment_tag: &str,
    asset: Option<(&str, u8)>,
    iv: [u8; IV_LEN],
) -> Result<StreamCredentials, IlpError> {
    generate_credentials_with_receipts(secret, server_address, payment_tag, asset, None, iv)
}

/// [`generate_credentials`], with the receipt nonce and secret (flag 2)
/// encrypted into the token when `receipt` is given, as
/// `@interledger/stream-receiver` does for SPSP queries that ask for STREAM
/// receipts: the receiver then signs a receipt into every Fulfill of the
/// connection without storing the secret anywhere.
pub fn generate_credentials_with_receipts(
    secret: &StreamSecret,
    server_address: &IlpAddress,
    payment_tag: &str,
    asset: Option<(&str, u8)>,
    receipt: Option<&ReceiptSetup>,
    iv: [u8; IV_LEN],
) -> Result<StreamCredentials, IlpError> {
    if payment_tag.is_empty() {
        return Err(IlpError::InvalidPaymentTag("empty"));
    }
    if !payment_tag.is_ascii() {
        return Err(IlpError::InvalidPaymentTag("not ASCII"));
    }
    let plaintext = token_plaintext(payment_tag, asset, receipt);
    let token_len = OVERHEAD + plaintext.len();
    let len = server_address.as_str().len() + 1 + base64_unpadded_len(token_len);
    if len > MAX_ADDRESS_LEN {
        return Err(IlpError::CredentialsTooLong { len });
    }
    let token = crypto::encrypt(&secret.token_key(), iv, &plaintext)
        .ok_or(IlpError::CredentialsTooLong { len })?;
    let address = format!("{server_address}.{}", URL_SAFE_NO_PAD.encode(&token));
    let ilp_address = IlpAddress::new(address).map_err(|_| IlpError::CredentialsTooLong { len })?;
    let shared_secret = hmac_sha256(&secret.shared_secret_key(), &token);
    Ok(StreamCredentials {
        ilp_address,
        shared_secret,
    })
}

/// Length of the unpadded base64 encoding of `n` bytes.
fn base64_unpadded_len(n: usize) -> usize {
    (n / 3) * 4 + [0, 2, 3][n % 3]
}

/// What a destination address's connection token carries.
#[derive(Clone, PartialEq, Eq)]
pub struct DecodedToken {
    /// The payment tag (the incoming payment's id).
    pub payment_tag: String,
    /// The asset (code, scale) if the token carries one.
    pub asset: Option<(String, u8)>,
    /// The connection's shared secret, recomputed from the token.
    pub shared_secret: [u8; 32],
    /// The receipt setup, if the credentials were made with one.
    pub receipt: Option<TokenReceipt>,
}

/// The receipt setup a token carries, and the connection it belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenReceipt {
    /// The verifier's nonce and secret.
    pub setup: ReceiptSetup,
    /// SHA-256 of the token: names the connection, whose receipts count
    /// one running total (every destination carrying this token, whatever
    /// sub-addresses a sender appends, is the same connection).
    pub connection: [u8; 32],
}

impl fmt::Debug for DecodedToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DecodedToken")
            .field("payment_tag", &self.payment_tag)
            .field("asset", &self.asset)
            .field("shared_secret", &"<redacted>")
            .field("receipt", &self.receipt)
            .finish()
    }
}

/// Recovers the payment tag, asset and shared secret from the destination
/// of an incoming ILP Prepare.
///
/// The destination must be `server_address + "." + token` where `token` is
/// a non-empty segment; like `@interledger/stream-receiver`, any further
/// `.`-separated segments after the token are ignored (a sender may append
/// its own sub-addresses). The token segment must be canonical unpadded
/// base64url (stricter than Node's lenient `Buffer.from(…, 'base64')`, which
/// changes nothing for tokens a correct issuer produced). Receipt details
/// in a token, if any, are returned with the connection's id (the token's
/// SHA-256); unknown flag bits and trailing plaintext bytes are ignored, as
/// the JS receiver does.
///
/// Errors, in the order they are checked:
/// - [`IlpError::NotAddressedToServer`]: longer than 1023 bytes, not under
///   `server_address + "."`, or an empty token segment (reject F02);
/// - [`IlpError::InvalidTokenEncoding`]: the segment is not base64url (F06);
/// - [`IlpError::TokenDecryptionFailed`]: wrong secret or tampered (F06);
/// - [`IlpError::MalformedToken`]: authentic but unparseable, or without a
///   payment tag (F06).
pub fn decode_destination(
    secret: &StreamSecret,
    server_address: &IlpAddress,
    destination_address: &str,
) -> Result<DecodedToken, IlpError> {
    if destination_address.len() > MAX_ADDRESS_LEN {
        return Err(IlpError::NotAddressedToServer);
    }
    let local = destination_address
        .strip_prefix(server_address.as_str())
        .and_then(|rest| rest.strip_prefix('.'))
        .ok_or(IlpError::NotAddressedToServer)?;
    let segment = local.split_once('.').map_or(local, |(first, _)| first);
    if segment.is_empty() {
        return Err(IlpError::NotAddressedToServer);
    }
    let token = URL_SAFE_NO_PAD
        .decode(segment)
        .map_err(|_| IlpError::InvalidTokenEncoding)?;
    let plaintext =
        crypto::decrypt(&secret.token_key(), &token).ok_or(IlpError::TokenDecryptionFailed)?;
    let (payment_tag, asset, setup) = parse_plaintext(&plaintext)?;
    let shared_secret = hmac_sha256(&secret.shared_secret_key(), &token);
    let receipt = setup.map(|setup| TokenReceipt {
        setup,
        connection: crypto::sha256(&token),
    });
    Ok(DecodedToken {
        payment_tag,
        asset,
        shared_secret,
        receipt,
    })
}

type TokenFields = (String, Option<(String, u8)>, Option<ReceiptSetup>);

fn parse_plaintext(plaintext: &[u8]) -> Result<TokenFields, MalformedToken> {
    let mut r = Reader::new(plaintext);
    let flags = r.read_u8()?;
    let tag = if flags & FLAG_PAYMENT_TAG != 0 {
        Some(r.read_var_octet_string()?)
    } else {
        None
    };
    let receipt = if flags & FLAG_RECEIPT != 0 {
        let nonce: [u8; 16] = r.read_array()?;
        let secret: [u8; 32] = r.read_array()?;
        Some(ReceiptSetup { nonce, secret })
    } else {
        None
    };
    let asset = if flags & FLAG_ASSET != 0 {
        let code = r.read_var_octet_string()?;
        let scale = r.read_u8()?;
        Some((code, scale))
    } else {
        None
    };
    let tag = match tag {
        Some(tag) if !tag.is_empty() => tag,
        _ => return Err(MalformedToken::MissingPaymentTag),
    };
    let payment_tag = std::str::from_utf8(tag)
        .ok()
        .filter(|t| t.is_ascii())
        .ok_or(MalformedToken::PaymentTagNotAscii)?
        .to_owned();
    let asset = match asset {
        Some((code, scale)) => {
            let code = std::str::from_utf8(code).map_err(|_| MalformedToken::AssetCodeNotUtf8)?;
            Some((code.to_owned(), scale))
        }
        None => None,
    };
    Ok((payment_tag, asset, receipt))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::oer::OerError;

    #[test]
    fn secret_debug_is_redacted() {
        let s = StreamSecret::from_bytes([0xab; 32]);
        let dbg = format!("{s:?}");
        assert_eq!(dbg, "StreamSecret(<redacted>)");
        assert!(!dbg.contains("171") && !dbg.to_lowercase().contains("ab"));
    }

    #[test]
    fn secret_base64_forms() {
        let bytes: [u8; 32] = std::array::from_fn(|i| (i as u8).wrapping_mul(37) ^ 0xfb);
        let s = StreamSecret::from_bytes(bytes);
        let std_padded = s.to_base64();
        assert!(std_padded.ends_with('='));
        let std_nopad = std_padded.trim_end_matches('=').to_owned();
        let url = URL_SAFE_NO_PAD.encode(bytes);
        let url_padded = base64::engine::general_purpose::URL_SAFE.encode(bytes);
        assert!(url.contains(['-', '_']), "test bytes should exercise -_");
        assert!(
            std_padded.contains(['+', '/']),
            "test bytes should exercise +/"
        );
        for text in [&std_padded, &std_nopad, &url, &url_padded] {
            let parsed = StreamSecret::from_base64(text).unwrap();
            assert_eq!(parsed.as_bytes(), &bytes, "{text}");
        }
        let with_newline = format!("{std_padded}\n");
        assert_eq!(
            StreamSecret::from_base64(&with_newline).unwrap().as_bytes(),
            &bytes
        );
    }

    #[test]
    fn secret_base64_rejects() {
        let short = base64::engine::general_purpose::STANDARD.encode([1u8; 31]);
        let long = base64::engine::general_purpose::STANDARD.encode([1u8; 33]);
        for bad in ["", "!!!!", &short, &long, "+_", "AAAA AAAA"] {
            assert!(
                matches!(
                    StreamSecret::from_base64(bad),
                    Err(IlpError::InvalidSecret(_))
                ),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn secret_random_uses_rng() {
        struct Counter(u8);
        impl RngCore for Counter {
            fn next_u32(&mut self) -> u32 {
                u32::from(self.next_byte())
            }
            fn next_u64(&mut self) -> u64 {
                u64::from(self.next_byte())
            }
            fn fill_bytes(&mut self, dest: &mut [u8]) {
                for b in dest {
                    *b = self.next_byte();
                }
            }
            fn try_fill_bytes(&mut self, dest: &mut [u8]) -> Result<(), rand::Error> {
                self.fill_bytes(dest);
                Ok(())
            }
        }
        impl Counter {
            fn next_byte(&mut self) -> u8 {
                self.0 = self.0.wrapping_add(1);
                self.0
            }
        }
        impl CryptoRng for Counter {}
        let mut rng = Counter(0);
        let s = StreamSecret::random(&mut rng);
        assert_eq!(s.as_bytes()[0], 1);
        assert_eq!(s.as_bytes()[31], 32);
        assert_eq!(random_iv(&mut rng)[0], 33);
    }

    #[test]
    fn base64_len_formula() {
        for n in 0..200 {
            assert_eq!(
                base64_unpadded_len(n),
                URL_SAFE_NO_PAD.encode(vec![0u8; n]).len()
            );
        }
    }

    #[test]
    fn plaintext_layout() {
        let tag = "0b1f3a52-7c1e-4d0a-9a43-5b7e0f6c2d81";
        let p = token_plaintext(tag, Some(("USD", 2)), None);
        assert_eq!(p.len(), 43);
        assert_eq!(p[0], FLAG_PAYMENT_TAG | FLAG_ASSET);
        assert_eq!(p[1], 36);
        assert_eq!(&p[2..38], tag.as_bytes());
        assert_eq!(&p[38..], &[3, b'U', b'S', b'D', 2]);
        let p = token_plaintext("t", None, None);
        assert_eq!(p, vec![FLAG_PAYMENT_TAG, 1, b't']);
        let receipt = ReceiptSetup {
            nonce: [0x11; 16],
            secret: [0x22; 32],
        };
        let p = token_plaintext("t", Some(("USD", 2)), Some(&receipt));
        assert_eq!(
            &p[..3],
            &[FLAG_PAYMENT_TAG | FLAG_RECEIPT | FLAG_ASSET, 1, b't']
        );
        assert_eq!(&p[3..19], &[0x11; 16]);
        assert_eq!(&p[19..51], &[0x22; 32]);
        assert_eq!(&p[51..], &[3, b'U', b'S', b'D', 2]);
    }

    #[test]
    fn parse_plaintext_variants() {
        // With receipt details (flag 2) and trailing junk: parsed and skipped.
        let mut p = vec![FLAG_PAYMENT_TAG | FLAG_RECEIPT | FLAG_ASSET, 2, b'a', b'b'];
        p.extend_from_slice(&[0x11; 48]);
        p.extend_from_slice(&[3, b'X', b'R', b'P', 9, 0xee, 0xff]);
        let receipt = ReceiptSetup {
            nonce: [0x11; 16],
            secret: [0x11; 32],
        };
        assert_eq!(
            parse_plaintext(&p),
            Ok(("ab".to_owned(), Some(("XRP".to_owned(), 9)), Some(receipt)))
        );
        // Unknown flag bits are ignored.
        assert_eq!(
            parse_plaintext(&[FLAG_PAYMENT_TAG | 0x80, 1, b'z']),
            Ok(("z".to_owned(), None, None))
        );
        // Long-form length prefix for a long tag.
        let long_tag = "x".repeat(200);
        let mut p = vec![FLAG_PAYMENT_TAG];
        oer::write_var_octet_string(&mut p, long_tag.as_bytes());
        assert_eq!(parse_plaintext(&p), Ok((long_tag, None, None)));
    }

    #[test]
    fn parse_plaintext_errors() {
        assert_eq!(
            parse_plaintext(&[]),
            Err(MalformedToken::Oer(OerError::UnexpectedEof))
        );
        assert_eq!(
            parse_plaintext(&[FLAG_PAYMENT_TAG, 5, b'a']),
            Err(MalformedToken::Oer(OerError::UnexpectedEof))
        );
        assert_eq!(
            parse_plaintext(&[FLAG_PAYMENT_TAG | FLAG_RECEIPT, 1, b'a', 0, 0]),
            Err(MalformedToken::Oer(OerError::UnexpectedEof))
        );
        assert_eq!(
            parse_plaintext(&[FLAG_PAYMENT_TAG | FLAG_ASSET, 1, b'a', 3, b'U', b'S', b'D']),
            Err(MalformedToken::Oer(OerError::UnexpectedEof))
        );
        assert_eq!(
            parse_plaintext(&[FLAG_PAYMENT_TAG, 0x80]),
            Err(MalformedToken::Oer(OerError::EmptyLengthPrefix))
        );
        assert_eq!(
            parse_plaintext(&[FLAG_ASSET, 3, b'U', b'S', b'D', 2]),
            Err(MalformedToken::MissingPaymentTag)
        );
        assert_eq!(
            parse_plaintext(&[FLAG_PAYMENT_TAG, 0]),
            Err(MalformedToken::MissingPaymentTag)
        );
        assert_eq!(
            parse_plaintext(&[FLAG_PAYMENT_TAG, 1, 0xc3]),
            Err(MalformedToken::PaymentTagNotAscii)
        );
        assert_eq!(
            parse_plaintext(&[FLAG_PAYMENT_TAG, 2, 0xc3, 0xa9]),
            Err(MalformedToken::PaymentTagNotAscii)
        );
        assert_eq!(
            parse_plaintext(&[FLAG_PAYMENT_TAG | FLAG_ASSET, 1, b'a', 1, 0xff, 2]),
            Err(MalformedToken::AssetCodeNotUtf8)
        );
    }
}
