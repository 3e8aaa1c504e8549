//! Crediting a group of packets in the store: as many transactions as
//! [`CreditRounds`] plans, each committed with the webhook events of its
//! facts.

use std::sync::Arc;

use opd_core::peer::Peer;
use opd_core::wallet_address::WalletAddress;
use opd_core::{Clock, Random};
use opd_store::{CreditRounds, IlpCredit, IlpReceive, Store};

use super::Groups;
use crate::tenants::Sites;
use crate::webhooks::{of_facts, Stamp};
use crate::ServiceError;

/// The store, and what the events of a credit need.
pub(super) struct StoreGroups {
    pub(super) store: Arc<dyn Store>,
    pub(super) clock: Arc<dyn Clock>,
    /// For the ids of the events a credit commits.
    pub(super) random: Arc<dyn Random>,
    /// Where the views those events carry link.
    pub(super) sites: Arc<Sites>,
}

#[async_trait::async_trait]
impl Groups for StoreGroups {
    /// Credits a group of packets to one incoming payment of `wallet` in
    /// as many transactions as [`CreditRounds`] plans, each committed with
    /// the webhook events of its facts; one answer per packet.
    async fn credit_group(
        &self,
        peer: &Peer,
        receives: &[IlpReceive],
        wallet: &WalletAddress,
    ) -> Result<Vec<IlpCredit>, ServiceError> {
        let clock = self.clock.as_ref();
        let sites = self.sites.with(&wallet.tenant).await?;
        let mut rounds = CreditRounds::new(receives, clock.now());
        // The plan answers a packet or takes one out each round: one round
        // per packet and one more at most. Past that it is broken; stop.
        for _ in 0..=receives.len() {
            let Some(round) = rounds.next() else {
                return Ok(rounds.answers());
            };
            let packets = CreditRounds::packets(receives, &round);
            let credited = self.store.credit_round(peer, &packets, clock).await?;
            let stamp = Stamp {
                now: clock.now(),
                random: self.random.as_ref(),
                sites: &sites,
            };
            let events = of_facts(stamp, credited.facts(), Some(wallet))?;
            rounds.settle(&round, credited.end(packets.len(), &events).await?);
        }
        match rounds.next() {
            None => Ok(rounds.answers()),
            Some(_) => Err(ServiceError::Internal(
                "the credit rounds did not end".into(),
            )),
        }
    }
}
