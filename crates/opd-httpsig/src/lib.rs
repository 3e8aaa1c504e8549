#![doc = include_str!("../README.md")]
//!
//! ## Modules
//!
//! - [`jwk`] holds the Ed25519 JWK types;
//! - [`digest`] produces and checks Content-Digest;
//! - [`sign`] signs requests like the Node client;
//! - [`verify`] parses and verifies signatures.
#![warn(missing_docs)]

mod base;
pub mod digest;
mod error;
pub mod jwk;
mod sf;
pub mod sign;
pub mod verify;

pub use base::{build_signature_base, RequestParts};
pub use digest::{content_digest, verify_content_digest};
pub use error::SigError;
pub use jwk::{Jwk, JwkError, Jwks};
pub use sign::{
    sign_request, signed_request_headers, SignedHeaders, JSON_CONTENT_TYPE, SIGNATURE_LABEL,
};
pub use verify::{parse_signature, ParsedSignature, VerificationKey, VerifyPolicy};

/// Re-exported so callers need not depend on `ed25519-dalek` directly.
pub use ed25519_dalek::{SigningKey, VerifyingKey};
