//! The rules of grant requests and continuations, on plain values: whether
//! a request may go on (its identifiers, its owner, the client's grants
//! waiting for a person), and what a continuation does. `super` reads what
//! they decide on and stores what they decide.

use opd_core::{Timestamp, WalletAddressId};
use opd_gnap::{ContinueDecision, GnapError, GrantState};

use crate::grants::{constant_time_eq, Grant};

/// What a grant request asks of this server, read before deciding: each
/// identifier with the active wallet address it names here (`None`: not
/// one of ours), and how many of the client's grants wait for a person
/// (for an interactive request from a client known by its wallet address).
#[derive(Debug, Clone)]
pub(super) struct Asked {
    pub(super) identifiers: Vec<(String, Option<WalletAddressId>)>,
    pub(super) waiting: Option<u64>,
}

/// Whether a grant request may go on: every identifier must be a wallet
/// address served here (this server grants access to nothing else), an
/// interactive grant asks for one wallet address only (its owner decides),
/// and a client cannot pile up grants waiting for a person. Returns the
/// wallet address whose owner decides an interactive grant.
pub(super) fn admit(
    asked: &Asked,
    interactive: bool,
    max_pending: u32,
) -> Result<Option<WalletAddressId>, GnapError> {
    let mut owner: Option<WalletAddressId> = None;
    for (identifier, wallet) in &asked.identifiers {
        let wallet = wallet.ok_or_else(|| {
            GnapError::invalid_request(format!(
                "identifier {identifier} is not a wallet address on this server"
            ))
        })?;
        match owner {
            Some(o) if o != wallet && interactive => {
                return Err(GnapError::invalid_request(
                    "an interactive grant can only ask for access to one wallet address",
                ))
            }
            _ => owner = Some(wallet),
        }
    }
    if let Some(waiting) = asked.waiting {
        if waiting >= u64::from(max_pending) {
            return Err(GnapError::new(
                opd_gnap::GnapErrorCode::TooManyAttempts,
                format!("this client already has {waiting} grants waiting for a decision"),
            ));
        }
    }
    Ok(if interactive { owner } else { None })
}

pub(super) fn token_used() -> GnapError {
    GnapError::invalid_continuation("the grant's token was already issued").with_status(401)
}

/// What a continuation request does to `grant` at `now`: with the
/// `interact_ref` of its interaction, or without one to poll (no sooner
/// than `wait` seconds after the last). A grant whose token was issued is
/// never continued again.
pub(super) fn continuation(
    grant: &Grant,
    interact_ref: Option<&str>,
    wait: u64,
    now: Timestamp,
) -> Result<ContinueDecision, GnapError> {
    let record = &grant.record;
    if grant.state == GrantState::Finalized(opd_gnap::FinalizationReason::Issued) {
        return Err(token_used());
    }
    let Some(r) = interact_ref else {
        let has_finish = record.finish_uri.is_some();
        let last = record.last_continued_at;
        return opd_gnap::poll_decision(grant.state, last, wait, now, has_finish);
    };
    let matches = record
        .interact_ref
        .as_deref()
        .is_some_and(|mine| constant_time_eq(mine.as_bytes(), r.as_bytes()));
    if !matches {
        let unknown = GnapError::invalid_continuation("unknown interaction reference");
        return Err(unknown.with_status(404));
    }
    opd_gnap::continue_with_ref_decision(grant.state, record.last_continued_at, 0, now)
}

#[cfg(test)]
mod tests {
    use super::*;
    use opd_core::GrantId;
    use opd_gnap::ClientIdent;
    use opd_gnap::{FinalizationReason, GnapErrorCode};
    use opd_store::GrantRecord;
    use uuid::Uuid;

    const NOW: Timestamp = Timestamp::from_unix_millis(1_700_000_000_000);

    fn wallet(n: u128) -> Option<WalletAddressId> {
        Some(WalletAddressId::from_uuid(Uuid::from_u128(n)))
    }

    fn asked(wallets: &[Option<WalletAddressId>], waiting: Option<u64>) -> Asked {
        let identifiers = wallets
            .iter()
            .enumerate()
            .map(|(i, w)| (format!("https://bank.example/w{i}"), *w))
            .collect();
        Asked {
            identifiers,
            waiting,
        }
    }

    fn refusal(result: Result<Option<WalletAddressId>, GnapError>) -> (GnapErrorCode, String) {
        let e = result.unwrap_err();
        (e.code, e.description)
    }

    #[test]
    fn a_grant_asks_only_for_wallet_addresses_served_here() {
        let unknown = asked(&[wallet(1), None], None);
        let (code, why) = refusal(admit(&unknown, false, 5));
        assert_eq!(code, GnapErrorCode::InvalidRequest);
        assert_eq!(
            why,
            "identifier https://bank.example/w1 is not a wallet address on this server"
        );
        // No identifier at all (incoming payments to anyone's, say): fine.
        assert_eq!(admit(&asked(&[], None), false, 5), Ok(None));
    }

    #[test]
    fn an_interactive_grant_is_for_one_wallet_address_whose_owner_decides() {
        let one = asked(&[wallet(1), wallet(1)], Some(0));
        assert_eq!(admit(&one, true, 5), Ok(wallet(1)));
        let two = asked(&[wallet(1), wallet(2)], Some(0));
        let (code, _) = refusal(admit(&two, true, 5));
        assert_eq!(code, GnapErrorCode::InvalidRequest);
        // Without interaction, several are fine, and no owner decides.
        assert_eq!(
            admit(&asked(&[wallet(1), wallet(2)], None), false, 5),
            Ok(None)
        );
    }

    #[test]
    fn a_client_cannot_pile_up_grants_waiting_for_a_person() {
        let below = asked(&[wallet(1)], Some(4));
        assert_eq!(admit(&below, true, 5), Ok(wallet(1)));
        let at = asked(&[wallet(1)], Some(5));
        let (code, why) = refusal(admit(&at, true, 5));
        assert_eq!(code, GnapErrorCode::TooManyAttempts);
        assert_eq!(
            why,
            "this client already has 5 grants waiting for a decision"
        );
        // An unknown identifier is reported first.
        let both = asked(&[None], Some(5));
        assert_eq!(
            refusal(admit(&both, true, 5)).0,
            GnapErrorCode::InvalidRequest
        );
    }

    fn grant(state: GrantState, interact_ref: Option<&str>, finish: bool) -> Grant {
        let random = opd_core::SeededRandom::new(1);
        let record = GrantRecord {
            id: GrantId::new(NOW, &random),
            tenant: opd_core::TenantId::operator(),
            state: String::new(),
            finalization: None,
            client_wallet_address: Some("https://client.example/c".into()),
            client_jwk: None,
            access: "[]".into(),
            continue_id: "c1".into(),
            continue_token_digest: String::new(),
            interact_id: Some("i1".into()),
            interact_nonce: Some("n1".into()),
            interact_ref: interact_ref.map(str::to_owned),
            interaction_state: Some("pending".into()),
            interaction_expires_at: None,
            finish_uri: finish.then(|| "https://client.example/finish".into()),
            client_nonce: None,
            wallet_address_id: None,
            last_continued_at: NOW.plus_seconds(-10),
            version: 0,
            created_at: NOW.plus_seconds(-60),
            updated_at: NOW.plus_seconds(-10),
        };
        Grant {
            record,
            state,
            access: Vec::new(),
            client: ClientIdent::WalletAddress("https://client.example/c".into()),
        }
    }

    fn code(result: Result<ContinueDecision, GnapError>) -> (GnapErrorCode, u16) {
        let e = result.unwrap_err();
        (e.code, e.status)
    }

    #[test]
    fn polling_waits_between_requests_and_issues_once_approved() {
        let pending = grant(GrantState::Pending, None, false);
        let poll = continuation(&pending, None, 5, NOW);
        assert_eq!(poll, Ok(ContinueDecision::StillPending));
        // Ten seconds after the last: too fast with a wait of 11, not 10.
        assert_eq!(
            code(continuation(&pending, None, 11, NOW)).0,
            GnapErrorCode::TooFast
        );
        let at_wait = continuation(&pending, None, 10, NOW);
        assert_eq!(at_wait, Ok(ContinueDecision::StillPending));
        let approved = grant(GrantState::Approved, None, false);
        let issue = continuation(&approved, None, 5, NOW);
        assert_eq!(issue, Ok(ContinueDecision::IssueToken));
        // A grant with a finish redirect is continued with its reference.
        let redirected = grant(GrantState::Approved, None, true);
        let refused = code(continuation(&redirected, None, 5, NOW));
        assert_eq!(refused.0, GnapErrorCode::RequestDenied);
    }

    #[test]
    fn a_reference_must_be_the_grants_own() {
        let approved = grant(GrantState::Approved, Some("ref-1"), true);
        let issue = continuation(&approved, Some("ref-1"), 5, NOW);
        assert_eq!(issue, Ok(ContinueDecision::IssueToken));
        let wrong = continuation(&approved, Some("ref-2"), 5, NOW);
        assert_eq!(code(wrong), (GnapErrorCode::InvalidContinuation, 404));
        let none_yet = grant(GrantState::Pending, None, true);
        let early = continuation(&none_yet, Some("ref-1"), 5, NOW);
        assert_eq!(code(early), (GnapErrorCode::InvalidContinuation, 404));
    }

    #[test]
    fn an_issued_grant_is_never_continued_again() {
        let issued = GrantState::Finalized(FinalizationReason::Issued);
        for (reference, finish) in [(None, false), (Some("ref-1"), true)] {
            let g = grant(issued, reference, finish);
            let again = continuation(&g, reference, 0, NOW);
            assert_eq!(code(again), (GnapErrorCode::InvalidContinuation, 401));
        }
    }
}
