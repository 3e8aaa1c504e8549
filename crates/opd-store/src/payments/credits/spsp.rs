//! A round of SPSP credits: the packets one peer sent together to a
//! wallet address paid by its payment pointer, credited in one
//! transaction. A wallet address takes any amount (no incoming amount to
//! reach, nothing to expire), so only the ledger refuses a packet: the
//! peer's liquidity, or a balance past u64::MAX.
//!
//! With the money, the transaction raises two running totals: what the
//! wallet address received over SPSP (`spsp_received`, which its
//! `wallet_address.web_monetization` events report, the first credit since
//! the last event setting when the next is due), and, for packets of a
//! connection made with a receipt nonce and secret, what that connection
//! received (`spsp_receipt_totals`, which each Fulfill's STREAM receipt
//! signs). Both commit with the money or not at all, so a receipt never
//! counts a packet twice nor one that was not credited.
//!
//! On PostgreSQL the transfers and both totals travel in one round trip
//! (then the `COMMIT`); SQLite keeps amounts as text, so there the totals
//! are read, added in Rust and written, under its single writer.

use std::collections::BTreeMap;

use opd_core::ledger::{AccountKind, PostError, Receipts, TransferKind};
use opd_core::peer::Peer;
use opd_core::{Clock, Timestamp};

use super::ilp::{late_among, refused_group};
use super::{IlpCredit, IlpReceive, IlpRound, SpspWallet};
use crate::interledger::liquidity::{balance_before, liquidity_fact};
use crate::ledger::{across, send_post, AccountRef, Posting, SentPost};
use crate::platform::db::{num, params, Stmt, Ticket, Tx, Want};
use crate::platform::facts::Uncommitted;
use crate::platform::rows::{corrupt, Columns};
use crate::{Backend, SqlStore, StoreResult};

pub(super) static RECEIVED_TOTAL: Stmt = Stmt::new(&[
    "SELECT CAST(received AS TEXT) AS received FROM spsp_received \
     WHERE wallet_address_id = ?::uuid",
]);
/// SQLite: the new total, added in Rust; the report is due from the
/// first credit since the last one.
pub(super) static SET_RECEIVED_TOTAL: Stmt = Stmt::new(&[
    "INSERT INTO spsp_received (wallet_address_id, received, reported, report_at, updated_at) \
     VALUES (?::uuid, ?::numeric, 0, ?, ?) ON CONFLICT (wallet_address_id) DO UPDATE \
     SET received = excluded.received, \
     report_at = COALESCE(spsp_received.report_at, excluded.report_at), \
     updated_at = excluded.updated_at",
]);
pub(super) static ADD_RECEIVED_PG: Stmt = Stmt::new(&[
    "INSERT INTO spsp_received (wallet_address_id, received, reported, report_at, updated_at) \
     VALUES (?::uuid, ?::numeric, 0, ?, ?) ON CONFLICT (wallet_address_id) DO UPDATE \
     SET received = spsp_received.received + excluded.received, \
     report_at = COALESCE(spsp_received.report_at, excluded.report_at), \
     updated_at = excluded.updated_at",
]);
pub(super) static RECEIPT_TOTAL: Stmt = Stmt::new(&[
    "SELECT CAST(total AS TEXT) AS total FROM spsp_receipt_totals WHERE connection = ?",
]);
pub(super) static SET_RECEIPT_TOTAL: Stmt = Stmt::new(&[
    "INSERT INTO spsp_receipt_totals (connection, total, updated_at) VALUES (?, ?::numeric, ?) \
     ON CONFLICT (connection) DO UPDATE SET total = excluded.total, \
     updated_at = excluded.updated_at",
]);
pub(super) static ADD_RECEIPT_PG: Stmt = Stmt::new(&[
    "INSERT INTO spsp_receipt_totals (connection, total, updated_at) VALUES (?, ?::numeric, ?) \
     ON CONFLICT (connection) DO UPDATE \
     SET total = spsp_receipt_totals.total + excluded.total, updated_at = excluded.updated_at \
     RETURNING CAST(total AS TEXT) AS total",
]);

/// What a round moves: the sums of its packets (every one is taken), or
/// `None` when a sum would pass u64::MAX.
fn sums(receives: &[IlpReceive]) -> Option<(u64, u64)> {
    receives
        .iter()
        .try_fold((0u64, 0u64), |(amount, deliver), r| {
            Some((
                amount.checked_add(r.amount)?,
                deliver.checked_add(r.deliver)?,
            ))
        })
}

/// What each receipt connection of a round receives in it, by connection
/// (in order, so that concurrent rounds lock their rows in the same order).
fn per_connection(receives: &[IlpReceive]) -> BTreeMap<[u8; 32], u128> {
    let mut sums = BTreeMap::new();
    for r in receives {
        if let Some(c) = r.receipt_connection {
            *sums.entry(c).or_default() += u128::from(r.deliver);
        }
    }
    sums
}

/// Each packet's receipt total: what its connection received in all once
/// it arrived, from the connections' totals after the whole round (the
/// packets after it in the round not counted).
fn receipt_totals(receives: &[IlpReceive], after: &BTreeMap<[u8; 32], u128>) -> Vec<Option<u128>> {
    let mut left = after.clone();
    let mut totals: Vec<Option<u128>> = receives
        .iter()
        .rev()
        .map(|r| {
            let c = r.receipt_connection?;
            let total = left.get_mut(&c)?;
            let mine = *total;
            *total = total.saturating_sub(u128::from(r.deliver));
            Some(mine)
        })
        .collect();
    totals.reverse();
    totals
}

impl SqlStore {
    /// One round of SPSP credits; see [`super::CreditStore::credit_round`].
    pub(super) async fn spsp_round(
        &self,
        peer: &Peer,
        wallet: &SpspWallet,
        receives: &[IlpReceive],
        clock: &dyn Clock,
    ) -> StoreResult<IlpRound<'_>> {
        let Some(first) = receives.first() else {
            return Ok(IlpRound::Answered(Vec::new()));
        };
        let Some((amount, deliver)) = sums(receives) else {
            return Ok(refused_group(receives, IlpCredit::Overflow));
        };
        let at = receives.iter().map(|r| r.at).max().unwrap_or(first.at);
        let mut tx = self.db.begin().await?;
        let before = balance_before(&mut tx, peer).await?;
        let sent = send_moves(&mut tx, peer, wallet, first.receipts, (amount, deliver), at).await?;
        let report_at = at.plus_millis(wallet.report_after_ms);
        let received = send_received(&mut tx, wallet, deliver, report_at, at).await?;
        let connections = per_connection(receives);
        let mut receipts = Vec::with_capacity(connections.len());
        for (connection, sum) in &connections {
            receipts.push(send_receipt(&mut tx, connection, *sum, at).await?);
        }
        for posted in sent {
            match posted.read(&mut tx).await? {
                Ok(_) => {}
                Err(PostError::Insufficient { available }) => {
                    let alone = IlpCredit::InsufficientLiquidity { available };
                    return Ok(refused_group(receives, alone));
                }
                Err(PostError::Overflow) => {
                    return Ok(refused_group(receives, IlpCredit::Overflow));
                }
            }
        }
        received.read(&mut tx).await?;
        let mut after = BTreeMap::new();
        for ((connection, _), sent) in connections.iter().zip(receipts) {
            after.insert(*connection, sent.read(&mut tx).await?);
        }
        let facts = liquidity_fact(&mut tx, peer, before).await?;
        // Every row this credit moves is locked by now: the clock decides.
        let late = late_among(receives, receives.iter().map(|_| true), clock.now());
        if !late.is_empty() {
            // Dropped without a commit: rolled back, nothing moved.
            return Ok(IlpRound::Late(late));
        }
        let answers = receipt_totals(receives, &after)
            .into_iter()
            .map(|receipt_total| IlpCredit::ToWallet { receipt_total })
            .collect();
        Ok(IlpRound::Open(Uncommitted::open(
            tx,
            answers,
            facts.into_iter().collect(),
        )))
    }
}

/// Sends the transfers of the round: from the peer's liquidity to the
/// wallet address's balance (its SPSP account in external mode), through
/// the settlement accounts when the assets differ.
async fn send_moves(
    tx: &mut Tx<'_>,
    peer: &Peer,
    wallet: &SpspWallet,
    receipts: Receipts,
    (amount, deliver): (u64, u64),
    at: Timestamp,
) -> StoreResult<Vec<SentPost>> {
    let (owner, wallet_id) = (peer.id.to_string(), wallet.id.to_string());
    let source = AccountRef::new(AccountKind::Peer, &owner, &peer.asset);
    let kind = match receipts {
        Receipts::ToWallet => AccountKind::Wallet,
        Receipts::Held => AccountKind::Spsp,
    };
    let receiver = AccountRef::new(kind, &wallet_id, &wallet.asset);
    let mut sent = Vec::with_capacity(2);
    for (debit, credit, amount, kind) in
        across(source, receiver, amount, deliver, TransferKind::Receive)
    {
        let posting = Posting {
            debit,
            credit,
            amount,
            kind,
            reference: Some(&wallet_id),
            key: None,
            at,
        };
        sent.push(send_post(tx, posting).await?);
    }
    Ok(sent)
}

/// A running total raised in the transaction: queued on PostgreSQL (a
/// receipt total's new value comes back with the next round trip), already
/// written on SQLite.
enum SentTotal {
    Done(u128),
    /// The wallet address's total: only its statement's success is read.
    Added(Ticket),
    /// A receipt total, returned.
    Returned(Ticket),
}

impl SentTotal {
    /// The total after the round (0 for a wallet address's total on
    /// PostgreSQL, which is not read back).
    async fn read(self, tx: &mut Tx<'_>) -> StoreResult<u128> {
        match self {
            SentTotal::Done(total) => Ok(total),
            SentTotal::Added(ticket) => {
                tx.take(ticket).await?;
                Ok(0)
            }
            SentTotal::Returned(ticket) => {
                let rows = tx.take(ticket).await?.rows();
                let row = rows.first().ok_or_else(|| corrupt("a receipt total"))?;
                parse_total(&row.text("total")?)
            }
        }
    }
}

fn parse_total(text: &str) -> StoreResult<u128> {
    text.parse::<u128>().map_err(|_| corrupt("an SPSP total"))
}

/// Adds `deliver` to what the wallet address received over SPSP; its next
/// report is due at `report_at` unless one is due already.
async fn send_received(
    tx: &mut Tx<'_>,
    wallet: &SpspWallet,
    deliver: u64,
    report_at: Timestamp,
    at: Timestamp,
) -> StoreResult<SentTotal> {
    let id = wallet.id.to_string();
    if tx.backend() == Backend::Postgres {
        let p = params![&id, num(deliver), report_at, at];
        return Ok(SentTotal::Added(tx.send(
            &ADD_RECEIVED_PG,
            p,
            Want::Changed,
        )));
    }
    let before = match tx.fetch_opt(&RECEIVED_TOTAL, params![&id]).await? {
        Some(row) => parse_total(&row.text("received")?)?,
        None => 0,
    };
    let total = before + u128::from(deliver);
    let p = params![&id, total.to_string(), report_at, at];
    tx.execute(&SET_RECEIVED_TOTAL, p).await?;
    Ok(SentTotal::Done(total))
}

/// Adds `sum` to what the receipt connection received.
async fn send_receipt(
    tx: &mut Tx<'_>,
    connection: &[u8; 32],
    sum: u128,
    at: Timestamp,
) -> StoreResult<SentTotal> {
    let id = opd_core::hex::lower(connection);
    if tx.backend() == Backend::Postgres {
        let p = params![&id, sum.to_string(), at];
        return Ok(SentTotal::Returned(tx.send(&ADD_RECEIPT_PG, p, Want::Rows)));
    }
    let before = match tx.fetch_opt(&RECEIPT_TOTAL, params![&id]).await? {
        Some(row) => parse_total(&row.text("total")?)?,
        None => 0,
    };
    let total = before + sum;
    tx.execute(&SET_RECEIPT_TOTAL, params![&id, total.to_string(), at])
        .await?;
    Ok(SentTotal::Done(total))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::payments::credits::CreditTo;
    use opd_core::clock::SeededRandom;
    use opd_core::{Asset, WalletAddressId};

    const AT: Timestamp = Timestamp::from_unix_millis(1_000_000);

    fn packet(deliver: u64, connection: Option<u8>) -> IlpReceive {
        let wallet = SpspWallet {
            id: WalletAddressId::new(AT, &SeededRandom::new(1)),
            asset: Asset::parse("USD", 2).expect("asset"),
            report_after_ms: 1000,
        };
        IlpReceive {
            to: CreditTo::Wallet(wallet),
            amount: deliver + 1,
            deliver,
            receipts: Receipts::ToWallet,
            receipt_connection: connection.map(|c| [c; 32]),
            at: AT,
            deadline: AT.plus_millis(5000),
        }
    }

    #[test]
    fn each_packet_gets_its_connections_total_as_it_arrived() {
        let round = [
            packet(10, Some(1)),
            packet(5, None),
            packet(20, Some(2)),
            packet(7, Some(1)),
        ];
        let sums = per_connection(&round);
        assert_eq!(sums, BTreeMap::from([([1; 32], 17), ([2; 32], 20)]));
        // Connection 1 had 100 before the round, connection 2 nothing.
        let after = BTreeMap::from([([1; 32], 117), ([2; 32], 20)]);
        assert_eq!(
            receipt_totals(&round, &after),
            [Some(110), None, Some(20), Some(117)]
        );
    }

    #[test]
    fn a_round_moves_the_sum_of_its_packets_or_nothing_past_u64_max() {
        assert_eq!(sums(&[packet(10, None), packet(5, None)]), Some((17, 15)));
        let huge = IlpReceive {
            amount: u64::MAX,
            ..packet(1, None)
        };
        assert_eq!(sums(&[huge.clone(), packet(1, None)]), None);
        assert_eq!(sums(&[huge]), Some((u64::MAX, 1)));
    }
}
