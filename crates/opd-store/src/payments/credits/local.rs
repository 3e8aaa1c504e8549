//! The local delivery of an outgoing payment to an incoming payment of
//! this server: the outgoing payment completes and the receiver is
//! credited by the same rule as an ILP packet, in one transaction.

use opd_core::ledger::PostError;
use opd_core::outgoing_payment::LocalDelivery;

use super::credit::{credit_incoming, lock_incoming, Credit, Source};
use super::take::Packet;
use crate::payments::outgoing::Delivered;
use crate::platform::db::{num, params, Stmt, Want};
use crate::platform::facts::Uncommitted;
use crate::platform::outbox::insert_events;
use crate::{SqlStore, StoreResult};

/// A local delivery delivers everything at once: `delivered_value` too,
/// which the dashboard shows (it grows packet by packet for payments to
/// other servers).
pub(super) static COMPLETE_OUTGOING: Stmt = Stmt::new(&[
    "UPDATE outgoing_payments SET state = 'completed', sent_value = ?::numeric, \
     delivered_value = ?::numeric, updated_at = ? WHERE id = ?::uuid AND state = 'sending'",
]);

impl SqlStore {
    /// A local delivery; see [`super::CreditStore::deliver_locally`].
    pub(super) async fn local_delivery(
        &self,
        d: &LocalDelivery,
    ) -> StoreResult<Uncommitted<'_, Delivered>> {
        let mut tx = self.db.begin().await?;
        let payment = d.payment.to_string();
        // Sent with the incoming payment's lock, in one round trip on
        // PostgreSQL.
        let completed = tx.send(
            &COMPLETE_OUTGOING,
            params![num(d.send), num(d.deliver), d.at, &payment],
            Want::Changed,
        );
        let receiver = lock_incoming(&mut tx, d.incoming).await?;
        if tx.take(completed).await?.changed() == 0 {
            // Not sending any more (completed or failed meanwhile): it
            // holds nothing to deliver.
            return Ok(Uncommitted::settled(Delivered::Changed));
        }
        let Some(receiver) = receiver else {
            return Ok(Uncommitted::settled(Delivered::Changed));
        };
        let packets = [Packet {
            amount: d.send,
            deliver: d.deliver,
            at: d.at,
        }];
        let credit = credit_incoming(&mut tx, Source::Local(d), receiver, d.receipts, &packets);
        match credit.await? {
            Credit::Credited(taken, facts) => {
                let completes = taken
                    .answers
                    .iter()
                    .any(|a| a.as_ref().is_ok_and(|p| p.completed));
                insert_events(&mut tx, &d.events);
                Ok(Uncommitted::open(tx, Delivered::Done { completes }, facts))
            }
            Credit::NotMoved(_, Some(PostError::Overflow)) | Credit::SumOverflow => {
                Ok(Uncommitted::settled(Delivered::Overflow))
            }
            // The receiver changed since the plan was made: nothing
            // happened; the worker plans again.
            Credit::NotMoved(..) => Ok(Uncommitted::settled(Delivered::Changed)),
        }
    }
}
