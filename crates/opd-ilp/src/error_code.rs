//! ILP reject codes (RFC 27 §"ILP Error Codes"): a class letter, `F`
//! (final), `T` (temporary) or `R` (relative), and two digits.
//!
//! The code travels as three ASCII bytes. [`ErrorCode`] holds any code of
//! that shape, the standard ones and any application-specific ones, and
//! has constants for the codes RFC 27 names.

use std::fmt;
use std::str::FromStr;

use crate::error::PacketError;

/// An ILP reject code such as `F02`.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ErrorCode([u8; 3]);

/// What a sender should do about a reject, by the code's first letter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorClass {
    /// `F`: do not retry the same packet.
    Final,
    /// `T`: the same packet may succeed later.
    Temporary,
    /// `R`: a sender-side property (amount, expiry) was wrong; adjust and
    /// retry.
    Relative,
}

impl ErrorCode {
    /// F00 Bad Request.
    pub const F00_BAD_REQUEST: Self = Self(*b"F00");
    /// F01 Invalid Packet.
    pub const F01_INVALID_PACKET: Self = Self(*b"F01");
    /// F02 Unreachable.
    pub const F02_UNREACHABLE: Self = Self(*b"F02");
    /// F03 Invalid Amount.
    pub const F03_INVALID_AMOUNT: Self = Self(*b"F03");
    /// F04 Insufficient Destination Amount.
    pub const F04_INSUFFICIENT_DESTINATION_AMOUNT: Self = Self(*b"F04");
    /// F05 Wrong Condition.
    pub const F05_WRONG_CONDITION: Self = Self(*b"F05");
    /// F06 Unexpected Payment.
    pub const F06_UNEXPECTED_PAYMENT: Self = Self(*b"F06");
    /// F07 Cannot Receive.
    pub const F07_CANNOT_RECEIVE: Self = Self(*b"F07");
    /// F08 Amount Too Large; its data is [`crate::packet::AmountTooLarge`].
    pub const F08_AMOUNT_TOO_LARGE: Self = Self(*b"F08");
    /// F99 Application Error.
    pub const F99_APPLICATION_ERROR: Self = Self(*b"F99");
    /// T00 Internal Error.
    pub const T00_INTERNAL_ERROR: Self = Self(*b"T00");
    /// T01 Peer Unreachable.
    pub const T01_PEER_UNREACHABLE: Self = Self(*b"T01");
    /// T02 Peer Busy.
    pub const T02_PEER_BUSY: Self = Self(*b"T02");
    /// T03 Connector Busy.
    pub const T03_CONNECTOR_BUSY: Self = Self(*b"T03");
    /// T04 Insufficient Liquidity.
    pub const T04_INSUFFICIENT_LIQUIDITY: Self = Self(*b"T04");
    /// T05 Rate Limited.
    pub const T05_RATE_LIMITED: Self = Self(*b"T05");
    /// T99 Application Error.
    pub const T99_APPLICATION_ERROR: Self = Self(*b"T99");
    /// R00 Transfer Timed Out.
    pub const R00_TRANSFER_TIMED_OUT: Self = Self(*b"R00");
    /// R01 Insufficient Source Amount.
    pub const R01_INSUFFICIENT_SOURCE_AMOUNT: Self = Self(*b"R01");
    /// R02 Insufficient Timeout.
    pub const R02_INSUFFICIENT_TIMEOUT: Self = Self(*b"R02");
    /// R99 Application Error.
    pub const R99_APPLICATION_ERROR: Self = Self(*b"R99");

    /// The code from its three wire bytes, if they are `F`, `T` or `R`
    /// followed by two ASCII digits.
    pub fn from_bytes(bytes: [u8; 3]) -> Result<Self, PacketError> {
        let [class, d1, d2] = bytes;
        if matches!(class, b'F' | b'T' | b'R') && d1.is_ascii_digit() && d2.is_ascii_digit() {
            Ok(Self(bytes))
        } else {
            Err(PacketError::InvalidErrorCode)
        }
    }

    /// The three wire bytes.
    pub fn to_bytes(self) -> [u8; 3] {
        self.0
    }

    /// The code as text, e.g. `"F02"`.
    pub fn as_str(&self) -> &str {
        // Only ASCII letters and digits get in (see `from_bytes`).
        std::str::from_utf8(&self.0).unwrap_or("???")
    }

    /// Final, temporary or relative.
    pub fn class(self) -> ErrorClass {
        match self.0[0] {
            b'F' => ErrorClass::Final,
            b'T' => ErrorClass::Temporary,
            _ => ErrorClass::Relative,
        }
    }

    /// RFC 27's name for a standard code (`"Unreachable"` for F02), `None`
    /// for other codes.
    pub fn name(self) -> Option<&'static str> {
        let name = match &self.0 {
            b"F00" => "Bad Request",
            b"F01" => "Invalid Packet",
            b"F02" => "Unreachable",
            b"F03" => "Invalid Amount",
            b"F04" => "Insufficient Destination Amount",
            b"F05" => "Wrong Condition",
            b"F06" => "Unexpected Payment",
            b"F07" => "Cannot Receive",
            b"F08" => "Amount Too Large",
            b"F99" => "Application Error",
            b"T00" => "Internal Error",
            b"T01" => "Peer Unreachable",
            b"T02" => "Peer Busy",
            b"T03" => "Connector Busy",
            b"T04" => "Insufficient Liquidity",
            b"T05" => "Rate Limited",
            b"T99" => "Application Error",
            b"R00" => "Transfer Timed Out",
            b"R01" => "Insufficient Source Amount",
            b"R02" => "Insufficient Timeout",
            b"R99" => "Application Error",
            _ => return None,
        };
        Some(name)
    }
}

impl fmt::Debug for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ErrorCode({})", self.as_str())
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for ErrorCode {
    type Err = PacketError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bytes: [u8; 3] = s
            .as_bytes()
            .try_into()
            .map_err(|_| PacketError::InvalidErrorCode)?;
        Self::from_bytes(bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_classifies() {
        let c: ErrorCode = "F08".parse().unwrap();
        assert_eq!(c, ErrorCode::F08_AMOUNT_TOO_LARGE);
        assert_eq!(c.to_string(), "F08");
        assert_eq!(c.class(), ErrorClass::Final);
        assert_eq!(c.name(), Some("Amount Too Large"));
        assert_eq!(
            ErrorCode::T04_INSUFFICIENT_LIQUIDITY.class(),
            ErrorClass::Temporary
        );
        assert_eq!(
            ErrorCode::R00_TRANSFER_TIMED_OUT.class(),
            ErrorClass::Relative
        );
        assert_eq!("F42".parse::<ErrorCode>().unwrap().name(), None);
        assert_eq!(
            format!("{:?}", ErrorCode::F99_APPLICATION_ERROR),
            "ErrorCode(F99)"
        );
    }

    #[test]
    fn every_rfc_27_code_has_its_name() {
        // RFC 27 §"Error Codes", in its order.
        for (code, name) in [
            ("F00", "Bad Request"),
            ("F01", "Invalid Packet"),
            ("F02", "Unreachable"),
            ("F03", "Invalid Amount"),
            ("F04", "Insufficient Destination Amount"),
            ("F05", "Wrong Condition"),
            ("F06", "Unexpected Payment"),
            ("F07", "Cannot Receive"),
            ("F08", "Amount Too Large"),
            ("F99", "Application Error"),
            ("T00", "Internal Error"),
            ("T01", "Peer Unreachable"),
            ("T02", "Peer Busy"),
            ("T03", "Connector Busy"),
            ("T04", "Insufficient Liquidity"),
            ("T05", "Rate Limited"),
            ("T99", "Application Error"),
            ("R00", "Transfer Timed Out"),
            ("R01", "Insufficient Source Amount"),
            ("R02", "Insufficient Timeout"),
            ("R99", "Application Error"),
        ] {
            let parsed: ErrorCode = code.parse().unwrap();
            assert_eq!(parsed.name(), Some(name), "{code}");
        }
    }

    #[test]
    fn rejects_other_shapes() {
        for bad in ["", "F0", "F000", "X00", "f00", "F0A", "F\u{0}0"] {
            assert_eq!(
                bad.parse::<ErrorCode>(),
                Err(PacketError::InvalidErrorCode),
                "{bad:?}"
            );
        }
        // interledger-rs fuzz finding: non-ASCII bytes in the code.
        assert!(ErrorCode::from_bytes([116, 119, 255]).is_err());
    }
}
