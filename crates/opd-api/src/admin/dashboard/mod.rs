//! The operator dashboard: server-rendered pages under `/dashboard` on the
//! admin listener.
//!
//! - `GET|POST /dashboard/login`, `POST /dashboard/logout`: the admin token
//!   (compared in constant time, wrong ones slowed like the admin API's)
//!   opens a session: a random value in a cookie (`HttpOnly`,
//!   `SameSite=Strict`, `Path=/dashboard`), stored in the database only as
//!   its SHA-256 digest with an expiry, so every node of a deployment
//!   accepts it and a copy of the database logs nobody in;
//! - every other page needs the session (or sends the browser to the
//!   login page), and every form that changes something carries a token
//!   bound to the session (see [`crate::csrf`]);
//! - pages: wallet addresses (`wallets`), payments with cancelling one not
//!   sent yet (`payments`), grants (`grants`), peers with their liquidity
//!   (deposit, withdraw), the webhook outbox, the ledger check and the
//!   settings (`operations`).
//!
//! The token and the cookie are never logged.

mod accounts;
mod grants;
mod login;
mod operations;
mod payments;
mod peers;
mod pricing;
mod search;
mod wallets;

use axum::extract::{MatchedPath, Request, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::Router;
use opd_service::operator;
use sha2::{Digest, Sha256};

use crate::admin::scope::AdminScope;
use crate::admin::state::AdminState;
use crate::{csrf, pages};

/// The session cookie (its name ends with the port, see [`cookie_name`]).
const COOKIE: &str = "opd_dashboard";
/// What the form tokens of the dashboard are for.
const PURPOSE: &str = "dashboard";
/// Where the admin listener serves the stylesheet.
pub(crate) const CSS: &str = "/dashboard/assets/opd.css";
/// How long a session lasts.
const SESSION_SECS: i64 = 8 * 3600;

/// The signed-in operator's session, as the pages need it.
#[derive(Clone, Debug)]
pub(crate) struct Session {
    /// The cookie value (never shown, never logged).
    cookie: String,
    /// The form token of this session.
    pub(crate) csrf: String,
    /// Whose token opened it: the operator's (every tenant) or a tenant's
    /// (its wallet addresses and payments only, see [`TENANT_PAGES`]).
    pub(crate) scope: AdminScope,
}

/// The pages a tenant's session may open; any other is not found.
const TENANT_PAGES: &[&str] = &[
    "/dashboard",
    "/dashboard/wallets",
    "/dashboard/wallets/{id}",
    "/dashboard/wallets/{id}/money",
    "/dashboard/wallets/{id}/password",
    "/dashboard/wallets/{id}/keys",
    "/dashboard/wallets/{id}/keys/revoke",
    "/dashboard/wallets/{id}/deactivate",
    "/dashboard/payments",
    "/dashboard/payments/{kind}/{id}",
    "/dashboard/payments/outgoing/{id}/cancel",
    "/dashboard/logout",
];

/// The dashboard routes; the caller mounts them beside the admin API,
/// outside its bearer-token check.
pub(crate) fn routes(state: AdminState) -> Router {
    let signed_in = Router::new()
        .route("/dashboard", get(wallets::page))
        .route("/dashboard/wallets", post(wallets::create))
        .route("/dashboard/wallets/{id}", get(wallets::wallet::page))
        .route(
            "/dashboard/wallets/{id}/money",
            post(wallets::wallet::move_money),
        )
        .route(
            "/dashboard/wallets/{id}/password",
            post(wallets::wallet_actions::set_password),
        )
        .route(
            "/dashboard/wallets/{id}/keys",
            post(wallets::wallet_actions::add_key),
        )
        .route(
            "/dashboard/wallets/{id}/keys/revoke",
            post(wallets::wallet_actions::revoke_key),
        )
        .route(
            "/dashboard/wallets/{id}/deactivate",
            post(wallets::wallet_actions::deactivate),
        )
        .route("/dashboard/payments", get(payments::list))
        .route("/dashboard/payments/{kind}/{id}", get(payments::detail))
        .route(
            "/dashboard/payments/outgoing/{id}/cancel",
            post(payments::cancel),
        )
        .route("/dashboard/grants", get(grants::list))
        .route("/dashboard/grants/{id}/revoke", post(grants::revoke))
        .route("/dashboard/peers", get(peers::page).post(peers::create))
        .route(
            "/dashboard/peers/{id}/liquidity",
            post(peers::move_liquidity),
        )
        .route(
            "/dashboard/peers/{id}",
            get(peers::peer::page).post(peers::peer::update),
        )
        .route("/dashboard/peers/{id}/delete", post(peers::peer::delete))
        .route("/dashboard/pricing", get(pricing::page))
        .route("/dashboard/fees", post(pricing::set_fee))
        .route("/dashboard/rates", post(pricing::set_rate))
        .route("/dashboard/search", get(search::page))
        .route("/dashboard/webhooks", get(operations::webhooks))
        .route("/dashboard/webhooks/{id}/retry", post(operations::retry))
        .route("/dashboard/ledger", get(operations::ledger))
        .route("/dashboard/settings", get(operations::settings))
        .route("/dashboard/logout", post(login::logout))
        .route_layer(middleware::from_fn_with_state(
            state.clone(),
            require_session,
        ));
    let open = Router::new()
        .route("/dashboard/login", get(login::form).post(login::submit))
        .route(CSS, get(pages::stylesheet));
    signed_in
        .merge(open)
        .with_state(state)
        .layer(axum::extract::DefaultBodyLimit::max(
            crate::extract::MAX_BODY_BYTES,
        ))
}

/// The name of the dashboard cookie `base` for the port the browser
/// reached (the `Host` header's): browsers share a host's cookies across
/// its ports, so dashboards of two servers on one host would otherwise
/// sign each other out. Nodes behind one address see one port, and share
/// their sessions as before.
pub(crate) fn cookie_name(base: &str, headers: &HeaderMap) -> String {
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or_default();
    // `host:port`, `[::1]:port`; no port is the scheme's default.
    let port = host
        .rsplit_once(':')
        .filter(|(name, _)| !name.is_empty() && (!name.contains(':') || name.ends_with(']')))
        .and_then(|(_, port)| port.parse::<u16>().ok());
    match port {
        Some(port) => format!("{base}_{port}"),
        None => base.to_owned(),
    }
}

fn digest(cookie: &str) -> String {
    opd_core::hex::lower(&Sha256::digest(cookie.as_bytes()))
}

/// The session of the request, when its cookie names a live one.
async fn current(state: &AdminState, headers: &HeaderMap) -> Option<Session> {
    let services = &state.app.services;
    let cookie = csrf::cookie(headers, &cookie_name(COOKIE, headers))?;
    let tenant = operator::session(services, &digest(&cookie))
        .await
        .inspect_err(|e| tracing::error!(error = %e, "dashboard session lookup failed"))
        .ok()??;
    Some(Session {
        csrf: csrf::token(services, PURPOSE, "", &cookie),
        cookie,
        scope: tenant.map_or(AdminScope::Operator, AdminScope::Tenant),
    })
}

/// Pages need a session: without one, the browser goes to the login page.
async fn require_session(
    State(state): State<AdminState>,
    mut request: Request,
    next: Next,
) -> Response {
    match current(&state, request.headers()).await {
        Some(session) => {
            let page = request.extensions().get::<MatchedPath>();
            let allowed = page.is_some_and(|p| TENANT_PAGES.contains(&p.as_str()));
            if session.scope != AdminScope::Operator && !allowed {
                return not_found("page");
            }
            crate::admin::proof::prove(request.extensions());
            request.extensions_mut().insert(session);
            next.run(request).await
        }
        None => Redirect::to(&login_then(&request)).into_response(),
    }
}

/// The sign-in page, returning afterwards to the page a browser asked for
/// (a page it reads; a form sent without a session is not sent again).
fn login_then(request: &Request) -> String {
    let asked = request
        .uri()
        .path_and_query()
        .map(|p| p.as_str())
        .unwrap_or("/dashboard");
    match login::safe_next(asked) {
        Some(next) if request.method() == axum::http::Method::GET && next != "/dashboard" => {
            let next: String = url::form_urlencoded::byte_serialize(next.as_bytes()).collect();
            format!("/dashboard/login?next={next}")
        }
        _ => "/dashboard/login".to_owned(),
    }
}

/// A form that changes something, admitted only with the session's token
/// (field `csrf`): the session and the form's fields. Any other form is
/// answered with [`refused`] before its handler runs, so no handler can
/// forget the check.
pub(crate) struct CheckedForm {
    pub(crate) session: Session,
    /// The form's fields (urlencoded, or multipart with a file).
    fields: crate::extract::FormFields,
}

impl CheckedForm {
    /// The value of field `name` (empty when absent).
    pub(crate) fn field(&self, name: &str) -> String {
        self.fields.field(name)
    }

    /// The first of the fields `names` that is not blank.
    pub(crate) fn first_given(&self, names: &[&str]) -> String {
        self.fields.first_given(names)
    }
}

impl axum::extract::FromRequest<AdminState> for CheckedForm {
    type Rejection = Response;

    async fn from_request(request: Request, state: &AdminState) -> Result<Self, Response> {
        let Some(session) = request.extensions().get::<Session>().cloned() else {
            return Err(refused());
        };
        let fields = crate::extract::FormFields::from_request(request, state)
            .await
            .map_err(IntoResponse::into_response)?;
        let form = Self { session, fields };
        let token = form.field("csrf");
        if csrf::verify(
            &state.app.services,
            PURPOSE,
            "",
            Some(&form.session.cookie),
            &token,
        ) {
            Ok(form)
        } else {
            Err(refused())
        }
    }
}

/// The answer to a form without its token: nothing was changed.
pub(crate) fn refused() -> Response {
    pages::render(
        StatusCode::FORBIDDEN,
        &pages::Message {
            page_title: "This form has expired",
            css_href: CSS,
            paragraphs: vec![
                "The form was not sent from this dashboard, or the page is too old. \
                 Nothing was changed."
                    .into(),
                "Go back, reload the page and try again.".into(),
            ],
        },
    )
}

/// A page saying something went wrong (the cause is logged).
pub(crate) fn failed(e: impl std::fmt::Display) -> Response {
    tracing::error!(error = %e, "dashboard page failed");
    pages::render(
        StatusCode::INTERNAL_SERVER_ERROR,
        &pages::Message {
            page_title: "Something went wrong",
            css_href: CSS,
            paragraphs: vec!["The server could not answer. The cause is in its log.".into()],
        },
    )
}

/// What to tell the operator when a form is refused: their mistake, as the
/// page shows it beside the form (`Ok`), or the server's own failure
/// (`Err`, for [`failed`]).
pub(crate) fn refusal(e: opd_service::ServiceError) -> Result<String, opd_service::ServiceError> {
    use opd_service::ServiceError;
    match e {
        ServiceError::Internal(_) | ServiceError::Unavailable(_) => Err(e),
        other => Ok(other.to_string()),
    }
}

/// A page with a create form: its status, the reason shown and the fields
/// kept when the form was `refused`, else a fresh form.
pub(crate) fn form_state<T: Default>(
    refused: Option<(String, T)>,
) -> (StatusCode, Option<String>, T) {
    match refused {
        Some((e, form)) => (StatusCode::BAD_REQUEST, Some(e), form),
        None => (StatusCode::OK, None, T::default()),
    }
}

/// A page saying what was not found.
pub(crate) fn not_found(what: &str) -> Response {
    pages::render(
        StatusCode::NOT_FOUND,
        &pages::Message {
            page_title: "Not found",
            css_href: CSS,
            paragraphs: vec![format!("No such {what}.")],
        },
    )
}

/// Back to `to` after a form, with a message code the page shows.
pub(crate) fn done(to: &str, code: &str) -> Response {
    let sep = if to.contains('?') { '&' } else { '?' };
    (
        StatusCode::SEE_OTHER,
        [(header::LOCATION, format!("{to}{sep}done={code}"))],
    )
        .into_response()
}

/// What the navigation shows, and which entry is current.
pub(crate) struct Nav {
    pub current: &'static str,
    pub csrf: String,
    /// A tenant's session sees its own pages only.
    tenant: bool,
}

impl Nav {
    pub(crate) fn new(current: &'static str, session: &Session) -> Self {
        Self {
            current,
            csrf: session.csrf.clone(),
            tenant: session.scope != AdminScope::Operator,
        }
    }

    /// Whether the search box shows (it finds every tenant's things).
    pub fn search(&self) -> bool {
        !self.tenant
    }

    /// The entries, the current one marked.
    pub fn entries(&self) -> Vec<NavEntry> {
        [
            ("/dashboard", "Wallet addresses"),
            ("/dashboard/payments", "Payments"),
            ("/dashboard/grants", "Grants"),
            ("/dashboard/peers", "Peers"),
            ("/dashboard/pricing", "Fees and rates"),
            ("/dashboard/webhooks", "Webhooks"),
            ("/dashboard/ledger", "Ledger"),
            ("/dashboard/settings", "Settings"),
        ]
        .into_iter()
        .filter(|(path, _)| !self.tenant || TENANT_PAGES.contains(path))
        .map(|(path, label)| NavEntry {
            path,
            label,
            current: path == self.current,
        })
        .collect()
    }
}

/// One entry of the navigation.
pub(crate) struct NavEntry {
    pub path: &'static str,
    pub label: &'static str,
    pub current: bool,
}

/// A query parameter, when present and not empty.
pub(crate) fn param<'a>(query: &'a [(String, String)], name: &str) -> Option<&'a str> {
    query
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
        .filter(|v| !v.is_empty())
}

/// The query string's pairs.
pub(crate) fn query_pairs(uri: &axum::http::Uri) -> Vec<(String, String)> {
    url::form_urlencoded::parse(uri.query().unwrap_or_default().as_bytes())
        .into_owned()
        .collect()
}

/// The message a `done=` code stands for.
pub(crate) fn done_message(query: &[(String, String)]) -> Option<&'static str> {
    Some(match param(query, "done")? {
        "revoked" => "The grant is revoked: its tokens no longer work.",
        "already_revoked" => "The grant was already revoked.",
        "retry" => "The event is due now: it is sent again within seconds.",
        "not_retried" => "The event was delivered already, or is unknown.",
        "no_webhook_url" => "No webhook URL is configured: the event cannot be sent.",
        "deposited" => "The liquidity was deposited.",
        "peer_created" => "The peer is created.",
        "peer_updated" => "The peer is saved: packets use its new settings at once.",
        "peer_deleted" => "The peer is deleted.",
        "wallet_created" => "The wallet address is created.",
        "fee_set" => "The fee is set: new quotes use it.",
        "fee_removed" => "The fee is removed.",
        "rate_set" => "The rate is set: new quotes use it.",
        "rate_removed" => "The rate is removed.",
        "wallet_deposited" => "The money was deposited.",
        "password_set" => "The owner password is set: its owner approves grants with it.",
        "key_added" => "The key is added: clients signing with it are recognised at once.",
        "key_revoked" => "The key is revoked: signatures made with it are refused at once.",
        "deactivated" => "The wallet address is deactivated: it answers as if it did not exist.",
        "wallet_withdrawn" => "The money was withdrawn.",
        "bad_wallet_amount" => {
            "That amount is not a positive number in the wallet address's asset."
        }
        "wallet_money_refused" => "Nothing moved: the amount is zero, or more than the balance.",
        "withdrawn" => "The liquidity was withdrawn.",
        "bad_amount" => "That amount is not a positive number in the peer's asset.",
        "liquidity_refused" => {
            "Nothing moved: the amount is zero, or more than the peer's liquidity."
        }
        "cancelled" => {
            "The payment is cancelled: what it had not sent is back in the wallet address."
        }
        "not_cancellable" => {
            "The payment could not be cancelled: it was sent, failed or cancelled already."
        }
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use axum::http::{header, HeaderMap, HeaderValue};

    use super::cookie_name;

    fn named(host: Option<&'static str>) -> String {
        let mut headers = HeaderMap::new();
        if let Some(h) = host {
            headers.insert(header::HOST, HeaderValue::from_static(h));
        }
        cookie_name("opd_dashboard", &headers)
    }

    #[test]
    fn cookies_are_named_for_the_port_the_browser_reached() {
        assert_eq!(named(Some("127.0.0.1:8082")), "opd_dashboard_8082");
        assert_eq!(named(Some("ops.example:9443")), "opd_dashboard_9443");
        assert_eq!(named(Some("[::1]:8082")), "opd_dashboard_8082");
        // The scheme's default port, an address without one, or none.
        assert_eq!(named(Some("ops.example")), "opd_dashboard");
        assert_eq!(named(Some("[::1]")), "opd_dashboard");
        assert_eq!(named(Some("::1")), "opd_dashboard");
        assert_eq!(named(None), "opd_dashboard");
    }
}
