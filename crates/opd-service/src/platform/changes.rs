//! Keeping every node's caches true to the database. A change made through
//! one node (a revoked or rotated token, a revoked key, a deactivated wallet
//! address, new fees or rates) drops what this node cached at once and is
//! announced to the others, which drop theirs when they hear it (PostgreSQL
//! `NOTIFY`, within milliseconds) rather than when their caches expire.

use std::sync::Arc;
use std::time::Duration;

use opd_store::Heard;

use crate::Services;

/// What changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// Access tokens (revoked, rotated, grant revoked).
    Tokens,
    /// Client keys (added, revoked).
    Keys,
    /// Wallet addresses (deactivated).
    Wallets,
    /// Fees, rates or the rates URL.
    Pricing,
    /// Interledger peers (tokens, limits, routes).
    Peers,
}

impl Change {
    const ALL: [Change; 5] = [
        Change::Tokens,
        Change::Keys,
        Change::Wallets,
        Change::Pricing,
        Change::Peers,
    ];

    fn topic(self) -> &'static str {
        match self {
            Change::Tokens => "tokens",
            Change::Keys => "keys",
            Change::Wallets => "wallets",
            Change::Pricing => "pricing",
            Change::Peers => "peers",
        }
    }

    fn from_topic(topic: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.topic() == topic)
    }
}

impl Services {
    /// Drops what `change` made stale on this node, then tells the other
    /// nodes. Call it after the change committed.
    pub async fn changed(&self, change: Change) {
        self.forget(change).await;
        if let Err(e) = self.store.announce_change(change.topic()).await {
            // The change itself is stored; other nodes then see it when
            // their caches expire (`cache_ttl`).
            tracing::warn!(error = %e, change = change.topic(), "could not announce a change to the other nodes");
        }
    }

    /// Drops this node's cached copies of what `change` touches.
    pub async fn forget(&self, change: Change) {
        match change {
            Change::Tokens => self.token_cache.clear(),
            Change::Keys => self.client_keys.invalidate(),
            Change::Wallets => {
                self.wallet_cache.clear();
                self.wallet_path_cache.clear();
                // A deactivated wallet address's tokens and keys go too.
                self.token_cache.clear();
                self.client_keys.invalidate();
            }
            Change::Pricing => self.pricing.invalidate().await,
            Change::Peers => {
                self.peer_cache.clear();
                self.routing_cache.clear();
            }
        }
    }
}

/// Listens for changes announced by any node and drops the matching cached
/// data, until `stop` says so; returns at once on SQLite (one node). A lost
/// connection drops everything (changes may have been missed) and listens
/// again.
pub async fn follow(services: Arc<Services>, mut stop: tokio::sync::watch::Receiver<bool>) {
    loop {
        let feed = tokio::select! {
            f = services.store.listen_changes() => f,
            _ = stop.wait_for(|s| *s) => return,
        };
        let mut feed = match feed {
            Ok(Some(feed)) => feed,
            Ok(None) => return,
            Err(e) => {
                tracing::warn!(error = %e, "cannot listen for changes from other nodes; retrying");
                tokio::select! {
                    _ = tokio::time::sleep(Duration::from_secs(1)) => continue,
                    _ = stop.wait_for(|s| *s) => return,
                }
            }
        };
        // Whatever changed before the feed listened is unknown.
        for c in Change::ALL {
            services.forget(c).await;
        }
        loop {
            let heard = tokio::select! {
                h = feed.next() => h,
                _ = stop.wait_for(|s| *s) => return,
            };
            match heard {
                Ok(Heard::Topic(t)) => match Change::from_topic(&t) {
                    Some(c) => services.forget(c).await,
                    None => tracing::debug!(topic = %t, "ignored an unknown change topic"),
                },
                Ok(Heard::Reconnected) => {
                    for c in Change::ALL {
                        services.forget(c).await;
                    }
                }
                Err(e) => {
                    tracing::warn!(error = %e, "lost the change feed; listening again");
                    break;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Change;

    #[test]
    fn topics_round_trip() {
        for c in Change::ALL {
            assert_eq!(Change::from_topic(c.topic()), Some(c));
        }
        assert_eq!(Change::from_topic("nothing"), None);
    }
}
