//! The owners' consent passwords (Argon2 hashes) and the budget of checks
//! each allows.
//!
//! A password is refused when it is among the commonest (a short list,
//! compared without case and without the digits and symbols people add at
//! either end: `Password12!` is `password`). Checks are counted per wallet
//! address in the database before the password is compared
//! ([`opd_core::owner_login`]): whatever the source and whichever node
//! answers, a wallet address allows `FAILURE_BUDGET` checks in a row
//! without a success, then pauses approval by password (1 minute, doubling
//! to an hour). Setting the password again lifts the pause: that is how the
//! operator lets an owner in while someone is guessing.

use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::Argon2;
use opd_core::owner_login::{Attempt, LoginBudget};
use opd_core::{Timestamp, WalletAddressId};

use crate::{ServiceError, Services};

/// Words no owner password may be (after [`stem`]); the commonest in the
/// lists of leaked passwords, and the service's own vocabulary.
const COMMON: &[&str] = &[
    "password",
    "passw0rd",
    "p@ssw0rd",
    "p@ssword",
    "pass",
    "passwd",
    "qwerty",
    "qwertyui",
    "qwertyuiop",
    "asdf",
    "asdfgh",
    "asdfghjk",
    "asdfghjkl",
    "zxcvbn",
    "zxcvbnm",
    "qazwsx",
    "qwerasdf",
    "q2w3e4r",
    "qaz2wsx",
    "abc",
    "abcd",
    "abcdef",
    "abcdefg",
    "abcdefgh",
    "iloveyou",
    "letmein",
    "welcome",
    "admin",
    "administrator",
    "root",
    "login",
    "secret",
    "changeme",
    "default",
    "master",
    "monkey",
    "dragon",
    "sunshine",
    "princess",
    "football",
    "baseball",
    "soccer",
    "hockey",
    "superman",
    "batman",
    "starwars",
    "trustno",
    "shadow",
    "michael",
    "jennifer",
    "jordan",
    "charlie",
    "freedom",
    "whatever",
    "computer",
    "internet",
    "matrix",
    "mustang",
    "access",
    "killer",
    "hunter",
    "ranger",
    "buster",
    "thomas",
    "tigger",
    "robert",
    "soccer",
    "harley",
    "summer",
    "winter",
    "spring",
    "autumn",
    "flower",
    "cheese",
    "chocolate",
    "butterfly",
    "pokemon",
    "minecraft",
    "blink",
    "google",
    "samsung",
    "apple",
    "hello",
    "helloworld",
    "test",
    "tester",
    "testing",
    "guest",
    "user",
    "money",
    "bitcoin",
    "wallet",
    "payment",
    "payments",
    "bank",
    "banking",
    "consent",
    "approve",
    "owner",
    "alice",
    "bob",
    "opd",
    "rafiki",
    "interledger",
    "openpayments",
];

/// `password` without case and without the digits, spaces and symbols at
/// its ends: what a guesser tries first, then decorates.
fn stem(password: &str) -> String {
    password
        .trim_matches(|c: char| !c.is_alphabetic())
        .to_lowercase()
}

/// Why `password` may not be an owner's, if it may not.
pub fn password_policy(password: &str) -> Result<(), String> {
    if password.chars().count() < 8 || password.len() > 1024 {
        return Err("password must be 8 to 1024 characters".into());
    }
    let mut chars = password.chars();
    let first = chars.next();
    if chars.all(|c| Some(c) == first) {
        return Err("password must not be one character repeated".into());
    }
    let stem = stem(password);
    if stem.is_empty() {
        return Err("password must not be only digits and symbols".into());
    }
    if COMMON.contains(&stem.as_str()) {
        return Err(format!(
            "password is one of the most commonly used ones (\"{stem}\" with digits or \
             symbols around it): choose one that is not"
        ));
    }
    Ok(())
}

/// Admin: sets the password the wallet address owner approves grants with,
/// and lifts any pause of approval by password.
pub async fn set_owner_password(
    services: &Services,
    wallet: WalletAddressId,
    password: &str,
) -> Result<(), ServiceError> {
    password_policy(password).map_err(ServiceError::InvalidRequest)?;
    let mut salt = [0u8; 16];
    services.random.fill(&mut salt);
    let salt =
        SaltString::encode_b64(&salt).map_err(|e| ServiceError::InvalidRequest(e.to_string()))?;
    // Argon2 takes tens of milliseconds of CPU on purpose: off the async
    // runtime, so other requests do not wait behind it.
    let password = password.to_owned();
    let hash = tokio::task::spawn_blocking(move || {
        Argon2::default()
            .hash_password(password.as_bytes(), &salt)
            .map(|h| h.to_string())
    })
    .await
    .map_err(|e| ServiceError::Internal(format!("password hashing failed: {e}")))?
    .map_err(|e| ServiceError::InvalidRequest(e.to_string()))?;
    services
        .store
        .set_owner_password(wallet, &hash, services.clock.now())
        .await?;
    // Whoever was signed in on the owner's page with the old one is not
    // any more.
    services.store.delete_owner_sessions(wallet).await?;
    Ok(())
}

/// What a password check found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PasswordCheck {
    /// The owner's password.
    Right,
    /// Not the owner's password.
    Wrong,
    /// The wallet address has no owner password yet: nobody approves by
    /// password until its provider sets one.
    NotSet,
    /// Not checked: approval by password is paused for this wallet address
    /// until then, after too many wrong passwords from anywhere.
    Paused(Timestamp),
}

/// Compare-and-swap rounds an attempt may take against concurrent ones
/// before it gives up (as paused for a second): each round that fails
/// means another attempt was counted, and at most `FAILURE_BUDGET` are
/// counted before a pause, which ends every round at once.
const SWAP_ROUNDS: u32 = 64;

/// Whether the wallet address's owner has a password to approve grants
/// with.
pub async fn has_owner_password(
    services: &Services,
    wallet: WalletAddressId,
) -> Result<bool, ServiceError> {
    Ok(services.store.get_owner_password(wallet).await?.is_some())
}

/// Whether `password` is the wallet address owner's (constant time),
/// counted against the wallet address's budget before it is compared.
pub async fn check_owner_password(
    services: &Services,
    wallet: WalletAddressId,
    password: &str,
) -> Result<PasswordCheck, ServiceError> {
    if let Some(until) = take_attempt(services, wallet).await? {
        return Ok(PasswordCheck::Paused(until));
    }
    let Some(stored) = services.store.get_owner_password(wallet).await? else {
        return Ok(PasswordCheck::NotSet);
    };
    let password = password.to_owned();
    // Off the async runtime (see `set_owner_password`).
    let right = tokio::task::spawn_blocking(move || {
        let Ok(parsed) = PasswordHash::new(&stored) else {
            return false;
        };
        Argon2::default()
            .verify_password(password.as_bytes(), &parsed)
            .is_ok()
    })
    .await
    .map_err(|e| ServiceError::Internal(format!("password check failed: {e}")))?;
    if !right {
        return Ok(PasswordCheck::Wrong);
    }
    succeeded(services, wallet).await?;
    Ok(PasswordCheck::Right)
}

/// Counts one attempt in the database; `Some(until)` when approval by
/// password is paused instead. No budget (no password set): nothing to
/// count, the check finds nothing.
async fn take_attempt(
    services: &Services,
    wallet: WalletAddressId,
) -> Result<Option<Timestamp>, ServiceError> {
    let store = &services.store;
    for _ in 0..SWAP_ROUNDS {
        let Some(budget) = store.owner_login_budget(wallet).await? else {
            return Ok(None);
        };
        match budget.attempt(services.clock.now()) {
            Attempt::Paused { until } => return Ok(Some(until)),
            Attempt::Check { next } => {
                if store
                    .swap_owner_login_budget(wallet, &budget, &next)
                    .await?
                {
                    return Ok(None);
                }
            }
        }
    }
    Ok(Some(services.clock.now().plus_seconds(1)))
}

/// A right password: the budget starts afresh.
async fn succeeded(services: &Services, wallet: WalletAddressId) -> Result<(), ServiceError> {
    let store = &services.store;
    for _ in 0..SWAP_ROUNDS {
        let Some(budget) = store.owner_login_budget(wallet).await? else {
            return Ok(());
        };
        let fresh = LoginBudget::default();
        if budget == fresh
            || store
                .swap_owner_login_budget(wallet, &budget, &fresh)
                .await?
        {
            return Ok(());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::password_policy;

    #[test]
    fn the_commonest_passwords_are_refused_with_the_reason() {
        for weak in [
            "password12",
            "Password123!",
            "12345678",
            "!!!!!!!!",
            "aaaaaaaa",
            "qwertyuiop",
            "  Sunshine2024",
            "1q2w3e4r",
        ] {
            let why = password_policy(weak).expect_err(weak);
            assert!(why.starts_with("password "), "{weak}: {why}");
        }
        let why = password_policy("Password12").unwrap_err();
        assert!(why.contains("\"password\""), "{why}");
    }

    #[test]
    fn ordinary_passwords_pass() {
        for fine in [
            "correct horse battery",
            "alice owns this wallet",
            "alice-password",
            "tr0ub4dor&3",
            "Ünïcödé pässwörd",
        ] {
            assert_eq!(password_policy(fine), Ok(()), "{fine}");
        }
    }
}
