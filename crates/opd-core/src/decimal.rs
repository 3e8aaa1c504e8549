//! Decimals as people write them (`12.34`) and minor units as amounts
//! carry them (`1234` at scale 2), converted exactly on the decimal
//! digits: never through floating point or a power of ten (a scale can be
//! up to 255, and 10^255 fits no integer type). Used by `opd client` and
//! by the pages people read.

/// Why a decimal was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecimalError {
    #[error("{0:?} is not an amount: write digits with at most one '.', such as 12.34")]
    NotANumber(String),
    #[error("{text:?} has more decimals than the asset allows ({scale})")]
    TooPrecise { text: String, scale: u8 },
    #[error("{0:?} is too large")]
    TooLarge(String),
    #[error("{0:?} is negative: amounts are what is paid or received, 0 or more")]
    Negative(String),
}

/// `text` (such as `12.34`) in minor units of an asset with `scale`
/// decimals: `12.34` at scale 2 is 1234; `12` is 1200; `12.345` is refused.
pub fn parse_decimal(text: &str, scale: u8) -> Result<u64, DecimalError> {
    let not_a_number = || DecimalError::NotANumber(text.to_owned());
    if text.starts_with('-') && text.len() > 1 {
        return Err(DecimalError::Negative(text.to_owned()));
    }
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
        return Err(DecimalError::TooPrecise {
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
        .map_err(|_| DecimalError::TooLarge(text.to_owned()))
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
        assert!(matches!(
            parse_decimal("-1", 2),
            Err(DecimalError::Negative(_))
        ));
        for bad in ["", ".", "1.", "-", "1e3", "1,5", " 1", "1.2.3", "+1", "½"] {
            assert!(
                matches!(parse_decimal(bad, 2), Err(DecimalError::NotANumber(_))),
                "{bad:?}"
            );
        }
        assert!(matches!(
            parse_decimal("12.345", 2),
            Err(DecimalError::TooPrecise { .. })
        ));
        assert!(matches!(
            parse_decimal("1.5", 0),
            Err(DecimalError::TooPrecise { .. })
        ));
        assert!(matches!(
            parse_decimal("18446744073709551616", 0),
            Err(DecimalError::TooLarge(_))
        ));
        // A scale whose power of ten fits no integer: still exact.
        assert!(matches!(
            parse_decimal("1", 255),
            Err(DecimalError::TooLarge(_))
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
}
