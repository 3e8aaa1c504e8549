//! Human-readable output: one resource as aligned `label  value` lines,
//! amounts with their decimals and asset (`12.34 USD`), never minor units.
//! Every value is the server's, shown inert ([`Untrusted`]): a name cannot
//! hide, move or fake a line. `--json` prints the server's JSON instead.

use opd_core::untrusted::{self, Untrusted};
use serde_json::Value;

use crate::amount::Amount;

/// The fields shown for each kind of resource, in order, with labels.
const INCOMING: &[(&str, &str)] = &[
    ("walletAddress", "wallet address"),
    ("incomingAmount", "amount"),
    ("receivedAmount", "received"),
    ("completed", "completed"),
    ("expiresAt", "expires"),
    ("createdAt", "created"),
    ("metadata", "metadata"),
];
const QUOTE: &[(&str, &str)] = &[
    ("walletAddress", "wallet address"),
    ("receiver", "receiver"),
    ("debitAmount", "debit"),
    ("receiveAmount", "receive"),
    ("expiresAt", "expires"),
];
const OUTGOING: &[(&str, &str)] = &[
    ("walletAddress", "wallet address"),
    ("receiver", "receiver"),
    ("debitAmount", "debit"),
    ("receiveAmount", "receive"),
    ("sentAmount", "sent"),
    ("failed", "failed"),
    ("createdAt", "created"),
    ("metadata", "metadata"),
];
const WALLET: &[(&str, &str)] = &[
    ("publicName", "name"),
    ("assetCode", "asset"),
    ("assetScale", "scale"),
    ("authServer", "auth server"),
    ("resourceServer", "resource server"),
];

/// What a resource is, judged from its fields.
fn fields_of(v: &Value) -> (&'static str, &'static [(&'static str, &'static str)]) {
    if v.get("resourceServer").is_some() {
        ("Wallet address", WALLET)
    } else if v.get("sentAmount").is_some() {
        ("Outgoing payment", OUTGOING)
    } else if v.get("receivedAmount").is_some() {
        ("Incoming payment", INCOMING)
    } else if v.get("debitAmount").is_some() {
        ("Quote", QUOTE)
    } else {
        ("", &[])
    }
}

/// A field's value as a person reads it.
fn show_value(v: &Value) -> String {
    if let Some(a) = Amount::from_json(v) {
        return a.to_string();
    }
    match v {
        Value::Bool(true) => "yes".into(),
        Value::Bool(false) => "no".into(),
        Value::String(s) => Untrusted(s).to_string(),
        other => untrusted::json(&other.to_string()),
    }
}

/// One resource: a title line with its id, then its fields.
pub fn resource(v: &Value) -> String {
    let (title, fields) = fields_of(v);
    if fields.is_empty() {
        return untrusted::json(&serde_json::to_string_pretty(v).unwrap_or_default());
    }
    let mut out = format!("{title}  {}\n", Untrusted(v["id"].as_str().unwrap_or("?")));
    for (key, label) in fields {
        match v.get(*key) {
            None | Some(Value::Null) => {}
            Some(value) => out.push_str(&format!("  {label:<16}{}\n", show_value(value))),
        }
    }
    out
}

/// A list, one resource after another, or a line saying it is empty.
pub fn list(items: &[Value], what: &str) -> String {
    if items.is_empty() {
        return format!("No {what}.\n");
    }
    items.iter().map(resource).collect::<Vec<_>>().join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_incoming_payment_shows_amounts_in_decimals() {
        let text = resource(&json!({
            "id": "https://w.example/incoming-payments/1",
            "walletAddress": "https://w.example/bob",
            "incomingAmount": { "value": "1234", "assetCode": "USD", "assetScale": 2 },
            "receivedAmount": { "value": "0", "assetCode": "USD", "assetScale": 2 },
            "completed": false,
            "metadata": null,
        }));
        assert!(text.starts_with("Incoming payment  https://w.example/incoming-payments/1\n"));
        assert!(text.contains("  amount          12.34 USD\n"), "{text}");
        assert!(text.contains("  received        0.00 USD\n"), "{text}");
        assert!(text.contains("  completed       no\n"), "{text}");
        assert!(!text.contains("metadata"));
    }

    #[test]
    fn a_servers_text_is_shown_inert() {
        let text = resource(&json!({
            "id": "https://w.example/bob\u{1b}[2J",
            "publicName": "Bob\u{1b}[8m\nPaid.\u{202e}",
            "assetCode": "USD",
            "assetScale": 2,
            "authServer": "https://a.example",
            "resourceServer": "https://w.example",
        }));
        assert!(
            text.starts_with("Wallet address  https://w.example/bob[U+001B][2J\n"),
            "{text}"
        );
        assert!(
            text.contains("  name            Bob[U+001B][8m[U+000A]Paid.[U+202E]\n"),
            "{text}"
        );
        let other = resource(&json!({ "odd\u{202e}": "x\u{9b}" }));
        assert!(
            !other.contains('\u{202e}') && !other.contains('\u{9b}'),
            "{other}"
        );
    }

    #[test]
    fn kinds_are_told_apart() {
        assert!(resource(&json!({ "id": "q", "debitAmount": { "value": "5", "assetCode": "EUR", "assetScale": 2 } })).starts_with("Quote"));
        assert!(
            resource(&json!({ "id": "o", "sentAmount": {}, "debitAmount": {} }))
                .starts_with("Outgoing")
        );
        assert_eq!(list(&[], "incoming payments"), "No incoming payments.\n");
    }
}
