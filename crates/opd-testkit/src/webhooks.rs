//! A webhook receiver for tests with several `opd serve` processes: every
//! delivery is recorded with the process that sent it (each process gets
//! its own URL, `/hook/<node>/<incarnation>`), its signature is checked
//! against the shared secret, and the receiver can refuse some first
//! deliveries to make opd retry.
//!
//! [`WebhookReceiver::assert_each_once`] then holds opd to its promise:
//! one event per change (one id per (type, resource)), and each delivered
//! exactly once, except a delivery again after the receiver refused the
//! previous one, or after the process that made the previous one was
//! killed (it may have died between the receiver's answer and recording
//! it: delivery is at least once across a crash, never otherwise).

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use axum::http::StatusCode;
use hmac::{Hmac, Mac};
use serde_json::Value;

/// One webhook delivery as it arrived.
#[derive(Debug, Clone)]
pub struct Arrival {
    pub id: String,
    pub kind: String,
    /// `data.id`: the resource the event is about.
    pub resource: String,
    pub node: usize,
    pub incarnation: u64,
    pub at: Instant,
    /// The receiver answered 503 (so opd must deliver it again).
    pub refused: bool,
}

/// Records deliveries and kills; see the module documentation.
pub struct WebhookReceiver {
    base: String,
    secret: String,
    /// Refuse the first delivery of every `refuse_every`-th new event id
    /// (0: accept everything).
    refuse_every: u64,
    new_ids: AtomicU64,
    arrivals: Mutex<Vec<Arrival>>,
    /// When each (node, incarnation) was killed (after it was reaped).
    kills: Mutex<HashMap<(usize, u64), Instant>>,
    /// Deliveries that were malformed or badly signed.
    bad: Mutex<Vec<String>>,
}

impl WebhookReceiver {
    /// A receiver on a loopback port, checking signatures made with
    /// `secret`, refusing the first delivery of every `refuse_every`-th
    /// event (0: none).
    pub async fn start(secret: &str, refuse_every: u64) -> Arc<Self> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let receiver = Arc::new(Self {
            base: format!("http://{}", listener.local_addr().unwrap()),
            secret: secret.to_owned(),
            refuse_every,
            new_ids: AtomicU64::new(0),
            arrivals: Mutex::default(),
            kills: Mutex::default(),
            bad: Mutex::default(),
        });
        let app = axum::Router::new()
            .route("/hook/{node}/{incarnation}", axum::routing::post(receive))
            .with_state(receiver.clone());
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        receiver
    }

    /// The webhook URL for process `incarnation` of node `node`.
    pub fn url(&self, node: usize, incarnation: u64) -> String {
        format!("{}/hook/{node}/{incarnation}", self.base)
    }

    /// Records that the process was killed (call after reaping it).
    pub fn killed(&self, node: usize, incarnation: u64) {
        self.kills
            .lock()
            .unwrap()
            .insert((node, incarnation), Instant::now());
    }

    pub fn arrivals(&self) -> Vec<Arrival> {
        self.arrivals.lock().unwrap().clone()
    }

    /// The (type, resource) pairs delivered and accepted so far.
    pub fn accepted(&self) -> BTreeSet<(String, String)> {
        self.arrivals()
            .into_iter()
            .filter(|a| !a.refused)
            .map(|a| (a.kind, a.resource))
            .collect()
    }

    /// How many deliveries the receiver refused.
    pub fn refusals(&self) -> usize {
        self.arrivals().iter().filter(|a| a.refused).count()
    }

    /// Panics unless every delivery so far was well signed, each change
    /// has one event id, and each event was delivered once but for the
    /// allowed repeats (see the module documentation). With `expected`,
    /// also unless every accepted (type, resource) is one of those.
    pub fn assert_each_once(&self, expected: Option<&BTreeSet<(String, String)>>) {
        let bad = self.bad.lock().unwrap().clone();
        assert!(bad.is_empty(), "bad webhook deliveries: {bad:#?}");
        let kills = self.kills.lock().unwrap().clone();
        let mut by_change: HashMap<(String, String), Vec<Arrival>> = HashMap::new();
        for a in self.arrivals() {
            by_change
                .entry((a.kind.clone(), a.resource.clone()))
                .or_default()
                .push(a);
        }
        for ((kind, resource), mut list) in by_change {
            let ids: BTreeSet<&str> = list.iter().map(|a| a.id.as_str()).collect();
            assert_eq!(
                ids.len(),
                1,
                "one event per change: {kind} of {resource} has ids {ids:?}"
            );
            list.sort_by_key(|a| a.at);
            for pair in list.windows(2) {
                let (first, again) = (&pair[0], &pair[1]);
                let killed_between = kills
                    .get(&(first.node, first.incarnation))
                    .is_some_and(|k| *k < again.at);
                assert!(
                    first.refused || killed_between,
                    "{kind} of {resource} delivered again by node {} (process {}) {:?} after \
                     node {} (process {}) delivered it and was answered 200, and that process \
                     was not killed in between",
                    again.node,
                    again.incarnation,
                    again.at - first.at,
                    first.node,
                    first.incarnation
                );
            }
        }
        if let Some(expected) = expected {
            let accepted = self.accepted();
            let extra: Vec<_> = accepted.difference(expected).collect();
            assert!(
                extra.is_empty(),
                "webhook events for changes that did not happen: {extra:?}"
            );
        }
    }

    /// Whether `Opd-Signature: t=<ms>, v1=<hex>` is the HMAC-SHA256 of
    /// `<t>.<body>` under the secret (computed here, not by opd's code).
    fn signed(&self, header: &str, body: &str) -> bool {
        let Some((t, v1)) = header
            .split_once(", v1=")
            .and_then(|(t, v1)| Some((t.strip_prefix("t=")?, v1)))
        else {
            return false;
        };
        let mut mac = Hmac::<sha2::Sha256>::new_from_slice(self.secret.as_bytes()).unwrap();
        mac.update(format!("{t}.{body}").as_bytes());
        let want: String = mac
            .finalize()
            .into_bytes()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        want == v1
    }
}

async fn receive(
    axum::extract::State(hooks): axum::extract::State<Arc<WebhookReceiver>>,
    axum::extract::Path((node, incarnation)): axum::extract::Path<(usize, u64)>,
    headers: axum::http::HeaderMap,
    body: String,
) -> StatusCode {
    let at = Instant::now();
    let signature = headers
        .get("opd-signature")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    if !hooks.signed(signature, &body) {
        hooks
            .bad
            .lock()
            .unwrap()
            .push(format!("bad signature {signature:?} on {body}"));
    }
    let event: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
    let (Some(id), Some(kind), Some(resource)) = (
        event["id"].as_str(),
        event["type"].as_str(),
        event["data"]["id"].as_str(),
    ) else {
        hooks
            .bad
            .lock()
            .unwrap()
            .push(format!("malformed event {body}"));
        return StatusCode::BAD_REQUEST;
    };
    let mut arrivals = hooks.arrivals.lock().unwrap();
    let new = !arrivals.iter().any(|a| a.id == id);
    let refused = new
        && hooks.refuse_every > 0
        && (hooks.new_ids.fetch_add(1, Ordering::SeqCst) + 1) % hooks.refuse_every == 0;
    arrivals.push(Arrival {
        id: id.to_owned(),
        kind: kind.to_owned(),
        resource: resource.to_owned(),
        node,
        incarnation,
        at,
        refused,
    });
    if refused {
        StatusCode::SERVICE_UNAVAILABLE
    } else {
        StatusCode::OK
    }
}
