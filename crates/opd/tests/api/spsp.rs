//! Paid by a payment pointer, end to end: `GET <wallet address>` with
//! `Accept: application/spsp4+json` answers STREAM credentials (with
//! receipts for a verifier's `Receipt-Nonce` and `Receipt-Secret`), and
//! Prepares sent to them as a STREAM sender builds them credit the wallet
//! address to the unit, with a STREAM receipt in every Fulfill of a
//! receipt connection; hostile packets get their rejects and move nothing.

use base64::Engine as _;
use opd_ilp::packet::Packet;
use opd_ilp::{verify_receipt, ErrorCode, Frame, IlpAddress, StreamPacket};
use opd_testkit::app::{Db, TestApp};
use reqwest::header::{ACCEPT, CACHE_CONTROL, CONTENT_TYPE, VARY};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::ilp::{ledger_balanced, liquidity, prepare_expiring, send_packet, world, World};

const SPSP: &str = "application/spsp4+json";

/// SPSP credentials as a sender reads them.
pub(crate) struct Spsp {
    pub(crate) address: String,
    pub(crate) secret: [u8; 32],
    pub(crate) receipts_enabled: bool,
}

/// A verifier's receipt nonce and secret.
pub(crate) fn verifier(n: u8) -> ([u8; 16], [u8; 32]) {
    ([n; 16], [n.wrapping_add(100); 32])
}

/// `GET <wallet address>` with `accept` and the receipt headers given.
pub(crate) async fn query(
    app: &TestApp,
    path: &str,
    accept: &str,
    headers: &[(&str, String)],
) -> reqwest::Response {
    let mut request = app.http.get(app.url(path)).header(ACCEPT, accept);
    for (name, value) in headers {
        request = request.header(*name, value);
    }
    request.send().await.unwrap()
}

/// SPSP credentials of `path`, with receipts for `receipt` when given.
pub(crate) async fn spsp(app: &TestApp, path: &str, receipt: Option<([u8; 16], [u8; 32])>) -> Spsp {
    let b64 = base64::engine::general_purpose::STANDARD;
    let headers: Vec<(&str, String)> = receipt
        .map(|(nonce, secret)| {
            vec![
                ("Receipt-Nonce", b64.encode(nonce)),
                ("Receipt-Secret", b64.encode(secret)),
            ]
        })
        .unwrap_or_default();
    let r = query(app, path, SPSP, &headers).await;
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(r.headers()[CONTENT_TYPE], SPSP);
    let body: Value = r.json().await.unwrap();
    let secret = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(body["shared_secret"].as_str().unwrap())
        .unwrap();
    Spsp {
        address: body["destination_account"].as_str().unwrap().to_owned(),
        secret: secret.try_into().unwrap(),
        receipts_enabled: body["receipts_enabled"].as_bool().unwrap(),
    }
}

/// A STREAM Prepare for `to`: `amount` on stream 1, at least `min`
/// arriving, fulfillable unless a probe.
pub(crate) fn packet(
    app: &TestApp,
    to: &Spsp,
    amount: u64,
    min: u64,
    fulfillable: bool,
) -> Vec<u8> {
    prepare_expiring(
        app,
        &to.address,
        &to.secret,
        (amount, min),
        fulfillable,
        30_000,
    )
}

/// Sends a packet that must be fulfilled; its STREAM reply.
pub(crate) async fn fulfilled(app: &TestApp, to: &Spsp, amount: u64) -> StreamPacket {
    let Packet::Fulfill(f) = send_packet(app, packet(app, to, amount, amount, true)).await else {
        panic!("{amount} is fulfilled")
    };
    StreamPacket::decrypt_and_decode(&to.secret, &f.data).unwrap()
}

/// The receipt of a STREAM reply, verified with `secret`: its nonce and
/// total, on stream 1.
pub(crate) fn receipt_of(reply: &StreamPacket, secret: &[u8; 32]) -> Option<([u8; 16], u64)> {
    let receipts: Vec<_> = reply
        .frames
        .iter()
        .filter_map(|f| match f {
            Frame::StreamReceipt { stream_id, receipt } => Some((*stream_id, receipt)),
            _ => None,
        })
        .collect();
    let [(stream_id, receipt)] = receipts.as_slice() else {
        assert!(receipts.is_empty(), "one receipt at most: {receipts:?}");
        return None;
    };
    let read = verify_receipt(receipt, secret).expect("a receipt signed with the secret");
    assert_eq!((*stream_id, read.stream_id), (1, 1));
    Some((read.nonce, read.total_received))
}

async fn balance(app: &TestApp, path: &str) -> String {
    crate::remote::balance(app, path).await
}

#[tokio::test]
async fn a_wallet_address_answers_spsp_or_its_document_by_accept() {
    let app = TestApp::spawn().await;
    app.create_wallet("bob", "USD", 2).await;
    let r = query(&app, "bob", SPSP, &[]).await;
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(r.headers()[CONTENT_TYPE], SPSP);
    assert_eq!(r.headers()[CACHE_CONTROL], "no-store");
    assert_eq!(r.headers()[VARY], "Accept");
    let body: Value = r.json().await.unwrap();
    let keys: Vec<_> = body.as_object().unwrap().keys().cloned().collect();
    assert_eq!(keys.len(), 3, "{body}");
    assert!(body["destination_account"]
        .as_str()
        .unwrap()
        .starts_with("test.opd."));
    IlpAddress::new(body["destination_account"].as_str().unwrap()).unwrap();
    assert_eq!(body["receipts_enabled"], false);
    let plain = spsp(&app, "bob", None).await;
    let again = spsp(&app, "bob", None).await;
    assert_ne!(
        plain.address, again.address,
        "every query is a new connection"
    );
    assert_ne!(plain.secret, again.secret);
    // What @interledger/pay and ilp-protocol-spsp send: SPSP.
    for accept in [
        "application/json, application/spsp4+json",
        "application/spsp4+json, application/spsp+json",
    ] {
        let r = query(&app, "bob", accept, &[]).await;
        assert_eq!(r.headers()[CONTENT_TYPE], SPSP, "{accept}");
    }
    // Open Payments clients, browsers and curl: the document.
    for accept in ["application/json", "*/*", "text/html,*/*;q=0.8"] {
        let r = query(&app, "bob", accept, &[]).await;
        assert_eq!(r.status(), StatusCode::OK);
        assert_eq!(r.headers()[VARY], "Accept");
        let doc: Value = r.json().await.unwrap();
        assert_eq!(doc["id"], app.url("bob"), "{accept}");
        crate::spec_wa("get-wallet-address", StatusCode::OK, &doc);
    }
    let r = query(&app, "bob", "text/html", &[]).await;
    let s = r.status();
    crate::assert_error(s, &r.json().await.unwrap(), 406, "not_acceptable");
    // An unknown or deactivated wallet address has no credentials.
    let r = query(&app, "nobody", SPSP, &[]).await;
    let s = r.status();
    crate::assert_error(s, &r.json().await.unwrap(), 404, "unknown_wallet_address");
    app.create_wallet("gone", "USD", 2).await;
    let (s, v) = app
        .admin(Method::POST, "/wallet-addresses/gone/deactivate", None)
        .await;
    assert!(s.is_success(), "{v}");
    let r = query(&app, "gone", SPSP, &[]).await;
    let s = r.status();
    crate::assert_error(s, &r.json().await.unwrap(), 404, "unknown_wallet_address");
}

#[tokio::test]
async fn receipt_headers_come_together_or_not_at_all() {
    let app = TestApp::spawn().await;
    app.create_wallet("bob", "USD", 2).await;
    let b64 = base64::engine::general_purpose::STANDARD;
    let (nonce, secret) = (b64.encode([1u8; 16]), b64.encode([2u8; 32]));
    let refused = [
        vec![("Receipt-Nonce", nonce.clone())],
        vec![("Receipt-Secret", secret.clone())],
        vec![
            ("Receipt-Nonce", b64.encode([1u8; 15])),
            ("Receipt-Secret", secret.clone()),
        ],
        vec![
            ("Receipt-Nonce", nonce.clone()),
            ("Receipt-Secret", b64.encode([2u8; 31])),
        ],
        vec![
            ("Receipt-Nonce", "not base64!".into()),
            ("Receipt-Secret", secret.clone()),
        ],
    ];
    for headers in refused {
        let r = query(&app, "bob", SPSP, &headers).await;
        let s = r.status();
        crate::assert_error(s, &r.json().await.unwrap(), 400, "invalid_receipt_setup");
    }
    let with = spsp(&app, "bob", Some(([1; 16], [2; 32]))).await;
    let without = spsp(&app, "bob", None).await;
    assert!(with.receipts_enabled && !without.receipts_enabled);
    // The nonce and secret ride in the (encrypted) address.
    assert_eq!(with.address.len() - without.address.len(), 64);
}

#[tokio::test]
async fn with_spsp_off_a_wallet_address_answers_only_its_document_and_takes_no_spsp_money() {
    let w = crate::ilp::world_with(Db::Sqlite, |s| s.serve.spsp = false).await;
    let app = &w.app;
    let r = query(app, "bob", SPSP, &[]).await;
    let s = r.status();
    crate::assert_error(s, &r.json().await.unwrap(), 406, "not_acceptable");
    let r = query(app, "bob", "application/json, application/spsp4+json", &[]).await;
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(r.headers()[CONTENT_TYPE], "application/json");
    // Credentials made while SPSP was on pay nothing now.
    let bob = app
        .services()
        .wallet_by_id(bob_id(app).await)
        .await
        .unwrap()
        .unwrap();
    let credentials =
        opd_service::interledger::spsp::credentials(app.services(), &bob, None).unwrap();
    let to = Spsp {
        address: credentials.ilp_address.as_str().to_owned(),
        secret: credentials.shared_secret,
        receipts_enabled: false,
    };
    let Packet::Reject(r) = send_packet(app, packet(app, &to, 10, 0, true)).await else {
        panic!("refused")
    };
    assert_eq!(r.code, ErrorCode::F02_UNREACHABLE);
    assert_eq!(liquidity(&w).await, "1000");
}

#[tokio::test]
async fn a_payment_pointer_is_paid_with_receipts() {
    paid_with_receipts(Db::Sqlite).await;
}

#[tokio::test]
async fn a_payment_pointer_is_paid_with_receipts_on_postgres() {
    paid_with_receipts(Db::Postgres).await;
}

async fn paid_with_receipts(db: Db) {
    let w = world(db).await;
    let app = &w.app;
    let (nonce, secret) = verifier(1);
    let to = spsp(app, "bob", Some((nonce, secret))).await;
    assert!(to.receipts_enabled);
    // A probe: F99 with what arrived and the asset; nothing moves, no
    // receipt.
    let Packet::Reject(r) = send_packet(app, packet(app, &to, 300, 0, false)).await else {
        panic!("a probe is rejected")
    };
    assert_eq!(r.code, ErrorCode::F99_APPLICATION_ERROR);
    let reply = StreamPacket::decrypt_and_decode(&to.secret, &r.data).unwrap();
    assert_eq!(reply.prepare_amount, 300);
    assert!(reply.frames.contains(&Frame::ConnectionAssetDetails {
        source_asset_code: "USD".into(),
        source_asset_scale: 2,
    }));
    assert_eq!(receipt_of(&reply, &secret), None);
    assert_eq!(balance(app, "bob").await, "0");
    // Money: on bob's balance, with a receipt of the running total.
    let reply = fulfilled(app, &to, 300).await;
    assert_eq!(reply.prepare_amount, 300);
    assert_eq!(receipt_of(&reply, &secret), Some((nonce, 300)));
    let reply = fulfilled(app, &to, 50).await;
    assert_eq!(receipt_of(&reply, &secret), Some((nonce, 350)));
    // A zero-amount packet is fulfilled without money or receipt.
    let reply = fulfilled(app, &to, 0).await;
    assert_eq!(receipt_of(&reply, &secret), None);
    // Another verifier's connection counts from zero; one without receipts
    // gets none.
    let (nonce2, secret2) = verifier(2);
    let other = spsp(app, "bob", Some((nonce2, secret2))).await;
    let reply = fulfilled(app, &other, 20).await;
    assert_eq!(receipt_of(&reply, &secret2), Some((nonce2, 20)));
    let plain = spsp(app, "bob", None).await;
    let reply = fulfilled(app, &plain, 30).await;
    assert_eq!(receipt_of(&reply, &secret), None);
    assert_eq!(balance(app, "bob").await, "400");
    assert_eq!(liquidity(&w).await, "600");
    // Packets arriving together are credited together, each with its own
    // total: every total from 405 to 450 once.
    let sends = (0..10).map(|_| fulfilled(app, &to, 5));
    let replies = futures_util::future::join_all(sends).await;
    let mut totals: Vec<u64> = replies
        .iter()
        .map(|r| receipt_of(r, &secret).unwrap().1)
        .collect();
    totals.sort_unstable();
    assert_eq!(totals, (1..=10).map(|i| 350 + 5 * i).collect::<Vec<_>>());
    assert_eq!(balance(app, "bob").await, "450");
    assert_eq!(liquidity(&w).await, "550");
    let totals = app
        .services()
        .store
        .spsp_totals(bob_id(app).await)
        .await
        .unwrap();
    assert_eq!(totals.received, 450);
    ledger_balanced(app).await;
}

/// bob's wallet address id.
pub(crate) async fn bob_id(app: &TestApp) -> opd_core::WalletAddressId {
    let (s, v) = app.admin(Method::GET, "/wallet-addresses/bob", None).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    opd_core::WalletAddressId::parse(v["id"].as_str().unwrap()).unwrap()
}

#[tokio::test]
async fn hostile_packets_to_a_payment_pointer_move_nothing() {
    hostile(Db::Sqlite).await;
}

#[tokio::test]
async fn hostile_packets_to_a_payment_pointer_move_nothing_on_postgres() {
    hostile(Db::Postgres).await;
}

async fn hostile(db: Db) {
    let w = world(db).await;
    let app = &w.app;
    let to = spsp(app, "bob", Some(verifier(3))).await;
    let code = |p: Packet| match p {
        Packet::Reject(r) => r.code,
        other => panic!("rejected, not {other:?}"),
    };
    // A token someone changed: F06 (or F02 when it no longer reads as one).
    let mut forged = to.address.clone().into_bytes();
    let last = forged.len() - 3;
    forged[last] = if forged[last] == b'A' { b'B' } else { b'A' };
    let forged = Spsp {
        address: String::from_utf8(forged).unwrap(),
        ..spsp(app, "bob", None).await
    };
    let got = code(send_packet(app, packet(app, &forged, 10, 0, true)).await);
    assert!(
        [
            ErrorCode::F06_UNEXPECTED_PAYMENT,
            ErrorCode::F02_UNREACHABLE
        ]
        .contains(&got),
        "{got:?}"
    );
    // STREAM data under another secret: F06.
    let wrong = Spsp {
        secret: [9; 32],
        ..spsp(app, "bob", None).await
    };
    let got = code(send_packet(app, packet(app, &wrong, 10, 0, true)).await);
    assert_eq!(got, ErrorCode::F06_UNEXPECTED_PAYMENT);
    // A condition that is not the connection's (a forged Fulfill cannot
    // be made): F99, no money.
    let got = code(send_packet(app, packet(app, &to, 10, 0, false)).await);
    assert_eq!(got, ErrorCode::F99_APPLICATION_ERROR);
    // Less arriving than the sender asks: F99.
    let got = code(send_packet(app, packet(app, &to, 10, 11, true)).await);
    assert_eq!(got, ErrorCode::F99_APPLICATION_ERROR);
    // More than the peer's liquidity (1000): T04.
    let got = code(send_packet(app, packet(app, &to, 1001, 0, true)).await);
    assert_eq!(got, ErrorCode::T04_INSUFFICIENT_LIQUIDITY);
    // Above its max packet amount: F08.
    let got = code(send_packet(app, packet(app, &to, 100_001, 0, true)).await);
    assert_eq!(got, ErrorCode::F08_AMOUNT_TOO_LARGE);
    // Expired, or expiring before its credit could be answered: R00.
    let late = prepare_expiring(app, &to.address, &to.secret, (10, 10), true, -1);
    assert_eq!(
        code(send_packet(app, late).await),
        ErrorCode::R00_TRANSFER_TIMED_OUT
    );
    let tight = prepare_expiring(app, &to.address, &to.secret, (10, 10), true, 100);
    assert_eq!(
        code(send_packet(app, tight).await),
        ErrorCode::R00_TRANSFER_TIMED_OUT
    );
    // Not an ILP Prepare: F01.
    let (s, bytes) = crate::ilp::send(app, crate::ilp::TOKEN, vec![12, 1, 0]).await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(
        code(Packet::decode(&bytes).unwrap()),
        ErrorCode::F01_INVALID_PACKET
    );
    // A deactivated wallet address takes nothing more: F02.
    let (s, v) = app
        .admin(Method::POST, "/wallet-addresses/bob/deactivate", None)
        .await;
    assert!(s.is_success(), "{v}");
    let got = code(send_packet(app, packet(app, &to, 10, 0, true)).await);
    assert_eq!(got, ErrorCode::F02_UNREACHABLE);
    // Nothing moved, nothing counted.
    assert_eq!(liquidity(&w).await, "1000");
    assert_eq!(balance(app, "bob").await, "0");
    let totals = app
        .services()
        .store
        .spsp_totals(bob_id(app).await)
        .await
        .unwrap();
    assert_eq!((totals.received, totals.report_at), (0, None));
    ledger_balanced(app).await;
}

#[tokio::test]
async fn a_payment_pointer_in_another_asset_gets_the_rounded_down_conversion() {
    let w = world(Db::Sqlite).await;
    let app = &w.app;
    app.create_wallet("eve", "EUR", 2).await;
    let (s, v) = app
        .admin(
            Method::PUT,
            "/rates/USD/EUR",
            Some(&json!({ "rate": "0.91" })),
        )
        .await;
    assert!(s.is_success(), "{v}");
    let (nonce, secret) = verifier(4);
    let to = spsp(app, "eve", Some((nonce, secret))).await;
    // 333 USD cents are 303.03 EUR cents: 303 arrive, in EUR.
    let reply = fulfilled_at_least(app, &to, 333, 303).await;
    assert_eq!(reply.prepare_amount, 303);
    assert_eq!(receipt_of(&reply, &secret), Some((nonce, 303)));
    assert_eq!(balance(app, "eve").await, "303");
    assert_eq!(liquidity(&w).await, "667");
    ledger_balanced(app).await;
}

async fn fulfilled_at_least(app: &TestApp, to: &Spsp, amount: u64, min: u64) -> StreamPacket {
    let Packet::Fulfill(f) = send_packet(app, packet(app, to, amount, min, true)).await else {
        panic!("{amount} is fulfilled")
    };
    StreamPacket::decrypt_and_decode(&to.secret, &f.data).unwrap()
}

/// Paying a payment pointer costs no more SQL round trips per packet than
/// paying an incoming payment, with STREAM receipts or without (the
/// benchmark's 10 % budget, counted where PostgreSQL spends it).
#[tokio::test]
async fn a_packet_to_a_payment_pointer_costs_no_more_round_trips_than_one_to_an_incoming_payment() {
    for db in [Db::Sqlite, Db::Postgres] {
        let w: World = world(db).await;
        let app = &w.app;
        let (_, address, secret) = crate::ilp::receiver(app, "500").await;
        let incoming = Spsp {
            address,
            secret,
            receipts_enabled: false,
        };
        let pointer = spsp(app, "bob", None).await;
        let with_receipts = spsp(app, "bob", Some(([3; 16], [4; 32]))).await;
        let mut costs = Vec::new();
        for to in [&incoming, &pointer, &with_receipts] {
            // The first packet warms the caches (peer, receiver).
            fulfilled(app, to, 10).await;
            let before = app.services().store.round_trips();
            fulfilled(app, to, 10).await;
            costs.push(app.services().store.round_trips() - before);
        }
        assert!(costs[0] > 0, "{db:?}: round trips are counted");
        let said = format!("{db:?}: incoming payment, payment pointer, with receipts: {costs:?}");
        assert!(costs[1] <= costs[0], "{said}");
        if db == Db::Postgres {
            // The totals' upserts ride with the postings: one round trip
            // and the COMMIT, where an incoming payment's row is locked
            // first. (SQLite reads and writes a receipt's total: one more
            // statement, no round trip to another process.)
            assert!(costs[1] < costs[0] && costs[2] <= costs[1], "{said}");
        }
        w.app.stop().await;
    }
}

/// The commands of `docs/peering.md`'s "Paid by a payment pointer"
/// (between `<!-- spsp:begin -->` and `<!-- spsp:end -->`), each a line
/// or lines joined by a trailing `\`.
fn guide_commands() -> Vec<String> {
    let guide = include_str!("../../../../docs/peering.md");
    let block = guide
        .split("<!-- spsp:begin -->")
        .nth(1)
        .and_then(|rest| rest.split("<!-- spsp:end -->").next())
        .expect("the guide marks its SPSP commands");
    let mut commands = Vec::new();
    let mut current = String::new();
    for line in block.lines().filter(|l| !l.starts_with("```")) {
        match line.trim_end().strip_suffix('\\') {
            Some(part) => current.push_str(part),
            None if !line.trim().is_empty() => {
                current.push_str(line.trim_end());
                commands.push(std::mem::take(&mut current));
            }
            None => {}
        }
    }
    commands
}

/// The guide's `curl` commands, run by a shell against a server (its
/// address put in the place of the guide's), print credentials that pay
/// alice; the second asks for receipts and gets them.
#[tokio::test]
async fn the_guides_curl_commands_answer_credentials_that_pay() {
    let w = world(Db::Sqlite).await;
    let app = &w.app;
    app.create_wallet("alice", "USD", 2).await;
    let commands = guide_commands();
    assert_eq!(commands.len(), 2, "{commands:?}");
    for (i, command) in commands.iter().enumerate() {
        assert!(command.starts_with("curl "), "{command}");
        let command = command.replace("http://127.0.0.1:8080", app.base.trim_end_matches('/'));
        // Off the test's thread: the server answers on it.
        let out = tokio::task::spawn_blocking(move || {
            std::process::Command::new("sh")
                .args(["-c", &command])
                .output()
        })
        .await
        .unwrap()
        .expect("sh and curl run");
        assert!(out.status.success(), "{out:?}");
        let body: Value = serde_json::from_slice(&out.stdout).expect("JSON");
        let with_receipts = i == 1;
        assert_eq!(body["receipts_enabled"], with_receipts, "{body}");
        let to = Spsp {
            address: body["destination_account"].as_str().unwrap().to_owned(),
            secret: base64::engine::general_purpose::URL_SAFE_NO_PAD
                .decode(body["shared_secret"].as_str().unwrap())
                .unwrap()
                .try_into()
                .unwrap(),
            receipts_enabled: with_receipts,
        };
        let reply = fulfilled(app, &to, 25).await;
        let receipt = reply.frames.iter().find_map(|f| match f {
            Frame::StreamReceipt { receipt, .. } => Some(receipt.clone()),
            _ => None,
        });
        assert_eq!(receipt.is_some(), with_receipts);
        if let Some(receipt) = receipt {
            let read = opd_ilp::stream::receipt::decode_receipt(&receipt).unwrap();
            assert_eq!((read.stream_id, read.total_received), (1, 25));
        }
    }
    assert_eq!(balance(app, "alice").await, "50");
}
