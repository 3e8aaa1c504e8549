//! The forms of the owner's page: signing in (the password, slowed like
//! the consent page's), and, signed in, signing out, revoking a grant they
//! gave, adding or revoking a key. Each answers with a redirect back to the
//! page and a notice, or the page again with why nothing was changed.

use axum::http::{header, HeaderMap, HeaderValue};
use axum::response::{IntoResponse, Redirect, Response};
use opd_core::GrantId;
use opd_service::platform::network::ClientNetwork;
use opd_service::{grants, wallets, ServiceError, Services};

use super::{cookie_header, done, failed, sign_in_page, view, Owned, SESSION_COOKIE};
use super::{LOGIN_COOKIE, LOGIN_PURPOSE};
use crate::auth_server::password;
use crate::csrf;
use crate::extract::FormFields;

/// The sign-in form: its token, then the password (each attempt counted
/// before it is checked), then a new session in a new cookie.
pub(super) async fn sign_in(
    services: &Services,
    headers: &HeaderMap,
    owned: &Owned,
    network: &ClientNetwork,
    form: &FormFields,
) -> Response {
    let binding = owned.wallet.id.to_string();
    let cookie = csrf::cookie(headers, LOGIN_COOKIE);
    let token = form.field("csrf");
    if !csrf::verify(services, LOGIN_PURPOSE, &binding, cookie.as_deref(), &token) {
        return super::expired(services);
    }
    let by_wallet = format!("owner-page:{}@{network}", owned.wallet.id);
    let keys = [by_wallet.as_str()];
    let lockout = &services.limits.password_lockout;
    if let Err(wait) = lockout.attempt(&keys) {
        return refused(
            services,
            headers,
            owned,
            password::too_many(wait.as_secs().max(1)),
        );
    }
    let typed = form.field("password");
    let check = grants::check_owner_password(services, owned.wallet.id, &typed);
    match check
        .await
        .map(|c| password::judged(c, services.clock.now()))
    {
        Ok(Ok(())) => {
            lockout.succeeded(&keys);
            open_session(services, owned).await
        }
        Ok(Err(refusal)) => refused(services, headers, owned, refusal),
        Err(e) => failed(services, e),
    }
}

/// The sign-in form again, with why.
fn refused(
    services: &Services,
    headers: &HeaderMap,
    owned: &Owned,
    refusal: password::Refusal,
) -> Response {
    let message = Some(refusal.message.as_str());
    let mut response = sign_in_page(services, headers, owned, refusal.status, message);
    let retry = refusal
        .retry_after
        .map(|s| HeaderValue::from_str(&s.to_string()));
    if let Some(Ok(v)) = retry {
        response.headers_mut().insert(header::RETRY_AFTER, v);
    }
    response
}

/// A new session in a new cookie (never the one the sign-in form was
/// bound to, which another page could have set).
async fn open_session(services: &Services, owned: &Owned) -> Response {
    let cookie = csrf::random_value(services);
    if let Err(e) = grants::open_owner_session(services, owned.wallet.id, &cookie).await {
        return failed(services, e);
    }
    let age = u64::try_from(grants::OWNER_SESSION_SECS).ok();
    let mut response = Redirect::to(&owned.here).into_response();
    if let Some(v) = cookie_header(services, owned, SESSION_COOKIE, &cookie, age) {
        response.headers_mut().append(header::SET_COOKIE, v);
    }
    response
}

/// A form of the signed-in page (its token already checked).
pub(super) async fn signed_in_action(
    services: &Services,
    owned: &Owned,
    cookie: &str,
    form: &FormFields,
) -> Response {
    let wallet = owned.wallet.id;
    let outcome = match form.field("action").as_str() {
        "sign-out" => return sign_out(services, owned, cookie).await,
        "revoke-grant" => match GrantId::parse(&form.field("grant")) {
            Some(id) => grants::revoke_given(services, wallet, id)
                .await
                .map(|fresh| if fresh { "revoked" } else { "already_revoked" }),
            None => Err(ServiceError::NotFound("grant")),
        },
        "add-key" => match wallets::pasted_key(&form.first_given(&["jwk", "jwk_file"])) {
            Ok(key) => wallets::add_key(services, wallet, key)
                .await
                .map(|_| "key_added"),
            Err(reason) => Err(ServiceError::InvalidRequest(format!(
                "That key was not added: {reason}."
            ))),
        },
        "revoke-key" => wallets::revoke_key(services, wallet, &form.field("kid"))
            .await
            .map(|()| "key_revoked"),
        _ => Err(ServiceError::InvalidRequest("Unknown form.".into())),
    };
    match outcome {
        Ok(code) => done(owned, code),
        Err(e @ (ServiceError::Internal(_) | ServiceError::Unavailable(_))) => failed(services, e),
        // The page again with why (a 400).
        Err(e) => view::render(services, owned, cookie, None, Some(e.to_string())).await,
    }
}

/// Ends the session, here and on every node, and clears the cookie.
async fn sign_out(services: &Services, owned: &Owned, cookie: &str) -> Response {
    if let Err(e) = grants::close_owner_session(services, cookie).await {
        return failed(services, e);
    }
    let mut response = done(owned, "signed_out");
    if let Some(v) = cookie_header(services, owned, SESSION_COOKIE, "", Some(0)) {
        response.headers_mut().append(header::SET_COOKIE, v);
    }
    response
}
