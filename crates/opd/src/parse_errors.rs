//! JSON bodies for the answers hyper writes by itself. A request hyper
//! cannot parse (a malformed request line or header, a head over its size
//! limit, a URI too long) never reaches our handlers: hyper answers it with
//! an empty `400`, `431` or `414` and closes the connection. Every error
//! opd sends is JSON, so the connection's writer recognises those canned
//! answers (an error status with `content-length: 0` and no
//! `content-type`, which no handler of ours sends) and replaces them with
//! the same status and a JSON error body.
//!
//! hyper writes a response head in one buffer when the connection does
//! not take vectored writes, which this wrapper declares; a head that
//! arrives in pieces is passed through untouched.

use std::io;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// A connection whose canned hyper errors are rewritten as JSON.
#[derive(Debug)]
pub struct JsonParseErrors<S> {
    inner: S,
    /// A rewritten answer still to be written, and how much of it was.
    pending: Vec<u8>,
    written: usize,
}

impl<S> JsonParseErrors<S> {
    pub fn new(inner: S) -> Self {
        Self {
            inner,
            pending: Vec::new(),
            written: 0,
        }
    }
}

/// The code and description of a status hyper answers by itself.
fn error_for(status: &str) -> Option<(&'static str, &'static str)> {
    Some(match status {
        "400" => (
            "bad_request",
            "the request is not valid HTTP/1.1: malformed request line or header",
        ),
        "414" => ("uri_too_long", "the request target is too long"),
        "431" => (
            "headers_too_large",
            "the request head (request line and headers) is too large",
        ),
        _ => return None,
    })
}

/// The JSON answer replacing `head`, when `head` is one of hyper's canned
/// error answers.
fn rewrite(head: &[u8]) -> Option<Vec<u8>> {
    let text = std::str::from_utf8(head).ok()?;
    let head_text = text.strip_suffix("\r\n\r\n")?;
    let mut lines = head_text.split("\r\n");
    let status_line = lines.next()?;
    let mut parts = status_line.splitn(3, ' ');
    let version = parts.next()?;
    if version != "HTTP/1.1" && version != "HTTP/1.0" {
        return None;
    }
    let status = parts.next()?;
    let reason = parts.next().unwrap_or_default();
    let (code, description) = error_for(status)?;
    let headers: Vec<&str> = lines.collect();
    let named = |h: &str, name: &str| {
        h.split_once(':')
            .is_some_and(|(n, _)| n.trim().eq_ignore_ascii_case(name))
    };
    let empty = headers.iter().any(|h| {
        named(h, "content-length") && h.split_once(':').is_some_and(|(_, v)| v.trim() == "0")
    });
    if !empty || headers.iter().any(|h| named(h, "content-type")) {
        return None;
    }
    let body = serde_json::json!({"error": {"code": code, "description": description}}).to_string();
    let mut out = format!("{version} {status} {reason}\r\n");
    for h in headers
        .iter()
        .filter(|h| !named(h, "content-length") && !named(h, "connection"))
    {
        out.push_str(h);
        out.push_str("\r\n");
    }
    out.push_str("content-type: application/json\r\n");
    out.push_str(&format!("content-length: {}\r\n", body.len()));
    out.push_str("connection: close\r\n\r\n");
    out.push_str(&body);
    Some(out.into_bytes())
}

impl<S: AsyncWrite + Unpin> JsonParseErrors<S> {
    /// Writes what is left of a rewritten answer.
    fn poll_pending(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while self.written < self.pending.len() {
            let n =
                ready!(Pin::new(&mut self.inner).poll_write(cx, &self.pending[self.written..]))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            self.written += n;
        }
        self.pending.clear();
        self.written = 0;
        Poll::Ready(Ok(()))
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for JsonParseErrors<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for JsonParseErrors<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        ready!(this.poll_pending(cx))?;
        // Only a short buffer starting a response can be a canned answer;
        // anything else is passed through without a look.
        if buf.len() < 1024 && buf.starts_with(b"HTTP/1.") {
            if let Some(answer) = rewrite(buf) {
                this.pending = answer;
                // Written now as far as the socket takes it, the rest at
                // the next write, flush or shutdown.
                if let Poll::Ready(Err(e)) = this.poll_pending(cx) {
                    return Poll::Ready(Err(e));
                }
                return Poll::Ready(Ok(buf.len()));
            }
        }
        Pin::new(&mut this.inner).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        ready!(this.poll_pending(cx))?;
        Pin::new(&mut this.inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        ready!(this.poll_pending(cx))?;
        Pin::new(&mut this.inner).poll_shutdown(cx)
    }

    fn is_write_vectored(&self) -> bool {
        // hyper then writes each response head in one buffer.
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canned_errors_become_json() {
        let head =
            b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-length: 0\r\ndate: x\r\n\r\n";
        let out = String::from_utf8(rewrite(head).unwrap()).unwrap();
        assert!(out.starts_with("HTTP/1.1 431 Request Header Fields Too Large\r\n"));
        assert!(out.contains("content-type: application/json\r\n"));
        assert!(out.contains("date: x\r\n"));
        let body = out.split("\r\n\r\n").nth(1).unwrap();
        let v: serde_json::Value = serde_json::from_str(body).unwrap();
        assert_eq!(v["error"]["code"], "headers_too_large");
        assert!(out.contains(&format!("content-length: {}\r\n", body.len())));
    }

    #[test]
    fn our_own_answers_pass_untouched() {
        for head in [
            &b"HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\ncontent-length: 0\r\n\r\n"[..],
            b"HTTP/1.1 400 Bad Request\r\ncontent-length: 12\r\n\r\n",
            b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n",
            b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\nextra",
            b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n",
        ] {
            assert!(rewrite(head).is_none(), "{}", String::from_utf8_lossy(head));
        }
    }
}
