//! `GET /dashboard`: the wallet addresses with their balances and keys,
//! the server's own identity apart; `POST /dashboard/wallets`: a new wallet
//! address.

pub(super) mod wallet;
pub(super) mod wallet_actions;

use askama::Template;
use axum::extract::State;
use axum::http::Uri;
use axum::response::Response;
use axum::Extension;
use opd_core::ledger::AccountKind;
use opd_core::wallet_address::WalletAddressPath;
use opd_core::{Asset, TenantId};
use opd_service::{operator, wallets};

use crate::admin::dashboard::{done, done_message, failed, form_state, query_pairs, refusal};
use crate::admin::dashboard::{CheckedForm, Nav, Session, CSS};
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
    /// The operator's tenant switcher (empty without other tenants, and
    /// for a tenant's session): (id, label, chosen).
    tenants: Vec<(String, String, bool)>,
    /// The tenant new wallet addresses go to (its id).
    tenant: String,
}

pub(crate) async fn page(
    State(state): State<AdminState>,
    Extension(session): Extension<Session>,
    uri: Uri,
) -> Response {
    let query = query_pairs(&uri);
    let chosen =
        crate::admin::dashboard::param(&query, "tenant").and_then(|t| TenantId::parse(t).ok());
    render(&state, &session, done_message(&query), None, chosen).await
}

/// The tenant a page shows: a tenant's session its own; the operator's
/// the one it chose (`None`: every tenant).
fn shown_tenant(session: &Session, chosen: Option<TenantId>) -> Option<TenantId> {
    session.scope.tenant().cloned().or(chosen)
}

/// The operator's tenant switcher: every tenant, `chosen` marked (none
/// for a tenant's session, or with no tenant but the operator's).
async fn switcher(
    services: &opd_service::Services,
    session: &Session,
    chosen: Option<&TenantId>,
) -> Result<Vec<(String, String, bool)>, opd_service::ServiceError> {
    if session.scope.tenant().is_some() {
        return Ok(Vec::new());
    }
    let all = opd_service::tenants::list(services).await?;
    if all.len() < 2 {
        return Ok(Vec::new());
    }
    let mut choices = vec![(String::new(), "Every tenant".to_owned(), chosen.is_none())];
    choices.extend(all.into_iter().map(|t| {
        let label = format!("{} ({})", t.public_name, t.id);
        (t.id.to_string(), label, Some(&t.id) == chosen)
    }));
    Ok(choices)
}

/// The tenant's wallet addresses (every tenant's for `None`) as rows, with
/// their balances (one read of the ledger for the whole table) and keys.
async fn rows_of(
    services: &opd_service::Services,
    sites: &opd_service::tenants::SiteTable,
    tenant: Option<&TenantId>,
) -> Result<Vec<Row>, opd_service::ServiceError> {
    let wallets = wallets::list(services, tenant).await?;
    let accounts = operator::ledger_accounts(services).await?;
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
        let keys = wallets::keys(services, w.id).await?;
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
    Ok(rows)
}

async fn render(
    state: &AdminState,
    session: &Session,
    notice: Option<&'static str>,
    refused: Option<(String, NewWallet)>,
    chosen: Option<TenantId>,
) -> Response {
    let services = &state.app.services;
    let shown = shown_tenant(session, chosen);
    let tenants = match switcher(services, session, shown.as_ref()).await {
        Ok(t) => t,
        Err(e) => return failed(e),
    };
    let sites = match services.sites.table().await {
        Ok(s) => s,
        Err(e) => return failed(e),
    };
    let mut rows = match rows_of(services, &sites, shown.as_ref()).await {
        Ok(r) => r,
        Err(e) => return failed(e),
    };
    let server_path = WalletAddressPath::server().to_string();
    let server = rows
        .iter()
        .position(|r| r.path == server_path)
        .map(|i| rows.remove(i));
    let (status, error, form) = form_state(refused);
    let target = shown.unwrap_or_else(TenantId::operator);
    pages::render(
        status,
        &WalletsPage {
            page_title: "Wallet addresses",
            css_href: CSS,
            nav: Nav::new("/dashboard", session),
            notice,
            public_base: format!("{}/", sites.of(&target).public_url),
            error,
            form,
            rows,
            server,
            tenants,
            tenant: target.to_string(),
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
    // A tenant's session makes its own; the operator's, the chosen one's.
    let chosen = TenantId::parse(&form.field("tenant")).ok();
    let tenant = shown_tenant(&form.session, chosen.clone()).unwrap_or_else(TenantId::operator);
    let created = match asset {
        Ok(asset) => wallets::create(&state.app.services, &tenant, &kept.path, asset, name)
            .await
            .map_err(refusal),
        Err(message) => Err(Ok(message)),
    };
    match created {
        Ok(w) => done(&format!("/dashboard/wallets/{}", w.id), "wallet_created"),
        Err(Ok(message)) => {
            render(&state, &form.session, None, Some((message, kept)), chosen).await
        }
        Err(Err(e)) => failed(e),
    }
}
