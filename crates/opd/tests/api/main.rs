//! End-to-end tests of the HTTP API: the real server on port 0, real HTTP.
//! Every Open Payments and GNAP response goes through the test clients of
//! `opd_testkit`, which validate it against the Open Payments OpenAPI
//! documents (successes always, errors for shape and, where the spec
//! documents their status, against the spec: see `opd_testkit::spec`).

#![expect(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "tests fail loudly by design"
)]

mod access;
mod admin;
mod admin_flood;
mod asking_to_peer;
mod auth;
mod auth_path;
mod auto_peering;
mod cli_helpers;
mod client;
mod client_networks;
mod connector;
mod dashboard;
mod descriptors;
mod guessing;
mod hardening;
mod hostile;
mod hostile_sim;
mod ilp;
mod ilp_deadlines;
mod incoming_payments;
mod limits;
mod metrics;
mod outage;
mod outbound;
mod owner_page;
mod payments;
mod quotes;
mod reference_server;
mod remote;
mod remote_money;
mod replays;
mod retention;
mod sdk;
mod spsp;
mod spsp_events;
mod tenant_routes;
mod tenants;
mod tls;
mod wallet_addresses;

use opd_openapi::Api;
use serde_json::{json, Value};

pub fn amount(value: &str, code: &str, scale: u8) -> Value {
    json!({ "value": value, "assetCode": code, "assetScale": scale })
}

/// Asserts a resource-server response matches `operation` in the spec. The
/// test clients validate every response already; tests call this where
/// they also mean to say which operation the response belongs to.
pub fn spec_rs(operation: &str, status: reqwest::StatusCode, body: &Value) {
    opd_openapi::assert_response(Api::ResourceServer, operation, status.as_u16(), body);
}

/// Asserts a wallet-address-server response matches `operation` (as
/// `spec_rs`, an explicit check on top of the clients' own).
pub fn spec_wa(operation: &str, status: reqwest::StatusCode, body: &Value) {
    opd_openapi::assert_response(Api::WalletAddressServer, operation, status.as_u16(), body);
}

/// Asserts an error body: status and code.
#[track_caller]
pub fn assert_error(status: reqwest::StatusCode, body: &Value, want_status: u16, want_code: &str) {
    assert_eq!(status.as_u16(), want_status, "{body}");
    assert_eq!(body["error"]["code"], want_code, "{body}");
    assert!(
        body["error"]["description"]
            .as_str()
            .is_some_and(|d| !d.is_empty()),
        "{body}"
    );
}

// The mapping from requests to operations and the validation itself live
// in `opd_testkit::spec`, where every test client uses them.
pub use opd_testkit::spec::{operation_of, spec_reply};

/// Log lines captured from this test's thread (the server under test runs
/// on it).
#[derive(Clone, Default)]
pub struct Captured(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl Captured {
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Captured {
    type Writer = Captured;
    fn make_writer(&'a self) -> Self::Writer {
        self.clone()
    }
}

/// The captured lines, and the guards that keep the capture on.
pub type Capture = (
    Captured,
    (tracing::Dispatch, tracing::subscriber::DefaultGuard),
);

/// Captures this thread's log lines at `level` and above until the guards
/// drop.
pub fn capture_logs(level: tracing::Level) -> Capture {
    capture_with(level, None::<tracing_subscriber::layer::Identity>)
}

/// [`capture_logs`] as `opd serve` filters them: the libraries' records
/// (the `log` crate's included) capped by
/// `opd::logging::dependencies_capped`.
pub fn capture_served_logs(level: tracing::Level) -> Capture {
    // The libraries that log through the `log` crate (tokio-postgres)
    // reach tracing through this, as under `opd serve`; once a process.
    let _ = tracing_log::LogTracer::init();
    capture_with(level, Some(opd::logging::dependencies_capped()))
}

fn capture_with<L>(level: tracing::Level, filter: Option<L>) -> Capture
where
    L: tracing_subscriber::Layer<
            tracing_subscriber::fmt::Subscriber<
                tracing_subscriber::fmt::format::DefaultFields,
                tracing_subscriber::fmt::format::Format,
                tracing::level_filters::LevelFilter,
                Captured,
            >,
        > + Send
        + Sync
        + 'static,
{
    use tracing_subscriber::layer::SubscriberExt as _;
    // tracing caches whether anyone listens to a log statement for the
    // whole process; with one subscriber alive it asks only the thread
    // that first runs the statement (another test's, listening to
    // nothing). A second one, alive for the test, makes it ask all.
    let second = tracing::Dispatch::new(tracing::subscriber::NoSubscriber::default());
    let captured = Captured::default();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(level)
        .with_ansi(false)
        .with_writer(captured.clone())
        .finish()
        .with(filter);
    let guard = tracing::subscriber::set_default(subscriber);
    (captured, (second, guard))
}
