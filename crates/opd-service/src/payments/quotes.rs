//! Quotes: what a payment from one of our wallet addresses to a receiver
//! will debit and deliver. The arithmetic is `opd_core::quote::calculate`;
//! this module resolves the parties, the fee and the rate, and stores the
//! result.

use opd_core::quote::{self, Pricing, Quote, QuoteCalcError, QuoteTarget, ReceiverTerms};
use opd_core::wallet_address::WalletAddress;
use opd_core::{Amount, QuoteId, Timestamp};

use opd_ilp::stream::sender::{check_rate, Ratio};

use crate::access::replays::{RequestClaim, StoredResponse};
use crate::payments::receivers::{self, remote::RemoteReceiver, Receiver};
use crate::{interledger::paths, wallets, ServiceError, Services};

/// A validated create request.
#[derive(Debug, Clone)]
pub struct NewQuote {
    pub wallet_address: String,
    pub receiver: String,
    pub target: QuoteTarget,
    pub client: Option<String>,
}

/// The rate a quote to a receiver on another server is made at: the
/// configured rate less the slippage allowance, once probing shows the
/// Interledger path converts at least that well. Quoting at the minimum
/// means the receiver gets at least the quoted amount however the path's
/// rate moves within the allowance.
async fn path_rate(
    services: &Services,
    source: &opd_core::Asset,
    remote: &RemoteReceiver,
    configured: opd_core::Rate,
) -> Result<opd_core::Rate, ServiceError> {
    let minimum = configured
        .less_basis_points(services.config.slippage_basis_points)
        .ok_or(ServiceError::InsufficientExchangeRate)?;
    let destination = remote.ilp.as_ref().ok_or_else(|| {
        ServiceError::InvalidReceiver("the receiver offers no ilp payment method".into())
    })?;
    let (num, den) = minimum
        .as_fraction(source.scale, remote.asset.scale)
        .ok_or(ServiceError::AmountOverflow)?;
    let minimum_ratio = Ratio::new(num, den).ok_or(ServiceError::AmountOverflow)?;
    let probe = paths::probe(services, source, &remote.asset, destination).await?;
    if judge(&probe, remote, minimum_ratio).is_err() {
        // What was kept of the path may be older than its rate now.
        let probe = paths::probe_again(services, source, &remote.asset, destination).await?;
        judge(&probe, remote, minimum_ratio)?;
    }
    Ok(minimum)
}

/// Whether `probe` shows the receiver's asset and at least `minimum`.
fn judge(
    probe: &paths::PathProbe,
    remote: &RemoteReceiver,
    minimum: Ratio,
) -> Result<(), ServiceError> {
    if let Some((code, scale)) = &probe.receiver_asset {
        if *code != remote.asset.code.as_str() || *scale != remote.asset.scale {
            return Err(ServiceError::InvalidReceiver(
                "the receiver's Interledger asset differs from its incoming payment's".into(),
            ));
        }
    }
    check_rate(probe.rate, minimum).map_err(|_| ServiceError::InsufficientExchangeRate)
}

/// Creates a quote.
pub async fn create(
    services: &Services,
    input: NewQuote,
) -> Result<(Quote, WalletAddress), ServiceError> {
    create_answered(services, input, None, |_, _| None).await
}

/// Creates a quote for a signed request: its replay `claim` is stored with
/// the quote, and with it the request's response, given ahead by
/// `respond` (see `access::replays::answer_ahead`): what the API answers
/// for the quote.
pub async fn create_answered(
    services: &Services,
    input: NewQuote,
    claim: Option<&RequestClaim>,
    respond: impl FnOnce(&Quote, &WalletAddress) -> Option<StoredResponse>,
) -> Result<(Quote, WalletAddress), ServiceError> {
    let wallet = wallets::by_url(services, &input.wallet_address).await?;
    let receiver = receivers::resolve(services, &input.receiver).await?;
    let configured = services
        .pricing
        .rate(&wallet.asset, receiver.asset())
        .await?;
    let rate = match &receiver {
        Receiver::Local(_) => configured,
        Receiver::Remote(remote) => path_rate(services, &wallet.asset, remote, configured).await?,
    };
    let pricing = Pricing {
        fee: services.pricing.fee(&wallet.tenant, &wallet.asset).await?,
        rate,
    };
    let terms = ReceiverTerms {
        asset: receiver.asset().clone(),
        incoming_amount: receiver.incoming_amount(),
        received_amount: receiver.received_amount(),
    };
    let amounts =
        quote::calculate(&wallet.asset, &terms, &input.target, pricing).map_err(|e| match e {
            QuoteCalcError::NonPositiveReceiveAmount { min_send } => {
                ServiceError::NonPositiveReceiveAmount {
                    min_send_amount: min_send.map(|v| Amount::new(v, wallet.asset.clone())),
                }
            }
            QuoteCalcError::NothingRemaining => ServiceError::InvalidReceiver(e.to_string()),
            QuoteCalcError::Overflow => ServiceError::AmountOverflow,
            other => ServiceError::InvalidAmount(other.to_string()),
        })?;
    let now = services.clock.now();
    let mut expires_at: Timestamp = now.plus(services.config.quote_lifespan);
    if let Some(t) = receiver.expires_at() {
        expires_at = expires_at.min(t);
    }
    let quote = Quote {
        id: QuoteId::new(now, services.random.as_ref()),
        wallet_address_id: wallet.id,
        receiver: input.receiver,
        debit_amount: Amount::new(amounts.debit, wallet.asset.clone()),
        receive_amount: Amount::new(amounts.receive, receiver.asset().clone()),
        fee: amounts.fee,
        debit_minus_fees: amounts.debit_minus_fees,
        client: input.client,
        created_at: now,
        expires_at,
    };
    crate::access::replays::answer_ahead(claim, || respond(&quote, &wallet));
    services.store.create_quote(&quote, claim).await?;
    services.payments.quotes.insert(quote.id, quote.clone());
    Ok((quote, wallet))
}

/// One quote with its wallet address.
pub async fn get(services: &Services, id: QuoteId) -> Result<(Quote, WalletAddress), ServiceError> {
    let quote = services
        .quote_by_id(id)
        .await?
        .ok_or(ServiceError::NotFound("quote"))?;
    let wallet = services
        .wallet_by_id(quote.wallet_address_id)
        .await?
        .ok_or(ServiceError::NotFound("quote"))?;
    Ok((quote, wallet))
}

/// The newest unexpired quote of `wallet` to `receiver`: what a payment
/// the owner is asked to allow would deliver (the consent page says so).
pub async fn latest_to(
    services: &Services,
    wallet: &WalletAddress,
    receiver: &str,
) -> Result<Option<Quote>, ServiceError> {
    let now = services.clock.now();
    Ok(services
        .store
        .latest_quote_to(wallet.id, receiver, now)
        .await?)
}

impl crate::Services {
    /// A quote by id, from the cache when this node stored or read it.
    pub async fn quote_by_id(
        &self,
        id: opd_core::QuoteId,
    ) -> Result<Option<opd_core::quote::Quote>, ServiceError> {
        if let Some(q) = self.payments.quotes.get(&id) {
            return Ok(Some(q));
        }
        let found = self.store.get_quote(id).await?;
        if let Some(q) = &found {
            self.payments.quotes.insert(id, q.clone());
        }
        Ok(found)
    }
}

#[cfg(test)]
mod tests {
    use opd_ilp::stream::sender::{MaxPacket, RateBounds};

    use super::*;

    fn remote() -> RemoteReceiver {
        RemoteReceiver {
            url: "https://b.example/incoming-payments/1".into(),
            asset: opd_core::Asset::parse("USD", 2).unwrap(),
            incoming_amount: None,
            received_amount: 0,
            completed: false,
            expires_at: None,
            ilp: None,
            wallet_address: None,
        }
    }

    fn probe(asset: Option<(&str, u8)>, rate: (u128, u128)) -> paths::PathProbe {
        let rate = Ratio::new(rate.0, rate.1).unwrap();
        paths::PathProbe {
            rate: RateBounds {
                low: rate,
                high: rate,
            },
            max_packet: MaxPacket::Unknown,
            receiver_asset: asset.map(|(code, scale)| (code.to_owned(), scale)),
        }
    }

    #[test]
    fn a_path_is_judged_by_the_receiver_s_asset_and_the_minimum_rate() {
        let minimum = Ratio::new(9, 10).unwrap();
        let judged = |asset, rate| match judge(&probe(asset, rate), &remote(), minimum) {
            Ok(()) => "ok",
            Err(ServiceError::InvalidReceiver(_)) => "another asset",
            Err(ServiceError::InsufficientExchangeRate) => "too low a rate",
            Err(_) => "another error",
        };
        assert_eq!(judged(Some(("USD", 2)), (9, 10)), "ok");
        assert_eq!(
            judged(None, (1, 1)),
            "ok",
            "a receiver silent about its asset"
        );
        assert_eq!(judged(Some(("USD", 9)), (1, 1)), "another asset");
        assert_eq!(judged(Some(("EUR", 2)), (1, 1)), "another asset");
        assert_eq!(judged(Some(("EUR", 9)), (1, 1)), "another asset");
        assert_eq!(judged(Some(("USD", 2)), (89, 100)), "too low a rate");
    }
}
