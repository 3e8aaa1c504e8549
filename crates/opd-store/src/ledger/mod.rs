//! The double-entry ledger: accounts and transfers, and [`post`], the one
//! way money moves. A transfer is posted inside the transaction of the
//! state change it belongs to, so a crash keeps both or neither; the
//! balance arithmetic (no negative liability, no balance past ±u64::MAX)
//! is `opd_core::ledger::post_balances`.

use async_trait::async_trait;
use opd_core::ledger::{
    post_balances, Account, AccountKind, LedgerOutcome, PostError, Transfer, TransferKind,
};
use opd_core::{Asset, Timestamp, WalletAddressId};

use crate::platform::db::{num, params, Param, Row, Stmt, Ticket, Tx, Want};
use crate::platform::rows::{self, corrupt, Columns};
use crate::{Backend, SqlStore, StoreResult};

/// The ledger as the operator sees it.
#[async_trait]
pub trait LedgerStore: Send + Sync {
    /// Moves `amount` into (`deposit`) or out of a wallet address's
    /// account, once per idempotency key: a repeat with the same request
    /// digest returns the first result, a different one `KeyReused`.
    #[expect(
        clippy::too_many_arguments,
        reason = "the arguments are the operation's separate inputs; a struct would only rename them"
    )]
    async fn ledger_move(
        &self,
        wallet: WalletAddressId,
        asset: &Asset,
        amount: u64,
        deposit: bool,
        idempotency_key: &str,
        request_digest: &str,
        at: Timestamp,
    ) -> StoreResult<LedgerOutcome>;
    async fn ledger_accounts(&self) -> StoreResult<Vec<Account>>;
    /// The newest transfers in or out of an account.
    async fn ledger_transfers_of(&self, account: &str, limit: i64) -> StoreResult<Vec<Transfer>>;
    async fn ledger_all_transfers(&self) -> StoreResult<Vec<Transfer>>;
}

const TRANSFER_COLUMNS: &str = "id, debit_account, credit_account, \
    CAST(amount AS TEXT) AS amount, kind, reference, idempotency_key, created_at";

static ENSURE_ACCOUNT: Stmt = Stmt::new(&[
    "INSERT INTO ledger_accounts (id, kind, owner_id, asset_code, asset_scale, balance, created_at) \
     VALUES (?, ?, ?, ?, ?, ?::numeric, ?) ON CONFLICT (id) DO NOTHING",
]);
static ACCOUNT_EXISTS: Stmt = Stmt::new(&["SELECT id FROM ledger_accounts WHERE id = ?"]);
static BALANCE_FOR_UPDATE: Stmt = Stmt::new(&[
    "SELECT CAST(balance AS TEXT) AS balance FROM ledger_accounts WHERE id = ? FOR UPDATE",
]);
static SET_BALANCE: Stmt =
    Stmt::new(&["UPDATE ledger_accounts SET balance = ?::numeric WHERE id = ?"]);
static INSERT_TRANSFER: Stmt = Stmt::new(&[
    "INSERT INTO ledger_transfers (id, debit_account, credit_account, amount, kind, reference, \
     idempotency_key, request_digest, created_at) VALUES (?, ?, ?, ?::numeric, ?, ?, ?, ?, ?)",
]);
static TRANSFER_BY_KEY: Stmt = Stmt::new(&[
    "SELECT ",
    TRANSFER_COLUMNS,
    ", request_digest FROM ledger_transfers WHERE idempotency_key = ?",
]);
static FIRST_FUNDING: Stmt = Stmt::new(&[
    "SELECT debit_account FROM ledger_transfers WHERE credit_account = ? AND kind = 'fund' \
     ORDER BY id LIMIT 1",
]);
static LIST_ACCOUNTS: Stmt = Stmt::new(&[
    "SELECT id, kind, owner_id, asset_code, CAST(asset_scale AS BIGINT) AS asset_scale, \
     CAST(balance AS TEXT) AS balance FROM ledger_accounts ORDER BY id",
]);
static TRANSFERS_OF: Stmt = Stmt::new(&[
    "SELECT ",
    TRANSFER_COLUMNS,
    " FROM ledger_transfers WHERE debit_account = ? OR credit_account = ? \
     ORDER BY created_at DESC, id DESC LIMIT ?",
]);
static ALL_TRANSFERS: Stmt = Stmt::new(&[
    "SELECT ",
    TRANSFER_COLUMNS,
    " FROM ledger_transfers ORDER BY id",
]);

pub(crate) static STATEMENTS: &[&Stmt] = &[
    &ENSURE_ACCOUNT,
    &ACCOUNT_EXISTS,
    &BALANCE_FOR_UPDATE,
    &SET_BALANCE,
    &INSERT_TRANSFER,
    &TRANSFER_BY_KEY,
    &FIRST_FUNDING,
    &LIST_ACCOUNTS,
    &TRANSFERS_OF,
    &ALL_TRANSFERS,
];

fn parse_balance(s: &str) -> StoreResult<i128> {
    s.parse::<i128>().map_err(|_| corrupt("balance"))
}

fn transfer_from_row(row: &impl Columns) -> StoreResult<Transfer> {
    Ok(Transfer {
        id: row.text("id")?,
        debit_account: row.text("debit_account")?,
        credit_account: row.text("credit_account")?,
        amount: rows::u64_from_text(&row.text("amount")?, "amount")?,
        kind: TransferKind::parse(&row.text("kind")?).ok_or_else(|| corrupt("transfer kind"))?,
        reference: row.opt_text("reference")?,
        idempotency_key: row.opt_text("idempotency_key")?,
        created_at: Timestamp::from_unix_millis(row.int("created_at")?),
    })
}

fn account_from_row(r: &impl Columns) -> StoreResult<Account> {
    Ok(Account {
        id: r.text("id")?,
        kind: AccountKind::parse(&r.text("kind")?).ok_or_else(|| corrupt("account kind"))?,
        owner_id: r.text("owner_id")?,
        asset: rows::asset(&r.text("asset_code")?, r.int("asset_scale")?)?,
        balance: parse_balance(&r.text("balance")?)?,
    })
}

/// Creates the account of `kind` for `owner` in `asset` if it does not
/// exist; returns its id.
pub(crate) async fn ensure_account(
    tx: &mut Tx<'_>,
    kind: AccountKind,
    owner: &str,
    asset: &Asset,
    at: Timestamp,
) -> StoreResult<String> {
    let id = kind.account_id(owner, asset);
    let params = params![
        &id,
        kind.as_str(),
        owner,
        asset.code.as_str(),
        asset.scale,
        num(0),
        at
    ];
    tx.execute(&ENSURE_ACCOUNT, params).await?;
    Ok(id)
}

/// Whether the account exists.
pub(crate) async fn account_exists(tx: &mut Tx<'_>, id: &str) -> StoreResult<bool> {
    Ok(tx.fetch_opt(&ACCOUNT_EXISTS, params![id]).await?.is_some())
}

/// The account's balance, locked until the transaction ends (PostgreSQL).
pub(crate) async fn balance_of(tx: &mut Tx<'_>, account: &str) -> StoreResult<i128> {
    let row = tx.fetch_one(&BALANCE_FOR_UPDATE, params![account]).await?;
    parse_balance(&row.text("balance")?)
}

/// The account that funded the payment holding its money in `held` (a
/// wallet address, or the settlement account for externally funded
/// payments). Found through `held`'s credits (`ledger_transfers_by_credit`):
/// `reference` has no index, and looking it up scanned every transfer ever
/// made, once per refund.
pub(crate) async fn funding_source(tx: &mut Tx<'_>, held: &str) -> StoreResult<Option<String>> {
    tx.fetch_opt(&FIRST_FUNDING, params![held])
        .await?
        .map(|r| r.text("debit_account"))
        .transpose()
}

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
    // Lock in a fixed order so concurrent transfers cannot deadlock.
    let (first, second) = if debit <= credit {
        (debit, credit)
    } else {
        (credit, debit)
    };
    let b1 = balance_of(tx, first).await?;
    let b2 = balance_of(tx, second).await?;
    let (debit_balance, credit_balance) = if first == debit { (b1, b2) } else { (b2, b1) };
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

/// The first result of an idempotency key already used: `Repeated` with
/// the same request digest, `KeyReused` with another.
pub(crate) async fn repeated(
    tx: &mut Tx<'_>,
    key: &str,
    request_digest: &str,
) -> StoreResult<Option<LedgerOutcome>> {
    let Some(row) = tx.fetch_opt(&TRANSFER_BY_KEY, params![key]).await? else {
        return Ok(None);
    };
    let digest = row.opt_text("request_digest")?;
    Ok(Some(if digest.as_deref() == Some(request_digest) {
        LedgerOutcome::Repeated(transfer_from_row(&row)?)
    } else {
        LedgerOutcome::KeyReused
    }))
}

/// Moves `amount` from the outside world into `account` (`deposit`) or
/// back out, under an idempotency key. Only a `Posted` outcome may be
/// committed.
pub(crate) async fn move_with_key(
    tx: &mut Tx<'_>,
    account: AccountRef<'_>,
    amount: u64,
    deposit: bool,
    key: &str,
    request_digest: &str,
    at: Timestamp,
) -> StoreResult<LedgerOutcome> {
    let settlement = AccountRef::settlement(account.asset);
    let (debit, credit, kind) = if deposit {
        (settlement, account, TransferKind::Deposit)
    } else {
        (account, settlement, TransferKind::Withdrawal)
    };
    let posting = Posting {
        debit,
        credit,
        amount,
        kind,
        reference: Some(account.owner),
        key: Some((key, request_digest)),
        at,
    };
    Ok(match post(tx, posting).await? {
        Ok(t) => LedgerOutcome::Posted(t),
        Err(PostError::Insufficient { available }) => {
            LedgerOutcome::InsufficientBalance { available }
        }
        Err(PostError::Overflow) => LedgerOutcome::Overflow,
    })
}

#[async_trait]
impl LedgerStore for SqlStore {
    async fn ledger_move(
        &self,
        wallet: WalletAddressId,
        asset: &Asset,
        amount: u64,
        deposit: bool,
        key: &str,
        request_digest: &str,
        at: Timestamp,
    ) -> StoreResult<LedgerOutcome> {
        let mut tx = self.db.begin().await?;
        if let Some(repeat) = repeated(&mut tx, key, request_digest).await? {
            return Ok(repeat);
        }
        let owner = wallet.to_string();
        let account = AccountRef::new(AccountKind::Wallet, &owner, asset);
        let outcome =
            move_with_key(&mut tx, account, amount, deposit, key, request_digest, at).await?;
        if matches!(outcome, LedgerOutcome::Posted(_)) {
            tx.commit().await?;
        }
        Ok(outcome)
    }

    async fn ledger_accounts(&self) -> StoreResult<Vec<Account>> {
        let rows = self.db.read(&LIST_ACCOUNTS, &[]).await?;
        rows.iter().map(account_from_row).collect()
    }

    async fn ledger_transfers_of(&self, account: &str, limit: i64) -> StoreResult<Vec<Transfer>> {
        let rows = self
            .db
            .read(&TRANSFERS_OF, params![account, account, limit])
            .await?;
        rows.iter().map(transfer_from_row).collect()
    }

    async fn ledger_all_transfers(&self) -> StoreResult<Vec<Transfer>> {
        let rows = self.db.read(&ALL_TRANSFERS, &[]).await?;
        rows.iter().map(transfer_from_row).collect()
    }
}

/// The ledger's statements on `backend`, for the statement tests.
pub(crate) fn statements(backend: Backend) -> Vec<&'static Stmt> {
    let mut all = STATEMENTS.to_vec();
    if backend == Backend::Postgres {
        all.extend_from_slice(PG_STATEMENTS);
    }
    all
}
