//! What changes between nodes: a change made through one node (a revoked
//! or rotated token, a revoked key, a deactivated wallet address, new fees
//! or rates, peers) drops what this node cached at once
//! (`Services::changed`) and is announced to the others, which drop theirs
//! when they hear it (`jobs::follow_changes`; PostgreSQL `NOTIFY`, within
//! milliseconds) rather than when their caches expire.

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
    /// Tenants (made, moved, renamed, deleted).
    Tenants,
}

impl Change {
    pub const ALL: [Change; 6] = [
        Change::Tokens,
        Change::Keys,
        Change::Wallets,
        Change::Pricing,
        Change::Peers,
        Change::Tenants,
    ];

    pub fn topic(self) -> &'static str {
        match self {
            Change::Tokens => "tokens",
            Change::Keys => "keys",
            Change::Wallets => "wallets",
            Change::Pricing => "pricing",
            Change::Peers => "peers",
            Change::Tenants => "tenants",
        }
    }

    pub fn from_topic(topic: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.topic() == topic)
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
