//! The answers opd sends to ILP Prepares: Rejects (triggered by our
//! address) and Fulfills, with STREAM replies encrypted under the
//! connection's shared secret. Shared by the receiver and the connector.

use opd_ilp::packet::{Fulfill, Reject};
use opd_ilp::{ErrorCode, StreamPacket};

use crate::Services;

pub(crate) fn fulfill(
    services: &Services,
    secret: &[u8; 32],
    fulfillment: [u8; 32],
    reply: &StreamPacket,
) -> Vec<u8> {
    Fulfill {
        fulfillment,
        data: encrypt(services, secret, reply),
    }
    .encode()
}

pub(crate) fn stream_reject(
    services: &Services,
    code: ErrorCode,
    secret: &[u8; 32],
    reply: &StreamPacket,
) -> Vec<u8> {
    reject_with(services, code, "", encrypt(services, secret, reply))
}

fn encrypt(services: &Services, secret: &[u8; 32], reply: &StreamPacket) -> Vec<u8> {
    let mut iv = [0u8; 12];
    services.random.fill(&mut iv);
    // A reply is a few frames: far below the ILP data limit.
    reply.encrypt_with(secret, iv).unwrap_or_default()
}

pub(crate) fn reject(services: &Services, code: ErrorCode, message: &str) -> Vec<u8> {
    reject_with(services, code, message, Vec::new())
}

pub(crate) fn reject_with(
    services: &Services,
    code: ErrorCode,
    message: &str,
    data: Vec<u8>,
) -> Vec<u8> {
    Reject {
        code,
        triggered_by: Some(services.config.ilp_address.clone()),
        message: message.to_owned(),
        data,
    }
    .encode()
}
