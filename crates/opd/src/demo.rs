//! `--demo`: everything a newcomer needs to make a payment at once. The
//! wallet addresses alice and bob (USD, scale 2), alice with 100.00 USD
//! and both with an owner password for the consent page, and a client
//! wallet address `shop` whose key is in the data directory
//! (`client.json`, the profile `opd client` reads by default). Each start
//! makes only what is missing, so restarts keep balances and passwords.

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use opd_core::wallet_address::{PublicKey, WalletAddressPath};
use opd_core::{Asset, TenantId};
use opd_service::{grants, ledger, wallets, ServiceError, Services};
use rand::Rng as _;

/// The demo wallet addresses that hold money.
pub const DEMO_WALLETS: [(&str, &str); 2] = [("alice", "Alice"), ("bob", "Bob")];

/// The client's wallet address.
const SHOP: (&str, &str) = ("shop", "Shop");

/// What alice starts with, in cents (100.00 USD), deposited once.
const ALICE_START: u64 = 10_000;

/// What a start of the demo tells the user.
#[derive(Debug, Clone)]
pub struct Demo {
    /// The client profile (`opd client --profile`).
    pub profile: PathBuf,
    /// Each demo wallet address's owner password.
    pub passwords: Vec<(String, String)>,
}

/// Creates what is missing of the demo in `data_dir` and the database.
pub async fn seed(services: &Services, data_dir: &Path) -> anyhow::Result<Demo> {
    let usd = Asset::parse("USD", 2).map_err(|e| anyhow::anyhow!("{e}"))?;
    for (path, name) in DEMO_WALLETS.into_iter().chain([SHOP]) {
        ensure_wallet(services, path, name, &usd).await?;
    }
    let alice = wallet(services, "alice").await?;
    ledger::move_money(services, &alice, ALICE_START, true, "demo-alice-start").await?;

    let passwords = passwords(data_dir)?;
    for (path, password) in &passwords {
        let w = wallet(services, path).await?;
        grants::set_owner_password(services, w.id, password).await?;
    }

    let profile = data_dir.join("client.json");
    let shop_url = services
        .config
        .public_url
        .wallet_address(&wallet(services, SHOP.0).await?.path);
    let client = match opd_client::profile::Profile::load(&profile) {
        Ok(p) => p,
        Err(_) if !profile.exists() => {
            // A new key id per key: a profile made again never collides
            // with the (revoked) key of the one it replaces.
            let kid = format!("shop-{:08x}", rand::thread_rng().gen::<u32>());
            let p = opd_client::profile::Profile::generate(&shop_url, &kid);
            p.save_new(&profile)?;
            p
        }
        Err(e) => return Err(e),
    };
    if client.wallet_address != shop_url {
        tracing::warn!(
            profile = %profile.display(),
            "the demo client profile names another wallet address (was the public URL changed?)"
        );
    }
    let jwk = client.jwk();
    let key = PublicKey::from_jwk_parts(&jwk.kid, &jwk.kty, &jwk.crv, None, None, &jwk.x)
        .map_err(|e| anyhow::anyhow!("the demo key: {e:?}"))?;
    let shop = wallet(services, SHOP.0).await?;
    match wallets::add_key(services, shop.id, key).await {
        Ok(_) | Err(ServiceError::Conflict { .. }) => {}
        Err(e) => return Err(e.into()),
    }
    // Only the profile's key signs for shop: one from a lost profile no more.
    for old in wallets::keys(services, shop.id).await? {
        if old.key.kid != jwk.kid && old.revoked_at.is_none() {
            wallets::revoke_key(services, shop.id, &old.key.kid).await?;
        }
    }
    Ok(Demo { profile, passwords })
}

async fn ensure_wallet(
    services: &Services,
    path: &str,
    name: &str,
    asset: &Asset,
) -> anyhow::Result<()> {
    let parsed = WalletAddressPath::parse(path).map_err(|e| anyhow::anyhow!("{e}"))?;
    if services
        .store
        .get_wallet_address_by_path(&TenantId::operator(), &parsed)
        .await?
        .is_none()
    {
        let operator = TenantId::operator();
        wallets::create(
            services,
            &operator,
            path,
            asset.clone(),
            Some(name.to_owned()),
        )
        .await?;
    }
    Ok(())
}

async fn wallet(
    services: &Services,
    path: &str,
) -> anyhow::Result<opd_core::wallet_address::WalletAddress> {
    let parsed = WalletAddressPath::parse(path).map_err(|e| anyhow::anyhow!("{e}"))?;
    services
        .store
        .get_wallet_address_by_path(&TenantId::operator(), &parsed)
        .await?
        .with_context(|| format!("the demo wallet address {path}"))
}

/// The owner passwords, made once and kept in `demo-passwords.json`
/// (readable by its owner only) so every start prints the same ones.
fn passwords(data_dir: &Path) -> anyhow::Result<Vec<(String, String)>> {
    let file = data_dir.join("demo-passwords.json");
    if let Ok(text) = std::fs::read_to_string(&file) {
        return serde_json::from_str(&text).with_context(|| format!("{}", file.display()));
    }
    let made: Vec<(String, String)> = DEMO_WALLETS
        .iter()
        .map(|(path, _)| ((*path).to_owned(), new_password()))
        .collect();
    std::fs::create_dir_all(data_dir)?;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut out = options
        .open(&file)
        .with_context(|| format!("cannot create {}", file.display()))?;
    std::io::Write::write_all(&mut out, serde_json::to_string(&made)?.as_bytes())?;
    Ok(made)
}

/// Twelve letters and digits without look-alikes (no 0/O, 1/l/I).
fn new_password() -> String {
    const ALPHABET: &[u8] = b"abcdefghijkmnpqrstuvwxyz23456789";
    let mut rng = rand::thread_rng();
    (0..12)
        .map(|_| char::from(ALPHABET[rng.gen_range(0..ALPHABET.len())]))
        .collect()
}
