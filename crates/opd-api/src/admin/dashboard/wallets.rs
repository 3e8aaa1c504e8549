//! `GET /dashboard`: the wallet addresses with their balances and keys,
//! the server's own identity apart; `POST /dashboard/wallets`: a new wallet
//! address.

use askama::Template;
use axum::extract::State;
use axum::http::Uri;
use axum::response::Response;
use axum::Extension;
use opd_core::ledger::AccountKind;
use opd_core::wallet_address::WalletAddressPath;
use opd_core::Asset;
use opd_service::{operator, wallets};

use super::{done, done_message, failed, form_state, query_pairs, refusal};
use super::{CheckedForm, Nav, Session, CSS};
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

/// The create form's fields, kept when the form is refused.
#[derive(Default)]
struct NewWallet {
    path: String,
    asset_code: String,
    asset_scale: String,
    public_name: String,
}

#[derive(Template)]
#[template(path = "dashboard/wallets.html")]
struct WalletsPage {
    page_title: &'static str,
    css_href: &'static str,
    nav: Nav,
    notice: Option<&'static str>,
    /// The base every wallet address's URL starts with.
    public_base: String,
    /// Why the create form was refused.
    error: Option<String>,
    form: NewWallet,
    rows: Vec<Row>,
    /// The server's own wallet address (`.well-known/pay`), shown apart:
    /// it identifies this server to others and never holds money.
    server: Option<Row>,
}

pub(crate) async fn page(
    State(state): State<AdminState>,
    Extension(session): Extension<Session>,
    uri: Uri,
) -> Response {
    render(&state, &session, done_message(&query_pairs(&uri)), None).await
}

async fn render(
    state: &AdminState,
    session: &Session,
    notice: Option<&'static str>,
    refused: Option<(String, NewWallet)>,
) -> Response {
    let services = &state.app.services;
    let wallets = match wallets::list(services, session.scope.tenant()).await {
        Ok(w) => w,
        Err(e) => return failed(e),
    };
    let sites = match services.sites.table().await {
        Ok(s) => s,
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
            url: sites.wallet_url(w),
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
    let server_path = WalletAddressPath::server().to_string();
    let server = rows
        .iter()
        .position(|r| r.path == server_path)
        .map(|i| rows.remove(i));
    let (status, error, form) = form_state(refused);
    pages::render(
        status,
        &WalletsPage {
            page_title: "Wallet addresses",
            css_href: CSS,
            nav: Nav::new("/dashboard", session),
            notice,
            public_base: format!("{}/", services.config.public_url),
            error,
            form,
            rows,
            server,
        },
    )
}

/// `POST /dashboard/wallets`: creates a wallet address and opens its page;
/// a refused form comes back with the reason and its fields.
pub(crate) async fn create(State(state): State<AdminState>, form: CheckedForm) -> Response {
    let kept = NewWallet {
        path: form.field("path").trim().to_owned(),
        asset_code: form.field("asset_code").trim().to_owned(),
        asset_scale: form.field("asset_scale").trim().to_owned(),
        public_name: form.field("public_name").trim().to_owned(),
    };
    let asset = kept
        .asset_scale
        .parse::<i64>()
        .map_err(|_| "The asset scale is a whole number from 0 to 255.".to_owned())
        .and_then(|scale| {
            Asset::parse(&kept.asset_code, scale).map_err(|e| format!("Asset: {e}."))
        });
    let name = (!kept.public_name.is_empty()).then(|| kept.public_name.clone());
    let operator = form
        .session
        .scope
        .tenant()
        .cloned()
        .unwrap_or_else(opd_core::TenantId::operator);
    let created = match asset {
        Ok(asset) => wallets::create(&state.app.services, &operator, &kept.path, asset, name)
            .await
            .map_err(refusal),
        Err(message) => Err(Ok(message)),
    };
    match created {
        Ok(w) => done(&format!("/dashboard/wallets/{}", w.id), "wallet_created"),
        Err(Ok(message)) => render(&state, &form.session, None, Some((message, kept))).await,
        Err(Err(e)) => failed(e),
    }
}
