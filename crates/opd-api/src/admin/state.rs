//! The admin listener's state: the app and the admin token's digest.

use sha2::{Digest, Sha256};

use crate::AppState;

/// State of the admin router: the app plus the hash of the admin token.
#[derive(Clone, Debug)]
pub struct AdminState {
    pub app: AppState,
    token_sha256: [u8; 32],
}

impl AdminState {
    pub fn new(app: AppState, admin_token: &str) -> Self {
        Self {
            app,
            token_sha256: Sha256::digest(admin_token.as_bytes()).into(),
        }
    }

    /// The SHA-256 of the admin token (the dashboard's login compares it).
    pub(crate) fn token_sha256(&self) -> &[u8; 32] {
        &self.token_sha256
    }
}
