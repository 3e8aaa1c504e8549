//! A wallet address's owner on their own page: a session opened with the
//! owner password (checked by the caller with [`super::check_owner_password`],
//! which counts every attempt), kept in the database by digest so every
//! node knows it; the grants they gave, and revoking one of them (theirs
//! only).

use crate::operator::GrantSummary;
use opd_core::{GrantId, WalletAddressId};
use sha2::{Digest, Sha256};

use crate::{ServiceError, Services};

/// How long an owner's session lasts (signed in again after).
pub const OWNER_SESSION_SECS: i64 = 30 * 60;

fn digest(cookie: &str) -> String {
    opd_core::hex::lower(&Sha256::digest(cookie.as_bytes()))
}

/// Opens a session of `wallet`'s owner for the browser's `cookie` value.
pub async fn open_owner_session(
    services: &Services,
    wallet: WalletAddressId,
    cookie: &str,
) -> Result<(), ServiceError> {
    let now = services.clock.now();
    let until = now.plus_seconds(OWNER_SESSION_SECS);
    services
        .store
        .create_owner_session(&digest(cookie), wallet, now, until)
        .await?;
    Ok(())
}

/// Whose session the browser's `cookie` is, if a live one.
pub async fn owner_session(
    services: &Services,
    cookie: &str,
) -> Result<Option<WalletAddressId>, ServiceError> {
    let now = services.clock.now();
    Ok(services.store.owner_session(&digest(cookie), now).await?)
}

/// Signs the session out (and sweeps the expired ones).
pub async fn close_owner_session(services: &Services, cookie: &str) -> Result<(), ServiceError> {
    let now = services.clock.now();
    Ok(services
        .store
        .delete_owner_session(&digest(cookie), now)
        .await?)
}

/// The grants `wallet`'s owner consented to, newest first.
pub async fn grants_given(
    services: &Services,
    wallet: WalletAddressId,
    limit: i64,
) -> Result<Vec<GrantSummary>, ServiceError> {
    let given = services.store.grants_given(wallet, limit).await?;
    Ok(given.into_iter().map(GrantSummary::from).collect())
}

/// Revokes grant `id` if `wallet`'s owner gave it: `Ok(false)` when it
/// was revoked already, `NotFound` when it is not theirs.
pub async fn revoke_given(
    services: &Services,
    wallet: WalletAddressId,
    id: GrantId,
) -> Result<bool, ServiceError> {
    let grant = services.store.get_grant(id).await?;
    if grant.and_then(|g| g.wallet_address_id) != Some(wallet) {
        return Err(ServiceError::NotFound("grant"));
    }
    super::revoke_by_operator(services, id).await
}
