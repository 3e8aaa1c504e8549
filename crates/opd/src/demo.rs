//! `--demo`: the wallet addresses alice and bob (USD, scale 2), created if
//! they do not exist, so a newcomer has something to look at.

use opd_core::wallet_address::WalletAddressPath;
use opd_core::Asset;
use opd_service::{wallet_addresses, ServiceError, Services};

/// The demo wallet address paths.
pub const DEMO_WALLETS: [(&str, &str); 2] = [("alice", "Alice"), ("bob", "Bob")];

/// Creates the demo wallet addresses that do not exist yet.
pub async fn seed(services: &Services) -> Result<(), ServiceError> {
    for (path, name) in DEMO_WALLETS {
        let parsed = WalletAddressPath::parse(path)
            .map_err(|e| ServiceError::InvalidRequest(e.to_string()))?;
        if services
            .store
            .get_wallet_address_by_path(&parsed)
            .await?
            .is_some()
        {
            continue;
        }
        let usd =
            Asset::parse("USD", 2).map_err(|e| ServiceError::InvalidRequest(e.to_string()))?;
        wallet_addresses::create(services, path, usd, Some(name.to_owned())).await?;
    }
    Ok(())
}
