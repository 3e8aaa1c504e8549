//! Interledger peers, the digests of the bearer tokens they present, and
//! their liquidity (ledger accounts of kind `peer`). Crediting an incoming
//! payment for a peer's packets is `crate::payments::credits`; the
//! liquidity's thresholds are [`super::liquidity`].

use async_trait::async_trait;
use opd_core::ledger::{AccountKind, LedgerOutcome};
use opd_core::peer::{overlaps, Peer, PeerOrigin, PeerOutgoing};
use opd_core::{PeerId, Timestamp};

use super::liquidity::{balance_before, liquidity_account, liquidity_fact};
use crate::ledger::{self, AccountRef};
use crate::platform::db::{num, params, Stmt, Tx};
use crate::platform::facts::Uncommitted;
use crate::platform::rows::{self, corrupt, Columns};
use crate::{SqlStore, StoreResult};

/// What the auto-peering listener may still grant, as the operator set it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AutoPeeringLimits {
    /// Auto-peered peers that may exist at once.
    pub max_peers: u64,
    /// Liquidity deposited into each new one, at most.
    pub liquidity_per_peer: u64,
    /// Liquidity deposited into all of them together, ever.
    pub liquidity_total: u64,
}

/// What became of [`PeerStore::create_auto_peer`]. Only `Created` changed
/// anything.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AutoPeerOutcome {
    /// The peer exists, with `deposited` of liquidity.
    Created { deposited: u64 },
    /// `max_peers` auto-peered peers exist.
    QuotaReached,
    /// The peer's address or a route is, is under, or is above an existing
    /// peer's route or static address.
    Overlaps,
}

/// Peers and their liquidity.
#[async_trait]
pub trait PeerStore: Send + Sync {
    /// Fails with `Conflict` when the name, the address or a token digest
    /// is taken.
    async fn create_peer(&self, peer: &Peer, token_digests: &[String]) -> StoreResult<()>;
    /// Replaces the peer's fields, and its tokens when given; `false` when
    /// there is no such peer.
    async fn update_peer(&self, peer: &Peer, token_digests: Option<&[String]>)
        -> StoreResult<bool>;
    /// Creates a peer for an auto-peering request, in one transaction that
    /// holds the auto-peering budget row (so requests on every node are
    /// taken one at a time): refused when `limits.max_peers` auto-peered
    /// peers exist or its routes overlap another peer's, otherwise created
    /// with a deposit of min(per peer, what is left of the total), which
    /// is added to the total granted. Fails with `Conflict` as
    /// [`create_peer`](Self::create_peer).
    async fn create_auto_peer(
        &self,
        peer: &Peer,
        token_digests: &[String],
        limits: AutoPeeringLimits,
        deposit_key: &str,
    ) -> StoreResult<AutoPeerOutcome>;
    /// Liquidity deposited into auto-peered peers so far.
    async fn auto_peering_granted(&self) -> StoreResult<u64>;
    /// Replaces the stored outgoing token when it is still `expected`
    /// (sealing tokens stored in clear without losing a concurrent change);
    /// whether it was replaced.
    async fn replace_peer_outgoing_token(
        &self,
        id: PeerId,
        expected: &str,
        token: &str,
    ) -> StoreResult<bool>;
    async fn get_peer(&self, id: PeerId) -> StoreResult<Option<Peer>>;
    async fn list_peers(&self) -> StoreResult<Vec<Peer>>;
    /// `false` when there is no such peer.
    async fn delete_peer(&self, id: PeerId) -> StoreResult<bool>;
    /// The peer presenting the token with this digest.
    async fn peer_by_token(&self, digest: &str) -> StoreResult<Option<Peer>>;
    /// Moves liquidity in (`deposit`) or out of the peer's account, once
    /// per idempotency key (as `LedgerStore::ledger_move`). A new move
    /// waits for the events of its facts (the balance crossing a
    /// threshold) to commit.
    async fn peer_liquidity_move<'s>(
        &'s self,
        peer: &Peer,
        amount: u64,
        deposit: bool,
        idempotency_key: &str,
        request_digest: &str,
        at: Timestamp,
    ) -> StoreResult<Uncommitted<'s, LedgerOutcome>>;
    /// The peer's liquidity balance.
    async fn peer_liquidity(&self, peer: &Peer) -> StoreResult<u64>;
}

const PEER_COLUMNS: &str = "CAST(id AS TEXT) AS id, name, static_ilp_address, asset_code, \
    CAST(asset_scale AS BIGINT) AS asset_scale, CAST(max_packet_amount AS TEXT) AS max_packet_amount, \
    routes, outgoing_endpoint, outgoing_token, CAST(liquidity_low AS TEXT) AS liquidity_low, \
    CAST(liquidity_high AS TEXT) AS liquidity_high, created_by, created_at, updated_at, \
    (SELECT COUNT(*) FROM peer_tokens t WHERE t.peer_id = peers.id) AS tokens";

static INSERT_PEER: Stmt = Stmt::new(&[
    "INSERT INTO peers (id, name, static_ilp_address, asset_code, asset_scale, \
     max_packet_amount, routes, outgoing_endpoint, outgoing_token, liquidity_low, liquidity_high, \
     created_by, created_at, updated_at) VALUES (?::uuid, ?, ?, ?, ?, ?::numeric, ?, ?, ?, \
     ?::numeric, ?::numeric, ?, ?, ?)",
]);
static AUTO_PEERING_FOR_UPDATE: Stmt = Stmt::new(&[
    "SELECT CAST(liquidity_granted AS TEXT) AS granted FROM auto_peering WHERE id = 1 FOR UPDATE",
]);
static AUTO_PEERING_GRANTED: Stmt = Stmt::new(&[
    "SELECT CAST(liquidity_granted AS TEXT) AS granted FROM auto_peering WHERE id = 1",
]);
static SET_AUTO_PEERING_GRANTED: Stmt =
    Stmt::new(&["UPDATE auto_peering SET liquidity_granted = ?::numeric WHERE id = 1"]);
static COUNT_AUTO_PEERS: Stmt =
    Stmt::new(&["SELECT COUNT(*) AS n FROM peers WHERE created_by = 'auto-peering'"]);
static ALL_ROUTES: Stmt = Stmt::new(&["SELECT static_ilp_address, routes FROM peers"]);
static REPLACE_OUTGOING_TOKEN: Stmt =
    Stmt::new(&["UPDATE peers SET outgoing_token = ? WHERE id = ?::uuid AND outgoing_token = ?"]);
static UPDATE_PEER: Stmt = Stmt::new(&[
    "UPDATE peers SET name = ?, static_ilp_address = ?, max_packet_amount = ?::numeric, \
     routes = ?, outgoing_endpoint = ?, outgoing_token = ?, liquidity_low = ?::numeric, \
     liquidity_high = ?::numeric, updated_at = ? WHERE id = ?::uuid",
]);
static PEER_BY_ID: Stmt = Stmt::new(&["SELECT ", PEER_COLUMNS, " FROM peers WHERE id = ?::uuid"]);
static LIST_PEERS: Stmt = Stmt::new(&["SELECT ", PEER_COLUMNS, " FROM peers ORDER BY name"]);
static DELETE_PEER: Stmt = Stmt::new(&["DELETE FROM peers WHERE id = ?::uuid"]);
static PEER_BY_TOKEN: Stmt = Stmt::new(&[
    "SELECT ",
    PEER_COLUMNS,
    " FROM peers WHERE id = (SELECT peer_id FROM peer_tokens WHERE digest = ?)",
]);
static INSERT_TOKEN: Stmt =
    Stmt::new(&["INSERT INTO peer_tokens (digest, peer_id) VALUES (?, ?::uuid)"]);
static DELETE_TOKENS: Stmt = Stmt::new(&["DELETE FROM peer_tokens WHERE peer_id = ?::uuid"]);
static BALANCE: Stmt =
    Stmt::new(&["SELECT CAST(balance AS TEXT) AS balance FROM ledger_accounts WHERE id = ?"]);

pub(crate) static STATEMENTS: &[&Stmt] = &[
    &INSERT_PEER,
    &AUTO_PEERING_FOR_UPDATE,
    &AUTO_PEERING_GRANTED,
    &SET_AUTO_PEERING_GRANTED,
    &COUNT_AUTO_PEERS,
    &ALL_ROUTES,
    &REPLACE_OUTGOING_TOKEN,
    &UPDATE_PEER,
    &PEER_BY_ID,
    &LIST_PEERS,
    &DELETE_PEER,
    &PEER_BY_TOKEN,
    &INSERT_TOKEN,
    &DELETE_TOKENS,
    &BALANCE,
];

fn peer_from_row(r: &impl Columns) -> StoreResult<Peer> {
    let routes: Vec<String> =
        serde_json::from_str(&r.text("routes")?).map_err(|_| corrupt("peer routes"))?;
    let outgoing = match (
        r.opt_text("outgoing_endpoint")?,
        r.opt_text("outgoing_token")?,
    ) {
        (Some(endpoint), Some(auth_token)) => Some(PeerOutgoing {
            endpoint,
            auth_token,
        }),
        _ => None,
    };
    Ok(Peer {
        id: PeerId::from_uuid(rows::uuid_from_text(&r.text("id")?)?),
        name: r.text("name")?,
        static_ilp_address: r.text("static_ilp_address")?,
        asset: rows::asset(&r.text("asset_code")?, r.int("asset_scale")?)?,
        max_packet_amount: rows::opt_u64_from_text(r.opt_text("max_packet_amount")?, "max packet")?,
        routes,
        outgoing,
        liquidity_low: rows::opt_u64_from_text(r.opt_text("liquidity_low")?, "liquidity low")?,
        liquidity_high: rows::opt_u64_from_text(r.opt_text("liquidity_high")?, "liquidity high")?,
        incoming_tokens: u32::try_from(r.int("tokens")?).map_err(|_| corrupt("token count"))?,
        created_by: PeerOrigin::parse(&r.text("created_by")?)
            .ok_or_else(|| corrupt("peer origin"))?,
        created_at: Timestamp::from_unix_millis(r.int("created_at")?),
        updated_at: Timestamp::from_unix_millis(r.int("updated_at")?),
    })
}

fn routes_text(peer: &Peer) -> String {
    serde_json::to_string(&peer.routes).unwrap_or_else(|_| "[]".into())
}

/// Inserts the peer and its token digests.
async fn insert_peer(tx: &mut Tx<'_>, p: &Peer, token_digests: &[String]) -> StoreResult<()> {
    let params = params![
        p.id.to_string(),
        &p.name,
        &p.static_ilp_address,
        p.asset.code.as_str(),
        p.asset.scale,
        p.max_packet_amount.map(|v| v.to_string()),
        routes_text(p),
        p.outgoing.as_ref().map(|o| o.endpoint.as_str()),
        p.outgoing.as_ref().map(|o| o.auth_token.as_str()),
        p.liquidity_low.map(|v| v.to_string()),
        p.liquidity_high.map(|v| v.to_string()),
        p.created_by.as_str(),
        p.created_at,
        p.updated_at,
    ];
    tx.execute(&INSERT_PEER, params).await?;
    insert_tokens(tx, p.id, token_digests).await
}

/// Whether a route or the static address of `peer` overlaps a route or
/// the static address of a peer already stored.
async fn overlaps_stored(tx: &mut Tx<'_>, peer: &Peer) -> StoreResult<bool> {
    let mine: Vec<&str> = peer
        .routes
        .iter()
        .map(String::as_str)
        .chain([peer.static_ilp_address.as_str()])
        .collect();
    for row in tx.fetch_all(&ALL_ROUTES, &[]).await? {
        let routes: Vec<String> =
            serde_json::from_str(&row.text("routes")?).map_err(|_| corrupt("peer routes"))?;
        let address = row.text("static_ilp_address")?;
        let theirs = routes.iter().map(String::as_str).chain([address.as_str()]);
        for t in theirs {
            if mine.iter().any(|m| overlaps(m, t)) {
                return Ok(true);
            }
        }
    }
    Ok(false)
}

fn parse_amount(text: &str, what: &str) -> StoreResult<u64> {
    text.parse().map_err(|_| corrupt(what))
}

async fn insert_tokens(tx: &mut Tx<'_>, peer: PeerId, digests: &[String]) -> StoreResult<()> {
    for d in digests {
        tx.execute(&INSERT_TOKEN, params![d, peer.to_string()])
            .await?;
    }
    Ok(())
}

#[async_trait]
impl PeerStore for SqlStore {
    async fn create_peer(&self, p: &Peer, token_digests: &[String]) -> StoreResult<()> {
        let mut tx = self.db.begin().await?;
        insert_peer(&mut tx, p, token_digests).await?;
        tx.commit().await
    }

    async fn create_auto_peer(
        &self,
        p: &Peer,
        token_digests: &[String],
        limits: AutoPeeringLimits,
        deposit_key: &str,
    ) -> StoreResult<AutoPeerOutcome> {
        let mut tx = self.db.begin().await?;
        // Held until commit: every node's auto-peering waits here.
        let row = tx.fetch_one(&AUTO_PEERING_FOR_UPDATE, &[]).await?;
        let granted = parse_amount(&row.text("granted")?, "auto-peering granted")?;
        let count = tx.fetch_one(&COUNT_AUTO_PEERS, &[]).await?.int("n")?;
        if u64::try_from(count).unwrap_or(0) >= limits.max_peers {
            return Ok(AutoPeerOutcome::QuotaReached);
        }
        if overlaps_stored(&mut tx, p).await? {
            return Ok(AutoPeerOutcome::Overlaps);
        }
        insert_peer(&mut tx, p, token_digests).await?;
        let left = limits.liquidity_total.saturating_sub(granted);
        let deposit = limits.liquidity_per_peer.min(left);
        if deposit > 0 {
            let owner = p.id.to_string();
            let account = AccountRef::new(AccountKind::Peer, &owner, &p.asset);
            // The key is new with the peer: this cannot be a repeat.
            let digest = format!("auto-peering|{owner}|{deposit}");
            let outcome = ledger::move_with_key(
                &mut tx,
                account,
                deposit,
                true,
                deposit_key,
                &digest,
                p.created_at,
            )
            .await?;
            if !matches!(outcome, LedgerOutcome::Posted(_)) {
                return Err(crate::StoreError::Corrupt(format!(
                    "the auto-peering deposit into {owner} was not posted: {outcome:?}"
                )));
            }
            let total = granted.saturating_add(deposit);
            tx.execute(&SET_AUTO_PEERING_GRANTED, params![num(total)])
                .await?;
        }
        tx.commit().await?;
        Ok(AutoPeerOutcome::Created { deposited: deposit })
    }

    async fn auto_peering_granted(&self) -> StoreResult<u64> {
        let row = self.db.read_opt(&AUTO_PEERING_GRANTED, &[]).await?;
        match row {
            Some(r) => parse_amount(&r.text("granted")?, "auto-peering granted"),
            None => Ok(0),
        }
    }

    async fn replace_peer_outgoing_token(
        &self,
        id: PeerId,
        expected: &str,
        token: &str,
    ) -> StoreResult<bool> {
        let changed = self
            .db
            .write(
                &REPLACE_OUTGOING_TOKEN,
                params![token, id.to_string(), expected],
            )
            .await?;
        Ok(changed > 0)
    }

    async fn update_peer(&self, p: &Peer, token_digests: Option<&[String]>) -> StoreResult<bool> {
        let params = params![
            &p.name,
            &p.static_ilp_address,
            p.max_packet_amount.map(|v| v.to_string()),
            routes_text(p),
            p.outgoing.as_ref().map(|o| o.endpoint.as_str()),
            p.outgoing.as_ref().map(|o| o.auth_token.as_str()),
            p.liquidity_low.map(|v| v.to_string()),
            p.liquidity_high.map(|v| v.to_string()),
            p.updated_at,
            p.id.to_string(),
        ];
        let mut tx = self.db.begin().await?;
        if tx.execute(&UPDATE_PEER, params).await? == 0 {
            return Ok(false);
        }
        if let Some(digests) = token_digests {
            tx.execute(&DELETE_TOKENS, params![p.id.to_string()])
                .await?;
            insert_tokens(&mut tx, p.id, digests).await?;
        }
        tx.commit().await?;
        Ok(true)
    }

    async fn get_peer(&self, id: PeerId) -> StoreResult<Option<Peer>> {
        let row = self
            .db
            .read_opt(&PEER_BY_ID, params![id.to_string()])
            .await?;
        row.as_ref().map(peer_from_row).transpose()
    }

    async fn list_peers(&self) -> StoreResult<Vec<Peer>> {
        let rows = self.db.read(&LIST_PEERS, &[]).await?;
        rows.iter().map(peer_from_row).collect()
    }

    async fn delete_peer(&self, id: PeerId) -> StoreResult<bool> {
        Ok(self.db.write(&DELETE_PEER, params![id.to_string()]).await? > 0)
    }

    async fn peer_by_token(&self, digest: &str) -> StoreResult<Option<Peer>> {
        let row = self.db.read_opt(&PEER_BY_TOKEN, params![digest]).await?;
        row.as_ref().map(peer_from_row).transpose()
    }

    async fn peer_liquidity_move<'s>(
        &'s self,
        peer: &Peer,
        amount: u64,
        deposit: bool,
        key: &str,
        request_digest: &str,
        at: Timestamp,
    ) -> StoreResult<Uncommitted<'s, LedgerOutcome>> {
        let owner = peer.id.to_string();
        let account = AccountRef::new(AccountKind::Peer, &owner, &peer.asset);
        let mut tx = self.db.begin().await?;
        if let Some(repeat) = ledger::repeated(&mut tx, key, request_digest).await? {
            return Ok(Uncommitted::settled(repeat));
        }
        let before = balance_before(&mut tx, peer).await?;
        let outcome =
            ledger::move_with_key(&mut tx, account, amount, deposit, key, request_digest, at)
                .await?;
        if !matches!(outcome, LedgerOutcome::Posted(_)) {
            return Ok(Uncommitted::settled(outcome));
        }
        let facts = liquidity_fact(&mut tx, peer, before).await?;
        Ok(Uncommitted::open(tx, outcome, facts.into_iter().collect()))
    }

    async fn peer_liquidity(&self, peer: &Peer) -> StoreResult<u64> {
        let row = self
            .db
            .read_opt(&BALANCE, params![liquidity_account(peer)])
            .await?;
        let Some(row) = row else {
            return Ok(0);
        };
        let balance: i128 = row
            .text("balance")?
            .parse()
            .map_err(|_| corrupt("balance"))?;
        u64::try_from(balance.max(0)).map_err(|_| corrupt("peer balance"))
    }
}
