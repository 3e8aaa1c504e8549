//! The ILP packets of outgoing payments to receivers on other servers
//! (migration 0009). A packet is recorded `pending` before it is sent and
//! settled exactly once (a state guard): posted when fulfilled (in one
//! transaction its amount moves from the payment to the peer that carried
//! it, and the payment's `sent` and `delivered` totals grow), or voided.
//! Packets are recorded only while the payment is `sending`, and a payment
//! with packets pending cannot end (both lock the payment's row first), so
//! a fulfilled packet always finds its money still in the payment.

use async_trait::async_trait;
use opd_core::ledger::{AccountKind, TransferKind};
use opd_core::webhook::WebhookEvent;
use opd_core::{Asset, OutgoingPaymentId, PeerId, Timestamp};

use super::transitions;
use crate::ledger::{post, AccountRef, Posting};
use crate::platform::db::{num, params, Stmt, Tx};
use crate::platform::outbox::insert_events;
use crate::platform::rows::{self, corrupt, Columns};
use crate::{SqlStore, StoreError, StoreResult};

/// One ILP packet of an outgoing payment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PaymentPacket {
    pub id: String,
    pub payment: OutgoingPaymentId,
    pub peer: PeerId,
    /// The payment's (debit) asset, and the amount the packet takes of it.
    pub source_asset: Asset,
    pub source_amount: u64,
    /// The peer's asset, and the packet's amount in it.
    pub peer_asset: Asset,
    pub peer_amount: u64,
    /// The least the receiver must get (the STREAM `prepareAmount`).
    pub min_delivery: u64,
    pub expires_at: Timestamp,
    pub created_at: Timestamp,
}

/// Where a packet stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PacketState {
    /// Recorded, not settled yet.
    Pending,
    /// Fulfilled: its amount went to the peer; `delivered` reached the
    /// receiver (as counted).
    Posted { delivered: u64 },
    /// Rejected, or never answered: nothing moved.
    Voided,
}

/// A packet with where it stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PacketRecord {
    pub packet: PaymentPacket,
    pub state: PacketState,
}

/// Outgoing payments' packets.
#[async_trait]
pub trait PacketStore: Send + Sync {
    /// Records `packet` as pending; `false` (nothing recorded) when its
    /// payment is no longer `sending`.
    async fn packet_sending(&self, packet: &PaymentPacket) -> StoreResult<bool>;
    /// Posts a pending packet that was fulfilled with `delivered` reaching
    /// the receiver; `false` when it was not pending.
    async fn packet_fulfilled(
        &self,
        packet: &PaymentPacket,
        delivered: u64,
        at: Timestamp,
    ) -> StoreResult<bool>;
    /// Voids a pending packet (rejected, or never answered); `false` when
    /// it was not pending.
    async fn packet_rejected(&self, id: &str, at: Timestamp) -> StoreResult<bool>;
    /// How many packets the payment recorded at or after `since` (its
    /// sending rate, shared by every node).
    async fn packets_since(&self, payment: OutgoingPaymentId, since: Timestamp)
        -> StoreResult<u64>;
    /// Every packet of a payment with its state, oldest first: what an
    /// audit of the payment reads.
    async fn packets(&self, payment: OutgoingPaymentId) -> StoreResult<Vec<PacketRecord>>;
    /// A payment's pending packets, oldest first.
    async fn pending_packets(&self, payment: OutgoingPaymentId) -> StoreResult<Vec<PaymentPacket>>;
    /// Records what the receiver had received before the payment's first
    /// packet; kept if one is recorded already.
    async fn set_receiver_baseline(
        &self,
        payment: OutgoingPaymentId,
        received: u64,
    ) -> StoreResult<()>;
    /// Completes a payment sent in packets: its fee goes to the fee account,
    /// what it did not send back to where it came from, and `events` are
    /// recorded. `false` when it was not `sending`, or has packets pending.
    async fn complete_sent_payment(
        &self,
        payment: OutgoingPaymentId,
        fee: u64,
        at: Timestamp,
        events: &[WebhookEvent],
    ) -> StoreResult<bool>;
}

const PACKET_COLUMNS: &str = "id, payment_id, peer_id, source_asset_code, \
    CAST(source_asset_scale AS BIGINT) AS source_asset_scale, peer_asset_code, \
    CAST(peer_asset_scale AS BIGINT) AS peer_asset_scale, \
    CAST(source_amount AS TEXT) AS source_amount, CAST(peer_amount AS TEXT) AS peer_amount, \
    CAST(min_delivery AS TEXT) AS min_delivery, expires_at, created_at";

/// Locks a sending payment's row (the order every packet and every end of
/// the payment takes).
static LOCK_SENDING: Stmt = Stmt::new(&["SELECT CAST(id AS TEXT) AS id FROM outgoing_payments \
     WHERE id = ?::uuid AND state = 'sending' FOR UPDATE"]);
static INSERT_PACKET: Stmt = Stmt::new(&[
    "INSERT INTO payment_packets (id, payment_id, peer_id, source_asset_code, source_asset_scale, \
     peer_asset_code, peer_asset_scale, source_amount, peer_amount, min_delivery, expires_at, \
     state, delivered, created_at, updated_at) \
     VALUES (?, ?, ?, ?, ?, ?, ?, ?::numeric, ?::numeric, ?::numeric, ?, 'pending', NULL, ?, ?)",
]);
static SETTLE_PACKET: Stmt = Stmt::new(&[
    "UPDATE payment_packets SET state = ?, delivered = ?::numeric, updated_at = ? \
     WHERE id = ? AND state = 'pending'",
]);
/// [`LOCK_SENDING`], with the totals a fulfilled packet adds to.
static LOCK_SENDING_TOTALS: Stmt = Stmt::new(&[
    "SELECT CAST(sent_value AS TEXT) AS sent, CAST(delivered_value AS TEXT) AS delivered \
     FROM outgoing_payments WHERE id = ?::uuid AND state = 'sending' FOR UPDATE",
]);
/// The new totals, computed exactly in u64 (never by SQL arithmetic, which
/// SQLite would turn into floating point past 2^63).
static SET_SENT: Stmt = Stmt::new(&["UPDATE outgoing_payments SET sent_value = ?::numeric, \
     delivered_value = ?::numeric, updated_at = ?, attempts = 0 WHERE id = ?::uuid"]);
static PENDING_PACKETS: Stmt = Stmt::new(&[
    "SELECT ",
    PACKET_COLUMNS,
    " FROM payment_packets WHERE payment_id = ? AND state = 'pending' ORDER BY created_at, id",
]);
static ALL_PACKETS: Stmt = Stmt::new(&[
    "SELECT ",
    PACKET_COLUMNS,
    ", state, CAST(delivered AS TEXT) AS delivered FROM payment_packets \
     WHERE payment_id = ? ORDER BY created_at, id",
]);
static PACKETS_SINCE: Stmt = Stmt::new(&[
    "SELECT COUNT(*) AS n FROM payment_packets WHERE payment_id = ? AND created_at >= ?",
]);
static SET_BASELINE: Stmt = Stmt::new(&[
    "UPDATE outgoing_payments SET receiver_baseline = ?::numeric \
     WHERE id = ?::uuid AND receiver_baseline IS NULL",
]);
static COMPLETE_SENT: Stmt = Stmt::new(&[
    "UPDATE outgoing_payments SET state = 'completed', updated_at = ? \
     WHERE id = ?::uuid AND state = 'sending'",
]);

pub(crate) static STATEMENTS: &[&Stmt] = &[
    &LOCK_SENDING,
    &INSERT_PACKET,
    &SETTLE_PACKET,
    &LOCK_SENDING_TOTALS,
    &SET_SENT,
    &PENDING_PACKETS,
    &ALL_PACKETS,
    &PACKETS_SINCE,
    &COMPLETE_SENT,
    &SET_BASELINE,
];

fn packet_from_row(r: &impl Columns) -> StoreResult<PaymentPacket> {
    let amount = |col: &str| rows::u64_from_text(&r.text(col)?, col);
    Ok(PaymentPacket {
        id: r.text("id")?,
        payment: OutgoingPaymentId::from_uuid(rows::uuid_from_text(&r.text("payment_id")?)?),
        peer: PeerId::from_uuid(rows::uuid_from_text(&r.text("peer_id")?)?),
        source_asset: rows::asset(&r.text("source_asset_code")?, r.int("source_asset_scale")?)?,
        source_amount: amount("source_amount")?,
        peer_asset: rows::asset(&r.text("peer_asset_code")?, r.int("peer_asset_scale")?)?,
        peer_amount: amount("peer_amount")?,
        min_delivery: amount("min_delivery")?,
        expires_at: Timestamp::from_unix_millis(r.int("expires_at")?),
        created_at: Timestamp::from_unix_millis(r.int("created_at")?),
    })
}

fn record_from_row(r: &impl Columns) -> StoreResult<PacketRecord> {
    let state = match r.text("state")?.as_str() {
        "pending" => PacketState::Pending,
        "posted" => PacketState::Posted {
            delivered: rows::u64_from_text(&r.text("delivered")?, "delivered")?,
        },
        "voided" => PacketState::Voided,
        other => return Err(corrupt(&format!("a packet in state {other:?}"))),
    };
    Ok(PacketRecord {
        packet: packet_from_row(r)?,
        state,
    })
}

/// The transfers of a fulfilled packet: from the payment to the peer,
/// through the settlement accounts when their assets differ.
async fn post_packet(tx: &mut Tx<'_>, p: &PaymentPacket, at: Timestamp) -> StoreResult<()> {
    let payment = p.payment.to_string();
    let peer = p.peer.to_string();
    let held = AccountRef::new(AccountKind::Outgoing, &payment, &p.source_asset);
    let to_peer = AccountRef::new(AccountKind::Peer, &peer, &p.peer_asset);
    let mut moves = Vec::with_capacity(2);
    if p.source_asset == p.peer_asset {
        moves.push((held, to_peer, p.source_amount, TransferKind::Packet));
    } else {
        let out = AccountRef::settlement(&p.source_asset);
        let inn = AccountRef::settlement(&p.peer_asset);
        moves.push((held, out, p.source_amount, TransferKind::Send));
        moves.push((inn, to_peer, p.peer_amount, TransferKind::Packet));
    }
    for (debit, credit, amount, kind) in moves {
        if amount == 0 {
            continue;
        }
        let posting = Posting {
            debit,
            credit,
            amount,
            kind,
            reference: Some(&payment),
            key: None,
            at,
        };
        if let Err(e) = post(tx, posting).await? {
            return Err(StoreError::Corrupt(format!(
                "outgoing payment {payment} cannot post its packet's {kind} transfer: {e:?}"
            )));
        }
    }
    Ok(())
}

#[async_trait]
impl PacketStore for SqlStore {
    async fn packet_sending(&self, p: &PaymentPacket) -> StoreResult<bool> {
        let payment = p.payment.to_string();
        let mut tx = self.db.begin().await?;
        if tx
            .fetch_opt(&LOCK_SENDING, params![&payment])
            .await?
            .is_none()
        {
            return Ok(false);
        }
        let row = params![
            &p.id,
            &payment,
            p.peer.to_string(),
            p.source_asset.code.as_str(),
            i64::from(p.source_asset.scale),
            p.peer_asset.code.as_str(),
            i64::from(p.peer_asset.scale),
            num(p.source_amount),
            num(p.peer_amount),
            num(p.min_delivery),
            p.expires_at,
            p.created_at,
            p.created_at,
        ];
        tx.execute(&INSERT_PACKET, row).await?;
        tx.commit().await?;
        Ok(true)
    }

    async fn packet_fulfilled(
        &self,
        p: &PaymentPacket,
        delivered: u64,
        at: Timestamp,
    ) -> StoreResult<bool> {
        let payment = p.payment.to_string();
        self.payments_cache.invalidate(p.payment);
        let mut tx = self.db.begin().await?;
        // The payment's row first: the lock order of every end of it.
        let Some(totals) = tx
            .fetch_opt(&LOCK_SENDING_TOTALS, params![&payment])
            .await?
        else {
            return Err(corrupt("a fulfilled packet's payment is not sending"));
        };
        let sent = rows::u64_from_text(&totals.text("sent")?, "sent_value")?;
        let so_far = rows::u64_from_text(&totals.text("delivered")?, "delivered_value")?;
        // The sender clamps what it counts to what the payment still
        // expects, so these never overflow; if they would, nothing is
        // written rather than a total past u64.
        let (Some(sent), Some(so_far)) = (
            sent.checked_add(p.source_amount),
            so_far.checked_add(delivered),
        ) else {
            return Err(corrupt(
                "a payment's sent or delivered total would pass u64",
            ));
        };
        let settle = params!["posted", num(delivered), at, &p.id];
        if tx.execute(&SETTLE_PACKET, settle).await? == 0 {
            return Ok(false);
        }
        let totals = params![num(sent), num(so_far), at, &payment];
        tx.execute(&SET_SENT, totals).await?;
        post_packet(&mut tx, p, at).await?;
        tx.commit().await?;
        self.payments_cache.invalidate(p.payment);
        Ok(true)
    }

    async fn packet_rejected(&self, id: &str, at: Timestamp) -> StoreResult<bool> {
        let changed = self
            .db
            .write(&SETTLE_PACKET, params!["voided", None::<&str>, at, id])
            .await?;
        Ok(changed > 0)
    }

    async fn packets_since(
        &self,
        payment: OutgoingPaymentId,
        since: Timestamp,
    ) -> StoreResult<u64> {
        let row = self
            .db
            .read_opt(&PACKETS_SINCE, params![payment.to_string(), since])
            .await?;
        match row {
            Some(r) => Ok(u64::try_from(r.int("n")?).unwrap_or(0)),
            None => Ok(0),
        }
    }

    async fn packets(&self, payment: OutgoingPaymentId) -> StoreResult<Vec<PacketRecord>> {
        let rows = self
            .db
            .read(&ALL_PACKETS, params![payment.to_string()])
            .await?;
        rows.iter().map(record_from_row).collect()
    }

    async fn pending_packets(&self, payment: OutgoingPaymentId) -> StoreResult<Vec<PaymentPacket>> {
        let rows = self
            .db
            .read(&PENDING_PACKETS, params![payment.to_string()])
            .await?;
        rows.iter().map(packet_from_row).collect()
    }

    async fn set_receiver_baseline(
        &self,
        payment: OutgoingPaymentId,
        received: u64,
    ) -> StoreResult<()> {
        self.payments_cache.invalidate(payment);
        self.db
            .write(&SET_BASELINE, params![num(received), payment.to_string()])
            .await?;
        self.payments_cache.invalidate(payment);
        Ok(())
    }

    async fn complete_sent_payment(
        &self,
        payment: OutgoingPaymentId,
        fee: u64,
        at: Timestamp,
        events: &[WebhookEvent],
    ) -> StoreResult<bool> {
        let id = payment.to_string();
        self.payments_cache.invalidate(payment);
        let mut tx = self.db.begin().await?;
        if tx.fetch_opt(&LOCK_SENDING, params![&id]).await?.is_none()
            || transitions::has_pending(&mut tx, &id).await?
        {
            return Ok(false);
        }
        tx.execute(&COMPLETE_SENT, params![at, &id]).await?;
        let Some(p) = transitions::payment_in(&mut tx, &id).await? else {
            return Err(corrupt("a completed payment vanished"));
        };
        let asset = &p.debit.asset;
        // A zero fee posts nothing (as every posting of zero).
        let posting = Posting {
            debit: AccountRef::new(AccountKind::Outgoing, &id, asset),
            credit: AccountRef::new(AccountKind::Fees, "fees", asset),
            amount: fee,
            kind: TransferKind::Fee,
            reference: Some(&id),
            key: None,
            at,
        };
        if post(&mut tx, posting).await?.is_err() {
            return Err(corrupt("the fee of a payment sent in packets"));
        }
        transitions::refund(&mut tx, &p, at).await?;
        // The grant counts what was debited: the fee and what was sent.
        let given_back = p.debit.value.saturating_sub(fee.saturating_add(p.sent));
        transitions::release_spending(&mut tx, &p, given_back, 0, at).await?;
        insert_events(&mut tx, events);
        tx.commit().await?;
        self.payments_cache.invalidate(payment);
        Ok(true)
    }
}
