//! Delivering an outgoing payment to an incoming payment on this server:
//! one store transaction (the payment completes, the receiver is credited,
//! the fee is taken), so a crash at any moment leaves it either sent or
//! not, never twice. The receiver is checked again first: it may have
//! completed, expired, changed or closed since the quote. A delivery the
//! ledger refuses because a balance would pass u64::MAX (the receiving
//! wallet address's, with 18-decimal assets about 18.4 units) fails the
//! payment with its money back, as an ILP credit is refused: the quote
//! does not check it, since the receiver's balance moves meanwhile.

use opd_core::incoming_payment::Receivable;
use opd_core::ledger::Receipts;
use opd_core::outgoing_payment::{LocalDelivery, OutgoingPayment};
use opd_core::quote::Quote;
use opd_core::webhook::EventKind;
use opd_store::Delivered;

use super::lifecycle::{fail, Step};
use crate::payments::receivers::{self, Unpayable};
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
    // The quote checked the receiver; it may have completed, expired or
    // been closed since (the operator deactivated its wallet address).
    let (receiver, receiver_wallet) = match receivers::local(services, &p.receiver).await? {
        Ok(found) => found,
        Err(why) => {
            let reason = match why {
                Unpayable::NotFound => "the receiver does not exist",
                Unpayable::WalletInactive => "the receiving wallet address is inactive",
                Unpayable::Completed | Unpayable::Expired => {
                    "the receiver no longer accepts payments"
                }
            };
            return fail(services, p, reason.into()).await;
        }
    };
    if receiver.asset != p.receive.asset {
        return fail(services, p, "the receiver's asset changed".into()).await;
    }
    // The same rule as an Interledger packet's credit.
    let (received, completes) = match receiver.receive(p.receive.value, now) {
        Receivable::Yes {
            received,
            completes,
        } => (received, completes),
        Receivable::Closed => {
            let reason = "the receiver no longer accepts payments";
            return fail(services, p, reason.into()).await;
        }
        Receivable::TooMuch { .. } if receiver.incoming_amount.is_some() => {
            let reason = "the receiver can no longer accept the quoted amount";
            return fail(services, p, reason.into()).await;
        }
        Receivable::TooMuch { .. } => {
            let reason = "the receiver's total would overflow";
            return fail(services, p, reason.into()).await;
        }
    };
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
    if completes {
        let mut data = incoming_event_data(services, &credited, &receiver_wallet);
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
    match services.store.deliver_locally(&delivery).await? {
        Delivered::Done => {
            super::lifecycle::completed(p, quote.debit_minus_fees, quote.fee, "local", delivery.at);
            crate::platform::metrics::incoming_received(
                &p.receive.asset,
                p.receive.value,
                crate::platform::metrics::Via::Local,
                completes,
            );
            Ok(Step::Completed(p.id))
        }
        Delivered::Changed => {
            // Another payment reached the receiver first: plan again at
            // once (any worker, any node) instead of when the lease ends.
            services
                .store
                .release_outgoing_payment(p.id, services.clock.now())
                .await?;
            Ok(Step::Retry(p.id))
        }
        // The ledger's refusal, as an ILP credit meets it: the payment
        // fails with its money back, not retried for ever.
        Delivered::Overflow => {
            let reason = "the receiver's balance cannot hold the amount (it would pass \
                          the largest amount an account holds)";
            fail(services, p, reason.into()).await
        }
    }
}
