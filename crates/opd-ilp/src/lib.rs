#![doc = include_str!("../README.md")]
//!
//! ## Modules
//!
//! - [`address`] validates ILP addresses ([`IlpAddress`]);
//! - [`credentials`] mints and decodes stateless STREAM credentials;
//! - [`crypto`] holds STREAM's HMAC-SHA256 and AES-256-GCM primitives;
//! - [`oer`] reads and writes OER var-octet-strings.
#![warn(missing_docs)]

pub mod address;
pub mod credentials;
pub mod crypto;
mod error;
pub mod oer;

pub use address::{IlpAddress, MAX_ADDRESS_LEN};
pub use credentials::{
    decode_destination, generate_credentials, random_iv, DecodedToken, StreamCredentials,
    StreamSecret,
};
pub use crypto::{condition_for, condition_of, fulfillment_for};
pub use error::{IlpError, MalformedToken};
