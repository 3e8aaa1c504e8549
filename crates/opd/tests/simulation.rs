//! A deterministic simulation of the payment lifecycle under database
//! faults: for each seed, a random sequence of what users, the operator and
//! the workers do (incoming payments, quotes, outgoing payments, deposits
//! and withdrawals, cancellations, completions, worker steps, expiry,
//! retention, time passing) runs against a store that fails about one
//! statement in `FAULT_RATE` (before a statement, before a commit, or after
//! a commit: see `opd_store::Faults`), with a manual clock and seeded ids.
//! Then the faults stop, time runs on, the workers finish, and the outcome
//! must be exact:
//! - the ledger balances (`opd check`), and no account is out of range;
//! - every wallet's balance is its deposits − withdrawals − what its
//!   completed payments debited + what its incoming payments received, to
//!   the unit (received money is the receiver's at once);
//! - every outgoing payment has ended, once: completed payments moved their
//!   quoted amounts exactly once, failed and cancelled ones moved nothing
//!   net (the money went back);
//! - every incoming payment received exactly what the completed payments
//!   to it delivered;
//! - no webhook is lost or doubled: each payment has one `created` event
//!   and one event for how it ended.
//!
//! The seeds run on SQLite (`OPD_SIM_SEEDS`, default 2000, shared by two
//! tests that run in parallel) and on PostgreSQL (`OPD_SIM_PG_SEEDS`,
//! default 200), from `OPD_SIM_FIRST_SEED` (default 1);
//! `docs/fault-injection.md` records a long run. A failure names its seed
//! and the steps, and replays exactly with `OPD_SIM_FIRST_SEED=<seed>
//! OPD_SIM_SEEDS=1`.

#![expect(clippy::unwrap_used, reason = "tests fail loudly by design")]

use std::collections::HashMap;
use std::sync::Arc;

use opd_core::ledger::TransferKind;
use opd_core::outgoing_payment::OutgoingPaymentState;
use opd_core::pagination::PageRequest;
use opd_core::quote::QuoteTarget;
use opd_core::{Amount, Asset, AssetCode, Clock, ManualClock, Rate, SeededRandom, Timestamp};
use opd_service::payments::incoming::NewIncomingPayment;
use opd_service::payments::outgoing::{NewOutgoingPayment, PaymentSource};
use opd_service::payments::quotes::NewQuote;
use opd_service::{
    ledger, payments::incoming, payments::outgoing, payments::outgoing::lifecycle,
    payments::quotes, wallets, PublicUrl, ServiceConfig, Services,
};
use opd_store::{Faults, Store};
use opd_testkit::dice::Dice;

/// One statement in this many fails while the simulation runs.
const FAULT_RATE: u32 = 30;
/// Steps per seed.
const STEPS: usize = 60;
const BASE: &str = "https://sim.opd.test";

struct World {
    services: Services,
    sql: Arc<opd_store::SqlStore>,
    clock: ManualClock,
    faults: Arc<Faults>,
    usd: Asset,
    eur: Asset,
    /// Incoming payment URLs with their asset, quote URLs and outgoing payment ids the
    /// simulation was told about (a creation whose answer was lost to a
    /// fault is found through the store at the end).
    incoming: Vec<(String, Asset)>,
    quotes: Vec<String>,
    outgoing: Vec<opd_core::OutgoingPaymentId>,
    /// Idempotency keys used for deposits and withdrawals (to repeat
    /// some), with what the simulation knows of each: see [`Move`].
    keys: Vec<(String, u64)>,
    moves: HashMap<String, Move>,
    log: Vec<String>,
    _dir: Option<tempfile::TempDir>,
}

/// A deposit or withdrawal of alice's as the simulation asked for it: the
/// ledger must hold at most one transfer for its key, of this amount, and
/// exactly one once an answer said it was posted (an error may hide a
/// posting: the answer of a committed transaction can be lost).
#[derive(Debug, Clone, Copy)]
struct Move {
    amount: u64,
    deposit: bool,
    confirmed: bool,
}

#[derive(Debug, Clone, Copy)]
enum Backend {
    Sqlite,
    Postgres,
}

async fn world(seed: u64, backend: Backend) -> World {
    let (mut store, dir) = match backend {
        Backend::Sqlite => {
            let (store, dir) = opd_testkit::stores::sqlite().await;
            (store, Some(dir))
        }
        Backend::Postgres => (opd_testkit::stores::postgres().await, None),
    };
    let faults = Arc::new(Faults::seeded(seed));
    store.inject_faults(faults.clone());
    let sql = Arc::new(store);
    let store: Arc<dyn Store> = sql.clone();
    let clock = ManualClock::new(Timestamp::parse_rfc3339("2026-11-01T00:00:00Z").unwrap());
    let public = PublicUrl::parse(BASE).unwrap();
    let mut config = ServiceConfig::new(
        public,
        format!("{BASE}/auth"),
        opd_ilp::IlpAddress::new("test.sim").unwrap(),
    );
    // Caches expire by the machine's clock: kept for the whole run, so a
    // seed replays the same statements, and so the same faults, every time.
    config.cache_ttl = std::time::Duration::from_secs(3600);
    config.pricing_cache_ttl = std::time::Duration::from_secs(3600);
    let usd = Asset::parse("USD", 2).unwrap();
    let eur = Asset::parse("EUR", 2).unwrap();
    config.rates.insert(
        AssetCode::parse("USD").unwrap(),
        HashMap::from([(
            AssetCode::parse("EUR").unwrap(),
            Rate::parse("0.9").unwrap(),
        )]),
    );
    config
        .fees
        .insert(usd.clone(), opd_core::Fee::new(3, 100).unwrap());
    let services = Services::new(
        store,
        Arc::new(clock.clone()),
        Arc::new(SeededRandom::new(seed)),
        config,
    )
    .await
    .unwrap();
    for (path, asset) in [("alice", &usd), ("bob", &usd), ("carol", &eur)] {
        wallets::create(
            &services,
            &opd_core::TenantId::operator(),
            path,
            asset.clone(),
            None,
        )
        .await
        .unwrap();
    }
    let alice = wallets::by_path(&services, &opd_core::TenantId::operator(), "alice")
        .await
        .unwrap();
    ledger::move_money(&services, &alice, 50_000, true, "start")
        .await
        .unwrap();
    let start = Move {
        amount: 50_000,
        deposit: true,
        confirmed: true,
    };
    World {
        services,
        sql,
        clock,
        faults,
        usd,
        eur,
        incoming: Vec::new(),
        quotes: Vec::new(),
        outgoing: Vec::new(),
        keys: Vec::new(),
        moves: HashMap::from([("start".to_owned(), start)]),
        log: Vec::new(),
        _dir: dir,
    }
}

fn wallet_url(path: &str) -> String {
    format!("{BASE}/{path}")
}

/// One random step; what it did goes to the log. Errors are expected
/// (faults, and refusals such as a used quote): the step is simply over.
async fn step(w: &mut World, dice: &mut Dice) {
    let s = &w.services;
    let what = match dice.below(16) {
        0 | 1 => {
            let (path, asset) = if dice.below(3) == 0 {
                ("carol", &w.eur)
            } else {
                ("bob", &w.usd)
            };
            let incoming_amount = match dice.below(3) {
                0 => None,
                _ => Some(Amount::new(100 + dice.below(4_000), asset.clone())),
            };
            let expires_at = match dice.below(3) {
                0 => Some(
                    w.clock
                        .now()
                        .plus_millis(60_000 + dice.below(600_000) as i64),
                ),
                _ => None,
            };
            let input = NewIncomingPayment {
                wallet_address: wallet_url(path),
                incoming_amount,
                expires_at,
                metadata: None,
                client: None,
                client_network: None,
            };
            let r = incoming::create(s, input).await;
            if let Ok((p, _)) = &r {
                let url = s.config.public_url.incoming_payment(p.id);
                w.incoming.push((url, asset.clone()));
            }
            format!("incoming payment for {path}: {:?}", r.map(|(p, _)| p.id))
        }
        2..=4 => {
            let Some((receiver, asset)) = dice.pick(&w.incoming).cloned() else {
                return;
            };
            let target = match dice.below(3) {
                0 => QuoteTarget::FixedSend(Amount::new(50 + dice.below(3_000), w.usd.clone())),
                1 => QuoteTarget::Remaining,
                _ => QuoteTarget::FixedReceive(Amount::new(50 + dice.below(3_000), asset)),
            };
            let input = NewQuote {
                wallet_address: wallet_url("alice"),
                receiver,
                target,
                client: None,
            };
            let r = quotes::create(s, input).await;
            if let Ok((q, _)) = &r {
                w.quotes.push(s.config.public_url.quote(q.id));
            }
            format!("quote: {:?}", r.map(|(q, _)| q.id))
        }
        5..=7 => {
            let source = if dice.below(4) == 0 {
                let Some((receiver, _)) = dice.pick(&w.incoming).cloned() else {
                    return;
                };
                PaymentSource::IncomingPayment {
                    receiver,
                    debit_amount: Amount::new(50 + dice.below(2_000), w.usd.clone()),
                }
            } else {
                let Some(quote) = dice.pick(&w.quotes).cloned() else {
                    return;
                };
                PaymentSource::Quote(quote)
            };
            let input = NewOutgoingPayment {
                wallet_address: wallet_url("alice"),
                source,
                metadata: None,
                client: None,
                grant: None,
            };
            let r = outgoing::create(s, input, None).await;
            if let Ok((p, _, _)) = &r {
                w.outgoing.push(p.id);
            }
            format!("outgoing payment: {:?}", r.map(|(p, _, _)| p.id))
        }
        8..=10 => format!("worker: {:?}", opd_service::jobs::send_payment(s).await),
        11 => {
            let ms = dice.below(40_000) as i64;
            w.clock.advance_millis(ms);
            format!("time +{ms} ms")
        }
        12 => {
            let Some(id) = dice.pick(&w.outgoing).copied() else {
                return;
            };
            format!("cancel {id}: {:?}", lifecycle::cancel(s, id).await)
        }
        13 => {
            let Some((url, _)) = dice.pick(&w.incoming).cloned() else {
                return;
            };
            let id = s.config.public_url.incoming_payment_id(&url).unwrap();
            let r = incoming::complete(s, id, None).await;
            format!("complete {id}: {:?}", r.map(|(p, _)| p.completed))
        }
        14 => {
            let alice = match wallets::by_path(s, &opd_core::TenantId::operator(), "alice").await {
                Ok(a) => a,
                Err(e) => return w.log.push(format!("alice: {e:?}")),
            };
            // Deposits and withdrawals, some repeated with their key (a
            // retry after a lost answer must not move money twice).
            let (key, amount, deposit) = match (dice.below(3), dice.pick(&w.keys).cloned()) {
                (0, Some((key, amount))) => {
                    let deposit = key.starts_with('d');
                    (key, amount, deposit)
                }
                (1, _) => (format!("w{}", dice.bits()), 1 + dice.below(500), false),
                _ => (format!("d{}", dice.bits()), 1 + dice.below(5_000), true),
            };
            w.keys.push((key.clone(), amount));
            let r = ledger::move_money(s, &alice, amount, deposit, &key).await;
            let known = w.moves.entry(key.clone()).or_insert(Move {
                amount,
                deposit,
                confirmed: false,
            });
            // A repeat of a key already answered as posted gets that
            // first answer again; only an injected fault may stop it.
            let fault = matches!(&r, Err(opd_service::ServiceError::Unavailable(m)) if m == "injected fault");
            if known.confirmed && r.is_err() && !fault {
                w.log
                    .push(format!("PROBLEM: the repeat of {key} was refused: {r:?}"));
            }
            known.confirmed |= r.is_ok();
            format!("move {key} {amount}: {:?}", r.map(|(_, new)| new))
        }
        _ => {
            let expired = incoming::expire_once(s).await;
            let pruned = opd_service::jobs::retention_once(s).await.map(|_| ());
            format!("expire: {expired:?}, retention: {pruned:?}")
        }
    };
    w.log.push(what);
}

/// After the faults: runs the workers until nothing is due, with the clock
/// past every lease, quote and incoming payment.
async fn settle(w: &mut World) {
    w.faults.set_rate(0);
    for _ in 0..3 {
        w.clock.advance_millis(lifecycle::LEASE_MS + 1);
        run_until_idle(w).await;
    }
    w.clock.advance_millis(400 * 24 * 3600 * 1000);
    run_until_idle(w).await;
    while incoming::expire_once(&w.services).await.unwrap() > 0 {}
}

/// Runs the payment worker until nothing is due. Each step first waits for
/// the rollbacks of transactions a fault cut short (PostgreSQL): a payment
/// row they still lock is passed over, as a real worker passes over it
/// until its next poll.
async fn run_until_idle(w: &World) {
    // Bounded: a worker that never runs dry is a bug, not a long run.
    for _ in 0..100_000 {
        w.sql.connections_returned().await;
        if opd_service::jobs::send_payment(&w.services).await.unwrap() == lifecycle::Step::Idle {
            return;
        }
    }
    panic!("the worker never ran out of work:\n{}", w.log.join("\n"));
}

/// The outcome of one seed: the problems found (none when exact), and how
/// many payments completed.
async fn check(w: &World) -> (Vec<String>, usize) {
    let s = &w.services;
    let store = s.store.as_ref();
    let mut problems = ledger::check(store, s.config.receipts())
        .await
        .unwrap()
        .problems;
    problems.extend(
        w.log
            .iter()
            .filter_map(|line| line.strip_prefix("PROBLEM: "))
            .map(str::to_owned),
    );
    let alice = wallets::by_path(s, &opd_core::TenantId::operator(), "alice")
        .await
        .unwrap();
    let alice_account = format!("wallet:{}:", alice.id);
    let mut payments = Vec::new();
    let mut page = PageRequest {
        cursor: None,
        size: opd_core::pagination::MAX_PAGE_SIZE,
        direction: opd_core::pagination::Direction::Forward,
    };
    loop {
        let got = store
            .list_outgoing_payments(alice.id, None, &page)
            .await
            .unwrap();
        let last = got.items.last().map(|p| *p.id.as_uuid());
        payments.extend(got.items);
        match last.filter(|_| got.has_next_page) {
            Some(cursor) => page.cursor = Some(cursor),
            None => break,
        }
    }
    for id in &w.outgoing {
        if !payments.iter().any(|p| p.id == *id) {
            problems.push(format!("outgoing payment {id} was created but is gone"));
        }
    }
    // Events by resource URL and type.
    let events = store
        .due_webhook_events(w.clock.now().plus_millis(1), 100_000)
        .await
        .unwrap();
    let mut seen = HashMap::<(String, String), usize>::new();
    for e in &events {
        let body: serde_json::Value = serde_json::from_str(&e.data).unwrap();
        let id = body["data"]["id"].as_str().unwrap_or_default().to_owned();
        *seen.entry((id, e.kind.as_str().to_owned())).or_default() += 1;
    }
    let count = |url: &str, kind: &str| {
        seen.get(&(url.to_owned(), kind.to_owned()))
            .copied()
            .unwrap_or(0)
    };
    let transfers = store.ledger_all_transfers().await.unwrap();
    let mut delivered = HashMap::<String, u64>::new();
    for p in &payments {
        let url = s.config.public_url.outgoing_payment(p.id);
        let ended = match p.state {
            OutgoingPaymentState::Completed => "outgoing_payment.completed",
            OutgoingPaymentState::Failed | OutgoingPaymentState::Cancelled => {
                "outgoing_payment.failed"
            }
            other => {
                problems.push(format!("payment {} never ended: {other}", p.id));
                continue;
            }
        };
        for kind in ["outgoing_payment.created", ended] {
            if count(&url, kind) != 1 {
                problems.push(format!(
                    "payment {}: {} {kind} events",
                    p.id,
                    count(&url, kind)
                ));
            }
        }
        // What the payment's own transfers did to the sender.
        let reference = p.id.to_string();
        let sender_net: i128 = transfers
            .iter()
            .filter(|t| t.reference.as_deref() == Some(reference.as_str()))
            .map(|t| {
                let a = i128::from(t.amount);
                match (
                    t.debit_account.starts_with(&alice_account),
                    t.credit_account.starts_with(&alice_account),
                ) {
                    (true, false) => -a,
                    (false, true) => a,
                    _ => 0,
                }
            })
            .sum();
        let expected = if p.state == OutgoingPaymentState::Completed {
            *delivered.entry(p.receiver.clone()).or_default() += p.receive.value;
            if p.sent == 0 {
                problems.push(format!("completed payment {} sent nothing", p.id));
            }
            -i128::from(p.debit.value)
        } else {
            if p.sent != 0 {
                problems.push(format!(
                    "payment {} ended {} with sentAmount {}",
                    p.id, p.state, p.sent
                ));
            }
            0
        };
        if sender_net != expected {
            problems.push(format!(
                "payment {} ({}) moved {sender_net} for its sender, expected {expected}",
                p.id, p.state
            ));
        }
    }
    for (url, _) in &w.incoming {
        let id = s.config.public_url.incoming_payment_id(url).unwrap();
        let p = store.get_incoming_payment(id).await.unwrap().unwrap();
        let expected = delivered.get(url).copied().unwrap_or(0);
        if p.received_amount != expected {
            problems.push(format!(
                "incoming payment {id} received {} but payments delivered {expected}",
                p.received_amount
            ));
        }
        if count(url, "incoming_payment.created") != 1 {
            problems.push(format!(
                "incoming payment {id}: created events lost or doubled"
            ));
        }
        let end = if p.completed {
            "incoming_payment.completed"
        } else {
            "incoming_payment.expired"
        };
        if count(url, end) != 1 {
            problems.push(format!(
                "incoming payment {id}: {} {end} events",
                count(url, end)
            ));
        }
    }
    // Every wallet's balance, to the unit: deposits − withdrawals (as the
    // simulation made them, each key once) − what its completed payments
    // debited + what its incoming payments received (their rows'
    // `receivedAmount`, counted apart from the ledger).
    let accounts = store.ledger_accounts().await.unwrap();
    for path in ["alice", "bob", "carol"] {
        let wallet = wallets::by_path(s, &opd_core::TenantId::operator(), path)
            .await
            .unwrap();
        let account =
            opd_core::ledger::AccountKind::Wallet.account_id(&wallet.id.to_string(), &wallet.asset);
        // Only alice's money is moved by the operator.
        let mut expected: i128 = if path == "alice" {
            moves_made(w, &transfers, &account, &mut problems)
        } else {
            0
        };
        for p in payments.iter().filter(|p| p.wallet_address_id == wallet.id) {
            if p.state == OutgoingPaymentState::Completed {
                expected -= i128::from(p.debit.value);
            }
        }
        for p in all_incoming(store, wallet.id).await {
            expected += i128::from(p.received_amount);
        }
        let balance = accounts
            .iter()
            .find(|a| a.id == account)
            .map_or(0, |a| a.balance);
        if balance != expected {
            problems.push(format!(
                "{path}'s balance is {balance}, but deposits - withdrawals - debits + receipts \
                 make {expected}"
            ));
        }
    }
    let completed = payments
        .iter()
        .filter(|p| p.state == OutgoingPaymentState::Completed)
        .count();
    (problems, completed)
}

/// alice's deposits − withdrawals as the simulation made them: each key's
/// amount once, if the ledger posted it. Every deposit or withdrawal in the
/// ledger must be one of those keys, once, of its amount, on alice's
/// account (`account`); a key answered as posted must be there.
fn moves_made(
    w: &World,
    transfers: &[opd_core::ledger::Transfer],
    account: &str,
    problems: &mut Vec<String>,
) -> i128 {
    let mut per_key = HashMap::<&str, Vec<&opd_core::ledger::Transfer>>::new();
    let keyed = transfers
        .iter()
        .filter(|t| matches!(t.kind, TransferKind::Deposit | TransferKind::Withdrawal));
    for t in keyed {
        // The ledger keeps `deposit:<key>` or `withdrawal:<key>`.
        let key = t.idempotency_key.as_deref().and_then(|k| k.split_once(':'));
        match key.filter(|(_, k)| w.moves.contains_key(*k)) {
            Some((_, k)) => per_key.entry(k).or_default().push(t),
            None => problems.push(format!(
                "a {:?} of {} under a key the simulation never used: {:?}",
                t.kind, t.amount, t.idempotency_key
            )),
        }
    }
    let mut net = 0;
    for (key, m) in &w.moves {
        let posted = per_key.get(key.as_str()).map_or(&[][..], Vec::as_slice);
        let (kind, on_alice) = match posted.first() {
            Some(t) if m.deposit => (TransferKind::Deposit, t.credit_account == account),
            Some(t) => (TransferKind::Withdrawal, t.debit_account == account),
            None => (TransferKind::Deposit, true),
        };
        match posted {
            [] if m.confirmed => problems.push(format!(
                "{key} was answered as posted but is not in the ledger"
            )),
            [] => {}
            [t] if t.amount != m.amount || t.kind != kind || !on_alice => {
                problems.push(format!("{key}: {m:?} was posted as {t:?}"))
            }
            [_] if m.deposit => net += i128::from(m.amount),
            [_] => net -= i128::from(m.amount),
            more => problems.push(format!("{key} moved money {} times: {more:?}", more.len())),
        }
    }
    net
}

/// Every incoming payment of `wallet`, from the store (those whose
/// creation's answer a fault lost included).
async fn all_incoming(
    store: &dyn Store,
    wallet: opd_core::WalletAddressId,
) -> Vec<opd_core::incoming_payment::IncomingPayment> {
    let mut all = Vec::new();
    let mut page = PageRequest {
        cursor: None,
        size: opd_core::pagination::MAX_PAGE_SIZE,
        direction: opd_core::pagination::Direction::Forward,
    };
    loop {
        let got = store
            .list_incoming_payments(wallet, None, &page)
            .await
            .unwrap();
        let last = got.items.last().map(|p| *p.id.as_uuid());
        all.extend(got.items);
        match last.filter(|_| got.has_next_page) {
            Some(cursor) => page.cursor = Some(cursor),
            None => return all,
        }
    }
}

/// Runs one seed; returns how many payments completed and how many faults
/// were injected.
async fn run_seed(seed: u64, backend: Backend) -> (usize, u64) {
    let mut w = world(seed, backend).await;
    let mut dice = Dice(seed ^ 0x5EED);
    w.faults.set_rate(FAULT_RATE);
    for _ in 0..STEPS {
        step(&mut w, &mut dice).await;
    }
    let injected = w.faults.injected();
    settle(&mut w).await;
    let (problems, completed) = check(&w).await;
    if std::env::var_os("OPD_SIM_VERBOSE").is_some() {
        eprintln!("seed {seed}: {injected} faults\n{}", w.log.join("\n"));
    }
    assert!(
        problems.is_empty(),
        "seed {seed} on {backend:?} ({injected} faults injected): {problems:#?}\nsteps:\n{}\n\
         replay: OPD_SIM_FIRST_SEED={seed} OPD_SIM_SEEDS=1 cargo test -p opd --test simulation",
        w.log.join("\n")
    );
    (completed, injected)
}

fn var(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .map(|v| {
            v.parse()
                .unwrap_or_else(|_| panic!("{name} must be a number"))
        })
        .unwrap_or(default)
}

/// Runs the seeds `first + offset`, `first + offset + step`, ... below
/// `first + count`, and checks the run as a whole did something.
async fn run_seeds(backend: Backend, count: u64, offset: u64, step: u64) {
    let first = var("OPD_SIM_FIRST_SEED", 1);
    let (mut seed, mut runs, mut completed, mut faults) = (first + offset, 0usize, 0usize, 0u64);
    while seed < first + count {
        let (c, f) = run_seed(seed, backend).await;
        (runs, completed, faults) = (runs + 1, completed + c, faults + f);
        seed += step;
    }
    eprintln!(
        "{backend:?}, {runs} seeds: {completed} payments completed, {faults} faults injected"
    );
    // A simulation where nothing is paid or nothing fails proves nothing.
    if runs >= 50 {
        assert!(
            completed >= runs / 2,
            "only {completed} payments completed in {runs} seeds"
        );
        assert!(
            faults >= runs as u64,
            "only {faults} faults injected in {runs} seeds"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn payments_end_exactly_once_under_faults_even_seeds() {
    run_seeds(Backend::Sqlite, var("OPD_SIM_SEEDS", 2000), 0, 2).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn payments_end_exactly_once_under_faults_odd_seeds() {
    run_seeds(Backend::Sqlite, var("OPD_SIM_SEEDS", 2000), 1, 2).await;
}

/// PostgreSQL, where a commit can truly succeed while its answer is lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn payments_end_exactly_once_under_faults_postgres() {
    run_seeds(Backend::Postgres, var("OPD_SIM_PG_SEEDS", 200), 0, 1).await;
}
