//! The consent page's words: what each access item lets the client do,
//! with its limits, the receiver and the balance, as a person reads them.

use opd_gnap::{AccessItem, AccessType, Action, OutgoingLimits};
use opd_service::Services;

use crate::display;

/// One thing the client may do, in words.
pub(super) struct Ask {
    pub(super) what: String,
    pub(super) details: Vec<String>,
}

fn has_any(item: &AccessItem, actions: &[Action]) -> bool {
    actions.iter().any(|a| item.actions.contains(a))
}

/// "Send up to $25.00 every month, from 1 November 2026", and the other
/// limits of an outgoing-payment grant as details.
fn sending(limits: Option<&OutgoingLimits>) -> Ask {
    let Some(l) = limits else {
        return Ask {
            what: "Send payments from your wallet address".into(),
            details: vec!["No limit is set on the amount.".into()],
        };
    };
    let period = l
        .interval
        .as_ref()
        .map(|iv| display::interval(iv.as_str()))
        .unwrap_or_else(|| "in total".into());
    let what = if let Some(a) = &l.debit_amount {
        format!(
            "Send up to {} {period}",
            display::amount(a.value, a.asset.code.as_str(), a.asset.scale)
        )
    } else if let Some(a) = &l.receive_amount {
        format!(
            "Send payments that deliver up to {} {period}",
            display::amount(a.value, a.asset.code.as_str(), a.asset.scale)
        )
    } else if l.interval.is_some() {
        format!("Send payments of any amount, {period}")
    } else {
        "Send payments from your wallet address".into()
    };
    let mut details = Vec::new();
    if l.debit_amount.is_none() && l.receive_amount.is_none() {
        details.push("No limit is set on the amount.".into());
    }
    if let Some(r) = &l.receiver {
        details.push(format!("Only to {r}"));
    }
    Ask { what, details }
}

/// How long the consent page waits for a receiver's server to say whose
/// receiver it is.
const RECEIVER_WAIT: std::time::Duration = std::time::Duration::from_secs(3);

/// Who and where a receiver on another server is: the server by the host
/// the URL names (what opd would pay), and the wallet address that server
/// says it pays (on its own origin only), when it answers in time.
async fn elsewhere(services: &Services, receiver: &str) -> String {
    let host = url::Url::parse(receiver)
        .ok()
        .and_then(|u| u.host_str().map(str::to_owned))
        .unwrap_or_else(|| receiver.to_owned());
    let resolve = opd_service::payments::receivers::remote::resolve(services, receiver);
    let wallet = match tokio::time::timeout(RECEIVER_WAIT, resolve).await {
        Ok(Ok(remote)) => remote.wallet_address,
        _ => None,
    };
    match wallet {
        Some(wallet) => format!("The receiver is {wallet}, at another wallet provider ({host})."),
        None => format!("The receiver is at another wallet provider ({host}): {receiver}."),
    }
}

/// What the owner should know before letting a client send: who the
/// receiver is (its wallet address and name, when it is served here) and
/// what it asks for in its own asset, and whether the limit is more than
/// the wallet address holds.
pub(super) async fn sending_notes(
    services: &Services,
    wallet: &opd_core::wallet_address::WalletAddress,
    limits: &OutgoingLimits,
) -> Vec<String> {
    let mut notes = Vec::new();
    if let Some(receiver) = &limits.receiver {
        let local = opd_service::payments::receivers::local(services, receiver).await;
        if !matches!(local, Ok(Ok(_))) {
            notes.push(elsewhere(services, receiver).await);
            // The newest quote to it says what it would get.
            if let Ok(Some(quote)) =
                opd_service::payments::quotes::latest_to(services, wallet, receiver).await
            {
                let got = &quote.receive_amount;
                let debit = &quote.debit_amount;
                notes.push(format!(
                    "The newest quote to this receiver gives it {}{} for {} from your wallet address.",
                    display::amount(got.value, got.asset.code.as_str(), got.asset.scale),
                    if got.asset == wallet.asset {
                        String::new()
                    } else {
                        " in its own currency".to_owned()
                    },
                    display::amount(debit.value, debit.asset.code.as_str(), debit.asset.scale),
                ));
            }
        }
        if let Ok(Ok((payment, to))) = local {
            let address = match services.site_of(&to).await {
                Ok(site) => site.wallet_url(&to),
                Err(_) => to.path.to_string(),
            };
            notes.push(match &to.public_name {
                Some(name) => format!("The receiver is {name} ({address})."),
                None => format!("The receiver is {address}."),
            });
            if let Some(asked) = payment.incoming_amount {
                let left = asked.saturating_sub(payment.received_amount);
                let asset = &payment.asset;
                notes.push(format!(
                    "It asks for {}{}.",
                    display::amount(left, asset.code.as_str(), asset.scale),
                    if asset == &wallet.asset {
                        String::new()
                    } else {
                        " in its own currency".to_owned()
                    }
                ));
            }
        }
    }
    if let Some(limit) = &limits.debit_amount {
        if let Ok(balance) = opd_service::ledger::balance(services, wallet).await {
            if limit.asset == balance.asset && limit.value > balance.value {
                notes.push(format!(
                    "Your balance is {}: payments beyond it will fail until money is added.",
                    display::amount(
                        balance.value,
                        balance.asset.code.as_str(),
                        balance.asset.scale
                    )
                ));
            }
        }
    }
    notes
}

/// What one access item allows, in words.
pub(super) fn asks_of(item: &AccessItem) -> Vec<Ask> {
    let plain = |what: &str| Ask {
        what: what.to_owned(),
        details: Vec::new(),
    };
    let mut out = Vec::new();
    let own = [Action::Read, Action::List];
    let all = [Action::ReadAll, Action::ListAll];
    match item.kind {
        AccessType::OutgoingPayment => {
            if item.actions.contains(&Action::Create) {
                out.push(sending(item.limits.as_ref()));
            }
            if has_any(item, &all) {
                out.push(plain("Read every payment sent from your wallet address"));
            } else if has_any(item, &own) {
                out.push(plain("Read the payments it sends"));
            }
        }
        AccessType::IncomingPayment => {
            if item.actions.contains(&Action::Create) {
                out.push(plain("Receive payments into your wallet address"));
            }
            if item.actions.contains(&Action::Complete) {
                out.push(plain("Close requests for payment into your wallet address"));
            }
            if has_any(item, &all) {
                out.push(plain("Read every payment into your wallet address"));
            } else if has_any(item, &own) {
                out.push(plain(
                    "Read the payments into your wallet address it asked for",
                ));
            }
        }
        AccessType::Quote => {
            if item.actions.contains(&Action::Create) {
                out.push(plain("Get prices for payments from your wallet address"));
            }
            if has_any(item, &[Action::Read, Action::ReadAll]) {
                out.push(plain("Read those prices"));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(item: serde_json::Value) -> Vec<(String, Vec<String>)> {
        let wire: opd_gnap::AccessItemWire = serde_json::from_value(item).unwrap();
        asks_of(&AccessItem::parse(&wire).unwrap())
            .into_iter()
            .map(|a| (a.what, a.details))
            .collect()
    }

    const ALICE: &str = "https://wallet.example/alice";

    #[test]
    fn sending_is_said_with_the_amount_and_the_period() {
        let asks = words(serde_json::json!({
            "type": "outgoing-payment", "actions": ["create", "read"], "identifier": ALICE,
            "limits": { "debitAmount": { "value": "2500", "assetCode": "USD", "assetScale": 2 },
                        "interval": "R/2026-11-01T00:00:00Z/P1M" }
        }));
        assert_eq!(
            asks,
            [
                (
                    "Send up to $25.00 every month, from 1 November 2026".into(),
                    vec![]
                ),
                ("Read the payments it sends".into(), vec![]),
            ]
        );
        let asks = words(serde_json::json!({
            "type": "outgoing-payment", "actions": ["create", "list-all"], "identifier": ALICE,
            "limits": { "receiveAmount": { "value": "1000", "assetCode": "EUR", "assetScale": 2 },
                        "receiver": "https://wallet.example/incoming-payments/1" }
        }));
        assert_eq!(
            asks,
            [
                (
                    "Send payments that deliver up to 10.00 EUR in total".into(),
                    vec!["Only to https://wallet.example/incoming-payments/1".into()]
                ),
                (
                    "Read every payment sent from your wallet address".into(),
                    vec![]
                ),
            ]
        );
        let asks = words(serde_json::json!({
            "type": "outgoing-payment", "actions": ["create"], "identifier": ALICE
        }));
        assert_eq!(
            asks,
            [(
                "Send payments from your wallet address".into(),
                vec!["No limit is set on the amount.".into()]
            )]
        );
    }

    #[test]
    fn receiving_and_quotes_in_words() {
        let asks = words(serde_json::json!({
            "type": "incoming-payment", "actions": ["create", "complete", "read"]
        }));
        let what: Vec<&str> = asks.iter().map(|(w, _)| w.as_str()).collect();
        assert_eq!(
            what,
            [
                "Receive payments into your wallet address",
                "Close requests for payment into your wallet address",
                "Read the payments into your wallet address it asked for",
            ]
        );
        let asks = words(serde_json::json!({ "type": "quote", "actions": ["create", "read"] }));
        let what: Vec<&str> = asks.iter().map(|(w, _)| w.as_str()).collect();
        assert_eq!(
            what,
            [
                "Get prices for payments from your wallet address",
                "Read those prices"
            ]
        );
    }
}
