//! Signing in with the admin token, and out.
//!
//! The sign-in form has its own token, bound to a cookie of the browser
//! (`opd_login`), so another site cannot sign a browser in with a token of
//! its choosing.

use askama::Template;
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use opd_service::operator;

use super::{cookie_name, digest, failed, refused, CheckedForm, COOKIE, CSS, SESSION_SECS};
use crate::admin::state::AdminState;
use crate::admin::Proof;
use crate::{csrf, pages};

#[derive(Template)]
#[template(path = "dashboard/login.html")]
struct LoginPage<'a> {
    page_title: &'a str,
    css_href: &'a str,
    error: Option<String>,
    csrf: String,
    /// The dashboard page to return to once signed in.
    next: Option<String>,
}

/// Where to go once signed in, when `raw` names a page of the dashboard
/// (a path of this listener only: never another site, `//host` or a
/// backslash trick, and not the sign-in or sign-out page).
pub(crate) fn safe_next(raw: &str) -> Option<String> {
    let path = raw.split(['?', '#']).next().unwrap_or_default();
    let ours = path == "/dashboard" || path.starts_with("/dashboard/");
    let plain = !raw.contains("//")
        && !raw.contains('\\')
        && raw.chars().all(|c| c.is_ascii_graphic())
        && !path.contains("/..")
        && !matches!(path, "/dashboard/login" | "/dashboard/logout");
    (ours && plain).then(|| raw.to_owned())
}

/// The `next` parameter of a query or form body, when safe.
fn next_of(pairs: &[u8]) -> Option<String> {
    url::form_urlencoded::parse(pairs)
        .find(|(k, _)| k == "next")
        .and_then(|(_, v)| safe_next(&v))
}

/// The cookie the sign-in form's token is bound to.
const LOGIN_COOKIE: &str = "opd_login";
const LOGIN_PURPOSE: &str = "dashboard-login";

/// The sign-in page for the browser's cookie (`None`: a new one is set).
fn login_page(
    state: &AdminState,
    (name, cookie): (&str, Option<String>),
    status: StatusCode,
    error: Option<String>,
    next: Option<String>,
) -> Response {
    let services = &state.app.services;
    let (cookie, fresh) = match cookie {
        Some(c) => (c, false),
        None => (csrf::random_value(services), true),
    };
    let mut response = pages::render(
        status,
        &LoginPage {
            page_title: "Sign in",
            css_href: CSS,
            error,
            csrf: csrf::token(services, LOGIN_PURPOSE, "", &cookie),
            next,
        },
    );
    if fresh {
        let set = csrf::set_cookie(name, &cookie, "/dashboard/login", "Strict", false, None);
        if let Ok(v) = HeaderValue::from_str(&set) {
            response.headers_mut().append(header::SET_COOKIE, v);
        }
    }
    response
}

/// `GET /dashboard/login[?next=<page>]`.
pub(crate) async fn form(
    State(state): State<AdminState>,
    headers: HeaderMap,
    uri: axum::http::Uri,
) -> Response {
    let name = cookie_name(LOGIN_COOKIE, &headers);
    let cookie = csrf::cookie(&headers, &name);
    let next = next_of(uri.query().unwrap_or_default().as_bytes());
    login_page(&state, (&name, cookie), StatusCode::OK, None, next)
}

/// `POST /dashboard/login`: the token (a wrong one answered after the same
/// fixed delay as the admin API's), then a new session.
pub(crate) async fn submit(State(state): State<AdminState>, request: Request) -> Response {
    let services = &state.app.services;
    let name = cookie_name(LOGIN_COOKIE, request.headers());
    let session_name = cookie_name(COOKIE, request.headers());
    let cookie = csrf::cookie(request.headers(), &name);
    // Taken now: reading the body below consumes the request.
    let proof = request.extensions().get::<Proof>().cloned();
    let Ok(body) = axum::body::to_bytes(request.into_body(), crate::extract::MAX_BODY_BYTES).await
    else {
        let error = Some("The form could not be read.".into());
        return login_page(
            &state,
            (&name, cookie),
            StatusCode::BAD_REQUEST,
            error,
            None,
        );
    };
    let field = |name: &str| {
        url::form_urlencoded::parse(&body)
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.into_owned())
            .unwrap_or_default()
    };
    let form_token = field("csrf");
    if !csrf::verify(services, LOGIN_PURPOSE, "", cookie.as_deref(), &form_token) {
        return refused();
    }
    let token = field("token");
    let tenant = match state.tenant_of(token.trim()).await {
        Ok(t) => t,
        Err(e) => return failed(e.description),
    };
    // Slowed, not locked out: see `AdminState::token_matches`.
    if tenant.is_none() && !state.token_matches(token.trim()).await {
        let error = Some("That is not the admin token.".into());
        let next = next_of(&body);
        return login_page(
            &state,
            (&name, cookie),
            StatusCode::UNAUTHORIZED,
            error,
            next,
        );
    }
    if let Some(proof) = proof {
        proof.prove();
    }
    let cookie = csrf::random_value(services);
    // Sessions nobody signed out of are swept as others sign in.
    let digest = digest(&cookie);
    let opened = operator::open_session(services, &digest, SESSION_SECS, tenant.as_ref());
    if let Err(e) = opened.await {
        return failed(e);
    }
    let set = csrf::set_cookie(
        &session_name,
        &cookie,
        "/dashboard",
        "Strict",
        false,
        u64::try_from(SESSION_SECS).ok(),
    );
    let to = next_of(&body).unwrap_or_else(|| "/dashboard".to_owned());
    let mut response = Redirect::to(&to).into_response();
    if let Ok(v) = HeaderValue::from_str(&set) {
        response.headers_mut().insert(header::SET_COOKIE, v);
    }
    response
}

/// `POST /dashboard/logout`: the session is deleted (on every node) and the
/// cookie cleared.
pub(crate) async fn logout(
    State(state): State<AdminState>,
    headers: HeaderMap,
    CheckedForm { session, .. }: CheckedForm,
) -> Response {
    let services = &state.app.services;
    if let Err(e) = operator::close_session(services, &digest(&session.cookie)).await {
        return failed(e);
    }
    let clear = csrf::set_cookie(
        &cookie_name(COOKIE, &headers),
        "",
        "/dashboard",
        "Strict",
        false,
        Some(0),
    );
    let mut response = Redirect::to("/dashboard/login").into_response();
    if let Ok(v) = HeaderValue::from_str(&clear) {
        response.headers_mut().insert(header::SET_COOKIE, v);
    }
    response
}

#[cfg(test)]
mod tests {
    use super::safe_next;

    #[test]
    fn only_a_page_of_the_dashboard_is_returned_to() {
        for ok in [
            "/dashboard",
            "/dashboard/payments?kind=incoming&state=open",
            "/dashboard/wallets/01a2",
        ] {
            assert_eq!(safe_next(ok).as_deref(), Some(ok));
        }
        for bad in [
            "https://evil.example/dashboard",
            "//evil.example/dashboard",
            "/dashboard//evil.example",
            "/\\evil.example",
            "/dashboard/../admin",
            "/dashboardx",
            "/dashboard/login",
            "/dashboard/logout",
            "/dashboard/a b",
            "",
        ] {
            assert_eq!(safe_next(bad), None, "{bad}");
        }
    }
}
