//! The signed-in owner's page: balance, history, the grants they gave and
//! their keys, each with what the owner may do about it.

use askama::Template;
use axum::http::StatusCode;
use axum::response::Response;
use opd_core::wallet_address::WalletAddressKey;
use opd_service::operator::GrantSummary;
use opd_service::{grants, ledger, wallets, ServiceError, Services};

use super::{failed, Owned, PURPOSE};
use crate::views::grant_access::{access_items, Access};
use crate::views::wallet_history::{history, HistoryRow};
use crate::{csrf, display, pages};

/// How many of the newest transfers and grants the page shows.
const NEWEST: i64 = 50;

/// A grant the owner gave, as the page lists it.
struct GivenGrant {
    id: String,
    client: String,
    access: Vec<Access>,
    state: String,
    created: String,
    revocable: bool,
}

/// One of the owner's keys.
struct KeyRow {
    kid: String,
    status: String,
    active: bool,
}

#[derive(Template)]
#[template(path = "owner.html")]
struct OwnerPage<'a> {
    page_title: &'a str,
    css_href: &'a str,
    wallet: &'a str,
    public_name: Option<&'a str>,
    provider: Option<&'a str>,
    balance: String,
    rows: Vec<HistoryRow>,
    grants: Vec<GivenGrant>,
    keys: Vec<KeyRow>,
    action: &'a str,
    csrf: String,
    notice: Option<&'static str>,
    error: Option<String>,
}

/// The message a `done=` code stands for.
pub(super) fn notice(query: &str) -> Option<&'static str> {
    let code = url::form_urlencoded::parse(query.as_bytes())
        .find(|(k, _)| k == "done")
        .map(|(_, v)| v.into_owned())?;
    Some(match code.as_str() {
        "revoked" => "The grant is revoked: the application can no longer use it.",
        "already_revoked" => "That grant was revoked already.",
        "key_added" => "The key is added: the application signing with it is recognised at once.",
        "key_revoked" => "The key is revoked: signatures made with it are refused at once.",
        "signed_out" => "You are signed out.",
        _ => return None,
    })
}

fn given(g: &GrantSummary) -> GivenGrant {
    let finished = matches!(g.finalization.as_deref(), Some("revoked" | "rejected"));
    GivenGrant {
        id: g.id.to_string(),
        client: g
            .client_wallet_address
            .clone()
            .unwrap_or_else(|| "an application identified by its key".into()),
        access: access_items(&g.access),
        state: match g.finalization.as_deref() {
            Some("revoked") => "revoked".to_owned(),
            Some("rejected") => "refused".to_owned(),
            _ if g.state == "pending" => "waiting for you".to_owned(),
            _ => "in use".to_owned(),
        },
        created: display::datetime(g.created_at),
        revocable: !finished && g.state != "pending",
    }
}

fn key_row(k: &WalletAddressKey) -> KeyRow {
    KeyRow {
        kid: k.key.kid.clone(),
        status: match k.revoked_at {
            Some(at) => format!("revoked {}", display::datetime(at)),
            None => format!("added {}", display::datetime(k.created_at)),
        },
        active: k.revoked_at.is_none(),
    }
}

/// The page, with the notice of the last form, or why it changed nothing
/// (`error`, answered 400).
pub(super) async fn render(
    services: &Services,
    owned: &Owned,
    cookie: &str,
    notice: Option<&'static str>,
    error: Option<String>,
) -> Response {
    let status = if error.is_some() {
        StatusCode::BAD_REQUEST
    } else {
        StatusCode::OK
    };
    page(services, owned, cookie, (status, notice, error)).await
}

async fn page(
    services: &Services,
    owned: &Owned,
    cookie: &str,
    (status, notice, error): (StatusCode, Option<&'static str>, Option<String>),
) -> Response {
    let w = &owned.wallet;
    let loaded = async {
        let balance = ledger::balance(services, w).await?;
        let transfers = ledger::transfers(services, w, NEWEST).await?;
        let given = grants::grants_given(services, w.id, NEWEST).await?;
        let keys = wallets::keys(services, w.id).await?;
        Ok::<_, ServiceError>((balance, transfers, given, keys))
    };
    let (balance, transfers, given_grants, keys) = match loaded.await {
        Ok(l) => l,
        Err(e) => return failed(services, e),
    };
    let view = OwnerPage {
        page_title: "Your wallet",
        css_href: &pages::auth_css(services),
        wallet: &owned.url,
        public_name: w.public_name.as_deref(),
        provider: owned.provider.as_deref(),
        balance: display::amount(balance.value, w.asset.code.as_str(), w.asset.scale),
        rows: history(w, &transfers),
        grants: given_grants.iter().map(given).collect(),
        keys: keys.iter().map(key_row).collect(),
        action: &owned.here,
        csrf: csrf::token(services, PURPOSE, &w.id.to_string(), cookie),
        notice,
        error,
    };
    pages::render(status, &view)
}
