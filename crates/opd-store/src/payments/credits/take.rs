//! The payment's rule applied to packets in arrival order
//! ([`take_in_order`]): pure, so unit-tested here; every credit takes its
//! packets this way.

use opd_core::incoming_payment::{IncomingPayment, Receivable};
use opd_core::Timestamp;

/// One arrival of money for an incoming payment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Packet {
    /// Taken from the source, in its asset.
    pub(crate) amount: u64,
    /// Credited to the incoming payment, in its asset.
    pub(crate) deliver: u64,
    pub(crate) at: Timestamp,
}

/// Each packet's answer by the payment's rule, and the sums taken.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Taken {
    /// The payment as each taken packet left it, or why it was refused.
    pub(crate) answers: Vec<Result<IncomingPayment, Receivable>>,
    /// From the source, in its asset.
    pub(crate) amount: u64,
    /// To the receiver, in the payment's asset.
    pub(crate) deliver: u64,
    /// When the last taken packet arrived.
    pub(crate) at: Timestamp,
}

impl Taken {
    /// Whether any packet was taken.
    pub(crate) fn any(&self) -> bool {
        self.answers.iter().any(Result::is_ok)
    }
}

/// Takes each packet by `payment`'s rule, in arrival order, leaving
/// `payment` as the last taken one left it. `None` when the sums taken
/// would pass u64::MAX.
pub(crate) fn take_in_order(payment: &mut IncomingPayment, packets: &[Packet]) -> Option<Taken> {
    let mut taken = Taken {
        answers: Vec::with_capacity(packets.len()),
        amount: 0,
        deliver: 0,
        at: payment.updated_at,
    };
    for p in packets {
        match payment.receive(p.deliver, p.at) {
            Receivable::Yes {
                received,
                completes,
            } => {
                taken.amount = taken.amount.checked_add(p.amount)?;
                taken.deliver = taken.deliver.checked_add(p.deliver)?;
                taken.at = p.at;
                payment.received_amount = received;
                payment.completed = completes;
                payment.updated_at = p.at;
                taken.answers.push(Ok(payment.clone()));
            }
            refused => taken.answers.push(Err(refused)),
        }
    }
    Some(taken)
}

#[cfg(test)]
mod tests {
    use super::*;
    use opd_core::clock::SeededRandom;
    use opd_core::{Asset, IncomingPaymentId, WalletAddressId};

    const AT: Timestamp = Timestamp::from_unix_millis(1_000_000);

    fn payment(incoming: Option<u64>, received: u64) -> IncomingPayment {
        let random = SeededRandom::new(7);
        IncomingPayment {
            id: IncomingPaymentId::new(AT, &random),
            wallet_address_id: WalletAddressId::new(AT, &random),
            asset: Asset::parse("USD", 2).expect("asset"),
            incoming_amount: incoming,
            received_amount: received,
            completed: false,
            expires_at: AT.plus_millis(60_000),
            metadata: None,
            client: None,
            client_network: None,
            created_at: AT,
            updated_at: AT,
        }
    }

    fn packet(amount: u64, ms: i64) -> Packet {
        Packet {
            amount: amount + 1,
            deliver: amount,
            at: AT.plus_millis(ms),
        }
    }

    #[test]
    fn packets_are_taken_in_order_until_the_payment_is_full() {
        let mut p = payment(Some(100), 10);
        let taken = take_in_order(&mut p, &[packet(50, 1), packet(50, 2), packet(40, 3)])
            .expect("no overflow");
        assert!(taken.answers[0]
            .as_ref()
            .is_ok_and(|p| p.received_amount == 60));
        assert_eq!(taken.answers[1], Err(Receivable::TooMuch { room: 40 }));
        let last = taken.answers[2].as_ref().expect("taken");
        assert!(last.completed && last.received_amount == 100);
        // The sums are of the taken packets only, in each asset.
        assert_eq!((taken.amount, taken.deliver), (92, 90));
        assert_eq!(taken.at, packet(40, 3).at);
        assert!(p.completed && p.received_amount == 100 && p.updated_at == taken.at);
    }

    #[test]
    fn a_completed_payment_takes_nothing() {
        let mut p = payment(Some(100), 100);
        p.completed = true;
        let taken = take_in_order(&mut p, &[packet(1, 1)]).expect("no overflow");
        assert_eq!(taken.answers, vec![Err(Receivable::Closed)]);
        assert!(!taken.any());
        assert_eq!((taken.amount, taken.deliver), (0, 0));
    }

    #[test]
    fn sums_past_u64_max_are_refused_as_a_whole() {
        let mut p = payment(None, 0);
        let big = Packet {
            amount: u64::MAX,
            deliver: 1,
            at: AT,
        };
        assert_eq!(take_in_order(&mut p, &[big, big]), None);
    }
}
