//! The crate's error type.

use thiserror::Error;

use crate::error_code::ErrorCode;
use crate::oer::OerError;

/// Everything that can go wrong in this crate.
///
/// The decoding variants map onto the ILP rejects that
/// `@interledger/stream-receiver` sends; see [`IlpError::reject_code`].
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum IlpError {
    /// A string does not match the Open Payments ILP address pattern.
    #[error("invalid ILP address: {0}")]
    InvalidAddress(&'static str),

    /// A server secret is not 32 bytes of standard or url-safe base64.
    #[error("invalid STREAM server secret: {0}")]
    InvalidSecret(&'static str),

    /// A payment tag is empty or not ASCII.
    #[error("invalid payment tag: {0}")]
    InvalidPaymentTag(&'static str),

    /// The generated destination address would not be a valid ILP address,
    /// in practice because it exceeds 1023 bytes.
    #[error("credentials do not fit in an ILP address ({len} bytes, max 1023)")]
    CredentialsTooLong {
        /// Length the address would have had.
        len: usize,
    },

    /// The destination is not `server_address + "." + token...`, or the
    /// token segment is empty.
    #[error("destination is not addressed to this STREAM server")]
    NotAddressedToServer,

    /// The token segment is not canonical unpadded base64url.
    #[error("connection token is not valid base64url")]
    InvalidTokenEncoding,

    /// The token is shorter than IV plus tag, or AES-256-GCM authentication
    /// failed (another server secret, or a modified token).
    #[error("connection token could not be decrypted")]
    TokenDecryptionFailed,

    /// The decrypted token does not follow the token layout.
    #[error("connection token is malformed: {0}")]
    MalformedToken(#[from] MalformedToken),
}

/// Why an authentic (successfully decrypted) token could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum MalformedToken {
    /// A field ran past the end, or a length prefix was invalid.
    #[error("{0}")]
    Oer(#[from] OerError),
    /// The flags do not announce a payment tag.
    #[error("no payment tag")]
    MissingPaymentTag,
    /// The payment tag contains non-ASCII bytes.
    #[error("payment tag is not ASCII")]
    PaymentTagNotAscii,
    /// The asset code is not UTF-8.
    #[error("asset code is not UTF-8")]
    AssetCodeNotUtf8,
}

impl IlpError {
    /// The ILP error code a STREAM receiver rejects with for this error, as
    /// `@interledger/stream-receiver` does: `F02` when the packet is not
    /// addressed to the server, `F06` when the token is not one of ours.
    /// `None` for errors that only occur while generating credentials or
    /// parsing configuration.
    pub fn reject_code(&self) -> Option<ErrorCode> {
        match self {
            Self::NotAddressedToServer => Some(ErrorCode::F02_UNREACHABLE),
            Self::InvalidTokenEncoding | Self::TokenDecryptionFailed | Self::MalformedToken(_) => {
                Some(ErrorCode::F06_UNEXPECTED_PAYMENT)
            }
            Self::InvalidAddress(_)
            | Self::InvalidSecret(_)
            | Self::InvalidPaymentTag(_)
            | Self::CredentialsTooLong { .. } => None,
        }
    }
}

/// Why an ILP packet, a STREAM packet or one of their fields could not be
/// read (or, for [`PacketError::DataTooLong`], written).
///
/// A receiver that cannot parse an ILP Prepare rejects it with `F01`
/// (invalid packet); one that cannot decrypt or parse the STREAM data inside
/// rejects with `F06`, as `@interledger/stream-receiver` does.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum PacketError {
    /// A field ran past the end, a length prefix was invalid or a var-uint
    /// did not fit in 64 bits.
    #[error("{0}")]
    Oer(#[from] OerError),
    /// The type byte is not 12 (Prepare), 13 (Fulfill) or 14 (Reject).
    #[error("unknown ILP packet type {0}")]
    UnknownPacketType(u8),
    /// A decoder for one packet type was given another type.
    #[error("expected ILP packet type {expected}, found {found}")]
    WrongPacketType {
        /// The type the caller asked for.
        expected: u8,
        /// The type byte in the input.
        found: u8,
    },
    /// Bytes were left over after the packet (or the F08 data) ended.
    #[error("{0} unexpected trailing bytes")]
    TrailingBytes(usize),
    /// The expiry is not 17 ASCII digits forming a real UTC date and time
    /// (`YYYYMMDDHHmmssSSS`).
    #[error("invalid ILP timestamp")]
    InvalidTimestamp,
    /// A destination or `triggeredBy` is not a valid ILP address.
    #[error("invalid ILP address in packet")]
    InvalidAddress,
    /// A reject code is not `F`, `T` or `R` followed by two digits.
    #[error("invalid ILP error code")]
    InvalidErrorCode,
    /// A `data` field (or STREAM data to encrypt) is longer than an ILP
    /// packet allows (32767 bytes, RFC 27).
    #[error("data of {0} bytes exceeds the ILP limit")]
    DataTooLong(usize),
    /// A STREAM packet's version byte is not 1.
    #[error("unsupported STREAM version {0}")]
    UnsupportedStreamVersion(u8),
    /// STREAM data did not authenticate under the shared secret (wrong
    /// secret, tampered, or shorter than IV plus tag).
    #[error("STREAM data could not be decrypted")]
    DecryptionFailed,
}
