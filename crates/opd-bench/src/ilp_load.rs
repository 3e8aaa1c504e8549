//! The load of `ilp-receive`: ILP Prepares built as a STREAM sender builds
//! them, sent to the server's ILP-over-HTTP endpoint.
//!
//! On `http://` endpoints (the server the bench starts) the packets go on
//! plain HTTP/1.1 connections of hyper's own client, one request at a time
//! each, kept in a small pool. The load generator shares the machine's
//! cores with the server, so whatever it spends per packet is taken from
//! the server: through reqwest (a URL parsed per request, its pool, its
//! per-request set-up) it spent about 34 µs of CPU per packet, about as much
//! as half the server's. `https://` endpoints (`--target` with
//! `--ilp-url`) still go through reqwest.

use std::net::SocketAddr;
use std::sync::Mutex;

use anyhow::Context;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use opd_ilp::{condition_for, Frame, IlpAddress, PacketType, StreamPacket};

/// The peer's token the bench's peer is set up with.
pub const PEER_TOKEN: &str = "opd-bench-peer-token";

/// A peer's view of one incoming payment: where to send, and the payment's
/// STREAM credentials.
pub struct IlpTarget {
    endpoint: Endpoint,
    address: String,
    secret: [u8; 32],
}

enum Endpoint {
    Plain(Plain),
    Tls {
        url: reqwest::Url,
        client: reqwest::Client,
    },
}

/// An `http://` endpoint and its idle connections.
struct Plain {
    addr: SocketAddr,
    host: String,
    path: String,
    bearer: String,
    idle: Mutex<Vec<SendRequest<Full<Bytes>>>>,
}

impl IlpTarget {
    pub async fn new(
        endpoint: &str,
        client: reqwest::Client,
        address: String,
        secret: [u8; 32],
    ) -> anyhow::Result<Self> {
        let url = reqwest::Url::parse(endpoint).context("the ILP endpoint is not a URL")?;
        let endpoint = match url.scheme() {
            "http" => {
                let host = url.host_str().context("the ILP endpoint has no host")?;
                let port = url.port_or_known_default().unwrap_or(80);
                let addr = tokio::net::lookup_host((host, port))
                    .await?
                    .next()
                    .context("the ILP endpoint's host has no address")?;
                Endpoint::Plain(Plain {
                    addr,
                    host: format!("{host}:{port}"),
                    path: url.path().to_owned(),
                    bearer: format!("Bearer {PEER_TOKEN}"),
                    idle: Mutex::new(Vec::new()),
                })
            }
            _ => Endpoint::Tls { url, client },
        };
        Ok(IlpTarget {
            endpoint,
            address,
            secret,
        })
    }

    /// Sends packet `n` (a fresh random IV, the condition from the shared
    /// secret): `Ok(true)` when it was fulfilled.
    pub async fn send(&self, n: u64) -> anyhow::Result<bool> {
        let body = Bytes::from(self.prepare(n)?);
        let (ok, reply) = match &self.endpoint {
            Endpoint::Plain(plain) => plain.post(body).await?,
            Endpoint::Tls { url, client } => {
                let r = client
                    .post(url.clone())
                    .bearer_auth(PEER_TOKEN)
                    .header("content-type", "application/octet-stream")
                    .body(body)
                    .send()
                    .await?;
                (r.status().is_success(), r.bytes().await?)
            }
        };
        // Type 13: a Fulfill.
        Ok(ok && reply.first() == Some(&13))
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

impl Plain {
    async fn post(&self, body: Bytes) -> anyhow::Result<(bool, Bytes)> {
        let mut conn = self.take().await?;
        conn.ready().await?;
        let request = hyper::Request::post(&self.path)
            .header(hyper::header::HOST, &self.host)
            .header(hyper::header::AUTHORIZATION, &self.bearer)
            .header(hyper::header::CONTENT_TYPE, "application/octet-stream")
            .body(Full::new(body))?;
        let response = conn.send_request(request).await?;
        let ok = response.status().is_success();
        let reply = response.into_body().collect().await?.to_bytes();
        if !conn.is_closed() {
            self.idle
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(conn);
        }
        Ok((ok, reply))
    }

    /// An idle connection, or a new one.
    async fn take(&self) -> anyhow::Result<SendRequest<Full<Bytes>>> {
        loop {
            let idle = self.idle.lock().unwrap_or_else(|e| e.into_inner()).pop();
            match idle {
                Some(conn) if !conn.is_closed() => return Ok(conn),
                Some(_closed) => continue,
                None => break,
            }
        }
        let stream = tokio::net::TcpStream::connect(self.addr).await?;
        stream.set_nodelay(true)?;
        let (conn, driver) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
        tokio::spawn(driver);
        Ok(conn)
    }
}
