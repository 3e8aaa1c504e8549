//! Group commit of ILP credits: packets for one receiver (an incoming
//! payment, or a wallet address paid over SPSP) from one peer that arrive
//! together are credited in one transaction.
//!
//! A credit locks the payment's row and the peer's and receiver's ledger
//! rows from its move to its commit, so credits of one (payment, peer)
//! cannot run side by side; instead they share transactions. The first
//! packet of a (payment, peer) leads: it credits itself at once. Packets
//! arriving while a credit is under way wait in a queue; when the leader's
//! transaction ends, the first of them leads the next transaction, with
//! every packet queued by then (up to [`MAX_GROUP`]). A leader first
//! yields once to the scheduler, so that packets already being handled
//! join its group. So a packet alone waits for nobody (no timer), and under
//! load one transaction carries many (the measured group sizes are in
//! `BENCHMARKS.md`).
//!
//! Each packet is fulfilled only after the transaction carrying it
//! committed: its caller gets its own result from that transaction. A
//! transaction that fails fails every packet in it (the ILP layer answers
//! them with a T-code reject), and nothing of it was kept.
//!
//! No packet waits past its deadline (its expiry less the answer's margin,
//! `super::deadline`): one still in the queue then leaves it, answered
//! `Expired` (R00). One already taken into a group waits for that group's
//! transaction, which refuses it if its deadline passed before the commit
//! (`opd_store::IlpCredit::Expired`): so it is never both answered R00 and
//! credited.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use opd_core::peer::Peer;
use opd_core::wallet_address::WalletAddress;
use opd_core::{Clock, PeerId, Random};
use opd_store::{CreditTo, IlpCredit, IlpReceive, Store};
use tokio::sync::oneshot;

use crate::tenants::Sites;
use crate::ServiceError;

mod store;
#[cfg(test)]
mod tests;

use store::StoreGroups;

/// Credits one group of packets, one answer per packet: the queue decides
/// only which packets go together, and when.
#[async_trait::async_trait]
trait Groups: Send + Sync {
    async fn credit_group(
        &self,
        peer: &Peer,
        receives: &[IlpReceive],
        wallet: &WalletAddress,
    ) -> Result<Vec<IlpCredit>, ServiceError>;
}

/// The most packets one transaction credits.
pub const MAX_GROUP: usize = 64;

type Key = (CreditTo, PeerId);

/// The packets waiting for their turn, by (incoming payment, peer). A key
/// is present while a transaction for it is under way.
pub struct CreditQueue {
    groups: Box<dyn Groups>,
    /// For the packets' deadlines.
    clock: Arc<dyn Clock>,
    waiting: Mutex<HashMap<Key, Vec<Waiter>>>,
    /// Tells waiters apart, so that one leaving at its deadline takes
    /// itself out of the queue and no other.
    tickets: AtomicU64,
}

#[derive(Debug)]
struct Waiter {
    ticket: u64,
    receive: IlpReceive,
    turn: oneshot::Sender<Turn>,
}

#[derive(Debug)]
enum Turn {
    /// Credited (or refused) by another packet's transaction.
    Done(Result<IlpCredit, String>),
    /// Leads the next transaction, with these packets after its own.
    Lead(IlpReceive, Vec<Waiter>),
}

impl std::fmt::Debug for CreditQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CreditQueue")
            .field("waiting", &self.waiting())
            .finish_non_exhaustive()
    }
}

impl CreditQueue {
    /// Credits through `store`, deadlines by `clock`; the events a credit
    /// commits take their ids from `random` and link under `sites`.
    pub fn new(
        store: Arc<dyn Store>,
        clock: Arc<dyn Clock>,
        random: Arc<dyn Random>,
        sites: Arc<Sites>,
    ) -> Self {
        let groups = StoreGroups {
            store,
            clock: clock.clone(),
            random,
            sites,
        };
        Self::with_groups(Box::new(groups), clock)
    }

    fn with_groups(groups: Box<dyn Groups>, clock: Arc<dyn Clock>) -> Self {
        Self {
            groups,
            clock,
            waiting: Mutex::default(),
            tickets: AtomicU64::default(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<Key, Vec<Waiter>>> {
        // Plain data: a panic elsewhere cannot leave it half-written.
        self.waiting.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Credits `receive` from `peer` to an incoming payment of `wallet`,
    /// alone or with the packets that arrive meanwhile; returns its own
    /// result once its transaction ended.
    pub async fn credit(
        &self,
        peer: &Peer,
        receive: IlpReceive,
        wallet: &WalletAddress,
    ) -> Result<IlpCredit, ServiceError> {
        let key = (receive.to.clone(), peer.id);
        let deadline = receive.deadline;
        let ticket = self.tickets.fetch_add(1, Ordering::Relaxed);
        let queued = {
            let mut waiting = self.lock();
            match waiting.get_mut(&key) {
                Some(queue) => {
                    let (turn, wait) = oneshot::channel();
                    queue.push(Waiter {
                        ticket,
                        receive,
                        turn,
                    });
                    Err(wait)
                }
                None => {
                    waiting.insert(key.clone(), Vec::new());
                    Ok(receive)
                }
            }
        };
        let (own, mut others) = match queued {
            Ok(receive) => (receive, Vec::new()),
            Err(wait) => match self.turn(&key, ticket, deadline, wait).await {
                Ok(Turn::Done(result)) => return result.map_err(ServiceError::Unavailable),
                Ok(Turn::Lead(own, others)) => (own, others),
                Err(_) => return Err(ServiceError::Unavailable("a credit was dropped".into())),
            },
        };
        // Whatever happens below (even a panic), the next packet leads.
        let _handoff = Handoff {
            queue: self,
            key: key.clone(),
        };
        // Let the tasks already running (packets read, on their way here)
        // reach the queue first: no timer, only a turn of the scheduler,
        // and under load it makes the groups several times larger.
        tokio::task::yield_now().await;
        self.join_queued(&key, &mut others);
        let mut receives = Vec::with_capacity(1 + others.len());
        receives.push(own);
        receives.extend(others.iter().map(|w| w.receive.clone()));
        match self.groups.credit_group(peer, &receives, wallet).await {
            Ok(credits) if credits.len() == receives.len() => {
                let mut credits = credits.into_iter();
                let mine = credits.next();
                for (waiter, credit) in others.into_iter().zip(credits) {
                    // A waiter that went away is not owed an answer.
                    let _ = waiter.turn.send(Turn::Done(Ok(credit)));
                }
                mine.ok_or_else(|| ServiceError::Internal("no credit came back".into()))
            }
            Ok(_) => {
                let why = "the store answered another number of packets";
                fail(others, why);
                Err(ServiceError::Internal(why.into()))
            }
            Err(e) => {
                fail(others, &e.to_string());
                Err(e)
            }
        }
    }

    /// How many packets wait in the queue now.
    pub fn waiting(&self) -> usize {
        self.lock().values().map(Vec::len).sum()
    }

    /// Waits for a queued packet's turn until its deadline; then it leaves
    /// the queue, `Expired`, unless a group took it meanwhile (that
    /// group's transaction then answers it).
    async fn turn(
        &self,
        key: &Key,
        ticket: u64,
        deadline: opd_core::Timestamp,
        mut wait: oneshot::Receiver<Turn>,
    ) -> Result<Turn, oneshot::error::RecvError> {
        let left = deadline.unix_millis() - self.clock.now().unix_millis();
        let left = Duration::from_millis(u64::try_from(left).unwrap_or(0));
        if let Ok(turn) = tokio::time::timeout(left, &mut wait).await {
            return turn;
        }
        {
            let mut waiting = self.lock();
            if let Some(queue) = waiting.get_mut(key) {
                if let Some(at) = queue.iter().position(|w| w.ticket == ticket) {
                    queue.remove(at);
                    return Ok(Turn::Done(Ok(IlpCredit::Expired)));
                }
            }
        }
        wait.await
    }

    /// Moves the packets queued for `key` since the lead was given into
    /// the leader's group (up to [`MAX_GROUP`] in all).
    fn join_queued(&self, key: &Key, group: &mut Vec<Waiter>) {
        let mut waiting = self.lock();
        if let Some(queue) = waiting.get_mut(key) {
            let room = (MAX_GROUP - 1).saturating_sub(group.len());
            let take = queue.len().min(room);
            group.extend(queue.drain(..take));
        }
    }
}

fn fail(others: Vec<Waiter>, why: &str) {
    for waiter in others {
        let _ = waiter.turn.send(Turn::Done(Err(why.to_owned())));
    }
}

/// Hands the lead to the first queued packet when a transaction ends, or
/// forgets the key when none waits.
struct Handoff<'a> {
    queue: &'a CreditQueue,
    key: Key,
}

impl Drop for Handoff<'_> {
    fn drop(&mut self) {
        let mut waiting = self.queue.lock();
        loop {
            let Some(queue) = waiting.get_mut(&self.key) else {
                return;
            };
            if queue.is_empty() {
                waiting.remove(&self.key);
                return;
            }
            let take = queue.len().min(MAX_GROUP);
            let mut group: Vec<Waiter> = queue.drain(..take).collect();
            let next = group.remove(0);
            match next.turn.send(Turn::Lead(next.receive, group)) {
                Ok(()) => return,
                // Its task is gone: the others (given back) go to the
                // next one in line.
                Err(Turn::Lead(_, group)) => {
                    queue.splice(0..0, group);
                }
                Err(Turn::Done(_)) => return,
            }
        }
    }
}
