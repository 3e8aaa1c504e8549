//! `opd client pay`: the whole payment in one command. An incoming payment
//! on the receiver (when given a wallet address), a quote from the
//! sender's wallet address, the sender's consent in a browser for exactly
//! that debit to that receiver, the outgoing payment, then progress until
//! the paying server says the payment completed or failed. What is shown
//! at the end is what that server recorded once the payment ended, never
//! a figure read while it was still sending.
//!
//! The grants it needs do not pile up: the incoming-payment and quote
//! grants are kept in the profile and reused by the next payment
//! ([`crate::grants`]); the outgoing-payment grant, one per payment (its
//! limits are this payment's), is cancelled when the payment fails, from
//! a refused consent to a payment that did not complete.
//!
//! The Open Payments view of an outgoing payment says `failed` but not
//! whether it is still sending. opd servers say it in a header
//! (`opd-payment-state`); for other servers the payment is taken as ended
//! once the receiver has the quoted amount and the payer's `sentAmount`
//! stopped moving between two reads.

use std::time::{Duration, Instant};

use opd_core::untrusted::Untrusted;
use reqwest::Method;
use serde_json::{json, Value};

use crate::amount::{parse_decimal, Amount};
use crate::gnap::{self, Continuation};
use crate::grants::{self, TokenFor};
use crate::http::Client;
use crate::resources::{self, Receiver, WalletAddress};

/// How often progress is read.
const POLL: Duration = Duration::from_millis(250);

/// The header in which opd servers say an outgoing payment's state.
const STATE_HEADER: &str = "opd-payment-state";

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
    /// The incoming payment's URL, as this client reached it: a receiver's
    /// public view need not carry its `id` (the reference server's does
    /// not).
    pub incoming_payment_url: String,
    pub quote: Value,
    /// As the paying server recorded it once it ended.
    pub outgoing_payment: Value,
    /// What the receiver's incoming payment received from this payment,
    /// when known.
    pub delivered: Option<Amount>,
}

impl Paid {
    pub fn to_json(&self) -> Value {
        json!({
            "incomingPayment": self.incoming_payment,
            "quote": self.quote,
            "outgoingPayment": self.outgoing_payment,
        })
    }

    /// What a person reads at the end: the amounts the paying server
    /// recorded, what the receiver got, and the two resources (the
    /// servers' text shown inert).
    pub fn summary(&self) -> String {
        let mut s = String::from("Paid.\n");
        let sent = Amount::from_json(&self.outgoing_payment["sentAmount"]);
        let debit = Amount::from_json(&self.outgoing_payment["debitAmount"]);
        if let (Some(sent), Some(debit)) = (sent, debit) {
            s.push_str(&format!(
                "  sent              {sent} (quoted debit {debit})\n"
            ));
        }
        if let Some(d) = &self.delivered {
            s.push_str(&format!("  delivered         {d}\n"));
        }
        s.push_str(&format!(
            "  incoming payment  {}\n  outgoing payment  {}\n",
            Untrusted(
                self.incoming_payment["id"]
                    .as_str()
                    .unwrap_or(&self.incoming_payment_url)
            ),
            Untrusted(self.outgoing_payment["id"].as_str().unwrap_or("?"))
        ));
        s
    }
}

/// The receiver's side: its incoming payment and how to read it.
struct Incoming {
    url: String,
    /// A token to read it (for the receiver's incoming payments, kept),
    /// when this client made it.
    token: Option<TokenFor>,
    /// Its asset, when known (for `--amount` on an incoming payment).
    asset: Option<(String, u8)>,
    /// What it had received before this payment.
    received_before: u64,
}

/// Runs the whole payment; an error says at which step it stopped. When
/// it fails, the outgoing-payment grant asked for it is cancelled; grants
/// that could not be kept in the profile are cancelled either way.
pub async fn pay(
    client: &Client,
    p: &Payment,
    progress: &mut dyn Progress,
) -> anyhow::Result<Paid> {
    let mut outgoing_grant = None;
    let paid = pay_steps(client, p, progress, &mut outgoing_grant).await;
    // Nothing will use them: the profile could not keep them.
    let _ = grants::cancel_unsaved(client).await;
    match (paid, outgoing_grant) {
        (Err(e), Some(grant)) => Err(gnap::cancelled_after(client, &grant, e).await),
        (paid, _) => paid,
    }
}

/// [`pay`]'s steps; `outgoing_grant` is set once the sender consented.
async fn pay_steps(
    client: &Client,
    p: &Payment,
    progress: &mut dyn Progress,
    outgoing_grant: &mut Option<Continuation>,
) -> anyhow::Result<Paid> {
    let sender = resources::wallet_address(client, &p.from).await?;
    let incoming = incoming_payment(client, p, progress).await?;

    let (quote, debit, receive, token, id) =
        match prepare(client, p, &sender, &incoming, progress, outgoing_grant).await {
            Ok(prepared) => prepared,
            Err(e) => return Err(close_unpaid(client, &incoming, e).await),
        };
    progress.step(&format!("Sending: {}", Untrusted(&id)));
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
    let delivered = Amount::from_json(&incoming_payment["receivedAmount"]).map(|r| Amount {
        value: r.value.saturating_sub(incoming.received_before),
        ..r
    });
    Ok(Paid {
        incoming_payment,
        incoming_payment_url: incoming.url,
        quote,
        outgoing_payment: outgoing,
        delivered,
    })
}

/// Everything before the payment exists: the quote, the consent and the
/// outgoing payment itself; its id. `outgoing_grant` is set once the
/// sender consented.
async fn prepare(
    client: &Client,
    p: &Payment,
    sender: &WalletAddress,
    incoming: &Incoming,
    progress: &mut dyn Progress,
    outgoing_grant: &mut Option<Continuation>,
) -> anyhow::Result<(Value, Amount, Amount, crate::gnap::Token, String)> {
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
    let token = TokenFor::Access(resources::quote_access(sender));
    let quotes = sender.collection("quotes");
    let quote = grants::signed(client, &token, Method::POST, &quotes, Some(&body)).await?;
    let debit = amount_in(&quote, "debitAmount")?;
    let receive = amount_in(&quote, "receiveAmount")?;
    // The name is the sender's server's: inert, or it could hide this
    // line (and what follows) or fake another.
    progress.step(&format!(
        "Quoted: {} pays {debit}, the receiver gets {receive}.",
        Untrusted(sender.name())
    ));

    let limits = json!({ "debitAmount": debit.to_json(), "receiver": incoming.url });
    let granted = resources::outgoing_token(client, sender, Some(limits), p.consent_wait, |url| {
        progress.consent(url);
    })
    .await?;
    outgoing_grant.clone_from(&granted.grant);
    let token = granted.token;
    progress.step("Approved.");

    let body = json!({ "walletAddress": sender.id, "quoteId": quote["id"] });
    let created =
        resources::create(client, sender, "outgoing-payments", &token.value, &body).await?;
    let id = created["id"]
        .as_str()
        .ok_or_else(|| anyhow::anyhow!("the outgoing payment has no id: {created}"))?
        .to_owned();
    Ok((quote, debit, receive, token, id))
}

/// A payment that failed before it existed leaves nothing open behind it:
/// the incoming payment made for it is completed (closed), so it waits for
/// no money. Returns `e`, saying so.
async fn close_unpaid(client: &Client, incoming: &Incoming, e: anyhow::Error) -> anyhow::Error {
    let Some(token) = &incoming.token else {
        return e;
    };
    let url = format!("{}/complete", incoming.url);
    match grants::signed(client, token, Method::POST, &url, None).await {
        Ok(_) => anyhow::anyhow!(
            "{e:#}; nothing was paid, and the incoming payment made for it was closed ({})",
            Untrusted(&incoming.url)
        ),
        Err(closing) => anyhow::anyhow!(
            "{e:#}; nothing was paid, but the incoming payment made for it could not be closed ({}: {closing})",
            Untrusted(&incoming.url)
        ),
    }
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
            let token = TokenFor::Access(resources::incoming_access(&w));
            let mut body =
                json!({ "walletAddress": w.id, "metadata": { "description": "opd client pay" } });
            if let (Some(text), None) = (&p.amount, &p.debit_amount) {
                body["incomingAmount"] = w.amount(parse_decimal(text, w.asset_scale)?).to_json();
            }
            let collection = w.collection("incoming-payments");
            let ip = grants::signed(client, &token, Method::POST, &collection, Some(&body)).await?;
            let url = ip["id"]
                .as_str()
                .ok_or_else(|| anyhow::anyhow!("the incoming payment has no id: {ip}"))?
                .to_owned();
            progress.step(&format!(
                "Incoming payment for {}: {}",
                Untrusted(w.name()),
                Untrusted(&url)
            ));
            Ok(Incoming {
                url,
                token: Some(token),
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
    let url = &incoming.url;
    Ok(match &incoming.token {
        Some(token) => grants::signed(client, token, Method::GET, url, None).await?,
        None => client.get_public(url).await?,
    })
}

/// Reads the payment until it ended: completed or failed as the paying
/// server says (opd), or, from a server that does not say, once it sent
/// the whole debit, or the receiver has the quoted amount and the sent
/// total stopped moving between two reads. Fails after `timeout`.
#[expect(
    clippy::too_many_arguments,
    reason = "one call site; a struct would only rename them"
)]
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
        let (payment, headers) = client
            .signed_with_headers(Method::GET, id, Some(token), None)
            .await?;
        let sent = amount_in(&payment, "sentAmount")?;
        if last_sent != Some(sent.value) {
            progress.sent(&sent, debit);
        }
        let state = headers
            .get(STATE_HEADER)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        if payment["failed"] == true || matches!(state.as_deref(), Some("failed" | "cancelled")) {
            anyhow::bail!(
                "the payment failed after sending {sent} (what was not sent is back on {})",
                Untrusted(&sender.id)
            );
        }
        let ended = match state.as_deref() {
            Some(state) => state == "completed",
            None if sent.value >= debit.value => true,
            None => {
                let received =
                    Amount::from_json(&read_incoming(client, incoming).await?["receivedAmount"])
                        .map_or(0, |a| a.value);
                let delivered = received.saturating_sub(incoming.received_before);
                delivered >= receive.value && sent.value > 0 && last_sent == Some(sent.value)
            }
        };
        if ended {
            return Ok(payment);
        }
        last_sent = Some(sent.value);
        if Instant::now() >= deadline {
            anyhow::bail!(
                "the payment has not ended after {} s; it goes on: {}",
                timeout.as_secs(),
                Untrusted(id)
            );
        }
        tokio::time::sleep(POLL).await;
    }
}

fn amount_in(v: &Value, field: &str) -> anyhow::Result<Amount> {
    Amount::from_json(&v[field]).ok_or_else(|| anyhow::anyhow!("no {field} in {v}"))
}

#[cfg(test)]
mod tests {
    use super::Paid;
    use serde_json::{json, Value};

    #[test]
    fn a_receiver_without_an_id_is_named_by_its_url() {
        let paid = Paid {
            incoming_payment: json!({ "receivedAmount": { "value": "5", "assetCode": "USD", "assetScale": 2 } }),
            incoming_payment_url: "https://rafiki.example/incoming-payments/1".into(),
            quote: Value::Null,
            outgoing_payment: json!({ "id": "https://opd.example/outgoing-payments/2" }),
            delivered: None,
        };
        assert!(
            paid.summary()
                .contains("incoming payment  https://rafiki.example/incoming-payments/1\n"),
            "{}",
            paid.summary()
        );
    }
}
