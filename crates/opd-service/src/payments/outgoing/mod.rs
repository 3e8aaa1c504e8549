//! Outgoing payments: create (from a quote, or from an incoming payment and
//! a debit amount), read, list, and the grant's spent amounts.
//!
//! Creation is one store transaction: the payment is stored, its amounts
//! are reserved against the grant's limits for the interval containing its
//! creation time, and its `debitAmount` moves from the wallet address's
//! balance into the payment's ledger account. Any refusal leaves nothing
//! behind.
//!
//! The rest of a payment's life lives beside this file: `lifecycle` (every
//! way it ends or waits), `local` (delivery here), `remote` and `packets`
//! (delivery over STREAM). May call `quotes`, `receivers`, `incoming`,
//! `interledger::paths`, `webhooks`, `ledger`, the store and `platform`.

pub mod lifecycle;
mod local;
mod packets;
pub mod remote;

use opd_core::incoming_payment::Metadata;
use opd_core::outgoing_payment::{
    CreateOutgoing, GrantReservation, GrantSpent, OutgoingPayment, OutgoingPaymentState,
};
use opd_core::pagination::{Page, PageRequest};
use opd_core::quote::QuoteTarget;
use opd_core::wallet_address::WalletAddress;
use opd_core::webhook::EventKind;
use opd_core::{Amount, OutgoingPaymentId, Timestamp};
use opd_gnap::OutgoingLimits;

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

fn refused(code: &'static str, message: String) -> ServiceError {
    ServiceError::Forbidden { code, message }
}

/// The reservation a payment makes against its grant, or why the grant
/// does not allow it at all.
fn reservation(
    grant: &GrantContext,
    receiver: &str,
    debit: &Amount,
    receive: &Amount,
    at: Timestamp,
) -> Result<GrantReservation, ServiceError> {
    let mut r = GrantReservation {
        grant_id: grant.grant_id.clone(),
        interval_start: Timestamp::from_unix_millis(0),
        interval_end: None,
        debit_limit: None,
        receive_limit: None,
    };
    let Some(limits) = &grant.limits else {
        return Ok(r);
    };
    if limits
        .receiver
        .as_deref()
        .is_some_and(|allowed| allowed != receiver)
    {
        return Err(refused(
            "insufficient_grant",
            "the grant only allows payments to another receiver".into(),
        ));
    }
    if let Some(limit) = &limits.debit_amount {
        if limit.asset != debit.asset {
            return Err(refused(
                "insufficient_grant",
                format!("the grant's debit limit is in {}", limit.asset),
            ));
        }
        r.debit_limit = Some(limit.value);
    }
    if let Some(limit) = &limits.receive_amount {
        if limit.asset != receive.asset {
            return Err(refused(
                "insufficient_grant",
                format!("the grant's receive limit is in {}", limit.asset),
            ));
        }
        r.receive_limit = Some(limit.value);
    }
    if let Some(interval) = &limits.interval {
        let (start, end) = interval.interval_at(at).ok_or_else(|| {
            refused(
                "insufficient_grant",
                "the grant's interval does not cover this time".into(),
            )
        })?;
        r.interval_start = start;
        r.interval_end = Some(end);
    }
    Ok(r)
}

/// Creates an outgoing payment. Returns it with its wallet address and
/// what the grant had spent before it. The request's replay `claim` is
/// stored with the first write: the quote made for it, or the payment.
pub async fn create(
    services: &Services,
    input: NewOutgoingPayment,
    claim: Option<&crate::access::replays::RequestClaim>,
) -> Result<(OutgoingPayment, WalletAddress, GrantSpent), ServiceError> {
    let wallet = wallets::by_url(services, &input.wallet_address).await?;
    let invalid_quote = |m: &str| ServiceError::InvalidQuote(m.to_owned());
    let quote = match &input.source {
        PaymentSource::Quote(url) => {
            let id = services
                .config
                .public_url
                .quote_id(url)
                .ok_or_else(|| invalid_quote("unknown quote"))?;
            let quote = services
                .quote_by_id(id)
                .await?
                .ok_or_else(|| invalid_quote("unknown quote"))?;
            if quote.wallet_address_id != wallet.id {
                return Err(invalid_quote("the quote is for another wallet address"));
            }
            if quote.is_expired(services.clock.now()) {
                return Err(invalid_quote("the quote has expired"));
            }
            // A receiver here must still be payable. One on another server
            // is read again by the worker before anything is sent (reading
            // it here would cost every payment a round trip there).
            if services.config.public_url.is_ours(&quote.receiver) {
                if let Err(why) = receivers::local(services, &quote.receiver).await? {
                    return Err(ServiceError::InvalidQuote(format!(
                        "the quote's receiver: {why}"
                    )));
                }
            }
            quote
        }
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
            quotes::create_answered(services, new_quote, claim, |_, _| None)
                .await?
                .0
        }
    };
    crate::payments::incoming::check_metadata(&input.metadata)?;
    let now = services.clock.now();
    let grant = input
        .grant
        .as_ref()
        .map(|g| {
            reservation(
                g,
                &quote.receiver,
                &quote.debit_amount,
                &quote.receive_amount,
                now,
            )
        })
        .transpose()?;
    let record = OutgoingPayment {
        // One quote, one payment: the payment takes the quote's id.
        id: OutgoingPaymentId::from_uuid(*quote.id.as_uuid()),
        wallet_address_id: wallet.id,
        quote_id: quote.id,
        receiver: quote.receiver.clone(),
        debit: quote.debit_amount.clone(),
        receive: quote.receive_amount.clone(),
        sent: 0,
        delivered: 0,
        receiver_baseline: None,
        state: if services.config.external_funding {
            OutgoingPaymentState::Funding
        } else {
            OutgoingPaymentState::Sending
        },
        error: None,
        metadata: input.metadata,
        client: input.client,
        grant_id: grant.as_ref().map(|g| g.grant_id.clone()),
        grant_interval_start: grant.as_ref().map(|g| g.interval_start),
        attempts: 0,
        next_attempt_at: now,
        created_at: now,
        updated_at: now,
    };
    let created_event = event(
        services,
        EventKind::OutgoingPaymentCreated,
        payment_event_data(services, &record, &wallet),
    );
    match services
        .store
        .create_outgoing_payment(&record, grant.as_ref(), &[created_event], claim)
        .await?
    {
        CreateOutgoing::Created { spent_before } => {
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
            Ok((record, wallet, spent_before))
        }
        CreateOutgoing::QuoteUsed => Err(invalid_quote("the quote was already used for a payment")),
        CreateOutgoing::InsufficientBalance { available } => {
            Err(ServiceError::InsufficientBalance {
                available: Amount::new(available, record.debit.asset.clone()),
                required: record.debit.clone(),
            })
        }
        CreateOutgoing::Overflow => Err(ServiceError::AmountOverflow),
        CreateOutgoing::LimitExceeded { .. } => Err(refused(
            "insufficient_grant",
            "the payment would exceed the grant's limits".into(),
        )),
    }
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
/// here ([`local`]) or on another server ([`remote`]). In external funding mode,
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
    if !services.config.public_url.is_ours(&p.receiver) {
        return remote::step(services, &p, &quote).await;
    }
    local::send(services, &p, &quote).await
}
