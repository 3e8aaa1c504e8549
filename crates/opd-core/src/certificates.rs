//! Why a TLS certificate was refused, in terms a person acts on (trust
//! the authority with `--ca-file`, renew, fix the name), read from the TLS
//! library's error. One classification for both sides that make requests:
//! the server's outbound requests (key sets, peers, webhooks) and
//! `opd client`. Only with the `tls` feature, which brings rustls.

use std::error::Error;

/// Why a destination's certificate was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CertificateProblem {
    /// No trusted authority issued it (a private CA not given with
    /// `--ca-file`, or a self-signed certificate).
    NotTrusted,
    /// Expired, or not valid yet.
    Expired,
    /// Issued for another name than the URL's host.
    NameMismatch,
    /// Refused for another reason (revoked, malformed, ...).
    Refused,
}

impl std::fmt::Display for CertificateProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::NotTrusted => "certificate is not trusted",
            Self::Expired => "certificate is expired or not valid yet",
            Self::NameMismatch => "certificate does not match the host name",
            Self::Refused => "certificate was refused",
        })
    }
}

impl CertificateProblem {
    /// The problem `e` reports, when it is about the peer's certificate.
    pub fn of(e: &rustls::Error) -> Option<Self> {
        use rustls::CertificateError as C;
        let rustls::Error::InvalidCertificate(c) = e else {
            return None;
        };
        Some(match c {
            C::UnknownIssuer | C::BadSignature => Self::NotTrusted,
            C::Expired
            | C::ExpiredContext { .. }
            | C::NotValidYet
            | C::NotValidYetContext { .. } => Self::Expired,
            C::NotValidForName | C::NotValidForNameContext { .. } => Self::NameMismatch,
            _ => Self::Refused,
        })
    }

    /// The certificate problem anywhere in `e`'s chain of causes (an HTTP
    /// client's error wraps the TLS one several levels down).
    pub fn in_chain(e: &(dyn Error + 'static)) -> Option<Self> {
        let mut source = Some(e);
        while let Some(s) = source {
            // TLS errors arrive inside `io::Error`s (nested), whose
            // `source` skips the error each wraps.
            let mut candidate = Some(s);
            while let Some(c) = candidate {
                if let Some(problem) = c.downcast_ref::<rustls::Error>().and_then(Self::of) {
                    return Some(problem);
                }
                candidate = c
                    .downcast_ref::<std::io::Error>()
                    .and_then(|io| io.get_ref())
                    .map(|e| e as &(dyn Error + 'static));
            }
            source = s.source();
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustls::CertificateError as C;

    #[test]
    fn certificate_errors_are_named_and_found_in_a_chain() {
        let problem = |c: C| CertificateProblem::of(&rustls::Error::InvalidCertificate(c));
        assert_eq!(
            problem(C::UnknownIssuer),
            Some(CertificateProblem::NotTrusted)
        );
        assert_eq!(problem(C::Expired), Some(CertificateProblem::Expired));
        assert_eq!(problem(C::NotValidYet), Some(CertificateProblem::Expired));
        assert_eq!(
            problem(C::NotValidForName),
            Some(CertificateProblem::NameMismatch)
        );
        assert_eq!(problem(C::Revoked), Some(CertificateProblem::Refused));
        assert_eq!(CertificateProblem::of(&rustls::Error::DecryptError), None);
        // As an HTTP client reports it: an io::Error around an io::Error
        // around the TLS error.
        let inner = std::io::Error::other(rustls::Error::InvalidCertificate(C::Expired));
        let outer = std::io::Error::other(inner);
        assert_eq!(
            CertificateProblem::in_chain(&outer),
            Some(CertificateProblem::Expired)
        );
        assert_eq!(
            CertificateProblem::in_chain(&std::io::Error::other("refused")),
            None
        );
    }
}
