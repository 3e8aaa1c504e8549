//! How money moves: [`post`] one transfer between two accounts (created
//! on first use), inside the transaction of the state change it belongs
//! to. On PostgreSQL a posting is one statement that waits for the
//! transaction's next round trip ([`send_post`]), so several postings and
//! other statements travel together; on SQLite the arithmetic runs step by
//! step under the single writer.

use opd_core::ledger::{post_balances, AccountKind, PostError, Transfer, TransferKind};
use opd_core::{Asset, Timestamp};

use super::{balance_of, ensure_account, parse_balance, INSERT_TRANSFER, SET_BALANCE};
use crate::platform::db::{num, params, Param, Row, Stmt, Ticket, Tx, Want};
use crate::platform::rows::{corrupt, Columns};
use crate::{Backend, StoreResult};

/// An account, named by what it is for: created on first use.
#[derive(Debug, Clone, Copy)]
pub(crate) struct AccountRef<'a> {
    pub(crate) kind: AccountKind,
    pub(crate) owner: &'a str,
    pub(crate) asset: &'a Asset,
}

impl<'a> AccountRef<'a> {
    pub(crate) fn new(kind: AccountKind, owner: &'a str, asset: &'a Asset) -> Self {
        Self { kind, owner, asset }
    }

    /// The account of the outside world in `asset`.
    pub(crate) fn settlement(asset: &'a Asset) -> Self {
        Self::new(AccountKind::Settlement, "settlement", asset)
    }

    pub(crate) fn id(&self) -> String {
        self.kind.account_id(self.owner, self.asset)
    }
}

/// One transfer to post.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Posting<'a> {
    pub(crate) debit: AccountRef<'a>,
    pub(crate) credit: AccountRef<'a>,
    pub(crate) amount: u64,
    pub(crate) kind: TransferKind,
    pub(crate) reference: Option<&'a str>,
    /// Idempotency key and request digest (admin deposits/withdrawals).
    pub(crate) key: Option<(&'a str, &'a str)>,
    pub(crate) at: Timestamp,
}

/// On PostgreSQL a posting is one statement: both accounts are created or
/// moved by one upsert (rows in id order, so concurrent postings lock in
/// the same order and cannot deadlock) and the transfer is inserted; the
/// new balances come back to be checked. SQLite keeps amounts as text (its
/// integers are 64-bit signed), so there the arithmetic happens in Rust
/// under its single writer, where extra statements cost no round trip.
static POST_PG: Stmt = Stmt::new(&[
    "WITH moved AS (INSERT INTO ledger_accounts (id, kind, owner_id, asset_code, asset_scale, \
     balance, created_at) VALUES (?, ?, ?, ?, ?, ?::numeric, ?), (?, ?, ?, ?, ?, ?::numeric, ?) \
     ON CONFLICT (id) DO UPDATE SET balance = ledger_accounts.balance + excluded.balance \
     RETURNING id, CAST(balance AS TEXT) AS balance), \
     posted AS (INSERT INTO ledger_transfers (id, debit_account, credit_account, amount, kind, \
     reference, idempotency_key, request_digest, created_at) \
     VALUES (?, ?, ?, ?::numeric, ?, ?, ?, ?, ?)) \
     SELECT id, balance FROM moved",
]);

/// The statements only PostgreSQL runs.
pub(crate) static PG_STATEMENTS: &[&Stmt] = &[&POST_PG];

/// Posts one transfer; `Err` when a liability account would go negative or
/// a balance would pass ±u64::MAX. The transaction must then not commit
/// (on PostgreSQL the balances already moved inside it): every caller
/// returns without committing, which rolls it back.
pub(crate) async fn post(
    tx: &mut Tx<'_>,
    p: Posting<'_>,
) -> StoreResult<Result<Transfer, PostError>> {
    send_post(tx, p).await?.read(tx).await
}

/// One move of money: debit, credit, amount, kind.
pub(crate) type Move<'a> = (AccountRef<'a>, AccountRef<'a>, u64, TransferKind);

/// The moves that take `sent` from `from` to `to` as `delivered` in `to`'s
/// asset: one move when the assets are equal, else through the two
/// settlement accounts (the `Send` out of `from`'s asset, then `kind` into
/// `to`).
pub(crate) fn across<'a>(
    from: AccountRef<'a>,
    to: AccountRef<'a>,
    sent: u64,
    delivered: u64,
    kind: TransferKind,
) -> Vec<Move<'a>> {
    if from.asset == to.asset {
        return vec![(from, to, delivered, kind)];
    }
    let out = AccountRef::settlement(from.asset);
    let inn = AccountRef::settlement(to.asset);
    vec![
        (from, out, sent, TransferKind::Send),
        (inn, to, delivered, kind),
    ]
}

/// A posting sent in a transaction; [`read`](Self::read) gives its result.
pub(crate) struct SentPost {
    transfer: Transfer,
    state: Sent,
}

enum Sent {
    /// Already checked (SQLite, or nothing to move).
    Done(Result<(), PostError>),
    /// Queued on PostgreSQL: the new balances come back with the
    /// transaction's next round trip.
    Queued {
        ticket: Ticket,
        debit_kind: AccountKind,
        amount: u64,
    },
}

/// Sends one posting with the rules of [`post`]. On PostgreSQL its single
/// statement waits for the transaction's next round trip, so several
/// postings and other statements travel together; SQLite runs it now.
pub(crate) async fn send_post(tx: &mut Tx<'_>, p: Posting<'_>) -> StoreResult<SentPost> {
    let (debit, credit) = (p.debit.id(), p.credit.id());
    let transfer = Transfer {
        id: format!(
            "{}:{}:{}",
            p.kind,
            p.reference.unwrap_or("-"),
            // Time-ordered, so a reference's transfers are appended to
            // the primary key's index rather than scattered through it.
            uuid::Uuid::now_v7().simple()
        ),
        debit_account: debit.clone(),
        credit_account: credit.clone(),
        amount: p.amount,
        kind: p.kind,
        reference: p.reference.map(str::to_owned),
        idempotency_key: p.key.map(|k| k.0.to_owned()),
        created_at: p.at,
    };
    let state = if p.amount == 0 {
        Sent::Done(Ok(()))
    } else {
        match tx.backend() {
            Backend::Postgres => {
                let amount = i128::from(p.amount);
                let mut rows = [(p.debit, -amount), (p.credit, amount)];
                rows.sort_by_key(|(a, _)| a.id());
                let mut params = Vec::with_capacity(23);
                for (account, delta) in &rows {
                    params.extend(account_params(account, *delta, p.at));
                }
                params.extend(transfer_params(&transfer, p.key));
                Sent::Queued {
                    ticket: tx.send(&POST_PG, &params, Want::Rows),
                    debit_kind: p.debit.kind,
                    amount: p.amount,
                }
            }
            Backend::Sqlite => Sent::Done(post_step_by_step(tx, &p, &transfer).await?),
        }
    };
    Ok(SentPost { transfer, state })
}

impl SentPost {
    /// The posting's result: `Err` when a liability account would go
    /// negative or a balance would pass ±u64::MAX (the transaction must
    /// then not commit).
    pub(crate) async fn read(self, tx: &mut Tx<'_>) -> StoreResult<Result<Transfer, PostError>> {
        let checked = match self.state {
            Sent::Done(checked) => checked,
            Sent::Queued {
                ticket,
                debit_kind,
                amount,
            } => {
                let moved = tx.take(ticket).await?.rows();
                check_moved(&moved, &self.transfer, debit_kind, amount)?
            }
        };
        Ok(checked.map(|()| self.transfer))
    }
}

fn account_params(a: &AccountRef<'_>, balance: i128, at: Timestamp) -> [Param; 7] {
    [
        a.id().into(),
        a.kind.as_str().into(),
        a.owner.into(),
        a.asset.code.as_str().into(),
        a.asset.scale.into(),
        balance.to_string().into(),
        at.into(),
    ]
}

fn transfer_params(t: &Transfer, key: Option<(&str, &str)>) -> [Param; 9] {
    [
        (&t.id).into(),
        (&t.debit_account).into(),
        (&t.credit_account).into(),
        num(t.amount),
        t.kind.as_str().into(),
        t.reference.as_deref().into(),
        key.map(|k| k.0).into(),
        key.map(|k| k.1).into(),
        t.created_at.into(),
    ]
}

/// Checks the balances a PostgreSQL posting returned by the same rule as
/// the step-by-step path, on the balances before.
fn check_moved(
    moved: &[Row],
    t: &Transfer,
    debit_kind: AccountKind,
    amount: u64,
) -> StoreResult<Result<(), PostError>> {
    let mut new_debit = None;
    let mut new_credit = None;
    for row in moved {
        let balance = parse_balance(&row.text("balance")?)?;
        if row.text("id")? == t.debit_account {
            new_debit = Some(balance);
        } else {
            new_credit = Some(balance);
        }
    }
    let (Some(new_debit), Some(new_credit)) = (new_debit, new_credit) else {
        return Err(corrupt("a posting moved fewer than two accounts"));
    };
    let delta = i128::from(amount);
    Ok(post_balances(debit_kind, new_debit + delta, new_credit - delta, amount).map(|_| ()))
}

async fn post_step_by_step(
    tx: &mut Tx<'_>,
    p: &Posting<'_>,
    t: &Transfer,
) -> StoreResult<Result<(), PostError>> {
    let (debit, credit) = (&t.debit_account, &t.credit_account);
    for a in [p.debit, p.credit] {
        ensure_account(tx, a.kind, a.owner, a.asset, p.at).await?;
    }
    // SQLite has one writer and no row locks, so the order of the reads
    // does not matter (PostgreSQL's statement locks in account order).
    let debit_balance = balance_of(tx, debit).await?;
    let credit_balance = balance_of(tx, credit).await?;
    let (new_debit, new_credit) =
        match post_balances(p.debit.kind, debit_balance, credit_balance, p.amount) {
            Ok(b) => b,
            Err(e) => return Ok(Err(e)),
        };
    tx.execute(&SET_BALANCE, params![new_debit.to_string(), debit])
        .await?;
    tx.execute(&SET_BALANCE, params![new_credit.to_string(), credit])
        .await?;
    tx.execute(&INSERT_TRANSFER, &transfer_params(t, p.key))
        .await?;
    Ok(Ok(()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(moves: &[Move<'_>]) -> Vec<(String, String, u64)> {
        moves
            .iter()
            .map(|(from, to, amount, _)| (from.id(), to.id(), *amount))
            .collect()
    }

    #[test]
    fn money_crosses_assets_only_through_the_settlement_accounts() {
        let usd = Asset::parse("USD", 2).unwrap();
        let eur = Asset::parse("EUR", 2).unwrap();
        let peer = AccountRef::new(AccountKind::Peer, "p", &usd);
        let bob = AccountRef::new(AccountKind::Wallet, "bob", &usd);
        let carol = AccountRef::new(AccountKind::Wallet, "carol", &eur);
        let same = across(peer, bob, 100, 100, TransferKind::Receive);
        assert_eq!(ids(&same), [(peer.id(), bob.id(), 100)]);
        let crossing = across(peer, carol, 100, 90, TransferKind::Receive);
        let (out, inn) = (AccountRef::settlement(&usd), AccountRef::settlement(&eur));
        assert_eq!(
            ids(&crossing),
            [(peer.id(), out.id(), 100), (inn.id(), carol.id(), 90)]
        );
    }
}
