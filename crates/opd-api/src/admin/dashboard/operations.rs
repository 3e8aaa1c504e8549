//! The operator's other pages: peers and their liquidity, the webhook
//! outbox (with "retry now"), the ledger check and the settings (secrets
//! masked).

use std::time::Duration;

use askama::Template;
use axum::extract::{Path, State};
use axum::http::{StatusCode, Uri};
use axum::response::Response;
use axum::Extension;
use opd_service::{interledger::peers, operator};
use secrecy::ExposeSecret;

use super::{done, done_message, failed, param, query_pairs, CheckedForm, Nav, Session, CSS};
use crate::admin::state::AdminState;
use crate::{display, pages};

struct PeerRow {
    id: String,
    name: String,
    address: String,
    asset: String,
    liquidity: String,
    low: String,
    endpoint: String,
    routes: String,
    /// Who created it: `operator` or `auto-peering`.
    created_by: &'static str,
}

#[derive(Template)]
#[template(path = "dashboard/peers.html")]
struct PeersPage {
    page_title: &'static str,
    css_href: &'static str,
    nav: Nav,
    notice: Option<&'static str>,
    rows: Vec<PeerRow>,
    /// Sent back with a liquidity form, so that sending it twice moves the
    /// money once.
    idempotency: String,
}

pub(crate) async fn peers(
    State(state): State<AdminState>,
    Extension(session): Extension<Session>,
    uri: Uri,
) -> Response {
    let services = &state.app.services;
    let list = match peers::list(services).await {
        Ok(l) => l,
        Err(e) => return failed(e),
    };
    let mut rows = Vec::with_capacity(list.len());
    for p in &list {
        let liquidity = match peers::liquidity(services, p).await {
            Ok(v) => v,
            Err(e) => return failed(e),
        };
        let money = |v: u64| display::amount(v, p.asset.code.as_str(), p.asset.scale);
        rows.push(PeerRow {
            id: p.id.to_string(),
            name: p.name.clone(),
            address: p.static_ilp_address.clone(),
            asset: format!("{} (scale {})", p.asset.code, p.asset.scale),
            liquidity: money(liquidity),
            low: p.liquidity_low.map(money).unwrap_or_default(),
            // The endpoint only: its token is a secret.
            endpoint: p
                .outgoing
                .as_ref()
                .map(|o| o.endpoint.clone())
                .unwrap_or_else(|| "none (receives only)".into()),
            routes: p.routes.join(", "),
            created_by: p.created_by.as_str(),
        });
    }
    pages::render(
        StatusCode::OK,
        &PeersPage {
            page_title: "Peers",
            css_href: CSS,
            nav: Nav::new("/dashboard/peers", &session),
            notice: done_message(&query_pairs(&uri)),
            rows,
            idempotency: crate::csrf::random_value(services),
        },
    )
}

/// `POST /dashboard/peers/{id}/liquidity` `{amount, direction, idempotency}`:
/// a deposit or withdrawal of the peer's liquidity, in the peer's asset as
/// a decimal (`250.00`), once per idempotency value.
pub(crate) async fn move_liquidity(
    State(state): State<AdminState>,
    Path(id): Path<String>,
    CheckedForm { body, .. }: CheckedForm,
) -> Response {
    let services = &state.app.services;
    let field = |name: &str| {
        url::form_urlencoded::parse(&body)
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.into_owned())
            .unwrap_or_default()
    };
    let Some(id) = opd_core::PeerId::parse(&id) else {
        return super::not_found("peer");
    };
    let peer = match peers::get(services, id).await {
        Ok(p) => p,
        Err(opd_service::ServiceError::NotFound(_)) => return super::not_found("peer"),
        Err(e) => return failed(e),
    };
    let Some(amount) = display::parse_decimal(&field("amount"), peer.asset.scale) else {
        return done("/dashboard/peers", "bad_amount");
    };
    let deposit = field("direction") != "withdraw";
    let key = field("idempotency");
    match peers::move_liquidity(services, &peer, amount, deposit, &key).await {
        Ok(_) if deposit => done("/dashboard/peers", "deposited"),
        Ok(_) => done("/dashboard/peers", "withdrawn"),
        Err(
            e
            @ (opd_service::ServiceError::Internal(_) | opd_service::ServiceError::Unavailable(_)),
        ) => failed(e),
        Err(_) => done("/dashboard/peers", "liquidity_refused"),
    }
}

struct EventRow {
    id: String,
    kind: String,
    state: &'static str,
    attempts: i64,
    next: String,
    error: String,
    created: String,
}

#[derive(Template)]
#[template(path = "dashboard/webhooks.html")]
struct WebhooksPage {
    page_title: &'static str,
    css_href: &'static str,
    nav: Nav,
    notice: Option<&'static str>,
    all: bool,
    configured: bool,
    rows: Vec<EventRow>,
}

pub(crate) async fn webhooks(
    State(state): State<AdminState>,
    Extension(session): Extension<Session>,
    uri: Uri,
) -> Response {
    let services = &state.app.services;
    let query = query_pairs(&uri);
    let all = param(&query, "show") == Some("all");
    let entries = match operator::webhook_events(services, !all, 100).await {
        Ok(e) => e,
        Err(e) => return failed(e),
    };
    let rows = entries
        .into_iter()
        .map(|e| {
            let state = match (e.event.delivered_at, e.event.attempts) {
                (Some(_), _) => "delivered",
                (None, 0) => "pending",
                (None, _) => "failing",
            };
            EventRow {
                id: e.event.id,
                kind: e.event.kind.as_str().to_owned(),
                state,
                attempts: e.event.attempts,
                next: match e.event.delivered_at {
                    Some(at) => format!("delivered {}", display::datetime(at)),
                    None => display::datetime(e.event.next_attempt_at),
                },
                error: e.last_error.unwrap_or_default(),
                created: display::datetime(e.event.created_at),
            }
        })
        .collect();
    pages::render(
        StatusCode::OK,
        &WebhooksPage {
            page_title: "Webhooks",
            css_href: CSS,
            nav: Nav::new("/dashboard/webhooks", &session),
            notice: done_message(&query),
            all,
            configured: services.config.webhook_url.is_some(),
            rows,
        },
    )
}

pub(crate) async fn retry(
    State(state): State<AdminState>,
    Path(id): Path<String>,
    _form: CheckedForm,
) -> Response {
    let services = &state.app.services;
    match operator::retry_webhook_event(services, &id).await {
        Ok(true) => done("/dashboard/webhooks", "retry"),
        Ok(false) => done("/dashboard/webhooks", "not_retried"),
        Err(e) => failed(e),
    }
}

#[derive(Template)]
#[template(path = "dashboard/ledger.html")]
struct LedgerPage {
    page_title: &'static str,
    css_href: &'static str,
    nav: Nav,
    notice: Option<&'static str>,
    /// `None` until the check ran; then the problems it found.
    problems: Option<Vec<String>>,
    accounts: usize,
}

/// `GET /dashboard/ledger`, and `?run=1` to run the check (it only reads).
pub(crate) async fn ledger(
    State(state): State<AdminState>,
    Extension(session): Extension<Session>,
    uri: Uri,
) -> Response {
    let services = &state.app.services;
    let query = query_pairs(&uri);
    let problems = if param(&query, "run").is_some() {
        match operator::check_ledger(services).await {
            Ok(report) => Some(report.problems),
            Err(e) => return failed(e),
        }
    } else {
        None
    };
    let accounts = match operator::ledger_accounts(services).await {
        Ok(a) => a.len(),
        Err(e) => return failed(e),
    };
    pages::render(
        StatusCode::OK,
        &LedgerPage {
            page_title: "Ledger",
            css_href: CSS,
            nav: Nav::new("/dashboard/ledger", &session),
            notice: None,
            problems,
            accounts,
        },
    )
}

#[derive(Template)]
#[template(path = "dashboard/settings.html")]
struct SettingsPage {
    page_title: &'static str,
    css_href: &'static str,
    nav: Nav,
    notice: Option<&'static str>,
    settings: Vec<(&'static str, String)>,
}

/// A secret as the page shows it: whether it is set, never its value.
fn masked(secret: Option<&str>) -> String {
    match secret {
        Some(s) if !s.is_empty() => "set (hidden)".into(),
        _ => "not set".into(),
    }
}

fn or_none(v: Option<&str>) -> String {
    v.map_or_else(|| "not set".to_owned(), str::to_owned)
}

fn secs(d: Duration) -> String {
    display::seconds(d.as_secs())
}

pub(crate) async fn settings(
    State(state): State<AdminState>,
    Extension(session): Extension<Session>,
) -> Response {
    let c = &state.app.services.config;
    let mut fees: Vec<String> = c
        .fees
        .iter()
        .map(|(a, f)| {
            format!(
                "{}: {} + {} bp",
                a.code,
                display::amount(f.fixed, a.code.as_str(), a.scale),
                f.basis_points
            )
        })
        .collect();
    fees.sort();
    let settings = vec![
        ("Public URL", c.public_url.to_string()),
        ("Authorization server URL", c.auth_server_url.clone()),
        ("ILP address", c.ilp_address.to_string()),
        ("Admin token", "set (hidden)".to_owned()),
        ("Secrets key", "set (hidden)".to_owned()),
        (
            "Identity-provider secret",
            masked(c.idp_secret.as_ref().map(ExposeSecret::expose_secret)),
        ),
        ("Consent page", or_none(c.idp_consent_url.as_deref())),
        ("Webhook URL", or_none(c.webhook_url.as_deref())),
        (
            "Webhook secret",
            masked(c.webhook_secret.as_ref().map(ExposeSecret::expose_secret)),
        ),
        ("Introspection URL", or_none(c.introspection_url.as_deref())),
        (
            "Introspection token",
            masked(
                c.introspection_token
                    .as_ref()
                    .map(ExposeSecret::expose_secret),
            ),
        ),
        ("Rates URL", or_none(c.rates_url.as_deref())),
        ("Fees from the configuration", fees.join("; ")),
        ("Slippage", format!("{} bp", c.slippage_basis_points)),
        ("Quote lifespan", secs(c.quote_lifespan)),
        (
            "Incoming payment expiry (default)",
            secs(c.incoming_payment_default_expiry),
        ),
        (
            "Incoming payment expiry (max)",
            secs(c.incoming_payment_max_expiry),
        ),
        ("Access token lifetime", secs(c.access_token_ttl)),
        ("Interaction lifetime", secs(c.interaction_ttl)),
        (
            "Grant requests per minute",
            c.grant_requests_per_minute.to_string(),
        ),
        (
            "Creates per minute",
            c.create_requests_per_minute.to_string(),
        ),
        (
            "Pending interactions per client",
            c.max_pending_interactions.to_string(),
        ),
        (
            "Retention",
            if c.retention.is_zero() {
                "forever".into()
            } else {
                secs(c.retention)
            },
        ),
        ("Outbound allow list", c.outbound_allow.join(", ")),
        ("External funding", c.external_funding.to_string()),
    ];
    pages::render(
        StatusCode::OK,
        &SettingsPage {
            page_title: "Settings",
            css_href: CSS,
            nav: Nav::new("/dashboard/settings", &session),
            notice: None,
            settings: settings
                .into_iter()
                .map(|(k, v)| (k, if v.is_empty() { "none".into() } else { v }))
                .collect(),
        },
    )
}
