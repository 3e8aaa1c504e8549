//! A round of ILP credits: the packets of one peer for one incoming
//! payment that arrived together, credited in one transaction, the clock
//! read once every row it moves is locked.

use opd_core::ledger::PostError;
use opd_core::peer::Peer;
use opd_core::{Clock, IncomingPaymentId, Timestamp};

use super::credit::{credit_incoming, lock_incoming, Credit};
use super::take::{Packet, Taken};
use super::{IlpCredit, IlpReceive, IlpRound};
use crate::platform::facts::Uncommitted;
use crate::{SqlStore, StoreResult};

impl SqlStore {
    /// One round of ILP credits; see [`super::CreditStore::credit_round`].
    pub(super) async fn ilp_round(
        &self,
        peer: &Peer,
        incoming: IncomingPaymentId,
        receives: &[IlpReceive],
        clock: &dyn Clock,
    ) -> StoreResult<IlpRound<'_>> {
        let Some(first) = receives.first() else {
            return Ok(IlpRound::Answered(Vec::new()));
        };
        let packets: Vec<Packet> = receives
            .iter()
            .map(|r| Packet {
                amount: r.amount,
                deliver: r.deliver,
                at: r.at,
            })
            .collect();
        let mut tx = self.db.begin().await?;
        let Some(payment) = lock_incoming(&mut tx, incoming).await? else {
            return Ok(IlpRound::Answered(vec![IlpCredit::Unknown; receives.len()]));
        };
        let credit = credit_incoming(&mut tx, peer, payment, first.receipts, &packets);
        let (taken, facts) = match credit.await? {
            Credit::SumOverflow => return Ok(refused_group(receives, IlpCredit::Overflow)),
            Credit::NotMoved(taken, None) => return Ok(IlpRound::Answered(answers(taken))),
            Credit::NotMoved(_, Some(refused)) => {
                let alone = match refused {
                    PostError::Insufficient { available } => {
                        IlpCredit::InsufficientLiquidity { available }
                    }
                    PostError::Overflow => IlpCredit::Overflow,
                };
                return Ok(refused_group(receives, alone));
            }
            Credit::Credited(taken, facts) => (taken, facts),
        };
        // Every row this credit moves is locked by now: the clock decides.
        let late = late_packets(receives, &taken, clock.now());
        if !late.is_empty() {
            // Dropped without a commit: rolled back, nothing moved.
            return Ok(IlpRound::Late(late));
        }
        Ok(IlpRound::Open(Uncommitted::open(tx, answers(taken), facts)))
    }
}

/// Each packet's answer from what the payment's rule took.
fn answers(taken: Taken) -> Vec<IlpCredit> {
    taken
        .answers
        .into_iter()
        .map(|a| match a {
            Ok(payment) => IlpCredit::Credited(payment),
            Err(refused) => IlpCredit::Refused(refused),
        })
        .collect()
}

/// The packets of a group that would be credited at `now`, past their
/// deadline (indices into the group).
fn late_packets(receives: &[IlpReceive], taken: &Taken, now: Timestamp) -> Vec<usize> {
    let taken = taken.answers.iter().map(Result::is_ok);
    late_among(receives, taken, now)
}

/// Of the packets of a group (`taken` says which the round credits), those
/// past their deadline at `now` (indices into the group).
pub(super) fn late_among(
    receives: &[IlpReceive],
    taken: impl Iterator<Item = bool>,
    now: Timestamp,
) -> Vec<usize> {
    receives
        .iter()
        .zip(taken)
        .enumerate()
        .filter(|(_, (r, taken))| *taken && r.deadline <= now)
        .map(|(i, _)| i)
        .collect()
}

/// A group's refusal: a packet alone gets `alone` as its answer; a group
/// is credited one by one.
pub(super) fn refused_group<'s>(receives: &[IlpReceive], alone: IlpCredit) -> IlpRound<'s> {
    match receives.len() {
        1 => IlpRound::Answered(vec![alone]),
        _ => IlpRound::OneByOne,
    }
}
