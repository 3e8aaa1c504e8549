//! `GET /dashboard/grants`: grants, newest first, by state, a page at a
//! time; `POST /dashboard/grants/{id}/revoke`: revokes one with its tokens.

use askama::Template;
use axum::extract::{Path, State};
use axum::http::{StatusCode, Uri};
use axum::response::Response;
use axum::Extension;
use opd_core::GrantId;
use opd_service::operator::{self, GrantSummary};

use super::{done, done_message, failed, not_found, param, query_pairs, CheckedForm, Nav};
use super::{Session, CSS};
use crate::admin::state::AdminState;
use crate::{display, pages};

const PAGE: i64 = 25;
const STATES: &[&str] = &["pending", "approved", "finalized"];

pub(super) struct Row {
    pub(super) id: String,
    pub(super) state: String,
    pub(super) client: String,
    pub(super) access: Vec<Access>,
    pub(super) created: String,
    pub(super) revocable: bool,
}

#[derive(Template)]
#[template(path = "dashboard/grants.html")]
struct GrantsPage {
    page_title: &'static str,
    css_href: &'static str,
    nav: Nav,
    notice: Option<&'static str>,
    states: Vec<(String, bool)>,
    rows: Vec<Row>,
    older: Option<String>,
}

/// One access item of a grant as the page shows it.
pub(super) struct Access {
    /// `outgoing-payment: create, read`.
    pub(super) what: String,
    /// The wallet address it is for, when it names one.
    pub(super) wallet: Option<String>,
    /// Its limits in words: `debit $50.00, every P1M, to <receiver>`.
    pub(super) limits: Option<String>,
}

/// An amount of a limit (`{value, assetCode, assetScale}`) in its units.
fn limit_amount(v: &serde_json::Value) -> Option<String> {
    let value = v["value"].as_str()?.parse::<u64>().ok()?;
    let scale = u8::try_from(v["assetScale"].as_u64()?).ok()?;
    Some(display::amount(value, v["assetCode"].as_str()?, scale))
}

/// A grant's limits in words, when it has some.
fn limits_words(limits: &serde_json::Value) -> Option<String> {
    let mut words = Vec::new();
    for (key, label) in [("debitAmount", "debit"), ("receiveAmount", "receive")] {
        if let Some(a) = limit_amount(&limits[key]) {
            words.push(format!("{label} {a}"));
        }
    }
    if let Some(interval) = limits["interval"].as_str() {
        words.push(format!("every {interval}"));
    }
    if let Some(receiver) = limits["receiver"].as_str() {
        words.push(format!("to {receiver}"));
    }
    (!words.is_empty()).then(|| words.join(", "))
}

/// Each access item of the stored JSON: type and actions, the wallet
/// address it names, and its limits.
pub(super) fn access_items(access: &str) -> Vec<Access> {
    let Ok(serde_json::Value::Array(items)) = serde_json::from_str(access) else {
        return vec![Access {
            what: access.to_owned(),
            wallet: None,
            limits: None,
        }];
    };
    items
        .iter()
        .map(|item| {
            let kind = item["type"].as_str().unwrap_or("?");
            let actions: Vec<&str> = item["actions"]
                .as_array()
                .map(|a| a.iter().filter_map(|v| v.as_str()).collect())
                .unwrap_or_default();
            Access {
                what: format!("{kind}: {}", actions.join(", ")),
                wallet: item["identifier"].as_str().map(str::to_owned),
                limits: limits_words(&item["limits"]),
            }
        })
        .collect()
}

pub(super) fn row(g: &GrantSummary) -> Row {
    let finished = matches!(g.finalization.as_deref(), Some("revoked" | "rejected"));
    let state = match &g.finalization {
        Some(f) => format!("{} ({f})", g.state),
        None => g.state.clone(),
    };
    Row {
        id: g.id.to_string(),
        state,
        client: g
            .client_wallet_address
            .clone()
            .unwrap_or_else(|| "a client identified by its key".into()),
        access: access_items(&g.access),
        created: display::datetime(g.created_at),
        revocable: !finished,
    }
}

pub(crate) async fn list(
    State(state): State<AdminState>,
    Extension(session): Extension<Session>,
    uri: Uri,
) -> Response {
    let services = &state.app.services;
    let query = query_pairs(&uri);
    let wanted = param(&query, "state").filter(|s| STATES.contains(s));
    // A cursor is a grant id; anything else is no cursor.
    let before = param(&query, "before").filter(|b| GrantId::parse(b).is_some());
    let found = match operator::grants(services, wanted, before, PAGE + 1).await {
        Ok(f) => f,
        Err(e) => return failed(e),
    };
    let mut rows: Vec<Row> = found.iter().map(row).collect();
    let older = if rows.len() > PAGE as usize {
        rows.truncate(PAGE as usize);
        rows.last().map(|last| {
            let mut q = url::form_urlencoded::Serializer::new(String::new());
            if let Some(s) = wanted {
                q.append_pair("state", s);
            }
            q.append_pair("before", &last.id);
            format!("/dashboard/grants?{}", q.finish())
        })
    } else {
        None
    };
    let mut states = vec![(String::new(), wanted.is_none())];
    states.extend(STATES.iter().map(|s| ((*s).to_owned(), wanted == Some(*s))));
    pages::render(
        StatusCode::OK,
        &GrantsPage {
            page_title: "Grants",
            css_href: CSS,
            nav: Nav::new("/dashboard/grants", &session),
            notice: done_message(&query),
            states,
            rows,
            older,
        },
    )
}

pub(crate) async fn revoke(
    State(state): State<AdminState>,
    Path(id): Path<String>,
    _form: CheckedForm,
) -> Response {
    let services = &state.app.services;
    let Some(id) = GrantId::parse(&id) else {
        return not_found("grant");
    };
    match opd_service::grants::revoke_by_operator(services, id).await {
        Ok(true) => done("/dashboard/grants", "revoked"),
        Ok(false) => done("/dashboard/grants", "already_revoked"),
        Err(e) => failed(e),
    }
}

#[cfg(test)]
mod tests {
    use super::access_items;

    #[test]
    fn an_access_item_shows_its_wallet_address_and_limits_in_units() {
        let access = r#"[{"type":"outgoing-payment","actions":["create","read"],"identifier":"https://w.example/alice",
            "limits":{"debitAmount":{"value":"5000","assetCode":"USD","assetScale":2},"interval":"R/2026-11-27T00:00:00Z/P1M",
            "receiver":"https://w.example/incoming-payments/1"}},
            {"type":"quote","actions":["create"]}]"#;
        let items = access_items(access);
        assert_eq!(items[0].what, "outgoing-payment: create, read");
        assert_eq!(items[0].wallet.as_deref(), Some("https://w.example/alice"));
        assert_eq!(
            items[0].limits.as_deref(),
            Some("debit $50.00, every R/2026-11-27T00:00:00Z/P1M, to https://w.example/incoming-payments/1")
        );
        assert_eq!(
            (items[1].wallet.as_deref(), items[1].limits.as_deref()),
            (None, None)
        );
        assert_eq!(access_items("not json")[0].what, "not json");
    }
}
