//! Amounts as people write them (`12.34`) and as Open Payments carries them
//! (`{"value":"1234","assetCode":"USD","assetScale":2}`).
//!
//! Exact by construction: conversion is done on the decimal digits, never
//! through floating point or a power of ten (a scale can be up to 255, and
//! 10^255 does not fit any integer type).

use serde_json::{json, Value};

/// Why a decimal amount was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AmountError {
    #[error("{0:?} is not an amount: write digits with at most one '.', such as 12.34")]
    NotANumber(String),
    #[error("{text:?} has more decimals than the asset allows ({scale})")]
    TooPrecise { text: String, scale: u8 },
    #[error("{0:?} is too large")]
    TooLarge(String),
}

/// `text` (such as `12.34`) in minor units of an asset with `scale`
/// decimals: `12.34` at scale 2 is 1234; `12` is 1200; `12.345` is refused.
pub fn parse_decimal(text: &str, scale: u8) -> Result<u64, AmountError> {
    let not_a_number = || AmountError::NotANumber(text.to_owned());
    let (whole, fraction) = text.split_once('.').unwrap_or((text, ""));
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if (whole.is_empty() && fraction.is_empty()) || !digits(whole) || !digits(fraction) {
        return Err(not_a_number());
    }
    if text.ends_with('.') {
        return Err(not_a_number());
    }
    // Trailing zeros beyond the scale change nothing: `1.50` at scale 1.
    let fraction = fraction.trim_end_matches('0');
    if fraction.len() > usize::from(scale) {
        return Err(AmountError::TooPrecise {
            text: text.to_owned(),
            scale,
        });
    }
    let mut all = String::with_capacity(whole.len() + usize::from(scale));
    all.push_str(whole);
    all.push_str(fraction);
    all.extend(std::iter::repeat_n(
        '0',
        usize::from(scale) - fraction.len(),
    ));
    let significant = all.trim_start_matches('0');
    if significant.is_empty() {
        return Ok(0);
    }
    significant
        .parse()
        .map_err(|_| AmountError::TooLarge(text.to_owned()))
}

/// `value` minor units with `scale` decimals as a decimal: 1234 at scale 2
/// is `12.34`, 5 is `0.05`; scale 0 has no point.
pub fn format_decimal(value: u64, scale: u8) -> String {
    let digits = value.to_string();
    let scale = usize::from(scale);
    if scale == 0 {
        return digits;
    }
    let padded = if digits.len() <= scale {
        format!("{}{digits}", "0".repeat(scale + 1 - digits.len()))
    } else {
        digits
    };
    let (whole, fraction) = padded.split_at(padded.len() - scale);
    format!("{whole}.{fraction}")
}

/// An Open Payments amount object, as found in a response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Amount {
    pub value: u64,
    pub asset_code: String,
    pub asset_scale: u8,
}

impl Amount {
    /// The amount in `v` (`{"value","assetCode","assetScale"}`), if it is one.
    pub fn from_json(v: &Value) -> Option<Self> {
        Some(Self {
            value: v.get("value")?.as_str()?.parse().ok()?,
            asset_code: v.get("assetCode")?.as_str()?.to_owned(),
            asset_scale: u8::try_from(v.get("assetScale")?.as_u64()?).ok()?,
        })
    }

    /// The wire form.
    pub fn to_json(&self) -> Value {
        json!({
            "value": self.value.to_string(),
            "assetCode": self.asset_code,
            "assetScale": self.asset_scale,
        })
    }
}

impl std::fmt::Display for Amount {
    /// `12.34 USD`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} {}",
            format_decimal(self.value, self.asset_scale),
            self.asset_code
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_what_people_write() {
        assert_eq!(parse_decimal("12.34", 2), Ok(1234));
        assert_eq!(parse_decimal("12", 2), Ok(1200));
        assert_eq!(parse_decimal("12.3", 2), Ok(1230));
        assert_eq!(parse_decimal(".5", 2), Ok(50));
        assert_eq!(parse_decimal("0.05", 2), Ok(5));
        assert_eq!(parse_decimal("007", 0), Ok(7));
        assert_eq!(parse_decimal("1.50", 1), Ok(15));
        assert_eq!(parse_decimal("0", 9), Ok(0));
        assert_eq!(parse_decimal("18446744073709551615", 0), Ok(u64::MAX));
        assert_eq!(parse_decimal("0.000000001", 9), Ok(1));
    }

    #[test]
    fn refuses_what_is_not_exact() {
        for bad in ["", ".", "1.", "-1", "1e3", "1,5", " 1", "1.2.3", "+1", "½"] {
            assert!(
                matches!(parse_decimal(bad, 2), Err(AmountError::NotANumber(_))),
                "{bad:?}"
            );
        }
        assert!(matches!(
            parse_decimal("12.345", 2),
            Err(AmountError::TooPrecise { .. })
        ));
        assert!(matches!(
            parse_decimal("1.5", 0),
            Err(AmountError::TooPrecise { .. })
        ));
        assert!(matches!(
            parse_decimal("18446744073709551616", 0),
            Err(AmountError::TooLarge(_))
        ));
        // A scale whose power of ten fits no integer: still exact.
        assert!(matches!(
            parse_decimal("1", 255),
            Err(AmountError::TooLarge(_))
        ));
        assert_eq!(parse_decimal("0", 255), Ok(0));
    }

    #[test]
    fn formats_with_the_scale() {
        assert_eq!(format_decimal(1234, 2), "12.34");
        assert_eq!(format_decimal(5, 2), "0.05");
        assert_eq!(format_decimal(0, 2), "0.00");
        assert_eq!(format_decimal(1234, 0), "1234");
        assert_eq!(format_decimal(1, 9), "0.000000001");
        assert_eq!(format_decimal(u64::MAX, 255).len(), 257);
    }

    #[test]
    fn formatting_and_parsing_agree() {
        for (value, scale) in [(0, 0), (1, 2), (99, 2), (100, 2), (u64::MAX, 4), (7, 30)] {
            assert_eq!(
                parse_decimal(&format_decimal(value, scale), scale),
                Ok(value)
            );
        }
    }

    #[test]
    fn reads_and_shows_wire_amounts() {
        let a = Amount::from_json(&json!({ "value": "1234", "assetCode": "USD", "assetScale": 2 }))
            .unwrap();
        assert_eq!(a.to_string(), "12.34 USD");
        assert_eq!(Amount::from_json(&a.to_json()), Some(a));
        assert_eq!(
            Amount::from_json(&json!({ "value": 5, "assetCode": "USD", "assetScale": 2 })),
            None
        );
    }
}
