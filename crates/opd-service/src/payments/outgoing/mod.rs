//! Outgoing payments: create (from a quote, or from an incoming payment and
//! a debit amount), read, list, and the grant's spent amounts.
//!
//! Creation is one store transaction: the payment is stored, its amounts
//! are reserved against the grant's limits for the interval containing its
//! creation time, and its `debitAmount` moves from the wallet address's
//! balance into the payment's ledger account. Any refusal leaves nothing
//! behind. Creating reads the quote and the wallet address, decides in
//! `plan` (pure: every refusal, and the payment itself), then stores.
//!
//! The rest of a payment's life lives beside this file: `lifecycle` (every
//! way it ends or waits), `local` (delivery here), `remote` and `packets`
//! (delivery over STREAM). May call `quotes`, `receivers`, `incoming`,
//! `interledger::paths`, `webhooks`, `ledger`, the store and `platform`.

pub mod lifecycle;
mod local;
mod packets;
mod plan;
pub mod remote;
mod sizing;

use opd_core::incoming_payment::Metadata;
use opd_core::outgoing_payment::{GrantSpent, OutgoingPayment, OutgoingPaymentState};
use opd_core::pagination::{Page, PageRequest};
use opd_core::quote::{Quote, QuoteTarget};
use opd_core::wallet_address::WalletAddress;
use opd_core::webhook::EventKind;
use opd_core::{Amount, OutgoingPaymentId, Timestamp};
use opd_gnap::OutgoingLimits;

use crate::access::replays::{RequestClaim, StoredResponse};
use crate::payments::quotes::{self, NewQuote};
use crate::payments::receivers;
use crate::webhooks::{event, payment_event_data};
use crate::{wallets, ServiceError, Services};
use lifecycle::Step;

/// Where the payment's terms come from.
#[derive(Debug, Clone)]
pub enum PaymentSource {
    /// A quote URL.
    Quote(String),
    /// An incoming payment URL and a fixed debit amount (an internal
    /// fixed-send quote is made).
    IncomingPayment {
        receiver: String,
        debit_amount: Amount,
    },
}

/// The grant a payment is created under.
#[derive(Debug, Clone)]
pub struct GrantContext {
    pub grant_id: String,
    pub limits: Option<OutgoingLimits>,
}

/// A validated create request.
#[derive(Debug, Clone)]
pub struct NewOutgoingPayment {
    pub wallet_address: String,
    pub source: PaymentSource,
    pub metadata: Option<Metadata>,
    pub client: Option<String>,
    pub grant: Option<GrantContext>,
}

/// Creates an outgoing payment. Returns it with its wallet address and
/// what the grant had spent before it. The request's replay `claim` is
/// stored with the first write: the quote made for it, or the payment.
pub async fn create(
    services: &Services,
    input: NewOutgoingPayment,
    claim: Option<&RequestClaim>,
) -> Result<(OutgoingPayment, WalletAddress, GrantSpent), ServiceError> {
    create_answered(services, input, claim, |_, _, _| None).await
}

/// [`create`] for a signed request whose `claim` the payment's own
/// transaction stores: with it goes the request's response, `respond`'s
/// rendering of the payment, its wallet address and what the grant had
/// spent before it, which that transaction reads (see
/// `access::replays::answer_at_commit`).
pub async fn create_answered(
    services: &Services,
    input: NewOutgoingPayment,
    claim: Option<&RequestClaim>,
    respond: impl FnOnce(&OutgoingPayment, &WalletAddress, &GrantSpent) -> Option<StoredResponse>
        + Send
        + 'static,
) -> Result<(OutgoingPayment, WalletAddress, GrantSpent), ServiceError> {
    let wallet = wallets::by_url(services, &input.wallet_address).await?;
    let quote = quote_for(services, &input, &wallet, claim).await?;
    let planned = plan::plan(
        input,
        &quote,
        wallet.id,
        services.config.external_funding,
        services.clock.now(),
    )?;
    crate::access::replays::answer_at_commit(claim, || {
        let (payment, owner) = (planned.payment.clone(), wallet.clone());
        move |spent: &GrantSpent| respond(&payment, &owner, spent)
    });
    let spent_before = store(services, &planned, &wallet, claim).await?;
    Ok((planned.payment, wallet, spent_before))
}

/// The quote a payment is made on: the one the client named, if it can
/// be paid from `wallet`, or a fixed-send quote made now (which stores
/// the request's replay `claim`).
async fn quote_for(
    services: &Services,
    input: &NewOutgoingPayment,
    wallet: &WalletAddress,
    claim: Option<&RequestClaim>,
) -> Result<Quote, ServiceError> {
    let url = match &input.source {
        PaymentSource::Quote(url) => url,
        PaymentSource::IncomingPayment {
            receiver,
            debit_amount,
        } => {
            let new_quote = NewQuote {
                wallet_address: input.wallet_address.clone(),
                receiver: receiver.clone(),
                target: QuoteTarget::FixedSend(debit_amount.clone()),
                client: input.client.clone(),
            };
            return Ok(
                quotes::create_answered(services, new_quote, claim, |_, _| None)
                    .await?
                    .0,
            );
        }
    };
    let unknown = || ServiceError::InvalidQuote("unknown quote".to_owned());
    let sites = services.sites.table().await?;
    let (tenant, id) = sites.quote(url).ok_or_else(unknown)?;
    if tenant != wallet.tenant {
        return Err(unknown());
    }
    let quote = services.quote_by_id(id).await?.ok_or_else(unknown)?;
    // A receiver here must still be payable. One on another server is read
    // again by the worker before anything is sent (reading it here would
    // cost every payment a round trip there).
    let receiver = if sites.is_ours(&quote.receiver) {
        receivers::local(services, &quote.receiver).await?.map(drop)
    } else {
        Ok(())
    };
    plan::usable_quote(&quote, wallet.id, receiver, services.clock.now())?;
    Ok(quote)
}

/// Stores a planned payment with its creation event, its reservation, its
/// funding and the request's replay `claim`, in one transaction; then counts it and wakes the sender.
/// Returns what the grant had spent before it.
async fn store(
    services: &Services,
    planned: &plan::Planned,
    wallet: &WalletAddress,
    claim: Option<&RequestClaim>,
) -> Result<GrantSpent, ServiceError> {
    let record = &planned.payment;
    let site = services.site_of(wallet).await?;
    let created_event = event(
        services,
        wallet,
        EventKind::OutgoingPaymentCreated,
        payment_event_data(&site, record, wallet),
    );
    let outcome = services
        .store
        .create_outgoing_payment(
            record,
            planned.reservation.as_ref(),
            &[created_event],
            claim,
        )
        .await?;
    let spent_before = plan::stored(outcome, record)?;
    crate::platform::metrics::payment_created(&record.debit);
    tracing::info!(
        payment = %record.id,
        wallet_address = %wallet.path,
        debit = record.debit.value,
        receive = record.receive.value,
        asset = record.debit.asset.code.as_str(),
        receiver = %record.receiver,
        state = record.state.as_str(),
        "outgoing payment created"
    );
    if record.state == OutgoingPaymentState::Sending {
        services.payments.due.announce();
    }
    Ok(spent_before)
}

/// One outgoing payment with its wallet address.
pub async fn get(
    services: &Services,
    id: OutgoingPaymentId,
) -> Result<(OutgoingPayment, WalletAddress), ServiceError> {
    let payment = services
        .store
        .get_outgoing_payment(id)
        .await?
        .ok_or(ServiceError::NotFound("outgoing payment"))?;
    let wallet = services
        .wallet_by_id(payment.wallet_address_id)
        .await?
        .ok_or(ServiceError::NotFound("outgoing payment"))?;
    Ok((payment, wallet))
}

/// A page of a wallet address's outgoing payments, newest first.
pub async fn list(
    services: &Services,
    wallet_address: &str,
    client: Option<&str>,
    page: &PageRequest,
) -> Result<(Page<OutgoingPayment>, WalletAddress), ServiceError> {
    let wallet = wallets::by_url(services, wallet_address).await?;
    Ok((
        services
            .store
            .list_outgoing_payments(wallet.id, client, page)
            .await?,
        wallet,
    ))
}

/// What the grant spent in its current interval (or over its life);
/// `None` when nothing was reserved there.
pub async fn grant_spent(
    services: &Services,
    grant: &GrantContext,
) -> Result<Option<GrantSpent>, ServiceError> {
    let start = match grant.limits.as_ref().and_then(|l| l.interval.as_ref()) {
        Some(interval) => match interval.interval_at(services.clock.now()) {
            Some((start, _)) => start,
            None => return Ok(None),
        },
        None => Timestamp::from_unix_millis(0),
    };
    Ok(services.store.grant_spent(&grant.grant_id, start).await?)
}

/// Sends the next due outgoing payment, if any: to an incoming payment
/// here (`local`) or on another server ([`remote`]). In external funding mode,
/// payments still waiting for outside funds when their quote expires fail
/// first (otherwise that check runs in the expiry loop, for payments left
/// from a time the mode was on, and costs a payment nothing).
pub async fn send_next(services: &Services) -> Result<Step, ServiceError> {
    let now = services.clock.now();
    if services.config.external_funding {
        if let Some(step) = lifecycle::fail_next_unfunded(services).await? {
            return Ok(step);
        }
    }
    let Some(p) = services
        .store
        .claim_due_outgoing_payment(now, lifecycle::LEASE_MS)
        .await?
    else {
        return Ok(Step::Idle);
    };
    let Some(quote) = services.quote_by_id(p.quote_id).await? else {
        return lifecycle::fail(services, &p, "the payment's quote is missing".into()).await;
    };
    if !services.sites.table().await?.is_ours(&p.receiver) {
        return remote::step(services, &p, &quote).await;
    }
    local::send(services, &p, &quote).await
}
