//! Ledger accounts as the operator knows them. An account id is
//! `kind:owner:CODE:scale` (`wallet:0190…:USD:2`); the pages show it as
//! what it is, "alice" (a wallet address) or "peer partner-bank", linked to
//! its page, with the raw id kept for searching and support.

use std::collections::HashMap;

use opd_core::ledger::AccountKind;
use opd_core::Asset;
use opd_service::interledger::peers;
use opd_service::{wallets, ServiceError, Services};

/// An account as a page shows it.
pub(crate) struct AccountName {
    /// What it is, such as "alice" or "fees earned".
    pub label: String,
    /// What kind of account, such as "wallet address".
    pub kind: &'static str,
    /// Its page, when it has one.
    pub link: Option<String>,
    /// The raw account id.
    pub id: String,
}

/// The names of the wallet addresses and peers, read once per page.
pub(crate) struct Names {
    /// Wallet address id -> path.
    wallets: HashMap<String, String>,
    /// Peer id -> name.
    peers: HashMap<String, String>,
}

/// The asset an account id ends with (`kind:owner:CODE:scale`).
pub(crate) fn account_asset(account: &str) -> Option<Asset> {
    let mut parts = account.rsplitn(3, ':');
    let scale = parts.next()?.parse::<i64>().ok()?;
    let code = parts.next()?;
    Asset::parse(code, scale).ok()
}

/// The first eight characters of an id, enough to tell payments apart.
fn short(id: &str) -> String {
    match id.char_indices().nth(8) {
        Some((end, _)) => format!("{}…", &id[..end]),
        None => id.to_owned(),
    }
}

impl Names {
    pub(crate) async fn load(services: &Services) -> Result<Self, ServiceError> {
        let wallets = wallets::list(services, None)
            .await?
            .into_iter()
            .map(|w| (w.id.to_string(), w.path.to_string()))
            .collect();
        let peers = peers::list(services)
            .await?
            .into_iter()
            .map(|p| (p.id.to_string(), p.name))
            .collect();
        Ok(Self { wallets, peers })
    }

    /// Names from (id, path) and (id, name) pairs, for tests.
    #[cfg(test)]
    pub(crate) fn of(wallets: &[(&str, &str)], peers: &[(&str, &str)]) -> Self {
        let own = |pairs: &[(&str, &str)]| {
            pairs
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect()
        };
        Self {
            wallets: own(wallets),
            peers: own(peers),
        }
    }

    /// `account` by name.
    pub(crate) fn name(&self, account: &str) -> AccountName {
        let mut parts = account.splitn(3, ':');
        let kind = parts.next().and_then(AccountKind::parse);
        let owner = parts.next().unwrap_or_default();
        let code = account_asset(account).map(|a| a.code.to_string());
        let (label, kind, link) = match kind {
            Some(AccountKind::Wallet) => (
                self.wallets
                    .get(owner)
                    .cloned()
                    .unwrap_or_else(|| short(owner)),
                "wallet address",
                Some(format!("/dashboard/wallets/{owner}")),
            ),
            Some(AccountKind::Outgoing) => (
                format!("outgoing payment {}", short(owner)),
                "money held for a payment",
                Some(format!("/dashboard/payments/outgoing/{owner}")),
            ),
            Some(AccountKind::Incoming) => (
                format!("incoming payment {}", short(owner)),
                "money received, not withdrawn",
                Some(format!("/dashboard/payments/incoming/{owner}")),
            ),
            Some(AccountKind::Spsp) => (
                format!(
                    "paid by payment pointer to {}",
                    self.wallets
                        .get(owner)
                        .cloned()
                        .unwrap_or_else(|| short(owner))
                ),
                "money received over SPSP, not withdrawn",
                Some(format!("/dashboard/wallets/{owner}")),
            ),
            Some(AccountKind::Fees) => ("fees earned".to_owned(), "the operator's income", None),
            Some(AccountKind::Settlement) => (
                "outside world".to_owned(),
                "deposits, withdrawals and conversions",
                None,
            ),
            Some(AccountKind::Peer) => (
                format!(
                    "peer {}",
                    self.peers
                        .get(owner)
                        .cloned()
                        .unwrap_or_else(|| short(owner))
                ),
                "what the peer may still send us",
                Some(format!("/dashboard/peers#peer-{owner}")),
            ),
            Some(AccountKind::Hold) => (
                format!("packet in flight {}", short(owner)),
                "a forwarded packet not settled yet",
                None,
            ),
            None => (account.to_owned(), "unknown", None),
        };
        AccountName {
            label: match code {
                Some(code) => format!("{label} ({code})"),
                None => label,
            },
            kind,
            link,
            id: account.to_owned(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names() -> Names {
        Names {
            wallets: HashMap::from([("w1".to_owned(), "alice".to_owned())]),
            peers: HashMap::from([("p1".to_owned(), "partner-bank".to_owned())]),
        }
    }

    #[test]
    fn accounts_are_named_by_what_they_are() {
        let n = names();
        let alice = n.name("wallet:w1:USD:2");
        assert_eq!(alice.label, "alice (USD)");
        assert_eq!(alice.link.as_deref(), Some("/dashboard/wallets/w1"));
        assert_eq!(n.name("peer:p1:USD:2").label, "peer partner-bank (USD)");
        assert_eq!(n.name("fees:fees:EUR:2").label, "fees earned (EUR)");
        assert_eq!(
            n.name("settlement:settlement:USD:2").label,
            "outside world (USD)"
        );
        let payment = n.name("outgoing:0190abcdef123456:USD:2");
        assert_eq!(payment.label, "outgoing payment 0190abcd… (USD)");
        assert_eq!(
            payment.link.as_deref(),
            Some("/dashboard/payments/outgoing/0190abcdef123456")
        );
        // Unknown owners and kinds are shown, not dropped.
        assert_eq!(n.name("wallet:gone:USD:2").label, "gone (USD)");
        assert_eq!(n.name("odd").label, "odd");
    }
}
