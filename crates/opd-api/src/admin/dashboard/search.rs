//! `GET /dashboard/search?q=`: one box for what an operator has in hand
//! from a support request: a payment's id or URL, a wallet address (its
//! URL, its path, or a payment pointer `$host/path`), or a peer's name or
//! ILP address. One match opens its page; several are listed; none says
//! so.

use askama::Template;
use axum::extract::State;
use axum::http::{StatusCode, Uri};
use axum::response::{IntoResponse, Redirect, Response};
use axum::Extension;
use opd_core::wallet_address::WalletAddressPath;
use opd_core::{IncomingPaymentId, OutgoingPaymentId, WalletAddressId};
use opd_service::interledger::peers;
use opd_service::{operator, wallets, ServiceError, Services};

use super::{failed, param, query_pairs, Nav, Session, CSS};
use crate::admin::state::AdminState;
use crate::pages;

/// One thing found.
struct Found {
    what: &'static str,
    label: String,
    href: String,
}

#[derive(Template)]
#[template(path = "dashboard/search.html")]
struct SearchPage {
    page_title: &'static str,
    css_href: &'static str,
    nav: Nav,
    notice: Option<&'static str>,
    query: String,
    found: Vec<Found>,
}

/// `q` as a URL when it is written as one: a payment pointer becomes its
/// `https://` URL.
fn as_url(q: &str) -> Option<String> {
    if let Some(rest) = q.strip_prefix('$') {
        return Some(if rest.contains('/') {
            format!("https://{rest}")
        } else {
            format!("https://{rest}/.well-known/pay")
        });
    }
    q.contains("://").then(|| q.to_owned())
}

/// Everything `q` names.
async fn find(services: &Services, q: &str) -> Result<Vec<Found>, ServiceError> {
    let mut found = Vec::new();
    let sites = services.sites.table().await?;
    let url = as_url(q);
    // An id, alone or as the last segment of a URL.
    let last = q.trim_end_matches('/').rsplit('/').next().unwrap_or(q);
    if let Some(id) = OutgoingPaymentId::parse(last) {
        if let Some(p) = operator::outgoing_payment(services, id).await? {
            found.push(Found {
                what: "outgoing payment",
                label: format!("{} ({})", p.id, p.state.as_str()),
                href: format!("/dashboard/payments/outgoing/{}", p.id),
            });
        }
    }
    if let Some(id) = IncomingPaymentId::parse(last) {
        if let Some(p) = operator::incoming_payment(services, id).await? {
            found.push(Found {
                what: "incoming payment",
                label: p.id.to_string(),
                href: format!("/dashboard/payments/incoming/{}", p.id),
            });
        }
    }
    if let Some(id) = WalletAddressId::parse(last) {
        match wallets::get(services, id).await {
            Ok(w) => found.push(wallet_found(&sites, &w)),
            Err(ServiceError::NotFound(_)) => {}
            Err(e) => return Err(e),
        }
    }
    // A wallet address: its URL here, or its path.
    let path = match &url {
        Some(u) => sites.wallet_path(u),
        None => WalletAddressPath::parse_any(q.trim_matches('/'))
            .ok()
            .map(|p| (opd_core::TenantId::operator(), p)),
    };
    if let Some((tenant, path)) = path {
        if let Some(w) = operator::wallet_address_at(services, &tenant, &path).await? {
            if !found.iter().any(|f| f.href.ends_with(&w.id.to_string())) {
                found.push(wallet_found(&sites, &w));
            }
        }
    }
    // A peer, by name or ILP address.
    for p in peers::list(services).await? {
        if p.name.eq_ignore_ascii_case(q) || p.static_ilp_address == q {
            found.push(Found {
                what: "peer",
                label: format!("{} ({})", p.name, p.static_ilp_address),
                href: format!("/dashboard/peers#peer-{}", p.id),
            });
        }
    }
    Ok(found)
}

fn wallet_found(
    sites: &opd_service::tenants::SiteTable,
    w: &opd_core::wallet_address::WalletAddress,
) -> Found {
    Found {
        what: "wallet address",
        label: sites.wallet_url(w),
        href: format!("/dashboard/wallets/{}", w.id),
    }
}

pub(crate) async fn page(
    State(state): State<AdminState>,
    Extension(session): Extension<Session>,
    uri: Uri,
) -> Response {
    let query = query_pairs(&uri);
    let q = param(&query, "q").unwrap_or_default().trim().to_owned();
    let found = if q.is_empty() {
        Vec::new()
    } else {
        match find(&state.app.services, &q).await {
            Ok(f) => f,
            Err(e) => return failed(e),
        }
    };
    if let [one] = found.as_slice() {
        return Redirect::to(&one.href).into_response();
    }
    pages::render(
        if found.is_empty() && !q.is_empty() {
            StatusCode::NOT_FOUND
        } else {
            StatusCode::OK
        },
        &SearchPage {
            page_title: "Search",
            css_href: CSS,
            nav: Nav::new("", &session),
            notice: None,
            query: q,
            found,
        },
    )
}

#[cfg(test)]
mod tests {
    use super::as_url;

    #[test]
    fn payment_pointers_and_urls_are_read_as_urls() {
        assert_eq!(
            as_url("$wallet.example/alice").as_deref(),
            Some("https://wallet.example/alice")
        );
        assert_eq!(
            as_url("$wallet.example").as_deref(),
            Some("https://wallet.example/.well-known/pay")
        );
        assert_eq!(as_url("http://x/alice").as_deref(), Some("http://x/alice"));
        assert_eq!(as_url("alice"), None);
    }
}
