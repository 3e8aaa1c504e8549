//! The answers opd sends to ILP Prepares: Rejects (triggered by our
//! address) and Fulfills, with STREAM replies encrypted under the
//! connection's shared secret. Shared by the receiver and the connector.
//! Pure builders: they take the address and the random source (for the
//! replies' nonces) they use.

use opd_core::Random;
use opd_ilp::packet::{Fulfill, Reject};
use opd_ilp::{ErrorCode, IlpAddress, StreamPacket};

pub(crate) fn fulfill(
    random: &dyn Random,
    secret: &[u8; 32],
    fulfillment: [u8; 32],
    reply: &StreamPacket,
) -> Vec<u8> {
    Fulfill {
        fulfillment,
        data: encrypt(random, secret, reply),
    }
    .encode()
}

/// A Reject from `by` carrying the STREAM reply.
pub(crate) fn stream_reject(
    by: &IlpAddress,
    random: &dyn Random,
    code: ErrorCode,
    secret: &[u8; 32],
    reply: &StreamPacket,
) -> Vec<u8> {
    reject_with(by, code, "", encrypt(random, secret, reply))
}

fn encrypt(random: &dyn Random, secret: &[u8; 32], reply: &StreamPacket) -> Vec<u8> {
    let mut iv = [0u8; 12];
    random.fill(&mut iv);
    // A reply is a few frames: far below the ILP data limit.
    reply.encrypt_with(secret, iv).unwrap_or_default()
}

/// A Reject from `by` without data.
pub(crate) fn reject(by: &IlpAddress, code: ErrorCode, message: &str) -> Vec<u8> {
    reject_with(by, code, message, Vec::new())
}

/// A Reject from `by` with `data`.
pub(crate) fn reject_with(
    by: &IlpAddress,
    code: ErrorCode,
    message: &str,
    data: Vec<u8>,
) -> Vec<u8> {
    Reject {
        code,
        triggered_by: Some(by.clone()),
        message: message.to_owned(),
        data,
    }
    .encode()
}
