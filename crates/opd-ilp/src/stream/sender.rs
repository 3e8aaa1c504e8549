//! The pure part of a STREAM sender: the exact arithmetic of
//! quoting and sending, and the reading of a receiver's answers. The I/O
//! side (sending Prepares through a peer, persisting progress) lives in
//! `opd-service`.
//!
//! It follows `@interledger/pay` (see `../shared/research/ilp.md` §1.5):
//!
//! 1. **Probe** with unfulfillable Prepares (a random condition) of
//!    10¹², 10¹¹, … 1: each authentic STREAM reply says how much arrived,
//!    which bounds the path's rate to `[received/sent, (received+1)/sent)`
//!    ([`RateBounds`]); an F08 with data gives the path's maximum packet
//!    amount ([`MaxPacket`]).
//! 2. **Quote** against a minimum rate, the external rate less slippage
//!    ([`min_rate`]); a probed rate below it fails the quote.
//! 3. **Send** fulfillable packets within the maximum, each asking the
//!    receiver (STREAM `prepareAmount`) for at least the amount at the
//!    minimum rate ([`min_delivery`]). Packets are sized by the probed rate
//!    (its low bound), so the last one delivers what is left and no more:
//!    a receiver with an `incomingAmount` refuses the excess.
//!
//! A receiver answers a probe with a Reject carrying its encrypted STREAM
//! reply: F99 (RFC 29, `stream-receiver` up to 0.3.3-alpha.3, opd) or F05
//! (`stream-receiver` 0.3.3-alpha.4, current Rafiki). Both count when the
//! reply decrypts and answers this request ([`read_answer`]).
//!
//! Rates are exact fractions of u64 numbers, compared by cross
//! multiplication in u128: no floating point anywhere.

use std::cmp::Ordering;

use crate::error_code::ErrorCode;
use crate::packet::{AmountTooLarge, Fulfill, PacketType, Reject};
use crate::stream::{Frame, StreamPacket};

/// An exact non-negative fraction `num / den` (`den > 0`).
#[derive(Debug, Clone, Copy)]
pub struct Ratio {
    num: u128,
    den: u128,
}

impl Ratio {
    /// `num / den`; `None` when `den` is zero.
    pub fn new(num: u128, den: u128) -> Option<Self> {
        (den > 0).then_some(Self { num, den })
    }

    /// The numerator.
    pub fn num(self) -> u128 {
        self.num
    }

    /// The denominator.
    pub fn den(self) -> u128 {
        self.den
    }

    /// `floor(amount × self)`, or `None` past u64.
    pub fn floor_mul(self, amount: u64) -> Option<u64> {
        let product = u128::from(amount).checked_mul(self.num)?;
        u64::try_from(product / self.den).ok()
    }

    /// `ceil(amount × self)`, or `None` past u64.
    pub fn ceil_mul(self, amount: u64) -> Option<u64> {
        let product = u128::from(amount).checked_mul(self.num)?;
        u64::try_from(product.div_ceil(self.den)).ok()
    }

    /// `ceil(amount / self)`, or `None` for a zero rate or past u64.
    pub fn ceil_div(self, amount: u64) -> Option<u64> {
        if self.num == 0 {
            return None;
        }
        let product = u128::from(amount).checked_mul(self.den)?;
        u64::try_from(product.div_ceil(self.num)).ok()
    }
}

impl PartialEq for Ratio {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Ratio {}

impl PartialOrd for Ratio {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Ratio {
    fn cmp(&self, other: &Self) -> Ordering {
        // Every ratio the sender builds has u64-sized parts, so the
        // products fit; saturation keeps any other input ordered sanely.
        let left = self.num.saturating_mul(other.den);
        let right = other.num.saturating_mul(self.den);
        left.cmp(&right)
    }
}

/// What the probes so far say about the path's exchange rate, as
/// destination units per source unit: at least `low`, below `high`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateBounds {
    /// The rate is at least this.
    pub low: Ratio,
    /// The rate is below this.
    pub high: Ratio,
}

impl RateBounds {
    /// The bounds one answer gives: `received` arrived of `sent`.
    pub fn from_probe(sent: u64, received: u64) -> Option<Self> {
        let sent = u128::from(sent);
        Some(Self {
            low: Ratio::new(u128::from(received), sent)?,
            high: Ratio::new(u128::from(received) + 1, sent)?,
        })
    }

    /// Narrows the bounds with another answer. Answers that contradict the
    /// bounds (the rate moved) replace them, as `@interledger/pay` does.
    pub fn narrow(self, sent: u64, received: u64) -> Self {
        let Some(new) = Self::from_probe(sent, received) else {
            return self;
        };
        let low = self.low.max(new.low);
        let high = self.high.min(new.high);
        if low < high {
            Self { low, high }
        } else {
            new
        }
    }
}

/// What is known of the largest packet the path carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MaxPacket {
    /// No hop refused a packet as too large.
    Unknown,
    /// A hop said exactly how much it takes (F08 with data).
    Precise(u64),
    /// A packet of one more than this was refused without details.
    Imprecise(u64),
}

impl MaxPacket {
    /// The largest amount worth sending now.
    pub fn limit(self) -> u64 {
        match self {
            Self::Unknown => u64::MAX,
            Self::Precise(m) | Self::Imprecise(m) => m,
        }
    }

    /// Learns from an F08 to a packet of `sent` source units. With data,
    /// the hop's maximum in its own units is scaled back to source units:
    /// `floor(max × sent / received)`.
    pub fn learn(self, sent: u64, too_large: Option<&AmountTooLarge>) -> Self {
        let learned = match too_large {
            Some(d) if d.received_amount > 0 => {
                let scaled =
                    u128::from(d.maximum_amount) * u128::from(sent) / u128::from(d.received_amount);
                Self::Precise(u64::try_from(scaled).unwrap_or(u64::MAX))
            }
            _ => Self::Imprecise(sent.saturating_sub(1)),
        };
        if learned.limit() < self.limit() {
            learned
        } else {
            self
        }
    }
}

/// A probe's STREAM request: nothing asked of the receiver, and a
/// ConnectionNewAddress so that it states its asset.
pub fn probe_request(sequence: u64) -> StreamPacket {
    StreamPacket {
        sequence,
        ilp_packet_type: PacketType::Prepare,
        prepare_amount: 0,
        frames: vec![Frame::ConnectionNewAddress {
            source_account: String::new(),
        }],
    }
}

/// A payment packet's STREAM request: money on stream 1, at least
/// `min_delivery` to arrive.
pub fn money_request(sequence: u64, min_delivery: u64) -> StreamPacket {
    StreamPacket {
        sequence,
        ilp_packet_type: PacketType::Prepare,
        prepare_amount: min_delivery,
        frames: vec![Frame::StreamMoney {
            stream_id: 1,
            shares: 1,
        }],
    }
}

/// The probe amounts, largest first, within the maximum packet amount.
pub fn probe_amounts(max: MaxPacket) -> impl Iterator<Item = u64> {
    (0..=12u32)
        .rev()
        .map(|e| 10u64.pow(e))
        .filter(move |a| *a <= max.limit())
}

/// The least rate the sender accepts, in destination units per source
/// unit: `external × (1 − slippage) × 10^(dst_scale − src_scale)`, where
/// `external` is the price ratio of the two assets as an exact fraction
/// and `slippage_basis_points` is out of 10 000. `None` past u128.
pub fn min_rate(
    external: Ratio,
    slippage_basis_points: u16,
    src_scale: u8,
    dst_scale: u8,
) -> Option<Ratio> {
    let keep = 10_000u128.checked_sub(u128::from(slippage_basis_points))?;
    let mut num = external.num.checked_mul(keep)?;
    let mut den = external.den.checked_mul(10_000)?;
    if dst_scale >= src_scale {
        num = num.checked_mul(10u128.checked_pow(u32::from(dst_scale - src_scale))?)?;
    } else {
        den = den.checked_mul(10u128.checked_pow(u32::from(src_scale - dst_scale))?)?;
    }
    let g = gcd(num, den);
    Ratio::new(num / g.max(1), den / g.max(1))
}

fn gcd(mut a: u128, mut b: u128) -> u128 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// The least a packet of `amount` source units must deliver at `rate`:
/// `ceil(amount × rate)`; the receiver refuses less (F99), so the sender
/// never pays for a worse rate than it quoted.
pub fn min_delivery(amount: u64, rate: Ratio) -> Option<u64> {
    rate.ceil_mul(amount)
}

/// Why a quote cannot be made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum QuoteError {
    /// The probed rate is below the minimum.
    #[error("the path's exchange rate is below the minimum acceptable rate")]
    InsufficientExchangeRate,
    /// Nothing would arrive.
    #[error("the amount is too small to deliver anything at the minimum rate")]
    AmountTooSmall,
    /// An amount would not fit in a u64.
    #[error("an amount computation exceeds 64 bits")]
    Overflow,
}

/// The amounts of a quote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QuotedAmounts {
    /// Most the sender sends.
    pub max_source: u64,
    /// Least the receiver gets.
    pub min_delivery: u64,
}

/// Checks the probed rate against the minimum.
pub fn check_rate(probed: RateBounds, minimum: Ratio) -> Result<(), QuoteError> {
    if probed.low < minimum {
        Err(QuoteError::InsufficientExchangeRate)
    } else {
        Ok(())
    }
}

/// A fixed-send quote: send exactly `amount`; the receiver gets at least
/// `floor(amount × minimum)` (rounding per packet can cost up to one unit
/// in every packet, which the probed rate must cover: see [`check_rate`]).
pub fn fixed_send(amount: u64, minimum: Ratio) -> Result<QuotedAmounts, QuoteError> {
    let min_delivery = minimum.floor_mul(amount).ok_or(QuoteError::Overflow)?;
    if min_delivery == 0 {
        return Err(QuoteError::AmountTooSmall);
    }
    Ok(QuotedAmounts {
        max_source: amount,
        min_delivery,
    })
}

/// A fixed-delivery quote: the receiver gets `amount`; the sender sends at
/// most `ceil(amount / minimum)`.
pub fn fixed_delivery(amount: u64, minimum: Ratio) -> Result<QuotedAmounts, QuoteError> {
    if amount == 0 {
        return Err(QuoteError::AmountTooSmall);
    }
    let max_source = minimum
        .ceil_div(amount)
        .ok_or(QuoteError::InsufficientExchangeRate)?;
    Ok(QuotedAmounts {
        max_source,
        min_delivery: amount,
    })
}

/// What a receiver's answer to one request says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// The packet was fulfilled: its fulfillment hashes to the condition.
    Fulfilled {
        /// What the receiver's authentic reply says arrived, in its units;
        /// `None` when the reply is missing or does not decrypt (then only
        /// the request's minimum is proven: see [`delivery`]).
        claimed: Option<u64>,
        /// The reply's frames.
        frames: Vec<Frame>,
    },
    /// A Fulfill whose fulfillment does not hash to the Prepare's
    /// condition: no proof of anything, so a reject (F05) for the sender.
    Forged,
    /// The receiver saw the packet and refused it (a probe's answer, or
    /// less than the minimum arrived): F99 or F05 with an authentic reply.
    Refused {
        /// F99 or F05.
        code: ErrorCode,
        /// What arrived, in the receiver's units.
        received: u64,
        /// The reply's frames (asset details, a close).
        frames: Vec<Frame>,
    },
    /// A hop said the packet was too large (F08).
    TooLarge(Option<AmountTooLarge>),
    /// A temporary error (T..): try again later.
    Temporary(ErrorCode),
    /// A final or relative error without an authentic reply.
    Failed(ErrorCode),
}

/// What a fulfilled packet counts as delivered, in the receiver's units.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delivery {
    /// This much is counted as delivered.
    Counted(u64),
    /// The receiver fulfilled while claiming less than the request's
    /// minimum, which an honest STREAM receiver never does (it refuses
    /// such a packet): what it claimed is counted (the money left either
    /// way), and the sender should stop paying it.
    Short(u64),
}

/// What a fulfilled packet counts as delivered. `claimed` is the authentic
/// reply's amount (`None` without one), `minimum` the request's
/// `prepareAmount` (a valid fulfillment proves at least that arrived:
/// the receiver checks it before fulfilling), and `most` what the packet
/// could deliver at all (its amount at the path's rate, and no more than
/// the payment still expects): a claim is never counted above it, so no
/// total can run past what the payment asked for.
pub fn delivery(claimed: Option<u64>, minimum: u64, most: u64) -> Delivery {
    match claimed {
        None => Delivery::Counted(minimum.min(most)),
        Some(c) if c < minimum => Delivery::Short(c.min(most)),
        Some(c) => Delivery::Counted(c.min(most)),
    }
}

/// Reads the answer to the request numbered `sequence`, sent with
/// `condition`, on a connection with `shared_secret`. A Fulfill counts
/// only when its fulfillment hashes to `condition` (anyone on the path can
/// send a Fulfill; only the receiver knows the preimage). A reply that
/// does not decrypt, or answers another request, is ignored: only the
/// receiver can make an authentic one.
pub fn read_answer(
    shared_secret: &[u8; 32],
    sequence: u64,
    condition: &[u8; 32],
    answer: Result<&Fulfill, &Reject>,
) -> Answer {
    let authentic = |data: &[u8], expected: PacketType| {
        StreamPacket::decrypt_and_decode(shared_secret, data)
            .ok()
            .filter(|p| p.sequence == sequence && p.ilp_packet_type == expected)
    };
    match answer {
        Ok(fulfill) if crate::condition_of(&fulfill.fulfillment) != *condition => Answer::Forged,
        Ok(fulfill) => match authentic(&fulfill.data, PacketType::Fulfill) {
            Some(reply) => Answer::Fulfilled {
                claimed: Some(reply.prepare_amount),
                frames: reply.frames,
            },
            None => Answer::Fulfilled {
                claimed: None,
                frames: Vec::new(),
            },
        },
        Err(reject) => {
            let code = reject.code;
            if code == ErrorCode::F08_AMOUNT_TOO_LARGE {
                return Answer::TooLarge(AmountTooLarge::decode(&reject.data).ok());
            }
            let receiver_code =
                code == ErrorCode::F99_APPLICATION_ERROR || code == ErrorCode::F05_WRONG_CONDITION;
            match (receiver_code, authentic(&reject.data, PacketType::Reject)) {
                (true, Some(reply)) => Answer::Refused {
                    code,
                    received: reply.prepare_amount,
                    frames: reply.frames,
                },
                _ if code.class() == crate::error_code::ErrorClass::Temporary => {
                    Answer::Temporary(code)
                }
                _ => Answer::Failed(code),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(num: u128, den: u128) -> Ratio {
        Ratio::new(num, den).unwrap()
    }

    #[test]
    fn ratios_keep_their_parts_and_compare_by_value() {
        assert_eq!((r(3, 4).num(), r(3, 4).den()), (3, 4));
        assert_ne!(r(1, 2), r(1, 3));
        // The minimum rate comes out in lowest terms (smaller numbers
        // overflow later in `floor_mul` and friends).
        let m = min_rate(r(3, 4), 0, 2, 2).unwrap();
        assert_eq!((m.num(), m.den()), (3, 4));
    }

    #[test]
    fn bounds_that_only_touch_are_replaced() {
        // [1, 2) and then [2, 3): no rate is in both, so the new answer wins.
        let bounds = RateBounds::from_probe(1, 1).unwrap().narrow(1, 2);
        assert_eq!(bounds, RateBounds::from_probe(1, 2).unwrap());
    }

    #[test]
    fn max_packet_learning_edges() {
        // An F08 that says nothing arrived cannot be scaled: imprecise.
        let zero = AmountTooLarge {
            received_amount: 0,
            maximum_amount: 5,
        };
        assert_eq!(
            MaxPacket::Unknown.learn(100, Some(&zero)),
            MaxPacket::Imprecise(99)
        );
        // The same limit learned imprecisely keeps the precise one.
        assert_eq!(
            MaxPacket::Precise(99).learn(100, None),
            MaxPacket::Precise(99)
        );
    }

    #[test]
    fn a_probed_rate_equal_to_the_minimum_is_enough() {
        let probed = RateBounds::from_probe(10, 9).unwrap();
        assert_eq!(check_rate(probed, r(9, 10)), Ok(()));
    }

    #[test]
    fn ratios_compare_and_round_exactly() {
        assert_eq!(r(1, 3), r(2, 6));
        assert!(r(1, 3) < r(334, 1000));
        assert_eq!(r(9, 10).floor_mul(1001), Some(900));
        assert_eq!(r(9, 10).ceil_mul(1001), Some(901));
        assert_eq!(r(9, 10).ceil_div(900), Some(1000));
        assert_eq!(r(9, 10).ceil_div(901), Some(1002));
        assert_eq!(r(0, 1).ceil_div(1), None);
        assert_eq!(r(2, 1).ceil_mul(u64::MAX), None);
        assert!(Ratio::new(1, 0).is_none());
    }

    #[test]
    fn probes_narrow_the_rate_and_moves_reset_it() {
        // A path at 0.9 with rounding down: 10^12 -> 9 * 10^11, 10 -> 9.
        let b = RateBounds::from_probe(1_000_000_000_000, 900_000_000_000).unwrap();
        let b = b.narrow(10, 9);
        assert_eq!(b.low, r(9, 10));
        assert_eq!(b.high, r(900_000_000_001, 1_000_000_000_000));
        // The rate moved to 0.8: the old bounds go.
        let moved = b.narrow(100, 80);
        assert_eq!(moved.low, r(8, 10));
        assert_eq!(moved.high, r(81, 100));
    }

    #[test]
    fn max_packet_is_learned_from_f08() {
        let m = MaxPacket::Unknown.learn(
            1_000,
            Some(&AmountTooLarge {
                received_amount: 900,
                maximum_amount: 450,
            }),
        );
        assert_eq!(m, MaxPacket::Precise(500));
        assert_eq!(m.learn(10_000, None), MaxPacket::Precise(500));
        assert_eq!(m.learn(300, None), MaxPacket::Imprecise(299));
        assert_eq!(
            probe_amounts(MaxPacket::Precise(500)).collect::<Vec<_>>(),
            vec![100, 10, 1]
        );
        assert_eq!(probe_amounts(MaxPacket::Unknown).count(), 13);
    }

    #[test]
    fn minimum_rates_and_quotes_are_exact() {
        // USD (scale 2) to EUR (scale 2) at 0.9 with 1 % slippage: 0.891.
        let min = min_rate(r(9, 10), 100, 2, 2).unwrap();
        assert_eq!(min, r(891, 1000));
        // Scale 2 to scale 9 multiplies by 10^7.
        assert_eq!(min_rate(r(1, 1), 0, 2, 9).unwrap(), r(10_000_000, 1));
        assert_eq!(min_rate(r(1, 1), 0, 9, 2).unwrap(), r(1, 10_000_000));
        assert_eq!(
            fixed_send(1000, min),
            Ok(QuotedAmounts {
                max_source: 1000,
                min_delivery: 891
            })
        );
        assert_eq!(fixed_send(1, min), Err(QuoteError::AmountTooSmall));
        assert_eq!(
            fixed_delivery(891, min),
            Ok(QuotedAmounts {
                max_source: 1000,
                min_delivery: 891
            })
        );
        assert_eq!(fixed_delivery(892, min).unwrap().max_source, 1002);
        assert_eq!(min_delivery(112, min), Some(100));
        let probed = RateBounds::from_probe(1000, 890).unwrap();
        assert_eq!(
            check_rate(probed, min),
            Err(QuoteError::InsufficientExchangeRate)
        );
        let probed = RateBounds::from_probe(1000, 900).unwrap();
        assert_eq!(check_rate(probed, min), Ok(()));
    }

    #[test]
    fn a_fulfill_counts_only_with_the_preimage_of_the_condition() {
        let secret = [3u8; 32];
        let fulfillment = [9u8; 32];
        let condition = crate::condition_of(&fulfillment);
        let reply = StreamPacket {
            sequence: 7,
            ilp_packet_type: PacketType::Fulfill,
            prepare_amount: 55,
            frames: Vec::new(),
        };
        let data = reply.encrypt_with(&secret, [1; 12]).unwrap();
        let honest = Fulfill {
            fulfillment,
            data: data.clone(),
        };
        assert_eq!(
            read_answer(&secret, 7, &condition, Ok(&honest)),
            Answer::Fulfilled {
                claimed: Some(55),
                frames: Vec::new()
            }
        );
        let forged = Fulfill {
            fulfillment: [8; 32],
            data,
        };
        assert_eq!(
            read_answer(&secret, 7, &condition, Ok(&forged)),
            Answer::Forged
        );
        let garbled = Fulfill {
            fulfillment,
            data: vec![1, 2, 3],
        };
        assert_eq!(
            read_answer(&secret, 7, &condition, Ok(&garbled)),
            Answer::Fulfilled {
                claimed: None,
                frames: Vec::new()
            }
        );
    }

    #[test]
    fn rejects_are_read_by_code_and_reply() {
        let secret = [3u8; 32];
        let condition = [0u8; 32];
        let reply = StreamPacket {
            sequence: 7,
            ilp_packet_type: PacketType::Reject,
            prepare_amount: 42,
            frames: Vec::new(),
        };
        let data = reply.encrypt_with(&secret, [1; 12]).unwrap();
        let reject = |code: ErrorCode, data: &[u8]| Reject {
            code,
            triggered_by: None,
            message: String::new(),
            data: data.to_vec(),
        };
        // Both receiver codes carry the amount that arrived.
        for code in [
            ErrorCode::F99_APPLICATION_ERROR,
            ErrorCode::F05_WRONG_CONDITION,
        ] {
            assert_eq!(
                read_answer(&secret, 7, &condition, Err(&reject(code, &data))),
                Answer::Refused {
                    code,
                    received: 42,
                    frames: Vec::new()
                }
            );
        }
        // A reply to another request proves nothing.
        let f99 = reject(ErrorCode::F99_APPLICATION_ERROR, &data);
        assert_eq!(
            read_answer(&secret, 8, &condition, Err(&f99)),
            Answer::Failed(ErrorCode::F99_APPLICATION_ERROR)
        );
        // Without a reply: temporary or not by the code's class.
        let t04 = reject(ErrorCode::T04_INSUFFICIENT_LIQUIDITY, &[]);
        assert_eq!(
            read_answer(&secret, 7, &condition, Err(&t04)),
            Answer::Temporary(ErrorCode::T04_INSUFFICIENT_LIQUIDITY)
        );
        let f02 = reject(ErrorCode::F02_UNREACHABLE, &data);
        assert_eq!(
            read_answer(&secret, 7, &condition, Err(&f02)),
            Answer::Failed(ErrorCode::F02_UNREACHABLE)
        );
    }

    #[test]
    fn claims_are_clamped_and_short_ones_flagged() {
        // No authentic reply: only the minimum is proven.
        assert_eq!(delivery(None, 90, 100), Delivery::Counted(90));
        assert_eq!(delivery(None, 90, 50), Delivery::Counted(50));
        // A claim above what the packet could deliver counts as that.
        assert_eq!(delivery(Some(u64::MAX), 90, 100), Delivery::Counted(100));
        assert_eq!(delivery(Some(95), 90, 100), Delivery::Counted(95));
        // Fulfilled while claiming less than the minimum: flagged.
        assert_eq!(delivery(Some(0), 90, 100), Delivery::Short(0));
        assert_eq!(delivery(Some(89), 90, 100), Delivery::Short(89));
    }
}
