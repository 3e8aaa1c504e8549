//! Two-phase transfers of forwarded ILP packets (shaped like TigerBeetle's
//! pending/post/void): the amount leaves the incoming peer's liquidity for
//! a hold account before the packet goes on, and is then posted to the
//! outgoing peer (fulfilled) or voided back (rejected, expired). The hold
//! row's state moves from `pending` exactly once, so a late answer and the
//! expiry sweep cannot both settle it.

use async_trait::async_trait;
use opd_core::ledger::{AccountKind, PostError, TransferKind};
use opd_core::peer::Hold;
use opd_core::{Asset, PeerId, Timestamp};

use crate::ledger::{post, AccountRef, Posting};
use crate::platform::db::{num, params, Stmt, Tx};
use crate::platform::rows::{self, corrupt, Columns};
use crate::{SqlStore, StoreResult};

/// What became of a hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HoldOutcome {
    Held,
    /// The incoming peer's liquidity holds only `available`.
    Insufficient {
        available: u64,
    },
    /// A balance would pass u64::MAX.
    Overflow,
}

/// Forwarded packets' holds.
#[async_trait]
pub trait HoldStore: Send + Sync {
    /// Holds `hold.amount_in` of the incoming peer's liquidity.
    async fn ilp_hold(&self, hold: &Hold) -> StoreResult<HoldOutcome>;
    /// Posts (`fulfilled`) or voids a pending hold; `false` when it was
    /// not pending any more (settled already, by an answer or the sweep).
    async fn ilp_settle(&self, id: &str, fulfilled: bool, at: Timestamp) -> StoreResult<bool>;
    /// Pending holds that expired before `before`, oldest first.
    async fn expired_holds(&self, before: Timestamp, limit: i64) -> StoreResult<Vec<String>>;
}

const HOLD_COLUMNS: &str = "id, incoming_peer, outgoing_peer, in_asset_code, \
    CAST(in_asset_scale AS BIGINT) AS in_asset_scale, out_asset_code, \
    CAST(out_asset_scale AS BIGINT) AS out_asset_scale, CAST(amount_in AS TEXT) AS amount_in, \
    CAST(amount_out AS TEXT) AS amount_out, expires_at, created_at";

static INSERT_HOLD: Stmt = Stmt::new(&[
    "INSERT INTO ilp_holds (id, incoming_peer, outgoing_peer, in_asset_code, in_asset_scale, \
     out_asset_code, out_asset_scale, amount_in, amount_out, expires_at, state, created_at, \
     updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?::numeric, ?::numeric, ?, 'pending', ?, ?)",
]);
static SETTLE_HOLD: Stmt = Stmt::new(&[
    "UPDATE ilp_holds SET state = ?, updated_at = ? WHERE id = ? AND state = 'pending' \
     RETURNING ",
    HOLD_COLUMNS,
]);
static EXPIRED_HOLDS: Stmt = Stmt::new(&[
    "SELECT id FROM ilp_holds WHERE state = 'pending' AND expires_at < ? \
     ORDER BY expires_at LIMIT ?",
]);

pub(crate) static STATEMENTS: &[&Stmt] = &[&INSERT_HOLD, &SETTLE_HOLD, &EXPIRED_HOLDS];

fn hold_from_row(r: &impl Columns) -> StoreResult<Hold> {
    let peer = |col: &str| -> StoreResult<PeerId> {
        Ok(PeerId::from_uuid(rows::uuid_from_text(&r.text(col)?)?))
    };
    Ok(Hold {
        id: r.text("id")?,
        incoming_peer: peer("incoming_peer")?,
        incoming_asset: rows::asset(&r.text("in_asset_code")?, r.int("in_asset_scale")?)?,
        outgoing_peer: peer("outgoing_peer")?,
        outgoing_asset: rows::asset(&r.text("out_asset_code")?, r.int("out_asset_scale")?)?,
        amount_in: rows::u64_from_text(&r.text("amount_in")?, "hold amount")?,
        amount_out: rows::u64_from_text(&r.text("amount_out")?, "hold amount")?,
        expires_at: Timestamp::from_unix_millis(r.int("expires_at")?),
        created_at: Timestamp::from_unix_millis(r.int("created_at")?),
    })
}

async fn move_money(
    tx: &mut Tx<'_>,
    moves: &[(AccountRef<'_>, AccountRef<'_>, u64, TransferKind)],
    reference: &str,
    at: Timestamp,
) -> StoreResult<Result<(), PostError>> {
    for &(debit, credit, amount, kind) in moves {
        let posting = Posting {
            debit,
            credit,
            amount,
            kind,
            reference: Some(reference),
            key: None,
            at,
        };
        if let Err(e) = post(tx, posting).await? {
            return Ok(Err(e));
        }
    }
    Ok(Ok(()))
}

fn peer_account<'a>(owner: &'a str, asset: &'a Asset) -> AccountRef<'a> {
    AccountRef::new(AccountKind::Peer, owner, asset)
}

#[async_trait]
impl HoldStore for SqlStore {
    async fn ilp_hold(&self, h: &Hold) -> StoreResult<HoldOutcome> {
        let incoming = h.incoming_peer.to_string();
        let params = params![
            &h.id,
            &incoming,
            h.outgoing_peer.to_string(),
            h.incoming_asset.code.as_str(),
            h.incoming_asset.scale,
            h.outgoing_asset.code.as_str(),
            h.outgoing_asset.scale,
            num(h.amount_in),
            num(h.amount_out),
            h.expires_at,
            h.created_at,
            h.created_at,
        ];
        let mut tx = self.db.begin().await?;
        tx.execute(&INSERT_HOLD, params).await?;
        let held = AccountRef::new(AccountKind::Hold, &h.id, &h.incoming_asset);
        let from = peer_account(&incoming, &h.incoming_asset);
        let moves = [(from, held, h.amount_in, TransferKind::Hold)];
        match move_money(&mut tx, &moves, &h.id, h.created_at).await? {
            Ok(()) => {
                tx.commit().await?;
                Ok(HoldOutcome::Held)
            }
            Err(PostError::Insufficient { available }) => {
                Ok(HoldOutcome::Insufficient { available })
            }
            Err(PostError::Overflow) => Ok(HoldOutcome::Overflow),
        }
    }

    async fn ilp_settle(&self, id: &str, fulfilled: bool, at: Timestamp) -> StoreResult<bool> {
        let state = if fulfilled { "posted" } else { "voided" };
        let mut tx = self.db.begin().await?;
        let Some(row) = tx.fetch_opt(&SETTLE_HOLD, params![state, at, id]).await? else {
            return Ok(false);
        };
        let h = hold_from_row(&row)?;
        let (incoming, outgoing) = (h.incoming_peer.to_string(), h.outgoing_peer.to_string());
        let held = AccountRef::new(AccountKind::Hold, &h.id, &h.incoming_asset);
        let back = peer_account(&incoming, &h.incoming_asset);
        let next = peer_account(&outgoing, &h.outgoing_asset);
        let out = AccountRef::settlement(&h.incoming_asset);
        let inn = AccountRef::settlement(&h.outgoing_asset);
        let moves: Vec<_> = match (fulfilled, h.incoming_asset == h.outgoing_asset) {
            (false, _) => vec![(held, back, h.amount_in, TransferKind::Void)],
            (true, true) => vec![(held, next, h.amount_out, TransferKind::Forward)],
            (true, false) => vec![
                (held, out, h.amount_in, TransferKind::Forward),
                (inn, next, h.amount_out, TransferKind::Forward),
            ],
        };
        if let Err(e) = move_money(&mut tx, &moves, &h.id, at).await? {
            // The hold holds what it took, and a settlement account may go
            // negative: only an overflow of the next peer's balance gets
            // here.
            return Err(corrupt(&format!("hold {} cannot settle: {e:?}", h.id)));
        }
        tx.commit().await?;
        Ok(true)
    }

    async fn expired_holds(&self, before: Timestamp, limit: i64) -> StoreResult<Vec<String>> {
        let rows = self.db.read(&EXPIRED_HOLDS, params![before, limit]).await?;
        rows.iter().map(|r| r.text("id")).collect()
    }
}
