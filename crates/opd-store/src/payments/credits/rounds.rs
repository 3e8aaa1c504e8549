//! Which packets of a group of ILP credits go into the next transaction
//! ([`CreditStore::credit_round`](crate::CreditStore::credit_round)), and
//! what each packet's answer is once its round ended: a pure plan, on
//! plain values, that the caller drives round by round (it renders and
//! commits the events of each round in between).
//!
//! The first round carries every packet not already past its deadline. A
//! round that meets late packets takes them out (answered `Expired`) and
//! the rest go again; a group whose summed move the ledger refused is
//! credited one packet per round from then on, so each gets the answer it
//! would have got alone. Each round answers every packet in it or takes at
//! least one out, so there are at most as many rounds as packets, plus
//! one.

use opd_core::Timestamp;

use crate::payments::credits::{IlpCredit, IlpReceive};

/// How a round ended, once committed (or with nothing to commit).
#[derive(Debug, Clone, PartialEq)]
pub enum RoundEnd {
    /// One answer per packet of the round.
    Answered(Vec<IlpCredit>),
    /// The summed move was refused: one packet per round from now on.
    OneByOne,
    /// These packets (indices into the round) were late: nothing moved.
    Late(Vec<usize>),
}

/// The rounds of one group of packets; see the module doc.
#[derive(Debug, Clone, PartialEq)]
pub struct CreditRounds {
    answers: Vec<Option<IlpCredit>>,
    one_by_one: bool,
}

impl CreditRounds {
    /// The plan for `receives` at `now`: a packet already past its
    /// deadline is answered `Expired` without a round.
    pub fn new(receives: &[IlpReceive], now: Timestamp) -> Self {
        let answers = receives
            .iter()
            .map(|r| (r.deadline <= now).then_some(IlpCredit::Expired))
            .collect();
        Self {
            answers,
            one_by_one: false,
        }
    }

    /// The packets of the next round (indices into the group, in arrival
    /// order); `None` once every packet has its answer.
    pub fn next(&self) -> Option<Vec<usize>> {
        let mut open = (0..self.answers.len()).filter(|&i| self.answers[i].is_none());
        match self.one_by_one {
            true => open.next().map(|i| vec![i]),
            false => Some(open.collect::<Vec<_>>()).filter(|g| !g.is_empty()),
        }
    }

    /// The packets of `round`, as the store takes them.
    pub fn packets(receives: &[IlpReceive], round: &[usize]) -> Vec<IlpReceive> {
        round.iter().map(|&i| receives[i].clone()).collect()
    }

    /// Records how `round` (as [`next`](Self::next) gave it) ended.
    pub fn settle(&mut self, round: &[usize], ended: RoundEnd) {
        match ended {
            RoundEnd::Answered(credits) => {
                for (&i, credit) in round.iter().zip(credits) {
                    self.answers[i] = Some(credit);
                }
                // The caller checks that a round answers each of its
                // packets (`IlpRound::end`).
            }
            RoundEnd::Late(late) => {
                for j in late {
                    if let Some(&i) = round.get(j) {
                        self.answers[i] = Some(IlpCredit::Expired);
                    }
                }
            }
            RoundEnd::OneByOne => self.one_by_one = true,
        }
    }

    /// Every packet's answer, in arrival order.
    pub fn answers(self) -> Vec<IlpCredit> {
        self.answers
            .into_iter()
            .map(|a| a.unwrap_or(IlpCredit::Expired))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use opd_core::clock::SeededRandom;
    use opd_core::incoming_payment::Receivable;
    use opd_core::ledger::Receipts;
    use opd_core::IncomingPaymentId;

    const NOW: Timestamp = Timestamp::from_unix_millis(1_000_000);

    fn receives(deadlines_ms: &[i64]) -> Vec<IlpReceive> {
        let incoming = IncomingPaymentId::new(NOW, &SeededRandom::new(3));
        deadlines_ms
            .iter()
            .map(|&d| IlpReceive {
                to: crate::payments::credits::CreditTo::Incoming(incoming),
                amount: 1,
                deliver: 1,
                receipts: Receipts::ToWallet,
                receipt_connection: None,
                at: NOW,
                deadline: NOW.plus_millis(d),
            })
            .collect()
    }

    const REFUSED: IlpCredit = IlpCredit::Refused(Receivable::Closed);

    #[test]
    fn packets_late_on_arrival_get_no_round() {
        let mut rounds = CreditRounds::new(&receives(&[1_000, 0, 1_000]), NOW);
        assert_eq!(rounds.next(), Some(vec![0, 2]));
        rounds.settle(
            &[0, 2],
            RoundEnd::Answered(vec![REFUSED, IlpCredit::Unknown]),
        );
        assert_eq!(rounds.next(), None);
        assert_eq!(
            rounds.answers(),
            [REFUSED, IlpCredit::Expired, IlpCredit::Unknown]
        );
    }

    #[test]
    fn a_late_packet_leaves_and_the_others_go_again() {
        let mut rounds = CreditRounds::new(&receives(&[9, 9, 9]), NOW);
        let round = rounds.next().expect("a round");
        rounds.settle(&round, RoundEnd::Late(vec![1]));
        assert_eq!(rounds.next(), Some(vec![0, 2]));
        rounds.settle(&[0, 2], RoundEnd::Answered(vec![REFUSED, REFUSED]));
        assert_eq!(rounds.answers(), [REFUSED, IlpCredit::Expired, REFUSED]);
    }

    #[test]
    fn a_refused_sum_is_credited_one_packet_per_round() {
        let mut rounds = CreditRounds::new(&receives(&[9, 9, 9]), NOW);
        rounds.settle(&[0, 1, 2], RoundEnd::OneByOne);
        let mut seen = Vec::new();
        while let Some(round) = rounds.next() {
            seen.push(round.clone());
            let ended = match round[0] {
                1 => RoundEnd::Late(vec![0]),
                _ => RoundEnd::Answered(vec![IlpCredit::Overflow]),
            };
            rounds.settle(&round, ended);
        }
        assert_eq!(seen, [vec![0], vec![1], vec![2]]);
        assert_eq!(
            rounds.answers(),
            [IlpCredit::Overflow, IlpCredit::Expired, IlpCredit::Overflow]
        );
    }

    #[test]
    fn an_empty_group_has_no_round() {
        assert_eq!(CreditRounds::new(&[], NOW).next(), None);
    }
}
