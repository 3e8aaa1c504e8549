//! Pages of a wallet address's resources (incoming or outgoing payments),
//! newest first. Ids are UUIDv7, so id order is creation order and a cursor
//! is an id.

use opd_core::pagination::{Direction, Page, PageRequest};
use opd_core::WalletAddressId;

use crate::platform::db::{params, Db, Row, Stmt};
use crate::StoreResult;

/// The statements that page through one table. Each takes the wallet
/// address, the client filter (twice; NULL for every client) and the cursor
/// (twice; NULL for the first page); the page statements then the limit.
#[derive(Debug)]
pub(crate) struct PageStatements {
    /// Older than the cursor, newest first.
    pub(crate) forward: Stmt,
    /// Newer than the cursor, oldest first.
    pub(crate) backward: Stmt,
    /// How many are at or newer than the cursor.
    pub(crate) count_newer: Stmt,
    /// How many are at or older than the cursor.
    pub(crate) count_older: Stmt,
}

/// The filter every page statement starts with.
pub(crate) const FILTER: &str =
    " WHERE wallet_address_id = ?::uuid AND (?::text IS NULL OR client = ?)";

/// The page statements of `$table` reading `$columns` (each a string
/// literal: the statements are built at compile time).
macro_rules! page_statements {
    ($table:literal, $columns:expr) => {
        $crate::platform::pages::PageStatements {
            forward: $crate::platform::db::Stmt::new(&[
                "SELECT ",
                $columns,
                " FROM ",
                $table,
                $crate::platform::pages::FILTER,
                " AND (?::text IS NULL OR id < ?::uuid) ORDER BY id DESC LIMIT ?",
            ]),
            backward: $crate::platform::db::Stmt::new(&[
                "SELECT ",
                $columns,
                " FROM ",
                $table,
                $crate::platform::pages::FILTER,
                " AND (?::text IS NULL OR id > ?::uuid) ORDER BY id ASC LIMIT ?",
            ]),
            count_newer: $crate::platform::db::Stmt::new(&[
                "SELECT COUNT(*) AS n FROM ",
                $table,
                $crate::platform::pages::FILTER,
                " AND (?::text IS NULL OR id >= ?::uuid)",
            ]),
            count_older: $crate::platform::db::Stmt::new(&[
                "SELECT COUNT(*) AS n FROM ",
                $table,
                $crate::platform::pages::FILTER,
                " AND (?::text IS NULL OR id <= ?::uuid)",
            ]),
        }
    };
}
pub(crate) use page_statements;

/// Reads one page with what lies on either side of it.
pub(crate) async fn read_page<T>(
    db: &Db,
    statements: &'static PageStatements,
    wallet: WalletAddressId,
    client: Option<&str>,
    page: &PageRequest,
    decode: fn(&Row) -> StoreResult<T>,
) -> StoreResult<Page<T>> {
    use crate::platform::rows::Columns;
    let (list, beyond) = match page.direction {
        Direction::Forward => (&statements.forward, &statements.count_newer),
        Direction::Backward => (&statements.backward, &statements.count_older),
    };
    let wallet = wallet.to_string();
    let cursor = page.cursor.map(|c| c.hyphenated().to_string());
    let size = i64::from(page.size);
    let fetched = db
        .read(
            list,
            params![&wallet, client, client, &cursor, &cursor, size + 1],
        )
        .await?;
    let more = fetched.len() > page.size as usize;
    let mut items = fetched
        .iter()
        .take(page.size as usize)
        .map(decode)
        .collect::<StoreResult<Vec<T>>>()?;
    let other_side = match &cursor {
        Some(_) => {
            let counted = db
                .read(beyond, params![&wallet, client, client, &cursor, &cursor])
                .await?;
            counted
                .first()
                .map(|r| r.int("n"))
                .transpose()?
                .unwrap_or(0)
                > 0
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
