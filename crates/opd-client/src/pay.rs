//! `opd client pay`: the whole payment in one command. An incoming payment
//! on the receiver (when given a wallet address), a quote from the
//! sender's wallet address, the sender's consent in a browser for exactly
//! that debit to that receiver, the outgoing payment, then progress until
//! the receiver has the quoted amount or the payment fails.

use std::time::{Duration, Instant};

use reqwest::Method;
use serde_json::{json, Value};

use crate::amount::{parse_decimal, Amount};
use crate::http::Client;
use crate::resources::{self, Receiver, WalletAddress};

/// How often progress is read.
const POLL: Duration = Duration::from_millis(250);

/// What to pay.
#[derive(Debug, Clone)]
pub struct Payment {
    /// A wallet address or an incoming payment URL.
    pub receiver: String,
    /// The sender's wallet address URL.
    pub from: String,
    /// What the receiver gets, in its asset (`12.34`).
    pub amount: Option<String>,
    /// What the sender pays, in its asset, fee included.
    pub debit_amount: Option<String>,
    /// How long to wait for the sender's consent.
    pub consent_wait: Duration,
    /// How long to wait for the payment to end once created.
    pub timeout: Duration,
}

/// Where the payment got to, for the progress display.
pub trait Progress {
    /// A step began or ended (`Quoted: ...`).
    fn step(&mut self, line: &str);
    /// The consent URL to open.
    fn consent(&mut self, url: &str);
    /// `sent` of the debit so far.
    fn sent(&mut self, sent: &Amount, of: &Amount);
}

/// The resources of a finished payment.
#[derive(Debug, Clone)]
pub struct Paid {
    pub incoming_payment: Value,
    pub quote: Value,
    pub outgoing_payment: Value,
}

impl Paid {
    pub fn to_json(&self) -> Value {
        json!({
            "incomingPayment": self.incoming_payment,
            "quote": self.quote,
            "outgoingPayment": self.outgoing_payment,
        })
    }
}

/// The receiver's side: its incoming payment and how to read it.
struct Incoming {
    url: String,
    /// A token to read it, when this client made it.
    token: Option<String>,
    /// Its asset, when known (for `--amount` on an incoming payment).
    asset: Option<(String, u8)>,
    /// What it had received before this payment.
    received_before: u64,
}

/// Runs the whole payment; an error says at which step it stopped.
pub async fn pay(
    client: &Client,
    p: &Payment,
    progress: &mut dyn Progress,
) -> anyhow::Result<Paid> {
    let sender = resources::wallet_address(client, &p.from).await?;
    let incoming = incoming_payment(client, p, progress).await?;

    let quote_token = resources::quote_token(client, &sender).await?;
    let mut body = json!({ "walletAddress": sender.id, "receiver": incoming.url, "method": "ilp" });
    if let Some(text) = &p.debit_amount {
        body["debitAmount"] = sender
            .amount(parse_decimal(text, sender.asset_scale)?)
            .to_json();
    } else if let (Some(text), Some((code, scale)), None) =
        (&p.amount, &incoming.asset, &incoming.token)
    {
        // An existing incoming payment: `--amount` is what it should get.
        let value = parse_decimal(text, *scale)?;
        body["receiveAmount"] = Amount {
            value,
            asset_code: code.clone(),
            asset_scale: *scale,
        }
        .to_json();
    }
    let quote = resources::create(client, &sender, "quotes", &quote_token.value, &body).await?;
    let debit = amount_in(&quote, "debitAmount")?;
    let receive = amount_in(&quote, "receiveAmount")?;
    progress.step(&format!(
        "Quoted: {} pays {debit}, the receiver gets {receive}.",
        sender.name()
    ));

    let limits = json!({ "debitAmount": debit.to_json(), "receiver": incoming.url });
    let token = resources::outgoing_token(client, &sender, Some(limits), p.consent_wait, |url| {
        progress.consent(url);
    })
    .await?;
    progress.step("Approved.");

    let body = json!({ "walletAddress": sender.id, "quoteId": quote["id"] });
    let created =
        resources::create(client, &sender, "outgoing-payments", &token.value, &body).await?;
    let id = created["id"]
        .as_str()
        .ok_or_else(|| anyhow::anyhow!("the outgoing payment has no id: {created}"))?
        .to_owned();
    progress.step(&format!("Sending: {id}"));
    let outgoing = follow(
        client,
        &sender,
        &id,
        &token.value,
        &incoming,
        &debit,
        &receive,
        p.timeout,
        progress,
    )
    .await?;
    let incoming_payment = read_incoming(client, &incoming).await?;
    Ok(Paid {
        incoming_payment,
        quote,
        outgoing_payment: outgoing,
    })
}

/// The incoming payment to pay: made on the receiver's wallet address, or
/// the one given.
async fn incoming_payment(
    client: &Client,
    p: &Payment,
    progress: &mut dyn Progress,
) -> anyhow::Result<Incoming> {
    match resources::receiver(client, &p.receiver).await? {
        Receiver::WalletAddress(w) => {
            let token = resources::incoming_token(client, &w).await?;
            let mut body =
                json!({ "walletAddress": w.id, "metadata": { "description": "opd client pay" } });
            if let (Some(text), None) = (&p.amount, &p.debit_amount) {
                body["incomingAmount"] = w.amount(parse_decimal(text, w.asset_scale)?).to_json();
            }
            let ip =
                resources::create(client, &w, "incoming-payments", &token.value, &body).await?;
            let url = ip["id"]
                .as_str()
                .ok_or_else(|| anyhow::anyhow!("the incoming payment has no id: {ip}"))?
                .to_owned();
            progress.step(&format!("Incoming payment for {}: {url}", w.name()));
            Ok(Incoming {
                url,
                token: Some(token.value),
                asset: Some((w.asset_code.clone(), w.asset_scale)),
                received_before: 0,
            })
        }
        Receiver::IncomingPayment { url, public } => {
            let received = Amount::from_json(&public["receivedAmount"]);
            Ok(Incoming {
                url,
                token: None,
                asset: received
                    .as_ref()
                    .map(|a| (a.asset_code.clone(), a.asset_scale)),
                received_before: received.map_or(0, |a| a.value),
            })
        }
    }
}

/// The incoming payment as its reader sees it: in full with the token,
/// else its public view.
async fn read_incoming(client: &Client, incoming: &Incoming) -> anyhow::Result<Value> {
    Ok(match &incoming.token {
        Some(t) => {
            client
                .signed(Method::GET, &incoming.url, Some(t), None)
                .await?
        }
        None => client.get_public(&incoming.url).await?,
    })
}

/// Reads the payment until the receiver has the quoted amount (done), the
/// payment failed, or `timeout` passed.
#[allow(clippy::too_many_arguments)] // one call site; a struct would only rename them
async fn follow(
    client: &Client,
    sender: &WalletAddress,
    id: &str,
    token: &str,
    incoming: &Incoming,
    debit: &Amount,
    receive: &Amount,
    timeout: Duration,
    progress: &mut dyn Progress,
) -> anyhow::Result<Value> {
    let deadline = Instant::now() + timeout;
    let mut last_sent = None;
    loop {
        let payment = client.signed(Method::GET, id, Some(token), None).await?;
        let sent = amount_in(&payment, "sentAmount")?;
        if last_sent != Some(sent.value) {
            progress.sent(&sent, debit);
            last_sent = Some(sent.value);
        }
        if payment["failed"] == true {
            anyhow::bail!(
                "the payment failed after sending {sent} (what was not sent is back on {})",
                sender.id
            );
        }
        let received = Amount::from_json(&read_incoming(client, incoming).await?["receivedAmount"])
            .map_or(0, |a| a.value);
        let delivered = received.saturating_sub(incoming.received_before);
        if sent.value >= debit.value {
            return Ok(payment);
        }
        if delivered >= receive.value {
            // Delivered meanwhile: the payment as it is now, sent total
            // included.
            let payment = client.signed(Method::GET, id, Some(token), None).await?;
            let sent = amount_in(&payment, "sentAmount")?;
            if last_sent != Some(sent.value) {
                progress.sent(&sent, debit);
            }
            return Ok(payment);
        }
        if Instant::now() >= deadline {
            anyhow::bail!(
                "the payment has not ended after {} s; it goes on: {id}",
                timeout.as_secs()
            );
        }
        tokio::time::sleep(POLL).await;
    }
}

fn amount_in(v: &Value, field: &str) -> anyhow::Result<Amount> {
    Amount::from_json(&v[field]).ok_or_else(|| anyhow::anyhow!("no {field} in {v}"))
}
