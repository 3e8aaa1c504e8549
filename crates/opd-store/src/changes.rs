//! Changes other nodes must hear about at once (a revoked token or key, a
//! deactivated wallet address, new fees or rates), so each can drop what
//! it cached. On PostgreSQL they travel as `NOTIFY opd_changes, '<topic>'`,
//! sent after the change committed; every node `LISTEN`s. SQLite has one
//! node, so there is nobody to tell.

use sqlx::postgres::PgListener;

use crate::db::{params, Pools, Stmt};
use crate::{SqlStore, StoreResult};

/// The channel every node listens on.
const CHANNEL: &str = "opd_changes";

static ANNOUNCE: Stmt = Stmt::new(&["SELECT pg_notify('opd_changes', ?::text)"]);

/// PostgreSQL only: SQLite has no `pg_notify` (and needs none).
pub(crate) static PG_STATEMENTS: &[&Stmt] = &[&ANNOUNCE];

/// The topics other nodes hear from this one.
#[derive(Debug)]
pub struct ChangeFeed {
    listener: PgListener,
}

/// What a feed received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Heard {
    /// A topic another node (or this one) announced.
    Topic(String),
    /// The connection was lost and has been re-established: anything may
    /// have changed meanwhile.
    Reconnected,
}

impl ChangeFeed {
    /// Waits for the next topic; a lost connection is reported once as
    /// `Reconnected` after the feed listens again.
    pub async fn next(&mut self) -> StoreResult<Heard> {
        match self.listener.try_recv().await? {
            Some(n) => Ok(Heard::Topic(n.payload().to_owned())),
            None => Ok(Heard::Reconnected),
        }
    }
}

impl SqlStore {
    /// Tells every node `topic` changed (PostgreSQL; nothing on SQLite).
    pub(crate) async fn announce(&self, topic: &str) -> StoreResult<()> {
        if matches!(self.db.pools, Pools::Postgres(_)) {
            self.db.read(&ANNOUNCE, params![topic]).await?;
        }
        Ok(())
    }

    /// The feed of changes announced by any node; `None` on SQLite.
    pub(crate) async fn listen(&self) -> StoreResult<Option<ChangeFeed>> {
        let Pools::Postgres(pool) = &self.db.pools else {
            return Ok(None);
        };
        let mut listener = PgListener::connect_with(pool).await?;
        listener.listen(CHANNEL).await?;
        Ok(Some(ChangeFeed { listener }))
    }
}
