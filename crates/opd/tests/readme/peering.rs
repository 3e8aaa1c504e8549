//! The peering guide's "Peering two opd servers, step by step"
//! (`docs/peering.md`), verbatim (see [`crate::person`]): the commands
//! between `<!-- peering:begin -->` and `<!-- peering:end -->`, run in a
//! fresh directory, where the servers' data directories go under
//! `walkthrough/` (git-ignored in the repository). Two servers start,
//! carol's EUR wallet address is made on B, the servers are peered and
//! given a rate, shop pays carol 10.00 EUR from alice on A (the test
//! approves on A's consent page with the password A printed), and the
//! walkthrough's checks must show the money where it belongs: carol has exactly
//! 10.00 EUR, alice paid what was sent (no more than the quote's debit
//! amount), A's liquidity on B went down by that much and B's on A up by
//! as much, and both ledgers balance.
//!
//! The walkthrough uses ports 8080 to 8083 (A) and 9080 to 9083 (B); the
//! test moves each to a free port in every command's text, the only change
//! to it.

use std::process::Stdio;

use opd_testkit::proxy::ValidatingProxy;
use opd_testkit::spec::{Server, Servers};

use crate::person::{
    assert_git_ignored, command, lines, marked_commands, output_of, pay_with_consent, wait_for,
    Document, Killed,
};

/// The walkthrough's ports: A's four listeners, then B's.
const PORTS: [u16; 8] = [8080, 8081, 8082, 8083, 9080, 9081, 9082, 9083];

/// The walkthrough's ports, each moved to one free right now.
struct Moved(Vec<(u16, u16)>);

impl Moved {
    fn free() -> Self {
        // Bound at once, so they differ, then let go for the servers.
        let listeners: Vec<_> = PORTS
            .iter()
            .map(|_| std::net::TcpListener::bind(("127.0.0.1", 0)).unwrap())
            .collect();
        Self(
            PORTS
                .iter()
                .zip(&listeners)
                .map(|(from, l)| (*from, l.local_addr().unwrap().port()))
                .collect(),
        )
    }

    /// `arg` with every walkthrough port moved.
    fn apply(&self, arg: &str) -> String {
        self.0.iter().fold(arg.to_owned(), |out, (from, to)| {
            out.replace(&format!("127.0.0.1:{from}"), &format!("127.0.0.1:{to}"))
        })
    }

    /// `http://127.0.0.1:<port>` for the walkthrough's `port`.
    fn url(&self, port: u16) -> String {
        self.apply(&format!("http://127.0.0.1:{port}"))
    }
}

/// Runs a command of the walkthrough that must succeed; what it printed.
async fn run(args: &[String], dir: &std::path::Path) -> String {
    let (status, out, err) = output_of(command(args, dir), &args.join(" ")).await;
    assert!(
        status.success(),
        "`opd {}` failed:\n{out}{err}",
        args.join(" ")
    );
    out
}

/// The cents of `who`'s balance as a helper prints it, one line: `alice:
/// 88.88 USD` in `code`.
fn cents(printed: &str, who: &str, code: &str) -> i128 {
    let amount = printed
        .strip_prefix(&format!("{who}: "))
        .and_then(|rest| rest.strip_suffix(&format!(" {code}\n")))
        .unwrap_or_else(|| panic!("not {who}'s balance in {code}: {printed:?}"));
    opd_core::decimal::parse_decimal(amount, 2).unwrap().into()
}

/// The walkthrough's commands, its ports moved, and the directory a person
/// runs them in.
struct Walkthrough {
    commands: Vec<Vec<String>>,
    dir: tempfile::TempDir,
}

impl Walkthrough {
    fn read(moved: &Moved) -> Self {
        let commands: Vec<Vec<String>> = marked_commands(Document::Peering, "peering")
            .iter()
            .map(|c| c.iter().map(|a| moved.apply(a)).collect())
            .collect();
        assert_eq!(commands.len(), 15, "{commands:?}");
        Self {
            commands,
            dir: tempfile::tempdir().unwrap(),
        }
    }

    fn dir(&self) -> &std::path::Path {
        self.dir.path()
    }

    /// Command `i`, which must begin with `starts`.
    fn step(&self, i: usize, starts: &[&str]) -> &[String] {
        let command = &self.commands[i];
        assert!(
            command.starts_with(&starts.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>()),
            "step {i} of the walkthrough is `{}`: {command:?}",
            starts.join(" "),
        );
        command
    }

    /// Runs command `i` (which begins with `starts`), which must succeed:
    /// what it printed.
    async fn run(&self, i: usize, starts: &[&str]) -> String {
        run(self.step(i, starts), self.dir()).await
    }
}

/// A and B, each in its terminal: the servers, and alice's password (A
/// prints it).
fn start_servers(walk: &Walkthrough) -> (Vec<Killed>, String) {
    let mut servers = Vec::new();
    let mut password = None;
    for (i, ready) in [(0, "alice's password"), (1, "admin token")] {
        let mut process = command(walk.step(i, &["serve"]), walk.dir())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let out = lines(process.stdout.take().unwrap());
        let err = lines(process.stderr.take().unwrap());
        std::thread::spawn(move || err.iter().for_each(|l| eprintln!("{l}")));
        let line = wait_for(&out, ready, &mut Vec::new());
        if i == 0 {
            password = Some(line.rsplit(' ').next().unwrap().to_owned());
        }
        // A person's terminal keeps showing the server's output: keep
        // reading it, so its standard output stays open as in a terminal.
        std::thread::spawn(move || out.iter().for_each(drop));
        servers.push(Killed(process));
    }
    (servers, password.unwrap())
}

/// carol's wallet address, the peering, B's liquidity for A, the rates.
async fn set_up(walk: &Walkthrough) {
    let carol = walk.run(2, &["wallet-address", "create"]).await;
    assert!(
        carol.starts_with("wallet address created: carol  ")
            && carol.ends_with("  EUR (scale 2)\n"),
        "{carol}"
    );
    for i in 3..=4 {
        let peer = walk.run(i, &["peer", "create"]).await;
        assert!(peer.starts_with("peer created: "), "{peer}");
    }
    let deposit = walk.run(5, &["peer", "deposit"]).await;
    assert_eq!(
        deposit,
        "deposited 100.00 USD to peer a; liquidity 100.00 USD\n"
    );
    for i in 6..=7 {
        let rate = walk.run(i, &["rate", "set"]).await;
        assert_eq!(rate, "rate set: 1 USD = 0.9 EUR\n");
    }
}

/// The walkthrough's checks, and what they must show (`printed`: what the
/// payment printed, for the failure message).
async fn check_the_money(walk: &Walkthrough, printed: &[String]) {
    let carol = walk.run(9, &["wallet-address", "balance"]).await;
    assert_eq!(
        carol, "carol: 10.00 EUR\n",
        "carol has exactly the 10.00 EUR"
    );
    let alice = walk.run(10, &["wallet-address", "balance"]).await;
    let sent = 10_000 - cents(&alice, "alice", "USD");
    // At 0.9 less the 1 % slippage the quote allows, 10.00 EUR cost at
    // most ceil(1000 / 0.891) = 1123 cents; at 0.9 exactly, 1112 at least.
    assert!(
        (1112..=1123).contains(&sent),
        "alice paid {sent} cents: {printed:?}"
    );
    let a_on_b = walk.run(11, &["peer", "balance"]).await;
    assert_eq!(
        cents(&a_on_b, "a", "USD"),
        10_000 - sent,
        "A's liquidity on B: {a_on_b}"
    );
    let b_on_a = walk.run(12, &["peer", "balance"]).await;
    assert_eq!(
        cents(&b_on_a, "b", "USD"),
        sent,
        "B's liquidity on A: {b_on_a}"
    );
    for i in 13..=14 {
        let text = walk.run(i, &["check"]).await;
        assert!(text.contains("ledger balanced"), "{text}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_peering_walkthrough_pays_carol_across_two_servers() {
    let moved = Moved::free();
    let walk = Walkthrough::read(&moved);
    let proxy = ValidatingProxy::start().await;
    let (servers, password) = start_servers(&walk);
    set_up(&walk).await;

    // The payment, approved with alice's password on A's consent page,
    // which names carol's incoming payment on B as what it may pay, and
    // what carol gets by the client's quote.
    let only_to = format!("Only to {}/incoming-payments/", moved.url(9080));
    let gets =
        "The newest quote to this receiver gives it 10.00 EUR in its own currency for $11.23";
    let pay = walk.step(
        8,
        &["client", "--profile", "walkthrough/a/client.json", "pay"],
    );
    // Who and where the receiver is, as B says (on B's own origin).
    let who = format!(
        "The receiver is {}/carol, at another wallet provider (127.0.0.1).",
        moved.url(9080)
    );
    let printed =
        pay_with_consent(pay, walk.dir(), &password, &[&only_to, gets, &who], &proxy).await;
    check_the_money(&walk, &printed).await;

    let mut both = Servers::default();
    for (public, auth) in [(8080, 8081), (9080, 9081)] {
        both.add(Server::new(&moved.url(public), &moved.url(auth)));
    }
    proxy.validate(
        &both,
        &[
            "get-wallet-address",
            "post-request",
            "post-continue",
            "create-incoming-payment",
            "create-quote",
            "create-outgoing-payment",
        ],
    );
    drop(servers);
    // What the walkthrough made in the directory it ran in (the servers'
    // data, their secrets) would be ignored by git in the repository.
    assert_git_ignored(walk.dir());
}
