#![doc = include_str!("../README.md")]
//!
//! ## Modules
//!
//! - [`address`] validates ILP addresses ([`IlpAddress`]);
//! - [`packet`] encodes and decodes ILPv4 Prepare, Fulfill and Reject
//!   packets, with [`ErrorCode`] ([`error_code`]) and [`Timestamp`]
//!   ([`timestamp`]);
//! - [`stream`] encodes, decodes and encrypts STREAM packets and frames,
//!   [`stream::receiver`] holds a stateless receiver's decisions and
//!   [`stream::receipt`] STREAM receipts (RFC 39);
//! - [`credentials`] mints and decodes stateless STREAM credentials;
//! - [`crypto`] holds STREAM's HMAC-SHA256 and AES-256-GCM primitives and
//!   ILP conditions and fulfillments;
//! - [`oer`] reads and writes the OER pieces all of the above use.
#![warn(missing_docs)]

pub mod address;
pub mod credentials;
pub mod crypto;
mod error;
pub mod error_code;
pub mod oer;
pub mod packet;
pub mod stream;
pub mod timestamp;

pub use address::{IlpAddress, MAX_ADDRESS_LEN};
pub use credentials::{
    decode_destination, generate_credentials, generate_credentials_with_receipts, random_iv,
    DecodedToken, StreamCredentials, StreamSecret, TokenReceipt,
};
pub use crypto::{condition_for, condition_of, fulfillment_for};
pub use error::{IlpError, MalformedToken, PacketError};
pub use error_code::{ErrorClass, ErrorCode};
pub use packet::{AmountTooLarge, Fulfill, Packet, PacketType, Prepare, Reject, MAX_DATA_LEN};
pub use stream::receipt::{create_receipt, verify_receipt, Receipt, ReceiptError, ReceiptSetup};
pub use stream::{Frame, StreamErrorCode, StreamPacket};
pub use timestamp::Timestamp;
