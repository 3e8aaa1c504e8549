//! `GET /dashboard`: the wallet addresses with their balances and keys;
//! `GET /dashboard/wallets/{id}`: one wallet address's balance history
//! (deposits, payments, money received, refunds, withdrawals).

use askama::Template;
use axum::extract::{Path, State};
use axum::http::{StatusCode, Uri};
use axum::response::Response;
use axum::Extension;
use opd_core::ledger::{AccountKind, TransferKind};
use opd_core::WalletAddressId;
use opd_service::{operator, wallets};

use super::{done_message, failed, not_found, query_pairs, Nav, Session, CSS};
use crate::admin::state::AdminState;
use crate::{display, pages};

/// One wallet address as the table shows it.
struct Row {
    path: String,
    id: String,
    url: String,
    name: String,
    asset: String,
    balance: String,
    keys: Vec<String>,
    created: String,
    active: bool,
}

#[derive(Template)]
#[template(path = "dashboard/wallets.html")]
struct WalletsPage {
    page_title: &'static str,
    css_href: &'static str,
    nav: Nav,
    notice: Option<&'static str>,
    rows: Vec<Row>,
}

pub(crate) async fn page(
    State(state): State<AdminState>,
    Extension(session): Extension<Session>,
    uri: Uri,
) -> Response {
    let services = &state.app.services;
    let wallets = match wallets::list(services).await {
        Ok(w) => w,
        Err(e) => return failed(e),
    };
    // One read of the balances for the whole table.
    let accounts = match operator::ledger_accounts(services).await {
        Ok(a) => a,
        Err(e) => return failed(e),
    };
    let mut rows = Vec::with_capacity(wallets.len());
    for w in &wallets {
        let account = AccountKind::Wallet.account_id(&w.id.to_string(), &w.asset);
        let balance = accounts
            .iter()
            .find(|a| a.id == account)
            .map_or(0, |a| a.balance);
        let balance = u64::try_from(balance).map_or_else(
            |_| format!("{balance} (out of range)"),
            |v| display::amount(v, w.asset.code.as_str(), w.asset.scale),
        );
        let keys = match wallets::keys(services, w.id).await {
            Ok(k) => k,
            Err(e) => return failed(e),
        };
        rows.push(Row {
            path: w.path.to_string(),
            id: w.id.to_string(),
            url: services.config.public_url.wallet_address(&w.path),
            name: w.public_name.clone().unwrap_or_default(),
            asset: format!("{} (scale {})", w.asset.code, w.asset.scale),
            balance,
            keys: keys
                .iter()
                .map(|k| match k.revoked_at {
                    Some(_) => format!("{} (revoked)", k.key.kid),
                    None => k.key.kid.clone(),
                })
                .collect(),
            created: display::datetime(w.created_at),
            active: w.deactivated_at.is_none(),
        });
    }
    let query = query_pairs(&uri);
    pages::render(
        StatusCode::OK,
        &WalletsPage {
            page_title: "Wallet addresses",
            css_href: CSS,
            nav: Nav::new("/dashboard", &session),
            notice: done_message(&query),
            rows,
        },
    )
}

/// One transfer in or out of a wallet address, as its history shows it.
struct HistoryRow {
    /// What it was for the wallet: `received`, `payment`, `deposit`...
    what: &'static str,
    kind: String,
    /// The payment (or the wallet address, for the operator's moves).
    reference: String,
    /// Signed: `+` in, `−` out.
    amount: String,
    created: String,
}

#[derive(Template)]
#[template(path = "dashboard/wallet.html")]
struct WalletPage {
    page_title: &'static str,
    css_href: &'static str,
    nav: Nav,
    notice: Option<&'static str>,
    facts: Vec<(String, String)>,
    rows: Vec<HistoryRow>,
}

/// What a transfer was for the wallet it credited (`incoming`) or debited.
fn what(kind: TransferKind, incoming: bool) -> &'static str {
    match (kind, incoming) {
        (TransferKind::Deposit, _) => "deposit",
        (TransferKind::Withdrawal, _) => "withdrawal",
        // Money an incoming payment received lands here (balance mode);
        // `settle` moved what older releases left on incoming payments.
        (TransferKind::Deliver | TransferKind::Receive | TransferKind::Settle, true) => "received",
        (TransferKind::Refund, _) => "refund",
        (_, false) => "payment",
        (_, true) => "credit",
    }
}

/// `GET /dashboard/wallets/{id}`: the wallet address, its balance and its
/// newest 200 transfers.
pub(crate) async fn history(
    State(state): State<AdminState>,
    Extension(session): Extension<Session>,
    Path(id): Path<String>,
    uri: Uri,
) -> Response {
    let services = &state.app.services;
    let Some(id) = WalletAddressId::parse(&id) else {
        return not_found("wallet address");
    };
    let wallet = match wallets::get(services, id).await {
        Ok(w) => w,
        Err(opd_service::ServiceError::NotFound(_)) => return not_found("wallet address"),
        Err(e) => return failed(e),
    };
    let balance = match opd_service::ledger::balance(services, &wallet).await {
        Ok(b) => b,
        Err(e) => return failed(e),
    };
    let transfers = match opd_service::ledger::transfers(services, &wallet, 200).await {
        Ok(t) => t,
        Err(e) => return failed(e),
    };
    let account = AccountKind::Wallet.account_id(&wallet.id.to_string(), &wallet.asset);
    let (code, scale) = (wallet.asset.code.as_str(), wallet.asset.scale);
    let rows = transfers
        .iter()
        .map(|t| {
            let incoming = t.credit_account == account;
            let sign = if incoming { "+" } else { "−" };
            HistoryRow {
                what: what(t.kind, incoming),
                kind: t.kind.as_str().to_owned(),
                reference: t.reference.clone().unwrap_or_default(),
                amount: format!("{sign}{}", display::amount(t.amount, code, scale)),
                created: display::datetime(t.created_at),
            }
        })
        .collect();
    let facts = vec![
        ("Wallet address".to_owned(), wallet.path.to_string()),
        ("Id".to_owned(), wallet.id.to_string()),
        ("Asset".to_owned(), wallet.asset.to_string()),
        (
            "Balance".to_owned(),
            display::amount(balance.value, code, scale),
        ),
    ];
    pages::render(
        StatusCode::OK,
        &WalletPage {
            page_title: "Wallet address",
            css_href: CSS,
            nav: Nav::new("/dashboard", &session),
            notice: done_message(&query_pairs(&uri)),
            facts,
            rows,
        },
    )
}
