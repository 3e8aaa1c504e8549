//! The budget of password checks a wallet address's owner login allows,
//! whoever asks and whichever node answers: after `FAILURE_BUDGET`
//! attempts in a row without a success, approval by password pauses for
//! that wallet address, 1 minute the first time and twice as long each
//! time after (up to an hour), until the owner gets it right or the
//! operator sets the password again.
//!
//! The per-address lockouts of the consent page slow one source down;
//! this bounds all of them together, so that a thousand addresses (or an
//! IPv6 network, or a cluster of nodes each counting on its own) get no
//! more guesses than one. The state lives in the database next to the
//! password and is changed by compare-and-swap; what to change it to is
//! decided here, on plain values.

use crate::{Backoff, Timestamp};

/// Password checks allowed in a row without a success before a pause.
pub const FAILURE_BUDGET: u32 = 10;

/// The pauses: 1 minute doubling to an hour.
pub const PAUSE: Backoff = Backoff {
    base_ms: 60_000,
    cap_ms: 3_600_000,
    max_doublings: 6,
};

/// A wallet address's owner-login budget, as stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoginBudget {
    /// Checks taken since the last success or the last pause.
    pub attempts: u32,
    /// Pauses since the last success (the next one is twice as long).
    pub pauses: u32,
    /// No check is taken before this instant.
    pub paused_until: Timestamp,
}

/// What an attempt at `now` may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Attempt {
    /// The password may be checked; store `next` first.
    Check { next: LoginBudget },
    /// Approval by password is paused for this wallet address until then.
    Paused { until: Timestamp },
}

impl Default for LoginBudget {
    /// Nothing spent, never paused.
    fn default() -> Self {
        Self {
            attempts: 0,
            pauses: 0,
            paused_until: Timestamp::from_unix_millis(0),
        }
    }
}

impl LoginBudget {
    /// Takes one attempt at `now`. The attempt is counted before the
    /// password is checked, so concurrent guesses (each swapping its own
    /// `next` in) cannot all be checked before any is counted; the one
    /// that spends the budget is still checked, and starts the pause.
    pub fn attempt(self, now: Timestamp) -> Attempt {
        if now < self.paused_until {
            return Attempt::Paused {
                until: self.paused_until,
            };
        }
        let attempts = self.attempts.saturating_add(1);
        if attempts < FAILURE_BUDGET {
            return Attempt::Check {
                next: LoginBudget { attempts, ..self },
            };
        }
        let pause = PAUSE.delay_ms(i64::from(self.pauses));
        Attempt::Check {
            next: LoginBudget {
                attempts: 0,
                pauses: self.pauses.saturating_add(1),
                paused_until: now.plus_millis(pause),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: i64) -> Timestamp {
        Timestamp::from_unix_millis(ms)
    }

    /// Takes attempts until one is refused; returns how many were checked.
    fn checks_until_paused(mut b: LoginBudget, now: Timestamp) -> (u32, LoginBudget) {
        let mut checked = 0;
        while let Attempt::Check { next } = b.attempt(now) {
            checked += 1;
            b = next;
            assert!(checked <= FAILURE_BUDGET, "never more than the budget");
        }
        (checked, b)
    }

    #[test]
    fn the_budget_is_checked_then_a_pause_doubles_up_to_an_hour() {
        let (checked, b) = checks_until_paused(LoginBudget::default(), at(0));
        assert_eq!(checked, FAILURE_BUDGET);
        assert_eq!(b.paused_until, at(60_000));
        assert_eq!(b.attempt(at(59_999)), Attempt::Paused { until: at(60_000) });
        let (checked, b) = checks_until_paused(b, at(60_000));
        assert_eq!(checked, FAILURE_BUDGET, "a fresh budget after the pause");
        assert_eq!(b.paused_until, at(60_000 + 120_000), "twice as long");
        let mut b = b;
        for _ in 0..20 {
            let now = b.paused_until;
            b = checks_until_paused(b, now).1;
            let pause = b.paused_until.unix_millis() - now.unix_millis();
            assert!(pause <= 3_600_000, "{pause}");
        }
        let now = b.paused_until;
        let last = checks_until_paused(b, now).1;
        assert_eq!(last.paused_until, now.plus_millis(3_600_000), "capped");
    }

    #[test]
    fn counts_saturate_instead_of_wrapping() {
        let b = LoginBudget {
            attempts: u32::MAX,
            pauses: u32::MAX,
            paused_until: at(0),
        };
        let Attempt::Check { next } = b.attempt(at(1)) else {
            panic!("not paused");
        };
        assert_eq!(next.pauses, u32::MAX);
        assert_eq!(next.paused_until, at(1 + 3_600_000));
    }
}
