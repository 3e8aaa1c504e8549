//! Whether an outgoing payment may be created, and what it is, decided on
//! plain values read beforehand (the quote, the wallet address, the grant,
//! the time): every refusal here is testable without a store. `create` in
//! the parent reads those values, and stores what is decided here.

use opd_core::outgoing_payment::{
    CreateOutgoing, GrantReservation, GrantSpent, OutgoingPayment, OutgoingPaymentState,
};
use opd_core::quote::Quote;
use opd_core::{Amount, OutgoingPaymentId, Timestamp, WalletAddressId};

use super::{GrantContext, NewOutgoingPayment};
use crate::payments::incoming::check_metadata;
use crate::payments::receivers::Unpayable;
use crate::ServiceError;

fn refused(code: &'static str, message: String) -> ServiceError {
    ServiceError::Forbidden { code, message }
}

fn invalid_quote(message: &str) -> ServiceError {
    ServiceError::InvalidQuote(message.to_owned())
}

/// Whether a quote the client named can be paid from `wallet` at `now`:
/// it is that wallet address's, unexpired, and its receiver (when it is
/// one of ours, as read just before) can still be paid.
pub(super) fn usable_quote(
    quote: &Quote,
    wallet: WalletAddressId,
    receiver: Result<(), Unpayable>,
    now: Timestamp,
) -> Result<(), ServiceError> {
    if quote.wallet_address_id != wallet {
        return Err(invalid_quote("the quote is for another wallet address"));
    }
    if quote.is_expired(now) {
        return Err(invalid_quote("the quote has expired"));
    }
    receiver.map_err(|why| ServiceError::InvalidQuote(format!("the quote's receiver: {why}")))
}

/// A payment decided on: what to store, and what it reserves against its
/// grant.
#[derive(Debug)]
pub(super) struct Planned {
    pub payment: OutgoingPayment,
    pub reservation: Option<GrantReservation>,
}

/// The payment `input` makes on `quote` from `wallet` at `now`, or why it
/// may not be made (its metadata, its grant). It starts waiting for
/// outside funds when `external_funding`, sending otherwise.
pub(super) fn plan(
    input: NewOutgoingPayment,
    quote: &Quote,
    wallet: WalletAddressId,
    external_funding: bool,
    now: Timestamp,
) -> Result<Planned, ServiceError> {
    check_metadata(&input.metadata)?;
    let reservation = input
        .grant
        .as_ref()
        .map(|g| {
            reservation(
                g,
                &quote.receiver,
                &quote.debit_amount,
                &quote.receive_amount,
                now,
            )
        })
        .transpose()?;
    let payment = OutgoingPayment {
        // One quote, one payment: the payment takes the quote's id.
        id: OutgoingPaymentId::from_uuid(*quote.id.as_uuid()),
        wallet_address_id: wallet,
        quote_id: quote.id,
        receiver: quote.receiver.clone(),
        debit: quote.debit_amount.clone(),
        receive: quote.receive_amount.clone(),
        sent: 0,
        delivered: 0,
        receiver_baseline: None,
        state: if external_funding {
            OutgoingPaymentState::Funding
        } else {
            OutgoingPaymentState::Sending
        },
        error: None,
        metadata: input.metadata,
        client: input.client,
        grant_id: reservation.as_ref().map(|g| g.grant_id.clone()),
        grant_interval_start: reservation.as_ref().map(|g| g.interval_start),
        attempts: 0,
        next_attempt_at: now,
        created_at: now,
        updated_at: now,
    };
    Ok(Planned {
        payment,
        reservation,
    })
}

/// The reservation a payment makes against its grant, or why the grant
/// does not allow it at all.
fn reservation(
    grant: &GrantContext,
    receiver: &str,
    debit: &Amount,
    receive: &Amount,
    at: Timestamp,
) -> Result<GrantReservation, ServiceError> {
    let mut r = GrantReservation {
        grant_id: grant.grant_id.clone(),
        interval_start: Timestamp::from_unix_millis(0),
        interval_end: None,
        debit_limit: None,
        receive_limit: None,
    };
    let Some(limits) = &grant.limits else {
        return Ok(r);
    };
    if limits
        .receiver
        .as_deref()
        .is_some_and(|allowed| allowed != receiver)
    {
        return Err(refused(
            "insufficient_grant",
            "the grant only allows payments to another receiver".into(),
        ));
    }
    if let Some(limit) = &limits.debit_amount {
        if limit.asset != debit.asset {
            return Err(refused(
                "insufficient_grant",
                format!("the grant's debit limit is in {}", limit.asset),
            ));
        }
        r.debit_limit = Some(limit.value);
    }
    if let Some(limit) = &limits.receive_amount {
        if limit.asset != receive.asset {
            return Err(refused(
                "insufficient_grant",
                format!("the grant's receive limit is in {}", limit.asset),
            ));
        }
        r.receive_limit = Some(limit.value);
    }
    if let Some(interval) = &limits.interval {
        let (start, end) = interval.interval_at(at).ok_or_else(|| {
            refused(
                "insufficient_grant",
                "the grant's interval does not cover this time".into(),
            )
        })?;
        r.interval_start = start;
        r.interval_end = Some(end);
    }
    Ok(r)
}

/// What the store's answer to storing `payment` means: what the grant had
/// spent before it, or why nothing was stored.
pub(super) fn stored(
    outcome: CreateOutgoing,
    payment: &OutgoingPayment,
) -> Result<GrantSpent, ServiceError> {
    match outcome {
        CreateOutgoing::Created { spent_before } => Ok(spent_before),
        CreateOutgoing::QuoteUsed => Err(invalid_quote("the quote was already used for a payment")),
        CreateOutgoing::InsufficientBalance { available } => {
            Err(ServiceError::InsufficientBalance {
                available: Amount::new(available, payment.debit.asset.clone()),
                required: payment.debit.clone(),
            })
        }
        CreateOutgoing::Overflow => Err(ServiceError::AmountOverflow),
        CreateOutgoing::LimitExceeded { .. } => Err(refused(
            "insufficient_grant",
            "the payment would exceed the grant's limits".into(),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use opd_core::incoming_payment::Metadata;
    use opd_core::{Asset, QuoteId};
    use opd_gnap::{OutgoingLimits, RepeatingInterval};
    use uuid::Uuid;

    const RECEIVER: &str = "https://bank.example/incoming-payments/1";
    const NOW: Timestamp = Timestamp::from_unix_millis(1_700_000_000_000);

    fn usd(value: u64) -> Amount {
        Amount::new(value, Asset::parse("USD", 2).unwrap())
    }

    fn eur(value: u64) -> Amount {
        Amount::new(value, Asset::parse("EUR", 2).unwrap())
    }

    fn wallet(n: u128) -> WalletAddressId {
        WalletAddressId::from_uuid(Uuid::from_u128(n))
    }

    fn quote(debit: u64, receive: Amount) -> Quote {
        Quote {
            id: QuoteId::from_uuid(Uuid::from_u128(7)),
            wallet_address_id: wallet(1),
            receiver: RECEIVER.to_owned(),
            debit_amount: usd(debit),
            receive_amount: receive,
            fee: 0,
            debit_minus_fees: debit,
            client: None,
            created_at: NOW.plus_millis(-1_000),
            expires_at: NOW.plus_millis(60_000),
        }
    }

    fn input(grant: Option<GrantContext>, metadata: Option<Metadata>) -> NewOutgoingPayment {
        NewOutgoingPayment {
            wallet_address: "https://bank.example/alice".to_owned(),
            source: super::super::PaymentSource::Quote("q".to_owned()),
            metadata,
            client: Some("https://client.example".to_owned()),
            grant,
        }
    }

    fn grant(limits: OutgoingLimits) -> Option<GrantContext> {
        Some(GrantContext {
            grant_id: "g1".to_owned(),
            limits: Some(limits),
        })
    }

    fn no_limits() -> OutgoingLimits {
        OutgoingLimits {
            receiver: None,
            debit_amount: None,
            receive_amount: None,
            interval: None,
        }
    }

    fn refusal(result: Result<Planned, ServiceError>) -> String {
        match result {
            Err(ServiceError::Forbidden { code, message }) => format!("{code}: {message}"),
            other => panic!("not a grant refusal: {other:?}"),
        }
    }

    #[test]
    fn a_named_quote_must_be_the_wallets_unexpired_and_payable() {
        let q = quote(100, usd(100));
        assert!(usable_quote(&q, wallet(1), Ok(()), NOW).is_ok());
        let message = |r: Result<(), ServiceError>| match r {
            Err(ServiceError::InvalidQuote(m)) => m,
            other => panic!("{other:?}"),
        };
        let other = usable_quote(&q, wallet(2), Err(Unpayable::Completed), NOW);
        assert_eq!(message(other), "the quote is for another wallet address");
        // Expired at its expiry exactly; usable a millisecond before.
        let at_expiry = usable_quote(&q, wallet(1), Ok(()), q.expires_at);
        assert_eq!(message(at_expiry), "the quote has expired");
        let just_before = q.expires_at.plus_millis(-1);
        assert!(usable_quote(&q, wallet(1), Ok(()), just_before).is_ok());
        let gone = usable_quote(&q, wallet(1), Err(Unpayable::Expired), NOW);
        assert_eq!(
            message(gone),
            "the quote's receiver: the incoming payment has expired"
        );
    }

    #[test]
    fn a_payment_takes_the_quotes_terms_and_starts_sending_or_funding() {
        let q = quote(u64::MAX, eur(1));
        let planned = plan(input(None, None), &q, wallet(1), false, NOW).unwrap();
        let p = &planned.payment;
        assert_eq!(p.id.as_uuid(), q.id.as_uuid());
        assert_eq!(
            (p.debit.clone(), p.receive.clone()),
            (usd(u64::MAX), eur(1))
        );
        assert_eq!((p.sent, p.delivered), (0, 0));
        assert_eq!(p.state, OutgoingPaymentState::Sending);
        assert_eq!((p.created_at, p.next_attempt_at), (NOW, NOW));
        assert_eq!(p.client.as_deref(), Some("https://client.example"));
        assert_eq!((p.grant_id.clone(), planned.reservation), (None, None));
        let funding = plan(input(None, None), &q, wallet(1), true, NOW).unwrap();
        assert_eq!(funding.payment.state, OutgoingPaymentState::Funding);
    }

    #[test]
    fn a_grant_without_limits_reserves_over_its_whole_life() {
        let g = Some(GrantContext {
            grant_id: "g1".to_owned(),
            limits: None,
        });
        let planned = plan(input(g, None), &quote(5, usd(5)), wallet(1), false, NOW).unwrap();
        let r = planned.reservation.unwrap();
        assert_eq!(r.interval_start, Timestamp::from_unix_millis(0));
        assert_eq!(
            (r.interval_end, r.debit_limit, r.receive_limit),
            (None, None, None)
        );
        assert_eq!(planned.payment.grant_id.as_deref(), Some("g1"));
    }

    #[test]
    fn a_grants_limits_are_reserved_in_the_interval_containing_now() {
        let limits = OutgoingLimits {
            receiver: Some(RECEIVER.to_owned()),
            debit_amount: Some(usd(0)),
            receive_amount: Some(eur(u64::MAX)),
            interval: Some(RepeatingInterval::parse("R/2023-11-14T00:00:00Z/P1D").unwrap()),
        };
        let planned = plan(
            input(grant(limits), None),
            &quote(10, eur(9)),
            wallet(1),
            false,
            NOW,
        );
        let r = planned.unwrap().reservation.unwrap();
        assert_eq!((r.debit_limit, r.receive_limit), (Some(0), Some(u64::MAX)));
        let day = Timestamp::parse_rfc3339("2023-11-14T00:00:00Z").unwrap();
        assert_eq!(r.interval_start, day);
        assert_eq!(r.interval_end, Some(day.plus_millis(86_400_000)));
    }

    #[test]
    fn a_grant_refuses_another_receiver_asset_or_time() {
        let q = quote(10, eur(9));
        let try_with = |limits| plan(input(grant(limits), None), &q, wallet(1), false, NOW);
        let other_receiver = OutgoingLimits {
            receiver: Some("https://bank.example/incoming-payments/2".to_owned()),
            ..no_limits()
        };
        assert_eq!(
            refusal(try_with(other_receiver)),
            "insufficient_grant: the grant only allows payments to another receiver"
        );
        let debit_in_eur = OutgoingLimits {
            debit_amount: Some(eur(10)),
            ..no_limits()
        };
        assert_eq!(
            refusal(try_with(debit_in_eur)),
            "insufficient_grant: the grant's debit limit is in EUR (scale 2)"
        );
        let debit_in_mills = OutgoingLimits {
            debit_amount: Some(Amount::new(10, Asset::parse("USD", 3).unwrap())),
            ..no_limits()
        };
        assert_eq!(
            refusal(try_with(debit_in_mills)),
            "insufficient_grant: the grant's debit limit is in USD (scale 3)"
        );
        let receive_in_usd = OutgoingLimits {
            receive_amount: Some(usd(10)),
            ..no_limits()
        };
        assert_eq!(
            refusal(try_with(receive_in_usd)),
            "insufficient_grant: the grant's receive limit is in USD (scale 2)"
        );
        let later = OutgoingLimits {
            interval: Some(RepeatingInterval::parse("R/2030-01-01T00:00:00Z/P1D").unwrap()),
            ..no_limits()
        };
        assert_eq!(
            refusal(try_with(later)),
            "insufficient_grant: the grant's interval does not cover this time"
        );
    }

    #[test]
    fn metadata_past_the_limit_is_refused_before_the_grant() {
        let mut big = Metadata::new();
        big.insert("note".to_owned(), "x".repeat(16 * 1024).into());
        let other_receiver = OutgoingLimits {
            receiver: Some("elsewhere".to_owned()),
            ..no_limits()
        };
        let q = quote(1, usd(1));
        let result = plan(
            input(grant(other_receiver), Some(big)),
            &q,
            wallet(1),
            false,
            NOW,
        );
        assert!(
            matches!(result, Err(ServiceError::MetadataTooLarge { .. })),
            "{result:?}"
        );
    }

    #[test]
    fn the_stores_answer_becomes_the_spent_amounts_or_the_refusal() {
        let payment = plan(
            input(None, None),
            &quote(500, usd(400)),
            wallet(1),
            false,
            NOW,
        )
        .unwrap()
        .payment;
        let spent = GrantSpent {
            debit: Some(usd(1)),
            receive: None,
        };
        let created = CreateOutgoing::Created {
            spent_before: spent.clone(),
        };
        assert_eq!(stored(created, &payment).unwrap(), spent);
        match stored(
            CreateOutgoing::InsufficientBalance { available: 499 },
            &payment,
        ) {
            Err(ServiceError::InsufficientBalance {
                available,
                required,
            }) => assert_eq!((available, required), (usd(499), usd(500))),
            other => panic!("{other:?}"),
        }
        let used = stored(CreateOutgoing::QuoteUsed, &payment);
        assert!(
            matches!(used, Err(ServiceError::InvalidQuote(_))),
            "{used:?}"
        );
        let overflow = stored(CreateOutgoing::Overflow, &payment);
        assert!(
            matches!(overflow, Err(ServiceError::AmountOverflow)),
            "{overflow:?}"
        );
        let limit = stored(
            CreateOutgoing::LimitExceeded {
                spent_before: spent,
            },
            &payment,
        );
        assert!(
            matches!(
                limit,
                Err(ServiceError::Forbidden {
                    code: "insufficient_grant",
                    ..
                })
            ),
            "{limit:?}"
        );
    }
}
