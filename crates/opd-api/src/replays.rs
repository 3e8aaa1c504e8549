//! The replay layer: a state-changing request identical to one already
//! accepted gets that one's response, and never runs again (see
//! `opd_service::access::replays` for the rule and the fingerprint).
//!
//! For every POST, PUT, PATCH and DELETE of the resource and authorization
//! server listeners, the layer:
//! 1. on the authorization server, answers at once from the replay log when
//!    the identical request was already answered (waiting while it runs) —
//!    before the handler looks at any credential, because the first
//!    request may itself have replaced it (a continuation rotates its
//!    token, a cancel deletes the grant);
//! 2. otherwise hands the handler a [`ReplaySlot`]: the shared signature
//!    check (`crate::resource_server::auth::authenticate`, `auth_server::verify`) claims the
//!    request there after verifying it, or leaves the answer of an
//!    identical request that won the race (with the replay log in the
//!    database, the handler hands the slot's claim to its use case, whose
//!    store write carries it: `auth.claim()`, `RequestMeta::claim`);
//! 3. records the response of a claimed request (status, kept headers and
//!    body up to `MAX_STORED_RESPONSE`; a larger one is recorded as not
//!    kept, and its replays are refused with `replayed_request`), or sends
//!    the left answer instead of the handler's response.
//!
//! A client that hangs up must not cut a payment off halfway nor leave its
//! replays without an answer: when the connection drops the request, the
//! handler is handed to the runtime to finish ([`FinishOnDrop`]). It runs
//! inline otherwise: a task per request would wake another worker thread
//! for every state-changing request (measured in BENCHMARKS.md).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderName, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use opd_service::access::replays::{
    self, Outcome, ReplaySlot, Slot, StoredResponse, KEPT_HEADERS, MAX_STORED_RESPONSE,
};
use tracing::Instrument as _;

use crate::error::ApiError;
use crate::extract::{payload_too_large, MAX_BODY_BYTES};
use crate::resource_server::auth::{as_target_uri, replay_error, rs_target_uri};
use crate::AppState;

/// The layer of the resource server listener.
pub(crate) async fn resource_server(
    State(state): State<AppState>,
    request: Request,
    next: Next,
) -> Response {
    handle(state, request, next, rs_target_uri, true).await
}

/// The layer of the authorization server listener.
pub(crate) async fn auth_server(
    State(state): State<AppState>,
    request: Request,
    next: Next,
) -> Response {
    handle(state, request, next, as_target_uri, false).await
}

async fn handle(
    state: AppState,
    request: Request,
    next: Next,
    target_uri: fn(&Parts, &AppState) -> String,
    resource_server: bool,
) -> Response {
    if !replays::changes_state(request.method()) {
        return next.run(request).await;
    }
    let (mut parts, body) = request.into_parts();
    // The fingerprint covers the body, so it is read here (within the same
    // limit the handlers' extractors apply) and handed on as bytes.
    let body = match axum::body::to_bytes(body, MAX_BODY_BYTES).await {
        Ok(b) => b,
        Err(_) => return payload_too_large().into_response(),
    };
    let target = target_uri(&parts, &state);
    let as_uri = crate::resource_server::auth::as_uri_of(&parts.extensions, &state);
    let request_parts =
        opd_httpsig::RequestParts::new(&parts.method, &target, &parts.headers, Some(&body));
    // Only the authorization server's requests replace the credentials they
    // present; on the resource server the signature check finds a replay
    // (`admit`), which spares every other request a look-up in the log (a
    // round trip when the log is shared through the database).
    if !resource_server {
        match replays::recall(&state.services, &request_parts).await {
            Ok(Some(stored)) => return replayed(&stored),
            Ok(None) => {}
            Err(e) => return refusal(&as_uri, e, resource_server),
        }
    }
    let slot = ReplaySlot::default();
    parts.extensions.insert(slot.clone());
    let request = Request::from_parts(parts, Body::from(body));
    // The handler and the recording of its response run to the end even
    // when the client hangs up (see the module doc).
    let run = async move {
        let response = next.run(request).await;
        match slot.take() {
            Slot::Empty => response,
            Slot::Answer(stored) => replayed(&stored),
            Slot::Claimed(guard) => {
                let (response, outcome) = record(response).await;
                guard.finish(outcome).await;
                response
            }
            Slot::Deferred(fingerprint) => {
                let (response, outcome) = record(response).await;
                match replays::settle(&state.services, &fingerprint, &slot, || outcome).await {
                    Ok(None) => response,
                    Ok(Some(stored)) => replayed(&stored),
                    Err(e) => refusal(&as_uri, e, resource_server),
                }
            }
        }
    };
    // A panic (a bug) unwinds to the listener's panic layer; the claim,
    // dropped with the future, is recorded as lost, so replays are refused
    // rather than run again.
    FinishOnDrop::new(run.instrument(tracing::Span::current())).await
}

/// Polls a future in place; if dropped before it completed (the connection
/// went away), hands the rest of it to the runtime to complete.
struct FinishOnDrop<F: Future<Output = Response> + Send + 'static> {
    future: Option<Pin<Box<F>>>,
    /// Set while the future is being polled: a future that panicked must
    /// not be polled again.
    polling: bool,
}

impl<F: Future<Output = Response> + Send + 'static> FinishOnDrop<F> {
    fn new(future: F) -> Self {
        Self {
            future: Some(Box::pin(future)),
            polling: false,
        }
    }
}

impl<F: Future<Output = Response> + Send + 'static> Future for FinishOnDrop<F> {
    type Output = Response;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Response> {
        // The future is boxed, so `Self` is `Unpin`.
        let this = self.get_mut();
        let Some(future) = this.future.as_mut() else {
            // Polled after completion: a caller bug, answered as one.
            return Poll::Ready(ApiError::internal().into_response());
        };
        this.polling = true;
        let polled = future.as_mut().poll(cx);
        this.polling = false;
        if polled.is_ready() {
            this.future = None;
        }
        polled
    }
}

impl<F: Future<Output = Response> + Send + 'static> Drop for FinishOnDrop<F> {
    fn drop(&mut self) {
        let Some(future) = self.future.take() else {
            return;
        };
        if self.polling {
            return;
        }
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                runtime.spawn(future);
            }
            Err(_) => tracing::warn!("runtime gone: an unfinished request was dropped"),
        }
    }
}

/// A refusal from the replay check, as the listener's JSON error: the
/// resource server's 401s carry its `WWW-Authenticate` challenge.
fn refusal(as_uri: &str, e: opd_service::access::AccessError, resource_server: bool) -> Response {
    use opd_service::access::AccessError;
    match e {
        _ if resource_server => crate::resource_server::auth::access_error(as_uri, e),
        AccessError::Replayed | AccessError::ReplayPending | AccessError::Answered => {
            replay_error(&e)
        }
        other => crate::resource_server::auth::access_error(as_uri, other),
    }
    .into_response()
}

/// Keeps what a replay needs of `response`, and gives the response back.
async fn record(response: Response) -> (Response, Outcome) {
    let (parts, body) = response.into_parts();
    let fits = axum::body::HttpBody::size_hint(&body)
        .exact()
        .is_some_and(|n| usize::try_from(n).is_ok_and(|n| n <= MAX_STORED_RESPONSE));
    if !fits {
        return (Response::from_parts(parts, body), Outcome::NotKept);
    }
    let bytes = match axum::body::to_bytes(body, MAX_STORED_RESPONSE).await {
        Ok(b) => b,
        Err(e) => {
            tracing::error!(error = %e, "could not read a response to record it");
            return (ApiError::internal().into_response(), Outcome::NotKept);
        }
    };
    let headers = KEPT_HEADERS
        .iter()
        .filter_map(|name| {
            let value = parts.headers.get(*name)?.to_str().ok()?;
            Some(((*name).to_owned(), value.to_owned()))
        })
        .collect();
    let stored = StoredResponse {
        status: parts.status.as_u16(),
        headers,
        body: bytes.to_vec(),
    };
    let response = Response::from_parts(parts, Body::from(bytes));
    (response, Outcome::Response(Arc::new(stored)))
}

/// What `Json(body)` with `status` is, as a replay would send it again:
/// for a response known before the request's write
/// (`replays::answer_ahead`).
pub(crate) fn json_answer<T: serde::Serialize>(status: u16, body: &T) -> Option<StoredResponse> {
    let body = serde_json::to_vec(body).ok()?;
    if body.len() > MAX_STORED_RESPONSE {
        return None;
    }
    Some(StoredResponse {
        status,
        headers: vec![("content-type".to_owned(), "application/json".to_owned())],
        body,
    })
}

/// The `201` response to a request that creates a resource, when the
/// replay log asks for it before the resource is stored
/// ([`answer`](Self::answer)): rendered and serialized once, and the same
/// bytes are sent ([`respond`](Self::respond)). Once, because a view may
/// hold values made fresh at each rendering (an incoming payment's STREAM
/// credentials).
pub(crate) struct Created(Option<StoredResponse>);

impl Created {
    pub(crate) fn new() -> Self {
        Self(None)
    }

    /// Keeps `view`'s `201` response; a copy for the replay log.
    pub(crate) fn answer<V: serde::Serialize>(&mut self, view: &V) -> Option<StoredResponse> {
        self.0 = json_answer(201, view);
        self.0.clone()
    }

    /// The response kept, or `render`'s view as `201` JSON when the
    /// answer was not asked for.
    pub(crate) fn respond<V: serde::Serialize>(self, render: impl FnOnce() -> V) -> Response {
        match self.0 {
            Some(kept) => replayed(&kept),
            None => (StatusCode::CREATED, axum::Json(render())).into_response(),
        }
    }
}

/// The stored response, as sent again.
fn replayed(stored: &StoredResponse) -> Response {
    let status = StatusCode::from_u16(stored.status).unwrap_or(StatusCode::OK);
    let mut response = (status, Body::from(stored.body.clone())).into_response();
    for (name, value) in &stored.headers {
        if let (Ok(n), Ok(v)) = (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(value),
        ) {
            response.headers_mut().insert(n, v);
        }
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn records_status_kept_headers_and_body() {
        let response = Response::builder()
            .status(201)
            .header("content-type", "application/json")
            .header("location", "https://rs.example/x")
            .header("set-cookie", "a=b")
            .body(Body::from("{\"id\":1}"))
            .unwrap();
        let (response, outcome) = record(response).await;
        let Outcome::Response(stored) = outcome else {
            panic!("not kept")
        };
        assert_eq!(stored.status, 201);
        assert_eq!(
            stored.headers,
            vec![
                ("content-type".to_owned(), "application/json".to_owned()),
                ("location".to_owned(), "https://rs.example/x".to_owned()),
            ]
        );
        assert_eq!(stored.body, b"{\"id\":1}");
        let again = replayed(&stored);
        assert_eq!(again.status(), 201);
        assert!(again.headers().get("set-cookie").is_none());
        let body = axum::body::to_bytes(response.into_body(), 1024)
            .await
            .unwrap();
        assert_eq!(&body[..], b"{\"id\":1}");
    }

    #[tokio::test]
    async fn an_answer_given_ahead_is_what_recording_the_response_keeps() {
        let body = serde_json::json!({ "id": "https://rs.example/quotes/1", "n": [1, 2] });
        let response = (StatusCode::CREATED, axum::Json(body.clone())).into_response();
        let (_, recorded) = record(response).await;
        let Outcome::Response(recorded) = recorded else {
            panic!("not kept")
        };
        assert_eq!(json_answer(201, &body).as_ref(), Some(recorded.as_ref()));
    }

    #[tokio::test]
    async fn a_request_dropped_halfway_still_runs_to_the_end() {
        let (go, gate) = tokio::sync::oneshot::channel::<()>();
        let (done, finished) = tokio::sync::oneshot::channel::<()>();
        let mut request = Box::pin(FinishOnDrop::new(async move {
            let _ = gate.await;
            let _ = done.send(());
            Response::new(Body::empty())
        }));
        // Started, then the connection goes away.
        let first = std::future::poll_fn(|cx| Poll::Ready(request.as_mut().poll(cx))).await;
        assert!(first.is_pending());
        drop(request);
        go.send(()).unwrap();
        finished.await.unwrap();
    }

    #[tokio::test]
    async fn large_responses_are_passed_on_but_not_kept() {
        let big = vec![b'x'; MAX_STORED_RESPONSE + 1];
        let response = Response::new(Body::from(big.clone()));
        let (response, outcome) = record(response).await;
        assert_eq!(outcome, Outcome::NotKept);
        let body = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .unwrap();
        assert_eq!(body.len(), big.len());
    }
}
