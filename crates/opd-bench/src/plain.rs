//! Plain HTTP/1.1 connections for the load: hyper's own client
//! connections, one request at a time each, kept per origin and reused.
//!
//! The load generator shares the machine's cores with the servers it
//! measures, so whatever it spends per request is taken from them. Through
//! reqwest (a URL parsed, with IDNA, for every request; its pool and
//! per-request set-up) it spent about 34 µs of CPU per ILP packet, as much
//! as half the server's. `https://` targets (`--target`) still go through
//! reqwest.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use anyhow::Context;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::SendRequest;
use hyper::header::{HeaderMap, HOST};
use hyper::{Method, StatusCode};
use hyper_util::rt::TokioIo;

/// The pools of every `http://` origin the load has used, and reqwest for
/// any other scheme.
pub struct Origins {
    pools: Mutex<HashMap<String, Arc<Pool>>>,
    other: reqwest::Client,
}

impl Origins {
    pub fn new(other: reqwest::Client) -> Self {
        Self {
            pools: Mutex::default(),
            other,
        }
    }

    /// Sends `method` for `url` with `headers` and `body`: the answer's
    /// status and body.
    pub async fn send(
        &self,
        method: Method,
        url: &str,
        headers: &HeaderMap,
        body: Bytes,
    ) -> anyhow::Result<(StatusCode, Bytes)> {
        let Some(rest) = url.strip_prefix("http://") else {
            let request = self.other.request(method, url).headers(headers.clone());
            let r = request.body(body).send().await?;
            return Ok((r.status(), r.bytes().await?));
        };
        let (origin, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
        let path = if path.is_empty() { "/" } else { path };
        let pool = self.pool(origin).await?;
        let mut request = hyper::Request::builder()
            .method(method)
            .uri(path)
            .header(HOST, origin);
        for (name, value) in headers {
            request = request.header(name, value);
        }
        pool.send(request.body(Full::new(body))?).await
    }

    async fn pool(&self, origin: &str) -> anyhow::Result<Arc<Pool>> {
        if let Some(pool) = self.lock().get(origin) {
            return Ok(pool.clone());
        }
        let addr = tokio::net::lookup_host(origin)
            .await?
            .next()
            .with_context(|| format!("{origin} has no address"))?;
        let pool = Arc::new(Pool {
            addr,
            idle: Mutex::new(Vec::new()),
        });
        Ok(self.lock().entry(origin.to_owned()).or_insert(pool).clone())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Pool>>> {
        self.pools.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// One origin's idle connections.
struct Pool {
    addr: SocketAddr,
    idle: Mutex<Vec<SendRequest<Full<Bytes>>>>,
}

impl Pool {
    async fn send(
        &self,
        request: hyper::Request<Full<Bytes>>,
    ) -> anyhow::Result<(StatusCode, Bytes)> {
        let mut conn = self.take().await?;
        conn.ready().await?;
        let response = conn.send_request(request).await?;
        let status = response.status();
        let body = response.into_body().collect().await?.to_bytes();
        if !conn.is_closed() {
            self.idle
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(conn);
        }
        Ok((status, body))
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
