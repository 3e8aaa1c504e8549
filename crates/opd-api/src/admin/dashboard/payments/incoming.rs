//! One incoming payment on the dashboard: whose it is (its wallet address,
//! its metadata), what it received, and what paid it: local payments (each
//! named, linked) and Interledger packets (grouped by the peer that sent
//! them).
//!
//! Where the money went decides where its transfers are: held on the
//! incoming payment's own account (external funding), or credited straight
//! to the wallet address (balance mode), where they are found among the
//! wallet address's newest transfers by what they reference.

use std::collections::{BTreeMap, HashMap};

use axum::response::Response;
use opd_core::incoming_payment::IncomingPayment;
use opd_core::ledger::{AccountKind, Receipts, Transfer, TransferKind};
use opd_core::{IncomingPaymentId, OutgoingPaymentId};
use opd_service::{operator, wallets, ServiceError, Services};

use super::{amount, Detail};
use crate::admin::dashboard::accounts::{account_asset, Names};
use crate::admin::dashboard::{failed, not_found};
use crate::display;

/// How many of the wallet address's newest transfers are searched for
/// what this payment received (balance mode).
const WALLET_TRANSFERS_SEARCHED: i64 = 500;
/// How many local payments to it are looked up, at most, per page.
const PAYMENTS_LOOKED_UP: usize = 50;

/// One payer of the incoming payment, as the page lists it.
pub(crate) struct Source {
    /// `local payment` or `Interledger packets`.
    pub what: &'static str,
    /// The payment or the peer.
    pub from: String,
    pub link: Option<String>,
    /// How many transfers (packets are credited in groups).
    pub credits: usize,
    pub amount: String,
}

/// An incoming payment's detail; the page to answer when there is none.
pub(super) async fn detail(services: &Services, id: &str) -> Result<Detail, Response> {
    let Some(id) = IncomingPaymentId::parse(id) else {
        return Err(not_found("incoming payment"));
    };
    let p = match operator::incoming_payment(services, id).await {
        Ok(Some(p)) => p,
        Ok(None) => return Err(not_found("incoming payment")),
        Err(e) => return Err(failed(e)),
    };
    let loaded = async {
        let facts = facts(services, &p).await?;
        let transfers = received(services, &p).await?;
        let names = Names::load(services).await?;
        Ok::<_, ServiceError>((facts, transfers, names))
    };
    let (facts, transfers, names) = loaded.await.map_err(failed)?;
    let account = AccountKind::Incoming.account_id(&p.id.to_string(), &p.asset);
    Ok(Detail {
        wallet: p.wallet_address_id,
        facts,
        paid_by: paid_by(&transfers, &p.id.to_string(), &names),
        transfers: Some(transfers),
        account,
        cancel: None,
    })
}

async fn facts(
    services: &Services,
    p: &IncomingPayment,
) -> Result<Vec<(String, String)>, ServiceError> {
    let fact = |label: &str, value: String| (label.to_owned(), value);
    let wallet = wallets::get(services, p.wallet_address_id).await?;
    let url = services.site_of(&wallet).await?.wallet_url(&wallet);
    // Where what it received went: the wallet address's balance (balance
    // mode), or its own account until withdrawn.
    let received_to = match services.config.receipts() {
        Receipts::ToWallet => fact("Received money", "on the wallet address's balance".into()),
        Receipts::Held => fact(
            "Waiting for withdrawal",
            amount(operator::unwithdrawn(services, p.id).await?, &p.asset),
        ),
    };
    let incoming = p.incoming_amount.map(|v| amount(v, &p.asset));
    let metadata = p
        .metadata
        .as_ref()
        .map(|m| serde_json::Value::Object(m.clone()).to_string());
    Ok(vec![
        fact("Id", p.id.to_string()),
        fact("Wallet address", url),
        fact("Completed", if p.completed { "yes" } else { "no" }.into()),
        fact("Incoming amount", incoming.unwrap_or_else(|| "any".into())),
        fact("Received", amount(p.received_amount, &p.asset)),
        received_to,
        fact("Metadata", metadata.unwrap_or_default()),
        fact("Client", p.client.clone().unwrap_or_default()),
        fact("Expires", display::datetime(p.expires_at)),
        fact("Created", display::datetime(p.created_at)),
    ])
}

/// The transfers that brought it money: those of its own account, and
/// (balance mode) those that credited its wallet address for it.
async fn received(services: &Services, p: &IncomingPayment) -> Result<Vec<Transfer>, ServiceError> {
    let own = AccountKind::Incoming.account_id(&p.id.to_string(), &p.asset);
    let mut found = operator::transfers_of(services, &own, 200).await?;
    if services.config.receipts() == Receipts::ToWallet {
        let wallet = AccountKind::Wallet.account_id(&p.wallet_address_id.to_string(), &p.asset);
        let credits: Vec<Transfer> =
            operator::transfers_of(services, &wallet, WALLET_TRANSFERS_SEARCHED)
                .await?
                .into_iter()
                .filter(|t| t.credit_account == wallet)
                .collect();
        let paying = paying_payments(services, &credits, p.id).await?;
        found.extend(credits.into_iter().filter(|t| {
            let reference = t.reference.as_deref().unwrap_or_default();
            match t.kind {
                TransferKind::Receive => reference == p.id.to_string(),
                TransferKind::Deliver => paying.get(reference).copied().unwrap_or(false),
                _ => false,
            }
        }));
    }
    Ok(found)
}

/// Of the local payments `credits` delivered, which paid incoming payment
/// `id` (their receiver names it).
async fn paying_payments(
    services: &Services,
    credits: &[Transfer],
    id: IncomingPaymentId,
) -> Result<HashMap<String, bool>, ServiceError> {
    let suffix = format!("/incoming-payments/{id}");
    let mut paying = HashMap::new();
    let delivered = credits
        .iter()
        .filter(|t| t.kind == TransferKind::Deliver)
        .filter_map(|t| t.reference.as_deref());
    for reference in delivered {
        if paying.contains_key(reference) || paying.len() >= PAYMENTS_LOOKED_UP {
            continue;
        }
        let pays_it = match OutgoingPaymentId::parse(reference) {
            Some(payment) => operator::outgoing_payment(services, payment)
                .await?
                .is_some_and(|o| o.receiver.ends_with(&suffix)),
            None => false,
        };
        paying.insert(reference.to_owned(), pays_it);
    }
    Ok(paying)
}

/// What one payer paid, summed.
struct Paid {
    link: Option<String>,
    credits: usize,
    total: u64,
    asset: opd_core::Asset,
}

/// What paid it, from the transfers that credited it: each local payment
/// (the outgoing payment its delivery references), and the Interledger
/// packets grouped by the peer they came from.
pub(crate) fn paid_by(transfers: &[Transfer], incoming_id: &str, names: &Names) -> Vec<Source> {
    // Keyed by what paid, in a stable order.
    let mut sources: BTreeMap<(&'static str, String), Paid> = BTreeMap::new();
    let credited = transfers.iter().filter(|t| {
        t.kind == TransferKind::Deliver
            || (t.kind == TransferKind::Receive && t.reference.as_deref() == Some(incoming_id))
    });
    for t in credited {
        let Some(asset) = account_asset(&t.credit_account) else {
            continue;
        };
        let (what, from, link) = match t.kind {
            TransferKind::Deliver => {
                let payment = t.reference.clone().unwrap_or_default();
                let link = format!("/dashboard/payments/outgoing/{payment}");
                ("local payment", payment, Some(link))
            }
            _ if t.debit_account.starts_with("peer:") => {
                let peer = names.name(&t.debit_account);
                ("Interledger packets", peer.label, peer.link)
            }
            _ => ("Interledger packets", "a peer, converted".to_owned(), None),
        };
        let entry = sources.entry((what, from)).or_insert(Paid {
            link,
            credits: 0,
            // An incoming payment receives at most u64::MAX in all.
            total: 0,
            asset,
        });
        entry.credits += 1;
        entry.total = entry.total.saturating_add(t.amount);
    }
    sources
        .into_iter()
        .map(|((what, from), paid)| Source {
            what,
            from,
            link: paid.link,
            credits: paid.credits,
            amount: amount(paid.total, &paid.asset),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use opd_core::Timestamp;

    fn transfer(
        kind: TransferKind,
        from: &str,
        to: &str,
        amount: u64,
        reference: &str,
    ) -> Transfer {
        Transfer {
            id: format!("{from}>{to}:{amount}"),
            debit_account: from.to_owned(),
            credit_account: to.to_owned(),
            amount,
            kind,
            reference: Some(reference.to_owned()),
            idempotency_key: None,
            created_at: Timestamp::from_unix_millis(0),
        }
    }

    #[test]
    fn local_payments_are_named_and_packets_are_summed_per_peer() {
        let names = Names::of(&[("w1", "bob")], &[("p1", "partner-bank")]);
        let wallet = "wallet:w1:USD:2";
        let ip = "ip-1";
        let transfers = vec![
            transfer(
                TransferKind::Deliver,
                "outgoing:op-1:USD:2",
                wallet,
                200,
                "op-1",
            ),
            transfer(TransferKind::Receive, "peer:p1:USD:2", wallet, 150, ip),
            transfer(TransferKind::Receive, "peer:p1:USD:2", wallet, 50, ip),
            // Converted: from the settlement account, the peer unknown here.
            transfer(TransferKind::Receive, "settlement:s:USD:2", wallet, 7, ip),
            // Another incoming payment's packets, and a deposit: not its payers.
            transfer(TransferKind::Receive, "peer:p1:USD:2", wallet, 999, "ip-2"),
            transfer(
                TransferKind::Deposit,
                "settlement:s:USD:2",
                wallet,
                5000,
                "w1",
            ),
        ];
        let paid = paid_by(&transfers, ip, &names);
        let shown: Vec<(&str, &str, usize, &str)> = paid
            .iter()
            .map(|s| (s.what, s.from.as_str(), s.credits, s.amount.as_str()))
            .collect();
        assert_eq!(
            shown,
            [
                ("Interledger packets", "a peer, converted", 1, "$0.07"),
                ("Interledger packets", "peer partner-bank (USD)", 2, "$2.00"),
                ("local payment", "op-1", 1, "$2.00"),
            ]
        );
        assert_eq!(
            paid[2].link.as_deref(),
            Some("/dashboard/payments/outgoing/op-1")
        );
    }
}
