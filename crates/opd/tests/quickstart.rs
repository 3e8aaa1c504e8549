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
//! The quickstart uses the default ports (8080 to 8083); this test is the
//! only one in its binary, and fails loudly when a port is taken.
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

/// The quickstart's server as its clients see it (the default URLs).
fn quickstart_server() -> Servers {
    let mut servers = Servers::default();
    servers.add(Server::new(
        "http://127.0.0.1:8080",
        "http://127.0.0.1:8081",
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
        match rx.recv_timeout(Duration::from_secs(60)) {
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
    let status = tokio::task::spawn_blocking(move || pay.wait().unwrap())
        .await
        .unwrap();
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

// Several threads: the test waits for the client's lines blocking its
// thread, while the proxy (a task) must go on serving the client.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_readme_quickstart_pays_bob() {
    let commands = quickstart_commands();
    assert_eq!(commands.len(), 3, "serve, pay, list: {commands:?}");
    assert_eq!(commands[0][..2], ["serve", "--demo"]);
    for port in 8080..=8083 {
        std::net::TcpListener::bind(("127.0.0.1", port)).unwrap_or_else(|e| {
            panic!("port {port} is taken ({e}): the quickstart uses the default ports")
        });
    }
    let dir = tempfile::tempdir().unwrap();
    let proxy = ValidatingProxy::start().await;

    // 1. The server, which prints alice's password and the next commands.
    let mut serve = command(&commands[0], dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let out = lines(serve.stdout.take().unwrap());
    let _serve = Killed(serve);
    let mut seen = Vec::new();
    let password = wait_for(&out, "alice's password", &mut seen)
        .rsplit(' ')
        .next()
        .unwrap()
        .to_owned();
    let next = wait_for(&out, "client pay", &mut seen);
    assert_eq!(
        next.trim(),
        format!("{PREFIX}{}", commands[1].join(" ")),
        "the server prints the README's next command"
    );

    // 2. The payment, which prints the consent page to open.
    pay_with_consent(&commands[1], dir.path(), &password, &proxy).await;

    // 3. bob's incoming payments: the one paid, completed, with 12.34 USD.
    let list = client_command(&commands[2], dir.path(), &proxy)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&list.stdout);
    assert!(
        list.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&list.stderr)
    );
    assert!(text.contains("  received        12.34 USD\n"), "{text}");
    assert!(text.contains("  completed       yes\n"), "{text}");

    // bob has the money: received money goes to the wallet address's
    // balance, and the ledger stays balanced.
    let token = std::fs::read_to_string(dir.path().join("opd-data/admin-token")).unwrap();
    let admin = "http://127.0.0.1:8082";
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
    let bob_password = seen
        .iter()
        .find(|l| l.contains("bob's password"))
        .and_then(|l| l.rsplit(' ').next())
        .unwrap_or_else(|| panic!("the server prints bob's password: {seen:?}"))
        .to_owned();
    let pay_on: Vec<String> = commands[1]
        .iter()
        .map(|a| match a.as_str() {
            "http://127.0.0.1:8080/bob" => "http://127.0.0.1:8080/alice".to_owned(),
            "http://127.0.0.1:8080/alice" => "http://127.0.0.1:8080/bob".to_owned(),
            other => other.to_owned(),
        })
        .collect();
    assert_ne!(
        pay_on, commands[1],
        "the README's pay command names bob and alice"
    );
    pay_with_consent(&pay_on, dir.path(), &bob_password, &proxy).await;
    let balance = |path: &'static str| {
        let token = token.clone();
        async move {
            let (s, v) = opd_testkit::app::admin_at(
                admin,
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
        &quickstart_server(),
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
