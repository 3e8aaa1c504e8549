//! A hostile network between two opd servers: alice@A pays bob@B (1000 EUR
//! cents, quoted at 1123 USD cents) through a programmable hop
//! (`opd_testkit::hostile`) that forwards honestly or lies as a bad next
//! hop or receiver can. For each behaviour: the payment's outcome, and
//! every balance exact (alice, A's account for its peer B, A's liquidity at
//! B, bob's incoming payment), both ledgers balanced.

use opd_core::{Clock as _, OutgoingPaymentId};
use opd_ilp::packet::{Packet, Prepare};
use opd_ilp::{condition_of, ErrorCode, IlpAddress};
use opd_service::interledger::paths::PATH_TTL;
use opd_service::payments::outgoing::lifecycle::Step;
use opd_testkit::app::{Db, TestApp};
use opd_testkit::hostile::{Behaviour, HostileHop, Seen};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::remote::{
    admin_ok, balance, balanced, pair_of, paying, peer_balance, peer_id, Pair, Paying,
};

const ALICE_START: u64 = 10_000;
const A_LIQUIDITY_AT_B: u64 = 1_000_000;
const LONG_TOKENS_SECS: u64 = 10 * 365 * 24 * 3600;

pub(crate) struct Hostile {
    pub(crate) w: Paying,
    pub(crate) hop: HostileHop,
    /// Packets the hop saw while the payment was quoted.
    baseline: u64,
}

/// A and B on `db`, A's route to B through a hop that knows the receiver's
/// secret; the payment created, nothing sent. `adjust` changes A's
/// settings.
pub(crate) async fn hostile_on(db: Db, adjust: impl FnOnce(&mut opd::config::Settings)) -> Hostile {
    let (pair, hop) = behind_hop(db, adjust).await;
    let w = paying(pair).await;
    // The quote's probe is kept a few seconds; these tests are about what
    // the worker's own probe and packets meet, so it is let go stale.
    let stale = i64::try_from(PATH_TTL.as_millis()).unwrap();
    w.a.clock.advance_millis(stale);
    w.b.clock.advance_millis(stale);
    let baseline = hop.packets_seen();
    Hostile { w, hop, baseline }
}

/// A and B on `db` (their clocks together), A's route to B through an
/// honest hop that knows the receiver's secret.
async fn behind_hop(db: Db, adjust: impl FnOnce(&mut opd::config::Settings)) -> (Pair, HostileHop) {
    let a = TestApp::spawn_with(db, |s| {
        s.serve.ilp_address = "test.a".into();
        s.serve.access_token_ttl_secs = LONG_TOKENS_SECS;
        adjust(s);
    })
    .await;
    // Tokens outlive the hours a long randomized run moves the clocks.
    let b = TestApp::spawn_with(db, |s| {
        s.serve.ilp_address = "test.b".into();
        s.serve.access_token_ttl_secs = LONG_TOKENS_SECS;
    })
    .await;
    let pair = pair_of(a, b, A_LIQUIDITY_AT_B, None).await;
    let hop = HostileHop::start().await;
    hop.forward_to(&pair.b.ilp, "a-to-b");
    let b_at_a = peer_id(&pair.a, "b").await;
    admin_ok(
        &pair.a,
        Method::PATCH,
        &format!("/peers/{b_at_a}"),
        json!({ "http": { "outgoing": { "endpoint": hop.url, "authToken": "a-to-b" } } }),
    )
    .await;
    let Pair { a, b } = pair;
    // The hop can act as bob's server would: it finds each packet's
    // shared secret from B's STREAM secret.
    let services = b.services();
    let stream_secret = opd_service::platform::secrets::stream_secret(
        services.store.as_ref(),
        services.random.as_ref(),
        &services.config.secrets_key,
    )
    .await
    .unwrap();
    let b_address = services.config.ilp_address.clone();
    hop.know_receiver(move |destination| {
        opd_ilp::decode_destination(&stream_secret, &b_address, destination)
            .ok()
            .map(|t| t.shared_secret)
    });
    // Each server's clock starts at the time it was spawned: B's is set
    // to A's, so packet expiries mean the same on both.
    sync_clocks(&a, &b);
    (Pair { a, b }, hop)
}

/// Moves the clock that is behind up to the other's.
pub(crate) fn sync_clocks(a: &TestApp, b: &TestApp) {
    use opd_core::Clock as _;
    let ahead = a.clock.now().unix_millis() - b.clock.now().unix_millis();
    if ahead > 0 {
        b.clock.advance_millis(ahead);
    } else {
        a.clock.advance_millis(-ahead);
    }
}

async fn hostile() -> Hostile {
    hostile_on(Db::Sqlite, |_| {}).await
}

/// Money packets get `behaviour`; probes pass honestly.
fn money(behaviour: Behaviour) -> impl FnMut(&Seen) -> Behaviour + Send + 'static {
    move |seen: &Seen| {
        if seen.is_probe() {
            Behaviour::Honest
        } else {
            behaviour.clone()
        }
    }
}

/// Where every unit of the payment is, on both servers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Books {
    /// A's record of the payment: sent (USD cents) and delivered (EUR).
    pub(crate) sent: u64,
    pub(crate) delivered: u64,
    pub(crate) failed: bool,
    /// What B's incoming payment received (EUR cents).
    pub(crate) received: u64,
    /// What B took out of A's liquidity there (USD cents).
    pub(crate) b_took: u64,
}

impl Hostile {
    pub(crate) async fn books(&self) -> Books {
        let w = &self.w;
        let id = OutgoingPaymentId::parse(w.id.rsplit('/').next().unwrap()).unwrap();
        let p =
            w.a.services()
                .store
                .get_outgoing_payment(id)
                .await
                .unwrap()
                .unwrap();
        let (_, got) = w.b.get(&w.receiver).await;
        let received = got["receivedAmount"]["value"]
            .as_str()
            .unwrap()
            .parse()
            .unwrap();
        let books = Books {
            sent: p.sent,
            delivered: p.delivered,
            failed: p.state.as_str() == "failed",
            received,
            b_took: A_LIQUIDITY_AT_B - peer_balance(&w.b, "a").await,
        };
        // A's side of the balance equation, whatever happened: alice paid
        // exactly what left once the payment ended (it holds its whole
        // debit until then), and A's account for B holds exactly that.
        let ended = p.state.as_str() == "failed" || p.state.as_str() == "completed";
        let paid = if ended { books.sent } else { 1123 };
        assert_eq!(
            balance(&w.a, "alice").await,
            (ALICE_START - paid).to_string(),
            "{books:?}"
        );
        assert_eq!(peer_balance(&w.a, "b").await, books.sent, "{books:?}");
        assert!(books.sent <= 1123, "never past the quoted debit: {books:?}");
        assert!(books.delivered <= 1000, "never past the quote: {books:?}");
        // The payer's listing still reads (no total outside u64).
        w.listing_reads().await;
        balanced(&w.a).await;
        balanced(&w.b).await;
        books
    }

    /// Packets the hop saw since the payment was created (probes
    /// included: 13 per step).
    fn seen(&self) -> u64 {
        self.hop.packets_seen() - self.baseline
    }

    /// The `sentAmount` and `error` of the payment's
    /// `outgoing_payment.failed` event.
    async fn failed_event(&self) -> (String, String) {
        let events = self
            .w
            .a
            .services()
            .store
            .due_webhook_events(opd_core::Timestamp::from_unix_millis(i64::MAX / 2), 100)
            .await
            .unwrap();
        let failed: Vec<_> = events
            .iter()
            .filter(|e| e.kind.as_str() == "outgoing_payment.failed")
            .collect();
        assert_eq!(failed.len(), 1, "{events:?}");
        let event: Value = serde_json::from_str(&failed[0].data).unwrap();
        let data = event.get("data").unwrap_or(&event);
        (
            data["sentAmount"]["value"].as_str().unwrap().to_owned(),
            data["error"].as_str().unwrap_or_default().to_owned(),
        )
    }
}

#[tokio::test]
async fn forged_fulfills_move_no_money() {
    let h = hostile().await;
    h.hop.script(money(Behaviour::ForgeFulfill));
    let step = h.w.step().await;
    assert!(matches!(step, Step::Failed(..)), "{step:?}");
    let books = h.books().await;
    assert_eq!(
        books,
        Books {
            sent: 0,
            delivered: 0,
            failed: true,
            received: 0,
            b_took: 0
        }
    );
}

#[tokio::test]
async fn a_reply_that_does_not_decrypt_proves_only_the_minimum() {
    let h = hostile().await;
    h.hop.script(money(Behaviour::GarbleReply));
    // One packet of 1112 reaches B (1000 arrive); A counts its minimum
    // (ceil(1112 × 0.891) = 991), sends a little more, which B, complete,
    // refuses with a close: A pauses, reads the receiver, completes.
    let step = h.w.step().await;
    assert!(matches!(step, Step::Waiting(_)), "{step:?}");
    h.w.a.clock.advance_millis(1_000);
    let step = h.w.step().await;
    assert!(matches!(step, Step::Completed(_)), "{step:?}");
    let books = h.books().await;
    assert_eq!((books.received, books.failed), (1000, false), "{books:?}");
    assert_eq!(books.delivered, 991, "{books:?}");
    assert_eq!(books.sent, 1112, "{books:?}");
    assert_eq!(books.b_took, books.sent);
}

#[tokio::test]
async fn a_claim_of_u64_max_is_clamped_to_what_the_packet_could_deliver() {
    let h = hostile().await;
    h.hop.script(money(Behaviour::Claim(u64::MAX)));
    let step = h.w.step().await;
    assert!(matches!(step, Step::Completed(_)), "{step:?}");
    let books = h.books().await;
    assert_eq!(
        books,
        Books {
            sent: 1112,
            delivered: 1000,
            failed: false,
            received: 1000,
            b_took: 1112
        }
    );
}

#[tokio::test]
async fn a_claim_of_u64_max_is_clamped_on_postgres() {
    let h = hostile_on(Db::Postgres, |_| {}).await;
    h.hop.script(money(Behaviour::Claim(u64::MAX)));
    let step = h.w.step().await;
    assert!(matches!(step, Step::Completed(_)), "{step:?}");
    assert_eq!(h.books().await.delivered, 1000);
}

#[tokio::test]
async fn a_receiver_that_fulfils_claiming_nothing_stops_the_payment() {
    let h = hostile().await;
    h.hop.script(money(Behaviour::Claim(0)));
    let step = h.w.step().await;
    assert!(matches!(step, Step::Failed(..)), "{step:?}");
    // What really left is what the payer sees, in the state and the event.
    let books = h.books().await;
    assert_eq!(
        books,
        Books {
            sent: 1112,
            delivered: 0,
            failed: true,
            received: 1000,
            b_took: 1112
        }
    );
    let read = h.w.read().await;
    assert_eq!(read["failed"], true);
    assert_eq!(read["sentAmount"]["value"], "1112");
    let (sent, error) = h.failed_event().await;
    assert_eq!(sent, "1112");
    assert!(error.contains("less than its minimum"), "{error}");
    assert!(h.w.a.run_workers().await.is_empty());
}

#[tokio::test]
async fn a_receiver_that_keeps_the_money_itself_is_paid_once_then_stopped() {
    let h = hostile().await;
    // The receiver's server fulfils (it has the secret) claiming 0 and
    // forwards nothing: bob's payment at B gets nothing.
    h.hop.script(money(Behaviour::FulfillHere(0)));
    let step = h.w.step().await;
    assert!(matches!(step, Step::Failed(..)), "{step:?}");
    let books = h.books().await;
    assert_eq!(
        books,
        Books {
            sent: 1112,
            delivered: 0,
            failed: true,
            received: 0,
            b_took: 0
        }
    );
}

#[tokio::test]
async fn an_f08_with_a_maximum_of_zero_fails_the_payment_at_once() {
    let h = hostile().await;
    h.hop.script(money(Behaviour::TooLarge(0)));
    let step = h.w.step().await;
    match step {
        Step::Failed(_, reason) => assert!(reason.contains("too small"), "{reason}"),
        other => panic!("{other:?}"),
    }
    // 13 probes and one money packet.
    assert!(h.seen() <= 14, "{}", h.seen());
    let books = h.books().await;
    assert_eq!((books.sent, books.failed, books.received), (0, true, 0));
}

#[tokio::test]
async fn f08_without_usable_details_shrinks_a_bounded_number_of_times_then_fails() {
    // No data at all, or a received amount and a maximum of 0.
    for behaviour in [Behaviour::TooLargeNoData, Behaviour::TooLargeZeros] {
        let h = hostile().await;
        h.hop.script(money(behaviour.clone()));
        // One step: a few smaller packets, then it fails, with nothing sent.
        match h.w.step().await {
            Step::Failed(_, reason) => assert!(
                reason.contains("the path rejects every packet as too large"),
                "{behaviour:?}: {reason}"
            ),
            other => panic!("{behaviour:?}: {other:?}"),
        }
        let money_packets = h.seen() - 13;
        assert!(money_packets <= 9, "{money_packets} packets in one step");
        let books = h.books().await;
        assert_eq!((books.sent, books.failed, books.b_took), (0, true, 0));
        h.w.failed_with_money_back().await;
        let (sent, error) = h.failed_event().await;
        assert_eq!(sent, "0");
        assert!(error.contains("too large"), "{error}");
        assert!(h.w.a.run_workers().await.is_empty());
    }
}

/// Runs the payment's steps, each when it is due on A's clock, until it
/// ends: the last step, how many steps it took and how long it ran on A's
/// clock since it was created.
pub(crate) async fn until_ended(h: &Hostile) -> (Step, usize, i64) {
    let id = OutgoingPaymentId::parse(h.w.id.rsplit('/').next().unwrap()).unwrap();
    let store = &h.w.a.services().store;
    let created = store
        .get_outgoing_payment(id)
        .await
        .unwrap()
        .unwrap()
        .created_at;
    for steps in 1..=50 {
        let step = h.w.step().await;
        if matches!(step, Step::Completed(_) | Step::Failed(..)) {
            let ran = h.w.a.clock.now().unix_millis() - created.unix_millis();
            return (step, steps, ran);
        }
        let p = store.get_outgoing_payment(id).await.unwrap().unwrap();
        let wait = p.next_attempt_at.unix_millis() - h.w.a.clock.now().unix_millis();
        h.w.a.clock.advance_millis(wait.max(0));
        sync_clocks(&h.w.a, &h.w.b);
    }
    panic!("the payment did not end in 50 steps");
}

#[tokio::test]
async fn temporary_rejects_end_the_payment_after_its_attempts_without_progress() {
    let h = hostile().await;
    h.hop.script(money(Behaviour::Reject(
        ErrorCode::T04_INSUFFICIENT_LIQUIDITY,
    )));
    let (step, steps, ran) = until_ended(&h).await;
    let Step::Failed(_, reason) = step else {
        panic!("{step:?}");
    };
    assert!(reason.contains("8 attempts"), "{reason}");
    assert!(reason.contains("T04"), "{reason}");
    assert_eq!(steps, 8);
    // Well before its quote expires (5 minutes): about a minute.
    assert!(ran <= 65_000, "ran {ran} ms");
    let books = h.books().await;
    assert_eq!((books.sent, books.failed, books.b_took), (0, true, 0));
    h.w.failed_with_money_back().await;
    let (sent, error) = h.failed_event().await;
    assert_eq!((sent.as_str(), error.as_str()), ("0", reason.as_str()));
}

#[tokio::test]
async fn temporary_rejects_end_the_payment_after_its_time_without_progress() {
    let h = hostile_on(Db::Sqlite, |s| {
        s.serve.payment_stall_attempts = 1_000;
        s.serve.payment_stall_secs = 20;
    })
    .await;
    h.hop
        .script(money(Behaviour::Reject(ErrorCode::T99_APPLICATION_ERROR)));
    let (step, steps, ran) = until_ended(&h).await;
    let Step::Failed(_, reason) = step else {
        panic!("{step:?}");
    };
    assert!(reason.contains("T99"), "{reason}");
    // Its last attempt falls on the bound, not a backoff past it.
    assert!(
        (20_000..=21_000).contains(&ran),
        "ran {ran} ms in {steps} steps"
    );
    h.w.failed_with_money_back().await;
}

#[tokio::test]
async fn a_silent_path_ends_the_payment_within_its_bounds() {
    let h = hostile_on(Db::Sqlite, |s| {
        s.serve.ilp_packet_timeout_ms = 300;
        s.serve.payment_stall_attempts = 3;
    })
    .await;
    h.hop.script(money(Behaviour::Silent));
    let (step, steps, _) = until_ended(&h).await;
    assert!(matches!(step, Step::Failed(..)), "{step:?}");
    assert_eq!(steps, 3);
    let books = h.books().await;
    assert_eq!((books.sent, books.received, books.b_took), (0, 0, 0));
    h.w.failed_with_money_back().await;
}

#[tokio::test]
async fn a_peer_short_of_liquidity_can_be_topped_up_within_the_bounds() {
    let h = hostile().await;
    // T04 for the first five attempts, then the path carries the money.
    let (step, steps, _) = {
        let attempts = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
        let seen = attempts.clone();
        h.hop.script(move |s: &Seen| {
            use std::sync::atomic::Ordering;
            if s.is_probe() {
                return Behaviour::Honest;
            }
            if seen.fetch_add(1, Ordering::SeqCst) < 5 {
                Behaviour::Reject(ErrorCode::T04_INSUFFICIENT_LIQUIDITY)
            } else {
                Behaviour::Honest
            }
        });
        until_ended(&h).await
    };
    assert!(matches!(step, Step::Completed(_)), "{step:?}");
    assert_eq!(steps, 6);
    let books = h.books().await;
    assert_eq!((books.received, books.b_took), (1000, books.sent));
}

#[tokio::test]
async fn a_per_minute_packet_budget_pauses_a_payment() {
    let h = hostile_on(Db::Sqlite, |s| s.serve.ilp_packets_per_minute = 2).await;
    h.hop.script(money(Behaviour::TooLargeNoData));
    let step = h.w.step().await;
    assert!(matches!(step, Step::Waiting(_)), "{step:?}");
    assert_eq!(h.seen() - 13, 2, "two packets a minute");
    // Due again after the backoff, the minute is not over: nothing sent.
    h.w.a.clock.advance_millis(1_000);
    let seen = h.seen();
    let step = h.w.step().await;
    assert!(matches!(step, Step::Waiting(_)), "{step:?}");
    assert_eq!(h.seen(), seen, "nothing, not even probes");
}

/// A step's rounds together keep to the packets a minute allows: with
/// packets of about 100 (the first gets F08 with that maximum) and 6
/// packets a minute, the first step sends 6 money packets, whatever the
/// size of its rounds (at most 4 each), and the payment ends in later
/// minutes with every unit where it belongs.
#[tokio::test]
async fn a_step_s_rounds_together_keep_to_the_packets_a_minute_allows() {
    use std::sync::atomic::{AtomicU64, Ordering::SeqCst};
    let h = hostile_on(Db::Sqlite, |s| s.serve.ilp_packets_per_minute = 6).await;
    let money_packets = std::sync::Arc::new(AtomicU64::new(0));
    let n = money_packets.clone();
    h.hop.script(move |s: &Seen| {
        if s.is_probe() {
            return Behaviour::Honest;
        }
        match n.fetch_add(1, SeqCst) {
            0 => Behaviour::TooLarge(100),
            _ => Behaviour::Honest,
        }
    });
    // The rounds of the minute: the worker steps until nothing is due.
    let steps = h.w.a.run_workers().await;
    assert_eq!(money_packets.load(SeqCst), 6, "{steps:?}");
    assert!(matches!(steps.last(), Some(Step::Waiting(_))), "{steps:?}");
    // A minute on (and a moment: the packets of the minute before were
    // sent in the same millisecond as the money they moved, on this clock).
    for _minute in 0..10 {
        h.w.a.clock.advance_millis(61_000);
        sync_clocks(&h.w.a, &h.w.b);
        if matches!(h.w.a.run_workers().await.last(), Some(Step::Completed(_))) {
            break;
        }
    }
    let books = h.books().await;
    assert_eq!((books.received, books.failed), (1000, false), "{books:?}");
    assert_eq!(books.sent, books.b_took);
}

#[tokio::test]
async fn a_silent_next_hop_pauses_the_payment_and_moves_nothing() {
    let h = hostile_on(Db::Sqlite, |s| s.serve.ilp_packet_timeout_ms = 2_000).await;
    h.hop.script(money(Behaviour::Silent));
    let step = h.w.step().await;
    assert!(matches!(step, Step::Waiting(_)), "{step:?}");
    let books = h.books().await;
    assert_eq!((books.sent, books.failed, books.received), (0, false, 0));
    // Honest again: the payment goes through.
    h.hop.always(Behaviour::Honest);
    h.w.a.clock.advance_millis(1_000);
    let step = h.w.step().await;
    assert!(matches!(step, Step::Completed(_)), "{step:?}");
    let books = h.books().await;
    assert_eq!((books.received, books.b_took), (1000, books.sent));
}

#[tokio::test]
async fn a_fulfill_after_the_packets_expiry_is_not_paid_for() {
    let h = hostile().await;
    let clock = h.w.a.clock.clone();
    h.hop.script(money(Behaviour::Late(clock, 20_000)));
    let step = h.w.step().await;
    assert!(matches!(step, Step::Waiting(_)), "{step:?}");
    // B credited bob from A's liquidity there; A owes nothing for a
    // packet fulfilled after its expiry: the late hop bears it.
    let books = h.books().await;
    assert_eq!(
        books,
        Books {
            sent: 0,
            delivered: 0,
            failed: false,
            received: 1000,
            b_took: 1112
        }
    );
    // The receiver has what it asked: the payment completes, sending nothing.
    h.w.a.clock.advance_millis(1_000);
    let step = h.w.step().await;
    assert!(matches!(step, Step::Completed(_)), "{step:?}");
    assert_eq!(h.books().await.sent, 0);
}

#[tokio::test]
async fn probes_that_lie_low_fail_the_payment_and_lying_high_only_slows_it() {
    let h = hostile().await;
    h.hop.script(|seen: &Seen| {
        if seen.is_probe() {
            Behaviour::ScaleClaim { num: 1, den: 2 }
        } else {
            Behaviour::Honest
        }
    });
    let step = h.w.step().await;
    assert!(matches!(step, Step::Failed(..)), "{step:?}");
    let books = h.books().await;
    assert_eq!((books.sent, books.received), (0, 0));

    let h = hostile().await;
    h.hop.script(|seen: &Seen| {
        if seen.is_probe() {
            Behaviour::ScaleClaim { num: 2, den: 1 }
        } else {
            Behaviour::Honest
        }
    });
    // Packets sized by the inflated rate are small; the last ones may
    // deliver less than the quoted rate asks, and the payment then fails.
    // Either way, nothing is counted beyond what arrived, and A pays only
    // for what B took.
    let mut steps = 0;
    loop {
        steps += 1;
        match h.w.step().await {
            Step::Completed(_) | Step::Failed(..) => break,
            Step::Waiting(_) if steps < 10 => h.w.a.clock.advance_millis(31_000),
            other => panic!("{other:?}"),
        }
    }
    let books = h.books().await;
    assert!(books.delivered <= books.received, "{books:?}");
    assert_eq!(books.b_took, books.sent, "{books:?}");
}

#[tokio::test]
async fn rejects_with_any_code_move_no_money() {
    for (code, fails) in [("T99", false), ("F42", true), ("R77", true), ("T04", false)] {
        let h = hostile().await;
        let code: ErrorCode = code.parse().unwrap();
        h.hop.script(money(Behaviour::Reject(code)));
        let step = h.w.step().await;
        assert_eq!(
            matches!(step, Step::Failed(..)),
            fails,
            "{code:?}: {step:?}"
        );
        let books = h.books().await;
        assert_eq!((books.sent, books.received, books.b_took), (0, 0, 0));
    }
}

#[tokio::test]
async fn an_answer_that_is_no_ilp_packet_moves_no_money() {
    let h = hostile().await;
    h.hop.script(money(Behaviour::Garbage));
    let step = h.w.step().await;
    assert!(matches!(step, Step::Waiting(_)), "{step:?}");
    let books = h.books().await;
    assert_eq!((books.sent, books.received), (0, 0));
}

/// A server forwarding packets from `sender` to a next hop that never
/// answers, with a 500 ms forward timeout.
async fn connector_to_silent_hop() -> (TestApp, HostileHop, String) {
    let app = TestApp::spawn_with(Db::Sqlite, |s| {
        s.serve.ilp_address = "test.c".into();
        s.serve.ilp_forward_timeout_ms = 500;
    })
    .await;
    let hop = HostileHop::start().await;
    hop.always(Behaviour::Silent);
    let usd = json!({ "code": "USD", "scale": 2 });
    let sender = admin_ok(
        &app,
        Method::POST,
        "/peers",
        json!({ "name": "sender", "staticIlpAddress": "test.sender", "asset": usd,
                "http": { "incoming": { "authTokens": ["sender-to-c"] } } }),
    )
    .await;
    let sender = sender["id"].as_str().unwrap().to_owned();
    admin_ok(
        &app,
        Method::POST,
        &format!("/peers/{sender}/deposits"),
        json!({ "amount": "1000", "idempotencyKey": "fund" }),
    )
    .await;
    admin_ok(
        &app,
        Method::POST,
        "/peers",
        json!({ "name": "next", "staticIlpAddress": "test.next", "asset": usd, "routes": ["test.next"],
                "http": { "outgoing": { "endpoint": hop.url, "authToken": "c-to-next" } } }),
    )
    .await;
    (app, hop, sender)
}

/// A Prepare of 100 to `test.next.x` expiring at the end of ILP time.
fn far_prepare() -> Vec<u8> {
    Prepare {
        amount: 100,
        expires_at: opd_ilp::Timestamp::from_unix_millis(253_402_300_799_000).unwrap(),
        execution_condition: [7; 32],
        destination: IlpAddress::new("test.next.x").unwrap(),
        data: Vec::new(),
    }
    .encode()
}

async fn liquidity(app: &TestApp, id: &str) -> u64 {
    let (_, v) = app
        .admin(Method::GET, &format!("/peers/{id}/balance"), None)
        .await;
    v["balance"].as_str().unwrap().parse().unwrap()
}

#[tokio::test]
async fn a_forward_to_a_silent_hop_ends_in_an_ilp_reject_and_its_hold_is_voided() {
    let (app, _hop, sender) = connector_to_silent_hop().await;
    let (status, bytes) = crate::ilp::send(&app, "sender-to-c", far_prepare()).await;
    assert_eq!(status, StatusCode::OK, "an ILP reply, never an HTTP error");
    match Packet::decode(&bytes).unwrap() {
        Packet::Reject(r) => assert!(
            [
                ErrorCode::R00_TRANSFER_TIMED_OUT,
                ErrorCode::T01_PEER_UNREACHABLE
            ]
            .contains(&r.code),
            "{r:?}"
        ),
        other => panic!("{other:?}"),
    }
    assert_eq!(liquidity(&app, &sender).await, 1000, "the hold is voided");
    balanced(&app).await;
}

#[tokio::test]
async fn a_forward_whose_sender_hangs_up_still_voids_its_hold() {
    let (app, _hop, sender) = connector_to_silent_hop().await;
    let dropped = app
        .http
        .post(&app.ilp)
        .bearer_auth("sender-to-c")
        .header("content-type", "application/octet-stream")
        .body(far_prepare())
        .timeout(std::time::Duration::from_millis(100))
        .send()
        .await;
    assert!(dropped.is_err(), "the sender gave up first");
    assert_eq!(liquidity(&app, &sender).await, 900, "held while forwarding");
    // The hold expires with the forwarded Prepare (now + 500 ms), not at
    // the year 9999 the sender chose: the sweeper would void it a second
    // after that.
    let by_then = app.clock.now().plus_millis(600);
    let holds = app
        .services()
        .store
        .expired_holds(by_then, 10)
        .await
        .unwrap();
    assert_eq!(holds.len(), 1, "the hold expires by the forward's end");
    // The forward ends on its own timeout, not the sender's expiry (the
    // year 9999): polled, at most 5 s.
    let mut left = 50;
    while liquidity(&app, &sender).await != 1000 {
        left -= 1;
        assert!(left > 0, "the hold outlived its forward");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    balanced(&app).await;
    // And a hold a crash left behind goes no later than the forwarded
    // expiry plus the margin.
    let holds = app
        .services()
        .store
        .expired_holds(opd_core::Timestamp::from_unix_millis(i64::MAX / 2), 10)
        .await
        .unwrap();
    assert!(holds.is_empty(), "{holds:?}");
}

#[tokio::test]
async fn il_dcp_answers_only_zero_amount_requests_with_the_peer_protocol_condition() {
    let (app, _hop, _) = connector_to_silent_hop().await;
    let ildcp = |amount: u64, condition: [u8; 32]| Prepare {
        amount,
        expires_at: opd_ilp::Timestamp::from_unix_millis(app.clock.now().unix_millis() + 30_000)
            .unwrap(),
        execution_condition: condition,
        destination: IlpAddress::new("peer.config").unwrap(),
        data: Vec::new(),
    };
    let peer_protocol = condition_of(&[0; 32]);
    for (prepare, expected) in [
        (ildcp(0, peer_protocol), None),
        (ildcp(5, peer_protocol), Some(ErrorCode::F01_INVALID_PACKET)),
        (ildcp(0, [3; 32]), Some(ErrorCode::F05_WRONG_CONDITION)),
    ] {
        let (s, bytes) = crate::ilp::send(&app, "sender-to-c", prepare.encode()).await;
        assert_eq!(s, StatusCode::OK);
        match (Packet::decode(&bytes).unwrap(), expected) {
            (Packet::Fulfill(_), None) => {}
            (Packet::Reject(r), Some(code)) => assert_eq!(r.code, code),
            (other, expected) => panic!("{other:?}, expected {expected:?}"),
        }
    }
}

#[tokio::test]
async fn an_oversized_ilp_body_gets_a_json_413() {
    let (app, _hop, _) = connector_to_silent_hop().await;
    let resp = app
        .http
        .post(&app.ilp)
        .bearer_auth("sender-to-c")
        .header("content-type", "application/octet-stream")
        .body(vec![0u8; 200_000])
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::PAYLOAD_TOO_LARGE);
    let v: Value = resp.json().await.unwrap();
    assert_eq!(v["error"]["code"], "payload_too_large", "{v}");
}

#[tokio::test]
async fn a_receiver_refusing_more_than_it_takes_gets_smaller_packets_a_bounded_number_of_times() {
    let h = hostile().await;
    // The receiver's server refuses every packet while saying it had
    // arrived in full: it takes no more. Packets shrink, eight times at
    // most, then the payment fails with nothing sent.
    h.hop.script(money(Behaviour::RefuseHere(u64::MAX)));
    let step = h.w.step().await;
    match step {
        Step::Failed(_, reason) => {
            assert!(reason.contains("refuses what is left"), "{reason}")
        }
        other => panic!("{other:?}"),
    }
    // The probes, then 1 + 4 + 4 money packets (rounds of up to four).
    assert!(h.seen() <= 13 + 9, "{}", h.seen());
    let books = h.books().await;
    assert_eq!((books.sent, books.failed, books.received), (0, true, 0));
    h.w.failed_with_money_back().await;
}

#[tokio::test]
async fn a_receiver_refusing_for_too_little_fails_the_payment_at_once() {
    let h = hostile().await;
    // The receiver refuses saying less than the packet's minimum arrived:
    // the rate along the path fell below the quote. No smaller packet
    // can fix that.
    h.hop.script(money(Behaviour::RefuseHere(0)));
    let step = h.w.step().await;
    match step {
        Step::Failed(_, reason) => assert!(reason.contains("fell below"), "{reason}"),
        other => panic!("{other:?}"),
    }
    assert!(h.seen() <= 13 + 1, "{}", h.seen());
    h.w.failed_with_money_back().await;
}

#[tokio::test]
async fn a_receiver_whose_claims_reach_the_quote_completes_the_payment_even_if_it_has_less() {
    let h = hostile().await;
    // Packets of about 100 (the first gets F08 with a maximum of 100);
    // the receiver's replies claim half as much again as arrived. Each
    // claim is clamped to what its packet could deliver, so the claims
    // reach the quoted 1000 while bob's payment at B has 990: the payment
    // is done (docs/security.md), not retried for ever, and alice paid
    // what left, within the quoted debit.
    let n = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    h.hop.script(move |s: &Seen| {
        if s.is_probe() {
            return Behaviour::Honest;
        }
        match n.fetch_add(1, std::sync::atomic::Ordering::SeqCst) {
            0 => Behaviour::TooLarge(100),
            _ => Behaviour::ScaleClaim { num: 3, den: 2 },
        }
    });
    let (step, steps, _) = until_ended(&h).await;
    assert!(matches!(step, Step::Completed(_)), "{step:?}");
    assert_eq!(steps, 1);
    let books = h.books().await;
    assert_eq!(
        books,
        Books {
            sent: 1100,
            delivered: 1000,
            failed: false,
            received: 990,
            b_took: 1100
        }
    );
    assert_eq!(h.w.sent().await, 1100);
}

/// A receiving server whose receivers do not state their asset (the hop
/// takes `ConnectionAssetDetails` out of their replies), receiving in two
/// assets: within the kept-path lifetime, a quote to its GBP receiver is
/// judged on a path of its own, not on the EUR receiver's kept one. B
/// converts to GBP at 0.5 where A expects 0.8: the GBP path cannot carry
/// the quote, which is refused, though the EUR path kept from a moment
/// before could.
#[tokio::test]
async fn receivers_silent_about_their_asset_are_quoted_each_on_its_own_path() {
    let (Pair { a, b }, hop) = behind_hop(Db::Sqlite, |_| {}).await;
    hop.always(Behaviour::HideAsset);
    let rates = |gbp: &str| json!({ "rates": { "EUR": "0.9", "GBP": gbp } });
    admin_ok(&a, Method::PUT, "/rates/USD", rates("0.8")).await;
    admin_ok(&b, Method::PUT, "/rates/USD", rates("0.5")).await;
    let alice = a.create_wallet("alice", "USD", 2).await;
    a.deposit("alice", ALICE_START).await;
    let to_bob = crate::remote::incoming_at_b(&b, "1000").await;
    let carol = b.create_wallet("carol", "GBP", 2).await;
    let (s, ip) = b
        .post(
            &b.url("incoming-payments"),
            &json!({ "walletAddress": carol, "incomingAmount": crate::amount("1000", "GBP", 2) }),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{ip}");
    let to_carol = ip["id"].as_str().unwrap();
    let (s, eur) = crate::remote::quote(&a, &alice, &to_bob, json!({})).await;
    assert_eq!(s, StatusCode::CREATED, "{eur}");
    assert_eq!(eur["debitAmount"], crate::amount("1123", "USD", 2));
    let (s, gbp) = crate::remote::quote(&a, &alice, to_carol, json!({})).await;
    assert_eq!(
        (s, gbp["error"]["code"].as_str()),
        (StatusCode::BAD_REQUEST, Some("insufficient_exchange_rate")),
        "the GBP path probed on its own: {gbp}"
    );
}
