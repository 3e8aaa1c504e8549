//! `opd client ...`: the command line. Each command reads the client
//! profile, does its requests and prints the result for people (amounts
//! with decimals and asset) or, with `--json`, the servers' JSON for
//! scripts. A server's refusal is shown with its status, code and
//! description, and the command exits non-zero.
//!
//! Everything printed that a server wrote reaches the terminal inert:
//! values through [`Untrusted`] where they are formatted, then every text
//! through [`untrusted::lines`] and every JSON through [`untrusted::json`]
//! where it is printed (scripts still read the exact text).

use std::io::{IsTerminal as _, Write as _};
use std::time::Duration;

use anyhow::Context as _;
use opd_core::untrusted::{self, Untrusted};
use reqwest::Method;
use serde_json::{json, Value};

use crate::amount::{parse_decimal, Amount};
use crate::gnap;
use crate::grants::{self, call_with, KeptGrants, TokenFor};
use crate::http::Client;
use crate::pay::{self, Payment, Progress};
use crate::profile::{self, Profile};
use crate::render;
use crate::resources::{self, WalletAddress};

mod args;

pub use args::{
    ClientArgs, ClientCommand, GrantArgs, IncomingCommand, KeysCommand, OutgoingCommand, PayArgs,
    QuoteCommand, TokenCommand,
};

/// Runs one `opd client` command.
pub async fn run(args: ClientArgs) -> anyhow::Result<()> {
    let path = profile::path_or_default(args.profile.as_deref());
    if let ClientCommand::Keys(KeysCommand::Generate {
        wallet_address,
        key_id,
    }) = &args.command
    {
        let p = Profile::generate(wallet_address, key_id);
        p.save_new(&path)?;
        let jwk = serde_json::to_value(p.jwk())?;
        if args.json {
            println!("{}", json!({ "profile": path, "jwk": jwk }));
        } else {
            println!("Profile written to {}.", path.display());
            println!("Register this public key at {wallet_address}:");
            println!("{jwk}");
            println!("(on an opd server: opd key add <path> --jwk '{jwk}')");
        }
        return Ok(());
    }
    let (profile, kept) = Profile::load_with_grants(&path)?;
    let client = client_for(profile, args.ca_file.as_deref())?
        .keeping_grants(KeptGrants::in_profile(path, kept));
    let out = Output { json: args.json };
    let done = match args.command {
        ClientCommand::Keys(KeysCommand::Generate { .. }) => Ok(()),
        ClientCommand::Keys(KeysCommand::Show) => {
            out.value(&serde_json::to_value(client.profile.jwk())?, |v| {
                format!("{v}\n")
            });
            Ok(())
        }
        ClientCommand::WalletAddress { url } => {
            out.resource(&client.get_public(&url).await?);
            Ok(())
        }
        ClientCommand::Pay(a) => pay_command(&client, a, &out).await,
        ClientCommand::Grant(a) => grant_command(&client, a, &out).await,
        ClientCommand::Token(cmd) => token_command(&client, cmd, &out).await,
        ClientCommand::IncomingPayment(cmd) => incoming_command(&client, cmd, &out).await,
        ClientCommand::Quote(cmd) => quote_command(&client, cmd, &out).await,
        ClientCommand::OutgoingPayment(cmd) => outgoing_command(&client, cmd, &out).await,
    };
    release_unsaved(&client).await;
    done
}

/// After a command: the grants it could not keep in the profile are
/// cancelled (nothing can use them), and why they were not kept is said.
async fn release_unsaved(client: &Client) {
    let _ = grants::cancel_unsaved(client).await;
    if let Some(why) = client.kept.write_failed() {
        eprintln!(
            "note: grants are not kept for reuse: {}",
            untrusted::lines(&why)
        );
    }
}

/// The HTTP client of `profile`, trusting the authorities of `ca_file`
/// too; a CA file that cannot be used is said before any request.
fn client_for(profile: Profile, ca_file: Option<&std::path::Path>) -> anyhow::Result<Client> {
    let Some(ca) = ca_file else {
        return Client::new(profile, None);
    };
    let pem =
        std::fs::read(ca).with_context(|| format!("cannot read the CA file {}", ca.display()))?;
    Client::new(profile, Some(&pem)).with_context(|| format!("--ca-file {}", ca.display()))
}

/// Where results go: stdout, as text or JSON. Progress goes to stderr.
struct Output {
    json: bool,
}

impl Output {
    /// Prints `v` as JSON, or as `text` makes it; either inert on a
    /// terminal (the last pass: `text` shows the values inert already).
    fn value(&self, v: &Value, text: impl FnOnce(&Value) -> String) {
        let s = if self.json {
            untrusted::json(&format!("{v}\n"))
        } else {
            untrusted::lines(&text(v))
        };
        print!("{s}");
        let _ = std::io::stdout().flush();
    }

    fn resource(&self, v: &Value) {
        self.value(v, render::resource);
    }

    fn list(&self, items: Vec<Value>, what: &str) {
        self.value(&Value::Array(items), |v| {
            render::list(v.as_array().map_or(&[][..], Vec::as_slice), what)
        });
    }

    /// The consent page, as the authorization server named it.
    fn consent_prompt(url: &str) {
        let url = Untrusted(url);
        eprintln!("Open this page to approve (the wallet owner logs in there):\n\n  {url}\n\nWaiting for the approval...");
    }
}

/// The progress of `pay` on stderr: a line per step, the sent amount
/// rewritten in place on a terminal (a line per change otherwise).
struct Stderr {
    terminal: bool,
    /// A progress line is being rewritten (end it before the next line).
    open_line: bool,
}

impl Stderr {
    fn end_line(&mut self) {
        if std::mem::take(&mut self.open_line) {
            eprintln!();
        }
    }
}

impl Drop for Stderr {
    fn drop(&mut self) {
        self.end_line();
    }
}

impl Progress for Stderr {
    fn step(&mut self, line: &str) {
        self.end_line();
        eprintln!("{}", untrusted::lines(line));
    }
    fn consent(&mut self, url: &str) {
        self.end_line();
        Output::consent_prompt(url);
    }
    fn sent(&mut self, sent: &Amount, of: &Amount) {
        if self.terminal {
            eprint!("\r  sent {sent} of {of}   ");
            self.open_line = true;
        } else {
            eprintln!("  sent {sent} of {of}");
        }
    }
}

async fn pay_command(client: &Client, a: PayArgs, out: &Output) -> anyhow::Result<()> {
    let payment = Payment {
        receiver: a.receiver,
        from: a.from,
        amount: a.amount,
        debit_amount: a.debit_amount,
        consent_wait: Duration::from_secs(a.consent_wait_secs),
        timeout: Duration::from_secs(a.timeout_secs),
    };
    let mut progress = Stderr {
        terminal: std::io::stderr().is_terminal(),
        open_line: false,
    };
    let paid = pay::pay(client, &payment, &mut progress).await;
    drop(progress);
    let paid = paid?;
    out.value(&paid.to_json(), |_| paid.summary());
    Ok(())
}

async fn grant_command(client: &Client, a: GrantArgs, out: &Output) -> anyhow::Result<()> {
    let wallet = resources::wallet_address(client, &a.wallet_address).await?;
    let mut item = json!({ "type": a.kind, "actions": a.actions });
    let identifier = a
        .identifier
        .or_else(|| (a.kind == "outgoing-payment").then(|| wallet.id.clone()));
    if let Some(id) = identifier {
        item["identifier"] = json!(id);
    }
    let mut limits = serde_json::Map::new();
    if let Some(text) = &a.debit_amount {
        limits.insert(
            "debitAmount".into(),
            wallet
                .amount(parse_decimal(text, wallet.asset_scale)?)
                .to_json(),
        );
    }
    if let Some(interval) = a.interval {
        limits.insert("interval".into(), json!(interval));
    }
    if !limits.is_empty() {
        item["limits"] = Value::Object(limits);
    }
    let token = gnap::request_with_consent(
        client,
        &wallet.auth_server,
        json!([item]),
        Duration::from_secs(a.consent_wait_secs),
        Output::consent_prompt,
    )
    .await?
    .token;
    out.value(&gnap::token_json(&token), |_| token_text(&token));
    Ok(())
}

fn token_text(t: &gnap::Token) -> String {
    let mut s = format!(
        "Access token  {}\n  manage        {}\n",
        Untrusted(&t.value),
        Untrusted(&t.manage)
    );
    if let Some(e) = t.expires_in {
        s.push_str(&format!("  expires in    {e} s\n"));
    }
    s
}

async fn token_command(client: &Client, cmd: TokenCommand, out: &Output) -> anyhow::Result<()> {
    match cmd {
        TokenCommand::Rotate { manage, token } => {
            let t = gnap::rotate(client, &manage, &token).await?;
            out.value(&gnap::token_json(&t), |_| token_text(&t));
        }
        TokenCommand::Revoke { manage, token } => {
            gnap::revoke(client, &manage, &token).await?;
            out.value(&json!({ "revoked": true }), |_| "Revoked.\n".into());
        }
    }
    Ok(())
}

/// The token for one incoming payment known by URL: the given one, or
/// one for the authorization server its public view names.
async fn token_for_incoming(
    client: &Client,
    url: &str,
    given: Option<String>,
) -> anyhow::Result<TokenFor> {
    if let Some(t) = given {
        return Ok(TokenFor::Given(t));
    }
    let public = client.get_public(url).await?;
    let auth = public["authServer"]
        .as_str()
        .ok_or_else(|| anyhow::anyhow!("{url} names no authorization server: {public}"))?;
    Ok(TokenFor::Access(resources::incoming_access_at(auth, url)))
}

/// `GET url` with the token.
async fn read(client: &Client, url: &str, token: &TokenFor) -> anyhow::Result<Value> {
    Ok(grants::signed(client, token, Method::GET, url, None).await?)
}

async fn incoming_command(
    client: &Client,
    cmd: IncomingCommand,
    out: &Output,
) -> anyhow::Result<()> {
    match cmd {
        IncomingCommand::Create {
            wallet_address,
            amount,
            expires_in_secs,
            metadata,
            token,
        } => {
            let wallet = resources::wallet_address(client, &wallet_address).await?;
            let token = TokenFor::given_or(token, || resources::incoming_access(&wallet));
            let mut body = json!({ "walletAddress": wallet.id });
            if let Some(text) = amount {
                body["incomingAmount"] = wallet
                    .amount(parse_decimal(&text, wallet.asset_scale)?)
                    .to_json();
            }
            if let Some(secs) = expires_in_secs {
                let at = time::OffsetDateTime::now_utc() + Duration::from_secs(secs);
                body["expiresAt"] =
                    json!(at.format(&time::format_description::well_known::Rfc3339)?);
            }
            if let Some(m) = metadata {
                body["metadata"] = serde_json::from_str(&m)
                    .map_err(|e| anyhow::anyhow!("--metadata is not JSON: {e}"))?;
            }
            let collection = wallet.collection("incoming-payments");
            let ip = grants::signed(client, &token, Method::POST, &collection, Some(&body)).await?;
            out.resource(&ip);
        }
        IncomingCommand::Get { url, token } => {
            let token = token_for_incoming(client, &url, token).await?;
            out.resource(&read(client, &url, &token).await?);
        }
        IncomingCommand::List {
            wallet_address,
            first,
            cursor,
            token,
        } => {
            let wallet = &resources::wallet_address(client, &wallet_address).await?;
            let token = TokenFor::given_or(token, || resources::incoming_access(wallet));
            let cursor = cursor.as_deref();
            let items = call_with(client, &token, |t| async move {
                resources::list(client, wallet, "incoming-payments", &t, first, cursor).await
            })
            .await?;
            out.list(items, "incoming payments");
        }
        IncomingCommand::Complete { url, token } => {
            let token = token_for_incoming(client, &url, token).await?;
            let url = format!("{url}/complete");
            let done = grants::signed(client, &token, Method::POST, &url, None).await?;
            out.resource(&done);
        }
    }
    Ok(())
}

async fn quote_command(client: &Client, cmd: QuoteCommand, out: &Output) -> anyhow::Result<()> {
    match cmd {
        QuoteCommand::Create {
            wallet_address,
            receiver,
            debit_amount,
            receive_amount,
            token,
        } => {
            let wallet = resources::wallet_address(client, &wallet_address).await?;
            let token = TokenFor::given_or(token, || resources::quote_access(&wallet));
            let mut body =
                json!({ "walletAddress": wallet.id, "receiver": receiver, "method": "ilp" });
            if let Some(text) = debit_amount {
                body["debitAmount"] = wallet
                    .amount(parse_decimal(&text, wallet.asset_scale)?)
                    .to_json();
            }
            if let Some(text) = receive_amount {
                // The receiver's asset, from its public view.
                let public = client.get_public(&receiver).await?;
                let asset = Amount::from_json(&public["receivedAmount"])
                    .ok_or_else(|| anyhow::anyhow!("{receiver} shows no asset: {public}"))?;
                let value = parse_decimal(&text, asset.asset_scale)?;
                body["receiveAmount"] = Amount { value, ..asset }.to_json();
            }
            let quotes = wallet.collection("quotes");
            let q = grants::signed(client, &token, Method::POST, &quotes, Some(&body)).await?;
            out.resource(&q);
        }
        QuoteCommand::Get {
            url,
            wallet_address,
            token,
        } => {
            let wallet = resources::wallet_address(client, &wallet_address).await?;
            let token = TokenFor::given_or(token, || resources::quote_access(&wallet));
            out.resource(&read(client, &url, &token).await?);
        }
    }
    Ok(())
}

/// The owner's consent to pay exactly `quote` (its debit, its receiver)
/// from `wallet`.
async fn consent_to_quote(
    client: &Client,
    wallet: &WalletAddress,
    quote: &str,
    wait: Duration,
) -> anyhow::Result<gnap::Issued> {
    let access = TokenFor::Access(resources::quote_access(wallet));
    let q = read(client, quote, &access).await?;
    let limits = json!({ "debitAmount": q["debitAmount"], "receiver": q["receiver"] });
    resources::outgoing_token(client, wallet, Some(limits), wait, Output::consent_prompt).await
}

async fn outgoing_command(
    client: &Client,
    cmd: OutgoingCommand,
    out: &Output,
) -> anyhow::Result<()> {
    match cmd {
        OutgoingCommand::Create {
            wallet_address,
            quote,
            token,
            consent_wait_secs,
        } => {
            let wallet = resources::wallet_address(client, &wallet_address).await?;
            let (token, granted) = match token {
                Some(t) => (t, None),
                None => {
                    let wait = Duration::from_secs(consent_wait_secs);
                    let t = consent_to_quote(client, &wallet, &quote, wait).await?;
                    (t.token.value.clone(), Some(t))
                }
            };
            let body = json!({ "walletAddress": wallet.id, "quoteId": quote });
            let created =
                resources::create(client, &wallet, "outgoing-payments", &token, &body).await;
            let payment = match (created, granted.as_ref().and_then(|g| g.grant.as_ref())) {
                // The grant was asked for this payment only.
                (Err(e), Some(grant)) => {
                    return Err(gnap::cancelled_after(client, grant, e.into()).await)
                }
                (created, _) => created?,
            };
            // A script needs the token to read the payment later.
            let mut shown = payment.clone();
            if let Some(t) = granted {
                shown["accessToken"] = gnap::token_json(&t.token);
            }
            out.value(&shown, |_| render::resource(&payment));
        }
        OutgoingCommand::Get {
            url,
            wallet_address: _,
            token,
        } => {
            out.resource(&client.signed(Method::GET, &url, Some(&token), None).await?);
        }
        OutgoingCommand::List {
            wallet_address,
            token,
            first,
            cursor,
        } => {
            let wallet = resources::wallet_address(client, &wallet_address).await?;
            let items = resources::list(
                client,
                &wallet,
                "outgoing-payments",
                &token,
                first,
                cursor.as_deref(),
            )
            .await?;
            out.list(items, "outgoing payments");
        }
    }
    Ok(())
}
