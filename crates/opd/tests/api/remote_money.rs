//! Payments to another server's receivers, to the unit: sending fees in
//! each direction (the fee in the sender's asset, taken once the payment
//! completes, given back when it fails after a partial send), and packets
//! a crash left pending on a payment that had already delivered others.
//! Every test checks each account a payment touches: the sender's wallet,
//! the fee account, both sides of the peering, the receiver's wallet.

use opd_core::ledger::AccountKind;
use opd_core::Clock as _;
use opd_store::{PacketRecord, PacketState};
use opd_testkit::app::{Db, TestApp};
use opd_testkit::client::SigningClient;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use opd_service::payments::outgoing::lifecycle::Step;

use crate::amount;
use crate::payments::incoming;
use crate::remote::{
    admin_ok, balance, balanced, node, pair_of, pair_with, paying, peer_balance, peer_id, Pair,
    Paying,
};

/// Sets `app`'s sending fee for `code` (scale 2).
async fn set_fee(app: &TestApp, code: &str, fixed: &str, basis_points: u32) {
    admin_ok(
        app,
        Method::PUT,
        &format!("/fees/{code}/2"),
        json!({ "fixed": fixed, "basisPoints": basis_points }),
    )
    .await;
}

/// What `app` earned in sending fees in `code`, from its ledger.
async fn fees_earned(app: &TestApp, code: &str) -> i128 {
    let accounts = app.services().store.ledger_accounts().await.unwrap();
    accounts
        .iter()
        .filter(|a| a.kind == AccountKind::Fees && a.asset.code.as_str() == code)
        .map(|a| a.balance)
        .sum()
}

/// No transfer of `app`'s ledger moves nothing (a fee of 0 is not
/// posted, nor a packet's empty leg).
async fn no_empty_transfers(app: &TestApp) {
    let transfers = app.services().store.ledger_all_transfers().await.unwrap();
    let empty: Vec<_> = transfers.iter().filter(|t| t.amount == 0).collect();
    assert!(empty.is_empty(), "transfers of nothing: {empty:?}");
}

/// An outgoing payment being sent from `app`.
struct Sending<'a> {
    app: &'a TestApp,
    id: String,
    payer: SigningClient,
    token: String,
}

impl Sending<'_> {
    /// Quotes `receiver` for `from` (a wallet address at `app`, funded)
    /// and creates the payment; the quote is returned too.
    async fn start<'a>(app: &'a TestApp, from: &str, receiver: &str) -> (Sending<'a>, Value) {
        let (s, q) = app
            .post(
                &app.url("quotes"),
                &json!({ "walletAddress": from, "receiver": receiver, "method": "ilp" }),
            )
            .await;
        assert_eq!(s, StatusCode::CREATED, "{q}");
        let payer = app.signing_client("payer", 41).await;
        let token = app.outgoing_token(&payer, from, Value::Null).await;
        let r = payer
            .send(
                Method::POST,
                &app.url("outgoing-payments"),
                Some(&token),
                Some(&json!({ "walletAddress": from, "quoteId": q["id"] })),
            )
            .await;
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
        let sending = Sending {
            app,
            id: r.body["id"].as_str().unwrap().to_owned(),
            payer,
            token,
        };
        (sending, q)
    }

    async fn read(&self) -> Value {
        let r = self
            .payer
            .send(Method::GET, &self.id, Some(&self.token), None)
            .await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.body);
        r.body
    }

    async fn sent(&self) -> u64 {
        value(&self.read().await["sentAmount"])
    }

    /// Runs the worker, a second of the test clock between steps (past
    /// every retry's first delays, well within the quote's life), until
    /// the payment ends; its last step.
    async fn run_to_end(&self) -> Step {
        for _ in 0..200 {
            for step in self.app.run_workers().await {
                if matches!(step, Step::Completed(_) | Step::Failed(..)) {
                    return step;
                }
            }
            self.app.clock.advance_millis(1_000);
        }
        panic!(
            "the payment did not end in 200 steps: {}",
            self.read().await
        );
    }
}

fn value(amount: &Value) -> u64 {
    amount["value"].as_str().unwrap().parse().unwrap()
}

#[tokio::test]
async fn fees_in_each_direction_are_taken_once_and_exactly() {
    let Pair { a, b } = pair_with(1_000_000, None).await;
    // B pays A too: EUR to USD at 1.1, A holding B's liquidity.
    admin_ok(
        &b,
        Method::PUT,
        "/rates/EUR",
        json!({ "rates": { "USD": "1.1" } }),
    )
    .await;
    let b_at_a = peer_id(&a, "b").await;
    admin_ok(
        &a,
        Method::POST,
        &format!("/peers/{b_at_a}/deposits"),
        json!({ "amount": "1000000", "idempotencyKey": "b-liquidity" }),
    )
    .await;
    set_fee(&a, "USD", "10", 100).await;
    set_fee(&b, "EUR", "5", 250).await;

    // alice@A (USD) pays bob@B 1000 EUR cents: at 0.9 less the 1 %
    // slippage, 1123 USD cents (ceil(1000 / 0.891)), plus the fee
    // ceil(11.23) + 10 = 22.
    let alice = a.create_wallet("alice", "USD", 2).await;
    a.deposit("alice", 10_000).await;
    let bob = b.create_wallet("bob", "EUR", 2).await;
    let to_bob = incoming(&b, &bob, "1000", "EUR").await;
    let (ab, q) = Sending::start(&a, &alice, &to_bob).await;
    assert_eq!(q["debitAmount"], amount("1145", "USD", 2), "{q}");
    assert_eq!(balance(&a, "alice").await, "8855", "funded at creation");
    assert!(matches!(ab.run_to_end().await, Step::Completed(_)));
    let sent_ab = ab.sent().await;
    assert!((1112..=1123).contains(&sent_ab), "sent {sent_ab}");

    // dave@B (EUR) pays carol@A 1000 USD cents: at 1.1 less 1 %, 919 EUR
    // cents (ceil(1000 / 1.089)), plus ceil(22.975) + 5 = 28.
    let dave = b.create_wallet("dave", "EUR", 2).await;
    b.deposit("dave", 10_000).await;
    let carol = a.create_wallet("carol", "USD", 2).await;
    let to_carol = incoming(&a, &carol, "1000", "USD").await;
    let (ba, q) = Sending::start(&b, &dave, &to_carol).await;
    assert_eq!(q["debitAmount"], amount("947", "EUR", 2), "{q}");
    assert!(matches!(ba.run_to_end().await, Step::Completed(_)));
    let sent_ba = ba.sent().await;
    assert!((910..=919).contains(&sent_ba), "sent {sent_ba}");

    // The receivers got exactly what was asked, into their wallets.
    let (_, got) = b.get(&to_bob).await;
    assert_eq!(got["receivedAmount"], amount("1000", "EUR", 2));
    assert_eq!(balance(&b, "bob").await, "1000");
    let (_, got) = a.get(&to_carol).await;
    assert_eq!(got["receivedAmount"], amount("1000", "USD", 2));
    assert_eq!(balance(&a, "carol").await, "1000");
    // Each sender paid what went out plus its fee, once; the rest of the
    // quoted debit came back.
    assert_eq!(
        balance(&a, "alice").await,
        (10_000 - sent_ab - 22).to_string()
    );
    assert_eq!(fees_earned(&a, "USD").await, 22);
    assert_eq!(
        balance(&b, "dave").await,
        (10_000 - sent_ba - 28).to_string()
    );
    assert_eq!(fees_earned(&b, "EUR").await, 28);
    assert_eq!(
        fees_earned(&a, "EUR").await + fees_earned(&b, "USD").await,
        0
    );
    // Both sides of the peering agree on what crossed it (USD): A owes B
    // what alice's packets carried, B owes A what dave's carried (in USD
    // at B's rate, what A credited carol with).
    let usd_ba: u64 = packets(&b, &ba.id)
        .await
        .iter()
        .filter(|r| delivered_by(r) > 0)
        .map(|r| r.packet.peer_amount)
        .sum();
    assert_eq!(usd_ba, 1000, "A credited carol with every USD cent it got");
    assert_eq!(peer_balance(&a, "b").await, 1_000_000 + sent_ab - usd_ba);
    assert_eq!(peer_balance(&b, "a").await, 1_000_000 - sent_ab + usd_ba);
    balanced(&a).await;
    balanced(&b).await;
}

#[tokio::test]
async fn a_payment_failing_after_a_partial_send_takes_no_fee_and_pays_only_what_left() {
    // A's liquidity at B is 500: the first packet (B's largest, 300) goes,
    // the next finds too little (T04), and the quote expires meanwhile.
    let w = pair_with(500, Some(300)).await;
    set_fee(&w.a, "USD", "10", 100).await;
    let alice = w.a.create_wallet("alice", "USD", 2).await;
    w.a.deposit("alice", 10_000).await;
    let bob = w.b.create_wallet("bob", "EUR", 2).await;
    let to_bob = incoming(&w.b, &bob, "1000", "EUR").await;
    let (p, q) = Sending::start(&w.a, &alice, &to_bob).await;
    assert_eq!(q["debitAmount"], amount("1145", "USD", 2), "{q}");
    assert!(matches!(
        w.a.run_workers().await.as_slice(),
        [Step::Waiting(_)]
    ));
    let sent = p.sent().await;
    assert!(
        sent > 0 && sent <= 500,
        "sent {sent} before the liquidity ran out"
    );
    w.a.clock.advance_millis(301_000);
    assert!(matches!(p.run_to_end().await, Step::Failed(..)));

    let done = p.read().await;
    assert_eq!(done["failed"], true);
    assert_eq!(
        value(&done["sentAmount"]),
        sent,
        "nothing sent after the pause"
    );
    // alice paid exactly what left, no fee; B got what those packets
    // delivered, into bob's wallet, and both sides of the peering agree.
    assert_eq!(balance(&w.a, "alice").await, (10_000 - sent).to_string());
    assert_eq!(fees_earned(&w.a, "USD").await, 0);
    assert_eq!(peer_balance(&w.a, "b").await, sent);
    assert_eq!(peer_balance(&w.b, "a").await, 500 - sent);
    let (_, got) = w.b.get(&to_bob).await;
    let received = value(&got["receivedAmount"]);
    assert!(received > 0, "{got}");
    assert_eq!(balance(&w.b, "bob").await, received.to_string());
    // What A counted delivered never exceeds what B received.
    let packets = packets(&w.a, &p.id).await;
    let delivered: u64 = packets.iter().map(delivered_by).sum();
    assert!(delivered <= received, "{delivered} > {received}");
    let posted: u64 = packets
        .iter()
        .filter(|r| delivered_by(r) > 0)
        .map(|r| r.packet.source_amount)
        .sum();
    assert_eq!(posted, sent);
    balanced(&w.a).await;
    balanced(&w.b).await;
}

/// Every packet A recorded for the payment at `url`.
async fn packets(a: &TestApp, url: &str) -> Vec<PacketRecord> {
    let id = opd_core::OutgoingPaymentId::parse(url.rsplit('/').next().unwrap()).unwrap();
    a.services().store.packets(id).await.unwrap()
}

fn delivered_by(r: &PacketRecord) -> u64 {
    match r.state {
        PacketState::Posted { delivered } => delivered,
        _ => 0,
    }
}

/// A packet of 300 USD cents (at least 267 EUR cents to deliver) as A
/// records it before sending, expired, for a crash to leave behind.
fn planted(w: &Paying, peer: &str, id: &str, age_ms: i64) -> opd_store::PaymentPacket {
    let usd = opd_core::Asset::parse("USD", 2).unwrap();
    let now = w.a.clock.now();
    opd_store::PaymentPacket {
        id: id.into(),
        payment: opd_core::OutgoingPaymentId::parse(w.id.rsplit('/').next().unwrap()).unwrap(),
        peer: opd_core::PeerId::parse(peer).unwrap(),
        source_asset: usd.clone(),
        source_amount: 300,
        peer_asset: usd,
        peer_amount: 300,
        min_delivery: 267,
        expires_at: now.plus_millis(-1),
        created_at: now.plus_millis(-age_ms),
    }
}

/// The receiver's shared secret and ILP address, as B published them.
async fn stream_of(w: &Paying) -> (String, [u8; 32]) {
    use base64::Engine as _;
    let (_, ip) = w.b.get(&w.receiver).await;
    let to = ip["methods"][0]["ilpAddress"].as_str().unwrap().to_owned();
    let secret = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(ip["methods"][0]["sharedSecret"].as_str().unwrap())
        .unwrap()
        .try_into()
        .unwrap();
    (to, secret)
}

#[tokio::test]
async fn a_crash_after_deliveries_settles_its_leftovers_from_what_the_receiver_got_beyond_them() {
    // One packet per step, of at most 300 (B's largest): the payment has
    // delivered before the crash, so what B reports includes those.
    let a = TestApp::spawn_with(Db::Sqlite, |s| {
        s.serve.ilp_address = "test.a".into();
        s.serve.ilp_packets_per_step = 1;
    })
    .await;
    let w = paying(pair_of(a, node(Db::Sqlite, "test.b").await, 1_000_000, Some(300)).await).await;
    // One step only (the worker would go on: a step that delivered is
    // due again at once).
    let one_step = || opd_service::jobs::send_payment(w.a.services());
    assert!(matches!(one_step().await.unwrap(), Step::Again(_)));
    let before = packets(&w.a, &w.id).await;
    let delivered_before: u64 = before.iter().map(delivered_by).sum();
    assert!(
        delivered_before >= 267,
        "a packet delivered before the crash: {before:?}"
    );
    let sent_before = w.sent().await;

    // Then a crash with three packets in flight: B fulfilled the two
    // older (270 EUR cents each arrived), the newest never reached B. A
    // has only their pending records.
    let (to, secret) = stream_of(&w).await;
    for _ in 0..2 {
        let body = crate::ilp::prepare_expiring(&w.b, &to, &secret, (300, 270), true, 30_000);
        let answer = crate::ilp::send_packet_as(&w.b, "a-to-b", body).await;
        assert!(
            matches!(answer, opd_ilp::packet::Packet::Fulfill(_)),
            "{answer:?}"
        );
    }
    let peer = peer_id(&w.a, "b").await;
    for (id, age) in [
        ("fulfilled-at-b", 30_000),
        ("also-fulfilled-at-b", 20_000),
        ("never-arrived", 10_000),
    ] {
        let packet = planted(&w, &peer, id, age);
        assert!(w.a.services().store.packet_sending(&packet).await.unwrap());
    }
    // And one that asked the receiver for nothing (a minimum of 0): no
    // report can prove it arrived, so it is never paid for.
    let mut nothing_asked = planted(&w, &peer, "asked-nothing", 5_000);
    nothing_asked.min_delivery = 0;
    assert!(w
        .a
        .services()
        .store
        .packet_sending(&nothing_asked)
        .await
        .unwrap());

    // The next step settles them from B's report: what B received beyond
    // its total before the payment and beyond what A already counted
    // (540) covers the two older packets, oldest first, each at its
    // minimum (267); what is left (6) proves nothing more, so the newest
    // is voided, and the one that asked for nothing too.
    w.a.clock.advance_millis(1_000);
    let settled = one_step().await.unwrap();
    let after = packets(&w.a, &w.id).await;
    let state_of = |id: &str| after.iter().find(|r| r.packet.id == id).unwrap().state;
    assert_eq!(
        state_of("fulfilled-at-b"),
        PacketState::Posted { delivered: 267 },
        "posted at its minimum delivery"
    );
    assert_eq!(
        state_of("also-fulfilled-at-b"),
        PacketState::Posted { delivered: 267 }
    );
    assert_eq!(state_of("never-arrived"), PacketState::Voided);
    assert_eq!(state_of("asked-nothing"), PacketState::Voided);
    let leftovers = [
        "fulfilled-at-b",
        "also-fulfilled-at-b",
        "never-arrived",
        "asked-nothing",
    ];
    let leftovers_posted = after
        .iter()
        .filter(|r| leftovers.contains(&r.packet.id.as_str()))
        .filter(|r| matches!(r.state, PacketState::Posted { .. }))
        .count();
    assert_eq!(leftovers_posted, 2);
    assert!(
        matches!(settled, Step::Waiting(_) | Step::Completed(_)),
        "{settled:?}"
    );

    // Sending resumes: B gets exactly 1000, A paid for every packet B got
    // and no other, and both sides of the peering agree.
    let mut done = matches!(settled, Step::Completed(_));
    for _ in 0..20 {
        if done {
            break;
        }
        let steps = w.a.run_workers().await;
        done = steps.iter().any(|s| matches!(s, Step::Completed(_)));
        assert_eq!(w.read().await["failed"], false, "{steps:?}");
        w.a.clock.advance_millis(1_000);
    }
    assert!(done, "the payment completed");
    let (_, got) = w.b.get(&w.receiver).await;
    assert_eq!(got["receivedAmount"], amount("1000", "EUR", 2));
    let sent = w.sent().await;
    assert!(sent >= sent_before + 600, "sent {sent}");
    let all = packets(&w.a, &w.id).await;
    let posted: u64 = all
        .iter()
        .filter(|r| delivered_by(r) > 0)
        .map(|r| r.packet.source_amount)
        .sum();
    assert_eq!(posted, sent);
    assert_eq!(peer_balance(&w.a, "b").await, sent);
    assert_eq!(peer_balance(&w.b, "a").await, 1_000_000 - sent);
    assert_eq!(balance(&w.a, "alice").await, (10_000 - sent).to_string());
    assert_eq!(balance(&w.b, "bob").await, "1000");
    balanced(&w.a).await;
    balanced(&w.b).await;
    no_empty_transfers(&w.a).await;
}

#[tokio::test]
async fn a_packet_still_in_flight_is_left_alone_until_it_expires() {
    let w = paying(pair_with(1_000_000, None).await).await;
    // A packet another process of A sent and still waits on: pending, not
    // expired yet.
    let peer = peer_id(&w.a, "b").await;
    let mut packet = planted(&w, &peer, "in-flight-elsewhere", 1_000);
    packet.expires_at = w.a.clock.now().plus_millis(30_000);
    assert!(w.a.services().store.packet_sending(&packet).await.unwrap());

    // Its answer may still come: the step neither settles it nor sends.
    let one_step = || opd_service::jobs::send_payment(w.a.services());
    let step = one_step().await.unwrap();
    assert!(matches!(step, Step::Waiting(_)), "{step:?}");
    let state = |all: &[PacketRecord]| all.iter().find(|r| r.packet.id == packet.id).unwrap().state;
    assert_eq!(state(&packets(&w.a, &w.id).await), PacketState::Pending);
    assert_eq!(w.sent().await, 0);

    // Once it expired unanswered it is voided (B never saw it), and the
    // payment goes on to deliver exactly what was asked. Expired means at
    // its expiry already, as for an answer arriving then.
    w.a.clock.advance_millis(30_000);
    let steps = w.a.run_workers().await;
    assert!(
        steps.iter().any(|s| matches!(s, Step::Completed(_))),
        "{steps:?}"
    );
    assert_eq!(state(&packets(&w.a, &w.id).await), PacketState::Voided);
    let (_, got) = w.b.get(&w.receiver).await;
    assert_eq!(got["receivedAmount"], amount("1000", "EUR", 2));
    let sent = w.sent().await;
    assert_eq!(peer_balance(&w.a, "b").await, sent);
    assert_eq!(peer_balance(&w.b, "a").await, 1_000_000 - sent);
    assert_eq!(balance(&w.a, "alice").await, (10_000 - sent).to_string());
    balanced(&w.a).await;
}
