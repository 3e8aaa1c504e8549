//! The outgoing payment routes of the Open Payments listener: create,
//! read, list, and the spending of the caller's grant.

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;

use super::auth::{action, kind, Authorized};
use super::site::RequestSite;
use super::{creation_allowed, own_wallet_url, parse_page};
use crate::error::{ApiError, ApiResult};
use crate::extract::{parse_json, PathParam, QueryPairs};
use crate::replays::json_answer;
use crate::wire::{
    parse_amount, CreateOutgoingPaymentRequest, GrantSpentWire, ListWire, OutgoingPaymentWire,
};
use crate::AppState;

fn grant_context(
    caller: &opd_service::access::Caller,
) -> opd_service::payments::outgoing::GrantContext {
    opd_service::payments::outgoing::GrantContext {
        grant_id: caller.grant_id.to_string(),
        limits: caller.limits.clone(),
    }
}

pub(super) async fn create_outgoing_payment(
    State(state): State<AppState>,
    site: RequestSite,
    auth: Authorized<kind::OutgoingPayment, action::Create>,
) -> ApiResult<(StatusCode, Json<OutgoingPaymentWire>)> {
    use opd_service::payments::outgoing::{self as op, NewOutgoingPayment, PaymentSource};
    let services = &state.services;
    let req: CreateOutgoingPaymentRequest = parse_json(auth.body())?;
    own_wallet_url(&state, &site, &req.wallet_address).await?;
    let caller = auth.caller_for(&req.wallet_address)?;
    creation_allowed(&state, &caller.client)?;
    let source = match (req.quote_id, req.incoming_payment, &req.debit_amount) {
        (Some(q), None, None) => PaymentSource::Quote(q),
        (None, Some(receiver), Some(d)) => PaymentSource::IncomingPayment {
            receiver,
            debit_amount: parse_amount("debitAmount", d)?,
        },
        _ => {
            return Err(ApiError::invalid_request(
                "give quoteId, or incomingPayment with debitAmount",
            ))
        }
    };
    let input = NewOutgoingPayment {
        wallet_address: req.wallet_address,
        source,
        metadata: req.metadata,
        client: Some(caller.client.clone()),
        grant: Some(grant_context(&caller)),
    };
    let public_url = site.public_url().clone();
    let respond =
        move |p: &_, w: &_, spent: &_| json_answer(201, &created(p, w, &public_url, spent));
    let (payment, wallet, spent) = op::create_answered(services, input, auth.claim(), respond)
        .await
        .map_err(|e| ApiError::from(e).as_clients_expect())?;
    let body = created(&payment, &wallet, site.public_url(), &spent);
    Ok((StatusCode::CREATED, Json(body)))
}

/// A created payment as its `201` shows it: with what its grant had spent
/// before it.
fn created(
    payment: &opd_core::outgoing_payment::OutgoingPayment,
    wallet: &opd_core::wallet_address::WalletAddress,
    public_url: &opd_service::PublicUrl,
    spent: &opd_core::outgoing_payment::GrantSpent,
) -> OutgoingPaymentWire {
    let mut body = OutgoingPaymentWire::new(payment, wallet, public_url);
    body.grant_spent_debit_amount = spent.debit.as_ref().map(opd_core::AmountWire::from);
    body.grant_spent_receive_amount = spent.receive.as_ref().map(opd_core::AmountWire::from);
    body
}

pub(super) async fn get_outgoing_payment(
    State(state): State<AppState>,
    site: RequestSite,
    PathParam(id): PathParam,
    auth: Authorized<kind::OutgoingPayment, action::Read>,
) -> ApiResult<([(&'static str, &'static str); 1], Json<OutgoingPaymentWire>)> {
    let services = &state.services;
    let id = opd_core::OutgoingPaymentId::parse(&id)
        .ok_or_else(|| ApiError::not_found("outgoing payment"))?;
    let (payment, wallet) = opd_service::payments::outgoing::get(services, id).await?;
    if !site.owns(&wallet) {
        return Err(ApiError::not_found("outgoing payment"));
    }
    let wallet_url = site.wallet_url(&wallet);
    let caller = auth.caller_for(&wallet_url)?;
    if !caller.may_see(payment.client.as_deref()) {
        return Err(ApiError::not_found("outgoing payment"));
    }
    // The spec's view has `failed` but no way to tell a payment still
    // sending from a completed one; a header (which no schema constrains)
    // says it, for clients that follow a payment to its end.
    Ok((
        [(PAYMENT_STATE_HEADER, payment.state.as_str())],
        Json(OutgoingPaymentWire::new(
            &payment,
            &wallet,
            site.public_url(),
        )),
    ))
}

/// The header with an outgoing payment's state (`funding`, `sending`,
/// `completed`, `failed`, `cancelled`) on `GET /outgoing-payments/{id}`.
pub const PAYMENT_STATE_HEADER: &str = "opd-payment-state";

pub(super) async fn list_outgoing_payments(
    State(state): State<AppState>,
    site: RequestSite,
    query: QueryPairs,
    auth: Authorized<kind::OutgoingPayment, action::List>,
) -> ApiResult<Json<ListWire<OutgoingPaymentWire>>> {
    let services = &state.services;
    let (wallet_url, page) = parse_page(&query)?;
    own_wallet_url(&state, &site, &wallet_url).await?;
    let caller = auth.caller_for(&wallet_url)?;
    let (page, wallet) =
        opd_service::payments::outgoing::list(services, &wallet_url, caller.list_filter(), &page)
            .await?;
    let public = site.public_url();
    Ok(Json(ListWire::new(
        &page,
        |p| p.id.to_string(),
        |p| OutgoingPaymentWire::new(p, &wallet, public),
    )))
}

pub(super) async fn get_outgoing_payment_grant(
    State(state): State<AppState>,
    auth: Authorized<kind::OutgoingPayment, action::Create>,
) -> ApiResult<Json<GrantSpentWire>> {
    let services = &state.services;
    // The grant's spending belongs to no one wallet address.
    let caller = auth.caller()?;
    let spent =
        opd_service::payments::outgoing::grant_spent(services, &grant_context(&caller)).await?;
    let spent = spent.unwrap_or_default();
    Ok(Json(GrantSpentWire {
        spent_debit_amount: spent.debit.as_ref().map(opd_core::AmountWire::from),
        spent_receive_amount: spent.receive.as_ref().map(opd_core::AmountWire::from),
    }))
}
