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

/// `q` as the URLs it may stand for: a URL itself; a payment pointer its
/// `https://` URL, and its `http://` one too (the pointer says no scheme,
/// and a server behind no TLS serves plain http).
fn as_urls(q: &str) -> Vec<String> {
    if let Some(rest) = q.strip_prefix('$') {
        let rest = if rest.contains('/') {
            rest.to_owned()
        } else {
            format!("{rest}/.well-known/pay")
        };
        return vec![format!("https://{rest}"), format!("http://{rest}")];
    }
    if q.contains("://") {
        vec![q.to_owned()]
    } else {
        Vec::new()
    }
}

/// Everything `q` names.
async fn find(services: &Services, q: &str) -> Result<Vec<Found>, ServiceError> {
    let mut found = Vec::new();
    let sites = services.sites.table().await?;
    let urls = as_urls(q);
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
    let path = if urls.is_empty() {
        WalletAddressPath::parse_any(q.trim_matches('/'))
            .ok()
            .map(|p| (opd_core::TenantId::operator(), p))
    } else {
        urls.iter().find_map(|u| sites.wallet_path(u))
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
    use super::as_urls;

    #[test]
    fn payment_pointers_and_urls_are_read_as_urls() {
        assert_eq!(
            as_urls("$wallet.example/alice"),
            [
                "https://wallet.example/alice",
                "http://wallet.example/alice"
            ]
        );
        assert_eq!(
            as_urls("$127.0.0.1:8080"),
            [
                "https://127.0.0.1:8080/.well-known/pay",
                "http://127.0.0.1:8080/.well-known/pay"
            ]
        );
        assert_eq!(as_urls("http://x/alice"), ["http://x/alice"]);
        assert!(as_urls("alice").is_empty());
    }
}
