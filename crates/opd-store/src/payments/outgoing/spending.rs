//! What each grant has spent per interval. A payment's amounts are
//! reserved in the transaction that creates it and released when it fails;
//! the row of a (grant, interval) is also the lock that serializes
//! concurrent creates under one grant.

use opd_core::outgoing_payment::GrantSpent;
use opd_core::{Amount, Asset, Timestamp};

use crate::platform::db::{num, params, Stmt, Ticket, Tx, Want};
use crate::platform::rows::{self, Columns};
use crate::{Backend, StoreResult};

static CREATE_IF_MISSING: Stmt = Stmt::new(&[
    "INSERT INTO grant_spending (grant_id, interval_start, interval_end, debit_asset_code, \
     debit_asset_scale, debit_spent, receive_asset_code, receive_asset_scale, receive_spent, \
     updated_at) VALUES (?, ?, ?, ?, ?, ?::numeric, ?, ?, ?::numeric, ?) \
     ON CONFLICT (grant_id, interval_start) DO NOTHING",
]);
static SPENT_FOR_UPDATE: Stmt = Stmt::new(&[
    "SELECT debit_asset_code, CAST(debit_asset_scale AS BIGINT) AS debit_asset_scale, \
     CAST(debit_spent AS TEXT) AS debit_spent, receive_asset_code, \
     CAST(receive_asset_scale AS BIGINT) AS receive_asset_scale, \
     CAST(receive_spent AS TEXT) AS receive_spent \
     FROM grant_spending WHERE grant_id = ? AND interval_start = ? FOR UPDATE",
]);
static SET_SPENT: Stmt = Stmt::new(&[
    "UPDATE grant_spending SET debit_spent = ?::numeric, receive_spent = ?::numeric, \
     updated_at = ? WHERE grant_id = ? AND interval_start = ?",
]);

/// PostgreSQL: the reservation in one statement, returning the new totals
/// (SQLite keeps amounts as text, so it reads, adds in Rust and writes).
static ADD_PG: Stmt = Stmt::new(&[
    "INSERT INTO grant_spending (grant_id, interval_start, interval_end, debit_asset_code, \
     debit_asset_scale, debit_spent, receive_asset_code, receive_asset_scale, receive_spent, \
     updated_at) VALUES (?, ?, ?, ?, ?, ?::numeric, ?, ?, ?::numeric, ?) \
     ON CONFLICT (grant_id, interval_start) DO UPDATE \
     SET debit_spent = grant_spending.debit_spent + excluded.debit_spent, \
     receive_spent = grant_spending.receive_spent + excluded.receive_spent, \
     updated_at = excluded.updated_at \
     RETURNING debit_asset_code, CAST(debit_asset_scale AS BIGINT) AS debit_asset_scale, \
     CAST(debit_spent AS TEXT) AS debit_spent, receive_asset_code, \
     CAST(receive_asset_scale AS BIGINT) AS receive_asset_scale, \
     CAST(receive_spent AS TEXT) AS receive_spent",
]);

pub(crate) static STATEMENTS: &[&Stmt] = &[&CREATE_IF_MISSING, &SPENT_FOR_UPDATE, &SET_SPENT];

/// The statements only PostgreSQL runs.
pub(crate) static PG_STATEMENTS: &[&Stmt] = &[&ADD_PG];

/// Adds `debit` and `receive` to the (grant, interval) totals, creating the
/// row at need, and returns what was spent before: with the raw totals
/// before, or `None` when a total would pass u64::MAX. The row stays locked
/// until the transaction ends; when the caller refuses the payment it must
/// not commit (the totals already moved inside the transaction).
///
/// Sent with [`send_add`]; [`read`](Self::read) gives the result.
pub(crate) enum SentAdd {
    /// Already done (SQLite).
    Done(Option<Spent>),
    /// Queued on PostgreSQL: the new totals come back with the
    /// transaction's next round trip.
    Queued {
        ticket: Ticket,
        debit: u64,
        receive: u64,
    },
}

/// Sends the reservation: on PostgreSQL its one statement waits for the
/// transaction's next round trip; SQLite runs it now.
pub(crate) async fn send_add(
    tx: &mut Tx<'_>,
    grant: &str,
    start: Timestamp,
    end: Option<Timestamp>,
    debit: &Amount,
    receive: &Amount,
    at: Timestamp,
) -> StoreResult<SentAdd> {
    if tx.backend() == Backend::Sqlite {
        create_if_missing(tx, grant, start, end, &debit.asset, &receive.asset, at).await?;
        let before = read(tx, grant, start).await?.unwrap_or(Spent {
            shown: GrantSpent::default(),
            debit: 0,
            receive: 0,
        });
        let (Some(d), Some(r)) = (
            before.debit.checked_add(debit.value),
            before.receive.checked_add(receive.value),
        ) else {
            return Ok(SentAdd::Done(None));
        };
        write(tx, grant, start, d, r, at).await?;
        return Ok(SentAdd::Done(Some(before)));
    }
    let params = params![
        grant,
        start,
        end,
        debit.asset.code.as_str(),
        debit.asset.scale,
        num(debit.value),
        receive.asset.code.as_str(),
        receive.asset.scale,
        num(receive.value),
        at,
    ];
    Ok(SentAdd::Queued {
        ticket: tx.send(&ADD_PG, params, Want::Rows),
        debit: debit.value,
        receive: receive.value,
    })
}

impl SentAdd {
    /// What was spent before the reservation, or `None` when a total would
    /// pass u64::MAX.
    pub(crate) async fn read(self, tx: &mut Tx<'_>) -> StoreResult<Option<Spent>> {
        let (ticket, debit, receive) = match self {
            SentAdd::Done(spent) => return Ok(spent),
            SentAdd::Queued {
                ticket,
                debit,
                receive,
            } => (ticket, debit, receive),
        };
        let row = tx
            .take(ticket)
            .await?
            .rows()
            .into_iter()
            .next()
            .ok_or_else(|| crate::platform::rows::corrupt("grant spending"))?;
        // Totals are NUMERIC: one past u64::MAX reads back, and is refused
        // here.
        let total = |col: &str| -> StoreResult<u128> {
            row.text(col)?
                .parse::<u128>()
                .map_err(|_| crate::platform::rows::corrupt(col))
        };
        let (debit_total, receive_total) = (total("debit_spent")?, total("receive_spent")?);
        let (Ok(d), Ok(r)) = (u64::try_from(debit_total), u64::try_from(receive_total)) else {
            return Ok(None);
        };
        let (d, r) = (d - debit, r - receive);
        let asset = |code: &str, scale: &str| -> StoreResult<Asset> {
            rows::asset(&row.text(code)?, row.int(scale)?)
        };
        let shown = GrantSpent {
            debit: Some(Amount::new(
                d,
                asset("debit_asset_code", "debit_asset_scale")?,
            )),
            receive: Some(Amount::new(
                r,
                asset("receive_asset_code", "receive_asset_scale")?,
            )),
        };
        Ok(Some(Spent {
            shown,
            debit: d,
            receive: r,
        }))
    }
}

/// A grant's spending in one interval: the amounts as shown, and the raw
/// totals.
#[derive(Debug, Clone)]
pub(crate) struct Spent {
    pub(crate) shown: GrantSpent,
    pub(crate) debit: u64,
    pub(crate) receive: u64,
}

/// Creates the (grant, interval) row at zero unless it exists.
pub(crate) async fn create_if_missing(
    tx: &mut Tx<'_>,
    grant: &str,
    start: Timestamp,
    end: Option<Timestamp>,
    debit_asset: &Asset,
    receive_asset: &Asset,
    at: Timestamp,
) -> StoreResult<()> {
    let params = params![
        grant,
        start,
        end,
        debit_asset.code.as_str(),
        debit_asset.scale,
        num(0),
        receive_asset.code.as_str(),
        receive_asset.scale,
        num(0),
        at,
    ];
    tx.execute(&CREATE_IF_MISSING, params).await?;
    Ok(())
}

/// The spending row, locked until the transaction ends (PostgreSQL).
pub(crate) async fn read(
    tx: &mut Tx<'_>,
    grant: &str,
    start: Timestamp,
) -> StoreResult<Option<Spent>> {
    let Some(row) = tx
        .fetch_opt(&SPENT_FOR_UPDATE, params![grant, start])
        .await?
    else {
        return Ok(None);
    };
    let debit = rows::u64_from_text(&row.text("debit_spent")?, "debit_spent")?;
    let receive = rows::u64_from_text(&row.text("receive_spent")?, "receive_spent")?;
    let amount =
        |code: Option<String>, scale: Option<i64>, v: u64| -> StoreResult<Option<Amount>> {
            match (code, scale) {
                (Some(c), Some(s)) => Ok(Some(Amount::new(v, rows::asset(&c, s)?))),
                _ => Ok(None),
            }
        };
    let shown = GrantSpent {
        debit: amount(
            row.opt_text("debit_asset_code")?,
            row.opt_int("debit_asset_scale")?,
            debit,
        )?,
        receive: amount(
            row.opt_text("receive_asset_code")?,
            row.opt_int("receive_asset_scale")?,
            receive,
        )?,
    };
    Ok(Some(Spent {
        shown,
        debit,
        receive,
    }))
}

/// Sets the (existing) row's totals.
pub(crate) async fn write(
    tx: &mut Tx<'_>,
    grant: &str,
    start: Timestamp,
    debit: u64,
    receive: u64,
    at: Timestamp,
) -> StoreResult<()> {
    let params = params![num(debit), num(receive), at, grant, start];
    tx.execute(&SET_SPENT, params).await?;
    Ok(())
}
