//! Delivering an outgoing payment to an incoming payment on this server:
//! one store transaction (the payment completes, the receiver is credited,
//! the fee is taken), so a crash at any moment leaves it either sent or
//! not, never twice. The receiver is checked again first: it may have
//! completed, expired, changed or closed since the quote. A delivery the
//! ledger refuses because a balance would pass u64::MAX (the receiving
//! wallet address's, with 18-decimal assets about 18.4 units) fails the
//! payment with its money back, as an ILP credit is refused: the quote
//! does not check it, since the receiver's balance moves meanwhile.

use opd_core::incoming_payment::{IncomingPayment, Receivable};
use opd_core::outgoing_payment::{LocalDelivery, OutgoingPayment};
use opd_core::quote::Quote;
use opd_core::wallet_address::WalletAddress;
use opd_core::webhook::{EventKind, WebhookEvent};
use opd_store::Delivered;

use super::lifecycle::{fail, Step};
use crate::payments::receivers::{self, Unpayable};
use crate::webhooks::{event, payment_event_data, Stamp};
use crate::{ServiceError, Services};

/// Sends `p` (claimed, its quote read) to the incoming payment it names:
/// reads the receiver, decides ([`decide`]), then writes in one
/// transaction ([`deliver`]).
pub(super) async fn send(
    services: &Services,
    p: &OutgoingPayment,
    quote: &Quote,
) -> Result<Step, ServiceError> {
    let now = services.clock.now();
    // The quote checked the receiver; it may have completed, expired or
    // been closed since (the operator deactivated its wallet address).
    let found = match quote.is_expired(now) {
        true => Err("the quote expired before the payment was sent"),
        false => receivers::local(services, &p.receiver)
            .await?
            .map_err(unpayable),
    };
    let decided =
        found.and_then(|(receiver, wallet)| decide(&receiver, p, now).map(|()| (receiver, wallet)));
    match decided {
        Ok((receiver, wallet)) => deliver(services, p, quote, &receiver, &wallet).await,
        Err(reason) => fail(services, p, reason.into()).await,
    }
}

/// Why a receiver found unpayable is not paid.
fn unpayable(why: Unpayable) -> &'static str {
    match why {
        Unpayable::NotFound => "the receiver does not exist",
        Unpayable::WalletInactive => "the receiving wallet address is inactive",
        Unpayable::Completed | Unpayable::Expired => "the receiver no longer accepts payments",
    }
}

/// Decides on plain values whether `receiver` takes `p`'s delivery at
/// `now`, by the rule an Interledger packet's credit follows, or why not.
/// The store applies the same rule again to the receiver it locks: when
/// that refuses, the receiver changed meanwhile and this decides again.
fn decide(
    receiver: &IncomingPayment,
    p: &OutgoingPayment,
    now: opd_core::Timestamp,
) -> Result<(), &'static str> {
    if receiver.asset != p.receive.asset {
        return Err("the receiver's asset changed");
    }
    match receiver.receive(p.receive.value, now) {
        Receivable::Yes { .. } => Ok(()),
        Receivable::Closed => Err("the receiver no longer accepts payments"),
        Receivable::TooMuch { .. } if receiver.incoming_amount.is_some() => {
            Err("the receiver can no longer accept the quoted amount")
        }
        Receivable::TooMuch { .. } => Err("the receiver's total would overflow"),
    }
}

/// The event the delivery's payer gets: the payment completed (the
/// receiver's, when completed, comes from the store's facts).
async fn completed_event(
    services: &Services,
    p: &OutgoingPayment,
    quote: &Quote,
) -> Result<Vec<WebhookEvent>, ServiceError> {
    let Some(w) = services.wallet_by_id(p.wallet_address_id).await? else {
        return Ok(Vec::new());
    };
    let done = p.completed(quote.debit_minus_fees);
    let data = payment_event_data(&*services.site_of(&w).await?, &done, &w);
    Ok(vec![event(
        services,
        &w,
        EventKind::OutgoingPaymentCompleted,
        data,
    )])
}

/// Writes the delivery decided: the payment completes, the receiver is
/// credited and the fee taken in one transaction, or nothing.
async fn deliver(
    services: &Services,
    p: &OutgoingPayment,
    quote: &Quote,
    receiver: &IncomingPayment,
    receiver_wallet: &WalletAddress,
) -> Result<Step, ServiceError> {
    let delivery = LocalDelivery {
        payment: p.id,
        incoming: receiver.id,
        receiver: receiver.clone(),
        receipts: services.config.receipts(),
        sender_asset: p.debit.asset.clone(),
        receiver_asset: p.receive.asset.clone(),
        send: quote.debit_minus_fees,
        fee: quote.fee,
        deliver: p.receive.value,
        at: services.clock.now(),
        events: completed_event(services, p, quote).await?,
    };
    let delivered = services.store.deliver_locally(&delivery).await?;
    let sites = services.sites.with(&receiver_wallet.tenant).await?;
    let stamp = Stamp::of(services, &sites);
    let events = crate::webhooks::of_facts(stamp, delivered.facts(), Some(receiver_wallet))?;
    match delivered.commit(&events).await? {
        Delivered::Done { completes } => {
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
            Ok(Step::Again(p.id))
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

#[cfg(test)]
mod tests {
    use opd_core::{Amount, Asset, IncomingPaymentId, QuoteId, Timestamp, WalletAddressId};
    use uuid::Uuid;

    use super::super::{plan::plan, NewOutgoingPayment, PaymentSource};
    use super::*;

    const NOW: Timestamp = Timestamp::from_unix_millis(1_700_000_000_000);

    fn usd() -> Asset {
        Asset::parse("USD", 2).unwrap()
    }

    /// A payment delivering `receive` (in `asset`) to one receiver.
    fn payment(receive: u64, asset: Asset) -> OutgoingPayment {
        let quote = Quote {
            id: QuoteId::from_uuid(Uuid::from_u128(7)),
            wallet_address_id: WalletAddressId::from_uuid(Uuid::from_u128(1)),
            receiver: "https://bank.example/incoming-payments/1".to_owned(),
            debit_amount: Amount::new(receive, usd()),
            receive_amount: Amount::new(receive, asset),
            fee: 0,
            debit_minus_fees: receive,
            client: None,
            created_at: NOW,
            expires_at: NOW.plus_millis(60_000),
        };
        let input = NewOutgoingPayment {
            wallet_address: "https://bank.example/alice".to_owned(),
            source: PaymentSource::Quote("q".to_owned()),
            metadata: None,
            client: None,
            grant: None,
        };
        plan(input, &quote, quote.wallet_address_id, false, NOW)
            .unwrap()
            .payment
    }

    fn receiver(incoming_amount: Option<u64>, received: u64, completed: bool) -> IncomingPayment {
        IncomingPayment {
            id: IncomingPaymentId::from_uuid(Uuid::from_u128(2)),
            wallet_address_id: WalletAddressId::from_uuid(Uuid::from_u128(3)),
            asset: usd(),
            incoming_amount,
            received_amount: received,
            completed,
            expires_at: NOW.plus_millis(60_000),
            metadata: None,
            client: None,
            client_network: None,
            created_at: NOW,
            updated_at: NOW,
        }
    }

    #[test]
    fn a_local_delivery_is_taken_by_the_rule_of_a_packet() {
        let p = payment(100, usd());
        let decided = |r: &IncomingPayment, p: &OutgoingPayment| decide(r, p, NOW);
        assert_eq!(decided(&receiver(Some(100), 0, false), &p), Ok(()));
        assert_eq!(decided(&receiver(None, 0, false), &p), Ok(()));
        assert_eq!(
            decided(
                &receiver(Some(100), 0, false),
                &payment(100, Asset::parse("EUR", 2).unwrap())
            ),
            Err("the receiver's asset changed")
        );
        assert_eq!(
            decided(&receiver(Some(100), 0, true), &p),
            Err("the receiver no longer accepts payments")
        );
        assert_eq!(
            decided(&receiver(Some(150), 60, false), &p),
            Err("the receiver can no longer accept the quoted amount")
        );
        assert_eq!(
            decided(&receiver(None, u64::MAX - 50, false), &p),
            Err("the receiver's total would overflow")
        );
    }
}
