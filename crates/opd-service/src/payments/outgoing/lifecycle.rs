//! Background work, one step at a time: `run_once` sends the next due
//! outgoing payment, `expire_incoming_once` announces expired incoming
//! payments. Tests call them directly; `opd serve` loops over them.
//!
//! Sending to an incoming payment on this server is one store transaction
//! (the payment completes, the receiver is credited, the fee is taken), so
//! a crash at any moment leaves it either sent or not, never twice. A
//! payment is claimed with a lease: a worker that dies lets it come back
//! when the lease ends.

use opd_core::ledger::Receipts;
use opd_core::outgoing_payment::{
    LocalDelivery, OutgoingPayment, OutgoingPaymentState, PaymentFailure,
};
use opd_core::webhook::EventKind;

use crate::webhooks::{event, incoming_event_data, payment_event_data};
use crate::{ServiceError, Services};

/// How long a claimed payment is reserved for the worker that took it.
pub const LEASE_MS: i64 = 30_000;

/// What one step did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Nothing was due.
    Idle,
    /// A payment was completed.
    Completed(opd_core::OutgoingPaymentId),
    /// A payment failed (and was refunded).
    Failed(opd_core::OutgoingPaymentId, String),
    /// A payment could not be settled now (the receiver changed meanwhile);
    /// it is due again at once and is planned anew.
    Retry(opd_core::OutgoingPaymentId),
}

/// Ends a payment as failed or cancelled, with its money back and its
/// `outgoing_payment.failed` event; `false` when it had already ended.
async fn end(
    services: &Services,
    p: &OutgoingPayment,
    state: OutgoingPaymentState,
    reason: &str,
) -> Result<bool, ServiceError> {
    let wallet = services.wallet_by_id(p.wallet_address_id).await?;
    let ended = p.ended(state, reason);
    let events = match &wallet {
        Some(w) => vec![event(
            services,
            EventKind::OutgoingPaymentFailed,
            payment_event_data(services, &ended, w),
        )],
        None => Vec::new(),
    };
    let failure = PaymentFailure {
        payment: p.id,
        state,
        reason: reason.to_owned(),
        at: services.clock.now(),
        events,
    };
    let ended = services.store.fail_outgoing_payment(&failure).await?;
    if ended {
        crate::platform::metrics::payment_failed(&p.debit, state.as_str());
    }
    Ok(ended)
}

/// Fails a payment for `reason`, its money (what it did not send) back.
pub(crate) async fn fail_payment(
    services: &Services,
    p: &OutgoingPayment,
    reason: String,
) -> Result<Step, ServiceError> {
    end(services, p, OutgoingPaymentState::Failed, &reason).await?;
    Ok(Step::Failed(p.id, reason))
}

/// Sends the next due outgoing payment, if any. In external funding mode,
/// payments still waiting for outside funds when their quote expires fail
/// first (otherwise that check runs in the expiry loop, for payments left
/// from a time the mode was on, and costs a payment nothing).
pub async fn run_once(services: &Services) -> Result<Step, ServiceError> {
    let now = services.clock.now();
    if services.config.external_funding {
        if let Some(step) = fail_next_unfunded(services).await? {
            return Ok(step);
        }
    }
    let Some(p) = services
        .store
        .claim_due_outgoing_payment(now, LEASE_MS)
        .await?
    else {
        return Ok(Step::Idle);
    };
    let Some(quote) = services.quote_by_id(p.quote_id).await? else {
        return fail_payment(services, &p, "the payment's quote is missing".into()).await;
    };
    if !services.config.public_url.is_ours(&p.receiver) {
        return crate::payments::outgoing::remote::step(services, &p, &quote).await;
    }
    if quote.is_expired(now) {
        return fail_payment(
            services,
            &p,
            "the quote expired before the payment was sent".into(),
        )
        .await;
    }
    let Some(incoming_id) = services.config.public_url.incoming_payment_id(&p.receiver) else {
        return fail_payment(
            services,
            &p,
            "the receiver is not an incoming payment".into(),
        )
        .await;
    };
    let Some(receiver) = services.store.get_incoming_payment(incoming_id).await? else {
        return fail_payment(services, &p, "the receiver does not exist".into()).await;
    };
    if receiver.completed || receiver.is_expired(now) {
        return fail_payment(
            services,
            &p,
            "the receiver no longer accepts payments".into(),
        )
        .await;
    }
    // The quote checked the receiving wallet address; it may have been
    // deactivated since (the operator closed the account): as when
    // quoting, nothing is delivered to it.
    let receiver_wallet = services.wallet_by_id(receiver.wallet_address_id).await?;
    if !receiver_wallet.as_ref().is_some_and(|w| w.is_active(now)) {
        return fail_payment(
            services,
            &p,
            "the receiving wallet address is inactive".into(),
        )
        .await;
    }
    if receiver.asset != p.receive.asset {
        return fail_payment(services, &p, "the receiver's asset changed".into()).await;
    }
    if receiver.remaining().is_some_and(|r| r < p.receive.value) {
        return fail_payment(
            services,
            &p,
            "the receiver can no longer accept the quoted amount".into(),
        )
        .await;
    }
    let Some(received) = receiver.received_amount.checked_add(p.receive.value) else {
        return fail_payment(services, &p, "the receiver's total would overflow".into()).await;
    };
    let completes = receiver.incoming_amount.is_some_and(|i| received >= i);
    let wallet = services.wallet_by_id(p.wallet_address_id).await?;
    let done = p.completed(quote.debit_minus_fees);
    let mut events = Vec::new();
    if let Some(w) = &wallet {
        events.push(event(
            services,
            EventKind::OutgoingPaymentCompleted,
            payment_event_data(services, &done, w),
        ));
    }
    let mut credited = receiver.clone();
    credited.received_amount = received;
    credited.completed = completes;
    if let Some(rw) = &receiver_wallet {
        if completes {
            let mut data = incoming_event_data(services, &credited, rw);
            // Held in external mode: what waits, with this delivery.
            let to_withdraw = match services.config.receipts() {
                Receipts::ToWallet => 0,
                Receipts::Held => services
                    .store
                    .unwithdrawn(receiver.id)
                    .await?
                    .saturating_add(p.receive.value),
            };
            crate::webhooks::add_withdrawal(&mut data, &credited, to_withdraw);
            events.push(event(services, EventKind::IncomingPaymentCompleted, data));
        }
    }
    let delivery = LocalDelivery {
        payment: p.id,
        incoming: receiver.id,
        receiver_wallet: receiver.wallet_address_id,
        receipts: services.config.receipts(),
        sender_asset: p.debit.asset.clone(),
        receiver_asset: p.receive.asset.clone(),
        send: quote.debit_minus_fees,
        fee: quote.fee,
        deliver: p.receive.value,
        expected_received: receiver.received_amount,
        completes_incoming: completes,
        at: services.clock.now(),
        events,
    };
    if services.store.deliver_locally(&delivery).await? {
        crate::platform::metrics::payment_completed(
            &p.debit.asset,
            quote.debit_minus_fees,
            p.created_at,
            delivery.at,
        );
        crate::platform::metrics::incoming_received(
            &p.receive.asset,
            p.receive.value,
            crate::platform::metrics::Via::Local,
            completes,
        );
        Ok(Step::Completed(p.id))
    } else {
        // Another payment reached the receiver first: plan again at once
        // (any worker, any node) instead of when the lease ends.
        services
            .store
            .release_outgoing_payment(p.id, services.clock.now())
            .await?;
        Ok(Step::Retry(p.id))
    }
}

/// Fails the payments still waiting for outside funds whose quote expired
/// (external funding mode); returns how many.
pub async fn fail_unfunded_once(services: &Services) -> Result<usize, ServiceError> {
    let mut n = 0;
    while n < 32 && fail_next_unfunded(services).await?.is_some() {
        n += 1;
    }
    Ok(n)
}

/// Fails the oldest payment still waiting for outside funds whose quote
/// expired, if there is one.
async fn fail_next_unfunded(services: &Services) -> Result<Option<Step>, ServiceError> {
    let now = services.clock.now();
    let due = services
        .store
        .unfunded_expired_outgoing_payments(now, 1)
        .await?;
    let Some(id) = due.first() else {
        return Ok(None);
    };
    let Some(p) = services.store.get_outgoing_payment(*id).await? else {
        return Ok(None);
    };
    let reason = "the payment was not funded before its quote expired";
    Ok(Some(fail_payment(services, &p, reason.into()).await?))
}

/// Announces incoming payments that expired unfinished; returns how many.
pub async fn expire_incoming_once(services: &Services) -> Result<usize, ServiceError> {
    let due = services
        .store
        .due_expired_incoming_payments(services.clock.now(), 32)
        .await?;
    let mut n = 0;
    for id in due {
        let Some(p) = services.store.get_incoming_payment(id).await? else {
            continue;
        };
        let Some(w) = services.wallet_by_id(p.wallet_address_id).await? else {
            continue;
        };
        let mut data = incoming_event_data(services, &p, &w);
        let to_withdraw = crate::ledger::to_withdraw(services, p.id).await?;
        crate::webhooks::add_withdrawal(&mut data, &p, to_withdraw);
        let e = event(services, EventKind::IncomingPaymentExpired, data);
        if services.store.mark_incoming_payment_expired(id, &e).await? {
            n += 1;
        }
    }
    Ok(n)
}

/// Deletes the replay log's entries whose signatures can no longer be
/// presented (past the freshness window); returns how many.
pub async fn prune_once(services: &Services) -> Result<u64, ServiceError> {
    let now = services.clock.now().unix_seconds();
    Ok(services.store.prune_requests(now).await?)
}

/// Deletes what is past its retention (`ServiceConfig::retention`; see
/// `opd_store::RetentionStore` for what goes); nothing when it is zero.
pub async fn retention_once(services: &Services) -> Result<opd_store::Pruned, ServiceError> {
    let keep = services.config.retention;
    if keep.is_zero() {
        return Ok(opd_store::Pruned::default());
    }
    let keep_ms = i64::try_from(keep.as_millis()).unwrap_or(i64::MAX);
    let cutoff = services.clock.now().plus_millis(-keep_ms);
    Ok(services.store.prune_before(cutoff).await?)
}

/// Cancels an outgoing payment that was not sent yet; its money goes back.
pub async fn cancel(
    services: &Services,
    id: opd_core::OutgoingPaymentId,
) -> Result<(), ServiceError> {
    let Some(p) = services.store.get_outgoing_payment(id).await? else {
        return Err(ServiceError::NotFound("outgoing payment"));
    };
    let reason = "cancelled by the operator";
    if end(services, &p, OutgoingPaymentState::Cancelled, reason).await? {
        Ok(())
    } else {
        Err(ServiceError::Conflict {
            code: "payment_not_cancellable",
            message: format!("the payment is {} and can no longer be cancelled", p.state),
        })
    }
}

/// Funds a payment waiting for outside funds (external funding mode); it is
/// then sent.
pub async fn fund(
    services: &Services,
    id: opd_core::OutgoingPaymentId,
) -> Result<(), ServiceError> {
    let Some(p) = services.store.get_outgoing_payment(id).await? else {
        return Err(ServiceError::NotFound("outgoing payment"));
    };
    if services
        .store
        .fund_outgoing_payment(id, services.clock.now(), &[])
        .await?
    {
        services.payments_due.notify_one();
        Ok(())
    } else {
        Err(ServiceError::Conflict {
            code: "payment_not_fundable",
            message: format!("the payment is {} and is not waiting for funds", p.state),
        })
    }
}
