//! Server secrets generated on first start and kept in the database, so
//! every node of a PostgreSQL deployment shares them. They are never logged,
//! and they are stored **sealed**: AES-256-GCM under a key kept outside the
//! database (`SecretsKey`, from a file in the data directory or given to
//! every node), with the setting's name as associated data, so a copy of
//! the database alone does not give them away.
//!
//! Stored form: `v1:` + base64(12-byte nonce ‖ ciphertext ‖ tag). A value
//! stored before sealing existed (plain base64) is sealed on the next
//! start. Rotation: start with the new key as current and the old one as
//! previous; every secret opened with the previous key is sealed again with
//! the current one, and the previous key can then be dropped.

use aes_gcm::aead::{Aead, KeyInit, Payload};
use aes_gcm::{Aes256Gcm, Nonce};
use base64::Engine;
use opd_core::Random;
use opd_ilp::StreamSecret;
use opd_store::Store;

use crate::ServiceError;

const STREAM_SECRET_KEY: &str = "stream_secret";
const SERVER_SIGNING_KEY: &str = "server_signing_key";
const SEALED_PREFIX: &str = "v1:";

/// The key secrets are sealed with, and the one they may still be sealed
/// with during a rotation.
#[derive(Clone)]
pub struct SecretsKey {
    pub current: [u8; 32],
    pub previous: Option<[u8; 32]>,
}

impl std::fmt::Debug for SecretsKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SecretsKey(<redacted>)")
    }
}

fn b64() -> base64::engine::GeneralPurpose {
    base64::engine::general_purpose::STANDARD
}

fn seal(key: &[u8; 32], name: &str, plain: &[u8], random: &dyn Random) -> String {
    let mut nonce = [0u8; 12];
    random.fill(&mut nonce);
    let cipher = Aes256Gcm::new(key.into());
    let payload = Payload {
        msg: plain,
        aad: name.as_bytes(),
    };
    // Encryption of a few bytes under a valid key cannot fail.
    let sealed = cipher
        .encrypt(Nonce::from_slice(&nonce), payload)
        .unwrap_or_default();
    format!(
        "{SEALED_PREFIX}{}",
        b64().encode([&nonce[..], &sealed].concat())
    )
}

fn open(key: &[u8; 32], name: &str, stored: &str) -> Option<Vec<u8>> {
    let bytes = b64().decode(stored.strip_prefix(SEALED_PREFIX)?).ok()?;
    let (nonce, sealed) = bytes.split_at_checked(12)?;
    let payload = Payload {
        msg: sealed,
        aad: name.as_bytes(),
    };
    Aes256Gcm::new(key.into())
        .decrypt(Nonce::from_slice(nonce), payload)
        .ok()
}

/// Seals `plain` under the current key, bound to `context` (what the value
/// is and whose: a sealed value moved to another row does not open).
pub(crate) fn seal_value(
    key: &SecretsKey,
    context: &str,
    plain: &[u8],
    random: &dyn Random,
) -> String {
    seal(&key.current, context, plain, random)
}

/// Opens a value of [`seal_value`]: the plain bytes, and whether they were
/// sealed under the previous key (to be sealed again).
pub(crate) fn open_value(key: &SecretsKey, context: &str, stored: &str) -> Option<(Vec<u8>, bool)> {
    open(&key.current, context, stored)
        .map(|p| (p, false))
        .or_else(|| {
            key.previous
                .and_then(|k| open(&k, context, stored))
                .map(|p| (p, true))
        })
}

/// Whether `stored` has the form of a sealed value: the prefix, then
/// base64 of at least a nonce and a tag. A value stored in clear by an
/// earlier version is taken as clear unless it has exactly that form.
pub(crate) fn looks_sealed(stored: &str) -> bool {
    stored
        .strip_prefix(SEALED_PREFIX)
        .and_then(|rest| b64().decode(rest).ok())
        .is_some_and(|bytes| bytes.len() >= 12 + 16)
}

/// The 32 bytes of secret `name`, created on first start; sealed again
/// when stored in clear or under the previous key.
async fn secret(
    store: &dyn Store,
    random: &dyn Random,
    key: &SecretsKey,
    name: &str,
) -> Result<[u8; 32], ServiceError> {
    let mut fresh = [0u8; 32];
    random.fill(&mut fresh);
    let stored = store
        .setting_or_insert(name, &seal(&key.current, name, &fresh, random))
        .await?;
    let corrupt = || ServiceError::corrupt(name);
    let (plain, reseal) = if stored.starts_with(SEALED_PREFIX) {
        match open(&key.current, name, &stored) {
            Some(p) => (p, false),
            None => {
                let p = key
                    .previous
                    .and_then(|k| open(&k, name, &stored))
                    .ok_or_else(|| {
                        ServiceError::Internal(format!(
                            "the server secret {name:?} cannot be opened with the secrets key: \
                         every node must be given the same key (--secrets-key-file or \
                         OPD_SECRETS_KEY), and a rotated one with --secrets-key-previous-file"
                        ))
                    })?;
                (p, true)
            }
        }
    } else {
        // Stored in clear by an earlier version.
        (b64().decode(&stored).map_err(|_| corrupt())?, true)
    };
    let bytes = <[u8; 32]>::try_from(plain.as_slice()).map_err(|_| corrupt())?;
    if reseal {
        store
            .set_setting(name, &seal(&key.current, name, &bytes, random))
            .await?;
    }
    Ok(bytes)
}

/// The secret STREAM credentials are derived from.
pub async fn stream_secret(
    store: &dyn Store,
    random: &dyn Random,
    key: &SecretsKey,
) -> Result<StreamSecret, ServiceError> {
    let bytes = secret(store, random, key, STREAM_SECRET_KEY).await?;
    Ok(StreamSecret::from_bytes(bytes))
}

/// The 32-byte Ed25519 seed of the server's own signing key (its identity
/// when it acts as a client of other Open Payments servers).
pub async fn server_signing_seed(
    store: &dyn Store,
    random: &dyn Random,
    key: &SecretsKey,
) -> Result<[u8; 32], ServiceError> {
    secret(store, random, key, SERVER_SIGNING_KEY).await
}

/// Stores `plain` as setting `name`, sealed (credentials opd keeps for
/// itself, such as access tokens of other servers' grants).
pub async fn put_sealed(
    store: &dyn Store,
    random: &dyn Random,
    key: &SecretsKey,
    name: &str,
    plain: &[u8],
) -> Result<(), ServiceError> {
    Ok(store
        .set_setting(name, &seal(&key.current, name, plain, random))
        .await?)
}

/// Opens setting `name` stored by [`put_sealed`]; `None` when it is absent,
/// cleared, or sealed under a key this node does not have.
pub async fn get_sealed(
    store: &dyn Store,
    key: &SecretsKey,
    name: &str,
) -> Result<Option<Vec<u8>>, ServiceError> {
    let Some(stored) = store.get_setting(name).await? else {
        return Ok(None);
    };
    Ok(open(&key.current, name, &stored)
        .or_else(|| key.previous.and_then(|k| open(&k, name, &stored))))
}

#[cfg(test)]
mod tests {
    use super::*;
    use opd_core::SeededRandom;

    #[test]
    fn sealed_values_open_only_with_their_key_and_name() {
        let r = SeededRandom::new(1);
        let key = [7u8; 32];
        let sealed = seal(&key, "a", b"secret bytes", &r);
        assert!(sealed.starts_with("v1:"));
        assert!(!sealed.contains("secret"));
        assert_eq!(
            open(&key, "a", &sealed).as_deref(),
            Some(&b"secret bytes"[..])
        );
        assert_eq!(open(&[8u8; 32], "a", &sealed), None, "another key");
        assert_eq!(open(&key, "b", &sealed), None, "another setting");
        assert_eq!(open(&key, "a", "v1:garbage"), None);
        assert!(looks_sealed(&sealed));
        assert!(!looks_sealed("v1:garbage"));
        assert!(!looks_sealed("a-clear-token"));
        let both = SecretsKey {
            current: [8u8; 32],
            previous: Some(key),
        };
        assert_eq!(
            open_value(&both, "a", &sealed),
            Some((b"secret bytes".to_vec(), true)),
            "under the previous key: to be sealed again"
        );
    }
}
