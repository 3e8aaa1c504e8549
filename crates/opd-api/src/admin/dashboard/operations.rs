//! The operator's other pages: the webhook outbox (with "retry now" and
//! each event's payload), the ledger (its accounts by name, the check) and
//! the settings (secrets masked).

use std::time::Duration;

use askama::Template;
use axum::extract::{Path, State};
use axum::http::{StatusCode, Uri};
use axum::response::Response;
use axum::Extension;
use opd_service::{operator, ServiceConfig};
use secrecy::ExposeSecret;

use opd_core::ledger::AccountKind;

use super::accounts::{AccountName, Names};
use super::{done, done_message, failed, param, query_pairs, CheckedForm, Nav, Session, CSS};
use crate::admin::state::AdminState;
use crate::{display, pages};

struct EventRow {
    id: String,
    kind: String,
    /// The JSON body delivered (or to deliver), indented.
    payload: String,
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
                payload: serde_json::from_str::<serde_json::Value>(&e.event.data)
                    .and_then(|v| serde_json::to_string_pretty(&v))
                    .unwrap_or(e.event.data),
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
    // Due now would mean nothing: without a URL nothing is sent.
    if services.config.webhook_url.is_none() {
        return done("/dashboard/webhooks", "no_webhook_url");
    }
    match operator::retry_webhook_event(services, &id).await {
        Ok(true) => done("/dashboard/webhooks", "retry"),
        Ok(false) => done("/dashboard/webhooks", "not_retried"),
        Err(e) => failed(e),
    }
}

/// A ledger account as the Ledger page lists it.
struct AccountRow {
    name: AccountName,
    balance: String,
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
    accounts: Vec<AccountRow>,
}

/// A balance in its asset; a negative one (only the outside world's) with
/// its sign.
fn signed_amount(balance: i128, asset: &opd_core::Asset) -> String {
    let shown = |v: u128| {
        u64::try_from(v).map_or_else(
            |_| format!("{v} (minor units)"),
            |v| display::amount(v, asset.code.as_str(), asset.scale),
        )
    };
    if balance < 0 {
        format!("−{}", shown(balance.unsigned_abs()))
    } else {
        shown(balance.unsigned_abs())
    }
}

/// `GET /dashboard/ledger`: every account by name with its balance, and
/// `?run=1` to run the check (it only reads).
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
    let (mut accounts, names) = match (
        operator::ledger_accounts(services).await,
        Names::load(services).await,
    ) {
        (Ok(a), Ok(n)) => (a, n),
        (Err(e), _) | (_, Err(e)) => return failed(e),
    };
    // The operator's own accounts first, then wallets, peers and payments.
    let rank = |k: AccountKind| match k {
        AccountKind::Settlement => 0,
        AccountKind::Fees => 1,
        AccountKind::Wallet => 2,
        AccountKind::Peer => 3,
        AccountKind::Outgoing => 4,
        AccountKind::Incoming => 5,
        AccountKind::Spsp => 6,
        AccountKind::Hold => 7,
    };
    accounts.sort_by(|a, b| (rank(a.kind), &a.id).cmp(&(rank(b.kind), &b.id)));
    let accounts = accounts
        .iter()
        .map(|a| AccountRow {
            name: names.name(&a.id),
            balance: signed_amount(a.balance, &a.asset),
        })
        .collect();
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

/// A setting: its label and its value as the page shows it.
type Setting = (&'static str, String);

pub(crate) async fn settings(
    State(state): State<AdminState>,
    Extension(session): Extension<Session>,
) -> Response {
    let c = &state.app.services.config;
    let mut settings = vec![
        ("Version", format!("opd {}", env!("CARGO_PKG_VERSION"))),
        (
            "Database",
            operator::database(&state.app.services).to_owned(),
        ),
    ];
    settings.extend(
        state
            .node
            .listeners
            .iter()
            .map(|(what, addr)| (*what, format!("listens on {addr}"))),
    );
    settings.extend(addresses_and_secrets(c));
    settings.extend(money_and_lifetimes(c));
    settings.extend(limits_and_retention(c));
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

/// Where this server is and whom it talks to, secrets masked.
fn addresses_and_secrets(c: &ServiceConfig) -> Vec<Setting> {
    let secret = |s: Option<&secrecy::SecretString>| masked(s.map(ExposeSecret::expose_secret));
    vec![
        ("Public URL", c.public_url.to_string()),
        ("Authorization server URL", c.auth_server_url.clone()),
        ("ILP address", c.ilp_address.to_string()),
        ("Admin token", "set (hidden)".to_owned()),
        ("Secrets key", "set (hidden)".to_owned()),
        ("Identity-provider secret", secret(c.idp_secret.as_ref())),
        ("Consent page", or_none(c.idp_consent_url.as_deref())),
        ("Webhook URL", or_none(c.webhook_url.as_deref())),
        ("Webhook secret", secret(c.webhook_secret.as_ref())),
        ("Introspection URL", or_none(c.introspection_url.as_deref())),
        (
            "Introspection token",
            secret(c.introspection_token.as_ref()),
        ),
        ("Rates URL", or_none(c.rates_url.as_deref())),
    ]
}

/// Fees, slippage and how long quotes, payments, tokens and interactions
/// last.
fn money_and_lifetimes(c: &ServiceConfig) -> Vec<Setting> {
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
    vec![
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
    ]
}

/// Request limits, retention, the outbound allow list and the funding
/// mode.
fn limits_and_retention(c: &ServiceConfig) -> Vec<Setting> {
    let retention = if c.retention.is_zero() {
        "forever".into()
    } else {
        secs(c.retention)
    };
    vec![
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
        ("Retention", retention),
        ("Outbound allow list", c.outbound_allow.join(", ")),
        ("External funding", c.external_funding.to_string()),
    ]
}
