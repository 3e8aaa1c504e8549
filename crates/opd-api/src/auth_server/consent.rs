//! The built-in consent page, `/consent/{id}/{nonce}` on the authorization
//! listener: who asks, for what in plain words (amounts with their asset,
//! intervals in words), and a form with the owner's password to approve
//! or reject.
//!
//! The form carries a token bound to the interaction and to a cookie of the
//! browser (see [`crate::csrf`]): a POST without it decides nothing. Wrong
//! passwords are slowed per wallet address and client address on each node
//! (`services.limits.password_lockout`), and bounded per wallet address in
//! the database (`grants::check_owner_password`).

use askama::Template;
use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use opd_gnap::{AccessType, Action, ClientIdent};
use opd_service::grants::{self, Interaction};
use opd_service::Services;

use super::site::{prefix_of, AuthTenant};
use crate::client_network::ClientNet;
use crate::extract::{PathParams2, RawBody};
use crate::pages;
use crate::{csrf, display, AppState};

use super::consent_words::{asks_of, sending_notes, Ask};

/// The browser's cookie the form token is bound to.
const COOKIE: &str = "opd_consent";
const PURPOSE: &str = "consent";

/// Who asks, as the page shows it.
struct ClientView {
    /// The `publicName` the client gives itself, or its host.
    name: String,
    /// Its wallet address URL.
    url: Option<String>,
    /// The host it is really served from, when the name does not say so.
    unverified_host: Option<String>,
}

#[derive(Template)]
#[template(path = "consent.html")]
struct ConsentPage<'a> {
    page_title: &'a str,
    css_href: &'a str,
    client: ClientView,
    wallet: String,
    /// The tenant's public name, for a wallet address of a tenant other
    /// than the operator's.
    provider: Option<String>,
    expires: Option<String>,
    asks: Vec<Ask>,
    error: Option<&'a str>,
    action: String,
    csrf: String,
}

/// The client as the page shows it: its `publicName` with its wallet
/// address URL, and the host it is served from when the name does not
/// appear in it (a name is the client's own claim). Never a user-info part
/// of the URL (`https://my-bank.example@attacker/` is at `attacker`).
async fn client_view(services: &Services, i: &Interaction) -> ClientView {
    let url = match &i.grant.client {
        ClientIdent::WalletAddress(w) => w,
        ClientIdent::Jwk(j) => {
            return ClientView {
                name: format!("An application with key {}", j.kid),
                url: None,
                unverified_host: None,
            };
        }
    };
    let host = url::Url::parse(url)
        .ok()
        .and_then(|u| u.host_str().map(str::to_owned))
        .unwrap_or_else(|| "an unknown host".into());
    let Some(name) = grants::client_public_name(services, url).await else {
        return ClientView {
            name: host,
            url: Some(url.clone()),
            unverified_host: None,
        };
    };
    let letters = |s: &str| -> String {
        s.chars()
            .filter(char::is_ascii_alphanumeric)
            .map(|c| c.to_ascii_lowercase())
            .collect()
    };
    let matches = !letters(&name).is_empty() && letters(&host).contains(&letters(&name));
    ClientView {
        name,
        url: Some(url.clone()),
        unverified_host: (!matches).then_some(host),
    }
}

/// The page for the interaction, with `error` above the form.
async fn page(
    services: &Services,
    i: &Interaction,
    (id, nonce): (&str, &str),
    cookie: &str,
    status: StatusCode,
    error: Option<&str>,
) -> Response {
    let client = client_view(services, i).await;
    let mut asks: Vec<Ask> = i.grant.access.iter().flat_map(asks_of).collect();
    for item in &i.grant.access {
        if item.kind == AccessType::OutgoingPayment && item.actions.contains(&Action::Create) {
            if let Some(limits) = &item.limits {
                let notes = sending_notes(services, &i.wallet, limits).await;
                if let Some(ask) = asks.iter_mut().find(|a| a.what.starts_with("Send")) {
                    ask.details.extend(notes);
                }
            }
        }
    }
    let css_href = pages::auth_css(services);
    let prefix = prefix_of(services, &i.grant.record.tenant);
    let site = services.site_of(&i.wallet).await.ok();
    let view = ConsentPage {
        page_title: "Grant access?",
        css_href: &css_href,
        client,
        wallet: site.as_ref().map_or_else(
            || i.wallet.path.to_string(),
            |site| site.wallet_url(&i.wallet),
        ),
        provider: site
            .filter(|s| !s.tenant.is_operator())
            .map(|s| s.public_name.clone()),
        expires: i.grant.record.interaction_expires_at.map(display::date),
        asks,
        error,
        action: format!("{prefix}/consent/{id}/{nonce}"),
        csrf: csrf::token(services, PURPOSE, id, cookie),
    };
    pages::render(status, &view)
}

pub(crate) fn error_page(services: &Services, e: &opd_gnap::GnapError) -> Response {
    let status = StatusCode::from_u16(e.status).unwrap_or(StatusCode::BAD_REQUEST);
    pages::message(
        services,
        status,
        "This request cannot be completed",
        &[&e.description],
    )
}

/// The interaction if it exists and is open, or the page saying why not.
async fn open(
    services: &Services,
    tenant: &opd_core::TenantId,
    id: &str,
    nonce: &str,
) -> Result<Interaction, Response> {
    let i = grants::open_interaction(services, tenant, id, nonce)
        .await
        .map_err(|e| error_page(services, &e))?;
    grants::interaction_is_open(services, &i).map_err(|e| error_page(services, &e))?;
    Ok(i)
}

fn secure(services: &Services) -> bool {
    services.config.auth_server_url.starts_with("https://")
}

/// `GET /consent/{id}/{nonce}`.
pub(crate) async fn consent_page(
    State(state): State<AppState>,
    AuthTenant(tenant): AuthTenant,
    headers: HeaderMap,
    PathParams2(id, nonce): PathParams2,
) -> Response {
    let services = &state.services;
    let interaction = match open(services, &tenant, &id, &nonce).await {
        Ok(i) => i,
        Err(page) => return page,
    };
    let (cookie, fresh) = match csrf::cookie(&headers, COOKIE) {
        Some(c) => (c, false),
        None => (csrf::random_value(services), true),
    };
    let mut response = page(
        services,
        &interaction,
        (&id, &nonce),
        &cookie,
        StatusCode::OK,
        None,
    )
    .await;
    if fresh {
        // Lax, not Strict: the user arrives here by a redirect from the
        // client's site, and the cookie must survive to the form's POST.
        let path = format!("{}/consent", prefix_of(services, &tenant));
        let value = csrf::set_cookie(COOKIE, &cookie, &path, "Lax", secure(services), None);
        if let Ok(v) = HeaderValue::from_str(&value) {
            response.headers_mut().append(header::SET_COOKIE, v);
        }
    }
    response
}

/// After the decision: to the client's finish URI, or a page saying the
/// client will pick the result up (when it polls).
pub(crate) fn after_decision(services: &Services, i: &Interaction) -> Response {
    match grants::finish_redirect(services, i) {
        Some(url) => Redirect::to(&url).into_response(),
        None => pages::message(
            services,
            StatusCode::ACCEPTED,
            "Done",
            &["You can return to the application."],
        ),
    }
}

struct Form {
    password: String,
    decision: String,
    csrf: String,
}

fn parse_form(body: &[u8]) -> Form {
    let mut form = Form {
        password: String::new(),
        decision: String::new(),
        csrf: String::new(),
    };
    for (k, v) in url::form_urlencoded::parse(body) {
        match k.as_ref() {
            "password" => form.password = v.into_owned(),
            "decision" => form.decision = v.into_owned(),
            "csrf" => form.csrf = v.into_owned(),
            _ => {}
        }
    }
    form
}

/// `POST /consent/{id}/{nonce}`: the form token, then the password (slowed
/// after wrong ones), then the decision.
pub(crate) async fn consent_decision(
    State(state): State<AppState>,
    AuthTenant(tenant): AuthTenant,
    ClientNet(network): ClientNet,
    headers: HeaderMap,
    PathParams2(id, nonce): PathParams2,
    RawBody(body): RawBody,
) -> Response {
    let services = &state.services;
    let interaction = match open(services, &tenant, &id, &nonce).await {
        Ok(i) => i,
        Err(page) => return page,
    };
    let form = parse_form(&body);
    let cookie = csrf::cookie(&headers, COOKIE);
    let Some(cookie) = cookie.filter(|c| csrf::verify(services, PURPOSE, &id, Some(c), &form.csrf))
    else {
        return pages::message(
            services,
            StatusCode::FORBIDDEN,
            "This form has expired",
            &[
                "The answer was not sent from this consent page, or the page is too old. \
                 Nothing was decided.",
                "Open the consent page again from the application and decide there.",
            ],
        );
    };
    let here = (id.as_str(), nonce.as_str());
    let shown = Shown {
        services,
        interaction: &interaction,
        here,
        cookie: &cookie,
    };
    if let Err(refused) = password_step(&shown, &network, &form.password).await {
        return refused;
    }
    let approve = match form.decision.as_str() {
        "approve" => true,
        "reject" => false,
        _ => {
            let status = StatusCode::BAD_REQUEST;
            let error = Some("Choose Approve or Reject.");
            return page(services, &interaction, here, &cookie, status, error).await;
        }
    };
    match grants::decide_interaction(services, &interaction, approve).await {
        Ok(decided) => after_decision(services, &decided),
        Err(e) => error_page(services, &e),
    }
}

/// What a refusal of the password step shows: the consent page again.
struct Shown<'a> {
    services: &'a Services,
    interaction: &'a Interaction,
    here: (&'a str, &'a str),
    cookie: &'a str,
}

impl Shown<'_> {
    async fn refused(&self, refusal: super::password::Refusal) -> Response {
        let (services, i) = (self.services, self.interaction);
        let error = Some(refusal.message.as_str());
        let mut response = page(services, i, self.here, self.cookie, refusal.status, error).await;
        let retry = refusal
            .retry_after
            .map(|s| HeaderValue::from_str(&s.to_string()));
        if let Some(Ok(v)) = retry {
            response.headers_mut().insert(header::RETRY_AFTER, v);
        }
        response
    }
}

/// The password, slowed twice over: per wallet address and client
/// network, and per interaction, in this node's memory (three attempts,
/// then each further one waits twice as long; not per wallet address
/// alone, so that one stranger guessing cannot lock the owner out of
/// approving another client's grant); and per wallet address in the
/// database, whatever the source and node (`grants::check_owner_password`).
/// Each attempt is counted before the password is checked.
async fn password_step(
    shown: &Shown<'_>,
    network: &opd_service::platform::network::ClientNetwork,
    password: &str,
) -> Result<(), Response> {
    let (services, interaction) = (shown.services, shown.interaction);
    let by_wallet = format!("wallet:{}@{network}", interaction.wallet.id);
    let by_interaction = format!("interaction:{}", shown.here.0);
    let keys = [by_wallet.as_str(), by_interaction.as_str()];
    let lockout = &services.limits.password_lockout;
    if let Err(wait) = lockout.attempt(&keys) {
        let refusal = super::password::too_many(wait.as_secs().max(1));
        return Err(shown.refused(refusal).await);
    }
    let check = grants::check_owner_password(services, interaction.wallet.id, password).await;
    match check.map(|c| super::password::judged(c, services.clock.now())) {
        Ok(Ok(())) => {
            lockout.succeeded(&keys);
            Ok(())
        }
        Ok(Err(refusal)) => Err(shown.refused(refusal).await),
        Err(e) => {
            tracing::error!(error = %e, "password check failed");
            Err(pages::message(
                services,
                StatusCode::INTERNAL_SERVER_ERROR,
                "Something went wrong",
                &["Please try again later."],
            ))
        }
    }
}
