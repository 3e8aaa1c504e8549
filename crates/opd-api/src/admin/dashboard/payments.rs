//! `GET /dashboard/payments`: incoming or outgoing payments of every wallet
//! address, filtered by wallet address and state, newest first, a page at a
//! time; `GET /dashboard/payments/{kind}/{id}`: one payment with its
//! transfers.

use std::collections::HashMap;

use askama::Template;
use axum::extract::{Path, State};
use axum::http::{StatusCode, Uri};
use axum::response::Response;
use axum::Extension;
use opd_core::ledger::{AccountKind, Receipts, Transfer};
use opd_core::outgoing_payment::OutgoingPaymentState;
use opd_core::{Asset, IncomingPaymentId, OutgoingPaymentId, WalletAddressId};
use opd_service::operator::{self, IncomingFilter, OutgoingFilter};
use opd_service::wallets;

use super::accounts::{account_asset, AccountName, Names};
use super::{done, done_message, failed, not_found, param, query_pairs, CheckedForm};
use super::{Nav, Session, CSS};
use crate::admin::state::AdminState;
use crate::{display, pages};

const PAGE: i64 = 20;
const OUTGOING_STATES: &[&str] = &["funding", "sending", "completed", "failed", "cancelled"];
const INCOMING_STATES: &[&str] = &["open", "completed"];

/// A payment as the list shows it.
struct Row {
    id: String,
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

pub(crate) async fn list(
    State(state): State<AdminState>,
    Extension(session): Extension<Session>,
    uri: Uri,
) -> Response {
    let services = &state.app.services;
    let query = query_pairs(&uri);
    let outgoing = param(&query, "kind") != Some("incoming");
    let wallet_id = param(&query, "wallet").and_then(WalletAddressId::parse);
    let states = if outgoing {
        OUTGOING_STATES
    } else {
        INCOMING_STATES
    };
    let state_filter = param(&query, "state").filter(|s| states.contains(s));
    // Cursors are ids (UUIDs): anything else is no cursor, never a query
    // the database would refuse.
    let before = param(&query, "before").filter(|b| OutgoingPaymentId::parse(b).is_some());
    let wallets = match wallets::list(services).await {
        Ok(w) => w,
        Err(e) => return failed(e),
    };
    let paths: HashMap<WalletAddressId, String> =
        wallets.iter().map(|w| (w.id, w.path.to_string())).collect();
    let path_of = |id: &WalletAddressId| paths.get(id).cloned().unwrap_or_else(|| id.to_string());
    let mut rows = Vec::new();
    if outgoing {
        let filter = OutgoingFilter {
            wallet: wallet_id,
            state: state_filter.and_then(OutgoingPaymentState::parse),
        };
        let found = operator::outgoing_payments(services, filter, before, PAGE + 1).await;
        let found = match found {
            Ok(f) => f,
            Err(e) => return failed(e),
        };
        for p in found {
            let asset = &p.debit.asset;
            rows.push(Row {
                id: p.id.to_string(),
                wallet: path_of(&p.wallet_address_id),
                state: p.state.as_str().to_owned(),
                amount: display::amount(p.debit.value, asset.code.as_str(), asset.scale),
                done: display::amount(p.sent, asset.code.as_str(), asset.scale),
                counterpart: p.receiver,
                created: display::datetime(p.created_at),
            });
        }
    } else {
        let filter = IncomingFilter {
            wallet: wallet_id,
            completed: state_filter.map(|s| s == "completed"),
        };
        let found = operator::incoming_payments(services, filter, before, PAGE + 1).await;
        let found = match found {
            Ok(f) => f,
            Err(e) => return failed(e),
        };
        let now = services.clock.now();
        for p in found {
            let amount = |v: u64| display::amount(v, p.asset.code.as_str(), p.asset.scale);
            let state = if p.completed {
                "completed"
            } else if p.is_expired(now) {
                "expired"
            } else {
                "open"
            };
            rows.push(Row {
                id: p.id.to_string(),
                wallet: path_of(&p.wallet_address_id),
                state: state.to_owned(),
                amount: p.incoming_amount.map_or_else(|| "any".to_owned(), amount),
                done: amount(p.received_amount),
                counterpart: p.client.clone().unwrap_or_default(),
                created: display::datetime(p.created_at),
            });
        }
    }
    let older = if rows.len() > PAGE as usize {
        rows.truncate(PAGE as usize);
        rows.last().map(|last| {
            let mut q = url::form_urlencoded::Serializer::new(String::new());
            q.append_pair("kind", if outgoing { "outgoing" } else { "incoming" });
            if let Some(w) = wallet_id {
                q.append_pair("wallet", &w.to_string());
            }
            if let Some(s) = state_filter {
                q.append_pair("state", s);
            }
            q.append_pair("before", &last.id);
            format!("/dashboard/payments?{}", q.finish())
        })
    } else {
        None
    };
    let kind = if outgoing { "outgoing" } else { "incoming" };
    let kinds = [("outgoing", "Outgoing"), ("incoming", "Incoming")]
        .map(|(v, l)| (v.to_owned(), l.to_owned()));
    let mut wallet_choices = vec![(String::new(), "All wallet addresses".to_owned())];
    wallet_choices.extend(
        wallets
            .iter()
            .map(|w| (w.id.to_string(), w.path.to_string())),
    );
    let mut state_choices = vec![(String::new(), "Any state".to_owned())];
    state_choices.extend(pairs(states));
    let wallet_param = wallet_id.map(|w| w.to_string());
    pages::render(
        StatusCode::OK,
        &PaymentsPage {
            page_title: "Payments",
            css_href: CSS,
            nav: Nav::new("/dashboard/payments", &session),
            notice: None,
            outgoing,
            kinds: choices(&kinds, Some(kind)),
            wallets: choices(&wallet_choices, Some(wallet_param.as_deref().unwrap_or(""))),
            states: choices(&state_choices, Some(state_filter.unwrap_or(""))),
            rows,
            older,
            filtered: before.is_some(),
        },
    )
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

pub(crate) async fn detail(
    State(state): State<AdminState>,
    Extension(session): Extension<Session>,
    Path((kind, id)): Path<(String, String)>,
    uri: Uri,
) -> Response {
    let services = &state.app.services;
    let mut cancel = None;
    let amount = |v: u64, a: &Asset| display::amount(v, a.code.as_str(), a.scale);
    let (facts, account) = match kind.as_str() {
        "outgoing" => {
            let Some(id) = OutgoingPaymentId::parse(&id) else {
                return not_found("outgoing payment");
            };
            let p = match operator::outgoing_payment(services, id).await {
                Ok(Some(p)) => p,
                Ok(None) => return not_found("outgoing payment"),
                Err(e) => return failed(e),
            };
            let facts = vec![
                ("Id".to_owned(), p.id.to_string()),
                ("State".to_owned(), p.state.as_str().to_owned()),
                ("Receiver".to_owned(), p.receiver.clone()),
                ("Debit".to_owned(), amount(p.debit.value, &p.debit.asset)),
                (
                    "Receive".to_owned(),
                    amount(p.receive.value, &p.receive.asset),
                ),
                ("Sent".to_owned(), amount(p.sent, &p.debit.asset)),
                (
                    "Delivered".to_owned(),
                    amount(p.delivered, &p.receive.asset),
                ),
                ("Error".to_owned(), p.error.clone().unwrap_or_default()),
                ("Client".to_owned(), p.client.clone().unwrap_or_default()),
                (
                    "Attempts since money last moved".to_owned(),
                    p.attempts.to_string(),
                ),
                ("Created".to_owned(), display::datetime(p.created_at)),
                ("Updated".to_owned(), display::datetime(p.updated_at)),
            ];
            let account = AccountKind::Outgoing.account_id(&p.id.to_string(), &p.debit.asset);
            if matches!(
                p.state,
                OutgoingPaymentState::Funding | OutgoingPaymentState::Sending
            ) {
                cancel = Some(format!("/dashboard/payments/outgoing/{}/cancel", p.id));
            }
            (facts, account)
        }
        "incoming" => {
            let Some(id) = IncomingPaymentId::parse(&id) else {
                return not_found("incoming payment");
            };
            let p = match operator::incoming_payment(services, id).await {
                Ok(Some(p)) => p,
                Ok(None) => return not_found("incoming payment"),
                Err(e) => return failed(e),
            };
            // Where what it received went: the wallet address's balance
            // (balance mode), or its own account until withdrawn.
            let received_to = match services.config.receipts() {
                Receipts::ToWallet => (
                    "Received money".to_owned(),
                    "on the wallet address's balance".to_owned(),
                ),
                Receipts::Held => match operator::unwithdrawn(services, p.id).await {
                    Ok(v) => ("Waiting for withdrawal".to_owned(), amount(v, &p.asset)),
                    Err(e) => return failed(e),
                },
            };
            let facts = vec![
                ("Id".to_owned(), p.id.to_string()),
                (
                    "Completed".to_owned(),
                    if p.completed { "yes" } else { "no" }.to_owned(),
                ),
                (
                    "Incoming amount".to_owned(),
                    p.incoming_amount
                        .map_or_else(|| "any".to_owned(), |v| amount(v, &p.asset)),
                ),
                ("Received".to_owned(), amount(p.received_amount, &p.asset)),
                received_to,
                ("Client".to_owned(), p.client.clone().unwrap_or_default()),
                ("Expires".to_owned(), display::datetime(p.expires_at)),
                ("Created".to_owned(), display::datetime(p.created_at)),
            ];
            let account = AccountKind::Incoming.account_id(&p.id.to_string(), &p.asset);
            (facts, account)
        }
        _ => return not_found("payment"),
    };
    let transfers = match operator::transfers_of(services, &account, 200).await {
        Ok(t) => t,
        Err(e) => return failed(e),
    };
    let names = match Names::load(services).await {
        Ok(n) => n,
        Err(e) => return failed(e),
    };
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
            facts: facts.into_iter().filter(|(_, v)| !v.is_empty()).collect(),
            transfers: transfer_rows(&transfers, &names),
            cancel,
        },
    )
}

/// `POST /dashboard/payments/outgoing/{id}/cancel`: cancels a payment not
/// sent yet (what it holds goes back to its wallet address).
pub(crate) async fn cancel(
    State(state): State<AdminState>,
    Path(id): Path<String>,
    _form: CheckedForm,
) -> Response {
    let services = &state.app.services;
    let Some(payment) = OutgoingPaymentId::parse(&id) else {
        return not_found("outgoing payment");
    };
    let back = format!("/dashboard/payments/outgoing/{payment}");
    match opd_service::payments::outgoing::lifecycle::cancel(services, payment).await {
        Ok(()) => done(&back, "cancelled"),
        Err(opd_service::ServiceError::NotFound(_)) => not_found("outgoing payment"),
        Err(opd_service::ServiceError::Conflict { .. }) => done(&back, "not_cancellable"),
        Err(e) => failed(e),
    }
}
