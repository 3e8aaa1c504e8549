//! Error types.
//!
//! [`SigError`]'s `Display` strings are short lower-case phrases meant to be
//! shown after a prefix such as `"Signature validation error: "`.

use crate::jwk::JwkError;

/// Why a request signature (or its Content-Digest) was rejected, or why a
/// request could not be signed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SigError {
    /// A required header is absent. The payload is the header name as
    /// conventionally capitalised (`Signature-Input`, `Signature`,
    /// `Content-Digest`).
    #[error("missing {0} header")]
    MissingHeader(&'static str),

    /// A header is present but cannot be parsed or has the wrong shape.
    #[error("malformed {header} header: {reason}")]
    MalformedHeader {
        /// Conventionally capitalised header name.
        header: &'static str,
        /// Short description of the problem.
        reason: String,
    },

    /// `Signature` has no member for the label chosen from `Signature-Input`.
    #[error("Signature header has no signature labelled {0}")]
    MissingSignatureLabel(String),

    /// No signature in `Signature-Input` covers this required component.
    #[error("signature does not cover required component {0}")]
    MissingComponent(String),

    /// The signature covers a header field that the request does not have.
    #[error("covered component {0} is not present in the request")]
    ComponentNotPresent(String),

    /// The signature covers a component this implementation does not
    /// support (unknown derived component, component parameters, upper-case
    /// or duplicated names).
    #[error("unsupported covered component {0}")]
    UnsupportedComponent(String),

    /// The target URI given for the request could not be parsed, so a
    /// derived component such as `@authority` could not be computed.
    #[error("request target URI cannot be parsed")]
    InvalidTargetUri,

    /// The signature parameters have no (or an empty) `keyid`.
    #[error("missing keyid signature parameter")]
    MissingKeyId,

    /// The signature parameters have no `created`.
    #[error("missing created signature parameter")]
    MissingCreated,

    /// `created` is not a non-negative integer.
    #[error("invalid created signature parameter")]
    InvalidCreated,

    /// `created` is older than the policy's `max_age`.
    #[error("signature is too old")]
    Stale {
        /// The signature's `created` (unix seconds).
        created: u64,
        /// The verifier's clock (unix seconds).
        now: u64,
    },

    /// `created` is further in the future than the policy's
    /// `max_future_skew`.
    #[error("signature was created in the future")]
    Future {
        /// The signature's `created` (unix seconds).
        created: u64,
        /// The verifier's clock (unix seconds).
        now: u64,
    },

    /// `expires` is not after the current time.
    #[error("signature has expired")]
    Expired {
        /// The signature's `expires` (unix seconds).
        expires: u64,
        /// The verifier's clock (unix seconds).
        now: u64,
    },

    /// The `alg` parameter names something other than `ed25519`.
    #[error("unsupported signature algorithm {0}")]
    UnsupportedAlg(String),

    /// The Content-Digest header does not match the body.
    #[error("content digest does not match the request body")]
    DigestMismatch,

    /// The Ed25519 signature does not verify over the signature base.
    #[error("signature does not verify")]
    BadSignature,

    /// No key with the signature's `keyid` is known (or the JWK given has a
    /// different `kid`).
    #[error("no key found for keyid {0}")]
    UnknownKey(String),

    /// The key found for the `keyid` is not a usable Ed25519 JWK.
    #[error("invalid client key: {0}")]
    InvalidKey(#[from] JwkError),

    /// The signature was already accepted once (for a caller's replay
    /// log to report).
    #[error("signature has already been used")]
    Replayed,

    /// Signing only: the key id cannot be written as a structured-field
    /// string (it is empty or has characters outside printable ASCII).
    #[error("key id cannot be encoded in Signature-Input")]
    InvalidKeyId,
}
