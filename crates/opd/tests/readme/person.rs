//! What the test plays: a person at a terminal and a browser, running the
//! commands of a walkthrough. The commands are read from between a
//! document's `<!-- NAME:begin -->` and `<!-- NAME:end -->` marks (the
//! README's quickstart, the peering guide's walkthrough); each runs as a
//! process of this build's `opd` in place of `cargo run --release --`
//! (the same binary, built by the test run; a release build here would
//! only cost minutes), with none of the caller's `OPD_*` settings (a
//! fresh machine has none). Every wait has a deadline, and names what it
//! waited for when it passes.

use std::io::{BufRead as _, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use opd_testkit::proxy::ValidatingProxy;

pub(crate) const PREFIX: &str = "cargo run --release -- ";

/// A document with walkthroughs a person runs, marked for the tests.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Document {
    /// `README.md`: the quickstart.
    Readme,
    /// `docs/peering.md`: peering two opd servers, step by step.
    Peering,
}

impl Document {
    /// The document's path from the repository's root.
    pub(crate) fn path(self) -> &'static str {
        match self {
            Self::Readme => "README.md",
            Self::Peering => "docs/peering.md",
        }
    }

    /// The document's text, as this build was compiled with it.
    pub(crate) fn text(self) -> &'static str {
        match self {
            Self::Readme => include_str!("../../../../README.md"),
            Self::Peering => include_str!("../../../../docs/peering.md"),
        }
    }
}

/// The commands of `doc` between `<!-- name:begin -->` and
/// `<!-- name:end -->`, each as its arguments after [`PREFIX`]; a line
/// ending in ` \` goes on on the next.
pub(crate) fn marked_commands(doc: Document, name: &str) -> Vec<Vec<String>> {
    let path = doc.path();
    let (_, rest) = doc
        .text()
        .split_once(&format!("<!-- {name}:begin -->"))
        .unwrap_or_else(|| panic!("{path} marks its {name} commands"));
    let (block, _) = rest
        .split_once(&format!("<!-- {name}:end -->"))
        .unwrap_or_else(|| panic!("the {name} commands of {path} end"));
    let joined = block.replace(" \\\n", " ");
    joined
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

/// Checks that git would ignore everything a walkthrough made in `dir`,
/// had it been run at the repository's root: each entry of `dir` is named
/// by a root-anchored line of the repository's `.gitignore` (`/opd-data`).
pub(crate) fn assert_git_ignored(dir: &std::path::Path) {
    let ignored: Vec<&str> = include_str!("../../../../.gitignore")
        .lines()
        .filter_map(|line| line.trim().strip_prefix('/'))
        .map(|name| name.trim_end_matches('/'))
        .collect();
    let mut made: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    made.sort();
    assert!(!made.is_empty(), "the walkthrough made nothing in {dir:?}");
    for name in &made {
        assert!(
            ignored.contains(&name.as_str()),
            "the walkthrough made {name} (all: {made:?}), which .gitignore does not name \
             (as /{name}): run at the repository's root, it would land untracked in the \
             repository"
        );
    }
}

/// How long any one thing the test waits for may take.
pub(crate) const DEADLINE: Duration = Duration::from_secs(120);

/// Waits for `child` to exit, at most [`DEADLINE`]; kills it and fails
/// naming `what` when it does not.
pub(crate) async fn exit_of(mut child: Child, what: &str) -> std::process::ExitStatus {
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
pub(crate) async fn output_of(
    mut cmd: Command,
    what: &str,
) -> (std::process::ExitStatus, String, String) {
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
pub(crate) fn command(args: &[String], dir: &std::path::Path) -> Command {
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
pub(crate) fn client_command(
    args: &[String],
    dir: &std::path::Path,
    proxy: &ValidatingProxy,
) -> Command {
    let mut c = command(args, dir);
    c.env_remove("NO_PROXY")
        .env_remove("no_proxy")
        .env("HTTP_PROXY", &proxy.url)
        .env("http_proxy", &proxy.url);
    c
}

/// Lines of a child's pipe, read on a thread.
pub(crate) fn lines(pipe: impl std::io::Read + Send + 'static) -> mpsc::Receiver<String> {
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
pub(crate) fn wait_for(
    rx: &mpsc::Receiver<String>,
    needle: &str,
    seen: &mut Vec<String>,
) -> String {
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

pub(crate) struct Killed(pub(crate) Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The value of attribute `name` in the tag text `tag` (`<input ...>`).
pub(crate) fn attribute(tag: &str, name: &str) -> Option<String> {
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
pub(crate) fn tags<'a>(html: &'a str, kind: &str) -> Vec<&'a str> {
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
pub(crate) fn approval(html: &str, password: &str) -> (String, Vec<(String, String)>) {
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
/// approves (the page must show each of `on_page`); the client must then say
/// `Paid.`. Returns what it printed.
pub(crate) async fn pay_with_consent(
    args: &[String],
    dir: &std::path::Path,
    password: &str,
    on_page: &[&str],
    proxy: &ValidatingProxy,
) -> Vec<String> {
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
    approve_in_browser(&consent, password, on_page).await;

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
    printed
}

/// The person, in a browser: opens the `consent` address the client
/// printed, checks the page shows each of `on_page`, enters the payer's
/// `password`, approves, then follows the redirect back to the waiting
/// client.
async fn approve_in_browser(consent: &str, password: &str, on_page: &[&str]) {
    let browser = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let r = browser.get(consent).send().await.unwrap();
    assert!(r.status().is_redirection(), "{}", r.status());
    let page_url = url::Url::parse(consent)
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
    for text in on_page {
        assert!(html.contains(text), "the page shows {text:?}: {html}");
    }
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
}
