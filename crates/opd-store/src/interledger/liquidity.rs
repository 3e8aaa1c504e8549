//! A peer's liquidity: its ledger account (kind `peer`), and the fact
//! that its balance crossed one of the thresholds the operator set
//! (`peer.liquidity_*`), for every move of it (an ILP credit, a deposit or
//! a withdrawal).

use opd_core::ledger::AccountKind;
use opd_core::peer::{liquidity_crossing, Peer};

use crate::ledger;
use crate::platform::db::Tx;
use crate::platform::facts::Fact;
use crate::StoreResult;

/// The id of the peer's liquidity account.
pub(crate) fn liquidity_account(peer: &Peer) -> String {
    AccountKind::Peer.account_id(&peer.id.to_string(), &peer.asset)
}

/// The peer's balance before a move, read only when the peer has
/// thresholds (it costs a statement); `None` otherwise.
pub(crate) async fn balance_before(tx: &mut Tx<'_>, peer: &Peer) -> StoreResult<Option<u64>> {
    if peer.liquidity_low.is_none() && peer.liquidity_high.is_none() {
        return Ok(None);
    }
    Ok(Some(
        ledger::balance_or_zero(tx, &liquidity_account(peer)).await?,
    ))
}

/// The `peer.liquidity_*` fact when the peer's balance crossed a threshold
/// since `before` (from [`balance_before`]; `None`: the peer has no
/// thresholds).
pub(crate) async fn liquidity_fact(
    tx: &mut Tx<'_>,
    peer: &Peer,
    before: Option<u64>,
) -> StoreResult<Option<Fact>> {
    let Some(before) = before else {
        return Ok(None);
    };
    let balance = ledger::balance_or_zero(tx, &liquidity_account(peer)).await?;
    Ok(
        liquidity_crossing(peer, before, balance).map(|zone| Fact::LiquidityCrossed {
            peer: peer.clone(),
            zone,
            balance,
        }),
    )
}
