//! The embedded SQLite store: one file, WAL journal, a single writer
//! connection (SQLite allows one writer at a time; queuing writers in the
//! pool is cheaper than retrying on `SQLITE_BUSY`) and a pool of readers.

use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use async_trait::async_trait;
use opd_core::incoming_payment::IncomingPayment;
use opd_core::pagination::{Direction, Page, PageRequest};
use opd_core::quote::Quote;
use opd_core::wallet_address::{WalletAddress, WalletAddressKey, WalletAddressPath};
use opd_core::{
    Asset, AssetCode, Fee, GrantId, IncomingPaymentId, QuoteId, Rate, Timestamp, WalletAddressId,
};
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteRow,
    SqliteSynchronous,
};
use sqlx::Row;

use crate::rows::{
    self, corrupt, grant_from_row, incoming_from_row, key_from_row, quote_from_row, token_from_row,
    wallet_from_row,
};
use crate::{
    AccessTokenRecord, Backend, ConnectOptions, FeeRow, GrantRecord, RateRow, Store, StoreError,
    StoreResult,
};

static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations/sqlite");

/// The SQLite store.
#[derive(Debug, Clone)]
pub struct SqliteStore {
    writer: SqlitePool,
    reader: SqlitePool,
}

/// The file path in a `sqlite:` URL (without query parameters).
fn sqlite_path(url: &str) -> &str {
    let rest = url
        .strip_prefix("sqlite://")
        .or_else(|| url.strip_prefix("sqlite:"))
        .unwrap_or(url);
    rest.split('?').next().unwrap_or(rest)
}

impl SqliteStore {
    pub async fn connect(options: &ConnectOptions) -> StoreResult<Self> {
        let path = sqlite_path(&options.url);
        if path.is_empty() || path.starts_with(":memory:") {
            return Err(StoreError::Config(
                "in-memory SQLite is not supported: give a file path, e.g. sqlite://opd-data/opd.sqlite".into(),
            ));
        }
        let file = Path::new(path);
        let create = options.create_sqlite_file || options.url.contains("mode=rwc");
        if !file.exists() {
            if !create {
                return Err(StoreError::Config(format!(
                    "SQLite database {path:?} does not exist; check the path, or add ?mode=rwc to the URL to create it"
                )));
            }
            match file.parent() {
                Some(dir) if !dir.as_os_str().is_empty() && !dir.is_dir() => {
                    return Err(StoreError::Config(format!(
                        "directory {:?} for the SQLite database does not exist",
                        dir
                    )))
                }
                _ => {}
            }
        }
        let base = SqliteConnectOptions::from_str(&format!("sqlite://{path}"))
            .map_err(|e| StoreError::Config(format!("invalid SQLite URL: {e}")))?
            .create_if_missing(create)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Normal)
            .busy_timeout(Duration::from_secs(5))
            .foreign_keys(true);
        let writer = SqlitePoolOptions::new()
            .max_connections(1)
            .acquire_timeout(Duration::from_secs(30))
            .connect_with(base.clone())
            .await
            .map_err(|e| {
                StoreError::Config(format!("cannot open SQLite database {path:?}: {e}"))
            })?;
        MIGRATOR.run(&writer).await?;
        let reader = SqlitePoolOptions::new()
            .max_connections(options.max_connections.max(1))
            .acquire_timeout(Duration::from_secs(30))
            .connect_with(base.read_only(true))
            .await?;
        Ok(Self { writer, reader })
    }

    /// Table name -> sorted column names, for the migration parity test.
    pub async fn schema_columns(&self) -> StoreResult<Vec<(String, Vec<String>)>> {
        let tables: Vec<String> = sqlx::query_scalar(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '_sqlx%' ORDER BY name",
        )
        .fetch_all(&self.reader)
        .await?;
        let mut out = Vec::new();
        for t in tables {
            let mut cols: Vec<String> = sqlx::query_scalar("SELECT name FROM pragma_table_info(?)")
                .bind(&t)
                .fetch_all(&self.reader)
                .await?;
            cols.sort();
            out.push((t, cols));
        }
        Ok(out)
    }
}

#[async_trait]
impl Store for SqliteStore {
    fn backend(&self) -> Backend {
        Backend::Sqlite
    }

    async fn get_setting(&self, key: &str) -> StoreResult<Option<String>> {
        Ok(
            sqlx::query_scalar("SELECT value FROM settings WHERE key = ?")
                .bind(key)
                .fetch_optional(&self.reader)
                .await?,
        )
    }

    async fn set_setting(&self, key: &str, value: &str) -> StoreResult<()> {
        sqlx::query("INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value")
            .bind(key)
            .bind(value)
            .execute(&self.writer)
            .await?;
        Ok(())
    }

    async fn setting_or_insert(&self, key: &str, value: &str) -> StoreResult<String> {
        sqlx::query("INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT (key) DO NOTHING")
            .bind(key)
            .bind(value)
            .execute(&self.writer)
            .await?;
        let stored: String = sqlx::query_scalar("SELECT value FROM settings WHERE key = ?")
            .bind(key)
            .fetch_one(&self.writer)
            .await?;
        Ok(stored)
    }

    async fn create_wallet_address(&self, w: &WalletAddress) -> StoreResult<()> {
        sqlx::query(
            "INSERT INTO wallet_addresses (id, path, asset_code, asset_scale, public_name, created_at, deactivated_at)
             VALUES (?, ?, ?, ?, ?, ?, ?)",
        )
        .bind(w.id.to_string())
        .bind(w.path.as_str())
        .bind(w.asset.code.as_str())
        .bind(i64::from(w.asset.scale))
        .bind(&w.public_name)
        .bind(w.created_at.unix_millis())
        .bind(w.deactivated_at.map(Timestamp::unix_millis))
        .execute(&self.writer)
        .await?;
        Ok(())
    }

    async fn get_wallet_address(&self, id: WalletAddressId) -> StoreResult<Option<WalletAddress>> {
        sqlx::query("SELECT * FROM wallet_addresses WHERE id = ?")
            .bind(id.to_string())
            .fetch_optional(&self.reader)
            .await?
            .as_ref()
            .map(wallet_from_row)
            .transpose()
    }

    async fn get_wallet_address_by_path(
        &self,
        path: &WalletAddressPath,
    ) -> StoreResult<Option<WalletAddress>> {
        sqlx::query("SELECT * FROM wallet_addresses WHERE path = ?")
            .bind(path.as_str())
            .fetch_optional(&self.reader)
            .await?
            .as_ref()
            .map(wallet_from_row)
            .transpose()
    }

    async fn list_wallet_addresses(&self) -> StoreResult<Vec<WalletAddress>> {
        sqlx::query("SELECT * FROM wallet_addresses ORDER BY path")
            .fetch_all(&self.reader)
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
        sqlx::query("UPDATE wallet_addresses SET deactivated_at = ? WHERE id = ? AND deactivated_at IS NULL")
            .bind(at.unix_millis())
            .bind(id.to_string())
            .execute(&self.writer)
            .await?;
        sqlx::query("SELECT * FROM wallet_addresses WHERE id = ?")
            .bind(id.to_string())
            .fetch_optional(&self.writer)
            .await?
            .as_ref()
            .map(wallet_from_row)
            .transpose()
    }

    async fn add_key(&self, k: &WalletAddressKey) -> StoreResult<()> {
        sqlx::query("INSERT INTO wallet_address_keys (wallet_address_id, kid, x, created_at, revoked_at) VALUES (?, ?, ?, ?, ?)")
            .bind(k.wallet_address_id.to_string())
            .bind(&k.key.kid)
            .bind(&k.key.x)
            .bind(k.created_at.unix_millis())
            .bind(k.revoked_at.map(Timestamp::unix_millis))
            .execute(&self.writer)
            .await?;
        Ok(())
    }

    async fn revoke_key(
        &self,
        wallet: WalletAddressId,
        kid: &str,
        at: Timestamp,
    ) -> StoreResult<bool> {
        let done = sqlx::query(
            "UPDATE wallet_address_keys SET revoked_at = ? WHERE wallet_address_id = ? AND kid = ? AND revoked_at IS NULL",
        )
        .bind(at.unix_millis())
        .bind(wallet.to_string())
        .bind(kid)
        .execute(&self.writer)
        .await?;
        Ok(done.rows_affected() > 0)
    }

    async fn list_keys(
        &self,
        wallet: WalletAddressId,
        include_revoked: bool,
    ) -> StoreResult<Vec<WalletAddressKey>> {
        let sql = if include_revoked {
            "SELECT * FROM wallet_address_keys WHERE wallet_address_id = ? ORDER BY created_at, kid"
        } else {
            "SELECT * FROM wallet_address_keys WHERE wallet_address_id = ? AND revoked_at IS NULL ORDER BY created_at, kid"
        };
        sqlx::query(sql)
            .bind(wallet.to_string())
            .fetch_all(&self.reader)
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
        sqlx::query("SELECT * FROM incoming_payments WHERE id = ?")
            .bind(id.to_string())
            .fetch_optional(&self.reader)
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
            &self.reader,
            "incoming_payments",
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
    ) -> StoreResult<Option<IncomingPayment>> {
        sqlx::query("UPDATE incoming_payments SET completed = 1, updated_at = ? WHERE id = ? AND completed = 0")
            .bind(at.unix_millis())
            .bind(id.to_string())
            .execute(&self.writer)
            .await?;
        sqlx::query("SELECT * FROM incoming_payments WHERE id = ?")
            .bind(id.to_string())
            .fetch_optional(&self.writer)
            .await?
            .as_ref()
            .map(incoming_from_row)
            .transpose()
    }

    async fn create_quote(&self, q: &Quote) -> StoreResult<()> {
        sqlx::query(
            "INSERT INTO quotes (id, wallet_address_id, receiver, debit_value, debit_asset_code, debit_asset_scale,
                receive_value, receive_asset_code, receive_asset_scale, fee, debit_minus_fees, client, created_at, expires_at)
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        )
        .bind(q.id.to_string())
        .bind(q.wallet_address_id.to_string())
        .bind(&q.receiver)
        .bind(q.debit_amount.value.to_string())
        .bind(q.debit_amount.asset.code.as_str())
        .bind(i64::from(q.debit_amount.asset.scale))
        .bind(q.receive_amount.value.to_string())
        .bind(q.receive_amount.asset.code.as_str())
        .bind(i64::from(q.receive_amount.asset.scale))
        .bind(q.fee.to_string())
        .bind(q.debit_minus_fees.to_string())
        .bind(&q.client)
        .bind(q.created_at.unix_millis())
        .bind(q.expires_at.unix_millis())
        .execute(&self.writer)
        .await?;
        Ok(())
    }

    async fn get_quote(&self, id: QuoteId) -> StoreResult<Option<Quote>> {
        sqlx::query("SELECT * FROM quotes WHERE id = ?")
            .bind(id.to_string())
            .fetch_optional(&self.reader)
            .await?
            .as_ref()
            .map(quote_from_row)
            .transpose()
    }

    async fn set_fee(&self, asset: &Asset, fee: Fee, at: Timestamp) -> StoreResult<()> {
        sqlx::query(
            "INSERT INTO fees (asset_code, asset_scale, fixed, basis_points, updated_at) VALUES (?, ?, ?, ?, ?)
             ON CONFLICT (asset_code, asset_scale) DO UPDATE
             SET fixed = excluded.fixed, basis_points = excluded.basis_points, updated_at = excluded.updated_at",
        )
        .bind(asset.code.as_str())
        .bind(i64::from(asset.scale))
        .bind(fee.fixed.to_string())
        .bind(i64::from(fee.basis_points))
        .bind(at.unix_millis())
        .execute(&self.writer)
        .await?;
        Ok(())
    }

    async fn delete_fee(&self, asset: &Asset) -> StoreResult<bool> {
        let done = sqlx::query("DELETE FROM fees WHERE asset_code = ? AND asset_scale = ?")
            .bind(asset.code.as_str())
            .bind(i64::from(asset.scale))
            .execute(&self.writer)
            .await?;
        Ok(done.rows_affected() > 0)
    }

    async fn list_fees(&self) -> StoreResult<Vec<FeeRow>> {
        let rows = sqlx::query("SELECT * FROM fees ORDER BY asset_code, asset_scale")
            .fetch_all(&self.reader)
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
        let mut tx = self.writer.begin().await?;
        sqlx::query("DELETE FROM exchange_rates WHERE base = ?")
            .bind(base.as_str())
            .execute(&mut *tx)
            .await?;
        for (counter, rate) in rates {
            sqlx::query(
                "INSERT INTO exchange_rates (base, counter, rate, updated_at) VALUES (?, ?, ?, ?)",
            )
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
        let rows = sqlx::query("SELECT * FROM exchange_rates ORDER BY base, counter")
            .fetch_all(&self.reader)
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
        sqlx::query("SELECT 1").execute(&self.reader).await?;
        Ok(())
    }
}

/// Reads one page of a wallet address's resources from `table`, newest
/// first (ids are time ordered), with what lies on either side.
async fn list_page<T>(
    pool: &SqlitePool,
    table: &str,
    wallet: WalletAddressId,
    client: Option<&str>,
    page: &PageRequest,
    decode: fn(&SqliteRow) -> StoreResult<T>,
) -> StoreResult<Page<T>> {
    let filter = if client.is_some() {
        "wallet_address_id = ? AND client = ?"
    } else {
        "wallet_address_id = ?"
    };
    let limit = i64::from(page.size) + 1;
    let (cmp, order, beyond) = match page.direction {
        Direction::Forward => ("<", "DESC", ">="),
        Direction::Backward => (">", "ASC", "<="),
    };
    let cursor = page.cursor.map(|c| c.hyphenated().to_string());
    let sql = match cursor {
        Some(_) => format!(
            "SELECT * FROM {table} WHERE {filter} AND id {cmp} ? ORDER BY id {order} LIMIT ?"
        ),
        None => format!("SELECT * FROM {table} WHERE {filter} ORDER BY id {order} LIMIT ?"),
    };
    let mut q = sqlx::query(&sql).bind(wallet.to_string());
    if let Some(c) = client {
        q = q.bind(c);
    }
    if let Some(c) = &cursor {
        q = q.bind(c);
    }
    let fetched = q.bind(limit).fetch_all(pool).await?;
    let more = fetched.len() > page.size as usize;
    let mut items = fetched
        .iter()
        .take(page.size as usize)
        .map(decode)
        .collect::<StoreResult<Vec<T>>>()?;
    let other_side = match &cursor {
        Some(c) => {
            let sql =
                format!("SELECT EXISTS (SELECT 1 FROM {table} WHERE {filter} AND id {beyond} ?)");
            let mut q = sqlx::query_scalar::<_, bool>(&sql).bind(wallet.to_string());
            if let Some(cl) = client {
                q = q.bind(cl);
            }
            q.bind(c).fetch_one(pool).await?
        }
        None => false,
    };
    Ok(match page.direction {
        Direction::Forward => Page {
            items,
            has_next_page: more,
            has_previous_page: other_side,
        },
        Direction::Backward => {
            items.reverse();
            Page {
                items,
                has_next_page: other_side,
                has_previous_page: more,
            }
        }
    })
}

const GRANT_COLUMNS: &str = "id, state, finalization, client_wallet_address, client_jwk, access, continue_id, continue_token_digest, interact_id, interact_nonce, interact_ref, interaction_state, interaction_expires_at, finish_uri, client_nonce, wallet_address_id, last_continued_at, version, created_at, updated_at";
const TOKEN_COLUMNS: &str =
    "digest, management_id, grant_id, access, expires_at, revoked_at, created_at";

async fn insert_token<'c, E>(executor: E, t: &AccessTokenRecord) -> StoreResult<()>
where
    E: sqlx::Executor<'c, Database = sqlx::Sqlite>,
{
    sqlx::query("INSERT INTO access_tokens (digest, management_id, grant_id, access, expires_at, revoked_at, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)")
        .bind(&t.digest)
        .bind(&t.management_id)
        .bind(t.grant_id.to_string())
        .bind(&t.access)
        .bind(t.expires_at.unix_millis())
        .bind(t.revoked_at.map(Timestamp::unix_millis))
        .bind(t.created_at.unix_millis())
        .execute(executor)
        .await?;
    Ok(())
}

impl SqliteStore {
    pub(crate) async fn gnap_create_grant(
        &self,
        g: &GrantRecord,
        token: Option<&AccessTokenRecord>,
    ) -> StoreResult<()> {
        let mut tx = self.writer.begin().await?;
        sqlx::query("INSERT INTO grants (id, state, finalization, client_wallet_address, client_jwk, access, continue_id, continue_token_digest, interact_id, interact_nonce, interact_ref, interaction_state, interaction_expires_at, finish_uri, client_nonce, wallet_address_id, last_continued_at, version, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
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
            insert_token(&mut *tx, t).await?;
        }
        tx.commit().await?;
        Ok(())
    }

    async fn gnap_grant_where(
        &self,
        filter: &str,
        value: String,
    ) -> StoreResult<Option<GrantRecord>> {
        sqlx::query(&format!(
            "SELECT {GRANT_COLUMNS} FROM grants WHERE {filter}"
        ))
        .bind(value)
        .fetch_optional(&self.reader)
        .await?
        .as_ref()
        .map(grant_from_row)
        .transpose()
    }

    pub(crate) async fn gnap_get_grant(&self, id: GrantId) -> StoreResult<Option<GrantRecord>> {
        self.gnap_grant_where("id = ?", id.to_string()).await
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
        let mut tx = self.writer.begin().await?;
        let done = sqlx::query(
            "UPDATE grants SET state = ?, finalization = ?, interact_ref = ?, interaction_state = ?,
                last_continued_at = ?, updated_at = ?, version = version + 1, continue_token_digest = ?9
             WHERE id = ?7 AND version = ?8",
        )
        .bind(&g.state)
        .bind(&g.finalization)
        .bind(&g.interact_ref)
        .bind(&g.interaction_state)
        .bind(g.last_continued_at.unix_millis())
        .bind(g.updated_at.unix_millis())
        .bind(g.id.to_string())
        .bind(g.version)
        .bind(&g.continue_token_digest)
        .execute(&mut *tx)
        .await?;
        if done.rows_affected() == 0 {
            return Ok(false);
        }
        if let Some(t) = token {
            insert_token(&mut *tx, t).await?;
        }
        tx.commit().await?;
        Ok(true)
    }

    async fn gnap_token_where(
        &self,
        filter: &str,
        value: &str,
    ) -> StoreResult<Option<AccessTokenRecord>> {
        sqlx::query(&format!(
            "SELECT {TOKEN_COLUMNS} FROM access_tokens WHERE {filter}"
        ))
        .bind(value)
        .fetch_optional(&self.reader)
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
        let mut tx = self.writer.begin().await?;
        let done = sqlx::query("UPDATE access_tokens SET revoked_at = ? WHERE management_id = ? AND revoked_at IS NULL")
            .bind(at.unix_millis())
            .bind(old)
            .execute(&mut *tx)
            .await?;
        if done.rows_affected() == 0 {
            return Ok(false);
        }
        insert_token(&mut *tx, new).await?;
        tx.commit().await?;
        Ok(true)
    }

    pub(crate) async fn gnap_revoke_access_token(
        &self,
        mid: &str,
        at: Timestamp,
    ) -> StoreResult<bool> {
        let done = sqlx::query("UPDATE access_tokens SET revoked_at = ? WHERE management_id = ? AND revoked_at IS NULL")
            .bind(at.unix_millis())
            .bind(mid)
            .execute(&self.writer)
            .await?;
        Ok(done.rows_affected() > 0)
    }

    pub(crate) async fn gnap_revoke_grant(&self, id: GrantId, at: Timestamp) -> StoreResult<bool> {
        let mut tx = self.writer.begin().await?;
        let done = sqlx::query(
            "UPDATE grants SET state = 'finalized', finalization = 'revoked', updated_at = ?, version = version + 1
             WHERE id = ? AND (finalization IS NULL OR finalization <> 'revoked')",
        )
        .bind(at.unix_millis())
        .bind(id.to_string())
        .execute(&mut *tx)
        .await?;
        sqlx::query(
            "UPDATE access_tokens SET revoked_at = ? WHERE grant_id = ? AND revoked_at IS NULL",
        )
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
        sqlx::query(
            "INSERT INTO wallet_owner_logins (wallet_address_id, password_hash, updated_at) VALUES (?, ?, ?)
             ON CONFLICT (wallet_address_id) DO UPDATE SET password_hash = excluded.password_hash, updated_at = excluded.updated_at",
        )
        .bind(wallet.to_string())
        .bind(hash)
        .bind(at.unix_millis())
        .execute(&self.writer)
        .await?;
        Ok(())
    }

    pub(crate) async fn gnap_get_owner_password(
        &self,
        wallet: WalletAddressId,
    ) -> StoreResult<Option<String>> {
        Ok(sqlx::query_scalar(
            "SELECT password_hash FROM wallet_owner_logins WHERE wallet_address_id = ?",
        )
        .bind(wallet.to_string())
        .fetch_optional(&self.reader)
        .await?)
    }
}

/// The ledger, outgoing payments and the webhook outbox (`crate::payments`).
mod payments_backend {
    use super::*;
    crate::payments::payments_impl!(
        SqliteStore,
        sqlx::Sqlite,
        sqlx::sqlite::SqliteRow,
        writer,
        reader,
        false
    );
}
