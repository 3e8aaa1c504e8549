//! Signing in with the admin token, and out.

use askama::Template;
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::Extension;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use super::{digest, failed, refused, token_ok, Session, COOKIE, CSS, SESSION_SECS};
use crate::admin::AdminState;
use crate::{csrf, pages};

#[derive(Template)]
#[template(path = "dashboard/login.html")]
struct LoginPage<'a> {
    page_title: &'a str,
    css_href: &'a str,
    error: Option<String>,
}

fn login_page(status: StatusCode, error: Option<String>) -> Response {
    pages::render(
        status,
        &LoginPage {
            page_title: "Sign in",
            css_href: CSS,
            error,
        },
    )
}

/// `GET /dashboard/login`.
pub(crate) async fn form() -> Response {
    login_page(StatusCode::OK, None)
}

/// `POST /dashboard/login`: the token, slowed after wrong ones per address
/// (the same allowance as the admin API's), then a new session.
pub(crate) async fn submit(State(state): State<AdminState>, request: Request) -> Response {
    let services = &state.app.services;
    let peer = request
        .extensions()
        .get::<ConnectInfo<std::net::SocketAddr>>()
        .map(|c| c.0.ip().to_string())
        .unwrap_or_default();
    let Ok(body) = axum::body::to_bytes(request.into_body(), crate::extract::MAX_BODY_BYTES).await
    else {
        return login_page(
            StatusCode::BAD_REQUEST,
            Some("The form could not be read.".into()),
        );
    };
    let token = url::form_urlencoded::parse(&body)
        .find(|(k, _)| k == "token")
        .map(|(_, v)| v.into_owned())
        .unwrap_or_default();
    let key = format!("admin:{peer}");
    let lockout = &services.password_lockout;
    if let Err(wait) = lockout.check(&key) {
        let secs = wait.as_secs().max(1);
        let message = format!("Too many wrong tokens. Try again in {secs} seconds.");
        return login_page(StatusCode::TOO_MANY_REQUESTS, Some(message));
    }
    let presented: [u8; 32] = Sha256::digest(token.trim().as_bytes()).into();
    if !bool::from(presented.ct_eq(state.token_sha256())) {
        lockout.failed(&key);
        return login_page(
            StatusCode::UNAUTHORIZED,
            Some("That is not the admin token.".into()),
        );
    }
    lockout.succeeded(&key);
    let cookie = csrf::random_value(services);
    let now = services.clock.now();
    let expires = now.plus_seconds(SESSION_SECS);
    if let Err(e) = services
        .store
        .create_dashboard_session(&digest(&cookie), now, expires)
        .await
    {
        return failed(e);
    }
    // Sessions nobody signed out of are swept as others sign in (no digest
    // is empty: only the expired ones go).
    if let Err(e) = services.store.delete_dashboard_session("", now).await {
        tracing::warn!(error = %e, "expired dashboard sessions not swept");
    }
    let set = csrf::set_cookie(
        COOKIE,
        &cookie,
        "/dashboard",
        "Strict",
        false,
        u64::try_from(SESSION_SECS).ok(),
    );
    let mut response = Redirect::to("/dashboard").into_response();
    if let Ok(v) = HeaderValue::from_str(&set) {
        response.headers_mut().insert(header::SET_COOKIE, v);
    }
    response
}

/// `POST /dashboard/logout`: the session is deleted (on every node) and the
/// cookie cleared.
pub(crate) async fn logout(
    State(state): State<AdminState>,
    Extension(session): Extension<Session>,
    body: axum::body::Bytes,
) -> Response {
    let services = &state.app.services;
    if !token_ok(services, &session, &body) {
        return refused();
    }
    let now = services.clock.now();
    if let Err(e) = services
        .store
        .delete_dashboard_session(&digest(&session.cookie), now)
        .await
    {
        return failed(e);
    }
    let clear = csrf::set_cookie(COOKIE, "", "/dashboard", "Strict", false, Some(0));
    let mut response = Redirect::to("/dashboard/login").into_response();
    if let Ok(v) = HeaderValue::from_str(&clear) {
        response.headers_mut().insert(header::SET_COOKIE, v);
    }
    response
}
