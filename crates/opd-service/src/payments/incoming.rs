//! Incoming payments: create, read (full or public), list, complete, and
//! the ILP payment details an active one advertises.

use opd_core::incoming_payment::{IncomingPayment, Metadata};
use opd_core::pagination::{Page, PageRequest};
use opd_core::wallet_address::WalletAddress;
use opd_core::webhook::EventKind;
use opd_core::{Amount, IncomingPaymentId, Timestamp};

use crate::access::replays::{RequestClaim, StoredResponse};
use crate::platform::network::ClientNetwork;
use crate::views::IlpMethodWire;
use crate::{wallets, ServiceError, Services};

/// The largest `metadata` accepted, as serialized JSON.
pub const MAX_METADATA_BYTES: usize = 16 * 1024;

/// A validated create request.
#[derive(Debug, Clone)]
pub struct NewIncomingPayment {
    pub wallet_address: String,
    pub incoming_amount: Option<Amount>,
    pub expires_at: Option<Timestamp>,
    pub metadata: Option<Metadata>,
    /// The client (its wallet address URL) making the request, when known.
    pub client: Option<String>,
    /// The client network the request came from, when known.
    pub client_network: Option<ClientNetwork>,
}

/// Refuses metadata larger than `MAX_METADATA_BYTES` of JSON.
pub(crate) fn check_metadata(metadata: &Option<Metadata>) -> Result<(), ServiceError> {
    if let Some(m) = metadata {
        let size = serde_json::Value::Object(m.clone()).to_string().len();
        if size > MAX_METADATA_BYTES {
            return Err(ServiceError::MetadataTooLarge {
                size,
                max: MAX_METADATA_BYTES,
            });
        }
    }
    Ok(())
}

/// Creates an incoming payment into one of our wallet addresses.
pub async fn create(
    services: &Services,
    input: NewIncomingPayment,
) -> Result<(IncomingPayment, WalletAddress), ServiceError> {
    create_answered(services, input, None, |_, _| None).await
}

/// [`create`] for a signed request: its replay `claim` is stored with the
/// payment, and with it the request's response, given ahead by `respond`
/// (see `access::replays::answer_ahead`): what the API answers for the
/// payment.
pub async fn create_answered(
    services: &Services,
    input: NewIncomingPayment,
    claim: Option<&RequestClaim>,
    respond: impl FnOnce(&IncomingPayment, &WalletAddress) -> Option<StoredResponse>,
) -> Result<(IncomingPayment, WalletAddress), ServiceError> {
    let wallet = wallets::by_url(services, &input.wallet_address).await?;
    let now = services.clock.now();
    if let Some(amount) = &input.incoming_amount {
        if amount.asset != wallet.asset {
            return Err(ServiceError::InvalidAmount(format!(
                "incomingAmount must be in the wallet address's asset {}",
                wallet.asset
            )));
        }
        if amount.value == 0 {
            return Err(ServiceError::InvalidAmount(
                "incomingAmount must be greater than 0".into(),
            ));
        }
    }
    let max = now.plus(services.config.incoming_payment_max_expiry);
    let expires_at = match input.expires_at {
        Some(t) if t <= now => {
            return Err(ServiceError::InvalidExpiry(
                "expiresAt must be in the future".into(),
            ))
        }
        Some(t) if t > max => {
            return Err(ServiceError::InvalidExpiry(format!(
                "expiresAt must be no later than {max}"
            )))
        }
        Some(t) => t,
        None => now.plus(services.config.incoming_payment_default_expiry),
    };
    check_metadata(&input.metadata)?;
    let client_network = key_only_quota(services, &wallet, &input, now).await?;
    let payment = IncomingPayment {
        id: IncomingPaymentId::new(now, services.random.as_ref()),
        wallet_address_id: wallet.id,
        asset: wallet.asset.clone(),
        incoming_amount: input.incoming_amount.map(|a| a.value),
        received_amount: 0,
        completed: false,
        expires_at,
        metadata: input.metadata,
        client: input.client,
        client_network,
        created_at: now,
        updated_at: now,
    };
    let created = crate::webhooks::event(
        services,
        &wallet,
        EventKind::IncomingPaymentCreated,
        crate::webhooks::incoming_event_data(&*services.site_of(&wallet).await?, &payment, &wallet),
    );
    crate::access::replays::answer_ahead(claim, || respond(&payment, &wallet));
    services
        .store
        .create_incoming_payment(&payment, &[created], claim)
        .await?;
    Ok((payment, wallet))
}

/// Clients identified by a key alone have no wallet address to hold to
/// account, and keys cost nothing to make, so their incoming payments on
/// one wallet address are counted per key, per client network and by all
/// of them together (`ServiceConfig::key_only_incoming_per_hour`,
/// `..._per_network` and `..._total`), in the database, so on every node.
/// Minting fresh keys gains nothing past the network's share, and one
/// network spends only its share: the wallet address stays open to
/// others. Each network is also throttled across wallet addresses, per
/// node. Returns the network to store with the payment (key-only clients
/// only: nothing else counts by it).
async fn key_only_quota(
    services: &Services,
    wallet: &WalletAddress,
    input: &NewIncomingPayment,
    now: Timestamp,
) -> Result<Option<String>, ServiceError> {
    let Some(client) = input.client.as_deref().filter(|c| c.starts_with("jwk:")) else {
        return Ok(None);
    };
    let config = &services.config;
    let refused = |message: String| ServiceError::RateLimited {
        message,
        retry_after_secs: 60,
    };
    let (store, since) = (&services.store, now.plus_millis(-3_600_000));
    let per_key = config.key_only_incoming_per_hour;
    if store
        .incoming_payments_created_by(wallet.id, client, since)
        .await?
        >= u64::from(per_key)
    {
        return Err(refused(format!(
            "a client identified by a key alone may create {per_key} incoming payments per hour on a wallet address"
        )));
    }
    let network = input.client_network.map(|n| n.to_string());
    if let Some(network) = &network {
        let per_network = config.key_only_incoming_per_hour_per_network;
        let from = store.key_only_incoming_payments_from(wallet.id, network, since);
        if from.await? >= u64::from(per_network) {
            return Err(refused(format!(
                "clients identified by a key alone may create {per_network} incoming payments per hour on a wallet address from one client network ({network})"
            )));
        }
    }
    let total = config.key_only_incoming_per_hour_total;
    if store
        .key_only_incoming_payments_since(wallet.id, since)
        .await?
        >= u64::from(total)
    {
        return Err(refused(format!(
            "clients identified by a key alone may together create {total} incoming payments per hour on a wallet address"
        )));
    }
    // Taken last, so that what the database refused costs nothing here.
    if let Some(network) = &network {
        if let Err(wait) = services.limits.key_only_incoming.take(network) {
            return Err(ServiceError::RateLimited {
                message: format!(
                    "clients identified by a key alone may create {total} incoming payments per hour from one client network ({network})"
                ),
                retry_after_secs: u32::try_from(wait.as_secs()).unwrap_or(u32::MAX).max(1),
            });
        }
    }
    Ok(network)
}

/// One incoming payment with its wallet address.
pub async fn get(
    services: &Services,
    id: IncomingPaymentId,
) -> Result<(IncomingPayment, WalletAddress), ServiceError> {
    let payment = services
        .store
        .get_incoming_payment(id)
        .await?
        .ok_or(ServiceError::NotFound("incoming payment"))?;
    let wallet = services
        .wallet_by_id(payment.wallet_address_id)
        .await?
        .ok_or(ServiceError::NotFound("incoming payment"))?;
    Ok((payment, wallet))
}

/// A page of a wallet address's incoming payments, newest first; only the
/// client's own when `client` is given.
pub async fn list(
    services: &Services,
    wallet_address: &str,
    client: Option<&str>,
    page: &PageRequest,
) -> Result<(Page<IncomingPayment>, WalletAddress), ServiceError> {
    let wallet = wallets::by_url(services, wallet_address).await?;
    Ok((
        services
            .store
            .list_incoming_payments(wallet.id, client, page)
            .await?,
        wallet,
    ))
}

/// Marks an incoming payment completed: no more payments are accepted.
/// Completing a completed payment returns it unchanged; an expired one
/// cannot be completed. The request's replay `claim` is stored with the
/// change.
pub async fn complete(
    services: &Services,
    id: IncomingPaymentId,
    claim: Option<&RequestClaim>,
) -> Result<(IncomingPayment, WalletAddress), ServiceError> {
    let (payment, wallet) = get(services, id).await?;
    let now = services.clock.now();
    if payment.completed {
        return Ok((payment, wallet));
    }
    if payment.is_expired(now) {
        return Err(ServiceError::Conflict {
            code: "incoming_payment_expired",
            message: "the incoming payment has expired and cannot be completed".into(),
        });
    }
    let mut completed = payment.clone();
    completed.completed = true;
    let site = services.site_of(&wallet).await?;
    let mut data = crate::webhooks::incoming_event_data(&site, &completed, &wallet);
    let to_withdraw = crate::ledger::to_withdraw(services, id).await?;
    crate::webhooks::add_withdrawal(&mut data, &completed, to_withdraw);
    let event =
        crate::webhooks::event(services, &wallet, EventKind::IncomingPaymentCompleted, data);
    let done = services
        .store
        .complete_incoming_payment(id, now, &[event], claim)
        .await?
        .ok_or(ServiceError::NotFound("incoming payment"))?;
    crate::platform::metrics::incoming_completed(&done.asset);
    Ok((done, wallet))
}

/// The payment methods an incoming payment advertises: ILP STREAM
/// credentials while it is active, none once completed or expired. Each
/// call mints new credentials that all lead to the same payment.
pub fn payment_methods(services: &Services, payment: &IncomingPayment) -> Vec<IlpMethodWire> {
    if !payment.is_active(services.clock.now()) {
        return Vec::new();
    }
    let mut iv = [0u8; 12];
    services.random.fill(&mut iv);
    let asset = Some((payment.asset.code.as_str(), payment.asset.scale));
    match opd_ilp::generate_credentials(
        &services.interledger.stream_secret,
        &services.config.ilp_address,
        &payment.id.to_string(),
        asset,
        iv,
    ) {
        Ok(c) => vec![IlpMethodWire {
            type_: "ilp",
            ilp_address: c.ilp_address.as_str().to_owned(),
            shared_secret: c.shared_secret_base64url(),
        }],
        Err(e) => {
            tracing::error!(incoming_payment.id = %payment.id, error = %e, "cannot derive STREAM credentials");
            Vec::new()
        }
    }
}

/// Announces incoming payments that expired unfinished; returns how many.
pub async fn expire_once(services: &Services) -> Result<usize, ServiceError> {
    let due = services
        .store
        .due_expired_incoming_payments(services.clock.now(), 32)
        .await?;
    let mut n = 0;
    for id in due {
        let Some(p) = services.store.get_incoming_payment(id).await? else {
            continue;
        };
        let Some(w) = services.wallet_by_id(p.wallet_address_id).await? else {
            continue;
        };
        let site = services.site_of(&w).await?;
        let mut data = crate::webhooks::incoming_event_data(&site, &p, &w);
        let to_withdraw = crate::ledger::to_withdraw(services, p.id).await?;
        crate::webhooks::add_withdrawal(&mut data, &p, to_withdraw);
        let e = crate::webhooks::event(services, &w, EventKind::IncomingPaymentExpired, data);
        if services.store.mark_incoming_payment_expired(id, &e).await? {
            n += 1;
        }
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn metadata_of(bytes: usize) -> Option<Metadata> {
        // `{"m":""}` is 8 bytes of JSON around the text.
        let mut m = Metadata::new();
        m.insert("m".to_owned(), "x".repeat(bytes - 8).into());
        Some(m)
    }

    #[test]
    fn metadata_of_16_kib_of_json_is_accepted_and_one_byte_more_refused() {
        // docs/errors.md: over 16,384 bytes is `metadata_too_large`.
        assert!(check_metadata(&None).is_ok());
        assert!(check_metadata(&metadata_of(16_384)).is_ok());
        match check_metadata(&metadata_of(16_385)) {
            Err(ServiceError::MetadataTooLarge { size, max }) => {
                assert_eq!((size, max), (16_385, 16_384))
            }
            other => panic!("{other:?}"),
        }
    }
}
