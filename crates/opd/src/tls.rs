//! TLS on the listeners (`--tls-cert`, `--tls-key`), so that one binary
//! can serve `https://` wallet addresses without a proxy. The certificate
//! is read again on SIGHUP and when its files change (checked every few
//! seconds), so a renewed certificate (ACME, a bank's PKI) is served
//! without a restart; a renewal that cannot be read is logged and the
//! current certificate kept.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, SystemTime};

use anyhow::Context as _;
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use tokio::sync::watch;
use tokio_rustls::TlsAcceptor;

/// How often the certificate files are checked for a change.
const CHECK_EVERY: Duration = Duration::from_secs(5);

/// The served certificate, replaced when its files change.
#[derive(Debug)]
pub struct Reloading {
    cert: PathBuf,
    key: PathBuf,
    current: RwLock<Arc<CertifiedKey>>,
    /// The files' modification times when last read.
    read_at: Mutex<(Option<SystemTime>, Option<SystemTime>)>,
}

fn modified(path: &Path) -> Option<SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// Reads a PEM certificate chain and its private key.
fn load(cert: &Path, key: &Path) -> anyhow::Result<CertifiedKey> {
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
        .with_context(|| format!("cannot read the TLS certificate {}", cert.display()))?
        .collect::<Result<_, _>>()
        .with_context(|| format!("the TLS certificate {} is not PEM", cert.display()))?;
    anyhow::ensure!(
        !chain.is_empty(),
        "the TLS certificate {} holds no certificate",
        cert.display()
    );
    let private = PrivateKeyDer::from_pem_file(key)
        .with_context(|| format!("cannot read a PEM private key from {}", key.display()))?;
    let signing = provider()
        .key_provider
        .load_private_key(private)
        .with_context(|| format!("the TLS key {} cannot sign", key.display()))?;
    let certified = CertifiedKey::new(chain, signing);
    certified
        .keys_match()
        .with_context(|| format!("the TLS key {} is not the certificate's", key.display()))?;
    Ok(certified)
}

impl Reloading {
    /// Reads the certificate again if its files changed (or `force`).
    fn reload(&self, force: bool) {
        let now = (modified(&self.cert), modified(&self.key));
        {
            let read_at = self.read_at.lock().unwrap_or_else(|e| e.into_inner());
            if !force && *read_at == now {
                return;
            }
        }
        match load(&self.cert, &self.key) {
            Ok(certified) => {
                *self.current.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(certified);
                *self.read_at.lock().unwrap_or_else(|e| e.into_inner()) = now;
                tracing::info!(cert = %self.cert.display(), "TLS certificate loaded");
            }
            Err(e) => {
                // Keeps the current one; tries again at the next change.
                *self.read_at.lock().unwrap_or_else(|e| e.into_inner()) = now;
                tracing::error!(error = format!("{e:#}"), "TLS certificate not reloaded");
            }
        }
    }

    /// Reloads on SIGHUP and when the files change, until `stop`.
    pub async fn watch(self: Arc<Self>, mut stop: watch::Receiver<bool>) {
        let mut hangup =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup()).ok();
        loop {
            let signalled = async {
                match hangup.as_mut() {
                    Some(h) => {
                        h.recv().await;
                    }
                    None => std::future::pending::<()>().await,
                }
            };
            tokio::select! {
                () = signalled => self.reload(true),
                () = tokio::time::sleep(CHECK_EVERY) => self.reload(false),
                _ = stop.wait_for(|s| *s) => return,
            }
        }
    }
}

impl ResolvesServerCert for Reloading {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(
            self.current
                .read()
                .unwrap_or_else(|e| e.into_inner())
                .clone(),
        )
    }
}

/// The acceptor every listener shares, and its certificate's reloader.
pub fn acceptor(cert: &Path, key: &Path) -> anyhow::Result<(TlsAcceptor, Arc<Reloading>)> {
    let certified = load(cert, key)?;
    let reloading = Arc::new(Reloading {
        cert: cert.to_owned(),
        key: key.to_owned(),
        current: RwLock::new(Arc::new(certified)),
        read_at: Mutex::new((modified(cert), modified(key))),
    });
    let mut config = rustls::ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .context("TLS protocol versions")?
        .with_no_client_auth()
        .with_cert_resolver(reloading.clone());
    // opd speaks HTTP/1.1 only.
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok((TlsAcceptor::from(Arc::new(config)), reloading))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn served(r: &Reloading) -> Vec<u8> {
        let current = r.current.read().unwrap_or_else(|e| e.into_inner()).clone();
        current.cert[0].as_ref().to_vec()
    }

    #[test]
    fn a_renewed_certificate_is_served_and_a_broken_one_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let ca = opd_testkit::tls::test_ca();
        let (cert, key) = ca.issue(dir.path());
        let (_, reloading) = acceptor(&cert, &key).unwrap();
        let first = served(&reloading);
        // Unchanged files: nothing read again.
        reloading.reload(false);
        assert_eq!(served(&reloading), first);
        // Renewed: served from the next check on.
        ca.issue(dir.path());
        reloading.reload(false);
        let renewed = served(&reloading);
        assert_ne!(renewed, first);
        // A renewal that cannot be read keeps the current certificate.
        std::fs::write(&cert, "not a certificate").unwrap();
        reloading.reload(true);
        assert_eq!(served(&reloading), renewed);
        // And a key that is not the certificate's is refused at start.
        let other = tempfile::tempdir().unwrap();
        let (_, other_key) = ca.issue(other.path());
        ca.issue(dir.path());
        assert!(acceptor(&cert, &other_key).is_err());
    }
}
