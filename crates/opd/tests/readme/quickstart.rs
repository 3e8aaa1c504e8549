//! The README's quickstart, verbatim (see [`crate::person`]): the
//! commands between `<!-- quickstart:begin -->` and
//! `<!-- quickstart:end -->`, run in a fresh directory. The test plays the
//! person: it reads the password the server prints, opens the consent page
//! the client prints, logs in and approves, as a browser would (the form
//! as served, hidden fields and cookies included). bob's incoming payment
//! must end completed with the 12.34 USD, and bob's balance be 12.34 USD;
//! then bob pays it all on to alice with the same `pay` command (approved
//! with bob's password), funded by what he received.
//!
//! The quickstart uses the default ports (8080 to 8083). So that a machine
//! where one is taken can still run it, the test moves the server to free
//! ports (through the environment, `OPD_LISTEN` and the like) and puts the
//! same ports in the later commands' URLs: the only change to their text.
//! A port another process takes between the choice and the server's start
//! makes it try again, with new ports, a few times.
//!
//! The client commands send their HTTP through a recording proxy
//! (`opd_testkit::proxy`, through `HTTP_PROXY`), so that every Open
//! Payments and GNAP response they received is validated against the spec.

use std::process::Stdio;
use std::sync::mpsc;

use opd_testkit::proxy::ValidatingProxy;
use opd_testkit::spec::{Server, Servers};

use crate::person::{
    assert_git_ignored, client_command, command, lines, marked_commands, output_of,
    pay_with_consent, wait_for, Document, Killed, DEADLINE, PREFIX,
};

/// The server's listeners: Open Payments, authorization, admin, ILP.
#[derive(Clone, Copy)]
struct Ports([u16; 4]);

impl Ports {
    /// Four ports free right now (the listeners bound at once, so they
    /// differ, then let go for the server).
    fn free() -> Self {
        let listeners: Vec<_> = (0..4)
            .map(|_| std::net::TcpListener::bind(("127.0.0.1", 0)).unwrap())
            .collect();
        Self(std::array::from_fn(|i| {
            listeners[i].local_addr().unwrap().port()
        }))
    }

    /// `arg` with the default ports (`127.0.0.1:8080` to `:8083`) moved.
    fn apply(&self, arg: &str) -> String {
        let mut out = arg.to_owned();
        for (i, port) in self.0.iter().enumerate() {
            out = out.replace(
                &format!("127.0.0.1:{}", 8080 + i),
                &format!("127.0.0.1:{port}"),
            );
        }
        out
    }

    fn public(&self) -> String {
        format!("http://127.0.0.1:{}", self.0[0])
    }

    fn admin(&self) -> String {
        format!("http://127.0.0.1:{}", self.0[2])
    }

    /// The environment that moves the server's listeners.
    fn server_env(&self) -> [(&'static str, String); 4] {
        let [public, auth, admin, ilp] = self.0;
        [
            ("OPD_LISTEN", format!("127.0.0.1:{public}")),
            ("OPD_AUTH_LISTEN", format!("127.0.0.1:{auth}")),
            ("OPD_ADMIN_LISTEN", format!("127.0.0.1:{admin}")),
            ("OPD_ILP_LISTEN", format!("127.0.0.1:{ilp}")),
        ]
    }
}

/// The quickstart's server as its clients see it, on `ports`.
fn quickstart_server(ports: Ports) -> Servers {
    let mut servers = Servers::default();
    servers.add(Server::new(
        &ports.public(),
        &format!("http://127.0.0.1:{}", ports.0[1]),
    ));
    servers
}

/// The running server: its process, its output, what it printed so far.
struct Running {
    _process: Killed,
    out: mpsc::Receiver<String>,
    seen: Vec<String>,
    ports: Ports,
}

impl Running {
    /// The password the server printed for `who` (`bob`).
    fn printed_password(&self, who: &str) -> String {
        self.seen
            .iter()
            .find(|l| l.contains(&format!("{who}'s password")))
            .and_then(|l| l.rsplit(' ').next())
            .unwrap_or_else(|| panic!("the server prints {who}'s password: {:?}", self.seen))
            .to_owned()
    }
}

/// Starts the quickstart's `serve` command in `dir` on free ports, up to
/// three times when a port was taken meanwhile (the server then exits);
/// returns once it printed alice's password.
fn start_server(serve: &[String], dir: &std::path::Path) -> (Running, String) {
    let mut tries = Vec::new();
    for _ in 0..3 {
        let ports = Ports::free();
        let mut cmd = command(serve, dir);
        cmd.envs(ports.server_env())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut process = cmd.spawn().unwrap();
        let out = lines(process.stdout.take().unwrap());
        let err = lines(process.stderr.take().unwrap());
        let mut seen = Vec::new();
        // The password line, or the end of the output (the server exited).
        let password = loop {
            match out.recv_timeout(DEADLINE) {
                Ok(line) => {
                    seen.push(line.clone());
                    if line.contains("alice's password") {
                        break Some(line);
                    }
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => break None,
                Err(e) => panic!("the server printed no password ({e}):\n{}", seen.join("\n")),
            }
        };
        // Its log goes on to the test's output.
        std::thread::spawn(move || err.iter().for_each(|l| eprintln!("{l}")));
        if let Some(line) = password {
            let password = line.rsplit(' ').next().unwrap().to_owned();
            let server = Running {
                _process: Killed(process),
                out,
                seen,
                ports,
            };
            return (server, password);
        }
        let status = process.wait().unwrap();
        tries.push(format!(
            "ports {:?}: exited {status}:\n{}",
            ports.0,
            seen.join("\n")
        ));
    }
    panic!("the server did not start in 3 tries:\n{}", tries.join("\n"));
}

/// The server's first lines after the password: it names the dashboard
/// and where its sign-in token is, and prints the README's next command
/// (`pay`, its ports moved).
fn check_what_the_server_prints(server: &mut Running, pay: &[String]) {
    let next = wait_for(&server.out, "client pay", &mut server.seen);
    let dashboard = format!(
        "dashboard: {}/dashboard (sign in with the admin token in opd-data/admin-token)",
        server.ports.admin()
    );
    assert!(
        server.seen.iter().any(|l| l == &dashboard),
        "the server names the dashboard: {:?}",
        server.seen
    );
    assert_eq!(
        next.trim(),
        format!("{PREFIX}{}", pay.join(" ")),
        "the server prints the README's next command"
    );
}

/// The admin API of the quickstart's server, with its token.
struct Admin {
    url: String,
    token: String,
}

impl Admin {
    fn of(server: &Running, dir: &std::path::Path) -> Self {
        let token = std::fs::read_to_string(dir.join("opd-data/admin-token")).unwrap();
        Self {
            url: server.ports.admin(),
            token: token.trim().to_owned(),
        }
    }

    /// `GET path`, which must succeed.
    async fn get(&self, path: &str) -> serde_json::Value {
        let (s, v) =
            opd_testkit::app::admin_at(&self.url, &self.token, reqwest::Method::GET, path, None)
                .await;
        assert!(s.is_success(), "{path}: {s} {v}");
        v
    }

    /// The balance of wallet address `path`, in minor units.
    async fn balance(&self, path: &str) -> String {
        let v = self.get(&format!("/wallet-addresses/{path}/balance")).await;
        v["balance"]["value"].as_str().unwrap().to_owned()
    }
}

/// bob has the money: received money goes to the wallet address's
/// balance, and the ledger stays balanced.
async fn check_bob_has_it(admin: &Admin) {
    let v = admin.get("/wallet-addresses/bob/balance").await;
    assert_eq!(
        v["balance"],
        serde_json::json!({"value": "1234", "assetCode": "USD", "assetScale": 2}),
        "bob's balance after the quickstart"
    );
    let v = admin.get("/ledger/check").await;
    assert_eq!(v["balanced"], true, "{v}");
}

/// The quickstart's `pay` command with bob and alice swapped: bob pays
/// alice.
fn bob_pays_alice(pay: &[String], ports: Ports) -> Vec<String> {
    let (bob, alice) = (
        format!("{}/bob", ports.public()),
        format!("{}/alice", ports.public()),
    );
    let swapped: Vec<String> = pay
        .iter()
        .map(|a| match a {
            a if *a == bob => alice.clone(),
            a if *a == alice => bob.clone(),
            other => other.clone(),
        })
        .collect();
    assert_ne!(swapped, pay, "the README's pay command names bob and alice");
    swapped
}

// Several threads: the test waits for the client's lines blocking its
// thread, while the proxy (a task) must go on serving the client.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_readme_quickstart_pays_bob() {
    let readme = marked_commands(Document::Readme, "quickstart");
    assert_eq!(readme.len(), 3, "serve, pay, list: {readme:?}");
    assert_eq!(readme[0][..2], ["serve", "--demo"]);
    let dir = tempfile::tempdir().unwrap();
    let proxy = ValidatingProxy::start().await;

    // 1. The server, which prints alice's password and the next commands.
    let (mut server, password) = start_server(&readme[0], dir.path());
    let ports = server.ports;
    let commands: Vec<Vec<String>> = readme
        .iter()
        .map(|c| c.iter().map(|a| ports.apply(a)).collect())
        .collect();
    check_what_the_server_prints(&mut server, &commands[1]);

    // 2. The payment, which prints the consent page to open.
    pay_with_consent(&commands[1], dir.path(), &password, &["12.34"], &proxy).await;

    // 3. bob's incoming payments: the one paid, completed, with 12.34 USD.
    let (status, text, errors) = output_of(
        client_command(&commands[2], dir.path(), &proxy),
        "the listing",
    )
    .await;
    assert!(status.success(), "{text}{errors}");
    assert!(text.contains("  received        12.34 USD\n"), "{text}");
    assert!(text.contains("  completed       yes\n"), "{text}");
    let admin = Admin::of(&server, dir.path());
    check_bob_has_it(&admin).await;

    // 4. bob pays it on: all 12.34 USD back to alice, approved with bob's
    // password, funded by what he received.
    let bob_password = server.printed_password("bob");
    let pay_on = bob_pays_alice(&commands[1], ports);
    pay_with_consent(&pay_on, dir.path(), &bob_password, &["12.34"], &proxy).await;
    assert_eq!(
        admin.balance("bob").await,
        "0",
        "bob paid all he received on"
    );
    assert_eq!(
        admin.balance("alice").await,
        "10000",
        "alice has her 100.00 USD back"
    );
    proxy.validate(
        &quickstart_server(ports),
        &[
            "get-wallet-address",
            "post-request",
            "post-continue",
            "create-incoming-payment",
            "create-quote",
            "create-outgoing-payment",
            "list-incoming-payments",
        ],
    );
    drop(server);
    // What the quickstart made in the directory it ran in (its data
    // directory) would be ignored by git in the repository.
    assert_git_ignored(dir.path());
}
