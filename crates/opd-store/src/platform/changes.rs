//! Changes other nodes must hear about at once (a revoked token or key, a
//! deactivated wallet address, new fees or rates), so each can drop what
//! it cached. On PostgreSQL they travel as `NOTIFY opd_changes, '<topic>'`,
//! sent after the change committed; every node `LISTEN`s. SQLite has one
//! node, so there is nobody to tell.

use tokio::sync::mpsc;
use tokio_postgres::{AsyncMessage, NoTls};

use crate::platform::db::{params, Pools, Stmt};
use crate::{SqlStore, StoreError, StoreResult};

/// The channel every node listens on.
const CHANNEL: &str = "opd_changes";

static ANNOUNCE: Stmt = Stmt::new(&["SELECT pg_notify('opd_changes', ?::text)"]);

/// PostgreSQL only: SQLite has no `pg_notify` (and needs none).
pub(crate) static PG_STATEMENTS: &[&Stmt] = &[&ANNOUNCE];

/// The topics other nodes hear from this one: a connection of its own
/// that `LISTEN`s, its notifications forwarded by the task that drives it.
#[derive(Debug)]
pub struct ChangeFeed {
    topics: mpsc::UnboundedReceiver<String>,
    /// Kept so that the connection stays open.
    _client: tokio_postgres::Client,
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
    /// Waits for the next topic. A lost connection is an error: the caller
    /// listens again (and forgets what it cached, since anything may have
    /// changed meanwhile).
    pub async fn next(&mut self) -> StoreResult<Heard> {
        match self.topics.recv().await {
            Some(topic) => Ok(Heard::Topic(topic)),
            None => Err(StoreError::Unavailable(
                "the connection listening for changes was lost".into(),
            )),
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
        let Pools::Postgres(pg) = &self.db.pools else {
            return Ok(None);
        };
        let (client, mut connection) = pg.config.connect(NoTls).await?;
        let (tx, topics) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            // Driving the connection yields its notifications; it ends when
            // the connection does, which closes the channel.
            while let Some(message) = std::future::poll_fn(|cx| connection.poll_message(cx)).await {
                match message {
                    Ok(AsyncMessage::Notification(n)) => {
                        if tx.send(n.payload().to_owned()).is_err() {
                            return;
                        }
                    }
                    Ok(_) => {}
                    Err(e) => {
                        tracing::debug!(error = %e, "the change feed's connection ended");
                        return;
                    }
                }
            }
        });
        client.batch_execute(&format!("LISTEN {CHANNEL}")).await?;
        Ok(Some(ChangeFeed {
            topics,
            _client: client,
        }))
    }
}
