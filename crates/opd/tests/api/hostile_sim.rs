//! A seeded randomized hostile network: alice@A pays incoming payments of
//! bob@B through a hop (`opd_testkit::hostile`) that picks, packet by
//! packet, an honest forward or a lie (forged and late Fulfills, replies
//! that do not decrypt, claims of 0, of u64::MAX and of any amount, a
//! receiver keeping the money, F08 with and without data, any reject
//! code, garbage, probes lying high and low) or a stall (claims running
//! ahead of what arrives, a receiver refusing what is left, F08 without
//! usable details, a hop that never answers). Each seed makes one payment
//! of a random amount and runs A's worker, each time the payment is due,
//! until it ends: within its stall bounds (each wait ends no later than
//! 60 s after it last moved money), never by its quote's expiry. Then the
//! books must be exact:
//! - alice's balance is her deposits less what every ended payment sent
//!   (a payment still running holds its whole debit), and A's account for
//!   its peer B holds exactly what was sent;
//! - no payment sent more than its quoted debit or counted more delivered
//!   than its quoted receive amount;
//! - across the servers: what A paid B, plus what B credited for packets
//!   fulfilled after their expiry, is what B took out of A's liquidity
//!   there, plus what the hop kept as a receiver;
//! - both ledgers balance, and the payer's listing reads.
//!
//! `OPD_HOSTILE_SEEDS` seeds (default 100) from `OPD_HOSTILE_FIRST_SEED`
//! (default 1) run in one world; a failure names its seed, which replays
//! with `OPD_HOSTILE_FIRST_SEED=<seed> OPD_HOSTILE_SEEDS=1`
//! (`OPD_HOSTILE_TRACE=1` prints each packet's behaviour).

use std::sync::{Arc, Mutex};

use opd_core::{Clock as _, ManualClock, OutgoingPaymentId};
use opd_ilp::ErrorCode;
use opd_service::payments::outgoing::lifecycle::Step;
use opd_testkit::app::Db;
use opd_testkit::dice::Dice;
use opd_testkit::hostile::{Behaviour, Seen};
use reqwest::{Method, StatusCode};
use serde_json::json;

use crate::amount;
use crate::hostile::hostile_on;
use crate::remote::{balance, balanced, peer_balance};

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A behaviour for one packet.
fn choose(dice: &mut Dice, seen: &Seen, clock: &ManualClock) -> Behaviour {
    if seen.is_probe() {
        return match dice.below(20) {
            0 => Behaviour::ScaleClaim { num: 1, den: 2 },
            1 => Behaviour::ScaleClaim { num: 3, den: 2 },
            2 => Behaviour::Reject(ErrorCode::T02_PEER_BUSY),
            _ => Behaviour::Honest,
        };
    }
    match dice.below(28) {
        0 => Behaviour::ForgeFulfill,
        1 => Behaviour::GarbleReply,
        2 => Behaviour::Claim(u64::MAX),
        3 => Behaviour::Claim(0),
        4 => Behaviour::Claim(dice.below(2_000)),
        5 => Behaviour::FulfillHere(dice.below(3) * dice.below(2_000)),
        6 => Behaviour::TooLarge(dice.below(3) * dice.below(500)),
        7 => Behaviour::TooLargeNoData,
        8 => {
            let codes = ["T00", "T04", "T99", "F02", "F99", "R00", "F42", "T77"];
            let code = dice.pick(&codes).copied().unwrap_or("T00");
            Behaviour::Reject(code.parse().unwrap())
        }
        9 => Behaviour::Late(clock.clone(), 11_000),
        10 => Behaviour::Garbage,
        11 => Behaviour::ScaleClaim { num: 1, den: 2 },
        // Stalls: claims that run ahead of what arrives, a receiver
        // refusing whatever is left, F08 without usable details, a hop
        // that never answers (rarer: it costs a packet timeout).
        12 => Behaviour::ScaleClaim { num: 3, den: 2 },
        13 => Behaviour::RefuseHere(u64::MAX),
        14 => Behaviour::TooLargeZeros,
        15 if dice.below(3) == 0 => Behaviour::Silent,
        _ => Behaviour::Honest,
    }
}

/// How long a payment may go without moving money in this world.
const STALL_MS: i64 = 60_000;

#[tokio::test]
async fn random_hostile_behaviours_never_unbalance_the_books() {
    let first = env("OPD_HOSTILE_FIRST_SEED", 1);
    let seeds = env("OPD_HOSTILE_SEEDS", 100);
    // One payment is in the world when it starts (see `hostile_on`): it
    // is paid honestly first.
    // Packets wait 1.5 s for an answer (a silent hop costs that much real
    // time), with room for B's answer margin.
    let h = hostile_on(Db::Sqlite, |s| s.serve.ilp_packet_timeout_ms = 1_500).await;
    let w = &h.w;
    assert!(matches!(w.step().await, Step::Completed(_)));
    let mut deposits = 10_000u64;
    w.a.deposit("alice", 1_000_000_000).await;
    deposits += 1_000_000_000;
    // Enough of A's liquidity at B for every seed.
    let a_at_b = crate::remote::peer_id(&w.b, "a").await;
    crate::remote::admin_ok(
        &w.b,
        Method::POST,
        &format!("/peers/{a_at_b}/deposits"),
        json!({ "amount": "1000000000000", "idempotencyKey": "sim" }),
    )
    .await;
    let bob = w.b.url("bob");
    let alice = w.a.url("alice");
    let dice = Arc::new(Mutex::new(Dice(0)));
    let mut payments = vec![w.id.clone()];
    for seed in first..first + seeds {
        *dice.lock().unwrap() = Dice(seed);
        let log =
            format!("seed {seed} (replay: OPD_HOSTILE_FIRST_SEED={seed} OPD_HOSTILE_SEEDS=1)");
        sync_clocks(&h);
        // An incoming payment of 1 to 5000 EUR cents, quoted while the
        // path is honest.
        h.hop.always(Behaviour::Honest);
        let value = 1 + dice.lock().unwrap().below(5_000);
        let (s, ip) = w
            .b
            .post(
                &w.b.url("incoming-payments"),
                &json!({ "walletAddress": bob, "incomingAmount": amount(&value.to_string(), "EUR", 2) }),
            )
            .await;
        assert_eq!(s, StatusCode::CREATED, "{log}: {ip}");
        let (s, q) =
            w.a.post(
                &w.a.url("quotes"),
                &json!({ "walletAddress": alice, "receiver": ip["id"], "method": "ilp" }),
            )
            .await;
        if s != StatusCode::CREATED {
            // Too small to deliver at the quoted rate: nothing to pay.
            assert_eq!(s, StatusCode::BAD_REQUEST, "{log}: {q}");
            continue;
        }
        let r = w
            .payer
            .send(
                Method::POST,
                &w.a.url("outgoing-payments"),
                Some(&w.token),
                Some(&json!({ "walletAddress": alice, "quoteId": q["id"] })),
            )
            .await;
        assert_eq!(r.status, StatusCode::CREATED, "{log}: {}", r.body);
        payments.push(r.body["id"].as_str().unwrap().to_owned());

        let (d, clock) = (dice.clone(), w.a.clock.clone());
        let trace = std::env::var_os("OPD_HOSTILE_TRACE").is_some();
        h.hop.script(move |seen: &Seen| {
            let b = choose(&mut d.lock().unwrap(), seen, &clock);
            if trace {
                eprintln!("packet {} of {}: {b:?}", seen.index, seen.prepare.amount);
            }
            b
        });
        let id = OutgoingPaymentId::parse(payments[payments.len() - 1].rsplit('/').next().unwrap())
            .unwrap();
        run_until_ended(&h, id, &log).await;
        check(&h, &payments, deposits, &log).await;
    }
    let store = &w.a.services().store;
    let mut completed = 0;
    for id in &payments {
        let id = OutgoingPaymentId::parse(id.rsplit('/').next().unwrap()).unwrap();
        let p = store.get_outgoing_payment(id).await.unwrap().unwrap();
        completed += usize::from(p.state.as_str() == "completed");
    }
    eprintln!(
        "hostile network: {seeds} seeds, {} payments, {completed} completed, {} packets, {} kept by the hop, {} fulfilled late",
        payments.len(),
        h.hop.packets_seen(),
        h.hop.kept(),
        h.hop.late_fulfilled()
    );
}

/// Runs A's worker, each time the payment is due, until it ends; it must
/// end within its stall bounds, never waiting for its quote to expire:
/// every wait ends no later than the bound after it last moved money.
async fn run_until_ended(h: &crate::hostile::Hostile, id: OutgoingPaymentId, log: &str) {
    let store = &h.w.a.services().store;
    for _ in 0..60 {
        sync_clocks(h);
        h.w.a.run_workers().await;
        if ended(h, id).await {
            return;
        }
        let p = store.get_outgoing_payment(id).await.unwrap().unwrap();
        assert!(
            p.next_attempt_at <= p.updated_at.plus_millis(STALL_MS),
            "{log}: waits past its stall bound: {p:?}"
        );
        let wait = p.next_attempt_at.unix_millis() - h.w.a.clock.now().unix_millis();
        h.w.a.clock.advance_millis(wait.max(0));
    }
    panic!("{log}: the payment did not end within 60 attempts");
}

/// B's clock catches up with A's (moved by time passing and late
/// answers), so that A's signed requests stay fresh at B.
fn sync_clocks(h: &crate::hostile::Hostile) {
    crate::hostile::sync_clocks(&h.w.a, &h.w.b);
}

async fn ended(h: &crate::hostile::Hostile, id: OutgoingPaymentId) -> bool {
    let store = &h.w.a.services().store;
    let p = store.get_outgoing_payment(id).await.unwrap().unwrap();
    matches!(p.state.as_str(), "completed" | "failed")
}

/// The books after a seed (see the module documentation).
async fn check(h: &crate::hostile::Hostile, payments: &[String], deposits: u64, log: &str) {
    let w = &h.w;
    let store = &w.a.services().store;
    let (mut sent, mut held) = (0u64, 0u64);
    for id in payments {
        let id = OutgoingPaymentId::parse(id.rsplit('/').next().unwrap()).unwrap();
        let p = store.get_outgoing_payment(id).await.unwrap().unwrap();
        assert!(p.sent <= p.debit.value, "{log}: {p:?}");
        assert!(p.delivered <= p.receive.value, "{log}: {p:?}");
        sent += p.sent;
        match p.state.as_str() {
            "completed" | "failed" => {}
            _ => held += p.debit.value,
        }
    }
    assert_eq!(
        balance(&w.a, "alice").await,
        (deposits - sent - held).to_string(),
        "{log}"
    );
    assert_eq!(peer_balance(&w.a, "b").await, sent, "{log}");
    let b_took = 1_000_001_000_000 - peer_balance(&w.b, "a").await;
    assert_eq!(
        sent + h.hop.late_fulfilled(),
        b_took + h.hop.kept(),
        "{log}: A paid, B took"
    );
    w.listing_reads().await;
    balanced(&w.a).await;
    balanced(&w.b).await;
}
