//! Amounts as people write them (`12.34`) and as Open Payments carries them
//! (`{"value":"1234","assetCode":"USD","assetScale":2}`). The decimal
//! conversion is `opd_core::decimal`'s, exact at any scale.

use opd_core::untrusted::Untrusted;
use serde_json::{json, Value};

pub use opd_core::decimal::{format_decimal, parse_decimal, DecimalError};

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
    /// `12.34 USD`; the asset code is a server's, shown inert.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} {}",
            format_decimal(self.value, self.asset_scale),
            Untrusted(&self.asset_code)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_and_shows_wire_amounts() {
        let a = Amount::from_json(&json!({ "value": "1234", "assetCode": "USD", "assetScale": 2 }))
            .unwrap();
        assert_eq!(a.to_string(), "12.34 USD");
        let hostile = Amount {
            asset_code: "USD\u{1b}[8m".into(),
            ..a.clone()
        };
        assert_eq!(hostile.to_string(), "12.34 USD[U+001B][8m");
        assert_eq!(Amount::from_json(&a.to_json()), Some(a));
        assert_eq!(
            Amount::from_json(&json!({ "value": 5, "assetCode": "USD", "assetScale": 2 })),
            None
        );
    }
}
