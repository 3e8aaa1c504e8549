//! Admin routes that move or show money: deposits and withdrawals,
//! balances and transfers, cancelling and funding outgoing payments,
//! withdrawing what an incoming payment (or a wallet address over SPSP)
//! received, the ledger check and this node's counters.

use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Json, Router};
use opd_service::operator;
use serde::{Deserialize, Serialize};

use super::state::AdminState;
use crate::error::{ApiError, ApiResult};
use crate::extract::{JsonBody, PathParam};

use super::scope::AdminScope;
use super::wallets::resolve;

/// This part's routes.
pub(super) fn routes() -> Router<AdminState> {
    Router::new()
        .route("/wallet-addresses/{wallet}/deposits", post(deposit))
        .route("/wallet-addresses/{wallet}/withdrawals", post(withdraw))
        .route("/wallet-addresses/{wallet}/balance", get(balance))
        .route("/wallet-addresses/{wallet}/transfers", get(transfers))
        .route(
            "/outgoing-payments/{id}/cancel",
            post(cancel_outgoing_payment),
        )
        .route("/ledger/check", get(ledger_check))
        .route("/stats", get(stats))
        .route("/outgoing-payments/{id}/fund", post(fund_outgoing_payment))
        .route(
            "/incoming-payments/{id}/withdrawals",
            post(withdraw_incoming_payment),
        )
        .route(
            "/wallet-addresses/{wallet}/spsp-withdrawals",
            post(withdraw_spsp),
        )
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct MoveMoney {
    /// Minor units of the account's asset, as a decimal string.
    pub(crate) amount: String,
    pub(crate) idempotency_key: String,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct TransferAdmin {
    id: String,
    kind: String,
    debit_account: String,
    credit_account: String,
    amount: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    reference: Option<String>,
    created_at: String,
}

impl From<&opd_core::ledger::Transfer> for TransferAdmin {
    fn from(t: &opd_core::ledger::Transfer) -> Self {
        Self {
            id: t.id.clone(),
            kind: t.kind.as_str().to_owned(),
            debit_account: t.debit_account.clone(),
            credit_account: t.credit_account.clone(),
            amount: t.amount.to_string(),
            reference: t.reference.clone(),
            created_at: t.created_at.to_rfc3339(),
        }
    }
}

async fn move_money(
    state: &AdminState,
    scope: &AdminScope,
    reference: &str,
    req: MoveMoney,
    deposit: bool,
) -> ApiResult<(StatusCode, Json<serde_json::Value>)> {
    let wallet = resolve(state, scope, reference).await?;
    let amount = opd_core::money::parse_u64_canonical(&req.amount).map_err(|e| {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            "invalid_amount",
            format!("amount: {e}"),
        )
    })?;
    let services = &state.app.services;
    let (transfer, new) =
        opd_service::ledger::move_money(services, &wallet, amount, deposit, &req.idempotency_key)
            .await?;
    let balance = opd_service::ledger::balance(services, &wallet).await?;
    let status = idempotent_status(new);
    Ok((
        status,
        Json(serde_json::json!({
            "transfer": TransferAdmin::from(&transfer),
            "balance": opd_core::AmountWire::from(&balance),
        })),
    ))
}

async fn deposit(
    State(state): State<AdminState>,
    scope: AdminScope,
    PathParam(reference): PathParam,
    JsonBody { value: req, .. }: JsonBody<MoveMoney>,
) -> ApiResult<(StatusCode, Json<serde_json::Value>)> {
    move_money(&state, &scope, &reference, req, true).await
}

async fn withdraw(
    State(state): State<AdminState>,
    scope: AdminScope,
    PathParam(reference): PathParam,
    JsonBody { value: req, .. }: JsonBody<MoveMoney>,
) -> ApiResult<(StatusCode, Json<serde_json::Value>)> {
    move_money(&state, &scope, &reference, req, false).await
}

async fn balance(
    State(state): State<AdminState>,
    scope: AdminScope,
    PathParam(reference): PathParam,
) -> ApiResult<Json<serde_json::Value>> {
    let wallet = resolve(&state, &scope, &reference).await?;
    let balance = opd_service::ledger::balance(&state.app.services, &wallet).await?;
    Ok(Json(
        serde_json::json!({ "balance": opd_core::AmountWire::from(&balance) }),
    ))
}

async fn transfers(
    State(state): State<AdminState>,
    scope: AdminScope,
    PathParam(reference): PathParam,
) -> ApiResult<Json<Vec<TransferAdmin>>> {
    let wallet = resolve(&state, &scope, &reference).await?;
    let list = opd_service::ledger::transfers(&state.app.services, &wallet, 100).await?;
    Ok(Json(list.iter().map(TransferAdmin::from).collect()))
}

/// An outgoing payment the scope may act on, by id.
async fn scoped_outgoing(
    state: &AdminState,
    scope: &AdminScope,
    id: &str,
) -> ApiResult<opd_core::OutgoingPaymentId> {
    let not_found = || ApiError::not_found("outgoing payment");
    let id = opd_core::OutgoingPaymentId::parse(id).ok_or_else(not_found)?;
    if scope.tenant().is_some() {
        let (_, wallet) = opd_service::payments::outgoing::get(&state.app.services, id).await?;
        if !scope.may_see(&wallet) {
            return Err(not_found());
        }
    }
    Ok(id)
}

async fn cancel_outgoing_payment(
    State(state): State<AdminState>,
    scope: AdminScope,
    PathParam(id): PathParam,
) -> ApiResult<StatusCode> {
    let id = scoped_outgoing(&state, &scope, &id).await?;
    opd_service::payments::outgoing::lifecycle::cancel(&state.app.services, id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// `GET /stats`: this node's counters (SQL round trips so far), for
/// benchmarks and capacity planning.
async fn stats(State(state): State<AdminState>) -> Json<serde_json::Value> {
    let stats = operator::store_stats(&state.app.services);
    Json(serde_json::json!({
        "backend": stats.backend,
        "sqlRoundTrips": stats.round_trips,
    }))
}

async fn ledger_check(State(state): State<AdminState>) -> ApiResult<Json<serde_json::Value>> {
    let report = operator::check_ledger(&state.app.services).await?;
    let waiting: Vec<_> = report
        .awaiting_withdrawal
        .iter()
        .map(opd_core::AmountWire::from)
        .collect();
    Ok(Json(serde_json::json!({
        "balanced": report.problems.is_empty(),
        "problems": report.problems,
        "awaitingWithdrawal": waiting,
    })))
}

/// `{idempotencyKey}` of `POST /incoming-payments/{id}/withdrawals`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct WithdrawReceived {
    pub(crate) idempotency_key: String,
}

/// External mode: takes what an incoming payment received (and was not
/// withdrawn yet) out of opd; 201 with the amount, or 200 with the first
/// answer when the key is repeated.
async fn withdraw_incoming_payment(
    State(state): State<AdminState>,
    scope: AdminScope,
    PathParam(id): PathParam,
    JsonBody { value: req, .. }: JsonBody<WithdrawReceived>,
) -> ApiResult<(StatusCode, Json<serde_json::Value>)> {
    let not_found = || ApiError::not_found("incoming payment");
    let id = opd_core::IncomingPaymentId::parse(&id).ok_or_else(not_found)?;
    if scope.tenant().is_some() {
        let (_, wallet) = opd_service::payments::incoming::get(&state.app.services, id).await?;
        if !scope.may_see(&wallet) {
            return Err(not_found());
        }
    }
    let (transfer, asset, new) =
        opd_service::ledger::withdraw_received(&state.app.services, id, &req.idempotency_key)
            .await?;
    let amount = opd_core::Amount::new(transfer.amount, asset);
    let status = idempotent_status(new);
    Ok((
        status,
        Json(serde_json::json!({
            "amount": opd_core::AmountWire::from(&amount),
            "transfer": TransferAdmin::from(&transfer),
        })),
    ))
}

/// External mode: takes what a wallet address received over SPSP (paid by
/// its payment pointer, and not withdrawn yet) out of opd; 201 with the
/// amount, or 200 with the first answer when the key is repeated; 409
/// `nothing_to_withdraw` when it holds nothing.
async fn withdraw_spsp(
    State(state): State<AdminState>,
    scope: AdminScope,
    PathParam(reference): PathParam,
    JsonBody { value: req, .. }: JsonBody<WithdrawReceived>,
) -> ApiResult<(StatusCode, Json<serde_json::Value>)> {
    let wallet = resolve(&state, &scope, &reference).await?;
    let services = &state.app.services;
    let (transfer, new) =
        opd_service::interledger::spsp::withdraw(services, &wallet, &req.idempotency_key).await?;
    let amount = opd_core::Amount::new(transfer.amount, wallet.asset.clone());
    Ok((
        idempotent_status(new),
        Json(serde_json::json!({
            "amount": opd_core::AmountWire::from(&amount),
            "transfer": TransferAdmin::from(&transfer),
        })),
    ))
}

async fn fund_outgoing_payment(
    State(state): State<AdminState>,
    scope: AdminScope,
    PathParam(id): PathParam,
) -> ApiResult<StatusCode> {
    let id = scoped_outgoing(&state, &scope, &id).await?;
    opd_service::payments::outgoing::lifecycle::fund(&state.app.services, id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// The status of an idempotent money movement: 201 when this request made
/// it, 200 when its key repeats an earlier one (answered as then).
pub(crate) fn idempotent_status(new: bool) -> StatusCode {
    if new {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    }
}
