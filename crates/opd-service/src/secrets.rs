//! Server secrets generated on first start and kept in the database, so
//! every node of a PostgreSQL deployment shares them. They are never logged.

use base64::Engine;
use opd_core::Random;
use opd_ilp::StreamSecret;
use opd_store::Store;

use crate::ServiceError;

const STREAM_SECRET_KEY: &str = "stream_secret";
const SERVER_SIGNING_KEY: &str = "server_signing_key";

fn random_base64(random: &dyn Random) -> String {
    let mut bytes = [0u8; 32];
    random.fill(&mut bytes);
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// The secret STREAM credentials are derived from.
pub async fn stream_secret(
    store: &dyn Store,
    random: &dyn Random,
) -> Result<StreamSecret, ServiceError> {
    let stored = store
        .setting_or_insert(STREAM_SECRET_KEY, &random_base64(random))
        .await?;
    StreamSecret::from_base64(&stored).map_err(|_| ServiceError::corrupt("stream secret"))
}

/// The 32-byte Ed25519 seed of the server's own signing key (its identity
/// when it acts as a client of other Open Payments servers).
pub async fn server_signing_seed(
    store: &dyn Store,
    random: &dyn Random,
) -> Result<[u8; 32], ServiceError> {
    let stored = store
        .setting_or_insert(SERVER_SIGNING_KEY, &random_base64(random))
        .await?;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(stored)
        .map_err(|_| ServiceError::corrupt("server signing key"))?;
    <[u8; 32]>::try_from(bytes.as_slice()).map_err(|_| ServiceError::corrupt("server signing key"))
}
