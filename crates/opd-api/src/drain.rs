//! Early answers that clients can read. When a handler answers before
//! reading the whole request body (413 for a body over the limit, 401
//! before a large upload), closing the connection with the body unread
//! makes most clients fail with a broken pipe instead of reading the
//! answer. This layer reads and drops what the handler left, up to
//! [`DRAIN_LIMIT`] bytes and for at most [`DRAIN_TIME`], before sending
//! the answer; a client sending more than that is cut off as before.
//!
//! A request that declares a `Content-Length` over the body limit is
//! answered 413 at once, without waiting for its body (which may never
//! come): the drain then goes on beside the answer, so a client still
//! sending can read it too.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::Request;
use axum::http::header;
use axum::middleware::Next;
use axum::response::IntoResponse as _;
use axum::response::Response;
use futures_util::StreamExt as _;

use crate::extract::{payload_too_large, MAX_BODY_BYTES};

/// The most of an unread body that is read to let the client finish.
pub const DRAIN_LIMIT: usize = 16 * 1024 * 1024;
/// The longest that is spent reading it.
pub const DRAIN_TIME: Duration = Duration::from_secs(10);

/// Whether the request announces a body.
fn has_body(request: &Request) -> bool {
    let headers = request.headers();
    headers.contains_key(header::TRANSFER_ENCODING)
        || headers
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.trim() != "0")
}

/// The body length the request declares, when it declares one.
fn declared_length(request: &Request) -> Option<u64> {
    request
        .headers()
        .get(header::CONTENT_LENGTH)?
        .to_str()
        .ok()?
        .trim()
        .parse()
        .ok()
}

pub(crate) async fn drain_unread(request: Request, next: Next) -> Response {
    if !has_body(&request) {
        return next.run(request).await;
    }
    if declared_length(&request).is_some_and(|n| n > MAX_BODY_BYTES as u64) {
        let body = request.into_body().into_data_stream();
        tokio::spawn(drain(body));
        return payload_too_large().into_response();
    }
    let (parts, body) = request.into_parts();
    // The handler reads the body through a shared handle; what it leaves
    // stays in the handle for the drain below.
    let shared = Arc::new(tokio::sync::Mutex::new(body.into_data_stream()));
    let reader = futures_util::stream::unfold(shared.clone(), |s| async move {
        let item = s.lock().await.next().await;
        item.map(|chunk| (chunk, s))
    });
    let response = next
        .run(Request::from_parts(parts, Body::from_stream(reader)))
        .await;
    drain(&mut *shared.lock().await).await;
    response
}

/// Reads and drops what is left of a body, within the drain's bounds.
async fn drain<S>(mut rest: S)
where
    S: futures_util::Stream<Item = Result<axum::body::Bytes, axum::Error>> + Unpin,
{
    let deadline = tokio::time::Instant::now() + DRAIN_TIME;
    let mut drained = 0usize;
    while let Ok(Some(Ok(chunk))) = tokio::time::timeout_at(deadline, rest.next()).await {
        drained += chunk.len();
        if drained > DRAIN_LIMIT {
            break;
        }
    }
}
