//! Readiness: whether this server can serve requests that need the
//! database (`GET /readyz`). Liveness (`GET /healthz`) needs nothing from
//! here: a process that answers at all is alive.

use std::time::Duration;

use opd_store::{Readiness, Store};

/// Why the server is not ready.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotReady {
    /// The database did not answer in time, or answered with an error.
    DatabaseUnreachable,
    /// The schema lacks migrations this binary needs (`opd migrate`).
    MigrationsPending { applied: Option<i64>, latest: i64 },
}

/// Asks the database whether it answers and has every migration, giving
/// up after `within` (a paused or unreachable database would otherwise
/// hold a probe for the pool's whole acquire timeout, or forever on a
/// connection that stopped answering).
pub async fn readiness(store: &dyn Store, within: Duration) -> Result<(), NotReady> {
    match tokio::time::timeout(within, store.readiness()).await {
        Ok(Ok(Readiness::Ready)) => Ok(()),
        Ok(Ok(Readiness::MigrationsPending { applied, latest })) => {
            Err(NotReady::MigrationsPending { applied, latest })
        }
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "readiness check: the database failed");
            Err(NotReady::DatabaseUnreachable)
        }
        Err(_) => {
            tracing::warn!("readiness check: the database did not answer in time");
            Err(NotReady::DatabaseUnreachable)
        }
    }
}
