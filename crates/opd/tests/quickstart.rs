//! The README's quickstart, verbatim: the commands between
//! `<!-- quickstart:begin -->` and `<!-- quickstart:end -->`, run in a
//! fresh directory with this build's `opd` in place of
//! `cargo run --release --` (the same binary, built by the test run; a
//! release build here would only cost minutes). The test plays the person:
//! it reads the password the server prints, opens the consent page the
//! client prints, logs in and approves, as a browser would (the form as
//! served, hidden fields and cookies included). bob's incoming payment
//! must end completed with the 12.34 USD, and bob's balance be 12.34 USD;
//! then bob pays it all on to alice with the same `pay` command (approved
//! with bob's password), funded by what he received.
//!
//! The quickstart uses the default ports (8080 to 8083). So that a machine
//! where one is taken can still run it, the test moves the server to free
//! ports (through the environment, `OPD_LISTEN` and the like) and puts the
//! same ports in the later commands' URLs: the only change to their text.
//! A port another process takes between the choice and the server's start
//! makes it try again, with new ports, a few times. Every wait has a
//! deadline, and names what it waited for when it passes.
//!
//! The client commands send their HTTP through a recording proxy
//! (`opd_testkit::proxy`, through `HTTP_PROXY`), so that every Open
//! Payments and GNAP response they received is validated against the spec.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by design

use std::io::{BufRead as _, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use opd_testkit::proxy::ValidatingProxy;
use opd_testkit::spec::{Server, Servers};

const PREFIX: &str = "cargo run --release -- ";

/// The quickstart's commands, each as its arguments after the prefix.
fn quickstart_commands() -> Vec<Vec<String>> {
    let readme = include_str!("../../../README.md");
    let (_, rest) = readme
        .split_once("<!-- quickstart:begin -->")
        .expect("the README marks its quickstart");
    let (block, _) = rest
        .split_once("<!-- quickstart:end -->")
        .expect("the quickstart ends");
    block
        .lines()
        .filter_map(|l| l.trim().strip_prefix(PREFIX))
        .map(|cmd| {
            assert!(
                !cmd.contains(['\'', '"', '\\', '$']),
                "the test splits commands on spaces: {cmd}"
            );
            cmd.split_whitespace().map(str::to_owned).collect()
        })
        .collect()
}

/// How long any one thing the test waits for may take.
const DEADLINE: Duration = Duration::from_secs(120);

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

/// Waits for `child` to exit, at most [`DEADLINE`]; kills it and fails
/// naming `what` when it does not.
async fn exit_of(mut child: Child, what: &str) -> std::process::ExitStatus {
    let started = std::time::Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if started.elapsed() > DEADLINE {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what} did not finish within {DEADLINE:?}");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Runs `cmd` to its end (at most [`DEADLINE`]): its status, standard
/// output and standard error.
async fn output_of(mut cmd: Command, what: &str) -> (std::process::ExitStatus, String, String) {
    use std::io::Read as _;
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let read_all = |mut pipe: Box<dyn std::io::Read + Send>| {
        std::thread::spawn(move || {
            let mut text = String::new();
            let _ = pipe.read_to_string(&mut text);
            text
        })
    };
    let out = read_all(Box::new(child.stdout.take().unwrap()));
    let err = read_all(Box::new(child.stderr.take().unwrap()));
    let status = exit_of(child, what).await;
    (status, out.join().unwrap(), err.join().unwrap())
}

/// A command of the quickstart as a process in `dir`, with none of the
/// caller's `OPD_*` settings (a fresh machine has none).
fn command(args: &[String], dir: &std::path::Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_opd"));
    c.args(args).current_dir(dir);
    for (k, _) in std::env::vars() {
        if k.starts_with("OPD_") {
            c.env_remove(k);
        }
    }
    c.env("OPD_LOG", "warn");
    c
}

/// A client command of the quickstart (`command`), its HTTP going through
/// `proxy` (its HTTP client, like any reqwest client, takes `HTTP_PROXY`).
fn client_command(args: &[String], dir: &std::path::Path, proxy: &ValidatingProxy) -> Command {
    let mut c = command(args, dir);
    c.env_remove("NO_PROXY")
        .env_remove("no_proxy")
        .env("HTTP_PROXY", &proxy.url)
        .env("http_proxy", &proxy.url);
    c
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

/// Lines of a child's pipe, read on a thread.
fn lines(pipe: impl std::io::Read + Send + 'static) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(pipe).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

/// The first line `rx` gives that contains `needle` (all lines are kept in
/// `seen` for the failure message).
fn wait_for(rx: &mpsc::Receiver<String>, needle: &str, seen: &mut Vec<String>) -> String {
    loop {
        match rx.recv_timeout(DEADLINE) {
            Ok(line) => {
                seen.push(line.clone());
                if line.contains(needle) {
                    return line;
                }
            }
            Err(e) => panic!("no line with {needle:?} ({e}); got:\n{}", seen.join("\n")),
        }
    }
}

struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The value of attribute `name` in the tag text `tag` (`<input ...>`).
fn attribute(tag: &str, name: &str) -> Option<String> {
    let start = tag.find(&format!(" {name}=\""))? + name.len() + 3;
    let len = tag[start..].find('"')?;
    Some(
        tag[start..start + len]
            .replace("&quot;", "\"")
            .replace("&#39;", "'")
            .replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&amp;", "&"),
    )
}

/// Every tag `<kind ...>` of `html`.
fn tags<'a>(html: &'a str, kind: &str) -> Vec<&'a str> {
    let open = format!("<{kind}");
    let mut out = Vec::new();
    let mut rest = html;
    while let Some(i) = rest.find(&open) {
        let Some(end) = rest[i..].find('>') else {
            break;
        };
        out.push(&rest[i..i + end + 1]);
        rest = &rest[i + end + 1..];
    }
    out
}

/// What a browser posts for the consent form: its hidden fields, the
/// password, and the approve button.
fn approval(html: &str, password: &str) -> (String, Vec<(String, String)>) {
    let form = tags(html, "form");
    let action = attribute(form.first().expect("a form"), "action").expect("its action");
    let mut fields = Vec::new();
    for input in tags(html, "input") {
        let (Some(name), kind) = (attribute(input, "name"), attribute(input, "type")) else {
            continue;
        };
        match kind.as_deref() {
            Some("password") => fields.push((name, password.to_owned())),
            Some("hidden") => fields.push((name, attribute(input, "value").unwrap_or_default())),
            _ => {}
        }
    }
    let approve = tags(html, "button")
        .into_iter()
        .find(|b| attribute(b, "value").is_some_and(|v| v.eq_ignore_ascii_case("approve")))
        .expect("an Approve button");
    fields.push((
        attribute(approve, "name").unwrap(),
        attribute(approve, "value").unwrap(),
    ));
    (action, fields)
}

/// Runs `opd client pay` with `args` in `dir` and plays the payer in a
/// browser: opens the consent page it prints, signs in with `password`,
/// approves; the client must then say `Paid.`.
async fn pay_with_consent(
    args: &[String],
    dir: &std::path::Path,
    password: &str,
    proxy: &ValidatingProxy,
) {
    let mut pay = client_command(args, dir, proxy)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pay_err = lines(pay.stderr.take().unwrap());
    let pay_out = lines(pay.stdout.take().unwrap());
    let mut pay_seen = Vec::new();
    let consent = wait_for(&pay_err, "/interact/", &mut pay_seen)
        .trim()
        .to_owned();

    // The person, in a browser: the consent page, the payer's password,
    // Approve, then the redirect back to the waiting client.
    let browser = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let r = browser.get(&consent).send().await.unwrap();
    assert!(r.status().is_redirection(), "{}", r.status());
    let page_url = url::Url::parse(&consent)
        .unwrap()
        .join(r.headers()["location"].to_str().unwrap())
        .unwrap();
    let r = browser.get(page_url.clone()).send().await.unwrap();
    assert!(r.status().is_success(), "{}", r.status());
    let cookies: Vec<String> = r
        .headers()
        .get_all("set-cookie")
        .iter()
        .map(|c| c.to_str().unwrap().split(';').next().unwrap().to_owned())
        .collect();
    let html = r.text().await.unwrap();
    assert!(html.contains("12.34"), "the page shows the amount: {html}");
    let (action, fields) = approval(&html, password);
    let mut post = browser.post(page_url.join(&action).unwrap()).form(&fields);
    if !cookies.is_empty() {
        post = post.header("cookie", cookies.join("; "));
    }
    let r = post.send().await.unwrap();
    assert!(
        r.status().is_redirection(),
        "{}: {}",
        r.status(),
        r.text().await.unwrap()
    );
    let finish = r.headers()["location"].to_str().unwrap().to_owned();
    let r = browser.get(&finish).send().await.unwrap();
    assert!(r.status().is_success(), "{}", r.status());

    // The client sends the payment and follows it to the end.
    let status = exit_of(pay, "`opd client pay` after the approval").await;
    while let Ok(line) = pay_err.recv_timeout(Duration::from_millis(100)) {
        pay_seen.push(line);
    }
    let printed: Vec<String> = pay_out.try_iter().collect();
    assert!(
        status.success(),
        "pay failed:\n{}\n{}",
        pay_seen.join("\n"),
        printed.join("\n")
    );
    assert!(printed.iter().any(|l| l == "Paid."), "{printed:?}");
}

/// The running server: its process, its output, what it printed so far.
struct Running {
    _process: Killed,
    out: mpsc::Receiver<String>,
    seen: Vec<String>,
    ports: Ports,
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

// Several threads: the test waits for the client's lines blocking its
// thread, while the proxy (a task) must go on serving the client.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_readme_quickstart_pays_bob() {
    let readme = quickstart_commands();
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
    let next = wait_for(&server.out, "client pay", &mut server.seen);
    assert_eq!(
        next.trim(),
        format!("{PREFIX}{}", commands[1].join(" ")),
        "the server prints the README's next command"
    );

    // 2. The payment, which prints the consent page to open.
    pay_with_consent(&commands[1], dir.path(), &password, &proxy).await;

    // 3. bob's incoming payments: the one paid, completed, with 12.34 USD.
    let (status, text, errors) = output_of(
        client_command(&commands[2], dir.path(), &proxy),
        "the listing",
    )
    .await;
    assert!(status.success(), "{text}{errors}");
    assert!(text.contains("  received        12.34 USD\n"), "{text}");
    assert!(text.contains("  completed       yes\n"), "{text}");

    // bob has the money: received money goes to the wallet address's
    // balance, and the ledger stays balanced.
    let token = std::fs::read_to_string(dir.path().join("opd-data/admin-token")).unwrap();
    let admin = &ports.admin();
    let (s, v) = opd_testkit::app::admin_at(
        admin,
        token.trim(),
        reqwest::Method::GET,
        "/wallet-addresses/bob/balance",
        None,
    )
    .await;
    assert!(s.is_success(), "{s} {v}");
    assert_eq!(
        v["balance"],
        serde_json::json!({"value": "1234", "assetCode": "USD", "assetScale": 2}),
        "bob's balance after the quickstart"
    );
    let (s, v) = opd_testkit::app::admin_at(
        admin,
        token.trim(),
        reqwest::Method::GET,
        "/ledger/check",
        None,
    )
    .await;
    assert!(s.is_success(), "{s} {v}");
    assert_eq!(v["balanced"], true, "{v}");

    // 4. bob pays it on: all 12.34 USD back to alice, approved with bob's
    // password, funded by what he received.
    let bob_password = server
        .seen
        .iter()
        .find(|l| l.contains("bob's password"))
        .and_then(|l| l.rsplit(' ').next())
        .unwrap_or_else(|| panic!("the server prints bob's password: {:?}", server.seen))
        .to_owned();
    let (bob, alice) = (
        format!("{}/bob", ports.public()),
        format!("{}/alice", ports.public()),
    );
    let pay_on: Vec<String> = commands[1]
        .iter()
        .map(|a| match a {
            a if *a == bob => alice.clone(),
            a if *a == alice => bob.clone(),
            other => other.clone(),
        })
        .collect();
    assert_ne!(
        pay_on, commands[1],
        "the README's pay command names bob and alice"
    );
    pay_with_consent(&pay_on, dir.path(), &bob_password, &proxy).await;
    let balance = |path: &'static str| {
        let (token, admin) = (token.clone(), admin.clone());
        async move {
            let (s, v) = opd_testkit::app::admin_at(
                &admin,
                token.trim(),
                reqwest::Method::GET,
                &format!("/wallet-addresses/{path}/balance"),
                None,
            )
            .await;
            assert!(s.is_success(), "{s} {v}");
            v["balance"]["value"].as_str().unwrap().to_owned()
        }
    };
    assert_eq!(balance("bob").await, "0", "bob paid all he received on");
    assert_eq!(
        balance("alice").await,
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
}
