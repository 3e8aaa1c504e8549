//! Delivering an outgoing payment to an incoming payment on this server:
//! one store transaction (the payment completes, the receiver is credited,
//! the fee is taken), so a crash at any moment leaves it either sent or
//! not, never twice. The receiver is checked again first: it may have
//! completed, expired, changed or closed since the quote.

use opd_core::ledger::Receipts;
use opd_core::outgoing_payment::{LocalDelivery, OutgoingPayment};
use opd_core::quote::Quote;
use opd_core::webhook::EventKind;

use super::lifecycle::{fail, Step};
use crate::webhooks::{event, incoming_event_data, payment_event_data};
use crate::{ServiceError, Services};

/// Sends `p` (claimed, its quote read) to the incoming payment it names.
pub(super) async fn send(
    services: &Services,
    p: &OutgoingPayment,
    quote: &Quote,
) -> Result<Step, ServiceError> {
    let now = services.clock.now();
    if quote.is_expired(now) {
        return fail(
            services,
            p,
            "the quote expired before the payment was sent".into(),
        )
        .await;
    }
    let Some(incoming_id) = services.config.public_url.incoming_payment_id(&p.receiver) else {
        return fail(
            services,
            p,
            "the receiver is not an incoming payment".into(),
        )
        .await;
    };
    let Some(receiver) = services.store.get_incoming_payment(incoming_id).await? else {
        return fail(services, p, "the receiver does not exist".into()).await;
    };
    if receiver.completed || receiver.is_expired(now) {
        return fail(
            services,
            p,
            "the receiver no longer accepts payments".into(),
        )
        .await;
    }
    // The quote checked the receiving wallet address; it may have been
    // deactivated since (the operator closed the account): as when
    // quoting, nothing is delivered to it.
    let receiver_wallet = services.wallet_by_id(receiver.wallet_address_id).await?;
    if !receiver_wallet.as_ref().is_some_and(|w| w.is_active(now)) {
        return fail(
            services,
            p,
            "the receiving wallet address is inactive".into(),
        )
        .await;
    }
    if receiver.asset != p.receive.asset {
        return fail(services, p, "the receiver's asset changed".into()).await;
    }
    if receiver.remaining().is_some_and(|r| r < p.receive.value) {
        return fail(
            services,
            p,
            "the receiver can no longer accept the quoted amount".into(),
        )
        .await;
    }
    let Some(received) = receiver.received_amount.checked_add(p.receive.value) else {
        return fail(services, p, "the receiver's total would overflow".into()).await;
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
