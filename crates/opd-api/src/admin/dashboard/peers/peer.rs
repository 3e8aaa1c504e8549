//! One Interledger peer on the dashboard, to change or delete:
//!
//! - `GET /dashboard/peers/{id}`: its settings in a form;
//! - `POST /dashboard/peers/{id}`: changes them (its asset is for life;
//!   a token field left empty keeps the token it has);
//! - `POST /dashboard/peers/{id}/delete` `{confirm}`: deletes it, refused
//!   while it holds liquidity (withdraw what was settled first, so no
//!   balance is left without an owner).

use askama::Template;
use axum::extract::{Path, State};
use axum::http::{StatusCode, Uri};
use axum::response::Response;
use axum::Extension;
use opd_core::peer::{Peer, PeerOutgoing};
use opd_core::PeerId;
use opd_service::interledger::peers::{self, PeerInput};
use opd_service::ServiceError;

use crate::admin::dashboard::{done, done_message, failed, not_found, query_pairs, refusal};
use crate::admin::dashboard::{CheckedForm, Nav, Session, CSS};
use crate::admin::state::AdminState;
use crate::{display, pages};

/// The form's fields: the peer's settings, or what was sent when refused.
struct Fields {
    name: String,
    address: String,
    endpoint: String,
    routes: String,
    max_packet: String,
    low: String,
    high: String,
}

#[derive(Template)]
#[template(path = "dashboard/peer.html")]
struct PeerPage {
    page_title: &'static str,
    css_href: &'static str,
    nav: Nav,
    notice: Option<&'static str>,
    error: Option<String>,
    id: String,
    asset: String,
    liquidity: String,
    fields: Fields,
}

fn fields_of(p: &Peer) -> Fields {
    let money = |v: Option<u64>| {
        v.map(|v| display::decimal(v, p.asset.scale))
            .unwrap_or_default()
    };
    Fields {
        name: p.name.clone(),
        address: p.static_ilp_address.clone(),
        endpoint: p
            .outgoing
            .as_ref()
            .map(|o| o.endpoint.clone())
            .unwrap_or_default(),
        routes: p.routes.join(", "),
        max_packet: money(p.max_packet_amount),
        low: money(p.liquidity_low),
        high: money(p.liquidity_high),
    }
}

fn fields_sent(form: &CheckedForm) -> Fields {
    Fields {
        name: form.field("name"),
        address: form.field("address"),
        endpoint: form.field("endpoint"),
        routes: form.field("routes"),
        max_packet: form.field("max_packet"),
        low: form.field("low"),
        high: form.field("high"),
    }
}

/// The peer `id` names; the page to answer when there is none.
pub(super) async fn peer_of(state: &AdminState, id: &str) -> Result<Peer, Response> {
    let Some(id) = PeerId::parse(id) else {
        return Err(not_found("peer"));
    };
    match peers::get(&state.app.services, id).await {
        Ok(p) => Ok(p),
        Err(ServiceError::NotFound(_)) => Err(not_found("peer")),
        Err(e) => Err(failed(e)),
    }
}

async fn render(
    state: &AdminState,
    session: &Session,
    peer: &Peer,
    notice: Option<&'static str>,
    refused: Option<(String, Fields)>,
) -> Response {
    let liquidity = match peers::liquidity(&state.app.services, peer).await {
        Ok(v) => v,
        Err(e) => return failed(e),
    };
    let (status, error, fields) = match refused {
        Some((e, sent)) => (StatusCode::BAD_REQUEST, Some(e), sent),
        None => (StatusCode::OK, None, fields_of(peer)),
    };
    pages::render(
        status,
        &PeerPage {
            page_title: "Peer",
            css_href: CSS,
            nav: Nav::new("/dashboard/peers", session),
            notice,
            error,
            id: peer.id.to_string(),
            asset: format!("{} (scale {})", peer.asset.code, peer.asset.scale),
            liquidity: display::amount(liquidity, peer.asset.code.as_str(), peer.asset.scale),
            fields,
        },
    )
}

pub(crate) async fn page(
    State(state): State<AdminState>,
    Extension(session): Extension<Session>,
    Path(id): Path<String>,
    uri: Uri,
) -> Response {
    match peer_of(&state, &id).await {
        Ok(peer) => {
            render(
                &state,
                &session,
                &peer,
                done_message(&query_pairs(&uri)),
                None,
            )
            .await
        }
        Err(response) => response,
    }
}

/// An amount of the peer's asset in a field; empty is none.
fn optional_amount(text: &str, peer: &Peer, what: &str) -> Result<Option<u64>, String> {
    match text.trim() {
        "" => Ok(None),
        t => display::parse_decimal(t, peer.asset.scale)
            .map(Some)
            .ok_or_else(|| format!("{what} is not an amount in {}.", peer.asset.code)),
    }
}

/// Where it sends packets: none when the endpoint is empty; a new token,
/// or the one it has when the field is left empty.
fn outgoing(peer: &Peer, endpoint: &str, token: String) -> Result<Option<PeerOutgoing>, String> {
    let endpoint = endpoint.trim();
    if endpoint.is_empty() {
        return Ok(None);
    }
    let auth_token = match (token.is_empty(), &peer.outgoing) {
        (false, _) => token,
        (true, Some(o)) => o.auth_token.clone(),
        (true, None) => return Err("Give the token we present at its endpoint.".into()),
    };
    Ok(Some(PeerOutgoing {
        endpoint: endpoint.to_owned(),
        auth_token,
    }))
}

/// The form as a change of the peer: what `PATCH /peers/{id}` takes.
fn change(form: &CheckedForm, sent: &Fields, peer: &Peer) -> Result<PeerInput, String> {
    let routes: Vec<String> = sent
        .routes
        .split(',')
        .map(str::trim)
        .filter(|r| !r.is_empty())
        .map(str::to_owned)
        .collect();
    let address = sent.address.trim().to_owned();
    let incoming = form.field("incoming_token");
    Ok(PeerInput {
        name: Some(sent.name.trim().to_owned()),
        routes: Some(if routes.is_empty() {
            vec![address.clone()]
        } else {
            routes
        }),
        static_ilp_address: Some(address),
        max_packet_amount: Some(optional_amount(
            &sent.max_packet,
            peer,
            "The largest packet",
        )?),
        liquidity_low: Some(optional_amount(&sent.low, peer, "The low mark")?),
        liquidity_high: Some(optional_amount(&sent.high, peer, "The high mark")?),
        outgoing: Some(outgoing(
            peer,
            &sent.endpoint,
            form.field("outgoing_token"),
        )?),
        incoming_tokens: (!incoming.is_empty()).then(|| vec![incoming]),
        asset: None,
    })
}

/// `POST /dashboard/peers/{id}`: changes the peer; a refused form comes
/// back with the reason and its fields (never its tokens).
pub(crate) async fn update(
    State(state): State<AdminState>,
    Path(id): Path<String>,
    form: CheckedForm,
) -> Response {
    let peer = match peer_of(&state, &id).await {
        Ok(p) => p,
        Err(response) => return response,
    };
    let sent = fields_sent(&form);
    let result = match change(&form, &sent, &peer) {
        Ok(input) => peers::update(&state.app.services, peer.id, &input)
            .await
            .map_err(refusal),
        Err(message) => Err(Ok(message)),
    };
    match result {
        Ok(_) => done(&format!("/dashboard/peers/{}", peer.id), "peer_updated"),
        Err(Ok(message)) => render(&state, &form.session, &peer, None, Some((message, sent))).await,
        Err(Err(e)) => failed(e),
    }
}

/// `POST /dashboard/peers/{id}/delete`: deletes a peer holding no
/// liquidity.
pub(crate) async fn delete(
    State(state): State<AdminState>,
    Path(id): Path<String>,
    form: CheckedForm,
) -> Response {
    let peer = match peer_of(&state, &id).await {
        Ok(p) => p,
        Err(response) => return response,
    };
    if form.field("confirm") != "yes" {
        let reason = "Tick the box to confirm the deletion.".to_owned();
        return render(
            &state,
            &form.session,
            &peer,
            None,
            Some((reason, fields_of(&peer))),
        )
        .await;
    }
    match peers::delete(&state.app.services, peer.id)
        .await
        .map_err(refusal)
    {
        Ok(()) => done("/dashboard/peers", "peer_deleted"),
        Err(Ok(reason)) => {
            render(
                &state,
                &form.session,
                &peer,
                None,
                Some((reason, fields_of(&peer))),
            )
            .await
        }
        Err(Err(e)) => failed(e),
    }
}
