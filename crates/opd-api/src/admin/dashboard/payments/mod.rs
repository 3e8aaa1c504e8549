//! `GET /dashboard/payments`: incoming or outgoing payments of every wallet
//! address, filtered by wallet address and state, newest first, a page at a
//! time; `GET /dashboard/payments/{kind}/{id}`: one payment with its
//! transfers (an incoming payment's page is built by [`incoming`]).

mod incoming;

use std::collections::HashMap;

use askama::Template;
use axum::extract::{Path, State};
use axum::http::{StatusCode, Uri};
use axum::response::Response;
use axum::Extension;
use opd_core::ledger::{AccountKind, Transfer};
use opd_core::outgoing_payment::OutgoingPaymentState;
use opd_core::{Asset, OutgoingPaymentId, WalletAddressId};
use opd_service::operator::{self, IncomingFilter, OutgoingFilter};
use opd_service::wallets;

use crate::admin::dashboard::accounts::{account_asset, AccountName, Names};
use crate::admin::dashboard::{
    done, done_message, failed, not_found, param, query_pairs, CheckedForm,
};
use crate::admin::dashboard::{Nav, Session, CSS};
use crate::admin::state::AdminState;
use crate::{display, pages};

const PAGE: i64 = 20;
const OUTGOING_STATES: &[&str] = &["funding", "sending", "completed", "failed", "cancelled"];
const INCOMING_STATES: &[&str] = &["open", "completed"];

/// A payment as the list shows it.
struct Row {
    id: String,
    /// Whether its wallet address is one the page lists (a tenant's
    /// session lists its own only).
    mine: bool,
    wallet: String,
    state: String,
    amount: String,
    done: String,
    counterpart: String,
    created: String,
}

/// An option of a filter's `<select>`.
struct Choice {
    value: String,
    label: String,
    selected: bool,
}

#[derive(Template)]
#[template(path = "dashboard/payments.html")]
struct PaymentsPage {
    page_title: &'static str,
    css_href: &'static str,
    nav: Nav,
    notice: Option<&'static str>,
    outgoing: bool,
    kinds: Vec<Choice>,
    wallets: Vec<Choice>,
    states: Vec<Choice>,
    rows: Vec<Row>,
    /// The link to the next (older) page, when there is one.
    older: Option<String>,
    filtered: bool,
}

fn choices(values: &[(String, String)], current: Option<&str>) -> Vec<Choice> {
    values
        .iter()
        .map(|(value, label)| Choice {
            selected: current == Some(value.as_str()),
            value: value.clone(),
            label: label.clone(),
        })
        .collect()
}

fn pairs(values: &[&str]) -> Vec<(String, String)> {
    values
        .iter()
        .map(|v| ((*v).to_owned(), (*v).to_owned()))
        .collect()
}

/// The list's filters, as the query gives them; anything unknown is no
/// filter.
struct Filters<'q> {
    outgoing: bool,
    wallet: Option<WalletAddressId>,
    /// One of the kind's states.
    state: Option<&'q str>,
    /// The id the page starts below (a cursor).
    before: Option<&'q str>,
}

impl<'q> Filters<'q> {
    fn parse(query: &'q [(String, String)]) -> Self {
        let outgoing = param(query, "kind") != Some("incoming");
        let states = if outgoing {
            OUTGOING_STATES
        } else {
            INCOMING_STATES
        };
        Self {
            outgoing,
            wallet: param(query, "wallet").and_then(WalletAddressId::parse),
            state: param(query, "state").filter(|s| states.contains(s)),
            // Cursors are ids (UUIDs): anything else is no cursor, never a
            // query the database would refuse.
            before: param(query, "before").filter(|b| OutgoingPaymentId::parse(b).is_some()),
        }
    }

    fn kind(&self) -> &'static str {
        if self.outgoing {
            "outgoing"
        } else {
            "incoming"
        }
    }

    fn states(&self) -> &'static [&'static str] {
        if self.outgoing {
            OUTGOING_STATES
        } else {
            INCOMING_STATES
        }
    }

    /// The link to the page of payments older than `last`.
    fn older_than(&self, last: &str) -> String {
        let mut q = url::form_urlencoded::Serializer::new(String::new());
        q.append_pair("kind", self.kind());
        if let Some(w) = self.wallet {
            q.append_pair("wallet", &w.to_string());
        }
        if let Some(s) = self.state {
            q.append_pair("state", s);
        }
        q.append_pair("before", last);
        format!("/dashboard/payments?{}", q.finish())
    }
}

/// The wallet addresses' paths, by id.
type Paths = HashMap<WalletAddressId, String>;

/// Whether the session may see the payments of wallet address `id`.
async fn may_see(
    services: &opd_service::Services,
    session: &Session,
    id: WalletAddressId,
) -> Result<bool, opd_service::ServiceError> {
    if session.scope.tenant().is_none() {
        return Ok(true);
    }
    Ok(wallets::get(services, id)
        .await
        .is_ok_and(|w| session.scope.may_see(&w)))
}

/// A wallet address's path (its id, should it be gone).
fn path_of(paths: &Paths, id: &WalletAddressId) -> String {
    paths.get(id).cloned().unwrap_or_else(|| id.to_string())
}

pub(crate) async fn list(
    State(state): State<AdminState>,
    Extension(session): Extension<Session>,
    uri: Uri,
) -> Response {
    let services = &state.app.services;
    let query = query_pairs(&uri);
    let filters = Filters::parse(&query);
    let tenant = session.scope.tenant();
    let wallets = match wallets::list(services, tenant).await {
        Ok(w) => w,
        Err(e) => return failed(e),
    };
    let paths: Paths = wallets.iter().map(|w| (w.id, w.path.to_string())).collect();
    let found = if filters.outgoing {
        outgoing_rows(services, &filters, &paths).await
    } else {
        incoming_rows(services, &filters, &paths).await
    };
    let mut rows = match found {
        Ok(rows) => rows,
        Err(e) => return failed(e),
    };
    let older = if rows.len() > PAGE as usize {
        rows.truncate(PAGE as usize);
        rows.last().map(|last| filters.older_than(&last.id))
    } else {
        None
    };
    // A tenant's page shows its own payments; the next page starts after
    // the last one read either way.
    rows.retain(|r| tenant.is_none() || r.mine);
    let kinds = [("outgoing", "Outgoing"), ("incoming", "Incoming")]
        .map(|(v, l)| (v.to_owned(), l.to_owned()));
    let mut wallet_choices = vec![(String::new(), "All wallet addresses".to_owned())];
    wallet_choices.extend(
        wallets
            .iter()
            .map(|w| (w.id.to_string(), w.path.to_string())),
    );
    let mut state_choices = vec![(String::new(), "Any state".to_owned())];
    state_choices.extend(pairs(filters.states()));
    let wallet_param = filters.wallet.map(|w| w.to_string());
    pages::render(
        StatusCode::OK,
        &PaymentsPage {
            page_title: "Payments",
            css_href: CSS,
            nav: Nav::new("/dashboard/payments", &session),
            notice: None,
            outgoing: filters.outgoing,
            kinds: choices(&kinds, Some(filters.kind())),
            wallets: choices(&wallet_choices, Some(wallet_param.as_deref().unwrap_or(""))),
            states: choices(&state_choices, Some(filters.state.unwrap_or(""))),
            rows,
            older,
            filtered: filters.before.is_some(),
        },
    )
}

/// A page of outgoing payments (and one more, to tell whether there is an
/// older page) as rows.
async fn outgoing_rows(
    services: &opd_service::Services,
    filters: &Filters<'_>,
    paths: &Paths,
) -> Result<Vec<Row>, opd_service::ServiceError> {
    let filter = OutgoingFilter {
        wallet: filters.wallet,
        state: filters.state.and_then(OutgoingPaymentState::parse),
    };
    let found = operator::outgoing_payments(services, filter, filters.before, PAGE + 1).await?;
    let row = |p: opd_core::outgoing_payment::OutgoingPayment| {
        let asset = &p.debit.asset;
        Row {
            id: p.id.to_string(),
            mine: paths.contains_key(&p.wallet_address_id),
            wallet: path_of(paths, &p.wallet_address_id),
            state: p.state.as_str().to_owned(),
            amount: display::amount(p.debit.value, asset.code.as_str(), asset.scale),
            done: display::amount(p.sent, asset.code.as_str(), asset.scale),
            counterpart: p.receiver,
            created: display::datetime(p.created_at),
        }
    };
    Ok(found.into_iter().map(row).collect())
}

/// A page of incoming payments (and one more) as rows.
async fn incoming_rows(
    services: &opd_service::Services,
    filters: &Filters<'_>,
    paths: &Paths,
) -> Result<Vec<Row>, opd_service::ServiceError> {
    let filter = IncomingFilter {
        wallet: filters.wallet,
        completed: filters.state.map(|s| s == "completed"),
    };
    let found = operator::incoming_payments(services, filter, filters.before, PAGE + 1).await?;
    let now = services.clock.now();
    let row = |p: opd_core::incoming_payment::IncomingPayment| {
        let amount = |v: u64| display::amount(v, p.asset.code.as_str(), p.asset.scale);
        let state = if p.completed {
            "completed"
        } else if p.is_expired(now) {
            "expired"
        } else {
            "open"
        };
        Row {
            id: p.id.to_string(),
            mine: paths.contains_key(&p.wallet_address_id),
            wallet: path_of(paths, &p.wallet_address_id),
            state: state.to_owned(),
            amount: p.incoming_amount.map_or_else(|| "any".to_owned(), amount),
            done: amount(p.received_amount),
            counterpart: p.client.clone().unwrap_or_default(),
            created: display::datetime(p.created_at),
        }
    };
    Ok(found.into_iter().map(row).collect())
}

/// A transfer as the detail page shows it.
struct TransferRow {
    kind: String,
    from: AccountName,
    to: AccountName,
    amount: String,
    created: String,
}

#[derive(Template)]
#[template(path = "dashboard/payment.html")]
struct PaymentPage {
    page_title: &'static str,
    css_href: &'static str,
    nav: Nav,
    notice: Option<&'static str>,
    facts: Vec<(String, String)>,
    transfers: Vec<TransferRow>,
    /// Where the cancel form posts, for an outgoing payment not finished.
    cancel: Option<String>,
    incoming: bool,
    paid_by: Vec<incoming::Source>,
}

fn transfer_rows(transfers: &[Transfer], names: &Names) -> Vec<TransferRow> {
    transfers
        .iter()
        .map(|t| TransferRow {
            kind: t.kind.as_str().to_owned(),
            from: names.name(&t.debit_account),
            to: names.name(&t.credit_account),
            amount: account_asset(&t.debit_account).map_or_else(
                || t.amount.to_string(),
                |a| display::amount(t.amount, a.code.as_str(), a.scale),
            ),
            created: display::datetime(t.created_at),
        })
        .collect()
}

/// What the detail page shows of a payment: its facts (label, value), the
/// ledger account whose transfers are listed, and where a cancel posts.
pub(super) struct Detail {
    /// Whose payment it is.
    pub(super) wallet: WalletAddressId,
    pub(super) facts: Vec<(String, String)>,
    pub(super) account: String,
    pub(super) cancel: Option<String>,
    /// Its transfers, when the builder found them itself (an incoming
    /// payment's may be on its wallet address's account); else those of
    /// `account`.
    pub(super) transfers: Option<Vec<Transfer>>,
    /// What paid it (incoming payments).
    pub(super) paid_by: Vec<incoming::Source>,
}

pub(super) fn amount(v: u64, a: &Asset) -> String {
    display::amount(v, a.code.as_str(), a.scale)
}

pub(crate) async fn detail(
    State(state): State<AdminState>,
    Extension(session): Extension<Session>,
    Path((kind, id)): Path<(String, String)>,
    uri: Uri,
) -> Response {
    let services = &state.app.services;
    let found = match kind.as_str() {
        "outgoing" => outgoing_detail(services, &id).await,
        "incoming" => incoming::detail(services, &id).await,
        _ => return not_found("payment"),
    };
    let detail = match found {
        Ok(d) => d,
        Err(response) => return response,
    };
    match may_see(services, &session, detail.wallet).await {
        Ok(true) => {}
        Ok(false) => return not_found("payment"),
        Err(e) => return failed(e),
    }
    let transfers = match detail.transfers {
        Some(found) => found,
        None => match operator::transfers_of(services, &detail.account, 200).await {
            Ok(t) => t,
            Err(e) => return failed(e),
        },
    };
    let names = match Names::load(services).await {
        Ok(n) => n,
        Err(e) => return failed(e),
    };
    let facts = detail.facts.into_iter().filter(|(_, v)| !v.is_empty());
    pages::render(
        StatusCode::OK,
        &PaymentPage {
            page_title: if kind == "outgoing" {
                "Outgoing payment"
            } else {
                "Incoming payment"
            },
            css_href: CSS,
            nav: Nav::new("/dashboard/payments", &session),
            notice: done_message(&query_pairs(&uri)),
            facts: facts.collect(),
            transfers: transfer_rows(&transfers, &names),
            cancel: detail.cancel,
            incoming: kind == "incoming",
            paid_by: detail.paid_by,
        },
    )
}

/// An outgoing payment's detail; the page to answer when there is none.
async fn outgoing_detail(services: &opd_service::Services, id: &str) -> Result<Detail, Response> {
    let Some(id) = OutgoingPaymentId::parse(id) else {
        return Err(not_found("outgoing payment"));
    };
    let p = match operator::outgoing_payment(services, id).await {
        Ok(Some(p)) => p,
        Ok(None) => return Err(not_found("outgoing payment")),
        Err(e) => return Err(failed(e)),
    };
    let fact = |label: &str, value: String| (label.to_owned(), value);
    let facts = vec![
        fact("Id", p.id.to_string()),
        fact("State", p.state.as_str().to_owned()),
        fact("Receiver", p.receiver.clone()),
        fact("Debit", amount(p.debit.value, &p.debit.asset)),
        fact("Receive", amount(p.receive.value, &p.receive.asset)),
        fact("Sent", amount(p.sent, &p.debit.asset)),
        fact("Delivered", amount(p.delivered, &p.receive.asset)),
        fact("Error", p.error.clone().unwrap_or_default()),
        fact("Client", p.client.clone().unwrap_or_default()),
        fact("Attempts since money last moved", p.attempts.to_string()),
        fact("Created", display::datetime(p.created_at)),
        fact("Updated", display::datetime(p.updated_at)),
    ];
    let unfinished = matches!(
        p.state,
        OutgoingPaymentState::Funding | OutgoingPaymentState::Sending
    );
    Ok(Detail {
        wallet: p.wallet_address_id,
        facts,
        account: AccountKind::Outgoing.account_id(&p.id.to_string(), &p.debit.asset),
        cancel: unfinished.then(|| format!("/dashboard/payments/outgoing/{}/cancel", p.id)),
        transfers: None,
        paid_by: Vec::new(),
    })
}

/// `POST /dashboard/payments/outgoing/{id}/cancel`: cancels a payment not
/// sent yet (what it holds goes back to its wallet address).
pub(crate) async fn cancel(
    State(state): State<AdminState>,
    Path(id): Path<String>,
    form: CheckedForm,
) -> Response {
    let services = &state.app.services;
    let Some(payment) = OutgoingPaymentId::parse(&id) else {
        return not_found("outgoing payment");
    };
    let wallet = match operator::outgoing_payment(services, payment).await {
        Ok(Some(p)) => p.wallet_address_id,
        Ok(None) => return not_found("outgoing payment"),
        Err(e) => return failed(e),
    };
    match may_see(services, &form.session, wallet).await {
        Ok(true) => {}
        Ok(false) => return not_found("outgoing payment"),
        Err(e) => return failed(e),
    }
    let back = format!("/dashboard/payments/outgoing/{payment}");
    match opd_service::payments::outgoing::lifecycle::cancel(services, payment).await {
        Ok(()) => done(&back, "cancelled"),
        Err(opd_service::ServiceError::NotFound(_)) => not_found("outgoing payment"),
        Err(opd_service::ServiceError::Conflict { .. }) => done(&back, "not_cancellable"),
        Err(e) => failed(e),
    }
}
