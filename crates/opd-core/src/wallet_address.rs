//! Wallet addresses and their public keys.

use std::fmt;

use base64::Engine;

use crate::ids::WalletAddressId;
use crate::money::Asset;
use crate::time::Timestamp;

/// First path segments that belong to the server's own routes and so can
/// never be a wallet address.
const RESERVED_FIRST_SEGMENTS: &[&str] = &[
    "incoming-payments",
    "outgoing-payments",
    "quotes",
    "outgoing-payment-grant",
    "healthz",
    "readyz",
    ".well-known",
    "jwks.json",
    "did.json",
];

/// The path of the server's own wallet address (its identity when it acts
/// as a client of other Open Payments servers).
pub const SERVER_WALLET_ADDRESS_PATH: &str = ".well-known/pay";

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WalletAddressPathError {
    #[error("wallet address path must be 1 to 8 segments separated by '/', each 1 to 64 of the characters a-z 0-9 . _ ~ -")]
    Invalid,
    #[error("wallet address path {0:?} is reserved for the server's own routes")]
    Reserved(String),
}

/// The path of a wallet address below the public URL, such as `alice` or
/// `accounts/alice`. Always lowercase: wallet address URLs match
/// case-insensitively.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct WalletAddressPath(String);

impl WalletAddressPath {
    /// Parses a path an operator asks for; reserved paths are refused.
    pub fn parse(s: &str) -> Result<Self, WalletAddressPathError> {
        let path = Self::parse_any(s)?;
        let first = path.0.split('/').next().unwrap_or_default();
        let last = path.0.rsplit('/').next().unwrap_or_default();
        if RESERVED_FIRST_SEGMENTS.contains(&first) || last == "jwks.json" || last == "did.json" {
            return Err(WalletAddressPathError::Reserved(path.0));
        }
        Ok(path)
    }

    /// The server's own wallet address path.
    pub fn server() -> Self {
        Self(SERVER_WALLET_ADDRESS_PATH.to_owned())
    }

    /// Parses a path found in a request URL, reserved or not; used for
    /// lookups, which only ever find paths that were created.
    pub fn parse_any(s: &str) -> Result<Self, WalletAddressPathError> {
        let s = s.trim_matches('/');
        let lower = s.to_ascii_lowercase();
        let segments: Vec<&str> = lower.split('/').collect();
        let valid_segment = |seg: &&str| {
            !seg.is_empty()
                && seg.len() <= 64
                && *seg != "."
                && *seg != ".."
                && seg
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"._~-".contains(&b))
        };
        if segments.is_empty() || segments.len() > 8 || !segments.iter().all(valid_segment) {
            return Err(WalletAddressPathError::Invalid);
        }
        Ok(Self(lower))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for WalletAddressPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A wallet address hosted by this server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WalletAddress {
    pub id: WalletAddressId,
    /// The tenant it belongs to; its path is unique within the tenant.
    pub tenant: crate::tenant::TenantId,
    pub path: WalletAddressPath,
    pub asset: Asset,
    pub public_name: Option<String>,
    pub created_at: Timestamp,
    pub deactivated_at: Option<Timestamp>,
}

impl WalletAddress {
    pub fn is_active(&self, now: Timestamp) -> bool {
        self.deactivated_at.is_none_or(|t| t > now)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PublicKeyError {
    #[error("jwk.kid must be 1 to 256 printable characters")]
    Kid,
    #[error("jwk.kty must be \"OKP\"")]
    Kty,
    #[error("jwk.crv must be \"Ed25519\"")]
    Crv,
    #[error("jwk.alg must be \"EdDSA\"")]
    Alg,
    #[error("jwk.use must be \"sig\"")]
    Use,
    #[error("jwk.x must be the unpadded base64url encoding of a 32-byte Ed25519 public key")]
    X,
}

/// An Ed25519 public key of a wallet address, as published in its JWKS.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublicKey {
    pub kid: String,
    /// Unpadded base64url of the 32 key bytes.
    pub x: String,
}

impl PublicKey {
    /// Validates the members of a JWK; `alg` and `use` may be absent.
    pub fn from_jwk_parts(
        kid: &str,
        kty: &str,
        crv: &str,
        alg: Option<&str>,
        use_: Option<&str>,
        x: &str,
    ) -> Result<Self, PublicKeyError> {
        if kid.is_empty() || kid.len() > 256 || !kid.chars().all(|c| !c.is_control()) {
            return Err(PublicKeyError::Kid);
        }
        if kty != "OKP" {
            return Err(PublicKeyError::Kty);
        }
        if crv != "Ed25519" {
            return Err(PublicKeyError::Crv);
        }
        if alg.is_some_and(|a| a != "EdDSA") {
            return Err(PublicKeyError::Alg);
        }
        if use_.is_some_and(|u| u != "sig") {
            return Err(PublicKeyError::Use);
        }
        let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(x)
            .map_err(|_| PublicKeyError::X)?;
        if bytes.len() != 32 {
            return Err(PublicKeyError::X);
        }
        Ok(Self {
            kid: kid.to_owned(),
            x: x.to_owned(),
        })
    }

    /// The 32 key bytes.
    pub fn key_bytes(&self) -> [u8; 32] {
        let mut out = [0u8; 32];
        if let Ok(bytes) = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(&self.x) {
            if bytes.len() == 32 {
                out.copy_from_slice(&bytes);
            }
        }
        out
    }
}

/// A key as stored: which wallet address, and whether it was revoked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WalletAddressKey {
    pub wallet_address_id: WalletAddressId,
    pub key: PublicKey,
    pub created_at: Timestamp,
    pub revoked_at: Option<Timestamp>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_lowercased_and_checked() {
        assert_eq!(WalletAddressPath::parse("Alice").unwrap().as_str(), "alice");
        assert_eq!(
            WalletAddressPath::parse("/accounts/Bob/").unwrap().as_str(),
            "accounts/bob"
        );
        for bad in ["", "/", "a//b", "a b", "ä", "..", "a/../b", "x?y"] {
            assert_eq!(
                WalletAddressPath::parse(bad),
                Err(WalletAddressPathError::Invalid),
                "{bad}"
            );
        }
        for reserved in [
            "quotes",
            "incoming-payments",
            ".well-known/pay",
            "alice/jwks.json",
        ] {
            assert!(matches!(
                WalletAddressPath::parse(reserved),
                Err(WalletAddressPathError::Reserved(_))
            ));
        }
        assert!(WalletAddressPath::parse_any(".well-known/pay").is_ok());
    }

    #[test]
    fn paths_have_at_most_eight_segments() {
        let eight = "a/b/c/d/e/f/g/h";
        let path = WalletAddressPath::parse_any(eight).unwrap();
        assert_eq!(path.to_string(), eight);
        assert_eq!(
            WalletAddressPath::parse_any("a/b/c/d/e/f/g/h/i"),
            Err(WalletAddressPathError::Invalid)
        );
    }

    #[test]
    fn active_until_the_deactivation_instant() {
        let now = Timestamp::from_unix_millis(5_000);
        let random = crate::clock::SeededRandom::new(3);
        let wallet = |deactivated_at| WalletAddress {
            id: WalletAddressId::new(now, &random),
            tenant: crate::tenant::TenantId::operator(),
            path: WalletAddressPath::parse("alice").unwrap(),
            asset: crate::money::Asset::parse("USD", 2).unwrap(),
            public_name: None,
            created_at: now,
            deactivated_at,
        };
        assert!(wallet(None).is_active(now));
        assert!(wallet(Some(now.plus_millis(1))).is_active(now));
        assert!(!wallet(Some(now)).is_active(now));
        assert!(!wallet(Some(now.plus_millis(-1))).is_active(now));
    }

    #[test]
    fn key_ids_up_to_256_characters_and_key_bytes() {
        let x = "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo";
        let kid = "k".repeat(256);
        let key = PublicKey::from_jwk_parts(&kid, "OKP", "Ed25519", None, None, x).unwrap();
        assert_eq!(
            PublicKey::from_jwk_parts(&"k".repeat(257), "OKP", "Ed25519", None, None, x),
            Err(PublicKeyError::Kid)
        );
        let expected = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(x)
            .unwrap();
        assert_eq!(key.key_bytes().to_vec(), expected);
        // Only reachable through the public fields: not a key, so zeros.
        let broken = PublicKey {
            kid: "k".into(),
            x: "abc".into(),
        };
        assert_eq!(broken.key_bytes(), [0u8; 32]);
    }

    #[test]
    fn jwk_members_are_validated() {
        let x = "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo";
        assert!(
            PublicKey::from_jwk_parts("k1", "OKP", "Ed25519", Some("EdDSA"), Some("sig"), x)
                .is_ok()
        );
        assert_eq!(
            PublicKey::from_jwk_parts("", "OKP", "Ed25519", None, None, x),
            Err(PublicKeyError::Kid)
        );
        assert_eq!(
            PublicKey::from_jwk_parts("k", "RSA", "Ed25519", None, None, x),
            Err(PublicKeyError::Kty)
        );
        assert_eq!(
            PublicKey::from_jwk_parts("k", "OKP", "X25519", None, None, x),
            Err(PublicKeyError::Crv)
        );
        assert_eq!(
            PublicKey::from_jwk_parts("k", "OKP", "Ed25519", Some("RS256"), None, x),
            Err(PublicKeyError::Alg)
        );
        assert_eq!(
            PublicKey::from_jwk_parts("k", "OKP", "Ed25519", None, None, "abc"),
            Err(PublicKeyError::X)
        );
        assert_eq!(
            PublicKey::from_jwk_parts("k", "OKP", "Ed25519", None, None, &format!("{x}=")),
            Err(PublicKeyError::X)
        );
    }
}
