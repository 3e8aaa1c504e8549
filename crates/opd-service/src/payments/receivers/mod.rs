//! Receivers: the incoming payment a quote or an outgoing payment names,
//! on this server ([`Receiver::Local`]) or on another one
//! ([`Receiver::Remote`], read through Open Payments by [`remote`]). One
//! set of checks decides whether a receiver can be paid; quoting, creating
//! a payment and delivering it locally all ask here.
//!
//! May call the store, `wallets`, `platform::outbound` (through `client`)
//! and `platform`.

mod client;
pub mod remote;

pub use client::grant_setting;

use opd_core::incoming_payment::IncomingPayment;
use opd_core::wallet_address::WalletAddress;
use opd_core::{Asset, Timestamp};

use crate::{ServiceError, Services};
use remote::RemoteReceiver;

/// A receiver that can be paid now.
#[derive(Debug, Clone)]
pub enum Receiver {
    /// One of our incoming payments.
    Local(IncomingPayment),
    /// An incoming payment on another Open Payments server.
    Remote(RemoteReceiver),
}

impl Receiver {
    pub fn asset(&self) -> &Asset {
        match self {
            Receiver::Local(p) => &p.asset,
            Receiver::Remote(r) => &r.asset,
        }
    }

    pub fn incoming_amount(&self) -> Option<u64> {
        match self {
            Receiver::Local(p) => p.incoming_amount,
            Receiver::Remote(r) => r.incoming_amount,
        }
    }

    pub fn received_amount(&self) -> u64 {
        match self {
            Receiver::Local(p) => p.received_amount,
            Receiver::Remote(r) => r.received_amount,
        }
    }

    pub fn expires_at(&self) -> Option<Timestamp> {
        match self {
            Receiver::Local(p) => Some(p.expires_at),
            Receiver::Remote(r) => r.expires_at,
        }
    }
}

/// Why one of our incoming payments cannot be paid now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unpayable {
    /// The URL names no incoming payment of ours.
    NotFound,
    /// Its wallet address was deactivated (the account closed).
    WalletInactive,
    Completed,
    Expired,
}

impl std::fmt::Display for Unpayable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Unpayable::NotFound => "no such incoming payment",
            Unpayable::WalletInactive => "the receiving wallet address is inactive",
            Unpayable::Completed => "the incoming payment is completed",
            Unpayable::Expired => "the incoming payment has expired",
        })
    }
}

/// Whether a string has the shape the spec gives receivers:
/// `^(https|http)://(.+)/incoming-payments/(.+)$`.
pub fn is_receiver_url(s: &str) -> bool {
    let Some(rest) = s
        .strip_prefix("https://")
        .or_else(|| s.strip_prefix("http://"))
    else {
        return false;
    };
    match rest.rfind("/incoming-payments/") {
        Some(i) => i > 0 && rest.len() > i + "/incoming-payments/".len(),
        None => false,
    }
}

/// Resolves a receiver URL and checks it can be paid now; the reason
/// otherwise is an `InvalidReceiver` error.
pub async fn resolve(services: &Services, url: &str) -> Result<Receiver, ServiceError> {
    if !is_receiver_url(url) {
        return Err(ServiceError::InvalidReceiver(
            "receiver must be the URL of an incoming payment".into(),
        ));
    }
    if services.sites.table().await?.is_ours(url) {
        return match local(services, url).await? {
            Ok((payment, _)) => Ok(Receiver::Local(payment)),
            Err(why) => Err(ServiceError::InvalidReceiver(why.to_string())),
        };
    }
    let remote = remote::resolve(services, url).await?;
    if !remote.is_active(services.clock.now()) {
        return Err(ServiceError::InvalidReceiver(
            "the incoming payment is completed or expired".into(),
        ));
    }
    Ok(Receiver::Remote(remote))
}

/// One of our incoming payments by its URL, with its wallet address, if it
/// can be paid now: it exists, its wallet address is active, it is neither
/// completed nor expired.
pub async fn local(
    services: &Services,
    url: &str,
) -> Result<Result<(IncomingPayment, WalletAddress), Unpayable>, ServiceError> {
    let Some((tenant, id)) = services.sites.table().await?.incoming_payment(url) else {
        return Ok(Err(Unpayable::NotFound));
    };
    let Some(payment) = services.store.get_incoming_payment(id).await? else {
        return Ok(Err(Unpayable::NotFound));
    };
    let now = services.clock.now();
    let wallet = services.wallet_by_id(payment.wallet_address_id).await?;
    // Under another tenant's URL, the payment does not exist.
    let Some(wallet) = wallet.filter(|w| w.tenant == tenant) else {
        return Ok(Err(Unpayable::NotFound));
    };
    if !wallet.is_active(now) {
        return Ok(Err(Unpayable::WalletInactive));
    }
    Ok(if payment.completed {
        Err(Unpayable::Completed)
    } else if payment.is_expired(now) {
        Err(Unpayable::Expired)
    } else {
        Ok((payment, wallet))
    })
}

#[cfg(test)]
mod tests {
    use super::is_receiver_url;

    #[test]
    fn receiver_pattern() {
        assert!(is_receiver_url("https://x.example/incoming-payments/abc"));
        assert!(is_receiver_url(
            "http://x.example/alice/incoming-payments/1"
        ));
        assert!(!is_receiver_url("ftp://x.example/incoming-payments/abc"));
        assert!(!is_receiver_url("https://x.example/incoming-payments/"));
        assert!(!is_receiver_url("https:///incoming-payments/a"));
        assert!(!is_receiver_url("https://x.example/quotes/abc"));
    }
}
