//! The quote calculation: what a payment from a wallet address to a
//! receiver debits and delivers, with the sending fee.
//!
//! Rules (documented in `docs/money.md`):
//! - fixed send: the fee is taken from the gross `debitAmount`; the rest is
//!   converted and the delivery rounded **down**;
//! - fixed receive (or the receiver's remaining amount): the net debit that
//!   delivers at least the amount is rounded **up**, then the fee is added;
//! - a delivery of zero is `NonPositiveReceiveAmount`, with the least debit
//!   that would deliver one unit when one exists.

use crate::ids::{QuoteId, WalletAddressId};
use crate::money::{Amount, Asset, Fee, MoneyError, Rate};
use crate::time::Timestamp;

/// What the client fixed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QuoteTarget {
    /// `debitAmount`: the sender pays exactly this, fees included.
    FixedSend(Amount),
    /// `receiveAmount`: the receiver gets exactly this.
    FixedReceive(Amount),
    /// Neither: deliver what the receiver's `incomingAmount` still lacks.
    Remaining,
}

/// The receiver's side of a quote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReceiverTerms {
    pub asset: Asset,
    pub incoming_amount: Option<u64>,
    pub received_amount: u64,
}

impl ReceiverTerms {
    fn remaining(&self) -> Option<u64> {
        self.incoming_amount
            .map(|i| i.saturating_sub(self.received_amount))
    }
}

/// The fee of the sender's asset and the rate from the sender's asset to
/// the receiver's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pricing {
    pub fee: Fee,
    pub rate: Rate,
}

/// The computed amounts, in minor units.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QuotedAmounts {
    /// Debited from the sender, fee included.
    pub debit: u64,
    /// Delivered to the receiver.
    pub receive: u64,
    /// The sending fee, in the sender's asset.
    pub fee: u64,
    /// `debit - fee`: what is converted and sent.
    pub debit_minus_fees: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QuoteCalcError {
    #[error("debitAmount must be in the sending wallet address's asset {expected}")]
    DebitAssetMismatch { expected: Asset },
    #[error("receiveAmount must be in the receiver's asset {expected}")]
    ReceiveAssetMismatch { expected: Asset },
    #[error("{0} must be greater than 0")]
    ZeroAmount(&'static str),
    #[error("receiveAmount {requested} exceeds the {remaining} the receiver still expects")]
    ReceiveExceedsRemaining { requested: u64, remaining: u64 },
    #[error("debitAmount would deliver {delivered}, more than the {remaining} the receiver still expects")]
    DeliveryExceedsRemaining { delivered: u64, remaining: u64 },
    #[error("no amount was given and the receiver has no incomingAmount to infer one from")]
    NoAmount,
    #[error("the receiver has already received its incomingAmount")]
    NothingRemaining,
    #[error("non-positive receive amount")]
    NonPositiveReceiveAmount {
        /// The least `debitAmount` value that delivers at least one unit.
        min_send: Option<u64>,
    },
    #[error("amount overflows an unsigned 64-bit integer")]
    Overflow,
}

impl From<MoneyError> for QuoteCalcError {
    fn from(_: MoneyError) -> Self {
        QuoteCalcError::Overflow
    }
}

/// Computes a quote from the sender's asset, the receiver and the pricing.
pub fn calculate(
    sender: &Asset,
    receiver: &ReceiverTerms,
    target: &QuoteTarget,
    pricing: Pricing,
) -> Result<QuotedAmounts, QuoteCalcError> {
    match target {
        QuoteTarget::FixedSend(debit) => {
            if debit.asset != *sender {
                return Err(QuoteCalcError::DebitAssetMismatch {
                    expected: sender.clone(),
                });
            }
            if debit.value == 0 {
                return Err(QuoteCalcError::ZeroAmount("debitAmount"));
            }
            let fee = pricing.fee.on(debit.value)?;
            let net = debit.value.saturating_sub(fee);
            let receive = pricing
                .rate
                .convert_floor(net, sender.scale, receiver.asset.scale)?;
            if receive == 0 {
                return Err(QuoteCalcError::NonPositiveReceiveAmount {
                    min_send: min_send(sender, receiver, pricing),
                });
            }
            if let Some(remaining) = receiver.remaining() {
                if receive > remaining {
                    return Err(QuoteCalcError::DeliveryExceedsRemaining {
                        delivered: receive,
                        remaining,
                    });
                }
            }
            Ok(QuotedAmounts {
                debit: debit.value,
                receive,
                fee,
                debit_minus_fees: net,
            })
        }
        QuoteTarget::FixedReceive(receive) => {
            if receive.asset != receiver.asset {
                return Err(QuoteCalcError::ReceiveAssetMismatch {
                    expected: receiver.asset.clone(),
                });
            }
            if receive.value == 0 {
                return Err(QuoteCalcError::ZeroAmount("receiveAmount"));
            }
            if let Some(remaining) = receiver.remaining() {
                if receive.value > remaining {
                    return Err(QuoteCalcError::ReceiveExceedsRemaining {
                        requested: receive.value,
                        remaining,
                    });
                }
            }
            fixed_delivery(sender, receiver, receive.value, pricing)
        }
        QuoteTarget::Remaining => {
            let remaining = receiver.remaining().ok_or(QuoteCalcError::NoAmount)?;
            if remaining == 0 {
                return Err(QuoteCalcError::NothingRemaining);
            }
            fixed_delivery(sender, receiver, remaining, pricing)
        }
    }
}

fn fixed_delivery(
    sender: &Asset,
    receiver: &ReceiverTerms,
    receive: u64,
    pricing: Pricing,
) -> Result<QuotedAmounts, QuoteCalcError> {
    let net = pricing
        .rate
        .convert_ceil_inverse(receive, sender.scale, receiver.asset.scale)?;
    let fee = pricing.fee.on(net)?;
    let debit = net.checked_add(fee).ok_or(QuoteCalcError::Overflow)?;
    Ok(QuotedAmounts {
        debit,
        receive,
        fee,
        debit_minus_fees: net,
    })
}

/// The least gross debit that delivers one unit to the receiver.
fn min_send(sender: &Asset, receiver: &ReceiverTerms, pricing: Pricing) -> Option<u64> {
    let net = pricing
        .rate
        .convert_ceil_inverse(1, sender.scale, receiver.asset.scale)
        .ok()?;
    pricing.fee.min_gross_for_net(net.max(1))
}

/// A stored quote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Quote {
    pub id: QuoteId,
    pub wallet_address_id: WalletAddressId,
    /// The receiver URL exactly as the client gave it.
    pub receiver: String,
    pub debit_amount: Amount,
    pub receive_amount: Amount,
    pub fee: u64,
    pub debit_minus_fees: u64,
    pub client: Option<String>,
    pub created_at: Timestamp,
    pub expires_at: Timestamp,
}

impl Quote {
    pub fn is_expired(&self, now: Timestamp) -> bool {
        now >= self.expires_at
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn asset(code: &str, scale: u8) -> Asset {
        Asset::parse(code, i64::from(scale)).unwrap()
    }
    fn amount(v: u64, code: &str, scale: u8) -> Amount {
        Amount::new(v, asset(code, scale))
    }
    fn terms(code: &str, scale: u8, incoming: Option<u64>, received: u64) -> ReceiverTerms {
        ReceiverTerms {
            asset: asset(code, scale),
            incoming_amount: incoming,
            received_amount: received,
        }
    }
    fn pricing(fixed: u64, bp: u16, rate: &str) -> Pricing {
        Pricing {
            fee: Fee::new(fixed, bp).unwrap(),
            rate: Rate::parse(rate).unwrap(),
        }
    }

    #[test]
    fn fixed_receive_adds_fee_on_net() {
        // Reference example: incomingAmount 1000, fixed fee 150 and 200 bp -> debit 1170.
        let q = calculate(
            &asset("USD", 2),
            &terms("USD", 2, Some(1000), 0),
            &QuoteTarget::Remaining,
            pricing(150, 200, "1"),
        )
        .unwrap();
        assert_eq!(
            q,
            QuotedAmounts {
                debit: 1170,
                receive: 1000,
                fee: 170,
                debit_minus_fees: 1000
            }
        );
    }

    #[test]
    fn fixed_send_takes_fee_from_gross_and_floors_delivery() {
        let q = calculate(
            &asset("USD", 2),
            &terms("EUR", 2, None, 0),
            &QuoteTarget::FixedSend(amount(1000, "USD", 2)),
            pricing(50, 100, "0.91"),
        )
        .unwrap();
        // fee = ceil(1000 * 1%) + 50 = 60; net 940; 940 * 0.91 = 855.4 -> 855.
        assert_eq!(
            q,
            QuotedAmounts {
                debit: 1000,
                receive: 855,
                fee: 60,
                debit_minus_fees: 940
            }
        );
    }

    #[test]
    fn cross_currency_fixed_receive_ceils_debit() {
        let q = calculate(
            &asset("USD", 2),
            &terms("EUR", 2, None, 0),
            &QuoteTarget::FixedReceive(amount(500, "EUR", 2)),
            pricing(0, 0, "0.91"),
        )
        .unwrap();
        assert_eq!(q.debit, 550);
    }

    #[test]
    fn zero_delivery_reports_min_send() {
        let err = calculate(
            &asset("USD", 2),
            &terms("JPY", 0, None, 0),
            &QuoteTarget::FixedSend(amount(50, "USD", 2)),
            pricing(0, 0, "1.5"),
        )
        .unwrap_err();
        // 1 JPY needs ceil(100 / 1.5) = 67 cents.
        assert_eq!(
            err,
            QuoteCalcError::NonPositiveReceiveAmount { min_send: Some(67) }
        );
        let err = calculate(
            &asset("USD", 2),
            &terms("USD", 2, None, 0),
            &QuoteTarget::FixedSend(amount(10, "USD", 2)),
            pricing(10, 0, "1"),
        )
        .unwrap_err();
        assert_eq!(
            err,
            QuoteCalcError::NonPositiveReceiveAmount { min_send: Some(11) }
        );
    }

    #[test]
    fn a_quote_expires_at_its_expiry_instant() {
        let now = Timestamp::from_unix_millis(10_000);
        let random = crate::clock::SeededRandom::new(2);
        let quote = Quote {
            id: QuoteId::new(now, &random),
            wallet_address_id: WalletAddressId::new(now, &random),
            receiver: "https://rs.example/incoming-payments/1".into(),
            debit_amount: amount(100, "USD", 2),
            receive_amount: amount(100, "USD", 2),
            fee: 0,
            debit_minus_fees: 100,
            client: None,
            created_at: now,
            expires_at: now.plus_millis(60_000),
        };
        assert!(!quote.is_expired(now));
        assert!(quote.is_expired(quote.expires_at));
    }

    #[test]
    fn exactly_the_remaining_amount_may_be_quoted() {
        let r = terms("USD", 2, Some(1000), 400);
        let p = pricing(0, 0, "1");
        let usd = asset("USD", 2);
        let send = calculate(&usd, &r, &QuoteTarget::FixedSend(amount(600, "USD", 2)), p);
        assert_eq!(send.map(|q| q.receive), Ok(600));
        let receive = QuoteTarget::FixedReceive(amount(600, "USD", 2));
        assert_eq!(calculate(&usd, &r, &receive, p).map(|q| q.debit), Ok(600));
    }

    #[test]
    fn overpaying_and_wrong_assets_are_refused() {
        let r = terms("USD", 2, Some(1000), 400);
        let p = pricing(0, 0, "1");
        let usd = asset("USD", 2);
        assert_eq!(
            calculate(&usd, &r, &QuoteTarget::FixedSend(amount(700, "USD", 2)), p),
            Err(QuoteCalcError::DeliveryExceedsRemaining {
                delivered: 700,
                remaining: 600
            })
        );
        assert_eq!(
            calculate(
                &usd,
                &r,
                &QuoteTarget::FixedReceive(amount(601, "USD", 2)),
                p
            ),
            Err(QuoteCalcError::ReceiveExceedsRemaining {
                requested: 601,
                remaining: 600
            })
        );
        assert_eq!(
            calculate(&usd, &r, &QuoteTarget::Remaining, p)
                .unwrap()
                .receive,
            600
        );
        assert!(matches!(
            calculate(&usd, &r, &QuoteTarget::FixedSend(amount(1, "EUR", 2)), p),
            Err(QuoteCalcError::DebitAssetMismatch { .. })
        ));
        assert!(matches!(
            calculate(&usd, &r, &QuoteTarget::FixedReceive(amount(1, "USD", 3)), p),
            Err(QuoteCalcError::ReceiveAssetMismatch { .. })
        ));
        assert_eq!(
            calculate(&usd, &terms("USD", 2, None, 0), &QuoteTarget::Remaining, p),
            Err(QuoteCalcError::NoAmount)
        );
        assert_eq!(
            calculate(&usd, &r, &QuoteTarget::FixedSend(amount(0, "USD", 2)), p),
            Err(QuoteCalcError::ZeroAmount("debitAmount"))
        );
    }

    #[test]
    fn overflow_is_an_error_not_a_wrap() {
        let r = terms("USD", 2, None, 0);
        assert_eq!(
            calculate(
                &asset("USD", 2),
                &r,
                &QuoteTarget::FixedReceive(amount(u64::MAX, "USD", 2)),
                pricing(1, 0, "1")
            ),
            Err(QuoteCalcError::Overflow)
        );
        assert_eq!(
            calculate(
                &asset("USD", 0),
                &r,
                &QuoteTarget::FixedSend(amount(u64::MAX, "USD", 0)),
                pricing(0, 0, "1")
            ),
            Err(QuoteCalcError::Overflow)
        );
    }
}
