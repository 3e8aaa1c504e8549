//! A programmable hostile Interledger counterpart: an ILP-over-HTTP
//! endpoint that sits where a peer's endpoint is expected and, packet by
//! packet, forwards honestly to the real next hop or lies the way a bad
//! peer, next hop or STREAM receiver can (see [`Behaviour`]).
//!
//! It plays the receiver too when it can find a packet's shared secret
//! ([`HostileHop::know_receiver`], e.g. from the receiving server's STREAM
//! secret): then it can read a packet's STREAM request (to tell probes
//! from money), rewrite the receiver's replies and fulfil packets itself,
//! as a receiver's own server could.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::post;
use axum::Router;
use opd_core::ManualClock;
use opd_ilp::packet::{Fulfill, Packet, Prepare, Reject};
use opd_ilp::{AmountTooLarge, ErrorCode, PacketType, StreamPacket};

/// What the hop does with one packet.
#[derive(Debug, Clone)]
pub enum Behaviour {
    /// Forwards to the next hop and passes its answer back unchanged.
    Honest,
    /// Answers a Fulfill whose fulfillment is random (no proof), without
    /// forwarding.
    ForgeFulfill,
    /// Forwards; a Fulfill comes back with STREAM data that does not
    /// decrypt (the fulfillment stays valid).
    GarbleReply,
    /// Forwards; the receiver's reply (Fulfill or Reject) is re-encrypted
    /// claiming this amount arrived. Needs the secret.
    Claim(u64),
    /// Forwards; the receiver's reply is re-encrypted without its
    /// `ConnectionAssetDetails` frame: a receiver that does not state its
    /// asset. Needs the secret.
    HideAsset,
    /// Forwards; the receiver's reply claims its amount times `num / den`
    /// (a probe lying high or low). Needs the secret.
    ScaleClaim { num: u64, den: u64 },
    /// Plays the receiver: fulfils with the real fulfillment, claiming
    /// this amount, and forwards nothing (the money stops here). Needs the
    /// secret.
    FulfillHere(u64),
    /// Plays the receiver refusing the packet (F99 with its STREAM reply),
    /// claiming this amount arrived, and forwards nothing. Needs the
    /// secret.
    RefuseHere(u64),
    /// Answers F08 with this maximum (and the packet's amount as received).
    TooLarge(u64),
    /// Answers F08 without data.
    TooLargeNoData,
    /// Answers F08 whose data gives no usable details: a received amount
    /// and a maximum of 0.
    TooLargeZeros,
    /// Answers a Reject with this code.
    Reject(ErrorCode),
    /// Answers a Reject with this code and this many bytes of data (an
    /// answer as large as a peer may send).
    RejectWithData(ErrorCode, usize),
    /// Never answers: the request hangs until the sender gives up.
    Silent,
    /// Forwards, and passes the answer back unchanged only after this long:
    /// a slow link, over which the receiver has the money well before the
    /// sender hears of it.
    Slow(Duration),
    /// Forwards, waits a little (so that the other packets in flight are
    /// answered first), moves `clock` this far (past the packet's expiry),
    /// then answers: an answer that comes too late.
    Late(ManualClock, i64),
    /// Answers with bytes that are no ILP packet.
    Garbage,
}

/// What the hop knows of a packet when it picks a behaviour.
#[derive(Debug, Clone)]
pub struct Seen {
    pub prepare: Prepare,
    /// The packet's STREAM request, when the hop knows the secret and it
    /// decrypts.
    pub request: Option<StreamPacket>,
    /// How many packets the hop saw before this one.
    pub index: u64,
}

impl Seen {
    /// Whether it is a probe (unfulfillable: a STREAM request asking for
    /// nothing). `false` when the hop cannot read the request.
    pub fn is_probe(&self) -> bool {
        self.request.as_ref().is_some_and(|r| r.prepare_amount == 0)
    }
}

type Script = Box<dyn FnMut(&Seen) -> Behaviour + Send>;
type SecretOf = Arc<dyn Fn(&str) -> Option<[u8; 32]> + Send + Sync>;

struct Inner {
    /// The real next hop's endpoint and the token to present there.
    upstream: Option<(String, String)>,
    /// The shared secret of a packet's destination, when the hop knows it.
    secret_of: Option<SecretOf>,
    script: Script,
}

/// The running hop.
pub struct HostileHop {
    /// Its ILP-over-HTTP endpoint (any bearer token is accepted).
    pub url: String,
    inner: Arc<Mutex<Inner>>,
    seen: Arc<AtomicU64>,
    tally: Arc<Tally>,
    task: tokio::task::JoinHandle<()>,
}

impl std::fmt::Debug for HostileHop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostileHop")
            .field("url", &self.url)
            .finish()
    }
}

/// Money the hop took out of the honest flow, for balance equations.
#[derive(Debug, Default)]
struct Tally {
    /// Amounts of packets it fulfilled itself ([`Behaviour::FulfillHere`]).
    kept: AtomicU64,
    /// Amounts of packets the next hop fulfilled that it answered too late
    /// ([`Behaviour::Late`]).
    late: AtomicU64,
}

#[derive(Clone)]
struct Shared {
    inner: Arc<Mutex<Inner>>,
    seen: Arc<AtomicU64>,
    tally: Arc<Tally>,
    http: reqwest::Client,
}

impl HostileHop {
    /// Starts a hop on a loopback port, honest until told otherwise.
    pub async fn start() -> Self {
        let inner = Arc::new(Mutex::new(Inner {
            upstream: None,
            secret_of: None,
            script: Box::new(|_| Behaviour::Honest),
        }));
        let seen = Arc::new(AtomicU64::new(0));
        let tally = Arc::new(Tally::default());
        let shared = Shared {
            inner: inner.clone(),
            seen: seen.clone(),
            tally: tally.clone(),
            http: crate::tls::client(),
        };
        let app = Router::new()
            .route("/", post(packet))
            .route("/{*path}", post(packet))
            .with_state(shared);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/ilp", listener.local_addr().unwrap());
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Self {
            url,
            inner,
            seen,
            tally,
            task,
        }
    }

    /// Where honest packets go, and the token presented there.
    pub fn forward_to(&self, endpoint: &str, token: &str) {
        self.inner.lock().unwrap().upstream = Some((endpoint.to_owned(), token.to_owned()));
    }

    /// How to find the shared secret of a destination address: the hop
    /// can now read and forge STREAM data, as the receiver's own server
    /// could.
    pub fn know_receiver(
        &self,
        secret_of: impl Fn(&str) -> Option<[u8; 32]> + Send + Sync + 'static,
    ) {
        self.inner.lock().unwrap().secret_of = Some(Arc::new(secret_of));
    }

    /// One behaviour for every packet.
    pub fn always(&self, behaviour: Behaviour) {
        self.script(move |_| behaviour.clone());
    }

    /// A behaviour chosen per packet.
    pub fn script(&self, script: impl FnMut(&Seen) -> Behaviour + Send + 'static) {
        self.inner.lock().unwrap().script = Box::new(script);
    }

    /// How many packets it has seen.
    pub fn packets_seen(&self) -> u64 {
        self.seen.load(Ordering::SeqCst)
    }

    /// The amounts of the packets it fulfilled itself, keeping the money.
    pub fn kept(&self) -> u64 {
        self.tally.kept.load(Ordering::SeqCst)
    }

    /// The amounts of the packets the next hop fulfilled but it passed
    /// back after their expiry.
    pub fn late_fulfilled(&self) -> u64 {
        self.tally.late.load(Ordering::SeqCst)
    }
}

impl Drop for HostileHop {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn random32() -> [u8; 32] {
    let mut b = [0u8; 32];
    rand::RngCore::fill_bytes(&mut rand::thread_rng(), &mut b);
    b
}

fn reject(code: ErrorCode, data: Vec<u8>) -> Vec<u8> {
    Reject {
        code,
        triggered_by: Some("test.hostile".parse().unwrap()),
        message: "hostile".into(),
        data,
    }
    .encode()
}

/// The receiver's reply in `data`, re-encrypted claiming `claim(old)`.
fn reclaim(secret: &[u8; 32], data: &[u8], claim: impl Fn(u64) -> u64) -> Option<Vec<u8>> {
    let mut reply = StreamPacket::decrypt_and_decode(secret, data).ok()?;
    reply.prepare_amount = claim(reply.prepare_amount);
    reply.encrypt_with(secret, [9; 12]).ok()
}

/// `answer` with its STREAM reply's asset details taken out.
fn hide_asset(secret: Option<[u8; 32]>, answer: Vec<u8>) -> Vec<u8> {
    let Some(secret) = secret else {
        return answer;
    };
    let without = |data: &[u8]| -> Option<Vec<u8>> {
        let mut reply = StreamPacket::decrypt_and_decode(&secret, data).ok()?;
        reply
            .frames
            .retain(|f| !matches!(f, opd_ilp::stream::Frame::ConnectionAssetDetails { .. }));
        reply.encrypt_with(&secret, [9; 12]).ok()
    };
    match Packet::decode(&answer) {
        Ok(Packet::Fulfill(f)) => match without(&f.data) {
            Some(data) => Fulfill { data, ..f }.encode(),
            None => answer,
        },
        Ok(Packet::Reject(r)) => match without(&r.data) {
            Some(data) => Reject { data, ..r }.encode(),
            None => answer,
        },
        _ => answer,
    }
}

/// `answer` with its STREAM reply's claim rewritten.
fn rewrite_claim(secret: Option<[u8; 32]>, answer: Vec<u8>, claim: impl Fn(u64) -> u64) -> Vec<u8> {
    let Some(secret) = secret else {
        return answer;
    };
    match Packet::decode(&answer) {
        Ok(Packet::Fulfill(f)) => match reclaim(&secret, &f.data, claim) {
            Some(data) => Fulfill { data, ..f }.encode(),
            None => answer,
        },
        Ok(Packet::Reject(r)) => match reclaim(&secret, &r.data, claim) {
            Some(data) => Reject { data, ..r }.encode(),
            None => answer,
        },
        _ => answer,
    }
}

async fn forward(shared: &Shared, upstream: Option<(String, String)>, body: Bytes) -> Vec<u8> {
    let Some((url, token)) = upstream else {
        return reject(ErrorCode::F02_UNREACHABLE, Vec::new());
    };
    let sent = shared
        .http
        .post(url)
        .bearer_auth(token)
        .header("content-type", "application/octet-stream")
        .body(body)
        .timeout(Duration::from_secs(30))
        .send()
        .await;
    match sent {
        Ok(r) => r.bytes().await.map(|b| b.to_vec()).unwrap_or_default(),
        Err(_) => reject(ErrorCode::T01_PEER_UNREACHABLE, Vec::new()),
    }
}

async fn packet(State(shared): State<Shared>, body: Bytes) -> (StatusCode, Vec<u8>) {
    let Ok(prepare) = Prepare::decode(&body) else {
        return (
            StatusCode::OK,
            reject(ErrorCode::F01_INVALID_PACKET, Vec::new()),
        );
    };
    let index = shared.seen.fetch_add(1, Ordering::SeqCst);
    let (behaviour, upstream, secret) = {
        let mut inner = shared.inner.lock().unwrap();
        let secret = inner
            .secret_of
            .as_ref()
            .and_then(|f| f(prepare.destination.as_str()));
        let request = secret.and_then(|s| StreamPacket::decrypt_and_decode(&s, &prepare.data).ok());
        let seen = Seen {
            prepare: prepare.clone(),
            request,
            index,
        };
        ((inner.script)(&seen), inner.upstream.clone(), secret)
    };
    let answer = match behaviour {
        Behaviour::Honest => forward(&shared, upstream, body).await,
        Behaviour::Slow(delay) => {
            let answer = forward(&shared, upstream, body).await;
            tokio::time::sleep(delay).await;
            answer
        }
        Behaviour::ForgeFulfill => Fulfill {
            fulfillment: random32(),
            data: Vec::new(),
        }
        .encode(),
        Behaviour::GarbleReply => {
            let answer = forward(&shared, upstream, body).await;
            match Packet::decode(&answer) {
                Ok(Packet::Fulfill(f)) => Fulfill {
                    data: vec![0xAB; 40],
                    ..f
                }
                .encode(),
                _ => answer,
            }
        }
        Behaviour::Claim(claim) => {
            rewrite_claim(secret, forward(&shared, upstream, body).await, |_| claim)
        }
        Behaviour::HideAsset => hide_asset(secret, forward(&shared, upstream, body).await),
        Behaviour::ScaleClaim { num, den } => {
            let answer = forward(&shared, upstream, body).await;
            rewrite_claim(secret, answer, |old| {
                let scaled = u128::from(old) * u128::from(num) / u128::from(den.max(1));
                u64::try_from(scaled).unwrap_or(u64::MAX)
            })
        }
        Behaviour::FulfillHere(claim) => match secret {
            Some(secret) => {
                let fulfillment = opd_ilp::fulfillment_for(&secret, &prepare.data);
                let sequence = StreamPacket::decrypt_and_decode(&secret, &prepare.data)
                    .map(|r| r.sequence)
                    .unwrap_or(0);
                let reply = StreamPacket {
                    sequence,
                    ilp_packet_type: PacketType::Fulfill,
                    prepare_amount: claim,
                    frames: Vec::new(),
                };
                shared
                    .tally
                    .kept
                    .fetch_add(prepare.amount, Ordering::SeqCst);
                Fulfill {
                    fulfillment,
                    data: reply.encrypt_with(&secret, [5; 12]).unwrap_or_default(),
                }
                .encode()
            }
            None => reject(ErrorCode::F02_UNREACHABLE, Vec::new()),
        },
        Behaviour::RefuseHere(claim) => match secret {
            Some(secret) => {
                let sequence = StreamPacket::decrypt_and_decode(&secret, &prepare.data)
                    .map(|r| r.sequence)
                    .unwrap_or(0);
                let reply = StreamPacket {
                    sequence,
                    ilp_packet_type: PacketType::Reject,
                    prepare_amount: claim,
                    frames: Vec::new(),
                };
                let data = reply.encrypt_with(&secret, [6; 12]).unwrap_or_default();
                reject(ErrorCode::F99_APPLICATION_ERROR, data)
            }
            None => reject(ErrorCode::F02_UNREACHABLE, Vec::new()),
        },
        Behaviour::TooLarge(max) => {
            let data = AmountTooLarge {
                received_amount: prepare.amount,
                maximum_amount: max,
            };
            reject(ErrorCode::F08_AMOUNT_TOO_LARGE, data.encode().to_vec())
        }
        Behaviour::TooLargeNoData => reject(ErrorCode::F08_AMOUNT_TOO_LARGE, Vec::new()),
        Behaviour::TooLargeZeros => {
            let data = AmountTooLarge {
                received_amount: 0,
                maximum_amount: 0,
            };
            reject(ErrorCode::F08_AMOUNT_TOO_LARGE, data.encode().to_vec())
        }
        Behaviour::Reject(code) => reject(code, Vec::new()),
        Behaviour::RejectWithData(code, len) => reject(code, vec![7; len]),
        Behaviour::Silent => std::future::pending().await,
        Behaviour::Late(clock, by_ms) => {
            let answer = forward(&shared, upstream, body).await;
            if matches!(Packet::decode(&answer), Ok(Packet::Fulfill(_))) {
                shared
                    .tally
                    .late
                    .fetch_add(prepare.amount, Ordering::SeqCst);
            }
            tokio::time::sleep(Duration::from_millis(300)).await;
            clock.advance_millis(by_ms);
            answer
        }
        Behaviour::Garbage => b"not an ilp packet".to_vec(),
    };
    (StatusCode::OK, answer)
}
