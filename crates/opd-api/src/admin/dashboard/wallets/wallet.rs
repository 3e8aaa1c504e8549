//! `GET /dashboard/wallets/{id}`: one wallet address, all the operator
//! needs about it on one page: balance (with a deposit and withdrawal
//! form), keys, the grants naming it, its newest incoming and outgoing
//! payments, and its balance history (deposits, payments, money received,
//! refunds, withdrawals). `POST /dashboard/wallets/{id}/money` moves money
//! in or out; the forms that change the wallet address itself are in
//! [`super::wallet_actions`].

use askama::Template;
use axum::extract::{Path, State};
use axum::http::{StatusCode, Uri};
use axum::response::Response;
use axum::Extension;
use opd_core::wallet_address::{WalletAddress, WalletAddressKey};
use opd_core::{Amount, WalletAddressId};
use opd_service::operator::{self, IncomingFilter, OutgoingFilter};
use opd_service::{wallets, ServiceError, Services};

use crate::admin::dashboard::grants;
use crate::admin::dashboard::{
    done, done_message, failed, not_found, query_pairs, CheckedForm, Nav, Session, CSS,
};
use crate::admin::state::AdminState;
use crate::views::wallet_history::{history, HistoryRow};
use crate::{display, pages};

/// How many of each list the page shows (the Payments page has them all).
const NEWEST: i64 = 10;
/// How many of the newest grants are searched for those naming it.
const GRANTS_SEARCHED: i64 = 200;

/// A payment in one of the page's short lists.
struct PaymentRow {
    href: String,
    id: String,
    state: String,
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
    /// Why the form just sent was refused (shown beside the forms).
    error: Option<String>,
    id: String,
    /// Whether it is deactivated (no more forms that change it).
    deactivated: bool,
    /// Whether its owner has a password (the form says set or reset).
    password_set: bool,
    facts: Vec<(String, String)>,
    keys: Vec<(String, String)>,
    grants: Vec<grants::Row>,
    incoming: Vec<PaymentRow>,
    outgoing: Vec<PaymentRow>,
    rows: Vec<HistoryRow>,
    /// Sent back with the money form, so that sending it twice moves the
    /// money once.
    idempotency: String,
}

/// The wallet address `id`, if the session may see it.
pub(super) async fn wallet_of(
    services: &Services,
    session: &Session,
    id: &str,
) -> Result<WalletAddress, Response> {
    let Some(id) = WalletAddressId::parse(id) else {
        return Err(not_found("wallet address"));
    };
    match wallets::get(services, id).await {
        Ok(w) if session.scope.may_see(&w) => Ok(w),
        Ok(_) => Err(not_found("wallet address")),
        Err(ServiceError::NotFound(_)) => Err(not_found("wallet address")),
        Err(e) => Err(failed(e)),
    }
}

/// Its newest payments, both ways.
async fn payments(
    services: &Services,
    wallet: &WalletAddress,
) -> Result<(Vec<PaymentRow>, Vec<PaymentRow>), ServiceError> {
    let (code, scale) = (wallet.asset.code.as_str(), wallet.asset.scale);
    let filter = IncomingFilter {
        wallet: Some(wallet.id),
        completed: None,
    };
    let incoming = operator::incoming_payments(services, filter, None, NEWEST)
        .await?
        .into_iter()
        .map(|p| PaymentRow {
            href: format!("/dashboard/payments/incoming/{}", p.id),
            id: p.id.to_string(),
            state: if p.completed { "completed" } else { "open" }.to_owned(),
            amount: display::amount(p.received_amount, code, scale),
            created: display::datetime(p.created_at),
        })
        .collect();
    let filter = OutgoingFilter {
        wallet: Some(wallet.id),
        state: None,
    };
    let outgoing = operator::outgoing_payments(services, filter, None, NEWEST)
        .await?
        .into_iter()
        .map(|p| PaymentRow {
            href: format!("/dashboard/payments/outgoing/{}", p.id),
            id: p.id.to_string(),
            state: p.state.as_str().to_owned(),
            amount: display::amount(p.sent, code, scale),
            created: display::datetime(p.created_at),
        })
        .collect();
    Ok((incoming, outgoing))
}

/// Whether a grant's access (the JSON the request carried) names `url`.
fn names_wallet(access: &str, url: &str) -> bool {
    serde_json::from_str::<serde_json::Value>(access)
        .ok()
        .and_then(|v| v.as_array().cloned())
        .unwrap_or_default()
        .iter()
        .any(|item| item["identifier"] == url)
}

/// What the page says of the wallet address itself.
fn facts(wallet: &WalletAddress, url: &str, balance: &Amount) -> Vec<(String, String)> {
    let (code, scale) = (wallet.asset.code.as_str(), wallet.asset.scale);
    let mut facts = vec![
        ("Wallet address".to_owned(), url.to_owned()),
        ("Id".to_owned(), wallet.id.to_string()),
        ("Asset".to_owned(), wallet.asset.to_string()),
        (
            "Balance".to_owned(),
            display::amount(balance.value, code, scale),
        ),
        ("Created".to_owned(), display::datetime(wallet.created_at)),
    ];
    if let Some(name) = &wallet.public_name {
        facts.insert(1, ("Public name".to_owned(), name.clone()));
    }
    if let Some(at) = wallet.deactivated_at {
        facts.push(("Deactivated".to_owned(), display::datetime(at)));
    }
    facts
}

/// A key: its id, and when it was added or revoked.
fn key_row(k: &WalletAddressKey) -> (String, String) {
    let status = match k.revoked_at {
        Some(at) => format!("revoked {}", display::datetime(at)),
        None => format!("added {}", display::datetime(k.created_at)),
    };
    (k.key.kid.clone(), status)
}

pub(crate) async fn page(
    State(state): State<AdminState>,
    Extension(session): Extension<Session>,
    Path(id): Path<String>,
    uri: Uri,
) -> Response {
    let services = &state.app.services;
    let wallet = match wallet_of(services, &session, &id).await {
        Ok(w) => w,
        Err(response) => return response,
    };
    let notice = done_message(&query_pairs(&uri));
    render(services, &session, &wallet, notice, None).await
}

/// The page of `wallet`, with the notice of the last form, or why it was
/// refused (`error`, with status 400).
pub(super) async fn render(
    services: &Services,
    session: &Session,
    wallet: &WalletAddress,
    notice: Option<&'static str>,
    error: Option<String>,
) -> Response {
    let url = match services.site_of(wallet).await {
        Ok(site) => site.wallet_url(wallet),
        Err(e) => return failed(e),
    };
    let loaded = async {
        let balance = opd_service::ledger::balance(services, wallet).await?;
        let transfers = opd_service::ledger::transfers(services, wallet, 200).await?;
        let keys = wallets::keys(services, wallet.id).await?;
        let grants = operator::grants(services, None, None, GRANTS_SEARCHED).await?;
        let (incoming, outgoing) = payments(services, wallet).await?;
        let password = opd_service::grants::has_owner_password(services, wallet.id).await?;
        let owner_page = services.sites.table().await?.owner_page(wallet);
        let loaded = (balance, transfers, keys, grants, incoming, outgoing);
        Ok::<_, ServiceError>((loaded, password, owner_page))
    };
    let ((balance, transfers, keys, grants, incoming, outgoing), password, owner_page) =
        match loaded.await {
            Ok(l) => l,
            Err(e) => return failed(e),
        };
    let rows = history(wallet, &transfers);
    let mut facts = facts(wallet, &url, &balance);
    let password_set = password;
    let password = if password {
        "set".to_owned()
    } else {
        "not set yet: its owner cannot approve grants on the consent page".to_owned()
    };
    facts.push(("Owner password".to_owned(), password));
    if let Some(page) = owner_page {
        facts.push(("Owner's page".to_owned(), page));
    }
    let keys = keys.iter().map(key_row).collect();
    let grants = grants
        .iter()
        .filter(|g| names_wallet(&g.access, &url))
        .map(grants::row)
        .collect();
    let status = if error.is_some() {
        StatusCode::BAD_REQUEST
    } else {
        StatusCode::OK
    };
    pages::render(
        status,
        &WalletPage {
            page_title: "Wallet address",
            css_href: CSS,
            nav: Nav::new("/dashboard", session),
            notice,
            error,
            id: wallet.id.to_string(),
            deactivated: wallet.deactivated_at.is_some(),
            password_set,
            facts,
            keys,
            grants,
            incoming,
            outgoing,
            rows,
            idempotency: crate::csrf::random_value(services),
        },
    )
}

/// `POST /dashboard/wallets/{id}/money` `{amount, direction, idempotency}`:
/// a deposit into or withdrawal from the wallet address, in its asset as a
/// decimal (`25.00`), once per idempotency value.
pub(crate) async fn move_money(
    State(state): State<AdminState>,
    Path(id): Path<String>,
    form: CheckedForm,
) -> Response {
    let services = &state.app.services;
    let wallet = match wallet_of(services, &form.session, &id).await {
        Ok(w) => w,
        Err(response) => return response,
    };
    let back = format!("/dashboard/wallets/{}", wallet.id);
    let Some(amount) = display::parse_decimal(&form.field("amount"), wallet.asset.scale) else {
        return done(&back, "bad_wallet_amount");
    };
    let deposit = form.field("direction") != "withdraw";
    let key = form.field("idempotency");
    match opd_service::ledger::move_money(services, &wallet, amount, deposit, &key).await {
        Ok(_) if deposit => done(&back, "wallet_deposited"),
        Ok(_) => done(&back, "wallet_withdrawn"),
        Err(e @ (ServiceError::Internal(_) | ServiceError::Unavailable(_))) => failed(e),
        Err(_) => done(&back, "wallet_money_refused"),
    }
}
