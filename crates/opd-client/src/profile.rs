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
//!
//! The file also keeps the client's non-interactive grants for reuse
//! (`grants`, see [`crate::kept`]): access tokens, as private as the key.
//! It is rewritten whole when they change, through a new file renamed
//! over it, so that the key is never half-written.

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use ed25519_dalek::pkcs8::DecodePrivateKey as _;
use ed25519_dalek::SigningKey;
use opd_httpsig::Jwk;
use rand::Rng as _;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::kept::KeptGrant;

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
    /// Kept grants, read one by one: one this version cannot read is
    /// dropped, not the profile.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    grants: Vec<Value>,
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
        Ok(Self::load_with_grants(path)?.0)
    }

    /// Reads a profile file, with the grants it keeps.
    pub fn load_with_grants(path: &Path) -> anyhow::Result<(Self, Vec<KeptGrant>)> {
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
        let profile = Self::with_key(&file.wallet_address, &file.key_id, key);
        Ok((profile, readable_grants(&file.grants)))
    }

    /// Writes the profile, readable only by its owner; refuses to replace
    /// an existing file (a key lost is an identity lost).
    pub fn save_new(&self, path: &Path) -> anyhow::Result<()> {
        let file = ProfileFile {
            wallet_address: self.wallet_address.clone(),
            key_id: self.key_id.clone(),
            private_key: STANDARD.encode(self.key.to_bytes()),
            grants: Vec::new(),
        };
        let text = serde_json::to_string_pretty(&file)?;
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)?;
        }
        write_private(path, format!("{text}\n").as_bytes())
            .with_context(|| format!("cannot create {}", path.display()))
    }

    /// The public key to register at the wallet address.
    pub fn jwk(&self) -> Jwk {
        Jwk::from_signing_key(&self.key, self.key_id.clone())
    }

    pub(crate) fn key(&self) -> &SigningKey {
        &self.key
    }
}

fn readable_grants(grants: &[Value]) -> Vec<KeptGrant> {
    grants
        .iter()
        .filter_map(|g| serde_json::from_value(g.clone()).ok())
        .collect()
}

/// Changes the grants kept in the profile file at `path` (as it is now,
/// another run may have changed it) by `change`, and writes it back,
/// readable only by its owner, the rest of it as it was; `grants` is set
/// to what it then keeps. When the file cannot be read, `change` is made
/// to `grants` alone. The file is replaced by a rename, so it is whole at
/// any time, even should this fail midway; a symbolic link is followed,
/// not replaced.
pub fn update_grants(
    path: &Path,
    grants: &mut Vec<KeptGrant>,
    change: impl FnOnce(&mut Vec<KeptGrant>),
) -> anyhow::Result<()> {
    let (path, mut file) = match read_file(path) {
        Ok(read) => read,
        Err(e) => {
            change(grants);
            return Err(e);
        }
    };
    *grants = readable_grants(&file.grants);
    change(grants);
    file.grants = grants
        .iter()
        .map(serde_json::to_value)
        .collect::<Result<_, _>>()?;
    let text = format!("{}\n", serde_json::to_string_pretty(&file)?);
    let suffix: u64 = rand::thread_rng().gen();
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let temporary = path.with_file_name(format!(".{name}.{suffix:016x}.tmp"));
    let written = write_private(&temporary, text.as_bytes())
        .and_then(|()| Ok(std::fs::rename(&temporary, &path)?));
    if written.is_err() {
        let _ = std::fs::remove_file(&temporary);
    }
    written.with_context(|| format!("cannot write {}", path.display()))
}

/// The profile file at `path` (links followed: the real path) as it is.
fn read_file(path: &Path) -> anyhow::Result<(PathBuf, ProfileFile)> {
    let path =
        std::fs::canonicalize(path).with_context(|| format!("cannot find {}", path.display()))?;
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("cannot read {}", path.display()))?;
    let file = serde_json::from_str(&text)
        .with_context(|| format!("{} is not a client profile", path.display()))?;
    Ok((path, file))
}

/// Writes a new file readable only by its owner, synced to disk (it is
/// renamed over the profile next).
fn write_private(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut out = options.open(path)?;
    std::io::Write::write_all(&mut out, bytes)?;
    out.sync_all()?;
    Ok(())
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
    fn grants_are_kept_in_the_profile_which_stays_whole_and_private() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("client.json");
        // A PEM key, and a grant this version cannot read.
        let pem = "-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEINTuctv5E1hK1bbY8fdp+K06/nwoy/HU++CXqI9EdVhC\n-----END PRIVATE KEY-----";
        let file = serde_json::json!({
            "walletAddress": "https://w.example/shop", "keyId": "k1", "privateKey": pem,
            "grants": [{ "unknown": true }],
        });
        std::fs::write(&path, file.to_string()).unwrap();
        let (_, grants) = Profile::load_with_grants(&path).unwrap();
        assert!(grants.is_empty());
        let grant: KeptGrant = serde_json::from_value(serde_json::json!({
            "client": "https://w.example/shop", "authServer": "https://w.example/gnap",
            "resourceServer": "https://w.example", "access": [], "token": "t", "manage": "m",
        }))
        .unwrap();
        // Written through a link, the link stays.
        let link = dir.path().join("link.json");
        #[cfg(unix)]
        std::os::unix::fs::symlink(&path, &link).unwrap();
        #[cfg(not(unix))]
        std::fs::copy(&path, &link).unwrap();
        let mut grants = Vec::new();
        update_grants(&link, &mut grants, |all| all.push(grant.clone())).unwrap();
        assert_eq!(grants, std::slice::from_ref(&grant));
        let (_, kept) = Profile::load_with_grants(&path).unwrap();
        assert_eq!(kept, std::slice::from_ref(&grant));
        let text = std::fs::read_to_string(&path).unwrap();
        let back: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(back["privateKey"], pem, "the key as it was written");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            assert!(std::fs::symlink_metadata(&link).unwrap().is_symlink());
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        // Changed from what the file holds, not from what was read.
        let mut stale = Vec::new();
        update_grants(&path, &mut stale, |all| all.clear()).unwrap();
        assert!(stale.is_empty());
        assert!(Profile::load_with_grants(&path).unwrap().1.is_empty());
        // No leftovers; a file that cannot be read is no profile written.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2);
        let none = dir.path().join("none.json");
        update_grants(&none, &mut stale, |all| all.push(grant.clone())).unwrap_err();
        assert_eq!(stale, [grant], "changed here alone");
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
