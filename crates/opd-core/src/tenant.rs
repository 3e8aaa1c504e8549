//! Tenants: the wallet providers (Account Servicing Entities) one opd
//! serves. Every wallet address belongs to one tenant, and so does every
//! resource of it. The operator's own tenant, [`TenantId::operator`],
//! exists in every database: an opd without other tenants is that one.

use std::fmt;

use crate::time::Timestamp;

/// Why a tenant's id or name was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TenantError {
    #[error(
        "tenant id must be 1 to 32 of the characters a-z 0-9 -, starting with a letter or digit"
    )]
    Id,
    #[error("tenant id {0:?} is the operator's")]
    Reserved(String),
    #[error("publicName must be 1 to 256 characters, none of them control characters")]
    Name,
}

/// A tenant's id, such as `acme`: short, lowercase, safe in a URL, a log
/// line and a command line.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TenantId(String);

/// The operator's tenant's id.
const OPERATOR: &str = "default";

impl TenantId {
    pub fn parse(s: &str) -> Result<Self, TenantError> {
        let ok_char = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-';
        let starts_well = s.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit());
        if s.is_empty() || s.len() > 32 || !starts_well || !s.chars().all(ok_char) {
            return Err(TenantError::Id);
        }
        Ok(Self(s.to_owned()))
    }

    /// Parses the id of a new tenant: any but the operator's.
    pub fn parse_new(s: &str) -> Result<Self, TenantError> {
        let id = Self::parse(s)?;
        if id.is_operator() {
            return Err(TenantError::Reserved(id.0));
        }
        Ok(id)
    }

    /// The operator's own tenant: it owns every wallet address made before
    /// tenants existed, takes its URLs from the server's configuration,
    /// and its admin token manages every tenant.
    pub fn operator() -> Self {
        Self(OPERATOR.to_owned())
    }

    pub fn is_operator(&self) -> bool {
        self.0 == OPERATOR
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for TenantId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A tenant's public name, shown on its consent and owner pages.
pub fn parse_public_name(s: &str) -> Result<String, TenantError> {
    let s = s.trim();
    if s.is_empty() || s.chars().count() > 256 || s.chars().any(char::is_control) {
        return Err(TenantError::Name);
    }
    Ok(s.to_owned())
}

/// A tenant as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tenant {
    pub id: TenantId,
    pub public_name: String,
    /// The base of its wallet addresses and resources (`https://wallet.a.example`
    /// or `https://opd.example/a`); `None` for the operator's tenant,
    /// whose base is the server's public URL.
    pub public_url: Option<String>,
    /// Its own authorization server, at the root of a host of its own
    /// (`https://auth.bank-a.example/`); `None`: the server's, shared.
    pub auth_server_url: Option<String>,
    /// Where its webhook events go; `None`: the server's webhook URL.
    pub webhook_url: Option<String>,
    /// Its consent app, where its wallet owners approve grants; `None`:
    /// the built-in consent page.
    pub idp_consent_url: Option<String>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids() {
        assert!(TenantId::parse("acme").is_ok());
        assert!(TenantId::parse("bank-2").is_ok());
        assert!(TenantId::parse("2fast").is_ok());
        for bad in ["", "-a", "Acme", "a_b", "a/b", "a.b", &"a".repeat(33), "é"] {
            assert_eq!(TenantId::parse(bad), Err(TenantError::Id), "{bad:?}");
        }
        assert!(TenantId::operator().is_operator());
        assert!(TenantId::parse_new("default").is_err());
        assert!(TenantId::parse_new("acme").is_ok());
        assert!(!TenantId::parse("acme").unwrap().is_operator());
    }

    #[test]
    fn names() {
        assert_eq!(parse_public_name(" Bank A ").unwrap(), "Bank A");
        assert!(parse_public_name("").is_err());
        assert!(parse_public_name("a\u{1b}[31m").is_err());
        assert!(parse_public_name(&"x".repeat(257)).is_err());
        assert!(parse_public_name(&"é".repeat(256)).is_ok());
    }
}
