//! Why a destination's TLS certificate was refused, in terms an operator
//! acts on (trust the authority with `--ca-file`, renew, fix the name),
//! read from the TLS library's error.

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
    pub(crate) fn of(e: &rustls::Error) -> Option<Self> {
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
}
