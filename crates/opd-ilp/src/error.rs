//! The crate's error type.

use thiserror::Error;

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
    pub fn reject_code(&self) -> Option<&'static str> {
        match self {
            Self::NotAddressedToServer => Some("F02"),
            Self::InvalidTokenEncoding | Self::TokenDecryptionFailed | Self::MalformedToken(_) => {
                Some("F06")
            }
            Self::InvalidAddress(_)
            | Self::InvalidSecret(_)
            | Self::InvalidPaymentTag(_)
            | Self::CredentialsTooLong { .. } => None,
        }
    }
}
