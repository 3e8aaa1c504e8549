//! The webhook outbox: events are inserted in the same transaction as the
//! change they describe and wait there until delivered.

use async_trait::async_trait;
use opd_core::webhook::{EventKind, WebhookEvent};
use opd_core::{TenantId, Timestamp};

use crate::platform::db::{params, Stmt, Tx, Want};
use crate::platform::rows::{corrupt, Columns};
use crate::{SqlStore, StoreResult};

/// The webhook outbox.
#[async_trait]
pub trait OutboxStore: Send + Sync {
    async fn insert_webhook_events(&self, events: &[WebhookEvent]) -> StoreResult<()>;
    /// Undelivered events due at `now`, oldest first.
    async fn due_webhook_events(
        &self,
        now: Timestamp,
        limit: i64,
    ) -> StoreResult<Vec<WebhookEvent>>;
    /// Takes up to `limit` undelivered events due at `now` for delivery by
    /// this node, leasing each for `lease_ms` (its next attempt moves to
    /// then, so no other node takes it meanwhile; a node that dies lets it
    /// come back when the lease ends). Oldest first.
    async fn claim_webhook_events(
        &self,
        now: Timestamp,
        lease_ms: i64,
        limit: i64,
    ) -> StoreResult<Vec<WebhookEvent>>;
    /// Records a delivery attempt: delivered, or to retry at `next_attempt_at`.
    async fn webhook_attempted(
        &self,
        id: &str,
        delivered_at: Option<Timestamp>,
        next_attempt_at: Timestamp,
        error: Option<&str>,
    ) -> StoreResult<()>;
    /// How many events are not delivered yet, counting at most `cap` (the
    /// count walks the due index, so a bound keeps it cheap).
    async fn webhook_backlog(&self, cap: i64) -> StoreResult<u64>;
}

const INSERT_EVENTS: &str = "INSERT INTO webhook_events (id, tenant_id, kind, data, attempts, \
    next_attempt_at, delivered_at, last_error, created_at) VALUES ";
const EVENT_ROW: &str = "(?, ?, ?, ?, ?, ?, ?, NULL, ?)";
pub(crate) const EVENT_COLUMNS: &str =
    "id, tenant_id, kind, data, attempts, next_attempt_at, delivered_at, created_at";

/// Inserts of one, two and three events: a change queues up to three, in
/// one statement (one round trip on PostgreSQL).
static INSERT_EVENT: Stmt = Stmt::new(&[INSERT_EVENTS, EVENT_ROW]);
static INSERT_EVENTS_2: Stmt = Stmt::new(&[INSERT_EVENTS, EVENT_ROW, ", ", EVENT_ROW]);
static INSERT_EVENTS_3: Stmt =
    Stmt::new(&[INSERT_EVENTS, EVENT_ROW, ", ", EVENT_ROW, ", ", EVENT_ROW]);
static DUE_EVENTS: Stmt = Stmt::new(&[
    "SELECT ",
    EVENT_COLUMNS,
    " FROM webhook_events \
     WHERE delivered_at IS NULL AND next_attempt_at <= ? ORDER BY next_attempt_at, id LIMIT ?",
]);
static ATTEMPTED: Stmt = Stmt::new(&[
    "UPDATE webhook_events SET attempts = attempts + 1, delivered_at = ?, next_attempt_at = ?, \
     last_error = ? WHERE id = ? AND delivered_at IS NULL",
]);

static CLAIM_EVENTS: Stmt = Stmt::new(&[
    "UPDATE webhook_events SET next_attempt_at = ? WHERE id IN (SELECT id FROM webhook_events \
     WHERE delivered_at IS NULL AND next_attempt_at <= ? ORDER BY next_attempt_at, id LIMIT ? \
     FOR UPDATE SKIP LOCKED) RETURNING ",
    EVENT_COLUMNS,
]);

static BACKLOG: Stmt = Stmt::new(&[
    "SELECT count(*) AS n FROM (SELECT 1 FROM webhook_events WHERE delivered_at IS NULL LIMIT ?) \
     AS undelivered",
]);

pub(crate) static STATEMENTS: &[&Stmt] = &[
    &BACKLOG,
    &INSERT_EVENT,
    &INSERT_EVENTS_2,
    &INSERT_EVENTS_3,
    &DUE_EVENTS,
    &ATTEMPTED,
    &CLAIM_EVENTS,
];

/// Queues `events` inside the caller's transaction. On PostgreSQL they
/// travel with the transaction's next round trip; a failure fails its
/// commit.
pub(crate) fn insert_events(tx: &mut Tx<'_>, events: &[WebhookEvent]) {
    for chunk in events.chunks(3) {
        let stmt = match chunk.len() {
            1 => &INSERT_EVENT,
            2 => &INSERT_EVENTS_2,
            _ => &INSERT_EVENTS_3,
        };
        let mut params = Vec::with_capacity(8 * chunk.len());
        for e in chunk {
            params.extend_from_slice(params![
                &e.id,
                e.tenant.as_str(),
                e.kind.as_str(),
                &e.data,
                e.attempts,
                e.next_attempt_at,
                e.delivered_at,
                e.created_at,
            ]);
        }
        tx.send(stmt, &params, Want::Changed);
    }
}

pub(crate) fn event_from_row(r: &impl Columns) -> StoreResult<WebhookEvent> {
    Ok(WebhookEvent {
        id: r.text("id")?,
        tenant: TenantId::parse(&r.text("tenant_id")?).map_err(|_| corrupt("tenant id"))?,
        kind: EventKind::parse(&r.text("kind")?).ok_or_else(|| corrupt("webhook event kind"))?,
        data: r.text("data")?,
        attempts: r.int("attempts")?,
        next_attempt_at: Timestamp::from_unix_millis(r.int("next_attempt_at")?),
        delivered_at: r.opt_int("delivered_at")?.map(Timestamp::from_unix_millis),
        created_at: Timestamp::from_unix_millis(r.int("created_at")?),
    })
}

#[async_trait]
impl OutboxStore for SqlStore {
    async fn insert_webhook_events(&self, events: &[WebhookEvent]) -> StoreResult<()> {
        let mut tx = self.db.begin().await?;
        insert_events(&mut tx, events);
        tx.commit().await
    }

    async fn due_webhook_events(
        &self,
        now: Timestamp,
        limit: i64,
    ) -> StoreResult<Vec<WebhookEvent>> {
        let rows = self.db.read(&DUE_EVENTS, params![now, limit]).await?;
        rows.iter().map(event_from_row).collect()
    }

    async fn claim_webhook_events(
        &self,
        now: Timestamp,
        lease_ms: i64,
        limit: i64,
    ) -> StoreResult<Vec<WebhookEvent>> {
        let until = Timestamp::from_unix_millis(now.unix_millis().saturating_add(lease_ms));
        let rows = self
            .db
            .write_all(&CLAIM_EVENTS, params![until, now, limit])
            .await?;
        let mut events = rows
            .iter()
            .map(event_from_row)
            .collect::<StoreResult<Vec<_>>>()?;
        events.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
        Ok(events)
    }

    async fn webhook_attempted(
        &self,
        id: &str,
        delivered_at: Option<Timestamp>,
        next_attempt_at: Timestamp,
        error: Option<&str>,
    ) -> StoreResult<()> {
        self.db
            .write(
                &ATTEMPTED,
                params![delivered_at, next_attempt_at, error, id],
            )
            .await?;
        Ok(())
    }

    async fn webhook_backlog(&self, cap: i64) -> StoreResult<u64> {
        let rows = self.db.read(&BACKLOG, params![cap]).await?;
        match rows.first() {
            Some(row) => Ok(u64::try_from(row.int("n")?).unwrap_or(0)),
            None => Ok(0),
        }
    }
}
