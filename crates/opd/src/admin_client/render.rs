//! The admin helpers' answers as text for people: amounts in their
//! asset's units (`12.34 USD`, exact: integer minor units written out on
//! their digits by `opd_core::decimal`, never through floating point), fee
//! shares in percent (`1.5 %`, as the dashboard shows them), one line per
//! item of a list. Every text of the server's (names, paths, URLs, codes)
//! goes through [`Untrusted`]: one value, one inert line.

use opd_client::amount::Amount;
use opd_core::decimal::format_decimal;
use opd_core::untrusted::Untrusted;
use serde_json::Value;

/// A value of a server's answer as text, inert on a terminal: a string as
/// it is, a number as written, `?` when missing.
pub(super) fn text(v: &Value) -> String {
    match v {
        Value::String(s) => Untrusted(s).to_string(),
        Value::Null => "?".to_owned(),
        other => Untrusted(&other.to_string()).to_string(),
    }
}

/// Text the operator typed, echoed: inert too (it may be pasted).
pub(super) fn typed(s: &str) -> String {
    Untrusted(s).to_string()
}

/// The asset amounts are in, when the answer says which.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Asset(Option<(String, u8)>);

impl Asset {
    pub(super) fn new(code: &str, scale: u8) -> Self {
        Self(Some((code.to_owned(), scale)))
    }

    /// `{"code": "USD", "scale": 2}`, as peers carry it.
    pub(super) fn of_object(v: &Value) -> Self {
        Self::of(&v["code"], &v["scale"])
    }

    /// `assetCode` and `assetScale` of `v`, as wallet addresses, fees and
    /// amounts carry them.
    pub(super) fn of_fields(v: &Value) -> Self {
        Self::of(&v["assetCode"], &v["assetScale"])
    }

    fn of(code: &Value, scale: &Value) -> Self {
        let scale = scale.as_u64().and_then(|s| u8::try_from(s).ok());
        Self(code.as_str().zip(scale).map(|(c, s)| (c.to_owned(), s)))
    }

    /// Its scale, when known.
    pub(super) fn scale(&self) -> Option<u8> {
        self.0.as_ref().map(|(_, s)| *s)
    }

    /// `minor` minor units in the asset's units: `12.34 USD`.
    pub(super) fn amount(&self, minor: u64) -> String {
        match &self.0 {
            Some((code, scale)) => Amount {
                value: minor,
                asset_code: code.clone(),
                asset_scale: *scale,
            }
            .to_string(),
            None => format!("{minor} (minor units)"),
        }
    }

    /// An amount as the admin API writes it (a string of minor units).
    pub(super) fn amount_of(&self, minor: &Value) -> String {
        match minor_units(minor) {
            Some(value) => self.amount(value),
            None => format!("{} (minor units)", text(minor)),
        }
    }

    /// `USD (scale 2)`.
    pub(super) fn describe(&self) -> String {
        match &self.0 {
            Some((code, scale)) => format!("{} (scale {scale})", Untrusted(code)),
            None => "? (scale ?)".to_owned(),
        }
    }

    /// A fee in this asset: `USD 0.30 + 1.5 %`.
    pub(super) fn fee(&self, fixed: u64, basis_points: u64) -> String {
        let fixed = match &self.0 {
            Some((code, scale)) => format!("{} {}", Untrusted(code), format_decimal(fixed, *scale)),
            None => format!("{fixed} (minor units)"),
        };
        format!("{fixed} + {}", percent(basis_points))
    }
}

/// An integer of minor units, as a string (the admin API's form) or a
/// number.
pub(super) fn minor_units(v: &Value) -> Option<u64> {
    match v {
        Value::String(s) => opd_core::money::parse_u64_canonical(s).ok(),
        other => other.as_u64(),
    }
}

/// Basis points as a percentage, as the dashboard shows it: 150 is
/// `1.5 %`, 50 is `0.5 %`, 0 is `0 %`.
pub(super) fn percent(basis_points: u64) -> String {
    let text = format_decimal(basis_points, 2);
    let text = text.trim_end_matches('0').trim_end_matches('.');
    format!("{text} %")
}

/// One line per item of a list answer, or `empty` for none.
pub(super) fn list(items: &Value, empty: &str, line: impl Fn(&Value) -> String) -> Vec<String> {
    let lines: Vec<String> = items.as_array().into_iter().flatten().map(line).collect();
    if lines.is_empty() {
        vec![empty.to_owned()]
    } else {
        lines
    }
}

/// `label: value` lines of the values given (`None`: left out).
pub(super) fn details(pairs: &[(&str, Option<String>)]) -> Vec<String> {
    pairs
        .iter()
        .filter_map(|(label, value)| value.as_ref().map(|v| format!("{label}: {v}")))
        .collect()
}

/// A value that may be absent (`null` or missing), as text.
pub(super) fn optional(v: &Value) -> Option<String> {
    (!v.is_null()).then(|| text(v))
}

/// How a wallet address is named in the other helpers: its path, or
/// `tenant:path` outside the operator's tenant.
pub(super) fn wallet_name(w: &Value) -> String {
    match w["tenant"].as_str() {
        Some(tenant) if tenant != "default" => format!("{}:{}", typed(tenant), text(&w["path"])),
        _ => text(&w["path"]),
    }
}

/// A wallet address on one line: `alice  https://h/alice  USD (scale 2)`,
/// and `deactivated` when it is.
pub(super) fn wallet(w: &Value) -> String {
    let mut line = format!(
        "{}  {}  {}",
        wallet_name(w),
        text(&w["url"]),
        Asset::of_fields(w).describe()
    );
    if !w["deactivatedAt"].is_null() {
        line.push_str("  deactivated");
    }
    line
}

/// A peer on one line: `bank  g.bank  USD (scale 2)  liquidity 1.75 USD`.
pub(super) fn peer(p: &Value) -> String {
    let asset = Asset::of_object(&p["asset"]);
    format!(
        "{}  {}  {}  liquidity {}",
        text(&p["name"]),
        text(&p["staticIlpAddress"]),
        asset.describe(),
        asset.amount_of(&p["liquidity"])
    )
}

/// A tenant on one line: `bank-a  Bank A  https://wallet.bank-a.example`,
/// and `(operator)` for the operator's.
pub(super) fn tenant(t: &Value) -> String {
    let mut line = format!(
        "{}  {}  {}",
        text(&t["id"]),
        text(&t["publicName"]),
        text(&t["publicUrl"])
    );
    if t["operator"] == Value::Bool(true) {
        line.push_str("  (operator)");
    }
    line
}

/// A fee on one line: `default  USD 0.30 + 1.5 %`.
pub(super) fn fee(f: &Value) -> String {
    let fixed = minor_units(&f["fixed"]).unwrap_or_default();
    let share = f["basisPoints"].as_u64().unwrap_or_default();
    format!(
        "{}  {}",
        text(&f["tenant"]),
        Asset::of_fields(f).fee(fixed, share)
    )
}

/// A key on one line: `k1  Ed25519  added <time>`, and when it was
/// revoked.
pub(super) fn key(k: &Value) -> String {
    let jwk = &k["jwk"];
    let mut line = format!(
        "{}  {}  added {}",
        text(&jwk["kid"]),
        text(&jwk["crv"]),
        text(&k["createdAt"])
    );
    if !k["revokedAt"].is_null() {
        line.push_str(&format!("  revoked {}", text(&k["revokedAt"])));
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn amounts_are_in_the_assets_units_exactly() {
        let usd = Asset::new("USD", 2);
        assert_eq!(usd.amount(1234), "12.34 USD");
        assert_eq!(usd.amount_of(&json!("5")), "0.05 USD");
        assert_eq!(
            Asset::new("ETH", 18).amount(u64::MAX),
            "18.446744073709551615 ETH"
        );
        assert_eq!(usd.fee(30, 150), "USD 0.30 + 1.5 %");
        assert_eq!(Asset::new("JPY", 0).fee(5, 0), "JPY 5 + 0 %");
        assert_eq!(usd.amount_of(&json!("x")), "x (minor units)");
        assert_eq!(Asset::of_fields(&json!({})).amount(7), "7 (minor units)");
    }

    #[test]
    fn shares_are_percentages_as_on_the_dashboard() {
        for (bp, shown) in [
            (0, "0 %"),
            (1, "0.01 %"),
            (50, "0.5 %"),
            (150, "1.5 %"),
            (1000, "10 %"),
            (10_000, "100 %"),
        ] {
            assert_eq!(percent(bp), shown);
        }
    }

    #[test]
    fn server_text_is_inert() {
        let hostile = json!({
            "tenant": "default", "path": "bob\u{1b}[2J", "url": "http://h/\u{202e}x",
            "assetCode": "US\nD", "assetScale": 2,
        });
        let line = wallet(&hostile);
        assert!(!line.chars().any(char::is_control), "{line:?}");
        assert!(!line.contains('\u{202e}'), "{line:?}");
        assert_eq!(
            list(&json!([]), "no wallet addresses", wallet),
            ["no wallet addresses"]
        );
    }
}
