//! Retention: what has served its purpose is deleted after a period, so
//! that nothing a client can create grows without bound. Payments, the
//! ledger's accounts and transfers, and grants still in use are kept
//! forever; these go once older than the cutoff:
//! - access tokens revoked or rotated away; and expired tokens, except the
//!   current token of a live grant its owner consented to (approved or
//!   issued, not revoked): that one stays, so the client can rotate it
//!   however long it goes unused (a monthly payment, say), rather than
//!   needing the owner's consent again. A grant given without consent
//!   (incoming payments, quotes) is asked for again without anyone, so its
//!   expired tokens go;
//! - grants revoked, rejected, or whose interaction expired undecided,
//!   once they have no tokens left;
//! - quotes expired and never paid (a paid quote stays with its payment);
//! - webhook events delivered;
//! - settled ILP holds;
//! - the client network kept with a key-only client's incoming payment
//!   (the payment stays): it is counted for an hour, and is a client's
//!   address;
//! - the running total of an SPSP connection with STREAM receipts that
//!   received nothing since the cutoff (a sender coming back after that
//!   starts its receipts from zero; a verifier reads them as a connection
//!   that paid nothing new, never as one that paid more).
//!
//! Each statement deletes at most a batch, so a large backlog is pruned a
//! batch at a time without holding the writer for long.

use async_trait::async_trait;
use opd_core::Timestamp;

use crate::platform::db::{params, Stmt};
use crate::{SqlStore, StoreResult};

/// How many rows of each kind one pass deletes at most.
pub const PRUNE_BATCH: i64 = 1000;

/// What one pass deleted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Pruned {
    pub tokens: u64,
    pub grants: u64,
    pub quotes: u64,
    pub webhook_events: u64,
    pub holds: u64,
    /// Incoming payments whose client network was forgotten.
    pub client_networks: u64,
    /// SPSP connections' receipt totals.
    pub receipt_totals: u64,
}

impl Pruned {
    pub fn total(&self) -> u64 {
        self.tokens
            + self.grants
            + self.quotes
            + self.webhook_events
            + self.holds
            + self.client_networks
            + self.receipt_totals
    }
}

/// Deleting what is past its retention.
#[async_trait]
pub trait RetentionStore: Send + Sync {
    /// One pass: deletes up to [`PRUNE_BATCH`] rows of each kind that
    /// ended before `cutoff`.
    async fn prune_before(&self, cutoff: Timestamp) -> StoreResult<Pruned>;
}

static PRUNE_TOKENS: Stmt = Stmt::new(&[
    "DELETE FROM access_tokens WHERE digest IN (SELECT t.digest FROM access_tokens t \
     JOIN grants g ON g.id = t.grant_id \
     WHERE t.revoked_at < ? OR (t.revoked_at IS NULL AND t.expires_at < ? \
     AND NOT (g.interact_id IS NOT NULL \
     AND (g.state = 'approved' OR (g.state = 'finalized' AND g.finalization = 'issued')))) \
     LIMIT ?)",
]);
static PRUNE_GRANTS: Stmt =
    Stmt::new(&["DELETE FROM grants WHERE id IN (SELECT id FROM grants g \
     WHERE ((g.state = 'finalized' AND g.finalization IN ('revoked', 'rejected') \
     AND g.updated_at < ?) OR (g.state = 'pending' AND g.interaction_expires_at < ?)) \
     AND NOT EXISTS (SELECT 1 FROM access_tokens t WHERE t.grant_id = g.id) LIMIT ?)"]);
static PRUNE_QUOTES: Stmt = Stmt::new(&[
    "DELETE FROM quotes WHERE id IN (SELECT q.id FROM quotes q WHERE q.expires_at < ? \
     AND NOT EXISTS (SELECT 1 FROM outgoing_payments o WHERE o.quote_id = q.id) LIMIT ?)",
]);
static PRUNE_EVENTS: Stmt = Stmt::new(&[
    "DELETE FROM webhook_events WHERE id IN (SELECT id FROM webhook_events \
     WHERE delivered_at IS NOT NULL AND delivered_at < ? LIMIT ?)",
]);
/// By `ilp_holds_pending` (state, expires_at): a hold ends by its expiry
/// at the latest (plus the sweep), so one that expired before the cutoff
/// and ended before it is due; one that ended before the cutoff but
/// expires after it goes at a later pass, seconds later. (`state <>
/// 'pending'` alone read every hold at every pass.)
static PRUNE_HOLDS: Stmt = Stmt::new(&[
    "DELETE FROM ilp_holds WHERE id IN (SELECT id FROM ilp_holds \
     WHERE state IN ('posted', 'voided') AND expires_at < ? AND updated_at < ? LIMIT ?)",
]);

/// By `incoming_payments_network_kept` (created_at, where a network is
/// kept).
static FORGET_NETWORKS: Stmt = Stmt::new(&[
    "UPDATE incoming_payments SET client_network = NULL WHERE id IN (SELECT id \
     FROM incoming_payments WHERE client_network IS NOT NULL AND created_at < ? LIMIT ?)",
]);

/// By `spsp_receipt_totals_by_update`.
static PRUNE_RECEIPT_TOTALS: Stmt = Stmt::new(&[
    "DELETE FROM spsp_receipt_totals WHERE connection IN (SELECT connection \
     FROM spsp_receipt_totals WHERE updated_at < ? LIMIT ?)",
]);

pub(crate) static STATEMENTS: &[&Stmt] = &[
    &PRUNE_RECEIPT_TOTALS,
    &FORGET_NETWORKS,
    &PRUNE_TOKENS,
    &PRUNE_GRANTS,
    &PRUNE_QUOTES,
    &PRUNE_EVENTS,
    &PRUNE_HOLDS,
];

#[async_trait]
impl RetentionStore for SqlStore {
    async fn prune_before(&self, cutoff: Timestamp) -> StoreResult<Pruned> {
        let n = PRUNE_BATCH;
        // Tokens first: a grant goes only once its tokens are gone.
        let tokens = self
            .db
            .write(&PRUNE_TOKENS, params![cutoff, cutoff, n])
            .await?;
        let grants = self
            .db
            .write(&PRUNE_GRANTS, params![cutoff, cutoff, n])
            .await?;
        let quotes = self.db.write(&PRUNE_QUOTES, params![cutoff, n]).await?;
        let webhook_events = self.db.write(&PRUNE_EVENTS, params![cutoff, n]).await?;
        let holds = self
            .db
            .write(&PRUNE_HOLDS, params![cutoff, cutoff, n])
            .await?;
        let client_networks = self.db.write(&FORGET_NETWORKS, params![cutoff, n]).await?;
        let receipt_totals = self
            .db
            .write(&PRUNE_RECEIPT_TOTALS, params![cutoff, n])
            .await?;
        Ok(Pruned {
            receipt_totals,
            tokens,
            grants,
            quotes,
            webhook_events,
            holds,
            client_networks,
        })
    }
}
