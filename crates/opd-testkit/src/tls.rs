//! A private certificate authority for TLS tests, made once per test
//! process (rcgen), and the HTTP clients of the kit: once a test calls
//! [`trust_test_ca`], every client the kit builds afterwards trusts that
//! authority too (as an operator's clients trust a bank's internal PKI).
//! Trusting one more authority changes nothing for plain-HTTP tests
//! running beside it.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair, SanType};

/// The test authority: its certificate (PEM) and what signs with it.
pub struct TestCa {
    pub cert_pem: String,
    cert: rcgen::Certificate,
    key: KeyPair,
}

impl std::fmt::Debug for TestCa {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TestCa")
    }
}

static CA: OnceLock<TestCa> = OnceLock::new();
static TRUSTED: OnceLock<reqwest::Certificate> = OnceLock::new();

/// The process's test authority.
pub fn test_ca() -> &'static TestCa {
    CA.get_or_init(|| {
        let key = KeyPair::generate().expect("a CA key");
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(DnType::CommonName, "opd test CA");
        let cert = params.self_signed(&key).expect("a CA certificate");
        TestCa {
            cert_pem: cert.pem(),
            cert,
            key,
        }
    })
}

impl TestCa {
    /// Writes the authority's certificate into `dir`: the `--ca-file`.
    pub fn write_ca(&self, dir: &Path) -> PathBuf {
        let path = dir.join("test-ca.pem");
        std::fs::write(&path, &self.cert_pem).expect("write the CA");
        path
    }

    /// Issues a server certificate for `localhost` and 127.0.0.1 and
    /// writes it and its key into `dir`: `(--tls-cert, --tls-key)`.
    pub fn issue(&self, dir: &Path) -> (PathBuf, PathBuf) {
        self.issue_for(dir, &["localhost", "127.0.0.1"], false)
    }

    /// Issues a server certificate for `names` (host names, or addresses),
    /// long expired when `expired`, and writes it and its key into `dir`:
    /// the certificates a client must refuse and name why.
    pub fn issue_for(&self, dir: &Path, names: &[&str], expired: bool) -> (PathBuf, PathBuf) {
        let key = KeyPair::generate().expect("a server key");
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("server params");
        params.subject_alt_names = names
            .iter()
            .map(|n| match n.parse::<std::net::IpAddr>() {
                Ok(ip) => SanType::IpAddress(ip),
                Err(_) => SanType::DnsName((*n).try_into().expect("a DNS name")),
            })
            .collect();
        if expired {
            params.not_before = rcgen::date_time_ymd(2001, 1, 1);
            params.not_after = rcgen::date_time_ymd(2002, 1, 1);
        }
        let cert = params
            .signed_by(&key, &self.cert, &self.key)
            .expect("a server certificate");
        let (cert_path, key_path) = (dir.join("tls-cert.pem"), dir.join("tls-key.pem"));
        std::fs::write(&cert_path, cert.pem()).expect("write the certificate");
        std::fs::write(&key_path, key.serialize_pem()).expect("write the key");
        (cert_path, key_path)
    }
}

/// From now on, the clients this kit builds trust the test authority.
pub fn trust_test_ca() {
    TRUSTED.get_or_init(|| {
        reqwest::Certificate::from_pem(test_ca().cert_pem.as_bytes()).expect("the CA as PEM")
    });
}

/// A client builder of the kit: trusting the test authority once
/// [`trust_test_ca`] was called.
pub fn client_builder() -> reqwest::ClientBuilder {
    let builder = reqwest::Client::builder();
    match TRUSTED.get() {
        Some(ca) => builder.add_root_certificate(ca.clone()),
        None => builder,
    }
}

/// A client of the kit (see [`client_builder`]).
pub fn client() -> reqwest::Client {
    client_builder().build().expect("an HTTP client")
}
