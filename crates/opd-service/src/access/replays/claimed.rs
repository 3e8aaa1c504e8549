//! The requests whose claim rides with their own write (a replay log in
//! the database, `opd_store::claim`): a response given ahead of the write
//! ([`answer_ahead`]) or rendered by that write from what it read
//! ([`answer_at_commit`]), and how such a request ends ([`settle`]).

use std::sync::Arc;

use opd_core::outgoing_payment::GrantSpent;
use opd_store::claim::{ClaimState, RequestClaim};

use super::{answer, store, wait_for, Fingerprint, Outcome, ReplaySlot, StoredResponse};
use crate::access::AccessError;
use crate::Services;

/// Gives `respond`'s response as the answer of the request whose `claim`
/// this is, before the write that creates what it shows: that write
/// records it with the claim (one round trip less than recording it
/// after). `respond` is called only when the claim waits for a write
/// (never without a claim, nor when the replay log is not in the
/// database).
pub fn answer_ahead(
    claim: Option<&RequestClaim>,
    respond: impl FnOnce() -> Option<StoredResponse>,
) {
    let Some(claim) = claim else {
        return;
    };
    claim.answer_ahead(|| {
        let (status, headers, body) = store::encode(&respond()?)?;
        Some(opd_store::claim::Answer {
            status,
            headers,
            body,
        })
    });
}

/// Gives the response `render` makes, a function of what the grant had
/// spent before the request, as the answer of the request whose `claim`
/// this is: the transaction that creates the payment reads that spending,
/// renders the response and records it with its `COMMIT` (no write after
/// the request). Like [`answer_ahead`], only when the claim waits for a
/// write; `render` is not called otherwise, so a request without one pays
/// for nothing.
pub fn answer_at_commit<F>(claim: Option<&RequestClaim>, render: impl FnOnce() -> F)
where
    F: FnOnce(&GrantSpent) -> Option<StoredResponse> + Send + 'static,
{
    let Some(claim) = claim.filter(|c| c.state() == ClaimState::Waiting) else {
        return;
    };
    let respond = render();
    claim.answer_at_commit(Box::new(move |spent| {
        let (status, headers, body) = store::encode(&respond(spent)?)?;
        Some(opd_store::claim::Answer {
            status,
            headers,
            body,
        })
    }));
}

/// The end of a request whose claim rode with its writes: records its
/// response when its work committed, or gives the answer of the identical
/// request that committed first. `Ok(None)`: nothing of the request was
/// kept, so nothing is recorded and its own response stands.
pub async fn settle(
    services: &Services,
    fingerprint: &Fingerprint,
    slot: &ReplaySlot,
    outcome: impl FnOnce() -> Outcome,
) -> Result<Option<Arc<StoredResponse>>, AccessError> {
    match slot.claim.state() {
        ClaimState::Committed => {
            if let Err(e) = services.access.replays.finish(fingerprint, outcome()).await {
                tracing::warn!(error = %e, "could not record a response for replays");
            }
            Ok(None)
        }
        // Recorded with the request's write.
        ClaimState::Answered => Ok(None),
        ClaimState::Replayed => answer(wait_for(services, fingerprint).await?).map(Some),
        ClaimState::Unarmed | ClaimState::Waiting | ClaimState::InTransaction => Ok(None),
    }
}
