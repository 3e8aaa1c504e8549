//! Prometheus metrics: the process's recorder, the request-duration layer
//! every listener gets, and `GET /metrics` on the admin listener.
//!
//! The `metrics` facade has one recorder per process, while a process may
//! run several servers (the tests start many; an embedder might too). So
//! [`install`] builds the Prometheus recorder once, on first call, keeps
//! its handle in a `OnceLock` and returns that handle to every later
//! caller: every server of a process records into, and renders, the same
//! registry. Counters therefore add up across the servers of a process;
//! tests compare values before and after what they do, with labels of
//! their own (an asset code no other test uses). The gauges sampled at
//! scrape time (database pools, webhook backlog) describe the server whose
//! admin listener was scraped.
//!
//! A recorder someone else installed first (an embedder's) is left in
//! place: opd then records into it, and `/metrics` renders an empty
//! registry, with a warning in the log.
//!
//! Recording is cheap enough for every request: a histogram sample is a
//! hash of its labels and an atomic push, and the in-flight gauge is
//! registered once per listener (what that costs beside a signed read is
//! measured in BENCHMARKS.md).
//!
//! Histogram samples wait in the recorder until they are folded into
//! buckets, at each scrape and by a background thread every few seconds,
//! so memory stays bounded when nobody scrapes.

use std::sync::OnceLock;
use std::time::{Duration, Instant};

use axum::extract::{MatchedPath, Request, State};
use axum::http::{header, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use metrics::{gauge, histogram, Label};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use opd_service::platform::metrics as m;

use crate::AppState;

/// How often histogram samples are folded into their buckets when nobody
/// scrapes.
const UPKEEP_EVERY: Duration = Duration::from_secs(5);

static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();

/// The process's Prometheus recorder, installed on first call (see the
/// module documentation).
pub fn install() -> &'static PrometheusHandle {
    HANDLE.get_or_init(|| {
        let recorder = builder().build_recorder();
        let handle = recorder.handle();
        if metrics::set_global_recorder(recorder).is_err() {
            tracing::warn!(
                "another metrics recorder was installed first; GET /metrics shows nothing"
            );
        }
        m::describe();
        gauge!(m::BUILD_INFO, "version" => env!("CARGO_PKG_VERSION")).set(1.0);
        let upkeep = handle.clone();
        let spawned = std::thread::Builder::new()
            .name("opd-metrics-upkeep".into())
            .spawn(move || loop {
                std::thread::sleep(UPKEEP_EVERY);
                upkeep.run_upkeep();
            });
        if let Err(e) = spawned {
            // Scrapes still fold the samples in; only an unscraped
            // process keeps them longer.
            tracing::warn!(error = %e, "cannot start the metrics upkeep thread");
        }
        handle
    })
}

/// The recorder's buckets: real Prometheus histograms (not summaries), so
/// quantiles can be computed across nodes.
fn builder() -> PrometheusBuilder {
    let with_buckets = || {
        PrometheusBuilder::new()
            .set_buckets_for_metric(
                Matcher::Full(m::HTTP_REQUEST_DURATION.into()),
                m::HTTP_BUCKETS,
            )?
            .set_buckets_for_metric(
                Matcher::Full(m::PAYMENT_DURATION.into()),
                m::PAYMENT_BUCKETS,
            )?
            .set_buckets_for_metric(Matcher::Full(m::ILP_PACKET_DURATION.into()), m::ILP_BUCKETS)
    };
    // Fails only for an empty list of buckets, and none is; summaries
    // would still be rendered.
    with_buckets().unwrap_or_else(|e| {
        tracing::warn!(error = %e, "metrics buckets rejected");
        PrometheusBuilder::new()
    })
}

/// Which listener a request came to (a label of the request metrics), with
/// its in-flight gauge registered once rather than per request.
#[derive(Clone)]
pub struct Listener {
    name: &'static str,
    active: metrics::Gauge,
}

impl Listener {
    /// The metrics of the listener `name` (`open_payments`, `admin`, ...).
    pub fn new(name: &'static str) -> Self {
        install();
        Self {
            name,
            active: gauge!(m::HTTP_ACTIVE_REQUESTS, "listener" => name),
        }
    }
}

impl std::fmt::Debug for Listener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Listener").field(&self.name).finish()
    }
}

/// The request metrics of one listener: duration by method, route
/// template and status, and requests in flight. Added outside every other
/// layer, so it sees the final status (panics included) and the route
/// axum matched.
pub async fn track(State(listener): State<Listener>, request: Request, next: Next) -> Response {
    let method = method_label(request.method());
    // The template (`/incoming-payments/{id}`), never the raw path: the
    // label's values are as many as the routes.
    let matched = request.extensions().get::<MatchedPath>().cloned();
    listener.active.increment(1.0);
    // Decrements when the request ends, answered or dropped.
    let _in_flight = InFlight(&listener.active);
    let started = Instant::now();
    let response = next.run(request).await;
    // A router behind another (the Open Payments routes behind tenant
    // resolution) leaves its match on the response.
    let route = matched
        .or_else(|| response.extensions().get::<MatchedPath>().cloned())
        .map_or_else(|| "unmatched".to_owned(), |p| p.as_str().to_owned());
    let labels = [
        Label::from_static_parts("listener", listener.name),
        Label::from_static_parts("http_request_method", method),
        Label::new("http_route", route),
        Label::new("http_response_status_code", status_label(response.status())),
    ];
    histogram!(m::HTTP_REQUEST_DURATION, labels.iter()).record(started.elapsed().as_secs_f64());
    response
}

/// Leaves the route template a router matched on its response, for
/// [`track`] outside it (add with `route_layer`).
pub async fn remember_route(request: Request, next: Next) -> Response {
    let matched = request.extensions().get::<MatchedPath>().cloned();
    let mut response = next.run(request).await;
    if let Some(matched) = matched {
        response.extensions_mut().insert(matched);
    }
    response
}

struct InFlight<'a>(&'a metrics::Gauge);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.decrement(1.0);
    }
}

/// The method, or `_OTHER` for one outside the standard set (OpenTelemetry's
/// rule, which also keeps the label bounded).
fn method_label(method: &Method) -> &'static str {
    match *method {
        Method::GET => "GET",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::DELETE => "DELETE",
        Method::PATCH => "PATCH",
        Method::HEAD => "HEAD",
        Method::OPTIONS => "OPTIONS",
        Method::CONNECT => "CONNECT",
        Method::TRACE => "TRACE",
        _ => "_OTHER",
    }
}

/// The status as a label, without an allocation for the common ones.
fn status_label(status: StatusCode) -> metrics::SharedString {
    let common = match status.as_u16() {
        200 => "200",
        201 => "201",
        202 => "202",
        204 => "204",
        302 => "302",
        303 => "303",
        400 => "400",
        401 => "401",
        403 => "403",
        404 => "404",
        405 => "405",
        409 => "409",
        413 => "413",
        429 => "429",
        500 => "500",
        503 => "503",
        other => return other.to_string().into(),
    };
    common.into()
}

/// `GET /metrics`: the Prometheus text format. The database pools and the
/// webhook backlog are sampled now, for this server.
pub async fn scrape(State(app): State<AppState>) -> Response {
    let handle = install();
    let services = &app.services;
    m::sample(
        services.store.as_ref(),
        services.config.webhook_url.is_some(),
        services.clock.now(),
    )
    .await;
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        handle.render(),
    )
        .into_response()
}
