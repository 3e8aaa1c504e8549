//! Managing Interledger peers (admin API and CLI): their addresses,
//! routes, bearer tokens and liquidity.
//!
//! Incoming tokens are kept only as SHA-256 digests (a leaked database
//! cannot be used to send packets as a peer). The outgoing token, which
//! opd must present, is stored sealed under the secrets key (as the server
//! secrets, [`crate::platform::secrets`]) and bound to its peer's id: the store never
//! sees it in clear. It is sealed here before every write and opened here
//! after every read, so callers (the connector among them) get it in
//! clear. Tokens stored in clear by an earlier version are sealed at start
//! ([`seal_stored_outgoing_tokens`]) and read as clear until then.
//!
//! Auto-peering (`super::peering`) creates and renews peers through the
//! same checks.

use opd_core::ledger::Transfer;
use opd_core::peer::{Peer, PeerOrigin, PeerOutgoing};
use opd_core::{Asset, PeerId, Random};
use opd_ilp::IlpAddress;
use opd_store::{Store, StoreError};

use crate::platform::changes::Change;
use crate::webhooks::Stamp;

use crate::platform::secrets::{self, SecretsKey};
use crate::{ServiceError, Services};
/// The operator's limits on auto-peering, as the store enforces them.
pub use opd_store::AutoPeeringLimits;

/// What a sealed outgoing token is bound to: its peer.
fn outgoing_context(id: PeerId) -> String {
    format!("peer_outgoing_token:{id}")
}

/// The peer as stored: its outgoing token sealed.
pub(super) fn sealed(services: &Services, peer: &Peer) -> Peer {
    let mut stored = peer.clone();
    if let Some(o) = &mut stored.outgoing {
        o.auth_token = secrets::seal_value(
            &services.config.secrets_key,
            &outgoing_context(peer.id),
            o.auth_token.as_bytes(),
            services.random.as_ref(),
        );
    }
    stored
}

/// The stored outgoing token in clear: opened when sealed, as stored when
/// an earlier version stored it in clear; and whether it must be sealed
/// (again).
fn open_token(key: &SecretsKey, id: PeerId, stored: &str) -> Result<(String, bool), ServiceError> {
    if !secrets::looks_sealed(stored) {
        return Ok((stored.to_owned(), true));
    }
    let (plain, previous) =
        secrets::open_value(key, &outgoing_context(id), stored).ok_or_else(|| {
            ServiceError::Internal(format!(
                "the outgoing token of peer {id} cannot be opened with the secrets key: every \
                 node must be given the same key (--secrets-key-file or OPD_SECRETS_KEY), and a \
                 rotated one with --secrets-key-previous-file"
            ))
        })?;
    let clear =
        String::from_utf8(plain).map_err(|_| ServiceError::corrupt("peer outgoing token"))?;
    Ok((clear, previous))
}

/// The peer as callers see it: its outgoing token in clear.
fn opened(services: &Services, mut peer: Peer) -> Result<Peer, ServiceError> {
    if let Some(o) = &mut peer.outgoing {
        o.auth_token = open_token(&services.config.secrets_key, peer.id, &o.auth_token)?.0;
    }
    Ok(peer)
}

/// Seals the outgoing tokens stored in clear (by an earlier version) or
/// under the previous secrets key, at start; how many it sealed. Each is
/// replaced only if unchanged since read, so a concurrent change (another
/// node starting, an operator's update) is kept.
pub async fn seal_stored_outgoing_tokens(
    store: &dyn Store,
    random: &dyn Random,
    key: &SecretsKey,
) -> Result<u32, ServiceError> {
    let mut sealed_now = 0;
    for peer in store.list_peers().await? {
        let Some(o) = &peer.outgoing else {
            continue;
        };
        let (clear, reseal) = open_token(key, peer.id, &o.auth_token)?;
        if !reseal {
            continue;
        }
        let token = secrets::seal_value(key, &outgoing_context(peer.id), clear.as_bytes(), random);
        if store
            .replace_peer_outgoing_token(peer.id, &o.auth_token, &token)
            .await?
        {
            sealed_now += 1;
        }
    }
    Ok(sealed_now)
}

/// A peer as the operator describes it; `None` fields keep their value on
/// update (and take their default on create).
#[derive(Debug, Clone, Default)]
pub struct PeerInput {
    pub name: Option<String>,
    pub static_ilp_address: Option<String>,
    /// Only on create: a peering has one asset for life.
    pub asset: Option<Asset>,
    /// `Some(None)` removes the limit.
    pub max_packet_amount: Option<Option<u64>>,
    pub routes: Option<Vec<String>>,
    pub incoming_tokens: Option<Vec<String>>,
    /// `Some(None)` removes the outgoing endpoint.
    pub outgoing: Option<Option<PeerOutgoing>>,
    pub liquidity_low: Option<Option<u64>>,
    pub liquidity_high: Option<Option<u64>>,
}

/// Incoming bearer tokens are stored under the same digest as GNAP
/// tokens (lower-case hex SHA-256).
pub use opd_gnap::token_digest;

fn invalid(message: impl Into<String>) -> ServiceError {
    ServiceError::InvalidRequest(message.into())
}

fn address(text: &str, what: &str) -> Result<String, ServiceError> {
    IlpAddress::new(text)
        .map(|a| a.as_str().to_owned())
        .map_err(|_| invalid(format!("{what} is not a valid ILP address: {text:?}")))
}

/// A route is an address prefix: an address, or a bare allocation scheme
/// such as `test` or `g` (everything in it).
fn route(text: &str) -> Result<String, ServiceError> {
    if IlpAddress::new(text).is_ok() || IlpAddress::new(format!("{text}.x")).is_ok() {
        return Ok(text.to_owned());
    }
    Err(invalid(format!(
        "each route must be an ILP address prefix: {text:?}"
    )))
}

fn check_name(name: &str) -> Result<(), ServiceError> {
    if name.trim().is_empty() || name.len() > 100 {
        return Err(invalid("name must be 1 to 100 characters"));
    }
    Ok(())
}

fn token_digests(tokens: &[String]) -> Result<Vec<String>, ServiceError> {
    let mut digests = Vec::with_capacity(tokens.len());
    for t in tokens {
        if t.is_empty() || t.len() > 512 || t.chars().any(char::is_whitespace) {
            return Err(invalid(
                "each incoming auth token must be 1 to 512 characters without spaces",
            ));
        }
        let d = token_digest(t);
        if !digests.contains(&d) {
            digests.push(d);
        }
    }
    Ok(digests)
}

fn check_outgoing(o: &PeerOutgoing) -> Result<(), ServiceError> {
    let url = url::Url::parse(&o.endpoint)
        .map_err(|_| invalid("http.outgoing.endpoint must be an absolute URL"))?;
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
        return Err(invalid(
            "http.outgoing.endpoint must be an http or https URL",
        ));
    }
    if o.auth_token.is_empty() || o.auth_token.len() > 512 {
        return Err(invalid(
            "http.outgoing.authToken must be 1 to 512 characters",
        ));
    }
    Ok(())
}

/// Applies `input` to `peer` (all checks included).
fn apply(peer: &mut Peer, input: &PeerInput) -> Result<Option<Vec<String>>, ServiceError> {
    if let Some(name) = &input.name {
        check_name(name)?;
        peer.name = name.clone();
    }
    if let Some(a) = &input.static_ilp_address {
        peer.static_ilp_address = address(a, "staticIlpAddress")?;
    }
    if let Some(m) = input.max_packet_amount {
        if m == Some(0) {
            return Err(invalid("maxPacketAmount must be positive"));
        }
        peer.max_packet_amount = m;
    }
    if let Some(routes) = &input.routes {
        peer.routes = routes.iter().map(|r| route(r)).collect::<Result<_, _>>()?;
    }
    if let Some(o) = &input.outgoing {
        if let Some(o) = o {
            check_outgoing(o)?;
        }
        peer.outgoing = o.clone();
    }
    if let Some(l) = input.liquidity_low {
        peer.liquidity_low = l;
    }
    if let Some(h) = input.liquidity_high {
        peer.liquidity_high = h;
    }
    if let (Some(low), Some(high)) = (peer.liquidity_low, peer.liquidity_high) {
        if low >= high {
            return Err(invalid(
                "liquidityThreshold.low must be below liquidityThreshold.high",
            ));
        }
    }
    let digests = input
        .incoming_tokens
        .as_deref()
        .map(token_digests)
        .transpose()?;
    if let Some(d) = &digests {
        peer.incoming_tokens = u32::try_from(d.len()).unwrap_or(u32::MAX);
    }
    Ok(digests)
}

fn conflict(e: StoreError) -> ServiceError {
    match e {
        StoreError::Conflict(_) => ServiceError::Conflict {
            code: "peer_exists",
            message: "a peer with this name, ILP address or incoming token exists".into(),
        },
        other => other.into(),
    }
}

/// A new peer from `input` (all checks included), and its token digests.
pub(super) fn new_peer(
    services: &Services,
    input: &PeerInput,
    origin: PeerOrigin,
) -> Result<(Peer, Vec<String>), ServiceError> {
    let now = services.clock.now();
    let asset = input
        .asset
        .clone()
        .ok_or_else(|| invalid("asset is required"))?;
    let name = input
        .name
        .clone()
        .ok_or_else(|| invalid("name is required"))?;
    let static_address = input
        .static_ilp_address
        .clone()
        .ok_or_else(|| invalid("staticIlpAddress is required"))?;
    let mut peer = Peer {
        id: PeerId::new(now, services.random.as_ref()),
        name,
        static_ilp_address: address(&static_address, "staticIlpAddress")?,
        asset,
        max_packet_amount: None,
        routes: Vec::new(),
        outgoing: None,
        liquidity_low: None,
        liquidity_high: None,
        incoming_tokens: 0,
        created_by: origin,
        created_at: now,
        updated_at: now,
    };
    let digests = apply(&mut peer, input)?.unwrap_or_default();
    if input.routes.is_none() {
        peer.routes = vec![peer.static_ilp_address.clone()];
    }
    Ok((peer, digests))
}

/// Creates a peer.
pub async fn create(services: &Services, input: &PeerInput) -> Result<Peer, ServiceError> {
    let (peer, digests) = new_peer(services, input, PeerOrigin::Operator)?;
    services
        .store
        .create_peer(&sealed(services, &peer), &digests)
        .await
        .map_err(conflict)?;
    services.changed(Change::Peers).await;
    Ok(peer)
}

/// Changes a peer.
pub async fn update(
    services: &Services,
    id: PeerId,
    input: &PeerInput,
) -> Result<Peer, ServiceError> {
    if input.asset.is_some() {
        return Err(invalid(
            "the asset of a peering cannot change: create another peer",
        ));
    }
    let mut peer = get(services, id).await?;
    let digests = apply(&mut peer, input)?;
    peer.updated_at = services.clock.now();
    let found = services
        .store
        .update_peer(&sealed(services, &peer), digests.as_deref())
        .await
        .map_err(conflict)?;
    if !found {
        return Err(ServiceError::NotFound("peer"));
    }
    services.changed(Change::Peers).await;
    Ok(peer)
}

pub async fn get(services: &Services, id: PeerId) -> Result<Peer, ServiceError> {
    let peer = services
        .store
        .get_peer(id)
        .await?
        .ok_or(ServiceError::NotFound("peer"))?;
    opened(services, peer)
}

/// Every peer, outgoing tokens in clear.
pub async fn list(services: &Services) -> Result<Vec<Peer>, ServiceError> {
    let all = services.store.list_peers().await?;
    all.into_iter().map(|p| opened(services, p)).collect()
}

/// Deletes a peer whose liquidity is zero (what it holds must be withdrawn
/// first, so no balance is left without an owner).
pub async fn delete(services: &Services, id: PeerId) -> Result<(), ServiceError> {
    let peer = get(services, id).await?;
    let balance = services.store.peer_liquidity(&peer).await?;
    if balance > 0 {
        return Err(ServiceError::Conflict {
            code: "peer_has_liquidity",
            message: format!("the peer still has {balance} of liquidity: withdraw it first"),
        });
    }
    if !services.store.delete_peer(id).await? {
        return Err(ServiceError::NotFound("peer"));
    }
    services.changed(Change::Peers).await;
    Ok(())
}

/// The peer's liquidity balance.
pub async fn liquidity(services: &Services, peer: &Peer) -> Result<u64, ServiceError> {
    Ok(services.store.peer_liquidity(peer).await?)
}

/// Deposits or withdraws liquidity, once per idempotency key: the
/// transfer, and whether it is new.
pub async fn move_liquidity(
    services: &Services,
    peer: &Peer,
    amount: u64,
    deposit: bool,
    idempotency_key: &str,
) -> Result<(Transfer, bool), ServiceError> {
    crate::ledger::check_movement(amount, idempotency_key)?;
    let kind = if deposit { "deposit" } else { "withdrawal" };
    // Keys share one namespace with wallet movements: prefixed apart.
    let key = format!("peer-{kind}:{}:{idempotency_key}", peer.id);
    let digest = token_digest(&format!("peer|{kind}|{}|{}|{amount}", peer.id, peer.asset));
    let at = services.clock.now();
    let moved = services
        .store
        .peer_liquidity_move(peer, amount, deposit, &key, &digest, at)
        .await?;
    let sites = services.sites.table().await?;
    let events = crate::webhooks::of_facts(Stamp::of(services, &sites), moved.facts(), None)?;
    let outcome = moved.commit(&events).await?;
    crate::ledger::transfer_of(outcome, &peer.asset, amount)
}

/// The peer's transfers, newest first.
pub async fn transfers(
    services: &Services,
    peer: &Peer,
    limit: i64,
) -> Result<Vec<Transfer>, ServiceError> {
    let account = opd_core::ledger::AccountKind::Peer.account_id(&peer.id.to_string(), &peer.asset);
    Ok(services.store.ledger_transfers_of(&account, limit).await?)
}

/// The peer with this incoming bearer token, from the cache when fresh.
pub async fn by_token(services: &Services, token: &str) -> Result<Option<Peer>, ServiceError> {
    let digest = token_digest(token);
    if let Some(p) = services.interledger.peers.get(&digest) {
        return Ok(Some(p));
    }
    let found = services
        .store
        .peer_by_token(&digest)
        .await?
        .map(|p| opened(services, p))
        .transpose()?;
    if let Some(p) = &found {
        services.interledger.peers.insert(digest, p.clone());
    }
    Ok(found)
}

#[cfg(test)]
mod tests;
