//! The double-entry ledger: accounts and transfers, and [`post`], the one
//! way money moves. A transfer is posted inside the transaction of the
//! state change it belongs to, so a crash keeps both or neither; the
//! balance arithmetic (no negative liability, no balance past ±u64::MAX)
//! is `opd_core::ledger::post_balances`. How a posting travels is
//! [`posting`]'s. May use `platform` only.

use async_trait::async_trait;
use opd_core::ledger::{Account, AccountKind, LedgerOutcome, PostError, Transfer, TransferKind};
use opd_core::{Asset, Timestamp, WalletAddressId};

use crate::platform::db::{num, params, Stmt, Tx};
use crate::platform::rows::{self, corrupt, Columns};
use crate::{Backend, SqlStore, StoreResult};

mod posting;

pub(crate) use posting::{across, post, send_post, AccountRef, Posting, SentPost};

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

/// The account's balance inside `tx` (0 before the account exists), as
/// an amount: for accounts that cannot go negative.
pub(crate) async fn balance_or_zero(tx: &mut Tx<'_>, account: &str) -> StoreResult<u64> {
    if !account_exists(tx, account).await? {
        return Ok(0);
    }
    let b = balance_of(tx, account).await?;
    u64::try_from(b.max(0)).map_err(|_| corrupt("balance"))
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
        all.extend_from_slice(posting::PG_STATEMENTS);
    }
    all
}
