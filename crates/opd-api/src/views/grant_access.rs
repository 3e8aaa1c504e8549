//! A grant's access items as people read them: the type and actions, the
//! wallet address each names, and its limits in the asset's units. The
//! operator's dashboard and the owner's own page show grants alike.

use crate::display;

/// One access item of a grant as the page shows it.
pub(crate) struct Access {
    /// `outgoing-payment: create, read`.
    pub(crate) what: String,
    /// The wallet address it is for, when it names one.
    pub(crate) wallet: Option<String>,
    /// Its limits in words: `debit $50.00, every P1M, to <receiver>`.
    pub(crate) limits: Option<String>,
}

/// An amount of a limit (`{value, assetCode, assetScale}`) in its units.
fn limit_amount(v: &serde_json::Value) -> Option<String> {
    let value = v["value"].as_str()?.parse::<u64>().ok()?;
    let scale = u8::try_from(v["assetScale"].as_u64()?).ok()?;
    Some(display::amount(value, v["assetCode"].as_str()?, scale))
}

/// A grant's limits in words, when it has some.
fn limits_words(limits: &serde_json::Value) -> Option<String> {
    let mut words = Vec::new();
    for (key, label) in [("debitAmount", "debit"), ("receiveAmount", "receive")] {
        if let Some(a) = limit_amount(&limits[key]) {
            words.push(format!("{label} {a}"));
        }
    }
    if let Some(interval) = limits["interval"].as_str() {
        words.push(format!("every {interval}"));
    }
    if let Some(receiver) = limits["receiver"].as_str() {
        words.push(format!("to {receiver}"));
    }
    (!words.is_empty()).then(|| words.join(", "))
}

/// Each access item of the stored JSON: type and actions, the wallet
/// address it names, and its limits.
pub(crate) fn access_items(access: &str) -> Vec<Access> {
    let Ok(serde_json::Value::Array(items)) = serde_json::from_str(access) else {
        return vec![Access {
            what: access.to_owned(),
            wallet: None,
            limits: None,
        }];
    };
    items
        .iter()
        .map(|item| {
            let kind = item["type"].as_str().unwrap_or("?");
            let actions: Vec<&str> = item["actions"]
                .as_array()
                .map(|a| a.iter().filter_map(|v| v.as_str()).collect())
                .unwrap_or_default();
            Access {
                what: format!("{kind}: {}", actions.join(", ")),
                wallet: item["identifier"].as_str().map(str::to_owned),
                limits: limits_words(&item["limits"]),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::access_items;

    #[test]
    fn an_access_item_shows_its_wallet_address_and_limits_in_units() {
        let access = r#"[{"type":"outgoing-payment","actions":["create","read"],"identifier":"https://w.example/alice",
            "limits":{"debitAmount":{"value":"5000","assetCode":"USD","assetScale":2},"interval":"R/2026-11-27T00:00:00Z/P1M",
            "receiver":"https://w.example/incoming-payments/1"}},
            {"type":"quote","actions":["create"]}]"#;
        let items = access_items(access);
        assert_eq!(items[0].what, "outgoing-payment: create, read");
        assert_eq!(items[0].wallet.as_deref(), Some("https://w.example/alice"));
        assert_eq!(
            items[0].limits.as_deref(),
            Some("debit $50.00, every R/2026-11-27T00:00:00Z/P1M, to https://w.example/incoming-payments/1")
        );
        assert_eq!(
            (items[1].wallet.as_deref(), items[1].limits.as_deref()),
            (None, None)
        );
        assert_eq!(access_items("not json")[0].what, "not json");
    }
}
