//! The ledger, outgoing payments, grant spending and the webhook outbox
//! records, and `payments_impl!`: the whole `Store` implementation, written
//! once and expanded for each backend (only connecting and migrating differ).
//!
//! Every money movement is a balanced transfer between two ledger accounts,
//! posted inside the same transaction as the state change it belongs to, so
//! a crash leaves either all of it or none. Liability accounts (wallet
//! addresses, payments, fees) never go below zero; each asset's settlement
//! account is the outside world and goes negative by what came in.
//!
//! SQL is written with `?` placeholders; `?::numeric` and `?::uuid` mark
//! parameters PostgreSQL must cast (SQLite ignores the marks), and numeric
//! or uuid columns are read with `CAST(col AS TEXT)`.

use opd_core::incoming_payment::Metadata;
use opd_core::{
    Amount, Asset, IncomingPaymentId, OutgoingPaymentId, QuoteId, Timestamp, WalletAddressId,
};

/// Rewrites portable SQL for one dialect: `?` becomes `$n` on PostgreSQL
/// (keeping a `::type` cast after it); SQLite drops the casts.
pub(crate) fn dialect(sql: &str, postgres: bool) -> String {
    let mut out = String::with_capacity(sql.len() + 16);
    let mut n = 0;
    let mut chars = sql.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '?' {
            out.push(c);
            continue;
        }
        n += 1;
        let mut cast = String::new();
        if chars.peek() == Some(&':') {
            let mut ahead = chars.clone();
            ahead.next();
            if ahead.peek() == Some(&':') {
                chars.next();
                chars.next();
                while let Some(&a) = chars.peek() {
                    if a.is_ascii_alphanumeric() || a == '_' {
                        cast.push(a);
                        chars.next();
                    } else {
                        break;
                    }
                }
            }
        }
        if postgres {
            out.push_str(&format!("${n}"));
            if !cast.is_empty() {
                out.push_str("::");
                out.push_str(&cast);
            }
        } else {
            out.push('?');
        }
    }
    out
}

/// Ledger account kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AccountKind {
    /// A wallet address's balance (owner: wallet address id).
    Wallet,
    /// Money held for an outgoing payment (owner: payment id).
    Outgoing,
    /// Money received by an incoming payment (owner: payment id).
    Incoming,
    /// Sending fees earned by the operator (owner: `fees`).
    Fees,
    /// The outside world for one asset (owner: `settlement`).
    Settlement,
}

impl AccountKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Wallet => "wallet",
            Self::Outgoing => "outgoing",
            Self::Incoming => "incoming",
            Self::Fees => "fees",
            Self::Settlement => "settlement",
        }
    }

    /// The id of the account of this kind for `owner` in `asset`.
    pub fn account_id(self, owner: &str, asset: &Asset) -> String {
        format!("{}:{}:{}:{}", self.as_str(), owner, asset.code, asset.scale)
    }
}

/// An account and its balance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccountRow {
    pub id: String,
    pub kind: String,
    pub owner_id: String,
    pub asset: Asset,
    pub balance: i128,
}

/// A posted transfer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransferRow {
    pub id: String,
    pub debit_account: String,
    pub credit_account: String,
    pub amount: u64,
    pub kind: String,
    pub reference: Option<String>,
    pub idempotency_key: Option<String>,
    pub created_at: Timestamp,
}

/// The result of a deposit or withdrawal with an idempotency key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LedgerOutcome {
    /// Posted now.
    Posted(TransferRow),
    /// The key was used before with the same request: its first result.
    Repeated(TransferRow),
    /// The key was used before with a different request.
    KeyReused,
    /// The debited account lacks the money; nothing was posted.
    InsufficientBalance { available: u64 },
}

/// An outgoing payment as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct OutgoingPaymentRecord {
    pub id: OutgoingPaymentId,
    pub wallet_address_id: WalletAddressId,
    pub quote_id: QuoteId,
    pub receiver: String,
    pub debit: Amount,
    pub receive: Amount,
    /// What was sent towards the receiver, in the debit asset.
    pub sent: u64,
    /// `funding`, `sending`, `completed`, `failed` or `cancelled`.
    pub state: String,
    pub error: Option<String>,
    pub metadata: Option<Metadata>,
    pub client: Option<String>,
    pub grant_id: Option<String>,
    /// The start of the grant interval the payment's amounts were counted
    /// in (0 for a grant without interval).
    pub grant_interval_start: Option<Timestamp>,
    pub attempts: i64,
    pub next_attempt_at: Timestamp,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

/// A grant's limits as they apply to one new payment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrantReservation {
    pub grant_id: String,
    /// Start of the interval containing the payment (0: the grant's life).
    pub interval_start: Timestamp,
    pub interval_end: Option<Timestamp>,
    pub debit_limit: Option<u64>,
    pub receive_limit: Option<u64>,
}

/// What a grant spent in one interval.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct GrantSpent {
    pub debit: Option<Amount>,
    pub receive: Option<Amount>,
}

/// The result of creating an outgoing payment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CreateOutgoing {
    /// Stored and funded; the grant's spending before this payment.
    Created { spent_before: GrantSpent },
    /// The quote already has a payment.
    QuoteUsed,
    /// The wallet address's balance is too low; nothing was stored.
    InsufficientBalance { available: u64 },
    /// The grant's limit would be exceeded; nothing was stored.
    LimitExceeded { spent_before: GrantSpent },
}

/// Delivery of an outgoing payment to an incoming payment on this server,
/// applied atomically: the payment completes, the receiver's account and
/// `receivedAmount` rise, the fee goes to the fee account.
#[derive(Debug, Clone, PartialEq)]
pub struct LocalDelivery {
    pub payment: OutgoingPaymentId,
    pub sender_wallet: WalletAddressId,
    pub incoming: IncomingPaymentId,
    pub sender_asset: Asset,
    pub receiver_asset: Asset,
    /// Converted and sent (debit − fee).
    pub send: u64,
    pub fee: u64,
    pub deliver: u64,
    /// The receiver's `receivedAmount` the plan was made against.
    pub expected_received: u64,
    /// Whether the receiver reaches its `incomingAmount` with this delivery.
    pub completes_incoming: bool,
    pub at: Timestamp,
    pub events: Vec<WebhookEventRecord>,
}

/// A failure of an outgoing payment: the money held goes back to the wallet
/// address and the grant's reservation is released.
#[derive(Debug, Clone, PartialEq)]
pub struct PaymentFailure {
    pub payment: OutgoingPaymentId,
    /// `failed` or `cancelled`.
    pub state: &'static str,
    pub reason: String,
    pub at: Timestamp,
    pub events: Vec<WebhookEventRecord>,
}

/// A webhook event in the outbox.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebhookEventRecord {
    pub id: String,
    pub kind: String,
    /// The JSON body to deliver.
    pub data: String,
    pub attempts: i64,
    pub next_attempt_at: Timestamp,
    pub delivered_at: Option<Timestamp>,
    pub created_at: Timestamp,
}

/// A read cache of outgoing payments for a database only this process
/// writes (SQLite): `GET /outgoing-payments/{id}` is polled far more often
/// than a payment changes. Every write bumps an epoch and drops the
/// payment, before its transaction and after its commit; a read caches its
/// row only if no write began since the read started, so a stale row can
/// never be cached. Disabled for PostgreSQL, where other nodes write too.
#[derive(Debug, Default)]
pub(crate) struct PaymentReadCache {
    enabled: bool,
    inner: std::sync::Mutex<(
        u64,
        std::collections::HashMap<OutgoingPaymentId, OutgoingPaymentRecord>,
    )>,
}

impl PaymentReadCache {
    pub(crate) fn new(enabled: bool) -> Self {
        Self {
            enabled,
            inner: Default::default(),
        }
    }

    /// The epoch to pass to `put` after reading.
    pub(crate) fn epoch(&self) -> u64 {
        if !self.enabled {
            return 0;
        }
        self.inner.lock().map_or(u64::MAX, |g| g.0)
    }

    pub(crate) fn get(&self, id: OutgoingPaymentId) -> Option<OutgoingPaymentRecord> {
        if !self.enabled {
            return None;
        }
        self.inner.lock().ok()?.1.get(&id).cloned()
    }

    pub(crate) fn put(&self, read_epoch: u64, record: &OutgoingPaymentRecord) {
        if !self.enabled {
            return;
        }
        if let Ok(mut g) = self.inner.lock() {
            if g.0 == read_epoch {
                if g.1.len() >= 10_000 {
                    g.1.clear();
                }
                g.1.insert(record.id, record.clone());
            }
        }
    }

    pub(crate) fn invalidate(&self, id: OutgoingPaymentId) {
        if !self.enabled {
            return;
        }
        if let Ok(mut g) = self.inner.lock() {
            g.0 = g.0.wrapping_add(1);
            g.1.remove(&id);
        }
    }
}

/// Generates the implementation for one backend. `$write` and `$read` name
/// the store's pools; `$pg` says which dialect. A module `db` must be in
/// scope where it expands, with the driver calls it makes (`query`,
/// `query_scalar`, `Tx`, `Row`, `ReadPool`, `is_unique_violation`): sqlx for
/// PostgreSQL, `sqlite::driver` for SQLite.
macro_rules! payments_impl {
    ($store:ty, $write:ident, $read:ident, $pg:expr, $backend:expr) => {
        use $crate::payments::*;
        use $crate::rows::Columns;

        fn sql(s: &str) -> String {
            $crate::payments::dialect(s, $pg)
        }

        fn parse_i128(s: &str) -> StoreResult<i128> {
            s.parse::<i128>().map_err(|_| $crate::rows::corrupt("balance"))
        }

        const PAYMENT_COLUMNS: &str = "CAST(id AS TEXT) AS id, CAST(wallet_address_id AS TEXT) AS wallet_address_id,
            CAST(quote_id AS TEXT) AS quote_id, receiver, CAST(debit_value AS TEXT) AS debit_value, debit_asset_code,
            CAST(debit_asset_scale AS BIGINT) AS debit_asset_scale, CAST(receive_value AS TEXT) AS receive_value,
            receive_asset_code, CAST(receive_asset_scale AS BIGINT) AS receive_asset_scale,
            CAST(sent_value AS TEXT) AS sent_value, state, error, metadata, client, grant_id, grant_interval_start,
            attempts, next_attempt_at, created_at, updated_at";

        fn payment_from_row(row: &db::Row) -> StoreResult<OutgoingPaymentRecord> {
            let amount = |p: &str| -> StoreResult<opd_core::Amount> {
                let v = row.text(&format!("{p}_value"))?;
                Ok(opd_core::Amount::new(
                    $crate::rows::u64_from_text(&v, p)?,
                    $crate::rows::asset(&row.text(&format!("{p}_asset_code"))?, row.int(&format!("{p}_asset_scale"))?)?,
                ))
            };
            Ok(OutgoingPaymentRecord {
                id: opd_core::OutgoingPaymentId::from_uuid($crate::rows::uuid_from_text(&row.text("id")?)?),
                wallet_address_id: opd_core::WalletAddressId::from_uuid($crate::rows::uuid_from_text(
                    &row.text("wallet_address_id")?,
                )?),
                quote_id: opd_core::QuoteId::from_uuid($crate::rows::uuid_from_text(&row.text("quote_id")?)?),
                receiver: row.text("receiver")?,
                debit: amount("debit")?,
                receive: amount("receive")?,
                sent: $crate::rows::u64_from_text(&row.text("sent_value")?, "sent")?,
                state: row.text("state")?,
                error: row.opt_text("error")?,
                metadata: $crate::rows::metadata_from_text(row.opt_text("metadata")?)?,
                client: row.opt_text("client")?,
                grant_id: row.opt_text("grant_id")?,
                grant_interval_start: row.opt_int("grant_interval_start")?.map(Timestamp::from_unix_millis),
                attempts: row.int("attempts")?,
                next_attempt_at: Timestamp::from_unix_millis(row.int("next_attempt_at")?),
                created_at: Timestamp::from_unix_millis(row.int("created_at")?),
                updated_at: Timestamp::from_unix_millis(row.int("updated_at")?),
            })
        }

        fn transfer_from_row(row: &db::Row) -> StoreResult<TransferRow> {
            Ok(TransferRow {
                id: row.text("id")?,
                debit_account: row.text("debit_account")?,
                credit_account: row.text("credit_account")?,
                amount: $crate::rows::u64_from_text(&row.text("amount")?, "amount")?,
                kind: row.text("kind")?,
                reference: row.opt_text("reference")?,
                idempotency_key: row.opt_text("idempotency_key")?,
                created_at: Timestamp::from_unix_millis(row.int("created_at")?),
            })
        }

        const TRANSFER_COLUMNS: &str = "id, debit_account, credit_account, CAST(amount AS TEXT) AS amount, kind, reference,
            idempotency_key, created_at";

        type Tx<'c> = db::Tx<'c>;

        /// Creates the account if it does not exist.
        async fn ensure_account(tx: &mut Tx<'_>, kind: AccountKind, owner: &str, asset: &opd_core::Asset, at: Timestamp) -> StoreResult<String> {
            let id = kind.account_id(owner, asset);
            db::query(&sql(
                "INSERT INTO ledger_accounts (id, kind, owner_id, asset_code, asset_scale, balance, created_at)
                 VALUES (?, ?, ?, ?, ?, ?::numeric, ?) ON CONFLICT (id) DO NOTHING",
            ))
            .bind(&id)
            .bind(kind.as_str())
            .bind(owner)
            .bind(asset.code.as_str())
            .bind(i16::from(asset.scale))
            .bind("0")
            .bind(at.unix_millis())
            .execute(&mut **tx)
            .await?;
            Ok(id)
        }

        async fn balance_of(tx: &mut Tx<'_>, account: &str) -> StoreResult<i128> {
            let lock = if $pg { " FOR UPDATE" } else { "" };
            let text: String = db::query_scalar(&sql(&format!(
                "SELECT CAST(balance AS TEXT) FROM ledger_accounts WHERE id = ?{lock}"
            )))
            .bind(account)
            .fetch_one(&mut **tx)
            .await?;
            parse_i128(&text)
        }

        async fn set_balance(tx: &mut Tx<'_>, account: &str, balance: i128) -> StoreResult<()> {
            db::query(&sql("UPDATE ledger_accounts SET balance = ?::numeric WHERE id = ?"))
                .bind(balance.to_string())
                .bind(account)
                .execute(&mut **tx)
                .await?;
            Ok(())
        }

        /// Posts one transfer; `Err(available)` when a liability account
        /// would go negative (nothing changed then).
        #[allow(clippy::too_many_arguments)]
        async fn post(
            tx: &mut Tx<'_>,
            debit: &str,
            credit: &str,
            amount: u64,
            kind: &str,
            reference: Option<&str>,
            key: Option<(&str, &str)>,
            at: Timestamp,
        ) -> StoreResult<Result<TransferRow, u64>> {
            let transfer = TransferRow {
                id: format!("{kind}:{}:{}", reference.unwrap_or("-"), uuid::Uuid::new_v4().simple()),
                debit_account: debit.to_owned(),
                credit_account: credit.to_owned(),
                amount,
                kind: kind.to_owned(),
                reference: reference.map(str::to_owned),
                idempotency_key: key.map(|k| k.0.to_owned()),
                created_at: at,
            };
            if amount == 0 {
                return Ok(Ok(transfer));
            }
            // Lock in a fixed order so concurrent transfers cannot deadlock.
            let (first, second) = if debit <= credit { (debit, credit) } else { (credit, debit) };
            let b1 = balance_of(tx, first).await?;
            let b2 = balance_of(tx, second).await?;
            let (debit_balance, credit_balance) = if first == debit { (b1, b2) } else { (b2, b1) };
            let is_settlement = debit.starts_with("settlement:");
            let amount_i = i128::from(amount);
            if !is_settlement && debit_balance < amount_i {
                return Ok(Err(u64::try_from(debit_balance.max(0)).unwrap_or(0)));
            }
            set_balance(tx, debit, debit_balance - amount_i).await?;
            set_balance(tx, credit, credit_balance + amount_i).await?;
            db::query(&sql(
                "INSERT INTO ledger_transfers (id, debit_account, credit_account, amount, kind, reference, idempotency_key,
                    request_digest, created_at) VALUES (?, ?, ?, ?::numeric, ?, ?, ?, ?, ?)",
            ))
            .bind(&transfer.id)
            .bind(debit)
            .bind(credit)
            .bind(amount.to_string())
            .bind(kind)
            .bind(reference)
            .bind(key.map(|k| k.0))
            .bind(key.map(|k| k.1))
            .bind(at.unix_millis())
            .execute(&mut **tx)
            .await?;
            Ok(Ok(transfer))
        }

        async fn insert_events(tx: &mut Tx<'_>, events: &[WebhookEventRecord]) -> StoreResult<()> {
            for e in events {
                db::query(&sql(
                    "INSERT INTO webhook_events (id, kind, data, attempts, next_attempt_at, delivered_at, last_error, created_at)
                     VALUES (?, ?, ?, ?, ?, ?, NULL, ?)",
                ))
                .bind(&e.id)
                .bind(&e.kind)
                .bind(&e.data)
                .bind(e.attempts)
                .bind(e.next_attempt_at.unix_millis())
                .bind(e.delivered_at.map(Timestamp::unix_millis))
                .bind(e.created_at.unix_millis())
                .execute(&mut **tx)
                .await?;
            }
            Ok(())
        }

        async fn spent_row(tx: &mut Tx<'_>, grant: &str, start: Timestamp) -> StoreResult<Option<(GrantSpent, u64, u64)>> {
            let lock = if $pg { " FOR UPDATE" } else { "" };
            let row = db::query(&sql(&format!(
                "SELECT debit_asset_code, CAST(debit_asset_scale AS BIGINT) AS debit_asset_scale,
                    CAST(debit_spent AS TEXT) AS debit_spent, receive_asset_code,
                    CAST(receive_asset_scale AS BIGINT) AS receive_asset_scale, CAST(receive_spent AS TEXT) AS receive_spent
                 FROM grant_spending WHERE grant_id = ? AND interval_start = ?{lock}"
            )))
            .bind(grant)
            .bind(start.unix_millis())
            .fetch_optional(&mut **tx)
            .await?;
            let Some(row) = row else { return Ok(None) };
            let debit = $crate::rows::u64_from_text(&row.text("debit_spent")?, "debit_spent")?;
            let receive = $crate::rows::u64_from_text(&row.text("receive_spent")?, "receive_spent")?;
            let amount = |code: Option<String>, scale: Option<i64>, v: u64| -> StoreResult<Option<opd_core::Amount>> {
                match (code, scale) {
                    (Some(c), Some(s)) => Ok(Some(opd_core::Amount::new(v, $crate::rows::asset(&c, s)?))),
                    _ => Ok(None),
                }
            };
            let spent = GrantSpent {
                debit: amount(row.opt_text("debit_asset_code")?, row.opt_int("debit_asset_scale")?, debit)?,
                receive: amount(row.opt_text("receive_asset_code")?, row.opt_int("receive_asset_scale")?, receive)?,
            };
            Ok(Some((spent, debit, receive)))
        }

        #[allow(clippy::too_many_arguments)]
        async fn write_spent(
            tx: &mut Tx<'_>,
            grant: &str,
            start: Timestamp,
            end: Option<Timestamp>,
            debit: &opd_core::Amount,
            receive: &opd_core::Amount,
            exists: bool,
            at: Timestamp,
        ) -> StoreResult<()> {
            if exists {
                db::query(&sql(
                    "UPDATE grant_spending SET debit_spent = ?::numeric, receive_spent = ?::numeric, updated_at = ?
                     WHERE grant_id = ? AND interval_start = ?",
                ))
                .bind(debit.value.to_string())
                .bind(receive.value.to_string())
                .bind(at.unix_millis())
                .bind(grant)
                .bind(start.unix_millis())
                .execute(&mut **tx)
                .await?;
            } else {
                db::query(&sql(
                    "INSERT INTO grant_spending (grant_id, interval_start, interval_end, debit_asset_code, debit_asset_scale,
                        debit_spent, receive_asset_code, receive_asset_scale, receive_spent, updated_at)
                     VALUES (?, ?, ?, ?, ?, ?::numeric, ?, ?, ?::numeric, ?)",
                ))
                .bind(grant)
                .bind(start.unix_millis())
                .bind(end.map(Timestamp::unix_millis))
                .bind(debit.asset.code.as_str())
                .bind(i16::from(debit.asset.scale))
                .bind(debit.value.to_string())
                .bind(receive.asset.code.as_str())
                .bind(i16::from(receive.asset.scale))
                .bind(receive.value.to_string())
                .bind(at.unix_millis())
                .execute(&mut **tx)
                .await?;
            }
            Ok(())
        }

        impl $store {
            #[allow(clippy::too_many_arguments)]
            pub(crate) async fn pay_ledger_move(
                &self,
                wallet: opd_core::WalletAddressId,
                asset: &opd_core::Asset,
                amount: u64,
                deposit: bool,
                key: &str,
                request_digest: &str,
                at: Timestamp,
            ) -> StoreResult<LedgerOutcome> {
                let mut tx = self.$write.begin().await?;
                let existing = db::query(&sql(&format!(
                    "SELECT {TRANSFER_COLUMNS}, request_digest FROM ledger_transfers WHERE idempotency_key = ?"
                )))
                .bind(key)
                .fetch_optional(&mut *tx)
                .await?;
                if let Some(row) = existing {
                    let digest: Option<String> = row.opt_text("request_digest")?;
                    return Ok(if digest.as_deref() == Some(request_digest) {
                        LedgerOutcome::Repeated(transfer_from_row(&row)?)
                    } else {
                        LedgerOutcome::KeyReused
                    });
                }
                let wallet_account = ensure_account(&mut tx, AccountKind::Wallet, &wallet.to_string(), asset, at).await?;
                let settlement = ensure_account(&mut tx, AccountKind::Settlement, "settlement", asset, at).await?;
                let (debit, credit, kind) = if deposit {
                    (settlement, wallet_account, "deposit")
                } else {
                    (wallet_account, settlement, "withdrawal")
                };
                let reference = wallet.to_string();
                match post(&mut tx, &debit, &credit, amount, kind, Some(&reference), Some((key, request_digest)), at).await? {
                    Ok(t) => {
                        tx.commit().await?;
                        Ok(LedgerOutcome::Posted(t))
                    }
                    Err(available) => Ok(LedgerOutcome::InsufficientBalance { available }),
                }
            }

            pub(crate) async fn pay_list_accounts(&self) -> StoreResult<Vec<AccountRow>> {
                let rows = db::query(
                    "SELECT id, kind, owner_id, asset_code, CAST(asset_scale AS BIGINT) AS asset_scale,
                        CAST(balance AS TEXT) AS balance FROM ledger_accounts ORDER BY id",
                )
                .fetch_all(&self.$read)
                .await?;
                rows.iter()
                    .map(|r| {
                        Ok(AccountRow {
                            id: r.text("id")?,
                            kind: r.text("kind")?,
                            owner_id: r.text("owner_id")?,
                            asset: $crate::rows::asset(&r.text("asset_code")?, r.int("asset_scale")?)?,
                            balance: parse_i128(&r.text("balance")?)?,
                        })
                    })
                    .collect()
            }

            pub(crate) async fn pay_transfers_of(&self, account: &str, limit: i64) -> StoreResult<Vec<TransferRow>> {
                db::query(&sql(&format!(
                    "SELECT {TRANSFER_COLUMNS} FROM ledger_transfers WHERE debit_account = ? OR credit_account = ?
                     ORDER BY created_at DESC, id DESC LIMIT ?"
                )))
                .bind(account)
                .bind(account)
                .bind(limit)
                .fetch_all(&self.$read)
                .await?
                .iter()
                .map(transfer_from_row)
                .collect()
            }

            pub(crate) async fn pay_all_transfers(&self) -> StoreResult<Vec<TransferRow>> {
                db::query(&format!("SELECT {TRANSFER_COLUMNS} FROM ledger_transfers ORDER BY id"))
                    .fetch_all(&self.$read)
                    .await?
                    .iter()
                    .map(transfer_from_row)
                    .collect()
            }

            pub(crate) async fn pay_create(
                &self,
                p: &OutgoingPaymentRecord,
                grant: Option<&GrantReservation>,
                events: &[WebhookEventRecord],
            ) -> StoreResult<CreateOutgoing> {
                let mut tx = self.$write.begin().await?;
                let used: Option<String> =
                    db::query_scalar(&sql("SELECT CAST(id AS TEXT) FROM outgoing_payments WHERE quote_id = ?::uuid"))
                        .bind(p.quote_id.to_string())
                        .fetch_optional(&mut *tx)
                        .await?;
                if used.is_some() {
                    return Ok(CreateOutgoing::QuoteUsed);
                }
                let mut spent_before = GrantSpent::default();
                if let Some(g) = grant {
                    // The spending row is the grant's lock: concurrent creates
                    // under one grant queue on it, so create it first if this
                    // is the interval's first payment.
                    let zero_debit = opd_core::Amount::new(0, p.debit.asset.clone());
                    let zero_receive = opd_core::Amount::new(0, p.receive.asset.clone());
                    db::query(&sql(
                        "INSERT INTO grant_spending (grant_id, interval_start, interval_end, debit_asset_code, debit_asset_scale,
                            debit_spent, receive_asset_code, receive_asset_scale, receive_spent, updated_at)
                         VALUES (?, ?, ?, ?, ?, ?::numeric, ?, ?, ?::numeric, ?) ON CONFLICT (grant_id, interval_start) DO NOTHING",
                    ))
                    .bind(&g.grant_id)
                    .bind(g.interval_start.unix_millis())
                    .bind(g.interval_end.map(Timestamp::unix_millis))
                    .bind(zero_debit.asset.code.as_str())
                    .bind(i16::from(zero_debit.asset.scale))
                    .bind("0")
                    .bind(zero_receive.asset.code.as_str())
                    .bind(i16::from(zero_receive.asset.scale))
                    .bind("0")
                    .bind(p.created_at.unix_millis())
                    .execute(&mut *tx)
                    .await?;
                    let existing = spent_row(&mut tx, &g.grant_id, g.interval_start).await?;
                    let (debit_before, receive_before) = existing.as_ref().map_or((0, 0), |e| (e.1, e.2));
                    if let Some(e) = &existing {
                        spent_before = e.0.clone();
                    }
                    let over = |limit: Option<u64>, before: u64, add: u64| {
                        limit.is_some_and(|l| before.checked_add(add).is_none_or(|total| total > l))
                    };
                    if over(g.debit_limit, debit_before, p.debit.value)
                        || over(g.receive_limit, receive_before, p.receive.value)
                    {
                        return Ok(CreateOutgoing::LimitExceeded { spent_before });
                    }
                    let debit_total = opd_core::Amount::new(debit_before.saturating_add(p.debit.value), p.debit.asset.clone());
                    let receive_total =
                        opd_core::Amount::new(receive_before.saturating_add(p.receive.value), p.receive.asset.clone());
                    write_spent(&mut tx, &g.grant_id, g.interval_start, g.interval_end, &debit_total, &receive_total, true, p.created_at)
                        .await?;
                }
                let inserted = db::query(&sql(
                    "INSERT INTO outgoing_payments (id, wallet_address_id, quote_id, receiver, debit_value, debit_asset_code,
                        debit_asset_scale, receive_value, receive_asset_code, receive_asset_scale, sent_value, state, error,
                        metadata, client, grant_id, grant_interval_start, attempts, next_attempt_at, created_at, updated_at)
                     VALUES (?::uuid, ?::uuid, ?::uuid, ?, ?::numeric, ?, ?, ?::numeric, ?, ?, ?::numeric, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                ))
                .bind(p.id.to_string())
                .bind(p.wallet_address_id.to_string())
                .bind(p.quote_id.to_string())
                .bind(&p.receiver)
                .bind(p.debit.value.to_string())
                .bind(p.debit.asset.code.as_str())
                .bind(i16::from(p.debit.asset.scale))
                .bind(p.receive.value.to_string())
                .bind(p.receive.asset.code.as_str())
                .bind(i16::from(p.receive.asset.scale))
                .bind(p.sent.to_string())
                .bind(&p.state)
                .bind(&p.error)
                .bind($crate::rows::metadata_to_text(&p.metadata))
                .bind(&p.client)
                .bind(&p.grant_id)
                .bind(p.grant_interval_start.map(Timestamp::unix_millis))
                .bind(p.attempts)
                .bind(p.next_attempt_at.unix_millis())
                .bind(p.created_at.unix_millis())
                .bind(p.updated_at.unix_millis())
                .execute(&mut *tx)
                .await;
                match inserted {
                    Ok(_) => {}
                    Err(e) if db::is_unique_violation(&e) => return Ok(CreateOutgoing::QuoteUsed),
                    Err(e) => return Err(e.into()),
                }
                if p.state == "sending" {
                    let wallet = ensure_account(&mut tx, AccountKind::Wallet, &p.wallet_address_id.to_string(), &p.debit.asset, p.created_at).await?;
                    let held = ensure_account(&mut tx, AccountKind::Outgoing, &p.id.to_string(), &p.debit.asset, p.created_at).await?;
                    let reference = p.id.to_string();
                    if let Err(available) = post(&mut tx, &wallet, &held, p.debit.value, "fund", Some(&reference), None, p.created_at).await? {
                        return Ok(CreateOutgoing::InsufficientBalance { available });
                    }
                }
                insert_events(&mut tx, events).await?;
                tx.commit().await?;
                Ok(CreateOutgoing::Created { spent_before })
            }

            pub(crate) async fn pay_get(&self, id: opd_core::OutgoingPaymentId) -> StoreResult<Option<OutgoingPaymentRecord>> {
                if let Some(p) = self.payments_cache.get(id) {
                    return Ok(Some(p));
                }
                let epoch = self.payments_cache.epoch();
                let found = db::query(&sql(&format!("SELECT {PAYMENT_COLUMNS} FROM outgoing_payments WHERE id = ?::uuid")))
                    .bind(id.to_string())
                    .fetch_optional(&self.$read)
                    .await?
                    .as_ref()
                    .map(payment_from_row)
                    .transpose()?;
                if let Some(p) = &found {
                    self.payments_cache.put(epoch, p);
                }
                Ok(found)
            }

            pub(crate) async fn pay_list(
                &self,
                wallet: opd_core::WalletAddressId,
                client: Option<&str>,
                page: &opd_core::pagination::PageRequest,
            ) -> StoreResult<opd_core::pagination::Page<OutgoingPaymentRecord>> {
                list_page(&self.$read, "outgoing_payments", PAYMENT_COLUMNS, wallet, client, page, payment_from_row).await
            }

            pub(crate) async fn pay_claim_due(&self, now: Timestamp, lease_ms: i64) -> StoreResult<Option<OutgoingPaymentRecord>> {
                let mut tx = self.$write.begin().await?;
                let skip = if $pg { " FOR UPDATE SKIP LOCKED" } else { "" };
                let id: Option<String> = db::query_scalar(&sql(&format!(
                    "SELECT CAST(id AS TEXT) FROM outgoing_payments WHERE state = 'sending' AND next_attempt_at <= ?
                     ORDER BY next_attempt_at, id LIMIT 1{skip}"
                )))
                .bind(now.unix_millis())
                .fetch_optional(&mut *tx)
                .await?;
                let Some(id) = id else { return Ok(None) };
                let payment_id = opd_core::OutgoingPaymentId::from_uuid($crate::rows::uuid_from_text(&id)?);
                self.payments_cache.invalidate(payment_id);
                let row = db::query(&sql(&format!(
                    "UPDATE outgoing_payments SET next_attempt_at = ?, attempts = attempts + 1 WHERE id = ?::uuid
                     RETURNING {PAYMENT_COLUMNS}"
                )))
                .bind(now.unix_millis() + lease_ms)
                .bind(&id)
                .fetch_one(&mut *tx)
                .await?;
                let payment = payment_from_row(&row)?;
                tx.commit().await?;
                self.payments_cache.invalidate(payment_id);
                Ok(Some(payment))
            }

            pub(crate) async fn pay_deliver_local(&self, d: &LocalDelivery) -> StoreResult<bool> {
                self.payments_cache.invalidate(d.payment);
                let done = self.pay_deliver_local_tx(d).await;
                self.payments_cache.invalidate(d.payment);
                done
            }

            async fn pay_deliver_local_tx(&self, d: &LocalDelivery) -> StoreResult<bool> {
                let mut tx = self.$write.begin().await?;
                let done = db::query(&sql(
                    "UPDATE outgoing_payments SET state = 'completed', sent_value = ?::numeric, updated_at = ?
                     WHERE id = ?::uuid AND state = 'sending'",
                ))
                .bind(d.send.to_string())
                .bind(d.at.unix_millis())
                .bind(d.payment.to_string())
                .execute(&mut *tx)
                .await?;
                if done.rows_affected() == 0 {
                    return Ok(false);
                }
                let received = d.expected_received.checked_add(d.deliver).ok_or_else(|| $crate::rows::corrupt("received amount"))?;
                let credited = db::query(&sql(
                    "UPDATE incoming_payments SET received_amount = ?::numeric, completed = ?, updated_at = ?
                     WHERE id = ?::uuid AND received_amount = ?::numeric AND completed = ?",
                ))
                .bind(received.to_string())
                .bind(d.completes_incoming)
                .bind(d.at.unix_millis())
                .bind(d.incoming.to_string())
                .bind(d.expected_received.to_string())
                .bind(false)
                .execute(&mut *tx)
                .await?;
                if credited.rows_affected() == 0 {
                    // The receiver changed since the plan was made: nothing
                    // happened; the worker plans again.
                    return Ok(false);
                }
                let payment = d.payment.to_string();
                let held = AccountKind::Outgoing.account_id(&payment, &d.sender_asset);
                let incoming = ensure_account(&mut tx, AccountKind::Incoming, &d.incoming.to_string(), &d.receiver_asset, d.at).await?;
                let fees = ensure_account(&mut tx, AccountKind::Fees, "fees", &d.sender_asset, d.at).await?;
                let moves: Vec<(String, String, u64, &str)> = if d.sender_asset == d.receiver_asset {
                    vec![(held.clone(), incoming, d.deliver, "deliver")]
                } else {
                    let out = ensure_account(&mut tx, AccountKind::Settlement, "settlement", &d.sender_asset, d.at).await?;
                    let inn = ensure_account(&mut tx, AccountKind::Settlement, "settlement", &d.receiver_asset, d.at).await?;
                    vec![(held.clone(), out, d.send, "send"), (inn, incoming, d.deliver, "deliver")]
                };
                for (debit, credit, amount, kind) in moves {
                    if post(&mut tx, &debit, &credit, amount, kind, Some(&payment), None, d.at).await?.is_err() {
                        return Err($crate::StoreError::Corrupt(format!("outgoing payment {payment} is not funded")));
                    }
                }
                if post(&mut tx, &held, &fees, d.fee, "fee", Some(&payment), None, d.at).await?.is_err() {
                    return Err($crate::StoreError::Corrupt(format!("outgoing payment {payment} cannot pay its fee")));
                }
                insert_events(&mut tx, &d.events).await?;
                tx.commit().await?;
                Ok(true)
            }

            pub(crate) async fn pay_fail(&self, f: &PaymentFailure) -> StoreResult<bool> {
                self.payments_cache.invalidate(f.payment);
                let done = self.pay_fail_tx(f).await;
                self.payments_cache.invalidate(f.payment);
                done
            }

            async fn pay_fail_tx(&self, f: &PaymentFailure) -> StoreResult<bool> {
                let mut tx = self.$write.begin().await?;
                let row = db::query(&sql(&format!(
                    "UPDATE outgoing_payments SET state = ?, error = ?, updated_at = ?
                     WHERE id = ?::uuid AND state IN ('funding', 'sending') RETURNING {PAYMENT_COLUMNS}"
                )))
                .bind(f.state)
                .bind(&f.reason)
                .bind(f.at.unix_millis())
                .bind(f.payment.to_string())
                .fetch_optional(&mut *tx)
                .await?;
                let Some(row) = row else { return Ok(false) };
                let p = payment_from_row(&row)?;
                let payment = p.id.to_string();
                let held = AccountKind::Outgoing.account_id(&payment, &p.debit.asset);
                let exists: Option<String> = db::query_scalar(&sql("SELECT id FROM ledger_accounts WHERE id = ?"))
                    .bind(&held)
                    .fetch_optional(&mut *tx)
                    .await?;
                if exists.is_some() {
                    let balance = balance_of(&mut tx, &held).await?;
                    if balance > 0 {
                        // The money goes back where it came from: the wallet
                        // address, or the outside world for payments the
                        // operator funded from elsewhere.
                        let source: Option<String> = db::query_scalar(&sql(
                            "SELECT debit_account FROM ledger_transfers WHERE reference = ? AND kind = 'fund' LIMIT 1",
                        ))
                        .bind(&payment)
                        .fetch_optional(&mut *tx)
                        .await?;
                        let wallet = match source {
                            Some(s) if s.starts_with("settlement:") => s,
                            _ => ensure_account(&mut tx, AccountKind::Wallet, &p.wallet_address_id.to_string(), &p.debit.asset, f.at).await?,
                        };
                        let amount = u64::try_from(balance).map_err(|_| $crate::rows::corrupt("balance"))?;
                        if post(&mut tx, &held, &wallet, amount, "refund", Some(&payment), None, f.at).await?.is_err() {
                            return Err($crate::rows::corrupt("refund"));
                        }
                    }
                }
                if let (Some(grant), Some(start)) = (&p.grant_id, p.grant_interval_start) {
                    if let Some((spent, debit, receive)) = spent_row(&mut tx, grant, start).await? {
                        let debit_total = opd_core::Amount::new(
                            debit.saturating_sub(p.debit.value),
                            spent.debit.map_or(p.debit.asset.clone(), |a| a.asset),
                        );
                        let receive_total = opd_core::Amount::new(
                            receive.saturating_sub(p.receive.value),
                            spent.receive.map_or(p.receive.asset.clone(), |a| a.asset),
                        );
                        write_spent(&mut tx, grant, start, None, &debit_total, &receive_total, true, f.at).await?;
                    }
                }
                insert_events(&mut tx, &f.events).await?;
                tx.commit().await?;
                Ok(true)
            }

            pub(crate) async fn pay_grant_spent(&self, grant: &str, start: Timestamp) -> StoreResult<Option<GrantSpent>> {
                // `spent_row` reads inside a transaction (it locks the row on
                // PostgreSQL); a short one on the writer, rolled back.
                let mut tx = self.$write.begin().await?;
                let found = spent_row(&mut tx, grant, start).await?.map(|s| s.0);
                tx.rollback().await?;
                Ok(found)
            }

            pub(crate) async fn pay_due_webhooks(&self, now: Timestamp, limit: i64) -> StoreResult<Vec<WebhookEventRecord>> {
                let rows = db::query(&sql(
                    "SELECT id, kind, data, attempts, next_attempt_at, delivered_at, created_at FROM webhook_events
                     WHERE delivered_at IS NULL AND next_attempt_at <= ? ORDER BY next_attempt_at, id LIMIT ?",
                ))
                .bind(now.unix_millis())
                .bind(limit)
                .fetch_all(&self.$read)
                .await?;
                rows.iter()
                    .map(|r| {
                        Ok(WebhookEventRecord {
                            id: r.text("id")?,
                            kind: r.text("kind")?,
                            data: r.text("data")?,
                            attempts: r.int("attempts")?,
                            next_attempt_at: Timestamp::from_unix_millis(r.int("next_attempt_at")?),
                            delivered_at: r.opt_int("delivered_at")?.map(Timestamp::from_unix_millis),
                            created_at: Timestamp::from_unix_millis(r.int("created_at")?),
                        })
                    })
                    .collect()
            }

            pub(crate) async fn pay_webhook_result(
                &self,
                id: &str,
                delivered_at: Option<Timestamp>,
                next_attempt_at: Timestamp,
                error: Option<&str>,
            ) -> StoreResult<()> {
                db::query(&sql(
                    "UPDATE webhook_events SET attempts = attempts + 1, delivered_at = ?, next_attempt_at = ?, last_error = ?
                     WHERE id = ? AND delivered_at IS NULL",
                ))
                .bind(delivered_at.map(Timestamp::unix_millis))
                .bind(next_attempt_at.unix_millis())
                .bind(error)
                .bind(id)
                .execute(&self.$write)
                .await?;
                Ok(())
            }

            pub(crate) async fn pay_due_expired_incoming(&self, now: Timestamp, limit: i64) -> StoreResult<Vec<opd_core::IncomingPaymentId>> {
                let ids: Vec<String> = db::query_scalar(&sql(
                    "SELECT CAST(id AS TEXT) FROM incoming_payments WHERE completed = ? AND expiry_notified = ? AND expires_at <= ?
                     ORDER BY expires_at LIMIT ?",
                ))
                .bind(false)
                .bind(false)
                .bind(now.unix_millis())
                .bind(limit)
                .fetch_all(&self.$read)
                .await?;
                ids.iter().map(|s| Ok(opd_core::IncomingPaymentId::from_uuid($crate::rows::uuid_from_text(s)?))).collect()
            }

            pub(crate) async fn pay_mark_incoming_expired(&self, id: opd_core::IncomingPaymentId, event: &WebhookEventRecord) -> StoreResult<bool> {
                let mut tx = self.$write.begin().await?;
                let done = db::query(&sql(
                    "UPDATE incoming_payments SET expiry_notified = ? WHERE id = ?::uuid AND expiry_notified = ? AND completed = ?",
                ))
                .bind(true)
                .bind(id.to_string())
                .bind(false)
                .bind(false)
                .execute(&mut *tx)
                .await?;
                if done.rows_affected() == 0 {
                    return Ok(false);
                }
                insert_events(&mut tx, std::slice::from_ref(event)).await?;
                tx.commit().await?;
                Ok(true)
            }

            pub(crate) async fn pay_fund(
                &self,
                id: opd_core::OutgoingPaymentId,
                at: Timestamp,
                events: &[WebhookEventRecord],
            ) -> StoreResult<bool> {
                self.payments_cache.invalidate(id);
                let done = self.pay_fund_tx(id, at, events).await;
                self.payments_cache.invalidate(id);
                done
            }

            async fn pay_fund_tx(
                &self,
                id: opd_core::OutgoingPaymentId,
                at: Timestamp,
                events: &[WebhookEventRecord],
            ) -> StoreResult<bool> {
                let mut tx = self.$write.begin().await?;
                let row = db::query(&sql(&format!(
                    "UPDATE outgoing_payments SET state = 'sending', next_attempt_at = ?, updated_at = ?
                     WHERE id = ?::uuid AND state = 'funding' RETURNING {PAYMENT_COLUMNS}"
                )))
                .bind(at.unix_millis())
                .bind(at.unix_millis())
                .bind(id.to_string())
                .fetch_optional(&mut *tx)
                .await?;
                let Some(row) = row else { return Ok(false) };
                let p = payment_from_row(&row)?;
                // Funds held elsewhere arrive from the outside world.
                let settlement = ensure_account(&mut tx, AccountKind::Settlement, "settlement", &p.debit.asset, at).await?;
                let held = ensure_account(&mut tx, AccountKind::Outgoing, &p.id.to_string(), &p.debit.asset, at).await?;
                let reference = p.id.to_string();
                if post(&mut tx, &settlement, &held, p.debit.value, "fund", Some(&reference), None, at).await?.is_err() {
                    return Err($crate::rows::corrupt("settlement funding"));
                }
                insert_events(&mut tx, events).await?;
                tx.commit().await?;
                Ok(true)
            }

            pub(crate) async fn pay_unfunded_expired(&self, now: Timestamp, limit: i64) -> StoreResult<Vec<opd_core::OutgoingPaymentId>> {
                let ids: Vec<String> = db::query_scalar(&sql(
                    "SELECT CAST(p.id AS TEXT) FROM outgoing_payments p JOIN quotes q ON q.id = p.quote_id
                     WHERE p.state = 'funding' AND q.expires_at <= ? ORDER BY q.expires_at LIMIT ?",
                ))
                .bind(now.unix_millis())
                .bind(limit)
                .fetch_all(&self.$read)
                .await?;
                ids.iter().map(|s| Ok(opd_core::OutgoingPaymentId::from_uuid($crate::rows::uuid_from_text(s)?))).collect()
            }

            pub(crate) async fn pay_create_incoming(
                &self,
                p: &opd_core::incoming_payment::IncomingPayment,
                events: &[WebhookEventRecord],
            ) -> StoreResult<()> {
                let mut tx = self.$write.begin().await?;
                db::query(&sql(
                    "INSERT INTO incoming_payments (id, wallet_address_id, asset_code, asset_scale, incoming_amount,
                        received_amount, completed, expires_at, metadata, client, created_at, updated_at)
                     VALUES (?::uuid, ?::uuid, ?, ?, ?::numeric, ?::numeric, ?, ?, ?, ?, ?, ?)",
                ))
                .bind(p.id.to_string())
                .bind(p.wallet_address_id.to_string())
                .bind(p.asset.code.as_str())
                .bind(i16::from(p.asset.scale))
                .bind(p.incoming_amount.map(|v| v.to_string()))
                .bind(p.received_amount.to_string())
                .bind(p.completed)
                .bind(p.expires_at.unix_millis())
                .bind($crate::rows::metadata_to_text(&p.metadata))
                .bind(&p.client)
                .bind(p.created_at.unix_millis())
                .bind(p.updated_at.unix_millis())
                .execute(&mut *tx)
                .await?;
                insert_events(&mut tx, events).await?;
                tx.commit().await?;
                Ok(())
            }

            pub(crate) async fn pay_insert_events(&self, events: &[WebhookEventRecord]) -> StoreResult<()> {
                let mut tx = self.$write.begin().await?;
                insert_events(&mut tx, events).await?;
                tx.commit().await?;
                Ok(())
            }
        }

        // The authorization server's grants and tokens.

        const GRANT_COLUMNS: &str = "CAST(id AS TEXT) AS id, state, finalization, client_wallet_address, client_jwk, access, continue_id, continue_token_digest, interact_id, interact_nonce, interact_ref, interaction_state, interaction_expires_at, finish_uri, client_nonce, CAST(wallet_address_id AS TEXT) AS wallet_address_id, last_continued_at, version, created_at, updated_at";
        const TOKEN_COLUMNS: &str =
            "digest, management_id, CAST(grant_id AS TEXT) AS grant_id, access, expires_at, revoked_at, created_at";

        async fn insert_token(tx: &mut Tx<'_>, t: &AccessTokenRecord) -> StoreResult<()> {
            db::query(&sql("INSERT INTO access_tokens (digest, management_id, grant_id, access, expires_at, revoked_at, created_at) VALUES (?, ?, ?::uuid, ?, ?, ?, ?)"))
                .bind(&t.digest)
                .bind(&t.management_id)
                .bind(t.grant_id.to_string())
                .bind(&t.access)
                .bind(t.expires_at.unix_millis())
                .bind(t.revoked_at.map(Timestamp::unix_millis))
                .bind(t.created_at.unix_millis())
                .execute(&mut **tx)
                .await?;
            Ok(())
        }

        impl $store {
            pub(crate) async fn gnap_create_grant(
                &self,
                g: &GrantRecord,
                token: Option<&AccessTokenRecord>,
            ) -> StoreResult<()> {
                let mut tx = self.$write.begin().await?;
                db::query(&sql("INSERT INTO grants (id, state, finalization, client_wallet_address, client_jwk, access, continue_id, continue_token_digest, interact_id, interact_nonce, interact_ref, interaction_state, interaction_expires_at, finish_uri, client_nonce, wallet_address_id, last_continued_at, version, created_at, updated_at) VALUES (?::uuid, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?::uuid, ?, ?, ?, ?)"))
                    .bind(g.id.to_string())
                    .bind(&g.state)
                    .bind(&g.finalization)
                    .bind(&g.client_wallet_address)
                    .bind(&g.client_jwk)
                    .bind(&g.access)
                    .bind(&g.continue_id)
                    .bind(&g.continue_token_digest)
                    .bind(&g.interact_id)
                    .bind(&g.interact_nonce)
                    .bind(&g.interact_ref)
                    .bind(&g.interaction_state)
                    .bind(g.interaction_expires_at.map(Timestamp::unix_millis))
                    .bind(&g.finish_uri)
                    .bind(&g.client_nonce)
                    .bind(g.wallet_address_id.map(|w| w.to_string()))
                    .bind(g.last_continued_at.unix_millis())
                    .bind(g.version)
                    .bind(g.created_at.unix_millis())
                    .bind(g.updated_at.unix_millis())
                    .execute(&mut *tx)
                    .await?;
                if let Some(t) = token {
                    insert_token(&mut tx, t).await?;
                }
                tx.commit().await?;
                Ok(())
            }

            async fn gnap_grant_where(
                &self,
                filter: &str,
                value: String,
            ) -> StoreResult<Option<GrantRecord>> {
                db::query(&sql(&format!(
                    "SELECT {GRANT_COLUMNS} FROM grants WHERE {filter}"
                )))
                .bind(value)
                .fetch_optional(&self.$read)
                .await?
                .as_ref()
                .map(grant_from_row)
                .transpose()
            }

            pub(crate) async fn gnap_get_grant(&self, id: GrantId) -> StoreResult<Option<GrantRecord>> {
                self.gnap_grant_where("id = ?::uuid", id.to_string()).await
            }

            pub(crate) async fn gnap_get_grant_by_continue_id(
                &self,
                continue_id: &str,
            ) -> StoreResult<Option<GrantRecord>> {
                self.gnap_grant_where("continue_id = ?", continue_id.to_owned())
                    .await
            }

            pub(crate) async fn gnap_get_grant_by_interaction(
                &self,
                interact_id: &str,
            ) -> StoreResult<Option<GrantRecord>> {
                self.gnap_grant_where("interact_id = ?", interact_id.to_owned())
                    .await
            }

            pub(crate) async fn gnap_update_grant(
                &self,
                g: &GrantRecord,
                token: Option<&AccessTokenRecord>,
            ) -> StoreResult<bool> {
                let mut tx = self.$write.begin().await?;
                let done = db::query(&sql("UPDATE grants SET state = ?, finalization = ?, interact_ref = ?, interaction_state = ?,
                        last_continued_at = ?, updated_at = ?, continue_token_digest = ?, version = version + 1
                     WHERE id = ?::uuid AND version = ?"))
                .bind(&g.state)
                .bind(&g.finalization)
                .bind(&g.interact_ref)
                .bind(&g.interaction_state)
                .bind(g.last_continued_at.unix_millis())
                .bind(g.updated_at.unix_millis())
                .bind(&g.continue_token_digest)
                .bind(g.id.to_string())
                .bind(g.version)
                .execute(&mut *tx)
                .await?;
                if done.rows_affected() == 0 {
                    return Ok(false);
                }
                if let Some(t) = token {
                    insert_token(&mut tx, t).await?;
                }
                tx.commit().await?;
                Ok(true)
            }

            async fn gnap_token_where(
                &self,
                filter: &str,
                value: &str,
            ) -> StoreResult<Option<AccessTokenRecord>> {
                db::query(&sql(&format!(
                    "SELECT {TOKEN_COLUMNS} FROM access_tokens WHERE {filter}"
                )))
                .bind(value)
                .fetch_optional(&self.$read)
                .await?
                .as_ref()
                .map(token_from_row)
                .transpose()
            }

            pub(crate) async fn gnap_get_access_token(
                &self,
                digest: &str,
            ) -> StoreResult<Option<AccessTokenRecord>> {
                self.gnap_token_where("digest = ?", digest).await
            }

            pub(crate) async fn gnap_get_access_token_by_management_id(
                &self,
                mid: &str,
            ) -> StoreResult<Option<AccessTokenRecord>> {
                self.gnap_token_where("management_id = ?", mid).await
            }

            pub(crate) async fn gnap_rotate_access_token(
                &self,
                old: &str,
                new: &AccessTokenRecord,
                at: Timestamp,
            ) -> StoreResult<bool> {
                let mut tx = self.$write.begin().await?;
                let done = db::query(&sql("UPDATE access_tokens SET revoked_at = ? WHERE management_id = ? AND revoked_at IS NULL"))
                    .bind(at.unix_millis())
                    .bind(old)
                    .execute(&mut *tx)
                    .await?;
                if done.rows_affected() == 0 {
                    return Ok(false);
                }
                insert_token(&mut tx, new).await?;
                tx.commit().await?;
                Ok(true)
            }

            pub(crate) async fn gnap_revoke_access_token(
                &self,
                mid: &str,
                at: Timestamp,
            ) -> StoreResult<bool> {
                let done = db::query(&sql("UPDATE access_tokens SET revoked_at = ? WHERE management_id = ? AND revoked_at IS NULL"))
                    .bind(at.unix_millis())
                    .bind(mid)
                    .execute(&self.$write)
                    .await?;
                Ok(done.rows_affected() > 0)
            }

            pub(crate) async fn gnap_revoke_grant(&self, id: GrantId, at: Timestamp) -> StoreResult<bool> {
                let mut tx = self.$write.begin().await?;
                let done = db::query(&sql("UPDATE grants SET state = 'finalized', finalization = 'revoked', updated_at = ?, version = version + 1
                     WHERE id = ?::uuid AND (finalization IS NULL OR finalization <> 'revoked')"))
                .bind(at.unix_millis())
                .bind(id.to_string())
                .execute(&mut *tx)
                .await?;
                db::query(&sql("UPDATE access_tokens SET revoked_at = ? WHERE grant_id = ?::uuid AND revoked_at IS NULL"))
                    .bind(at.unix_millis())
                    .bind(id.to_string())
                    .execute(&mut *tx)
                    .await?;
                tx.commit().await?;
                Ok(done.rows_affected() > 0)
            }

            pub(crate) async fn gnap_set_owner_password(
                &self,
                wallet: WalletAddressId,
                hash: &str,
                at: Timestamp,
            ) -> StoreResult<()> {
                db::query(&sql("INSERT INTO wallet_owner_logins (wallet_address_id, password_hash, updated_at) VALUES (?::uuid, ?, ?)
                     ON CONFLICT (wallet_address_id) DO UPDATE SET password_hash = excluded.password_hash, updated_at = excluded.updated_at"))
                .bind(wallet.to_string())
                .bind(hash)
                .bind(at.unix_millis())
                .execute(&self.$write)
                .await?;
                Ok(())
            }

            pub(crate) async fn gnap_get_owner_password(
                &self,
                wallet: WalletAddressId,
            ) -> StoreResult<Option<String>> {
                Ok(db::query_scalar(&sql("SELECT password_hash FROM wallet_owner_logins WHERE wallet_address_id = ?::uuid"))
                .bind(wallet.to_string())
                .fetch_optional(&self.$read)
                .await?)
            }
        }



        // The Store trait, written once.

        const WALLET_COLUMNS: &str =
            "CAST(id AS TEXT) AS id, path, asset_code, CAST(asset_scale AS BIGINT) AS asset_scale, public_name, created_at, deactivated_at";
        const KEY_COLUMNS: &str =
            "CAST(wallet_address_id AS TEXT) AS wallet_address_id, kid, x, created_at, revoked_at";
        const INCOMING_COLUMNS: &str = "CAST(id AS TEXT) AS id, CAST(wallet_address_id AS TEXT) AS wallet_address_id, asset_code,
            CAST(asset_scale AS BIGINT) AS asset_scale, CAST(incoming_amount AS TEXT) AS incoming_amount,
            CAST(received_amount AS TEXT) AS received_amount, completed, expires_at, metadata, client, created_at, updated_at";
        const QUOTE_COLUMNS: &str = "CAST(id AS TEXT) AS id, CAST(wallet_address_id AS TEXT) AS wallet_address_id, receiver,
            CAST(debit_value AS TEXT) AS debit_value, debit_asset_code, CAST(debit_asset_scale AS BIGINT) AS debit_asset_scale,
            CAST(receive_value AS TEXT) AS receive_value, receive_asset_code, CAST(receive_asset_scale AS BIGINT) AS receive_asset_scale,
            CAST(fee AS TEXT) AS fee, CAST(debit_minus_fees AS TEXT) AS debit_minus_fees, client, created_at, expires_at";

        #[async_trait::async_trait]
        impl $crate::Store for $store {
            fn backend(&self) -> $crate::Backend {
                $backend
            }

            async fn get_setting(&self, key: &str) -> StoreResult<Option<String>> {
                Ok(
                    db::query_scalar(&sql("SELECT value FROM settings WHERE key = ?"))
                        .bind(key)
                        .fetch_optional(&self.$read)
                        .await?,
                )
            }

            async fn set_setting(&self, key: &str, value: &str) -> StoreResult<()> {
                db::query(&sql("INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value"))
                    .bind(key)
                    .bind(value)
                    .execute(&self.$write)
                    .await?;
                Ok(())
            }

            async fn setting_or_insert(&self, key: &str, value: &str) -> StoreResult<String> {
                db::query(&sql("INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT (key) DO NOTHING"))
                .bind(key)
                .bind(value)
                .execute(&self.$write)
                .await?;
                Ok(
                    db::query_scalar(&sql("SELECT value FROM settings WHERE key = ?"))
                        .bind(key)
                        .fetch_one(&self.$write)
                        .await?,
                )
            }

            async fn create_wallet_address(&self, w: &WalletAddress) -> StoreResult<()> {
                db::query(&sql("INSERT INTO wallet_addresses (id, path, asset_code, asset_scale, public_name, created_at, deactivated_at)
                     VALUES (?::uuid, ?, ?, ?, ?, ?, ?)"))
                .bind(w.id.to_string())
                .bind(w.path.as_str())
                .bind(w.asset.code.as_str())
                .bind(i16::from(w.asset.scale))
                .bind(&w.public_name)
                .bind(w.created_at.unix_millis())
                .bind(w.deactivated_at.map(Timestamp::unix_millis))
                .execute(&self.$write)
                .await?;
                Ok(())
            }

            async fn get_wallet_address(&self, id: WalletAddressId) -> StoreResult<Option<WalletAddress>> {
                db::query(&sql(&format!(
                    "SELECT {WALLET_COLUMNS} FROM wallet_addresses WHERE id = ?::uuid"
                )))
                .bind(id.to_string())
                .fetch_optional(&self.$read)
                .await?
                .as_ref()
                .map(wallet_from_row)
                .transpose()
            }

            async fn get_wallet_address_by_path(
                &self,
                path: &WalletAddressPath,
            ) -> StoreResult<Option<WalletAddress>> {
                db::query(&sql(&format!(
                    "SELECT {WALLET_COLUMNS} FROM wallet_addresses WHERE path = ?"
                )))
                .bind(path.as_str())
                .fetch_optional(&self.$read)
                .await?
                .as_ref()
                .map(wallet_from_row)
                .transpose()
            }

            async fn list_wallet_addresses(&self) -> StoreResult<Vec<WalletAddress>> {
                db::query(&sql(&format!(
                    "SELECT {WALLET_COLUMNS} FROM wallet_addresses ORDER BY path"
                )))
                .fetch_all(&self.$read)
                .await?
                .iter()
                .map(wallet_from_row)
                .collect()
            }

            async fn deactivate_wallet_address(
                &self,
                id: WalletAddressId,
                at: Timestamp,
            ) -> StoreResult<Option<WalletAddress>> {
                db::query(&sql(&format!(
                    "UPDATE wallet_addresses SET deactivated_at = COALESCE(deactivated_at, ?) WHERE id = ?::uuid
                     RETURNING {WALLET_COLUMNS}"
                )))
                .bind(at.unix_millis())
                .bind(id.to_string())
                .fetch_optional(&self.$write)
                .await?
                .as_ref()
                .map(wallet_from_row)
                .transpose()
            }

            async fn add_key(&self, k: &WalletAddressKey) -> StoreResult<()> {
                db::query(&sql("INSERT INTO wallet_address_keys (wallet_address_id, kid, x, created_at, revoked_at)
                     VALUES (?::uuid, ?, ?, ?, ?)"))
                .bind(k.wallet_address_id.to_string())
                .bind(&k.key.kid)
                .bind(&k.key.x)
                .bind(k.created_at.unix_millis())
                .bind(k.revoked_at.map(Timestamp::unix_millis))
                .execute(&self.$write)
                .await?;
                Ok(())
            }

            async fn revoke_key(
                &self,
                wallet: WalletAddressId,
                kid: &str,
                at: Timestamp,
            ) -> StoreResult<bool> {
                let done = db::query(&sql("UPDATE wallet_address_keys SET revoked_at = ?
                     WHERE wallet_address_id = ?::uuid AND kid = ? AND revoked_at IS NULL"))
                .bind(at.unix_millis())
                .bind(wallet.to_string())
                .bind(kid)
                .execute(&self.$write)
                .await?;
                Ok(done.rows_affected() > 0)
            }

            async fn list_keys(
                &self,
                wallet: WalletAddressId,
                include_revoked: bool,
            ) -> StoreResult<Vec<WalletAddressKey>> {
                let filter = if include_revoked {
                    ""
                } else {
                    "AND revoked_at IS NULL"
                };
                db::query(&sql(&format!(
                    "SELECT {KEY_COLUMNS} FROM wallet_address_keys WHERE wallet_address_id = ?::uuid {filter}
                     ORDER BY created_at, kid"
                )))
                .bind(wallet.to_string())
                .fetch_all(&self.$read)
                .await?
                .iter()
                .map(key_from_row)
                .collect()
            }

            async fn create_incoming_payment(
                &self,
                p: &IncomingPayment,
                events: &[crate::payments::WebhookEventRecord],
            ) -> StoreResult<()> {
                self.pay_create_incoming(p, events).await
            }

            async fn get_incoming_payment(
                &self,
                id: IncomingPaymentId,
            ) -> StoreResult<Option<IncomingPayment>> {
                db::query(&sql(&format!(
                    "SELECT {INCOMING_COLUMNS} FROM incoming_payments WHERE id = ?::uuid"
                )))
                .bind(id.to_string())
                .fetch_optional(&self.$read)
                .await?
                .as_ref()
                .map(incoming_from_row)
                .transpose()
            }

            async fn list_incoming_payments(
                &self,
                wallet: WalletAddressId,
                client: Option<&str>,
                page: &PageRequest,
            ) -> StoreResult<Page<IncomingPayment>> {
                list_page(
                    &self.$read,
                    "incoming_payments",
                    INCOMING_COLUMNS,
                    wallet,
                    client,
                    page,
                    incoming_from_row,
                )
                .await
            }

            async fn complete_incoming_payment(
                &self,
                id: IncomingPaymentId,
                at: Timestamp,
                events: &[WebhookEventRecord],
            ) -> StoreResult<Option<IncomingPayment>> {
                let mut tx = self.$write.begin().await?;
                let done = db::query(&sql("UPDATE incoming_payments SET completed = TRUE, updated_at = ? WHERE id = ?::uuid AND NOT completed"))
                    .bind(at.unix_millis())
                    .bind(id.to_string())
                    .execute(&mut *tx)
                    .await?;
                if done.rows_affected() > 0 {
                    insert_events(&mut tx, events).await?;
                }
                tx.commit().await?;
                self.get_incoming_payment(id).await
            }

            async fn create_quote(&self, q: &Quote) -> StoreResult<()> {
                db::query(&sql("INSERT INTO quotes (id, wallet_address_id, receiver, debit_value, debit_asset_code, debit_asset_scale,
                        receive_value, receive_asset_code, receive_asset_scale, fee, debit_minus_fees, client, created_at, expires_at)
                     VALUES (?::uuid, ?::uuid, ?, ?::numeric, ?, ?, ?::numeric, ?, ?, ?::numeric, ?::numeric, ?, ?, ?)"))
                .bind(q.id.to_string())
                .bind(q.wallet_address_id.to_string())
                .bind(&q.receiver)
                .bind(q.debit_amount.value.to_string())
                .bind(q.debit_amount.asset.code.as_str())
                .bind(i16::from(q.debit_amount.asset.scale))
                .bind(q.receive_amount.value.to_string())
                .bind(q.receive_amount.asset.code.as_str())
                .bind(i16::from(q.receive_amount.asset.scale))
                .bind(q.fee.to_string())
                .bind(q.debit_minus_fees.to_string())
                .bind(&q.client)
                .bind(q.created_at.unix_millis())
                .bind(q.expires_at.unix_millis())
                .execute(&self.$write)
                .await?;
                Ok(())
            }

            async fn get_quote(&self, id: QuoteId) -> StoreResult<Option<Quote>> {
                db::query(&sql(&format!(
                    "SELECT {QUOTE_COLUMNS} FROM quotes WHERE id = ?::uuid"
                )))
                .bind(id.to_string())
                .fetch_optional(&self.$read)
                .await?
                .as_ref()
                .map(quote_from_row)
                .transpose()
            }

            async fn set_fee(&self, asset: &Asset, fee: Fee, at: Timestamp) -> StoreResult<()> {
                db::query(&sql("INSERT INTO fees (asset_code, asset_scale, fixed, basis_points, updated_at) VALUES (?, ?, ?::numeric, ?, ?)
                     ON CONFLICT (asset_code, asset_scale) DO UPDATE
                     SET fixed = excluded.fixed, basis_points = excluded.basis_points, updated_at = excluded.updated_at"))
                .bind(asset.code.as_str())
                .bind(i16::from(asset.scale))
                .bind(fee.fixed.to_string())
                .bind(i32::from(fee.basis_points))
                .bind(at.unix_millis())
                .execute(&self.$write)
                .await?;
                Ok(())
            }

            async fn delete_fee(&self, asset: &Asset) -> StoreResult<bool> {
                let done = db::query(&sql("DELETE FROM fees WHERE asset_code = ? AND asset_scale = ?"))
                    .bind(asset.code.as_str())
                    .bind(i16::from(asset.scale))
                    .execute(&self.$write)
                    .await?;
                Ok(done.rows_affected() > 0)
            }

            async fn list_fees(&self) -> StoreResult<Vec<FeeRow>> {
                let rows = db::query(&sql("SELECT asset_code, CAST(asset_scale AS BIGINT) AS asset_scale, CAST(fixed AS TEXT) AS fixed, CAST(basis_points AS BIGINT) AS basis_points,
                        updated_at FROM fees ORDER BY asset_code, asset_scale"))
                .fetch_all(&self.$read)
                .await?;
                rows.iter()
                    .map(|row| {
                        let bp: i64 = row.try_get("basis_points")?;
                        let fixed = rows::u64_from_text(&row.try_get::<String, _>("fixed")?, "fee")?;
                        Ok(FeeRow {
                            asset: rows::asset(
                                &row.try_get::<String, _>("asset_code")?,
                                row.try_get("asset_scale")?,
                            )?,
                            fee: Fee::new(
                                fixed,
                                u16::try_from(bp).map_err(|_| corrupt("basis points"))?,
                            )
                            .map_err(|_| corrupt("basis points"))?,
                            updated_at: Timestamp::from_unix_millis(row.try_get("updated_at")?),
                        })
                    })
                    .collect()
            }

            async fn set_rates(
                &self,
                base: &AssetCode,
                rates: &[(AssetCode, Rate)],
                at: Timestamp,
            ) -> StoreResult<()> {
                let mut tx = self.$write.begin().await?;
                db::query(&sql("DELETE FROM exchange_rates WHERE base = ?"))
                    .bind(base.as_str())
                    .execute(&mut *tx)
                    .await?;
                for (counter, rate) in rates {
                    db::query(&sql("INSERT INTO exchange_rates (base, counter, rate, updated_at) VALUES (?, ?, ?, ?)"))
                        .bind(base.as_str())
                        .bind(counter.as_str())
                        .bind(rate.to_string())
                        .bind(at.unix_millis())
                        .execute(&mut *tx)
                        .await?;
                }
                tx.commit().await?;
                Ok(())
            }

            async fn list_rates(&self) -> StoreResult<Vec<RateRow>> {
                let rows = db::query(&sql("SELECT base, counter, rate, updated_at FROM exchange_rates ORDER BY base, counter"))
                .fetch_all(&self.$read)
                .await?;
                rows.iter()
                    .map(|row| {
                        Ok(RateRow {
                            base: AssetCode::parse(&row.try_get::<String, _>("base")?)
                                .map_err(|_| corrupt("asset code"))?,
                            counter: AssetCode::parse(&row.try_get::<String, _>("counter")?)
                                .map_err(|_| corrupt("asset code"))?,
                            rate: rows::rate(&row.try_get::<String, _>("rate")?)?,
                            updated_at: Timestamp::from_unix_millis(row.try_get("updated_at")?),
                        })
                    })
                    .collect()
            }

            async fn create_grant(
                &self,
                grant: &GrantRecord,
                token: Option<&AccessTokenRecord>,
            ) -> StoreResult<()> {
                self.gnap_create_grant(grant, token).await
            }
            async fn get_grant(&self, id: GrantId) -> StoreResult<Option<GrantRecord>> {
                self.gnap_get_grant(id).await
            }
            async fn get_grant_by_continue_id(
                &self,
                continue_id: &str,
            ) -> StoreResult<Option<GrantRecord>> {
                self.gnap_get_grant_by_continue_id(continue_id).await
            }
            async fn get_grant_by_interaction(
                &self,
                interact_id: &str,
            ) -> StoreResult<Option<GrantRecord>> {
                self.gnap_get_grant_by_interaction(interact_id).await
            }
            async fn update_grant(
                &self,
                grant: &GrantRecord,
                token: Option<&AccessTokenRecord>,
            ) -> StoreResult<bool> {
                self.gnap_update_grant(grant, token).await
            }
            async fn get_access_token(&self, digest: &str) -> StoreResult<Option<AccessTokenRecord>> {
                self.gnap_get_access_token(digest).await
            }
            async fn get_access_token_by_management_id(
                &self,
                management_id: &str,
            ) -> StoreResult<Option<AccessTokenRecord>> {
                self.gnap_get_access_token_by_management_id(management_id)
                    .await
            }
            async fn rotate_access_token(
                &self,
                old_management_id: &str,
                new: &AccessTokenRecord,
                at: Timestamp,
            ) -> StoreResult<bool> {
                self.gnap_rotate_access_token(old_management_id, new, at)
                    .await
            }
            async fn revoke_access_token(&self, management_id: &str, at: Timestamp) -> StoreResult<bool> {
                self.gnap_revoke_access_token(management_id, at).await
            }
            async fn revoke_grant(&self, id: GrantId, at: Timestamp) -> StoreResult<bool> {
                self.gnap_revoke_grant(id, at).await
            }
            async fn set_owner_password(
                &self,
                wallet: WalletAddressId,
                hash: &str,
                at: Timestamp,
            ) -> StoreResult<()> {
                self.gnap_set_owner_password(wallet, hash, at).await
            }
            async fn get_owner_password(&self, wallet: WalletAddressId) -> StoreResult<Option<String>> {
                self.gnap_get_owner_password(wallet).await
            }

            #[allow(clippy::too_many_arguments)]
            async fn ledger_move(
                &self,
                wallet: WalletAddressId,
                asset: &Asset,
                amount: u64,
                deposit: bool,
                idempotency_key: &str,
                request_digest: &str,
                at: Timestamp,
            ) -> StoreResult<crate::payments::LedgerOutcome> {
                self.pay_ledger_move(
                    wallet,
                    asset,
                    amount,
                    deposit,
                    idempotency_key,
                    request_digest,
                    at,
                )
                .await
            }
            async fn ledger_accounts(&self) -> StoreResult<Vec<crate::payments::AccountRow>> {
                self.pay_list_accounts().await
            }
            async fn ledger_transfers_of(
                &self,
                account: &str,
                limit: i64,
            ) -> StoreResult<Vec<crate::payments::TransferRow>> {
                self.pay_transfers_of(account, limit).await
            }
            async fn ledger_all_transfers(&self) -> StoreResult<Vec<crate::payments::TransferRow>> {
                self.pay_all_transfers().await
            }
            async fn create_outgoing_payment(
                &self,
                payment: &crate::payments::OutgoingPaymentRecord,
                grant: Option<&crate::payments::GrantReservation>,
                events: &[crate::payments::WebhookEventRecord],
            ) -> StoreResult<crate::payments::CreateOutgoing> {
                self.pay_create(payment, grant, events).await
            }
            async fn get_outgoing_payment(
                &self,
                id: opd_core::OutgoingPaymentId,
            ) -> StoreResult<Option<crate::payments::OutgoingPaymentRecord>> {
                self.pay_get(id).await
            }
            async fn list_outgoing_payments(
                &self,
                wallet: WalletAddressId,
                client: Option<&str>,
                page: &PageRequest,
            ) -> StoreResult<Page<crate::payments::OutgoingPaymentRecord>> {
                self.pay_list(wallet, client, page).await
            }
            async fn claim_due_outgoing_payment(
                &self,
                now: Timestamp,
                lease_ms: i64,
            ) -> StoreResult<Option<crate::payments::OutgoingPaymentRecord>> {
                self.pay_claim_due(now, lease_ms).await
            }
            async fn deliver_locally(
                &self,
                delivery: &crate::payments::LocalDelivery,
            ) -> StoreResult<bool> {
                self.pay_deliver_local(delivery).await
            }
            async fn fail_outgoing_payment(
                &self,
                failure: &crate::payments::PaymentFailure,
            ) -> StoreResult<bool> {
                self.pay_fail(failure).await
            }
            async fn grant_spent(
                &self,
                grant: &str,
                interval_start: Timestamp,
            ) -> StoreResult<Option<crate::payments::GrantSpent>> {
                self.pay_grant_spent(grant, interval_start).await
            }
            async fn fund_outgoing_payment(
                &self,
                id: opd_core::OutgoingPaymentId,
                at: Timestamp,
                events: &[crate::payments::WebhookEventRecord],
            ) -> StoreResult<bool> {
                self.pay_fund(id, at, events).await
            }
            async fn unfunded_expired_outgoing_payments(
                &self,
                now: Timestamp,
                limit: i64,
            ) -> StoreResult<Vec<opd_core::OutgoingPaymentId>> {
                self.pay_unfunded_expired(now, limit).await
            }
            async fn insert_webhook_events(
                &self,
                events: &[crate::payments::WebhookEventRecord],
            ) -> StoreResult<()> {
                self.pay_insert_events(events).await
            }
            async fn due_webhook_events(
                &self,
                now: Timestamp,
                limit: i64,
            ) -> StoreResult<Vec<crate::payments::WebhookEventRecord>> {
                self.pay_due_webhooks(now, limit).await
            }
            async fn webhook_attempted(
                &self,
                id: &str,
                delivered_at: Option<Timestamp>,
                next_attempt_at: Timestamp,
                error: Option<&str>,
            ) -> StoreResult<()> {
                self.pay_webhook_result(id, delivered_at, next_attempt_at, error)
                    .await
            }
            async fn due_expired_incoming_payments(
                &self,
                now: Timestamp,
                limit: i64,
            ) -> StoreResult<Vec<IncomingPaymentId>> {
                self.pay_due_expired_incoming(now, limit).await
            }
            async fn mark_incoming_payment_expired(
                &self,
                id: IncomingPaymentId,
                event: &crate::payments::WebhookEventRecord,
            ) -> StoreResult<bool> {
                self.pay_mark_incoming_expired(id, event).await
            }

            async fn ping(&self) -> StoreResult<()> {
                db::query(&sql("SELECT 1")).execute(&self.$read).await?;
                Ok(())
            }
        }

        /// Reads one page of a wallet address's resources from `table`, newest
        /// first (ids are time ordered), with what lies on either side.
        async fn list_page<T>(
            pool: &db::ReadPool,
            table: &str,
            columns: &str,
            wallet: WalletAddressId,
            client: Option<&str>,
            page: &PageRequest,
            decode: fn(&db::Row) -> StoreResult<T>,
        ) -> StoreResult<Page<T>> {
            use opd_core::pagination::Direction;
            let filter = if client.is_some() { "wallet_address_id = ?::uuid AND client = ?" } else { "wallet_address_id = ?::uuid" };
            let (cmp, order, beyond) = match page.direction {
                Direction::Forward => ("<", "DESC", ">="),
                Direction::Backward => (">", "ASC", "<="),
            };
            let cursor = page.cursor.map(|c| c.hyphenated().to_string());
            let q = match cursor {
                Some(_) => format!("SELECT {columns} FROM {table} WHERE {filter} AND id {cmp} ?::uuid ORDER BY id {order} LIMIT ?"),
                None => format!("SELECT {columns} FROM {table} WHERE {filter} ORDER BY id {order} LIMIT ?"),
            };
            let q = sql(&q);
            let mut query = db::query(&q).bind(wallet.to_string());
            if let Some(c) = client {
                query = query.bind(c);
            }
            if let Some(c) = &cursor {
                query = query.bind(c);
            }
            let fetched = query.bind(i64::from(page.size) + 1).fetch_all(pool).await?;
            let more = fetched.len() > page.size as usize;
            let mut items = fetched.iter().take(page.size as usize).map(decode).collect::<StoreResult<Vec<T>>>()?;
            let other_side = match &cursor {
                Some(c) => {
                    let q = sql(&format!("SELECT COUNT(*) FROM {table} WHERE {filter} AND id {beyond} ?::uuid"));
                    let mut query = db::query_scalar(&q).bind(wallet.to_string());
                    if let Some(cl) = client {
                        query = query.bind(cl);
                    }
                    let beyond_count: i64 = query.bind(c).fetch_one(pool).await?;
                    beyond_count > 0
                }
                None => false,
            };
            Ok(match page.direction {
                Direction::Forward => Page { items, has_next_page: more, has_previous_page: other_side },
                Direction::Backward => {
                    items.reverse();
                    Page { items, has_next_page: other_side, has_previous_page: more }
                }
            })
        }

    };
}

pub(crate) use payments_impl;

#[cfg(test)]
mod tests {
    use super::dialect;

    #[test]
    fn placeholders_per_dialect() {
        let s = "UPDATE t SET a = ?::numeric, b = ? WHERE id = ?::uuid";
        assert_eq!(
            dialect(s, true),
            "UPDATE t SET a = $1::numeric, b = $2 WHERE id = $3::uuid"
        );
        assert_eq!(dialect(s, false), "UPDATE t SET a = ?, b = ? WHERE id = ?");
    }
}
