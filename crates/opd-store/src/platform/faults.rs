//! Injected database faults, for the deterministic simulation
//! (`crates/opd/tests/simulation.rs`): a seeded plan decides, statement by
//! statement, whether the database "fails" it.
//!
//! A fault is injected where a real one happens:
//! - before a statement or a `BEGIN`: the statement is not run and the
//!   caller gets [`StoreError::Unavailable`], as when the connection drops;
//! - at `COMMIT`, either before it (the transaction is rolled back) or
//!   **after** it (the work is durable but the caller is told it failed:
//!   PostgreSQL's ambiguous commit, when the connection drops while the
//!   `COMMIT` answer is on its way). Every operation must survive being
//!   retried after either.
//!
//! The plan is a plain splitmix64 sequence, so the same seed and the same
//! sequence of statements give the same faults. A store without a plan
//! checks one `Option` per statement and nothing else.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use crate::StoreError;

/// What happens at a commit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AtCommit {
    Commit,
    /// Roll back and report a failure.
    FailBefore,
    /// Commit, then report a failure.
    FailAfter,
}

/// A seeded fault plan shared by a store's statements.
#[derive(Debug)]
pub struct Faults {
    state: AtomicU64,
    /// One statement in this many fails; 0 injects nothing.
    one_in: AtomicU32,
    injected: AtomicU64,
}

impl Faults {
    /// A plan drawing from `seed`, injecting nothing until [`set_rate`].
    ///
    /// [`set_rate`]: Faults::set_rate
    pub fn seeded(seed: u64) -> Self {
        Self {
            state: AtomicU64::new(seed),
            one_in: AtomicU32::new(0),
            injected: AtomicU64::new(0),
        }
    }

    /// Fails about one statement in `one_in` from now on; 0 stops faults.
    pub fn set_rate(&self, one_in: u32) {
        self.one_in.store(one_in, Ordering::SeqCst);
    }

    /// How many faults were injected so far.
    pub fn injected(&self) -> u64 {
        self.injected.load(Ordering::SeqCst)
    }

    /// The next number of the seeded sequence (splitmix64).
    fn next(&self) -> u64 {
        let s = self
            .state
            .fetch_add(0x9E37_79B9_7F4A_7C15, Ordering::SeqCst)
            .wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = s;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Whether the next draw is a fault.
    fn hit(&self) -> bool {
        let one_in = self.one_in.load(Ordering::SeqCst);
        if one_in == 0 || !self.next().is_multiple_of(u64::from(one_in)) {
            return false;
        }
        self.injected.fetch_add(1, Ordering::SeqCst);
        true
    }

    /// Before a statement or a `BEGIN`: the error to fail it with, if any.
    pub(crate) fn before_statement(&self) -> Result<(), StoreError> {
        if self.hit() {
            Err(injected())
        } else {
            Ok(())
        }
    }

    /// At a commit: whether it goes through, and what the caller hears.
    pub(crate) fn at_commit(&self) -> AtCommit {
        if !self.hit() {
            AtCommit::Commit
        } else if self.next().is_multiple_of(2) {
            AtCommit::FailBefore
        } else {
            AtCommit::FailAfter
        }
    }
}

/// The error an injected fault gives.
pub(crate) fn injected() -> StoreError {
    StoreError::Unavailable("injected fault".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_seed_gives_the_same_faults() {
        let draw = |seed| {
            let f = Faults::seeded(seed);
            f.set_rate(3);
            (0..64)
                .map(|_| f.before_statement().is_err())
                .collect::<Vec<_>>()
        };
        assert_eq!(draw(7), draw(7));
        assert_ne!(draw(7), draw(8));
        let hits = draw(7).iter().filter(|h| **h).count();
        assert!((5..40).contains(&hits), "{hits} faults in 64 at 1 in 3");
    }

    #[test]
    fn no_rate_no_faults() {
        let f = Faults::seeded(1);
        assert!((0..1000).all(|_| f.before_statement().is_ok()));
        assert_eq!(f.at_commit(), AtCommit::Commit);
        assert_eq!(f.injected(), 0);
    }
}
