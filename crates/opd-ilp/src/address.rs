//! ILP addresses as the Open Payments schema constrains them.
//!
//! The schema's pattern is
//! `^(g|private|example|peer|self|test[1-3]?|local)([.][a-zA-Z0-9_~-]+)+$`
//! with a maximum length of 1023: an allocation scheme followed by at least
//! one non-empty segment, segments separated by single dots, and only ASCII
//! letters, digits, `_`, `~` and `-` inside segments. [`IlpAddress`] only
//! holds strings that match it.

use std::fmt;
use std::str::FromStr;

use crate::IlpError;

/// Longest ILP address in bytes (RFC 15, and the Open Payments schema).
pub const MAX_ADDRESS_LEN: usize = 1023;

/// Allocation schemes the Open Payments pattern allows as the first segment.
const SCHEMES: [&str; 10] = [
    "g", "private", "example", "peer", "self", "test", "test1", "test2", "test3", "local",
];

/// A validated ILP address, such as `test.opd` or `g.wallet.alice`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct IlpAddress(String);

impl IlpAddress {
    /// Validates `address` against the Open Payments pattern.
    pub fn new(address: impl Into<String>) -> Result<Self, IlpError> {
        let address = address.into();
        validate(&address).map_err(IlpError::InvalidAddress)?;
        Ok(Self(address))
    }

    /// Whether `address` matches the Open Payments pattern.
    pub fn is_valid(address: &str) -> bool {
        validate(address).is_ok()
    }

    /// The address text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The address text, by value.
    pub fn into_string(self) -> String {
        self.0
    }

    /// The allocation scheme, e.g. `test` for `test.opd.alice`.
    pub fn scheme(&self) -> &str {
        self.0.split('.').next().unwrap_or_default()
    }

    /// This address with one more segment appended (`self + "." + segment`).
    pub fn child(&self, segment: &str) -> Result<Self, IlpError> {
        Self::new(format!("{}.{segment}", self.0))
    }

    /// Whether `self` is `prefix` or lies under it (`prefix + "." + ...`).
    pub fn starts_with(&self, prefix: &IlpAddress) -> bool {
        match self.0.strip_prefix(prefix.as_str()) {
            Some(rest) => rest.is_empty() || rest.starts_with('.'),
            None => false,
        }
    }
}

/// Checks the Open Payments pattern, returning why `address` fails it.
fn validate(address: &str) -> Result<(), &'static str> {
    if address.len() > MAX_ADDRESS_LEN {
        return Err("longer than 1023 bytes");
    }
    let mut segments = address.split('.');
    let scheme = segments.next().unwrap_or_default();
    if !SCHEMES.contains(&scheme) {
        return Err("unknown allocation scheme");
    }
    let mut count = 0usize;
    for segment in segments {
        if segment.is_empty() {
            return Err("empty segment");
        }
        if !segment.bytes().all(is_segment_byte) {
            return Err("segment has a character outside [a-zA-Z0-9_~-]");
        }
        count += 1;
    }
    if count == 0 {
        return Err("needs at least one segment after the allocation scheme");
    }
    Ok(())
}

fn is_segment_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'~' | b'-')
}

impl fmt::Display for IlpAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl AsRef<str> for IlpAddress {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl FromStr for IlpAddress {
    type Err = IlpError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::new(s)
    }
}

impl TryFrom<String> for IlpAddress {
    type Error = IlpError;

    fn try_from(s: String) -> Result<Self, Self::Error> {
        Self::new(s)
    }
}

impl TryFrom<&str> for IlpAddress {
    type Error = IlpError;

    fn try_from(s: &str) -> Result<Self, Self::Error> {
        Self::new(s)
    }
}

impl From<IlpAddress> for String {
    fn from(a: IlpAddress) -> Self {
        a.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn accepts_valid_addresses() {
        for a in [
            "g.a",
            "test.opd",
            "test1.x",
            "test2.x.y",
            "test3.x",
            "private.a-b_c~d",
            "example.connector",
            "peer.config",
            "self.x",
            "local.x.y.z",
            "g.US-Bank_1~x.ABC123",
        ] {
            assert!(IlpAddress::is_valid(a), "{a} should be valid");
            let address = IlpAddress::new(a).unwrap();
            assert_eq!(address.as_ref(), a);
            assert_eq!(String::from(address), a);
            assert_eq!(
                IlpAddress::new(a)
                    .map(IlpAddress::into_string)
                    .ok()
                    .as_deref(),
                Some(a)
            );
        }
    }

    #[test]
    fn rejects_invalid_addresses() {
        for a in [
            "",
            "g",
            "test",
            "test.",
            ".test.a",
            "test..a",
            "test.a.",
            "test4.a",
            "tes.a",
            "G.a",
            "neighbor.a",
            "test.a b",
            "test.a+b",
            "test.a/b",
            "test.a=b",
            "test.é",
            "test.a\n",
            " test.a",
        ] {
            assert!(!IlpAddress::is_valid(a), "{a:?} should be invalid");
            assert!(matches!(
                IlpAddress::new(a),
                Err(IlpError::InvalidAddress(_))
            ));
        }
    }

    #[test]
    fn enforces_max_length() {
        let ok = format!("g.{}", "a".repeat(MAX_ADDRESS_LEN - 2));
        assert_eq!(ok.len(), MAX_ADDRESS_LEN);
        assert!(IlpAddress::is_valid(&ok));
        let too_long = format!("g.{}", "a".repeat(MAX_ADDRESS_LEN - 1));
        assert!(!IlpAddress::is_valid(&too_long));
    }

    #[test]
    fn helpers() {
        let a: IlpAddress = "test.opd".parse().unwrap();
        assert_eq!(a.scheme(), "test");
        assert_eq!(a.to_string(), "test.opd");
        let c = a.child("alice").unwrap();
        assert_eq!(c.as_str(), "test.opd.alice");
        assert!(c.starts_with(&a));
        assert!(a.starts_with(&a));
        assert!(!IlpAddress::new("test.opdx").unwrap().starts_with(&a));
        assert!(a.child("bad.").is_err());
    }

    /// A direct transcription of the schema's regex shape, used as an oracle.
    fn oracle(s: &str) -> bool {
        if s.len() > MAX_ADDRESS_LEN {
            return false;
        }
        let Some((scheme, rest)) = s.split_once('.') else {
            return false;
        };
        SCHEMES.contains(&scheme)
            && rest
                .split('.')
                .all(|seg| !seg.is_empty() && seg.bytes().all(is_segment_byte))
    }

    proptest! {
        #[test]
        fn matches_oracle(s in "(g|test[0-4]?|private|x)?([.]?[a-zA-Z0-9_~+ -]{0,4}){0,4}") {
            prop_assert_eq!(IlpAddress::is_valid(&s), oracle(&s));
        }

        #[test]
        fn never_panics(s in any::<String>()) {
            let _ = IlpAddress::new(s);
        }
    }
}
