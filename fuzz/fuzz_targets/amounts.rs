//! Money on the wire: amounts, assets and decimal rates parse or fail
//! cleanly, and what parses round-trips; conversions, fees and slippage
//! agree with an independent reference computed here, so an overflow is
//! always an explicit error, never a wrong number.
//!
//! Input: `<value> <assetCode> <rate>` as text (the seeds); the first and
//! last bytes also serve as asset scales, so every scale gets tried.
//!
//! The reference below shares no code with `opd_core::money`: it reads the
//! rate's digits itself and multiplies or divides by ten one step at a
//! time, where the library uses powers of ten and `u128` shortcuts.
#![no_main]

use libfuzzer_sys::fuzz_target;
use opd_core::decimal::{format_decimal, parse_decimal};
use opd_core::{Amount, AmountWire, Fee, MoneyError, Rate};

/// The exact value of a rate's text as `mantissa × 10^exponent` with the
/// mantissa's trailing zeros moved into the exponent; `None` for text that
/// is not `digits[.digits][e[+|-]digits]`. Only used on text the library
/// accepted, to learn what number that text means.
fn reference_rate(text: &str) -> Option<(u128, i32)> {
    let (number, exp) = match text.find(['e', 'E']) {
        Some(i) => (&text[..i], &text[i + 1..]),
        None => (text, "0"),
    };
    let exp_digits = exp
        .strip_prefix('-')
        .or_else(|| exp.strip_prefix('+'))
        .unwrap_or(exp);
    if exp_digits.is_empty() || !exp_digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let mut exponent: i32 = exp_digits.parse().ok()?;
    if exp.starts_with('-') {
        exponent = -exponent;
    }
    let (int, frac) = number.split_once('.').unwrap_or((number, ""));
    let digits = format!("{int}{frac}");
    if !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    // Trailing zeros go into the exponent before the digits are read, so
    // `1000…0` with a hundred zeros is still a small mantissa.
    let significant = digits.trim_start_matches('0').trim_end_matches('0');
    let trailing = digits.trim_start_matches('0').len() - significant.len();
    exponent -= i32::try_from(frac.len()).ok()?;
    exponent += i32::try_from(trailing).ok()?;
    let mut mantissa: u128 = 0;
    for b in significant.bytes() {
        mantissa = mantissa
            .checked_mul(10)?
            .checked_add(u128::from(b - b'0'))?;
    }
    Some((mantissa, exponent))
}

/// `floor(value × mantissa × 10^power)`, or `None` when that exceeds
/// `u64::MAX`, by repeated multiplication or division by ten.
fn reference_floor(value: u64, mantissa: u128, power: i32) -> Option<u64> {
    let mut x = u128::from(value).checked_mul(mantissa)?;
    if power >= 0 {
        for _ in 0..power {
            if x == 0 {
                break;
            }
            x = x.checked_mul(10)?;
            if x > u128::from(u64::MAX) {
                return None;
            }
        }
    } else {
        // floor(floor(x / 10) / 10) = floor(x / 100), and so on.
        for _ in 0..power.unsigned_abs() {
            x /= 10;
        }
    }
    u64::try_from(x).ok()
}

/// Whether `delivered` (a [`reference_floor`] result, `None` meaning "more
/// than u64::MAX") is at least `target`.
fn reaches(delivered: Option<u64>, target: u64) -> bool {
    delivered.is_none_or(|d| d >= target)
}

fn check_amount(value: &str, code: &str, scale: i64) {
    let Ok(amount) = Amount::parse(value, code, scale) else {
        return;
    };
    // Only the canonical text parses, so the wire form gives it back.
    let wire = AmountWire::from(&amount);
    assert_eq!(wire.value, value);
    assert_eq!(wire.asset_code, code);
    assert_eq!(wire.asset_scale, scale);
    assert_eq!(Amount::try_from(&wire).as_ref(), Ok(&amount));
    let json = serde_json::to_vec(&wire).expect("an amount serializes");
    let back: AmountWire = serde_json::from_slice(&json).expect("its JSON reads back");
    assert_eq!(back, wire);
    // Decimal text for people: exact both ways at the asset's scale.
    let shown = format_decimal(amount.value, amount.asset.scale);
    assert_eq!(parse_decimal(&shown, amount.asset.scale), Ok(amount.value));
}

fn check_rate(text: &str, value: u64, from: u8, to: u8) {
    let Ok(rate) = Rate::parse(text) else {
        return;
    };
    let (mantissa, exponent) = reference_rate(text).expect("the library accepted a non-number");
    // Display and JSON give back the same rate.
    let shown = rate.to_string();
    assert_eq!(Rate::parse(&shown), Ok(rate), "{text:?} shown as {shown:?}");
    let json = serde_json::to_string(&rate).expect("a rate serializes");
    assert_eq!(serde_json::from_str::<Rate>(&json).ok(), Some(rate));

    let power = exponent + i32::from(to) - i32::from(from);
    // Delivery: floor(v × r × 10^(to − from)), or an explicit overflow.
    let expected = reference_floor(value, mantissa, power).ok_or(MoneyError::Overflow);
    assert_eq!(
        rate.convert_floor(value, from, to),
        expected,
        "{text} {value} {from}->{to}"
    );

    // Debit: the least d that delivers at least `value`, or an explicit
    // overflow when not even u64::MAX does.
    match rate.convert_ceil_inverse(value, from, to) {
        Ok(d) => {
            assert!(reaches(reference_floor(d, mantissa, power), value));
            if d > 0 {
                assert!(!reaches(reference_floor(d - 1, mantissa, power), value));
            }
        }
        Err(e) => {
            assert_eq!(e, MoneyError::Overflow);
            assert!(!reaches(reference_floor(u64::MAX, mantissa, power), value));
        }
    }

    // The exact fraction: numerator / denominator = mantissa × 10^power.
    if let Some((n, d)) = rate.as_fraction(from, to) {
        let (mut rn, mut rd) = (mantissa, 1u128);
        for _ in 0..power.unsigned_abs() {
            if power >= 0 {
                rn = rn.checked_mul(10).expect("the library's numerator fit");
            } else {
                rd = rd.checked_mul(10).expect("the library's denominator fit");
            }
        }
        assert_eq!((n, d), (rn, rd));
    }

    // Slippage: never above the rate, and still a rate that round-trips.
    let basis_points = u16::try_from(value % 10_001).unwrap_or(0);
    if let Some(less) = rate.less_basis_points(basis_points) {
        let shown = less.to_string();
        assert_eq!(
            Rate::parse(&shown),
            Ok(less),
            "{rate} less {basis_points} bp"
        );
        let (lm, le) = reference_rate(&shown).expect("a shown rate is a number");
        // less ≤ rate × (10000 − bp) / 10000, compared on a common exponent.
        let keep = mantissa * u128::from(10_000 - basis_points);
        let (mut a, mut b, shift) = (lm, keep, le - (exponent - 4));
        for _ in 0..shift.unsigned_abs() {
            if shift >= 0 {
                a = a.saturating_mul(10);
            } else {
                b = b.saturating_mul(10);
            }
        }
        assert!(a <= b, "{rate} less {basis_points} bp gave {less}");
    } else {
        // Nothing remains: either all of it was taken, or what is left
        // lies below 10^-100, the smallest digit a rate can hold.
        let kept = mantissa * u128::from(10_000 - basis_points);
        let shift = exponent - 4 + 100;
        let below_smallest = shift < 0
            && 10u128
                .checked_pow(shift.unsigned_abs())
                .is_none_or(|unit| kept < unit);
        assert!(
            kept == 0 || below_smallest,
            "{rate} less {basis_points} bp vanished"
        );
    }
}

fn check_fee(fixed: u64, basis_points: u16, amount: u64) {
    let Ok(fee) = Fee::new(fixed, basis_points) else {
        assert!(basis_points > 10_000);
        return;
    };
    let reference = |p: u64| -> Option<u64> {
        let pct = (u128::from(p) * u128::from(basis_points)).div_ceil(10_000);
        u64::try_from(pct).ok()?.checked_add(fixed)
    };
    assert_eq!(
        fee.on(amount),
        reference(amount).ok_or(MoneyError::Overflow)
    );
    // The least gross debit whose net after the fee reaches `amount`.
    let enough =
        |d: u64| reference(d).is_some_and(|f| d.checked_sub(f).is_some_and(|n| n >= amount));
    match fee.min_gross_for_net(amount) {
        Some(d) => {
            assert!(enough(d), "{fee:?} gross {d} for net {amount}");
            assert!(d == 0 || !enough(d - 1), "{fee:?} gross {d} not least");
        }
        None => assert!(!enough(u64::MAX), "{fee:?} said no gross reaches {amount}"),
    }
}

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let mut parts = text.splitn(3, ' ');
    let value = parts.next().unwrap_or_default();
    let code = parts.next().unwrap_or_default();
    let rest = parts.next().unwrap_or_default();
    let (from, to) = (
        data.first().copied().unwrap_or(0),
        data.last().copied().unwrap_or(0),
    );
    check_amount(value, code, i64::from(from));
    let v = value.parse::<u64>().unwrap_or(u64::MAX);
    check_rate(rest, v, from, to);
    check_fee(
        v.rotate_left(u32::from(to)),
        u16::from_le_bytes([from, to]) % 10_002,
        v,
    );
});
