//! A wallet owner's own page, `/wallet/<path>` on the authorization
//! listener (under its grant endpoint's path): signed in with the owner
//! password, the owner sees their balance and history, the grants they
//! gave (and revokes one), and their keys (adds one, such as the key the
//! Web Monetization extension asks its user to register, or revokes one),
//! without the operator.
//!
//! - `GET /wallet/<path>`: the page when signed in, else the sign-in form;
//! - `POST /wallet/<path>` with `action` = `sign-in`, `sign-out`,
//!   `revoke-grant`, `add-key` or `revoke-key`.
//!
//! Sign-in is slowed like the consent page's (per wallet address and
//! client network on each node, and per wallet address in the database,
//! shared with the consent page). A session is a new random cookie
//! (`HttpOnly`, `SameSite=Strict`, limited to the page's path) stored as
//! its digest for [`OWNER_SESSION_SECS`](opd_service::grants::OWNER_SESSION_SECS);
//! a new owner password ends every session. Every form carries a token
//! bound to the cookie and the wallet address ([`crate::csrf`]).
//!
//! The page belongs to the authorization server that approves the wallet
//! address's grants: `<path>` is read below the public URL of the site
//! this listener serves for the request's `Host` (a tenant with an
//! authorization server of its own, or the server's).

mod actions;
mod view;

use askama::Template;
use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use opd_core::wallet_address::WalletAddress;
use opd_service::Services;

use super::site::{prefix_of, AuthTenant};
use crate::client_network::ClientNet;
use crate::extract::FormFields;
use crate::{csrf, pages, AppState};

/// The session cookie, and the cookie the sign-in form's token is bound to.
const SESSION_COOKIE: &str = "opd_owner";
const LOGIN_COOKIE: &str = "opd_owner_login";
const PURPOSE: &str = "owner";
const LOGIN_PURPOSE: &str = "owner-login";

/// The page's wallet address, and where its page is.
pub(crate) struct Owned {
    wallet: WalletAddress,
    /// Its URL, as its documents name it.
    url: String,
    /// The tenant's public name, for a tenant other than the operator's.
    provider: Option<String>,
    /// This page's path (`{prefix}/wallet/<path>`), where its forms post
    /// and its cookies live.
    here: String,
}

/// The wallet address `<path>` names at this authorization server, if it
/// exists, is active, and its grants are approved here.
async fn owned(
    services: &Services,
    tenant: &opd_core::TenantId,
    headers: &HeaderMap,
    path: &str,
) -> Result<Owned, Response> {
    let missing = || {
        pages::message(
            services,
            StatusCode::NOT_FOUND,
            "No such wallet address",
            &["Check the address of your wallet's page with your wallet provider."],
        )
    };
    let table = services
        .sites
        .table()
        .await
        .map_err(|e| failed(services, e))?;
    let host = headers.get(header::HOST).and_then(|h| h.to_str().ok());
    let site = table.for_auth_host(host);
    let base = site.public_url.as_str().trim_end_matches('/');
    let Some((wallet_tenant, wallet_path)) = table.wallet_path(&format!("{base}/{path}")) else {
        return Err(missing());
    };
    let found = opd_service::operator::wallet_address_at(services, &wallet_tenant, &wallet_path)
        .await
        .map_err(|e| failed(services, e))?;
    let Some(wallet) = found.filter(|w| w.is_active(services.clock.now())) else {
        return Err(missing());
    };
    let own = services
        .site_of(&wallet)
        .await
        .map_err(|e| failed(services, e))?;
    if own.auth_tenant != *tenant {
        return Err(missing());
    }
    Ok(Owned {
        url: own.wallet_url(&wallet),
        provider: (!own.tenant.is_operator()).then(|| own.public_name.clone()),
        here: format!("{}/wallet/{path}", prefix_of(services, tenant)),
        wallet,
    })
}

/// The browser's session cookie, when it is a live session of this
/// wallet address's owner.
async fn signed_in(services: &Services, headers: &HeaderMap, owned: &Owned) -> Option<String> {
    let cookie = csrf::cookie(headers, SESSION_COOKIE)?;
    let whose = opd_service::grants::owner_session(services, &cookie).await;
    match whose {
        Ok(Some(wallet)) if wallet == owned.wallet.id => Some(cookie),
        Ok(_) => None,
        Err(e) => {
            tracing::error!(error = %e, "owner session lookup failed");
            None
        }
    }
}

fn secure(services: &Services) -> bool {
    services.config.auth_server_url.starts_with("https://")
}

/// A `Set-Cookie` for this page: `Strict`, limited to its path.
fn cookie_header(
    services: &Services,
    owned: &Owned,
    name: &str,
    value: &str,
    age: Option<u64>,
) -> Option<HeaderValue> {
    let set = csrf::set_cookie(name, value, &owned.here, "Strict", secure(services), age);
    HeaderValue::from_str(&set).ok()
}

#[derive(Template)]
#[template(path = "owner_sign_in.html")]
struct SignInPage<'a> {
    page_title: &'a str,
    css_href: &'a str,
    wallet: &'a str,
    provider: Option<&'a str>,
    action: &'a str,
    csrf: String,
    error: Option<&'a str>,
}

/// The sign-in form (with why the last attempt was refused).
fn sign_in_page(
    services: &Services,
    headers: &HeaderMap,
    owned: &Owned,
    status: StatusCode,
    error: Option<&str>,
) -> Response {
    let (cookie, fresh) = match csrf::cookie(headers, LOGIN_COOKIE) {
        Some(c) => (c, false),
        None => (csrf::random_value(services), true),
    };
    let binding = owned.wallet.id.to_string();
    let page = SignInPage {
        page_title: "Your wallet",
        css_href: &pages::auth_css(services),
        wallet: &owned.url,
        provider: owned.provider.as_deref(),
        action: &owned.here,
        csrf: csrf::token(services, LOGIN_PURPOSE, &binding, &cookie),
        error,
    };
    let mut response = pages::render(status, &page);
    if fresh {
        if let Some(v) = cookie_header(services, owned, LOGIN_COOKIE, &cookie, None) {
            response.headers_mut().append(header::SET_COOKIE, v);
        }
    }
    response
}

/// `GET /wallet/<path>`.
pub(crate) async fn page(
    State(state): State<AppState>,
    AuthTenant(tenant): AuthTenant,
    headers: HeaderMap,
    Path(path): Path<String>,
    uri: axum::http::Uri,
) -> Response {
    let services = &state.services;
    let owned = match owned(services, &tenant, &headers, &path).await {
        Ok(o) => o,
        Err(response) => return response,
    };
    match signed_in(services, &headers, &owned).await {
        Some(cookie) => {
            let notice = view::notice(uri.query().unwrap_or_default());
            view::render(services, &owned, &cookie, notice, None).await
        }
        None => sign_in_page(services, &headers, &owned, StatusCode::OK, None),
    }
}

/// `POST /wallet/<path>`: signing in, or a form of the signed-in page.
pub(crate) async fn act(
    State(state): State<AppState>,
    AuthTenant(tenant): AuthTenant,
    ClientNet(network): ClientNet,
    headers: HeaderMap,
    Path(path): Path<String>,
    form: FormFields,
) -> Response {
    let services = &state.services;
    let owned = match owned(services, &tenant, &headers, &path).await {
        Ok(o) => o,
        Err(response) => return response,
    };
    if form.field("action") == "sign-in" {
        return actions::sign_in(services, &headers, &owned, &network, &form).await;
    }
    let Some(cookie) = signed_in(services, &headers, &owned).await else {
        let ended = "Your session has ended: sign in again. Nothing was changed.";
        return sign_in_page(
            services,
            &headers,
            &owned,
            StatusCode::UNAUTHORIZED,
            Some(ended),
        );
    };
    let binding = owned.wallet.id.to_string();
    if !csrf::verify(
        services,
        PURPOSE,
        &binding,
        Some(&cookie),
        &form.field("csrf"),
    ) {
        return expired(services);
    }
    actions::signed_in_action(services, &owned, &cookie, &form).await
}

/// The page when the server fails (the cause is logged).
fn failed(services: &Services, e: impl std::fmt::Display) -> Response {
    tracing::error!(error = %e, "owner page failed");
    pages::message(
        services,
        StatusCode::INTERNAL_SERVER_ERROR,
        "Something went wrong",
        &["Please try again later."],
    )
}

/// A form without its token: nothing was changed.
fn expired(services: &Services) -> Response {
    pages::message(
        services,
        StatusCode::FORBIDDEN,
        "This form has expired",
        &[
            "It was not sent from your wallet's page, or the page is too old. Nothing was changed.",
            "Open your wallet's page again and try there.",
        ],
    )
}

/// Back to the page, with the notice `code` stands for.
fn done(owned: &Owned, code: &str) -> Response {
    Redirect::to(&format!("{}?done={code}", owned.here)).into_response()
}
