//! Who the client is: its wallet address, the id of its key and the
//! Ed25519 private key, kept together in one JSON file readable only by its
//! owner:
//!
//! ```json
//! {"walletAddress":"https://wallet.example/shop","keyId":"shop-1","privateKey":"<base64 of the 32-byte seed>"}
//! ```
//!
//! `privateKey` may also be a PKCS#8 PEM (`-----BEGIN PRIVATE KEY-----`),
//! the form the reference server's wallet and test network hand out.

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use ed25519_dalek::pkcs8::DecodePrivateKey as _;
use ed25519_dalek::SigningKey;
use opd_httpsig::Jwk;
use serde::{Deserialize, Serialize};

/// Where the profile is read when no `--profile` is given: the file
/// `opd serve --demo` writes into its default data directory.
pub const DEFAULT_PROFILE: &str = "opd-data/client.json";

/// The file's contents.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ProfileFile {
    wallet_address: String,
    key_id: String,
    private_key: String,
}

/// A client identity that can sign requests.
#[derive(Clone)]
pub struct Profile {
    /// The client's wallet address URL (the `client` of its grant requests).
    pub wallet_address: String,
    /// The `kid` of its key, as registered at the wallet address.
    pub key_id: String,
    key: SigningKey,
}

impl std::fmt::Debug for Profile {
    // The key stays out of logs and panics.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Profile")
            .field("wallet_address", &self.wallet_address)
            .field("key_id", &self.key_id)
            .finish_non_exhaustive()
    }
}

impl Profile {
    /// A profile with a new random key.
    pub fn generate(wallet_address: &str, key_id: &str) -> Self {
        Self {
            wallet_address: wallet_address.to_owned(),
            key_id: key_id.to_owned(),
            key: SigningKey::generate(&mut rand::rngs::OsRng),
        }
    }

    /// A profile with the given key.
    pub fn with_key(wallet_address: &str, key_id: &str, key: SigningKey) -> Self {
        Self {
            wallet_address: wallet_address.to_owned(),
            key_id: key_id.to_owned(),
            key,
        }
    }

    /// Reads a profile file.
    pub fn load(path: &Path) -> anyhow::Result<Self> {
        let text = std::fs::read_to_string(path).with_context(|| {
            format!(
                "cannot read the client profile {} (make one with `opd client keys generate`, \
                 or start `opd serve --demo` for the demo one)",
                path.display()
            )
        })?;
        let file: ProfileFile = serde_json::from_str(&text)
            .with_context(|| format!("{} is not a client profile", path.display()))?;
        let key = parse_private_key(&file.private_key)
            .with_context(|| format!("the private key in {}", path.display()))?;
        Ok(Self::with_key(&file.wallet_address, &file.key_id, key))
    }

    /// Writes the profile, readable only by its owner; refuses to replace
    /// an existing file (a key lost is an identity lost).
    pub fn save_new(&self, path: &Path) -> anyhow::Result<()> {
        let file = ProfileFile {
            wallet_address: self.wallet_address.clone(),
            key_id: self.key_id.clone(),
            private_key: STANDARD.encode(self.key.to_bytes()),
        };
        let text = serde_json::to_string_pretty(&file)?;
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)?;
        }
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let mut out = options
            .open(path)
            .with_context(|| format!("cannot create {}", path.display()))?;
        std::io::Write::write_all(&mut out, format!("{text}\n").as_bytes())?;
        Ok(())
    }

    /// The public key to register at the wallet address.
    pub fn jwk(&self) -> Jwk {
        Jwk::from_signing_key(&self.key, self.key_id.clone())
    }

    pub(crate) fn key(&self) -> &SigningKey {
        &self.key
    }
}

/// The base64 seed or a PKCS#8 PEM.
fn parse_private_key(text: &str) -> anyhow::Result<SigningKey> {
    let text = text.trim();
    if text.starts_with("-----BEGIN") {
        return SigningKey::from_pkcs8_pem(text)
            .map_err(|e| anyhow::anyhow!("not an Ed25519 PKCS#8 PEM key: {e}"));
    }
    let bytes = STANDARD
        .decode(text)
        .context("not base64 (nor a PEM key)")?;
    let seed: [u8; 32] = bytes
        .try_into()
        .map_err(|_| anyhow::anyhow!("an Ed25519 key is 32 bytes"))?;
    Ok(SigningKey::from_bytes(&seed))
}

/// The profile path: `--profile`, else `OPD_CLIENT_PROFILE` (clap reads
/// it), else [`DEFAULT_PROFILE`].
pub fn path_or_default(given: Option<&Path>) -> PathBuf {
    given.map_or_else(|| PathBuf::from(DEFAULT_PROFILE), Path::to_path_buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_saved_profile_loads_with_the_same_key() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/client.json");
        let p = Profile::generate("https://w.example/shop", "k1");
        p.save_new(&path).unwrap();
        let back = Profile::load(&path).unwrap();
        assert_eq!(back.wallet_address, "https://w.example/shop");
        assert_eq!(back.jwk(), p.jwk());
        // Never replaced.
        assert!(Profile::generate("https://w.example/x", "k2")
            .save_new(&path)
            .is_err());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        assert!(!format!("{back:?}").contains(&STANDARD.encode(back.key().to_bytes())));
    }

    #[test]
    fn a_pem_key_is_accepted() {
        // RFC 8410 §10.3's example private key.
        let pem = "-----BEGIN PRIVATE KEY-----\n\
                   MC4CAQAwBQYDK2VwBCIEINTuctv5E1hK1bbY8fdp+K06/nwoy/HU++CXqI9EdVhC\n\
                   -----END PRIVATE KEY-----";
        let key = parse_private_key(pem).unwrap();
        assert_eq!(
            key.to_bytes()[..4],
            [0xd4, 0xee, 0x72, 0xdb],
            "the seed of RFC 8410's example"
        );
        assert!(parse_private_key("not a key").is_err());
        assert!(parse_private_key(&STANDARD.encode([1u8; 31])).is_err());
    }
}
