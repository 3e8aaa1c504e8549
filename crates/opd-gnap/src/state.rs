//! The grant state machine and the continuation rules, as pure functions
//! of the stored state and the injected time.
//!
//! ```text
//!             approve             issue
//!  Pending ───────────▶ Approved ───────▶ Finalized(Issued)
//!     │ reject                              │
//!     ▼                                     │ revoke (from any state
//!  Finalized(Rejected)                      ▼  but Revoked)
//!                                        Finalized(Revoked)
//! ```
//!
//! A non-interactive grant starts [`Approved`](GrantState::Approved) and is
//! [issued](GrantState::issue) at once, in the same step that returns its
//! token. (The reference server leaves such grants `APPROVED`, so polling
//! their continuation URI issues a second token; opd does not.)

use std::fmt;

use opd_core::Timestamp;

use crate::error::GnapError;

/// Why a grant was finalized.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FinalizationReason {
    /// The access token was issued.
    Issued,
    /// The client cancelled the grant (or an operator revoked it).
    Revoked,
    /// The resource owner denied the interaction.
    Rejected,
}

/// The state of a grant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GrantState {
    /// Waiting for the resource owner's interaction.
    Pending,
    /// Approved; the token has not been handed out yet.
    Approved,
    /// Nothing more will happen except revocation.
    Finalized(FinalizationReason),
}

/// An event that is not allowed in the grant's current state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("cannot {event} a grant that is {from}")]
pub struct TransitionError {
    /// The state the grant was in.
    pub from: GrantState,
    /// `approve`, `reject`, `issue` or `revoke`.
    pub event: &'static str,
}

impl GrantState {
    /// Every state, for storage round trips.
    pub const ALL: [GrantState; 5] = [
        Self::Pending,
        Self::Approved,
        Self::Finalized(FinalizationReason::Issued),
        Self::Finalized(FinalizationReason::Revoked),
        Self::Finalized(FinalizationReason::Rejected),
    ];

    /// The state of a new grant.
    pub const fn initial(requires_interaction: bool) -> Self {
        if requires_interaction {
            Self::Pending
        } else {
            Self::Approved
        }
    }

    /// A single-word storage form: `pending`, `approved`, `issued`,
    /// `revoked` or `rejected`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Approved => "approved",
            Self::Finalized(FinalizationReason::Issued) => "issued",
            Self::Finalized(FinalizationReason::Revoked) => "revoked",
            Self::Finalized(FinalizationReason::Rejected) => "rejected",
        }
    }

    /// Parses [`as_str`](Self::as_str).
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|g| g.as_str() == s)
    }

    /// `Pending` → `Approved` (the resource owner accepted).
    pub fn approve(self) -> Result<Self, TransitionError> {
        match self {
            Self::Pending => Ok(Self::Approved),
            from => Err(TransitionError {
                from,
                event: "approve",
            }),
        }
    }

    /// `Pending` → `Finalized(Rejected)` (the resource owner denied).
    pub fn reject(self) -> Result<Self, TransitionError> {
        match self {
            Self::Pending => Ok(Self::Finalized(FinalizationReason::Rejected)),
            from => Err(TransitionError {
                from,
                event: "reject",
            }),
        }
    }

    /// `Approved` → `Finalized(Issued)` (the token is handed out; once).
    pub fn issue(self) -> Result<Self, TransitionError> {
        match self {
            Self::Approved => Ok(Self::Finalized(FinalizationReason::Issued)),
            from => Err(TransitionError {
                from,
                event: "issue",
            }),
        }
    }

    /// Any state but `Finalized(Revoked)` → `Finalized(Revoked)`. Revoking
    /// a grant also revokes its tokens (the caller's job).
    pub fn revoke(self) -> Result<Self, TransitionError> {
        match self {
            Self::Finalized(FinalizationReason::Revoked) => Err(TransitionError {
                from: self,
                event: "revoke",
            }),
            _ => Ok(Self::Finalized(FinalizationReason::Revoked)),
        }
    }

    /// Whether the grant was revoked.
    pub const fn is_revoked(self) -> bool {
        matches!(self, Self::Finalized(FinalizationReason::Revoked))
    }

    /// Whether tokens of this grant may be used, rotated and introspected
    /// as active: the grant was issued (or is approved) and not revoked.
    pub const fn tokens_usable(self) -> bool {
        matches!(
            self,
            Self::Approved | Self::Finalized(FinalizationReason::Issued)
        )
    }
}

impl fmt::Display for GrantState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a successful continuation request does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ContinueDecision {
    /// Still waiting: set `last_continued_at = now` and answer with
    /// `continue` (and `wait`) only.
    StillPending,
    /// Issue the access token, move the grant to
    /// [`GrantState::issue`]d, and answer with `access_token` and
    /// `continue`.
    IssueToken,
}

fn check_wait(
    last_continued_at: Timestamp,
    wait_seconds: u64,
    now: Timestamp,
) -> Result<(), GnapError> {
    let wait = i64::try_from(wait_seconds).unwrap_or(i64::MAX);
    if now < last_continued_at.plus_seconds(wait) {
        return Err(GnapError::too_fast(format!(
            "continued too fast; wait {wait_seconds} seconds between continuation requests"
        )));
    }
    Ok(())
}

/// A continuation request without `interact_ref` (a poll), for a grant
/// found by continue id and continuation token (an unknown or revoked
/// grant is the caller's `invalid_continuation`).
///
/// In order, as the reference server:
/// 1. `now < last_continued_at + wait_seconds` → `too_fast` (400);
/// 2. the grant has a finish method → `request_denied` (401): it must be
///    continued with the `interact_ref` from the finish redirect;
/// 3. `Pending` → [`ContinueDecision::StillPending`];
///    `Approved` → [`ContinueDecision::IssueToken`];
///    otherwise → `request_denied` (401).
pub fn poll_decision(
    state: GrantState,
    last_continued_at: Timestamp,
    wait_seconds: u64,
    now: Timestamp,
    has_finish_method: bool,
) -> Result<ContinueDecision, GnapError> {
    check_wait(last_continued_at, wait_seconds, now)?;
    if has_finish_method {
        return Err(GnapError::request_denied(
            "grant cannot be polled; continue with the interact_ref",
        ));
    }
    match state {
        GrantState::Pending => Ok(ContinueDecision::StillPending),
        GrantState::Approved => Ok(ContinueDecision::IssueToken),
        GrantState::Finalized(_) => Err(GnapError::request_denied(format!(
            "grant is {state} and cannot be continued"
        ))),
    }
}

/// A continuation request with `interact_ref`, once the caller has checked
/// that the reference belongs to this grant's interaction (otherwise:
/// `invalid_continuation`, 404).
///
/// In order:
/// 1. a rejected or revoked grant → `invalid_continuation` (404);
/// 2. `now < last_continued_at + wait_seconds` → `too_fast` (400), as the
///    reference server does;
/// 3. `Approved` → [`ContinueDecision::IssueToken`]; `Pending` (not yet
///    approved) or already issued → `request_denied` (401): a token is
///    issued once.
pub fn continue_with_ref_decision(
    state: GrantState,
    last_continued_at: Timestamp,
    wait_seconds: u64,
    now: Timestamp,
) -> Result<ContinueDecision, GnapError> {
    if matches!(
        state,
        GrantState::Finalized(FinalizationReason::Rejected | FinalizationReason::Revoked)
    ) {
        return Err(GnapError::invalid_continuation(format!("grant is {state}")).with_status(404));
    }
    check_wait(last_continued_at, wait_seconds, now)?;
    match state {
        GrantState::Approved => Ok(ContinueDecision::IssueToken),
        GrantState::Pending => Err(GnapError::request_denied(
            "the interaction has not been approved",
        )),
        GrantState::Finalized(_) => Err(GnapError::request_denied(
            "the grant's token was already issued",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::GnapErrorCode;

    const ISSUED: GrantState = GrantState::Finalized(FinalizationReason::Issued);
    const REVOKED: GrantState = GrantState::Finalized(FinalizationReason::Revoked);
    const REJECTED: GrantState = GrantState::Finalized(FinalizationReason::Rejected);

    #[test]
    fn transitions() {
        assert_eq!(GrantState::initial(true), GrantState::Pending);
        assert_eq!(GrantState::initial(false), GrantState::Approved);
        assert_eq!(GrantState::Pending.approve(), Ok(GrantState::Approved));
        assert_eq!(GrantState::Pending.reject(), Ok(REJECTED));
        assert_eq!(GrantState::Approved.issue(), Ok(ISSUED));
        for s in GrantState::ALL {
            assert_eq!(s.approve().is_ok(), s == GrantState::Pending, "{s}");
            assert_eq!(s.reject().is_ok(), s == GrantState::Pending, "{s}");
            assert_eq!(s.issue().is_ok(), s == GrantState::Approved, "{s}");
            assert_eq!(s.revoke().is_ok(), s != REVOKED, "{s}");
            assert_eq!(GrantState::parse(s.as_str()), Some(s));
        }
        assert_eq!(GrantState::parse("PENDING"), None);
        let e = ISSUED.issue().unwrap_err();
        assert_eq!(e.to_string(), "cannot issue a grant that is issued");
        assert!(REVOKED.is_revoked() && !ISSUED.is_revoked());
        assert!(ISSUED.tokens_usable() && GrantState::Approved.tokens_usable());
        assert!(!REVOKED.tokens_usable() && !REJECTED.tokens_usable());
        assert!(!GrantState::Pending.tokens_usable());
    }

    fn t(s: i64) -> Timestamp {
        Timestamp::from_unix_millis(s * 1000)
    }

    #[test]
    fn polling() {
        let code = |r: Result<ContinueDecision, GnapError>| r.unwrap_err().code;
        // Too fast comes first, even with a finish method.
        let e = poll_decision(GrantState::Pending, t(100), 5, t(104), true).unwrap_err();
        assert_eq!((e.code, e.status), (GnapErrorCode::TooFast, 400));
        assert_eq!(
            code(poll_decision(GrantState::Pending, t(100), 5, t(105), true)),
            GnapErrorCode::RequestDenied
        );
        assert_eq!(
            poll_decision(GrantState::Pending, t(100), 5, t(105), false),
            Ok(ContinueDecision::StillPending)
        );
        assert_eq!(
            poll_decision(GrantState::Approved, t(100), 5, t(200), false),
            Ok(ContinueDecision::IssueToken)
        );
        assert_eq!(
            poll_decision(GrantState::Approved, t(100), 0, t(100), false),
            Ok(ContinueDecision::IssueToken)
        );
        for s in [ISSUED, REVOKED, REJECTED] {
            let e = poll_decision(s, t(0), 5, t(100), false).unwrap_err();
            assert_eq!((e.code, e.status), (GnapErrorCode::RequestDenied, 401));
        }
        // A huge wait never overflows.
        assert_eq!(
            code(poll_decision(
                GrantState::Pending,
                t(0),
                u64::MAX,
                t(100),
                false
            )),
            GnapErrorCode::TooFast
        );
    }

    #[test]
    fn continuing_with_interact_ref() {
        assert_eq!(
            continue_with_ref_decision(GrantState::Approved, t(0), 5, t(5)),
            Ok(ContinueDecision::IssueToken)
        );
        let e = continue_with_ref_decision(GrantState::Approved, t(0), 5, t(4)).unwrap_err();
        assert_eq!(e.code, GnapErrorCode::TooFast);
        for s in [REJECTED, REVOKED] {
            let e = continue_with_ref_decision(s, t(0), 5, t(4)).unwrap_err();
            assert_eq!(
                (e.code, e.status),
                (GnapErrorCode::InvalidContinuation, 404)
            );
        }
        for s in [GrantState::Pending, ISSUED] {
            let e = continue_with_ref_decision(s, t(0), 5, t(10)).unwrap_err();
            assert_eq!((e.code, e.status), (GnapErrorCode::RequestDenied, 401));
        }
    }
}
