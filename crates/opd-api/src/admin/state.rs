//! The admin listener's state: the app and the admin token's digest, and
//! the one check of a presented admin token.

use std::time::Duration;

use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::AppState;

/// State of the admin router: the app, the hash of the admin token and
/// what the dashboard shows about this node.
#[derive(Clone, Debug)]
pub struct AdminState {
    pub app: AppState,
    token_sha256: [u8; 32],
    pub(crate) node: std::sync::Arc<Node>,
}

/// This node as the dashboard shows it: its listeners, by what they serve.
#[derive(Clone, Debug, Default)]
pub struct Node {
    /// (what it serves, its address), such as ("Admin API", 127.0.0.1:8082).
    pub listeners: Vec<(&'static str, std::net::SocketAddr)>,
}

impl AdminState {
    pub fn new(app: AppState, admin_token: &str) -> Self {
        Self {
            app,
            token_sha256: Sha256::digest(admin_token.as_bytes()).into(),
            node: std::sync::Arc::default(),
        }
    }

    /// With what the dashboard shows about this node.
    #[must_use]
    pub fn with_node(mut self, node: Node) -> Self {
        self.node = std::sync::Arc::new(node);
        self
    }

    /// Whether `presented` is the admin token, compared as a digest in
    /// constant time. A wrong one answers only after [`WRONG_TOKEN_DELAY`].
    ///
    /// There is no lockout: on a loopback listener every client has the
    /// same address, so a lockout would let any local process lock the
    /// operator out. The token's entropy is the defence (256 bits when
    /// generated, at least 32 characters when given); the delay makes each
    /// wrong guess cost a second of the guesser's time.
    /// The tenant whose admin token `presented` is, if it is one: found by
    /// its digest (the token carries 256 random bits, see
    /// `opd_service::tenants::new_token`), so nothing about it is compared
    /// piecewise. The operator's token is never a tenant's.
    pub(crate) async fn tenant_of(
        &self,
        presented: &str,
    ) -> Result<Option<opd_core::TenantId>, crate::error::ApiError> {
        if !presented.starts_with("opd_tenant_") {
            return Ok(None);
        }
        let digest = opd_service::tenants::token_digest(presented);
        let tenant = self.app.services.store.tenant_by_token(&digest).await;
        let tenant = tenant.map_err(opd_service::ServiceError::from)?;
        Ok(tenant.map(|t| t.id))
    }

    pub(crate) async fn token_matches(&self, presented: &str) -> bool {
        let digest: [u8; 32] = Sha256::digest(presented.as_bytes()).into();
        let matches = bool::from(digest.ct_eq(&self.token_sha256));
        if !matches {
            tokio::time::sleep(WRONG_TOKEN_DELAY).await;
        }
        matches
    }
}

/// How long a wrong admin token waits for its 401.
pub(crate) const WRONG_TOKEN_DELAY: Duration = Duration::from_secs(1);
