//! Whose admin credential a request carries: the operator's (everything,
//! every tenant) or one tenant's (only its own wallet addresses and what
//! belongs to them). A tenant's token reaches only the routes in
//! [`TENANT_ROUTES`]; on any other it is answered like an unknown route,
//! and a wallet address or payment of another tenant is not found.

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use opd_core::wallet_address::WalletAddress;
use opd_core::TenantId;

use crate::error::ApiError;

/// The scope of an admin request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum AdminScope {
    Operator,
    Tenant(TenantId),
}

impl AdminScope {
    /// Whether this scope may see and act on `wallet`.
    pub(crate) fn may_see(&self, wallet: &WalletAddress) -> bool {
        match self {
            AdminScope::Operator => true,
            AdminScope::Tenant(t) => &wallet.tenant == t,
        }
    }

    /// The tenant a request names (`asked`, such as `?tenant=`): any for
    /// the operator (`None` when it names none); for a tenant's token its
    /// own, whether named or not, and another named is not found.
    pub(crate) fn tenant_asked(&self, asked: Option<&str>) -> Result<Option<TenantId>, ApiError> {
        let asked = asked
            .map(|t| TenantId::parse(t).map_err(|_| ApiError::not_found("tenant")))
            .transpose()?;
        match (self, asked) {
            (AdminScope::Operator, asked) => Ok(asked),
            (AdminScope::Tenant(own), None) => Ok(Some(own.clone())),
            (AdminScope::Tenant(own), Some(asked)) if &asked == own => Ok(Some(asked)),
            (AdminScope::Tenant(_), Some(_)) => Err(ApiError::not_found("tenant")),
        }
    }

    /// The tenant a tenant's token is limited to.
    pub(crate) fn tenant(&self) -> Option<&TenantId> {
        match self {
            AdminScope::Operator => None,
            AdminScope::Tenant(t) => Some(t),
        }
    }
}

impl<S: Send + Sync> FromRequestParts<S> for AdminScope {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ApiError> {
        // Set by the token check every protected route sits behind.
        parts
            .extensions
            .get::<AdminScope>()
            .cloned()
            .ok_or_else(|| ApiError::not_found("route"))
    }
}

/// The routes a tenant's admin token may use: its wallet addresses, their
/// keys, owners' passwords and money, and its payments.
pub(crate) const TENANT_ROUTES: &[&str] = &[
    "/wallet-addresses",
    "/wallet-addresses/{wallet}",
    "/wallet-addresses/{wallet}/deactivate",
    "/wallet-addresses/{wallet}/keys",
    "/wallet-addresses/{wallet}/keys/{kid}",
    "/wallet-addresses/{wallet}/owner-password",
    "/wallet-addresses/{wallet}/deposits",
    "/wallet-addresses/{wallet}/withdrawals",
    "/wallet-addresses/{wallet}/balance",
    "/wallet-addresses/{wallet}/transfers",
    "/outgoing-payments/{id}/cancel",
    "/outgoing-payments/{id}/fund",
    "/incoming-payments/{id}/withdrawals",
    "/wallet-addresses/{wallet}/spsp-withdrawals",
    "/fees",
    "/fees/{code}/{scale}",
];

/// Whether a tenant's token may use the route `template` matched.
pub(crate) fn tenant_may_use(template: Option<&str>) -> bool {
    template.is_some_and(|t| TENANT_ROUTES.contains(&t))
}
