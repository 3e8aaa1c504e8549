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
    pub(super) access: Vec<crate::views::grant_access::Access>,
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
        access: crate::views::grant_access::access_items(&g.access),
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
