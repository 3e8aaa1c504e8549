//! `GET /dashboard/peers`: the Interledger peers with their liquidity;
//! `POST /dashboard/peers`: a new peer; `POST /dashboard/peers/{id}/liquidity`:
//! a deposit or withdrawal of a peer's liquidity (one peer's page, to
//! change or delete it, is [`peer`]).
//!
//! A peer's liquidity has one meaning everywhere (`docs/peering.md`'s):
//! what the peer may still send us before the operators settle.

pub(super) mod peer;

use askama::Template;
use axum::extract::{Path, State};
use axum::http::Uri;
use axum::response::Response;
use axum::Extension;
use opd_core::peer::PeerOutgoing;
use opd_core::Asset;
use opd_service::interledger::peers::{self, PeerInput};
use opd_service::ServiceError;

use crate::admin::dashboard::{done, done_message, failed, form_state, query_pairs, refusal};
use crate::admin::dashboard::{CheckedForm, Nav, Session, CSS};
use crate::admin::state::AdminState;
use crate::{display, pages};

struct PeerRow {
    id: String,
    name: String,
    address: String,
    asset: String,
    liquidity: String,
    low: String,
    endpoint: String,
    routes: String,
    /// Who created it: `operator` or `auto-peering`.
    created_by: &'static str,
}

/// The create form's fields, kept when the form is refused.
#[derive(Default)]
struct NewPeer {
    name: String,
    address: String,
    asset_code: String,
    asset_scale: String,
    endpoint: String,
    routes: String,
    max_packet: String,
}

#[derive(Template)]
#[template(path = "dashboard/peers.html")]
struct PeersPage {
    page_title: &'static str,
    css_href: &'static str,
    nav: Nav,
    notice: Option<&'static str>,
    /// Why the create form was refused.
    error: Option<String>,
    form: NewPeer,
    rows: Vec<PeerRow>,
    /// Sent back with a liquidity form, so that sending it twice moves the
    /// money once.
    idempotency: String,
}

async fn render(
    state: &AdminState,
    session: &Session,
    notice: Option<&'static str>,
    refused: Option<(String, NewPeer)>,
) -> Response {
    let services = &state.app.services;
    let list = match peers::list(services).await {
        Ok(l) => l,
        Err(e) => return failed(e),
    };
    let mut rows = Vec::with_capacity(list.len());
    for p in &list {
        let liquidity = match peers::liquidity(services, p).await {
            Ok(v) => v,
            Err(e) => return failed(e),
        };
        let money = |v: u64| display::amount(v, p.asset.code.as_str(), p.asset.scale);
        rows.push(PeerRow {
            id: p.id.to_string(),
            name: p.name.clone(),
            address: p.static_ilp_address.clone(),
            asset: format!("{} (scale {})", p.asset.code, p.asset.scale),
            liquidity: money(liquidity),
            low: p.liquidity_low.map(money).unwrap_or_default(),
            // The endpoint only: its token is a secret.
            endpoint: p
                .outgoing
                .as_ref()
                .map(|o| o.endpoint.clone())
                .unwrap_or_else(|| "none (receives only)".into()),
            routes: p.routes.join(", "),
            created_by: p.created_by.as_str(),
        });
    }
    let (status, error, form) = form_state(refused);
    pages::render(
        status,
        &PeersPage {
            page_title: "Peers",
            css_href: CSS,
            nav: Nav::new("/dashboard/peers", session),
            notice,
            error,
            form,
            rows,
            idempotency: crate::csrf::random_value(services),
        },
    )
}

pub(crate) async fn page(
    State(state): State<AdminState>,
    Extension(session): Extension<Session>,
    uri: Uri,
) -> Response {
    render(&state, &session, done_message(&query_pairs(&uri)), None).await
}

/// The form as a new peer: what the admin API's `POST /peers` takes, with
/// the largest packet in the asset's units.
fn input(form: &CheckedForm, kept: &NewPeer) -> Result<PeerInput, String> {
    let scale: i64 = kept
        .asset_scale
        .trim()
        .parse()
        .map_err(|_| "The asset scale is a whole number from 0 to 255.".to_owned())?;
    let asset = Asset::parse(kept.asset_code.trim(), scale).map_err(|e| format!("Asset: {e}."))?;
    let max_packet_amount = match kept.max_packet.trim() {
        "" => None,
        text => Some(Some(display::parse_decimal(text, asset.scale).ok_or_else(
            || format!("The largest packet is not an amount in {}.", asset.code),
        )?)),
    };
    let routes: Vec<String> = kept
        .routes
        .split(',')
        .map(str::trim)
        .filter(|r| !r.is_empty())
        .map(str::to_owned)
        .collect();
    let (endpoint, outgoing_token) = (kept.endpoint.trim(), form.field("outgoing_token"));
    let outgoing = match (endpoint.is_empty(), outgoing_token.is_empty()) {
        (true, true) => None,
        (false, false) => Some(Some(PeerOutgoing {
            endpoint: endpoint.to_owned(),
            auth_token: outgoing_token,
        })),
        _ => {
            return Err("Give both the endpoint and the token we present there, or neither.".into())
        }
    };
    let incoming = form.field("incoming_token");
    Ok(PeerInput {
        name: Some(kept.name.trim().to_owned()),
        static_ilp_address: Some(kept.address.trim().to_owned()),
        asset: Some(asset),
        max_packet_amount,
        routes: (!routes.is_empty()).then_some(routes),
        incoming_tokens: (!incoming.is_empty()).then(|| vec![incoming]),
        outgoing,
        ..PeerInput::default()
    })
}

/// `POST /dashboard/peers`: creates a peer; a refused form comes back with
/// the reason and its fields (never its tokens).
pub(crate) async fn create(State(state): State<AdminState>, form: CheckedForm) -> Response {
    let kept = NewPeer {
        name: form.field("name"),
        address: form.field("address"),
        asset_code: form.field("asset_code"),
        asset_scale: form.field("asset_scale"),
        endpoint: form.field("endpoint"),
        routes: form.field("routes"),
        max_packet: form.field("max_packet"),
    };
    let result = match input(&form, &kept) {
        Ok(input) => peers::create(&state.app.services, &input)
            .await
            .map_err(refusal),
        Err(message) => Err(Ok(message)),
    };
    match result {
        Ok(_) => done("/dashboard/peers", "peer_created"),
        Err(Ok(message)) => render(&state, &form.session, None, Some((message, kept))).await,
        Err(Err(e)) => failed(e),
    }
}

/// `POST /dashboard/peers/{id}/liquidity` `{amount, direction, idempotency}`:
/// a deposit or withdrawal of the peer's liquidity, in the peer's asset as
/// a decimal (`250.00`), once per idempotency value.
pub(crate) async fn move_liquidity(
    State(state): State<AdminState>,
    Path(id): Path<String>,
    form: CheckedForm,
) -> Response {
    let services = &state.app.services;
    let peer = match peer::peer_of(&state, &id).await {
        Ok(p) => p,
        Err(response) => return response,
    };
    let Some(amount) = display::parse_decimal(&form.field("amount"), peer.asset.scale) else {
        return done("/dashboard/peers", "bad_amount");
    };
    let deposit = form.field("direction") != "withdraw";
    let key = form.field("idempotency");
    match peers::move_liquidity(services, &peer, amount, deposit, &key).await {
        Ok(_) if deposit => done("/dashboard/peers", "deposited"),
        Ok(_) => done("/dashboard/peers", "withdrawn"),
        Err(e @ (ServiceError::Internal(_) | ServiceError::Unavailable(_))) => failed(e),
        Err(_) => done("/dashboard/peers", "liquidity_refused"),
    }
}
