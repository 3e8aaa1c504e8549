//! What a money transaction learned that only it could know (an incoming
//! payment completed by this credit, a peer's liquidity crossing a
//! threshold), handed to the service as typed [`Fact`]s while the
//! transaction is still open.
//!
//! The service renders each fact into its webhook event (the Open
//! Payments view lives there, not here) and passes the events to
//! [`Uncommitted::commit`], which inserts them into the outbox in the same
//! transaction as the movement they describe: a crash commits both or
//! neither, and the store never calls back into the service.

use opd_core::incoming_payment::IncomingPayment;
use opd_core::peer::{LiquidityZone, Peer};
use opd_core::webhook::WebhookEvent;

use crate::platform::db::Tx;
use crate::platform::outbox::insert_events;
use crate::StoreResult;

/// A fact of a transaction, for the service to render as a webhook event.
#[derive(Debug, Clone, PartialEq)]
pub enum Fact {
    /// This credit completed the incoming payment (as it now stands).
    /// `to_withdraw` is what its own account holds for the operator to
    /// withdraw, this credit included: 0 unless received money is held
    /// (external mode).
    IncomingCompleted {
        payment: IncomingPayment,
        to_withdraw: u64,
    },
    /// The peer's liquidity crossed one of its thresholds; `balance` is
    /// what it holds now.
    LiquidityCrossed {
        peer: Peer,
        zone: LiquidityZone,
        balance: u64,
    },
}

/// Runs once the transaction committed (a cache forgetting what it held).
type AfterCommit<'s> = Box<dyn FnOnce() + Send + 's>;

/// A transaction that did its work and waits for the webhook events of
/// its [`facts`](Self::facts) to commit with them. Dropped, it rolls back
/// and nothing of it stays.
#[must_use = "dropped without `commit`, the transaction rolls back"]
pub struct Uncommitted<'s, T> {
    /// `None` when there is nothing to commit (the work was refused and
    /// rolled back, or it changed nothing): then there are no facts.
    tx: Option<Tx<'s>>,
    outcome: T,
    facts: Vec<Fact>,
    after: Option<AfterCommit<'s>>,
}

impl<T: std::fmt::Debug> std::fmt::Debug for Uncommitted<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Uncommitted")
            .field("open", &self.tx.is_some())
            .field("outcome", &self.outcome)
            .field("facts", &self.facts)
            .finish_non_exhaustive()
    }
}

impl<'s, T> Uncommitted<'s, T> {
    /// An open transaction with its outcome and facts.
    pub(crate) fn open(tx: Tx<'s>, outcome: T, facts: Vec<Fact>) -> Self {
        Self {
            tx: Some(tx),
            outcome,
            facts,
            after: None,
        }
    }

    /// Nothing to commit: `outcome` is final as it is.
    pub(crate) fn settled(outcome: T) -> Self {
        Self {
            tx: None,
            outcome,
            facts: Vec::new(),
            after: None,
        }
    }

    /// Runs `after` once the transaction committed.
    pub(crate) fn then(mut self, after: impl FnOnce() + Send + 's) -> Self {
        self.after = Some(Box::new(after));
        self
    }

    /// What the transaction did (final once committed).
    pub fn outcome(&self) -> &T {
        &self.outcome
    }

    /// What it learned that the service renders into webhook events.
    pub fn facts(&self) -> &[Fact] {
        &self.facts
    }

    /// Commits with `events` (the rendered facts) in the outbox; returns
    /// the outcome once durable. With nothing to commit, `events` is
    /// empty (there were no facts) and the outcome comes back as it is.
    pub async fn commit(self, events: &[WebhookEvent]) -> StoreResult<T> {
        if let Some(mut tx) = self.tx {
            insert_events(&mut tx, events);
            tx.commit().await?;
        }
        if let Some(after) = self.after {
            after();
        }
        Ok(self.outcome)
    }
}
