//! The local delivery of an outgoing payment to an incoming payment of
//! this server: the outgoing payment completes and the receiver is
//! credited by the same rule as an ILP packet, in one transaction.
//!
//! The rule is applied to the receiver as the service planned against it
//! (`LocalDelivery::receiver`, read just before), and every statement goes
//! out at once with the receiver's lock: on PostgreSQL the whole delivery
//! is one round trip and the `COMMIT`. It is kept only if the locked row
//! is the receiver as planned ([`same_for_credit`]) and the outgoing
//! payment was still sending; otherwise it is rolled back and the worker
//! plans again.

use opd_core::incoming_payment::IncomingPayment;
use opd_core::ledger::{AccountKind, PostError, Receipts, TransferKind};
use opd_core::outgoing_payment::LocalDelivery;

use super::credit::{completed_fact, send_received, INCOMING_FOR_UPDATE};
use super::take::{take_in_order, Packet};
use crate::ledger::{across, send_post, AccountRef, Posting, SentPost};
use crate::payments::incoming::incoming_from_row;
use crate::payments::outgoing::Delivered;
use crate::platform::db::{num, params, Stmt, Tx, Want};
use crate::platform::facts::Uncommitted;
use crate::platform::outbox::insert_events;
use crate::{SqlStore, StoreError, StoreResult};

/// A local delivery delivers everything at once: `delivered_value` too,
/// which the dashboard shows (it grows packet by packet for payments to
/// other servers).
pub(super) static COMPLETE_OUTGOING: Stmt = Stmt::new(&[
    "UPDATE outgoing_payments SET state = 'completed', sent_value = ?::numeric, \
     delivered_value = ?::numeric, updated_at = ? WHERE id = ?::uuid AND state = 'sending'",
]);

/// Whether `locked` takes a credit exactly as `planned` does: the same
/// inputs of the rule (`IncomingPayment::receive`) and the same state.
pub(crate) fn same_for_credit(locked: &IncomingPayment, planned: &IncomingPayment) -> bool {
    locked.id == planned.id
        && locked.wallet_address_id == planned.wallet_address_id
        && locked.asset == planned.asset
        && locked.incoming_amount == planned.incoming_amount
        && locked.received_amount == planned.received_amount
        && locked.completed == planned.completed
        && locked.expires_at == planned.expires_at
}

impl SqlStore {
    /// A local delivery; see [`super::CreditStore::deliver_locally`].
    pub(super) async fn local_delivery(
        &self,
        d: &LocalDelivery,
    ) -> StoreResult<Uncommitted<'_, Delivered>> {
        let mut credited = d.receiver.clone();
        let packet = Packet {
            amount: d.send,
            deliver: d.deliver,
            at: d.at,
        };
        if !take_in_order(&mut credited, &[packet]).is_some_and(|t| t.any()) {
            // The receiver as planned does not take it: plan again.
            return Ok(Uncommitted::settled(Delivered::Changed));
        }
        let mut tx = self.db.begin().await?;
        let payment = d.payment.to_string();
        let completed = tx.send(
            &COMPLETE_OUTGOING,
            params![num(d.send), num(d.deliver), d.at, &payment],
            Want::Changed,
        );
        let lock = tx.send(
            &INCOMING_FOR_UPDATE,
            params![d.incoming.to_string()],
            Want::Rows,
        );
        let wallet_id = credited.wallet_address_id.to_string();
        let incoming_id = d.incoming.to_string();
        let receiver = match d.receipts {
            Receipts::ToWallet => AccountRef::new(AccountKind::Wallet, &wallet_id, &credited.asset),
            Receipts::Held => AccountRef::new(AccountKind::Incoming, &incoming_id, &credited.asset),
        };
        let sent = send_delivery(&mut tx, d, receiver).await?;
        send_received(&mut tx, &credited);
        insert_events(&mut tx, &d.events);
        if tx.take(completed).await?.changed() == 0 {
            // Not sending any more (completed or failed meanwhile): it
            // holds nothing to deliver.
            return Ok(Uncommitted::settled(Delivered::Changed));
        }
        let locked = tx.take(lock).await?.rows();
        let locked = locked.first().map(incoming_from_row).transpose()?;
        if !locked.is_some_and(|l| same_for_credit(&l, &d.receiver)) {
            // The receiver changed since the plan (or is gone): dropped
            // without a commit, nothing happened; the worker plans again.
            return Ok(Uncommitted::settled(Delivered::Changed));
        }
        if let Err(PostError::Overflow) = check_delivery(&mut tx, d, sent).await? {
            return Ok(Uncommitted::settled(Delivered::Overflow));
        }
        let completes = credited.completed;
        let facts = completed_fact(&mut tx, &credited, receiver).await?;
        let delivered = Delivered::Done { completes };
        Ok(Uncommitted::open(
            tx,
            delivered,
            facts.into_iter().collect(),
        ))
    }
}

/// Sends the transfers of a local delivery: the delivered amount from the
/// payment to `receiver` (through the settlement accounts when the assets
/// differ) and the fee to the fee account. In balance mode the receiver is
/// the receiving wallet address's account, so the money is spendable at
/// once without a second transfer.
async fn send_delivery(
    tx: &mut Tx<'_>,
    d: &LocalDelivery,
    receiver: AccountRef<'_>,
) -> StoreResult<Vec<(TransferKind, SentPost)>> {
    let payment = d.payment.to_string();
    let held = AccountRef::new(AccountKind::Outgoing, &payment, &d.sender_asset);
    let fees = AccountRef::new(AccountKind::Fees, "fees", &d.sender_asset);
    let mut moves = across(held, receiver, d.send, d.deliver, TransferKind::Deliver);
    moves.push((held, fees, d.fee, TransferKind::Fee));
    let mut sent = Vec::with_capacity(moves.len());
    for (debit, credit, amount, kind) in moves {
        let posting = Posting {
            debit,
            credit,
            amount,
            kind,
            reference: Some(&payment),
            key: None,
            at: d.at,
        };
        sent.push((kind, send_post(tx, posting).await?));
    }
    Ok(sent)
}

/// The ledger's answer to the delivery's transfers, read once the payment
/// is known to be still sending (so it holds its debit).
async fn check_delivery(
    tx: &mut Tx<'_>,
    d: &LocalDelivery,
    sent: Vec<(TransferKind, SentPost)>,
) -> StoreResult<Result<(), PostError>> {
    for (kind, sent) in sent {
        match sent.read(tx).await? {
            Ok(_) => {}
            // A credit that would pass u64::MAX: refused, not corrupt.
            Err(PostError::Overflow) => return Ok(Err(PostError::Overflow)),
            // The payment holds its debit: it cannot be short.
            Err(e) => {
                return Err(StoreError::Corrupt(format!(
                    "outgoing payment {} cannot post its {kind} transfer: {e:?}",
                    d.payment
                )))
            }
        }
    }
    Ok(Ok(()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use opd_core::clock::SeededRandom;
    use opd_core::{Asset, IncomingPaymentId, Timestamp, WalletAddressId};

    #[test]
    fn a_receiver_is_the_same_for_a_credit_only_if_the_rule_would_read_it_alike() {
        let at = Timestamp::from_unix_millis(1_000_000);
        let random = SeededRandom::new(9);
        let planned = IncomingPayment {
            id: IncomingPaymentId::new(at, &random),
            wallet_address_id: WalletAddressId::new(at, &random),
            asset: Asset::parse("USD", 2).expect("asset"),
            incoming_amount: Some(500),
            received_amount: 10,
            completed: false,
            expires_at: at.plus_millis(60_000),
            metadata: None,
            client: None,
            client_network: None,
            created_at: at,
            updated_at: at,
        };
        // What the rule does not read may differ (the last update).
        let touched = IncomingPayment {
            updated_at: at.plus_millis(5),
            ..planned.clone()
        };
        assert!(same_for_credit(&touched, &planned));
        let changed = [
            IncomingPayment {
                received_amount: 11,
                ..planned.clone()
            },
            IncomingPayment {
                completed: true,
                ..planned.clone()
            },
            IncomingPayment {
                expires_at: at,
                ..planned.clone()
            },
            IncomingPayment {
                incoming_amount: None,
                ..planned.clone()
            },
        ];
        for locked in changed {
            assert!(!same_for_credit(&locked, &planned), "{locked:?}");
        }
    }
}
