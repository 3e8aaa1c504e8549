//! Ed25519 public keys as JSON Web Keys (RFC 7517 / RFC 8037), the way
//! Open Payments publishes them at `<wallet address>/jwks.json`.
//!
//! ```json
//! {"kid":"key-1","alg":"EdDSA","kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}
//! ```

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use ed25519_dalek::{SigningKey, VerifyingKey, PUBLIC_KEY_LENGTH};
use serde::{Deserialize, Serialize};

/// A JSON Web Key as used by Open Payments (Ed25519 only).
///
/// Deserialising does not validate; call [`Jwk::verifying_key`] (or
/// [`Jwk::validate`]) before trusting it. Unknown members are ignored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Jwk {
    /// Key id; matched against the `keyid` signature parameter.
    pub kid: String,
    /// Algorithm; must be `EdDSA` when present.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alg: Option<String>,
    /// Public key use; must be `sig` when present.
    #[serde(rename = "use", default, skip_serializing_if = "Option::is_none")]
    pub use_: Option<String>,
    /// Key type; must be `OKP`.
    pub kty: String,
    /// Curve; must be `Ed25519`.
    pub crv: String,
    /// The 32-byte public key, base64url without padding.
    pub x: String,
}

/// A JWK Set document (`{"keys":[...]}`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Jwks {
    /// The keys.
    pub keys: Vec<Jwk>,
}

/// Why a [`Jwk`] is not a usable Ed25519 verification key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum JwkError {
    /// `kid` is empty.
    #[error("kid is empty")]
    EmptyKid,
    /// `kty` is not `OKP`.
    #[error("kty must be OKP, got {0:?}")]
    UnsupportedKty(String),
    /// `crv` is not `Ed25519`.
    #[error("crv must be Ed25519, got {0:?}")]
    UnsupportedCrv(String),
    /// `alg` is present and not `EdDSA`.
    #[error("alg must be EdDSA, got {0:?}")]
    UnsupportedAlg(String),
    /// `use` is present and not `sig`.
    #[error("use must be sig, got {0:?}")]
    UnsupportedUse(String),
    /// `x` is not unpadded base64url of exactly 32 bytes.
    #[error("x must be unpadded base64url of 32 bytes")]
    InvalidX,
    /// `x` decodes to 32 bytes that are not a usable Ed25519 public key
    /// (not a curve point, or a small-order point).
    #[error("x is not a valid Ed25519 public key")]
    InvalidPublicKey,
}

impl Jwk {
    /// Builds the public JWK for `key` (`alg` = `EdDSA`, no `use`), like the
    /// Node `generateJwk` helper.
    pub fn from_signing_key(key: &SigningKey, kid: impl Into<String>) -> Self {
        Self::from_verifying_key(&key.verifying_key(), kid)
    }

    /// Builds a JWK for a public key (`alg` = `EdDSA`, no `use`).
    pub fn from_verifying_key(key: &VerifyingKey, kid: impl Into<String>) -> Self {
        Jwk {
            kid: kid.into(),
            alg: Some("EdDSA".to_owned()),
            use_: None,
            kty: "OKP".to_owned(),
            crv: "Ed25519".to_owned(),
            x: URL_SAFE_NO_PAD.encode(key.as_bytes()),
        }
    }

    /// Checks every field and returns the Ed25519 public key.
    pub fn verifying_key(&self) -> Result<VerifyingKey, JwkError> {
        if self.kid.is_empty() {
            return Err(JwkError::EmptyKid);
        }
        if self.kty != "OKP" {
            return Err(JwkError::UnsupportedKty(self.kty.clone()));
        }
        if self.crv != "Ed25519" {
            return Err(JwkError::UnsupportedCrv(self.crv.clone()));
        }
        if let Some(alg) = &self.alg {
            if alg != "EdDSA" {
                return Err(JwkError::UnsupportedAlg(alg.clone()));
            }
        }
        if let Some(use_) = &self.use_ {
            if use_ != "sig" {
                return Err(JwkError::UnsupportedUse(use_.clone()));
            }
        }
        let bytes = URL_SAFE_NO_PAD
            .decode(self.x.as_bytes())
            .map_err(|_| JwkError::InvalidX)?;
        let bytes: [u8; PUBLIC_KEY_LENGTH] = bytes.try_into().map_err(|_| JwkError::InvalidX)?;
        let key = VerifyingKey::from_bytes(&bytes).map_err(|_| JwkError::InvalidPublicKey)?;
        if key.is_weak() {
            return Err(JwkError::InvalidPublicKey);
        }
        Ok(key)
    }

    /// Same checks as [`Jwk::verifying_key`], discarding the key.
    pub fn validate(&self) -> Result<(), JwkError> {
        self.verifying_key().map(|_| ())
    }
}

impl Jwks {
    /// The first key whose `kid` equals `kid`.
    pub fn find(&self, kid: &str) -> Option<&Jwk> {
        self.keys.iter().find(|k| k.kid == kid)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 8037 §A.1 / the Open Payments JWKS example.
    const RFC8037_X: &str = "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo";
    const RFC8037_D: &str = "nWGxne_9WmC6hEr0kuwsxERJxWl7MmkZcDusAxyuf2A";

    fn rfc_jwk() -> Jwk {
        serde_json::from_str(&format!(
            r#"{{"kid":"k1","alg":"EdDSA","use":"sig","kty":"OKP","crv":"Ed25519","x":"{RFC8037_X}"}}"#
        ))
        .unwrap()
    }

    #[test]
    fn parses_and_validates_spec_example() {
        let jwk = rfc_jwk();
        assert_eq!(jwk.use_.as_deref(), Some("sig"));
        let vk = jwk.verifying_key().unwrap();
        let seed: [u8; 32] = URL_SAFE_NO_PAD
            .decode(RFC8037_D)
            .unwrap()
            .try_into()
            .unwrap();
        let sk = SigningKey::from_bytes(&seed);
        assert_eq!(sk.verifying_key(), vk);
        let built = Jwk::from_signing_key(&sk, "k1");
        assert_eq!(built.x, RFC8037_X);
        assert_eq!(built.use_, None);
    }

    #[test]
    fn serializes_wire_names() {
        let v = serde_json::to_value(rfc_jwk()).unwrap();
        let obj = v.as_object().unwrap();
        let mut keys: Vec<_> = obj.keys().cloned().collect();
        keys.sort();
        assert_eq!(keys, ["alg", "crv", "kid", "kty", "use", "x"]);
        let without: Jwk = serde_json::from_str(&format!(
            r#"{{"kid":"k","kty":"OKP","crv":"Ed25519","x":"{RFC8037_X}","extra":1}}"#
        ))
        .unwrap();
        let v = serde_json::to_value(&without).unwrap();
        assert!(v.get("alg").is_none() && v.get("use").is_none());
        assert!(without.validate().is_ok());
    }

    #[test]
    fn jwks_find() {
        let jwks: Jwks = serde_json::from_str(&format!(
            r#"{{"keys":[{{"kid":"a","alg":"EdDSA","kty":"OKP","crv":"Ed25519","x":"{RFC8037_X}"}}]}}"#
        ))
        .unwrap();
        assert!(jwks.find("a").is_some());
        assert!(jwks.find("b").is_none());
    }

    #[test]
    fn rejects_bad_fields() {
        let base = rfc_jwk();
        let cases: Vec<(Jwk, JwkError)> = vec![
            (
                Jwk {
                    kid: String::new(),
                    ..base.clone()
                },
                JwkError::EmptyKid,
            ),
            (
                Jwk {
                    kty: "EC".into(),
                    ..base.clone()
                },
                JwkError::UnsupportedKty("EC".into()),
            ),
            (
                Jwk {
                    crv: "X25519".into(),
                    ..base.clone()
                },
                JwkError::UnsupportedCrv("X25519".into()),
            ),
            (
                Jwk {
                    alg: Some("ES256".into()),
                    ..base.clone()
                },
                JwkError::UnsupportedAlg("ES256".into()),
            ),
            (
                Jwk {
                    use_: Some("enc".into()),
                    ..base.clone()
                },
                JwkError::UnsupportedUse("enc".into()),
            ),
            (
                Jwk {
                    x: format!("{RFC8037_X}="),
                    ..base.clone()
                },
                JwkError::InvalidX,
            ),
            (
                Jwk {
                    x: "AAAA".into(),
                    ..base.clone()
                },
                JwkError::InvalidX,
            ),
            (
                Jwk {
                    x: RFC8037_X.replace('_', "/"),
                    ..base.clone()
                },
                JwkError::InvalidX,
            ),
            (
                // The identity point: small order, rejected as weak.
                Jwk {
                    x: URL_SAFE_NO_PAD.encode({
                        let mut b = [0u8; 32];
                        b[0] = 1;
                        b
                    }),
                    ..base.clone()
                },
                JwkError::InvalidPublicKey,
            ),
        ];
        for (jwk, err) in cases {
            assert_eq!(jwk.verifying_key().unwrap_err(), err, "{jwk:?}");
        }
    }
}
