//! The load of `ilp-receive`: ILP Prepares built as a STREAM sender builds
//! them, sent to the server's ILP-over-HTTP endpoint (on plain connections,
//! see [`crate::plain`]).

use anyhow::Context;
use bytes::Bytes;
use hyper::header::{HeaderMap, HeaderValue, AUTHORIZATION, CONTENT_TYPE};
use hyper::Method;
use opd_ilp::{condition_for, Frame, IlpAddress, PacketType, StreamPacket};

use crate::plain::Origins;

/// The peer's token the bench's peer is set up with.
pub const PEER_TOKEN: &str = "opd-bench-peer-token";

/// A peer's view of one incoming payment: where to send, and the payment's
/// STREAM credentials.
pub struct IlpTarget {
    endpoint: String,
    headers: HeaderMap,
    address: String,
    secret: [u8; 32],
    origins: Origins,
}

impl IlpTarget {
    pub fn new(
        endpoint: &str,
        client: reqwest::Client,
        address: String,
        secret: [u8; 32],
    ) -> anyhow::Result<Self> {
        let mut headers = HeaderMap::new();
        headers.insert(AUTHORIZATION, format!("Bearer {PEER_TOKEN}").parse()?);
        headers.insert(
            CONTENT_TYPE,
            HeaderValue::from_static("application/octet-stream"),
        );
        Ok(IlpTarget {
            endpoint: endpoint.to_owned(),
            headers,
            address,
            secret,
            origins: Origins::new(client),
        })
    }

    /// Sends packet `n` (a fresh random IV, the condition from the shared
    /// secret): `Ok(true)` when it was fulfilled.
    pub async fn send(&self, n: u64) -> anyhow::Result<bool> {
        let body = Bytes::from(self.prepare(n)?);
        let (status, reply) = self
            .origins
            .send(Method::POST, &self.endpoint, &self.headers, body)
            .await?;
        // Type 13: a Fulfill.
        Ok(status.is_success() && reply.first() == Some(&13))
    }

    fn prepare(&self, n: u64) -> anyhow::Result<Vec<u8>> {
        let request = StreamPacket {
            sequence: n,
            ilp_packet_type: PacketType::Prepare,
            prepare_amount: 1,
            frames: vec![Frame::StreamMoney {
                stream_id: 1,
                shares: 1,
            }],
        };
        let data = request.encrypt_with(&self.secret, rand::random())?;
        let expires = opd_core::Timestamp::now_utc().unix_millis() + 30_000;
        let prepare = opd_ilp::packet::Prepare {
            amount: 1,
            expires_at: opd_ilp::Timestamp::from_unix_millis(expires)
                .context("expiry out of range")?,
            execution_condition: condition_for(&self.secret, &data),
            destination: IlpAddress::new(&self.address)?,
            data,
        };
        Ok(prepare.encode())
    }
}
