//! The decisions of one step sending a remote payment's packets, on plain
//! values: how large the next round's packets are, what each answer means
//! for the step, and how a round ends. `packets` does the I/O around them
//! (see `super::remote` for the rules).

use opd_ilp::stream::sender::{self, Answer, Delivery, Ratio};

use crate::interledger::paths::PathProbe;

/// Packets of one payment in flight at once.
const PACKETS_IN_FLIGHT: usize = 4;
/// Most times one step makes packets smaller (F08, or the receiver
/// refusing more than it still takes).
const MAX_SHRINKS: u32 = 8;

/// Why a step ends when it cannot make another round.
pub(super) const TOO_NARROW: &str = "the path's largest packet is too small to deliver anything";
pub(super) const UNDELIVERABLE: &str =
    "the quoted amount cannot be delivered within the quoted debit";

/// What a sending step knows: the path as probed (and as answers taught
/// it), the quote's rate, what the receiver still expects, what may still
/// be sent, and how packets were made smaller.
#[derive(Debug, Clone)]
pub(super) struct Sizing {
    pub(super) probe: PathProbe,
    pub(super) rate: Ratio,
    pub(super) left: u64,
    pub(super) budget: u64,
    /// The largest packet the receiver took lately (after it refused more
    /// than it still expects).
    pub(super) cap: u64,
    pub(super) shrinks: u32,
    /// An answer showed that what was kept of the path no longer holds:
    /// the caller forgets it (the next quote or step probes again).
    pub(super) path_changed: bool,
}

/// One packet's size: its source amount, and the least it must deliver.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Size {
    pub(super) amount: u64,
    pub(super) min_delivery: u64,
}

/// What one packet's answer means for the step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Outcome {
    /// `delivered` arrived.
    Delivered(u64),
    /// The packet was fulfilled, but the receiver claims less than the
    /// request's minimum: `delivered` (its clamped claim) is counted and
    /// the payment stops.
    Short(u64),
    /// Try a smaller packet.
    Smaller,
    /// Pause the payment (within its stall bounds), for this reason.
    Pause(String),
    /// Fail it, for this reason.
    Fail(String),
}

/// How a round ends the step, once all its packets are settled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum End {
    Pause(String),
    Fail(String),
}

impl Sizing {
    pub(super) fn new(probe: PathProbe, rate: Ratio, left: u64, budget: u64) -> Self {
        Self {
            probe,
            rate,
            left,
            budget,
            cap: u64::MAX,
            shrinks: 0,
            path_changed: false,
        }
    }

    /// The packets of the next round, at most `allowance`: up to
    /// [`PACKETS_IN_FLIGHT`], each within the path's largest packet,
    /// together expected (at the probed rate's low bound) to deliver what
    /// is left and no more. Or why no round can be made.
    pub(super) fn round(&self, allowance: usize) -> Result<Vec<Size>, &'static str> {
        if self.too_narrow() {
            return Err(TOO_NARROW);
        }
        let (mut left, mut budget) = (self.left, self.budget);
        let mut round = Vec::new();
        while left > 0 && round.len() < PACKETS_IN_FLIGHT.min(allowance) {
            let finishing = self.probe.rate.low.ceil_div(left).unwrap_or(u64::MAX);
            let amount = finishing
                .min(self.probe.max_packet.limit())
                .min(budget)
                .min(self.cap);
            // The packet that finishes goes alone: sized by the rate's low
            // bound, it may deliver a unit more than planned, which the
            // receiver may refuse; full packets beside it cannot overshoot.
            if amount == 0 || (amount == finishing && !round.is_empty()) {
                break;
            }
            let min_delivery = sender::min_delivery(amount, self.rate)
                .unwrap_or(u64::MAX)
                .min(left);
            let expected = self.probe.rate.low.floor_mul(amount).unwrap_or(left);
            left = left.saturating_sub(expected.max(1));
            budget -= amount;
            round.push(Size {
                amount,
                min_delivery,
            });
        }
        if round.is_empty() {
            return Err(UNDELIVERABLE);
        }
        Ok(round)
    }

    /// Counts a fulfilled packet of `amount` that delivered `delivered`.
    pub(super) fn count(&mut self, amount: u64, delivered: u64) {
        self.left = self.left.saturating_sub(delivered);
        self.budget = self.budget.saturating_sub(amount);
    }

    /// The most a packet of `amount` source units can have delivered: its
    /// amount at the probed rate's high bound, and no more than the payment
    /// still expects.
    fn most(&self, amount: u64) -> u64 {
        let at_rate = self.probe.rate.high.ceil_mul(amount).unwrap_or(u64::MAX);
        at_rate.min(self.left)
    }

    /// Whether the largest packet the path carries can deliver anything.
    fn too_narrow(&self) -> bool {
        let limit = self.probe.max_packet.limit();
        limit == 0 || self.probe.rate.low.floor_mul(limit) == Some(0)
    }

    /// What the answer to a packet of `size` means, learning from it (a
    /// smaller packet, a changed path).
    pub(super) fn outcome(&mut self, size: Size, answer: Answer) -> Outcome {
        let amount = size.amount;
        match answer {
            Answer::Fulfilled { claimed, .. } => {
                match sender::delivery(claimed, size.min_delivery, self.most(amount)) {
                    Delivery::Counted(delivered) => Outcome::Delivered(delivered),
                    Delivery::Short(delivered) => Outcome::Short(delivered),
                }
            }
            Answer::Forged => Outcome::Fail(
                "the next hop answered with a fulfillment that does not match the condition".into(),
            ),
            Answer::Refused { frames, .. }
                if frames
                    .iter()
                    .any(|f| matches!(f, opd_ilp::Frame::ConnectionClose { .. })) =>
            {
                // The receiver closed the connection (completed, expired):
                // the next step reads it again and ends the payment.
                Outcome::Pause("the receiver closed the connection".into())
            }
            Answer::Refused { received, .. } if received >= size.min_delivery => {
                // Enough arrived, yet the receiver refused: more than it
                // still takes. Smaller packets, a few times.
                self.cap = self.cap.min(amount.saturating_sub(1));
                self.shrinks += 1;
                if self.shrinks > MAX_SHRINKS {
                    Outcome::Fail("the receiver refuses what is left to deliver".into())
                } else {
                    Outcome::Smaller
                }
            }
            Answer::Refused { .. } => {
                self.path_changed = true;
                Outcome::Fail("the exchange rate to the receiver fell below the quoted rate".into())
            }
            Answer::TooLarge(data) => self.too_large(amount, data.as_ref()),
            Answer::Temporary(code) => Outcome::Pause(format!(
                "packets were rejected with {} (temporary)",
                code.as_str()
            )),
            Answer::Failed(code) => {
                Outcome::Fail(format!("the packet was rejected with {}", code.as_str()))
            }
        }
    }

    /// An F08 to a packet of `amount`: the path's largest packet is
    /// learned, and packets get smaller, a few times.
    fn too_large(&mut self, amount: u64, data: Option<&opd_ilp::AmountTooLarge>) -> Outcome {
        self.path_changed = true;
        self.probe.max_packet = self.probe.max_packet.learn(amount, data);
        self.shrinks += 1;
        if self.too_narrow() {
            Outcome::Fail("the path's largest packet (F08) is too small to deliver anything".into())
        } else if self.shrinks > MAX_SHRINKS {
            // Packets made smaller each time, and the path still refuses
            // them: no later step would do better.
            Outcome::Fail("the path rejects every packet as too large".into())
        } else {
            Outcome::Smaller
        }
    }
}

/// How the round ends so far (`end`), after a packet's `outcome`: a
/// failure wins over a pause, and the first pause is kept.
pub(super) fn end_after(end: Option<End>, outcome: Outcome) -> Option<End> {
    match outcome {
        Outcome::Delivered(_) | Outcome::Smaller => end,
        Outcome::Short(_) => Some(End::Fail(
            "the receiver accepted a packet while reporting less than its minimum delivery".into(),
        )),
        Outcome::Pause(why) => Some(end.unwrap_or(End::Pause(why))),
        Outcome::Fail(reason) => Some(End::Fail(reason)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use opd_ilp::stream::sender::{MaxPacket, RateBounds};
    use opd_ilp::{AmountTooLarge, ErrorCode, Frame, StreamErrorCode};

    /// A path at one receiver unit per sender unit, carrying packets of
    /// `max` at most; the quote's rate the same.
    fn sizing(max: MaxPacket, left: u64, budget: u64) -> Sizing {
        let probe = PathProbe {
            rate: RateBounds::from_probe(1_000_000, 1_000_000).unwrap(),
            max_packet: max,
            receiver_asset: None,
        };
        Sizing::new(probe, Ratio::new(1, 1).unwrap(), left, budget)
    }

    fn sizes(amounts: &[u64]) -> Vec<Size> {
        let size = |a: &u64| Size {
            amount: *a,
            min_delivery: *a,
        };
        amounts.iter().map(size).collect()
    }

    fn refused(received: u64, frames: Vec<Frame>) -> Answer {
        Answer::Refused {
            code: ErrorCode::F99_APPLICATION_ERROR,
            received,
            frames,
        }
    }

    #[test]
    fn a_round_is_up_to_four_full_packets_within_the_allowance() {
        let s = sizing(MaxPacket::Precise(100), 1_000, 1_000);
        assert_eq!(s.round(40), Ok(sizes(&[100, 100, 100, 100])));
        assert_eq!(s.round(2), Ok(sizes(&[100, 100])));
        assert_eq!(s.round(1), Ok(sizes(&[100])));
    }

    #[test]
    fn the_finishing_packet_goes_alone() {
        let s = sizing(MaxPacket::Precise(100), 250, 1_000);
        assert_eq!(s.round(40), Ok(sizes(&[100, 100])));
        let s = sizing(MaxPacket::Precise(100), 50, 1_000);
        assert_eq!(s.round(40), Ok(sizes(&[50])));
        // The largest amount there is, in one packet.
        let s = sizing(MaxPacket::Unknown, u64::MAX, u64::MAX);
        assert_eq!(s.round(40), Ok(sizes(&[u64::MAX])));
    }

    #[test]
    fn the_budget_and_the_receivers_cap_bound_the_packets() {
        let s = sizing(MaxPacket::Precise(100), 1_000, 150);
        assert_eq!(s.round(40), Ok(sizes(&[100, 50])));
        let mut s = sizing(MaxPacket::Precise(100), 1_000, 1_000);
        s.cap = 30;
        assert_eq!(s.round(40), Ok(sizes(&[30, 30, 30, 30])));
    }

    #[test]
    fn no_round_when_nothing_can_be_sent_or_delivered() {
        let s = sizing(MaxPacket::Precise(100), 1_000, 0);
        assert_eq!(s.round(40), Err(UNDELIVERABLE));
        let s = sizing(MaxPacket::Precise(0), 1_000, 1_000);
        assert_eq!(s.round(40), Err(TOO_NARROW));
        // A packet of the path's largest delivers nothing at its rate.
        let mut s = sizing(MaxPacket::Imprecise(999), 1_000, 1_000);
        s.probe.rate = RateBounds::from_probe(1_000, 1).unwrap();
        assert_eq!(s.round(40), Err(TOO_NARROW));
    }

    #[test]
    fn a_fulfilled_packet_counts_what_it_proves_and_no_more() {
        let mut s = sizing(MaxPacket::Unknown, 1_000, 1_000);
        let size = Size {
            amount: 100,
            min_delivery: 90,
        };
        let fulfilled = |claimed| Answer::Fulfilled {
            claimed,
            frames: Vec::new(),
        };
        assert_eq!(s.outcome(size, fulfilled(Some(95))), Outcome::Delivered(95));
        // No readable reply: the minimum is proven.
        assert_eq!(s.outcome(size, fulfilled(None)), Outcome::Delivered(90));
        // A claim past what the packet could deliver is clamped.
        let most = RateBounds::from_probe(1_000_000, 1_000_000)
            .unwrap()
            .high
            .ceil_mul(100)
            .unwrap();
        let claimed = s.outcome(size, fulfilled(Some(u64::MAX)));
        assert_eq!(claimed, Outcome::Delivered(most));
        assert_eq!(s.outcome(size, fulfilled(Some(89))), Outcome::Short(89));
        s.count(100, 95);
        assert_eq!((s.left, s.budget), (905, 900));
        assert!(!s.path_changed);
    }

    #[test]
    fn a_receiver_refusing_more_than_it_takes_gets_smaller_packets_a_few_times() {
        let mut s = sizing(MaxPacket::Unknown, 1_000, 1_000);
        let size = Size {
            amount: 100,
            min_delivery: 100,
        };
        for _ in 0..MAX_SHRINKS {
            assert_eq!(s.outcome(size, refused(100, Vec::new())), Outcome::Smaller);
        }
        assert_eq!(s.cap, 99);
        let last = s.outcome(size, refused(100, Vec::new()));
        let reason = "the receiver refuses what is left to deliver";
        assert_eq!(last, Outcome::Fail(reason.into()));
        assert!(!s.path_changed);
    }

    #[test]
    fn a_refusal_below_the_minimum_or_an_f08_changes_the_path() {
        let size = Size {
            amount: 100,
            min_delivery: 100,
        };
        let mut s = sizing(MaxPacket::Unknown, 1_000, 1_000);
        let reason = "the exchange rate to the receiver fell below the quoted rate";
        let low = s.outcome(size, refused(99, Vec::new()));
        assert_eq!(low, Outcome::Fail(reason.into()));
        assert!(s.path_changed);

        let mut s = sizing(MaxPacket::Unknown, 1_000, 1_000);
        let halved = Some(AmountTooLarge {
            received_amount: 200,
            maximum_amount: 100,
        });
        assert_eq!(s.outcome(size, Answer::TooLarge(halved)), Outcome::Smaller);
        assert_eq!(s.probe.max_packet, MaxPacket::Precise(50));
        assert!(s.path_changed);
        // An F08 to a packet of 1: nothing fits any more.
        let one = Size {
            amount: 1,
            min_delivery: 1,
        };
        let reason = "the path's largest packet (F08) is too small to deliver anything";
        let narrow = s.outcome(one, Answer::TooLarge(None));
        assert_eq!(narrow, Outcome::Fail(reason.into()));
    }

    #[test]
    fn a_path_refusing_every_packet_as_too_large_fails_after_a_few_tries() {
        let mut s = sizing(MaxPacket::Unknown, 1_000, 1_000);
        let size = Size {
            amount: 100,
            min_delivery: 100,
        };
        // The same F08 each time: the path's largest packet stays 99.
        let f08 = || {
            Answer::TooLarge(Some(AmountTooLarge {
                received_amount: 100,
                maximum_amount: 99,
            }))
        };
        for _ in 0..MAX_SHRINKS {
            assert_eq!(s.outcome(size, f08()), Outcome::Smaller);
        }
        let reason = "the path rejects every packet as too large";
        assert_eq!(s.outcome(size, f08()), Outcome::Fail(reason.into()));
    }

    #[test]
    fn errors_and_closes_pause_or_fail() {
        let mut s = sizing(MaxPacket::Unknown, 1_000, 1_000);
        let size = Size {
            amount: 100,
            min_delivery: 100,
        };
        let close = Frame::ConnectionClose {
            code: StreamErrorCode::NoError,
            message: String::new(),
        };
        // A close wins over what arrived.
        let closed = s.outcome(size, refused(100, vec![close]));
        let why = "the receiver closed the connection";
        assert_eq!(closed, Outcome::Pause(why.into()));
        let t04 = s.outcome(
            size,
            Answer::Temporary(ErrorCode::T04_INSUFFICIENT_LIQUIDITY),
        );
        let why = "packets were rejected with T04 (temporary)";
        assert_eq!(t04, Outcome::Pause(why.into()));
        let f02 = s.outcome(size, Answer::Failed(ErrorCode::F02_UNREACHABLE));
        let reason = "the packet was rejected with F02";
        assert_eq!(f02, Outcome::Fail(reason.into()));
        let forged = s.outcome(size, Answer::Forged);
        assert!(matches!(forged, Outcome::Fail(_)), "{forged:?}");
        assert!(!s.path_changed);
    }

    #[test]
    fn a_round_ends_on_its_last_failure_or_its_first_pause() {
        let pause = |w: &str| Outcome::Pause(w.into());
        let fail = |r: &str| Outcome::Fail(r.into());
        let mut end = None;
        end = end_after(end, Outcome::Delivered(5));
        assert_eq!(end, None);
        end = end_after(end, pause("first"));
        end = end_after(end, pause("second"));
        assert_eq!(end, Some(End::Pause("first".into())));
        end = end_after(end, fail("a"));
        end = end_after(end, pause("third"));
        end = end_after(end, Outcome::Smaller);
        assert_eq!(end, Some(End::Fail("a".into())));
        end = end_after(end, fail("b"));
        assert_eq!(end, Some(End::Fail("b".into())));
        let short = end_after(None, Outcome::Short(1));
        assert!(matches!(short, Some(End::Fail(_))), "{short:?}");
    }
}
