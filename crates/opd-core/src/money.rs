//! Exact money: assets, amounts, exchange rates and fees.
//!
//! Amounts are `u64` minor units of an asset; every intermediate product is a
//! `u128`, so nothing here ever uses floating point or wraps. Conversions
//! between assets deliver `floor` and debit `ceil` (see `docs/money.md`).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// Why an amount, asset or rate could not be parsed or computed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MoneyError {
    #[error("amount value must be a decimal string of an unsigned 64-bit integer without sign, spaces, exponent or leading zeros")]
    InvalidValue,
    #[error("assetCode must be 1 to 64 printable characters without spaces")]
    InvalidAssetCode,
    #[error("assetScale must be an integer from 0 to 255")]
    InvalidAssetScale,
    #[error("exchange rate must be a positive decimal number with at most 19 significant digits")]
    InvalidRate,
    #[error("fee basis points must be from 0 to 10000")]
    InvalidBasisPoints,
    #[error("amount overflows an unsigned 64-bit integer")]
    Overflow,
}

/// An asset code such as `USD`. Non-empty, at most 64 printable ASCII
/// characters, no whitespace.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AssetCode(String);

impl AssetCode {
    pub fn parse(s: &str) -> Result<Self, MoneyError> {
        let ok = !s.is_empty() && s.len() <= 64 && s.bytes().all(|b| b.is_ascii_graphic());
        if ok {
            Ok(Self(s.to_owned()))
        } else {
            Err(MoneyError::InvalidAssetCode)
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for AssetCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The number of decimal places of an asset's minor unit (0..=255).
pub type AssetScale = u8;

/// An asset: code plus scale. Two amounts are compatible only when their
/// assets are equal.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Asset {
    pub code: AssetCode,
    pub scale: AssetScale,
}

impl Asset {
    pub fn new(code: AssetCode, scale: AssetScale) -> Self {
        Self { code, scale }
    }

    /// Parses a code and a scale given as any integer (the wire allows any
    /// JSON number; anything outside 0..=255 is rejected).
    pub fn parse(code: &str, scale: i64) -> Result<Self, MoneyError> {
        let scale = u8::try_from(scale).map_err(|_| MoneyError::InvalidAssetScale)?;
        Ok(Self::new(AssetCode::parse(code)?, scale))
    }
}

impl fmt::Display for Asset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (scale {})", self.code, self.scale)
    }
}

/// Parses the canonical decimal form of a `u64`: digits only, no sign, no
/// leading zeros (except `"0"` itself), no spaces, no exponent.
pub fn parse_u64_canonical(s: &str) -> Result<u64, MoneyError> {
    let bytes = s.as_bytes();
    if bytes.is_empty() || bytes.len() > 20 || !bytes.iter().all(u8::is_ascii_digit) {
        return Err(MoneyError::InvalidValue);
    }
    if bytes.len() > 1 && bytes[0] == b'0' {
        return Err(MoneyError::InvalidValue);
    }
    s.parse::<u64>().map_err(|_| MoneyError::InvalidValue)
}

/// An amount of an asset in minor units.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Amount {
    pub value: u64,
    pub asset: Asset,
}

impl Amount {
    pub fn new(value: u64, asset: Asset) -> Self {
        Self { value, asset }
    }

    pub fn zero(asset: Asset) -> Self {
        Self::new(0, asset)
    }

    /// Parses the wire form (`value` as a string, `assetCode`, `assetScale`).
    pub fn parse(value: &str, asset_code: &str, asset_scale: i64) -> Result<Self, MoneyError> {
        let value = parse_u64_canonical(value)?;
        Ok(Self::new(value, Asset::parse(asset_code, asset_scale)?))
    }

    pub fn checked_add(&self, value: u64) -> Result<Self, MoneyError> {
        let value = self.value.checked_add(value).ok_or(MoneyError::Overflow)?;
        Ok(Self::new(value, self.asset.clone()))
    }
}

/// The JSON form of an amount, exactly as the Open Payments spec has it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AmountWire {
    pub value: String,
    pub asset_code: String,
    pub asset_scale: i64,
}

impl From<&Amount> for AmountWire {
    fn from(a: &Amount) -> Self {
        Self {
            value: a.value.to_string(),
            asset_code: a.asset.code.as_str().to_owned(),
            asset_scale: i64::from(a.asset.scale),
        }
    }
}

impl TryFrom<&AmountWire> for Amount {
    type Error = MoneyError;
    fn try_from(w: &AmountWire) -> Result<Self, MoneyError> {
        Amount::parse(&w.value, &w.asset_code, w.asset_scale)
    }
}

/// `10^exp` as a `u128`, or `None` when it does not fit.
fn pow10(exp: u32) -> Option<u128> {
    10u128.checked_pow(exp)
}

/// `floor(n * 10^p)` for a signed power; `None` on overflow of `u128`.
fn mul_pow10_floor(n: u128, p: i32) -> Option<u128> {
    if p >= 0 {
        if n == 0 {
            return Some(0);
        }
        n.checked_mul(pow10(p.unsigned_abs())?)
    } else {
        // A divisor that does not fit in u128 is larger than any u128 n.
        Some(pow10(p.unsigned_abs()).map_or(0, |d| n / d))
    }
}

/// `ceil(n / (m * 10^p))` for a signed power and `m > 0`; `None` on overflow.
fn div_pow10_ceil(n: u128, m: u128, p: i32) -> Option<u128> {
    if n == 0 {
        return Some(0);
    }
    if p >= 0 {
        match pow10(p.unsigned_abs()).and_then(|d| d.checked_mul(m)) {
            Some(d) => Some(n.div_ceil(d)),
            // The divisor exceeds u128::MAX >= n > 0.
            None => Some(1),
        }
    } else {
        let scaled = n.checked_mul(pow10(p.unsigned_abs())?)?;
        Some(scaled.div_ceil(m))
    }
}

/// An exact, positive exchange rate: `mantissa × 10^exponent` units of the
/// counter asset (in major units) per major unit of the base asset.
///
/// The mantissa is limited to 19 significant digits so that `value ×
/// mantissa` always fits in a `u128`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Rate {
    mantissa: u64,
    exponent: i32,
}

const MAX_RATE_MANTISSA: u64 = 9_999_999_999_999_999_999;
/// Keeps `10^|p|` computations in range: no digit below 10^-100 and a
/// leading digit at most 10^100; a rate outside that is not a currency rate.
const MAX_RATE_EXPONENT: i32 = 100;

impl Rate {
    /// The identity rate.
    pub const ONE: Rate = Rate {
        mantissa: 1,
        exponent: 0,
    };

    /// Parses a decimal number such as `1`, `0.91`, `1.0893`, `2.5e-3` or
    /// `1E+2`. Zero, negatives, NaN/infinity and more than 19 significant
    /// digits are rejected: never rounded silently.
    pub fn parse(s: &str) -> Result<Self, MoneyError> {
        let (number, exp_part) = match s.find(['e', 'E']) {
            Some(i) => (&s[..i], Some(&s[i + 1..])),
            None => (s, None),
        };
        let mut exponent: i32 = match exp_part {
            Some(e) => {
                // One optional sign: `1e+-5` is not a number.
                let (neg, digits) = match e.as_bytes().first() {
                    Some(b'-') => (true, &e[1..]),
                    Some(b'+') => (false, &e[1..]),
                    _ => (false, e),
                };
                if digits.is_empty()
                    || digits.len() > 4
                    || !digits.bytes().all(|b| b.is_ascii_digit())
                {
                    return Err(MoneyError::InvalidRate);
                }
                let v: i32 = digits.parse().map_err(|_| MoneyError::InvalidRate)?;
                if neg {
                    -v
                } else {
                    v
                }
            }
            None => 0,
        };
        let (int_part, frac_part) = match number.split_once('.') {
            Some((i, f)) => (i, f),
            None => (number, ""),
        };
        if int_part.is_empty() && frac_part.is_empty() {
            return Err(MoneyError::InvalidRate);
        }
        if !int_part.bytes().all(|b| b.is_ascii_digit())
            || !frac_part.bytes().all(|b| b.is_ascii_digit())
        {
            return Err(MoneyError::InvalidRate);
        }
        let digits: String = format!("{int_part}{frac_part}");
        let digits = digits.trim_start_matches('0');
        let frac_len = i32::try_from(frac_part.len()).map_err(|_| MoneyError::InvalidRate)?;
        exponent -= frac_len;
        // Drop trailing zeros into the exponent so the mantissa is minimal.
        let trimmed = digits.trim_end_matches('0');
        exponent +=
            i32::try_from(digits.len() - trimmed.len()).map_err(|_| MoneyError::InvalidRate)?;
        if trimmed.is_empty() || trimmed.len() > 19 {
            return Err(MoneyError::InvalidRate);
        }
        let mantissa: u64 = trimmed.parse().map_err(|_| MoneyError::InvalidRate)?;
        // Bounded by magnitude (its leading digit's power of ten), not by
        // the exponent alone: a smaller rate (slippage) then always stays
        // in range, whatever digits it loses.
        let magnitude =
            exponent + i32::try_from(trimmed.len()).map_err(|_| MoneyError::InvalidRate)? - 1;
        if mantissa > MAX_RATE_MANTISSA
            || exponent < -MAX_RATE_EXPONENT
            || magnitude > MAX_RATE_EXPONENT
        {
            return Err(MoneyError::InvalidRate);
        }
        Ok(Self { mantissa, exponent })
    }

    pub fn is_one(&self) -> bool {
        *self == Self::ONE
    }

    /// The power of ten to apply when converting minor units of `from` into
    /// minor units of `to` at this rate.
    fn power(&self, from: AssetScale, to: AssetScale) -> i32 {
        self.exponent + i32::from(to) - i32::from(from)
    }

    /// This rate less `basis_points` out of 10 000 (a slippage allowance),
    /// exact when the result has at most 19 significant digits and no
    /// digit below 10^-100, else rounded down in its last kept digit
    /// (never above the exact value). The result is always a rate
    /// [`Rate::parse`] accepts, so it can be stored and read back. `None`
    /// when nothing would remain.
    pub fn less_basis_points(&self, basis_points: u16) -> Option<Rate> {
        let keep = 10_000u128.checked_sub(u128::from(basis_points))?;
        let mut mantissa = u128::from(self.mantissa) * keep;
        let mut exponent = self.exponent - 4;
        while mantissa > u128::from(MAX_RATE_MANTISSA)
            || (mantissa != 0 && mantissa % 10 == 0)
            || exponent < -MAX_RATE_EXPONENT
        {
            mantissa /= 10;
            exponent += 1;
        }
        let mantissa = u64::try_from(mantissa).ok().filter(|m| *m > 0)?;
        Some(Rate { mantissa, exponent })
    }

    /// Minor units of scale `to` per minor unit of scale `from`, as an exact
    /// fraction `(numerator, denominator)`; `None` past u128.
    pub fn as_fraction(&self, from: AssetScale, to: AssetScale) -> Option<(u128, u128)> {
        let p = self.power(from, to);
        let m = u128::from(self.mantissa);
        if p >= 0 {
            Some((m.checked_mul(pow10(p.unsigned_abs())?)?, 1))
        } else {
            Some((m, pow10(p.unsigned_abs())?))
        }
    }

    /// What `value` minor units of an asset of scale `from` deliver in minor
    /// units of an asset of scale `to`: rounded down (the receiver never gets
    /// more than the rate allows).
    pub fn convert_floor(
        &self,
        value: u64,
        from: AssetScale,
        to: AssetScale,
    ) -> Result<u64, MoneyError> {
        let product = u128::from(value) * u128::from(self.mantissa);
        let result = mul_pow10_floor(product, self.power(from, to)).ok_or(MoneyError::Overflow)?;
        u64::try_from(result).map_err(|_| MoneyError::Overflow)
    }

    /// The least number of minor units of the `from` asset (scale `from`)
    /// that delivers at least `value` minor units of scale `to`: rounded up
    /// (the sender is never debited less than the delivery costs).
    pub fn convert_ceil_inverse(
        &self,
        value: u64,
        from: AssetScale,
        to: AssetScale,
    ) -> Result<u64, MoneyError> {
        let result = div_pow10_ceil(
            u128::from(value),
            u128::from(self.mantissa),
            self.power(from, to),
        )
        .ok_or(MoneyError::Overflow)?;
        u64::try_from(result).map_err(|_| MoneyError::Overflow)
    }
}

impl fmt::Display for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let digits = self.mantissa.to_string();
        if self.exponent >= 0 {
            let zeros = "0".repeat(self.exponent.unsigned_abs() as usize);
            return write!(f, "{digits}{zeros}");
        }
        let frac = self.exponent.unsigned_abs() as usize;
        if digits.len() > frac {
            let (i, d) = digits.split_at(digits.len() - frac);
            write!(f, "{i}.{d}")
        } else {
            write!(f, "0.{}{digits}", "0".repeat(frac - digits.len()))
        }
    }
}

impl FromStr for Rate {
    type Err = MoneyError;
    fn from_str(s: &str) -> Result<Self, MoneyError> {
        Rate::parse(s)
    }
}

impl Serialize for Rate {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

impl<'de> Deserialize<'de> for Rate {
    /// Accepts a string (`"0.91"`) or a JSON number; a number is read from
    /// its exact text, never through `f64`, when serde_json's
    /// `arbitrary_precision` is on, and otherwise from its shortest
    /// round-trip form, which for rates as published is the same text.
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = serde_json::Value::deserialize(d)?;
        let text = match &v {
            serde_json::Value::String(s) => s.clone(),
            serde_json::Value::Number(n) => n.to_string(),
            _ => {
                return Err(serde::de::Error::custom(
                    "exchange rate must be a number or a string",
                ))
            }
        };
        Rate::parse(&text).map_err(serde::de::Error::custom)
    }
}

/// A sending fee for one asset: `ceil(amount × basisPoints / 10000) + fixed`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Fee {
    pub fixed: u64,
    pub basis_points: u16,
}

impl Fee {
    pub const NONE: Fee = Fee {
        fixed: 0,
        basis_points: 0,
    };

    pub fn new(fixed: u64, basis_points: u16) -> Result<Self, MoneyError> {
        if basis_points > 10_000 {
            return Err(MoneyError::InvalidBasisPoints);
        }
        Ok(Self {
            fixed,
            basis_points,
        })
    }

    /// The fee charged on `amount` (the percentage part rounds up).
    pub fn on(&self, amount: u64) -> Result<u64, MoneyError> {
        let pct = (u128::from(amount) * u128::from(self.basis_points)).div_ceil(10_000);
        let total = pct + u128::from(self.fixed);
        u64::try_from(total).map_err(|_| MoneyError::Overflow)
    }

    /// The least gross debit `d` whose net, `d - fee(d)`, is at least `net`;
    /// `None` when no debit can reach it (a 100 % fee, or overflow).
    pub fn min_gross_for_net(&self, net: u64) -> Option<u64> {
        // d - ceil(d*bp/1e4) - fixed >= net  <=>  floor(d*(1e4-bp)/1e4) >= net + fixed
        //                                    <=>  d >= ceil((net + fixed) * 1e4 / (1e4 - bp))
        let keep = 10_000u128 - u128::from(self.basis_points);
        if keep == 0 {
            return None;
        }
        let target = u128::from(net) + u128::from(self.fixed);
        let d = (target * 10_000).div_ceil(keep);
        u64::try_from(d).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn canonical_values_parse() {
        assert_eq!(parse_u64_canonical("0"), Ok(0));
        assert_eq!(parse_u64_canonical("2500"), Ok(2500));
        assert_eq!(parse_u64_canonical("18446744073709551615"), Ok(u64::MAX));
    }

    #[test]
    fn non_canonical_values_are_rejected() {
        for bad in [
            "-1",
            "1.5",
            "1e3",
            "",
            " 1",
            "1 ",
            "+1",
            "01",
            "00",
            "18446744073709551616",
            "99999999999999999999",
            "0x10",
            "１",
        ] {
            assert_eq!(
                parse_u64_canonical(bad),
                Err(MoneyError::InvalidValue),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn assets_and_rates_as_text() {
        let usd = Asset::parse("USD", 2).unwrap();
        assert_eq!(usd.code.as_str(), "USD");
        assert_eq!(usd.code.to_string(), "USD");
        assert_eq!(usd.to_string(), "USD (scale 2)");
        // JSON: a string or a number, read from its text.
        let rate: Rate = serde_json::from_str("\"0.91\"").unwrap();
        assert_eq!(rate, Rate::parse("0.91").unwrap());
        let rate: Rate = serde_json::from_str("1.0893").unwrap();
        assert_eq!(rate, Rate::parse("1.0893").unwrap());
        assert!(serde_json::from_str::<Rate>("true").is_err());
        assert_eq!(serde_json::to_string(&rate).unwrap(), "\"1.0893\"");
    }

    #[test]
    fn asset_rules() {
        assert!(Asset::parse("USD", 0).is_ok());
        assert!(Asset::parse("USD", 255).is_ok());
        assert_eq!(Asset::parse("USD", 256), Err(MoneyError::InvalidAssetScale));
        assert_eq!(Asset::parse("USD", -1), Err(MoneyError::InvalidAssetScale));
        assert_eq!(Asset::parse("", 2), Err(MoneyError::InvalidAssetCode));
        assert_eq!(Asset::parse("U SD", 2), Err(MoneyError::InvalidAssetCode));
    }

    #[test]
    fn rates_parse_exactly() {
        assert_eq!(Rate::parse("0.91").unwrap().to_string(), "0.91");
        assert_eq!(Rate::parse("1.0893").unwrap().to_string(), "1.0893");
        assert_eq!(Rate::parse("100").unwrap().to_string(), "100");
        assert_eq!(Rate::parse("2.5e-3").unwrap().to_string(), "0.0025");
        assert_eq!(Rate::parse("1E+2").unwrap().to_string(), "100");
        assert_eq!(Rate::parse("0001.50").unwrap().to_string(), "1.5");
        assert!(Rate::parse("1").unwrap().is_one());
        assert!(!Rate::parse("0.91").unwrap().is_one());
        // The limits themselves: 19 significant digits, a four-digit
        // exponent (leading zeros allowed), 10^±100.
        assert_eq!(
            Rate::parse("9.999999999999999999").unwrap().to_string(),
            "9.999999999999999999"
        );
        assert_eq!(Rate::parse("1e0002").unwrap().to_string(), "100");
        assert!(Rate::parse("1e100").is_ok());
        assert!(Rate::parse("1e-100").is_ok());
        for bad in [
            "0",
            "0.0",
            "-1",
            "",
            ".",
            "abc",
            "1e",
            "NaN",
            "inf",
            "1.2.3",
            "12345678901234567891",
            // Found by the `amounts` fuzz target: two signs were accepted.
            "3e+-0",
            "1e+-5",
            "1e-+5",
            "1e--5",
            // A sign before the digits: u64's own parser would take it.
            "+2",
            "+1.5",
            // Outside 1e-100..1e100.
            "1e101",
            "1e-101",
            // A ten-digit exponent: refused before the arithmetic on it
            // could overflow an i32.
            "1.25e-2147483647",
            "1e00002",
        ] {
            assert!(Rate::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn conversion_floors_delivery_and_ceils_debit() {
        let r = Rate::parse("0.91").unwrap();
        // 550 USD cents -> 500.5 EUR cents, floored.
        assert_eq!(r.convert_floor(550, 2, 2), Ok(500));
        // 500 EUR cents need 549.45... USD cents, ceiled.
        assert_eq!(r.convert_ceil_inverse(500, 2, 2), Ok(550));
        // Scale change without a rate: 1.23 (scale 2) is 1230 at scale 3.
        assert_eq!(Rate::ONE.convert_floor(123, 2, 3), Ok(1230));
        assert_eq!(Rate::ONE.convert_floor(1239, 3, 2), Ok(123));
        assert_eq!(Rate::ONE.convert_ceil_inverse(1231, 2, 3), Ok(124));
    }

    #[test]
    fn extreme_scales_never_panic() {
        let r = Rate::parse("0.5").unwrap();
        assert_eq!(r.convert_floor(u64::MAX, 0, 255), Err(MoneyError::Overflow));
        assert_eq!(r.convert_floor(u64::MAX, 255, 0), Ok(0));
        assert_eq!(r.convert_ceil_inverse(1, 255, 0), Err(MoneyError::Overflow));
        assert_eq!(r.convert_ceil_inverse(1, 0, 255), Ok(1));
        assert_eq!(r.convert_floor(0, 0, 255), Ok(0));
    }

    #[test]
    fn fees_round_up_and_never_wrap() {
        let f = Fee::new(150, 200).unwrap();
        assert_eq!(f.on(1000), Ok(170));
        assert_eq!(f.on(1), Ok(151));
        assert_eq!(
            Fee::new(u64::MAX, 1).unwrap().on(1),
            Err(MoneyError::Overflow)
        );
        assert_eq!(Fee::new(0, 10_001), Err(MoneyError::InvalidBasisPoints));
    }

    #[test]
    fn min_gross_matches_reference_examples() {
        // From the reference implementation's tests, method min send 100.
        assert_eq!(Fee::new(50, 0).unwrap().min_gross_for_net(100), Some(150));
        assert_eq!(Fee::new(0, 200).unwrap().min_gross_for_net(100), Some(103));
        assert_eq!(
            Fee::new(50, 2000).unwrap().min_gross_for_net(100),
            Some(188)
        );
        assert_eq!(Fee::new(0, 10_000).unwrap().min_gross_for_net(1), None);
    }

    proptest! {
        #[test]
        fn min_gross_is_the_least_sufficient_debit(fixed in 0u64..10_000, bp in 0u16..10_000, net in 1u64..1_000_000) {
            let f = Fee::new(fixed, bp).unwrap();
            let d = f.min_gross_for_net(net).unwrap();
            prop_assert!(d - f.on(d).unwrap().min(d) >= net);
            if d > 0 {
                let below = d - 1;
                prop_assert!(below.saturating_sub(f.on(below).unwrap()) < net);
            }
        }

        #[test]
        fn ceil_inverse_delivers_at_least_the_target(m in 1u64..1_000_000_000, e in -12i32..4, v in 0u64..u64::MAX / 4, s1 in 0u8..12, s2 in 0u8..12) {
            let r = Rate { mantissa: m, exponent: e };
            if let Ok(debit) = r.convert_ceil_inverse(v, s1, s2) {
                let delivered = r.convert_floor(debit, s1, s2);
                if let Ok(delivered) = delivered {
                    prop_assert!(delivered >= v);
                }
                if debit > 0 {
                    prop_assert!(r.convert_floor(debit - 1, s1, s2).map_or(true, |d| d < v));
                }
            }
        }

        #[test]
        fn parsers_never_panic(s in ".{0,40}") {
            let _ = parse_u64_canonical(&s);
            let _ = Rate::parse(&s);
            let _ = AssetCode::parse(&s);
        }
    }

    #[test]
    fn slippage_and_fractions_are_exact() {
        let r = Rate::parse("0.9").unwrap();
        assert_eq!(
            r.less_basis_points(100),
            Some(Rate::parse("0.891").unwrap())
        );
        assert_eq!(r.less_basis_points(0), Some(r));
        assert_eq!(r.less_basis_points(10_000), None);
        assert_eq!(r.as_fraction(2, 2), Some((9, 10)));
        assert_eq!(r.as_fraction(2, 9), Some((9_000_000, 1)));
        assert_eq!(r.as_fraction(9, 2), Some((9, 100_000_000)));
        // Digits below 10^-100 are dropped (rounding down), so the result
        // still parses; found by the `amounts` fuzz target with 3e-97.
        let tiny = Rate::parse("3e-97").unwrap();
        let less = tiny.less_basis_points(3).unwrap();
        assert_eq!(less, Rate::parse("2.999e-97").unwrap());
        assert_eq!(Rate::parse(&less.to_string()), Ok(less));
        assert_eq!(Rate::parse("1e-100").unwrap().less_basis_points(1), None);
        // At the top of the range a long mantissa loses digits, which must
        // not push the exponent out of range (found by the fuzz target).
        assert!(Rate::parse("5161510000000000001e95").is_err());
        let top = Rate::parse("5.161510000000000001e100").unwrap();
        let less = top.less_basis_points(4).unwrap();
        assert_eq!(Rate::parse(&less.to_string()), Ok(less));
        assert!(Rate::parse("1e101").is_err());
        assert!(Rate::parse("9.999999999999999999e100").is_ok());
        // A product of exactly 19 nines is kept whole.
        let nines = Rate::parse("9.999999999999999999").unwrap();
        assert_eq!(
            nines.less_basis_points(9_999),
            Rate::parse("0.0009999999999999999999").ok()
        );
        // 19 significant digits less 1 %: rounded down in the last digit.
        let long = Rate::parse("1.234567890123456789").unwrap();
        let less = long.less_basis_points(100).unwrap();
        assert_eq!(less, Rate::parse("1.222222211222222221").unwrap());
    }
}
