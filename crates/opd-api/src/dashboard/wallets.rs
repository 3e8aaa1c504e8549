//! `GET /dashboard`: the wallet addresses with their balances and keys.

use askama::Template;
use axum::extract::State;
use axum::http::{StatusCode, Uri};
use axum::response::Response;
use axum::Extension;
use opd_core::ledger::AccountKind;
use opd_service::wallet_addresses;

use super::{done_message, failed, query_pairs, Nav, Session, CSS};
use crate::admin::AdminState;
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
    let wallets = match wallet_addresses::list(services).await {
        Ok(w) => w,
        Err(e) => return failed(e),
    };
    // One read of the balances for the whole table.
    let accounts = match services.store.ledger_accounts().await {
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
        let keys = match wallet_addresses::keys(services, w.id).await {
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
