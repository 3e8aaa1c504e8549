//! The life of an outgoing payment after it is created, the same for both
//! ways of delivering it (`local`, to an incoming payment here; `remote`,
//! over Interledger): what one sending step did ([`Step`]), and every way
//! a payment ends or waits: failed or cancelled with its money back,
//! completed with the fee taken, paused with a doubling delay, funded
//! (external funding mode), or failed unfunded when its quote expires.
//!
//! A payment that moves no money is not held until its quote expires:
//! after `IlpLimits::stall` attempts in a row, or that long since it last
//! moved money, whichever comes first, it fails with the reason of its
//! last attempt (`pause`).
//!
//! A payment is claimed with a lease: a worker that dies lets it come back
//! when the lease ends.

use opd_core::outgoing_payment::{OutgoingPayment, OutgoingPaymentState, PaymentFailure};
use opd_core::quote::Quote;
use opd_core::webhook::EventKind;
use opd_core::Backoff;

use crate::webhooks::{event, payment_event_data};
use crate::{ServiceError, Services, StallBounds};

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
    /// A payment is due again at once, planned anew: its step moved money
    /// and others get their turn, or the receiver changed meanwhile.
    Again(opd_core::OutgoingPaymentId),
    /// A payment was put back until a later attempt: it made no progress
    /// (within its stall bounds), or it waits on this server's own work.
    Waiting(opd_core::OutgoingPaymentId),
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
            w,
            EventKind::OutgoingPaymentFailed,
            payment_event_data(&*services.site_of(w).await?, &ended, w),
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
        tracing::info!(
            payment = %p.id,
            state = state.as_str(),
            reason,
            sent = p.sent,
            asset = p.debit.asset.code.as_str(),
            "outgoing payment ended unpaid"
        );
        crate::platform::metrics::payment_failed(&p.debit, state.as_str());
    }
    Ok(ended)
}

/// What a completed payment leaves behind besides its record: one log
/// line an operator reads (what was sent, delivered and charged, and how)
/// and the payment metrics.
pub(crate) fn completed(
    p: &OutgoingPayment,
    sent: u64,
    fee: u64,
    via: &str,
    at: opd_core::Timestamp,
) {
    tracing::info!(
        payment = %p.id,
        sent,
        delivered = p.receive.value,
        fee,
        asset = p.debit.asset.code.as_str(),
        via,
        "outgoing payment completed"
    );
    crate::platform::metrics::payment_completed(&p.debit.asset, sent, p.created_at, at);
}

/// Fails a payment for `reason`, its money (what it did not send) back.
pub(crate) async fn fail(
    services: &Services,
    p: &OutgoingPayment,
    reason: String,
) -> Result<Step, ServiceError> {
    end(services, p, OutgoingPaymentState::Failed, &reason).await?;
    Ok(Step::Failed(p.id, reason))
}

/// The delay before a retry: 0.5 s doubling to 30 s.
const RETRY_BACKOFF: Backoff = Backoff {
    base_ms: 500,
    cap_ms: 30_000,
    max_doublings: 6,
};

/// The delay before the `attempts`-th retry (the first retry waits the base).
fn backoff_ms(attempts: i64) -> i64 {
    RETRY_BACKOFF.delay_ms(attempts.saturating_sub(1))
}

/// What becomes of a payment whose step moved no money.
#[derive(Debug, Clone, PartialEq, Eq)]
enum AfterStall {
    /// Tried again then.
    RetryAt(opd_core::Timestamp),
    /// It failed, for this reason.
    GiveUp(String),
}

/// Decides on plain values: a payment that moved no money for
/// `attempts` steps in a row, last at `since`, is retried after the
/// backoff, but never past the stall bound in time (the last attempt
/// falls on it), and fails once either bound is reached; `why` is what
/// the last step met.
fn after_no_progress(
    attempts: i64,
    since: opd_core::Timestamp,
    now: opd_core::Timestamp,
    bounds: StallBounds,
    why: &str,
) -> AfterStall {
    let bound_ms = opd_core::time::millis(bounds.time);
    let stalled_ms = now.unix_millis().saturating_sub(since.unix_millis());
    if attempts >= i64::from(bounds.attempts) || stalled_ms >= bound_ms {
        let secs = stalled_ms.max(0) / 1000;
        return AfterStall::GiveUp(format!(
            "no progress in {attempts} attempts over {secs} s: {why}"
        ));
    }
    let deadline = since.plus_millis(bound_ms);
    AfterStall::RetryAt(now.plus_millis(backoff_ms(attempts)).min(deadline))
}

/// Puts the payment back for a later step after a step that moved no
/// money (a temporary error, silence, nothing delivered: `why`), with a
/// delay that doubles with its attempts; past the stall bounds
/// (`IlpLimits::stall`) it fails instead, its money back.
pub(crate) async fn pause(
    services: &Services,
    p: &OutgoingPayment,
    why: &str,
) -> Result<Step, ServiceError> {
    // Read again: the step may have moved money since `p` was read.
    let now_p = read_again(services, p).await?;
    let now = services.clock.now();
    let bounds = services.config.ilp.stall;
    match after_no_progress(now_p.attempts, now_p.updated_at, now, bounds, why) {
        AfterStall::RetryAt(at) => {
            tracing::info!(payment = %p.id, attempts = now_p.attempts, why, "no progress; backing off");
            services.store.release_outgoing_payment(p.id, at).await?;
            Ok(Step::Waiting(p.id))
        }
        AfterStall::GiveUp(reason) => fail(services, &now_p, reason).await,
    }
}

/// Puts the payment back for a later step, after the backoff, with no
/// stall bound: for waits that are this server's own (packets a crash
/// left in flight expiring, a completion refused while one is pending).
pub(crate) async fn wait(services: &Services, p: &OutgoingPayment) -> Result<Step, ServiceError> {
    let at = services.clock.now().plus_millis(backoff_ms(p.attempts));
    services.store.release_outgoing_payment(p.id, at).await?;
    Ok(Step::Waiting(p.id))
}

/// `p` as it stands now.
async fn read_again(
    services: &Services,
    p: &OutgoingPayment,
) -> Result<OutgoingPayment, ServiceError> {
    services
        .store
        .get_outgoing_payment(p.id)
        .await?
        .ok_or(ServiceError::NotFound("outgoing payment"))
}

/// Fails the payment, read again first so that its `failed` event and
/// state carry what its packets really sent.
pub(crate) async fn fail_as_sent(
    services: &Services,
    p: &OutgoingPayment,
    reason: String,
) -> Result<Step, ServiceError> {
    fail(services, &read_again(services, p).await?, reason).await
}

/// Completes a payment that sent packets: the fee taken, the rest of what was not sent
/// given back, `outgoing_payment.completed` recorded.
pub(crate) async fn complete_as_sent(
    services: &Services,
    p: &OutgoingPayment,
    quote: &Quote,
) -> Result<Step, ServiceError> {
    let Some(now_p) = services.store.get_outgoing_payment(p.id).await? else {
        return Err(ServiceError::NotFound("outgoing payment"));
    };
    let wallet = services.wallet_by_id(p.wallet_address_id).await?;
    let done = now_p.completed(now_p.sent);
    let events = match &wallet {
        Some(w) => vec![event(
            services,
            w,
            EventKind::OutgoingPaymentCompleted,
            payment_event_data(&*services.site_of(w).await?, &done, w),
        )],
        None => Vec::new(),
    };
    let at = services.clock.now();
    if services
        .store
        .complete_sent_payment(p.id, quote.fee, at, &events)
        .await?
    {
        completed(p, now_p.sent, quote.fee, "interledger", at);
        Ok(Step::Completed(p.id))
    } else {
        wait(services, p).await
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
pub(crate) async fn fail_next_unfunded(services: &Services) -> Result<Option<Step>, ServiceError> {
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
    Ok(Some(fail(services, &p, reason.into()).await?))
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
        services.payments.due.announce();
        Ok(())
    } else {
        Err(ServiceError::Conflict {
            code: "payment_not_fundable",
            message: format!("the payment is {} and is not waiting for funds", p.state),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::{after_no_progress, backoff_ms, AfterStall};
    use crate::StallBounds;
    use opd_core::Timestamp;
    use std::time::Duration;

    const BOUNDS: StallBounds = StallBounds {
        attempts: 8,
        time: Duration::from_secs(60),
    };

    #[test]
    fn a_stalled_payment_backs_off_within_its_bounds_then_gives_up() {
        let since = Timestamp::from_unix_millis(1_000_000);
        let at = |ms: i64| since.plus_millis(ms);
        // Early: the backoff.
        let retry = after_no_progress(1, since, at(100), BOUNDS, "T04");
        assert_eq!(retry, AfterStall::RetryAt(at(600)));
        // Near the time bound: the last attempt falls on it, not after.
        let retry = after_no_progress(7, since, at(50_000), BOUNDS, "T04");
        assert_eq!(retry, AfterStall::RetryAt(at(60_000)));
        // At either bound: it fails, saying why.
        for (attempts, ms) in [(8, 1_000), (2, 60_000), (100, 500_000)] {
            match after_no_progress(attempts, since, at(ms), BOUNDS, "the next hop answered T04") {
                AfterStall::GiveUp(reason) => {
                    assert!(reason.contains("the next hop answered T04"), "{reason}");
                    assert!(reason.contains(&format!("{attempts} attempts")), "{reason}");
                }
                other => panic!("{attempts} attempts at {ms} ms: {other:?}"),
            }
        }
        // One short of both: still retried.
        let retry = after_no_progress(7, since, at(59_999), BOUNDS, "x");
        assert_eq!(retry, AfterStall::RetryAt(at(60_000)));
    }

    #[test]
    fn retries_back_off_from_half_a_second_to_thirty() {
        let pairs = [(0, 500), (1, 500), (2, 1000), (6, 16_000), (7, 30_000)];
        for (attempts, ms) in pairs {
            assert_eq!(backoff_ms(attempts), ms, "attempt {attempts}");
        }
        assert_eq!(backoff_ms(i64::MIN), 500);
        assert_eq!(backoff_ms(1000), 30_000);
    }
}
