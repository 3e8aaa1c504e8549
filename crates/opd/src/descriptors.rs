//! The process's open files, shared out before anyone can take them all.
//!
//! Every connection, database file and outbound request holds a file
//! descriptor. Without a plan, enough idle connections to one public
//! listener use up the process's limit ("Too many open files"), and then
//! no listener can accept anything: the admin API and health checks go
//! dark with the rest. So at start opd raises its soft limit to the hard
//! one, sets aside what the database, outbound requests, the admin
//! listener and the process itself need, and shares the rest between the
//! public listeners. Explicit caps that do not fit are refused at start.

/// Descriptors kept for the process itself: standard streams, the
/// listening sockets, the runtime's event queue and wakers, lock files,
/// logs, a margin.
const PROCESS_RESERVE: u64 = 64;
/// The most connections one public listener gets when derived.
const MAX_DERIVED_PER_LISTENER: u64 = 4096;
/// The fewest a public listener can serve with.
const MIN_PER_LISTENER: u64 = 8;

/// The process's open-file limit: the soft one (what is enforced) and
/// the hard one (what the soft one may be raised to).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileLimit {
    pub soft: u64,
    pub hard: u64,
    /// The soft limit before opd raised it.
    pub was: u64,
}

/// Raises the soft open-file limit to the hard one; the limits after.
pub fn raise() -> FileLimit {
    use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};
    let unlimited = u64::MAX;
    let before = getrlimit(Resource::Nofile);
    let was = before.current.unwrap_or(unlimited);
    let hard = before.maximum.unwrap_or(unlimited);
    if was < hard {
        let raised = Rlimit {
            current: before.maximum,
            maximum: before.maximum,
        };
        if let Err(e) = setrlimit(Resource::Nofile, raised) {
            tracing::warn!(error = %e, "cannot raise the open-file limit");
        }
    }
    let now = getrlimit(Resource::Nofile);
    FileLimit {
        soft: now.current.unwrap_or(unlimited),
        hard,
        was,
    }
}

/// What the listeners and the rest may hold at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    /// Connections per public listener.
    pub per_listener: usize,
    /// Connections one client address may hold on one public listener, so
    /// that one client holding all it can leaves room for others (health
    /// checks, other users).
    pub per_address: usize,
    /// Connections to the admin listener, which no public flood can take.
    pub admin: usize,
    /// Outbound HTTP requests at once.
    pub outbound: usize,
}

/// What the budget is made from.
#[derive(Debug, Clone, Copy)]
pub struct Needs {
    /// The soft open-file limit.
    pub limit: u64,
    /// Public listeners (Open Payments, authorization, ILP, auto-peering).
    pub public_listeners: u64,
    /// Descriptors the database may hold.
    pub database: u64,
    /// `--max-connections`, when given.
    pub max_connections: Option<usize>,
    /// `--max-connections-per-address`, when given (0: no cap).
    pub per_address: Option<usize>,
}

/// Shares `needs.limit` out, or says why it cannot be.
pub fn plan(needs: Needs) -> Result<Budget, String> {
    let limit = needs.limit;
    let outbound = (limit / 8).clamp(16, 256);
    let admin = (limit / 16).clamp(16, 256);
    let set_aside = PROCESS_RESERVE + needs.database + outbound + admin;
    let listeners = needs.public_listeners.max(1);
    let room = limit.saturating_sub(set_aside);
    let per_listener = match needs.max_connections {
        Some(n) => {
            let asked = (n as u64).saturating_mul(listeners);
            if asked > room {
                return Err(format!(
                    "--max-connections {n} on {listeners} public listeners needs {asked} open files, \
                     but the open-file limit is {limit} and {set_aside} of it is set aside \
                     (database {}, outbound requests {outbound}, admin listener {admin}, process {PROCESS_RESERVE}); \
                     lower --max-connections to at most {} or raise the limit (ulimit -n, or LimitNOFILE= for systemd)",
                    needs.database,
                    room / listeners
                ));
            }
            n as u64
        }
        None => (room / listeners).min(MAX_DERIVED_PER_LISTENER),
    };
    if per_listener < MIN_PER_LISTENER {
        return Err(format!(
            "the open-file limit {limit} is too low: opd needs at least {} \
             (raise it with ulimit -n, or LimitNOFILE= for systemd)",
            set_aside + MIN_PER_LISTENER * listeners
        ));
    }
    let per_listener = usize::try_from(per_listener).unwrap_or(usize::MAX);
    let per_address = match needs.per_address {
        Some(0) => per_listener,
        Some(n) => n.min(per_listener),
        None => (per_listener / 2).max(1),
    };
    Ok(Budget {
        per_listener,
        per_address,
        admin: usize::try_from(admin).unwrap_or(usize::MAX),
        outbound: usize::try_from(outbound).unwrap_or(usize::MAX),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn needs(limit: u64, max_connections: Option<usize>) -> Needs {
        Needs {
            limit,
            public_listeners: 3,
            database: 54,
            max_connections,
            per_address: None,
        }
    }

    #[test]
    fn everything_fits_in_the_limit() {
        for limit in [256, 1024, 4096, 65_536, 1_048_576, u64::MAX] {
            let b = plan(needs(limit, None)).unwrap();
            let used = PROCESS_RESERVE
                + 54
                + b.outbound as u64
                + b.admin as u64
                + 3 * b.per_listener as u64;
            assert!(used <= limit, "{limit}: {b:?} uses {used}");
            assert!(b.per_listener as u64 <= MAX_DERIVED_PER_LISTENER);
            assert!(b.per_address < b.per_listener, "{b:?}");
            assert!(b.admin >= 16, "{b:?}");
        }
        let common = plan(needs(1024, None)).unwrap();
        assert_eq!((common.outbound, common.admin), (128, 64));
        assert_eq!(common.per_listener, (1024 - 64 - 54 - 128 - 64) / 3);
    }

    #[test]
    fn explicit_caps_that_do_not_fit_are_refused() {
        let e = plan(needs(1024, Some(4096))).unwrap_err();
        assert!(
            e.contains("--max-connections 4096") && e.contains("1024"),
            "{e}"
        );
        assert_eq!(plan(needs(1024, Some(200))).unwrap().per_listener, 200);
        let e = plan(needs(100, None)).unwrap_err();
        assert!(e.contains("too low"), "{e}");
    }

    #[test]
    fn the_per_address_cap_can_be_set_or_lifted() {
        let mut n = needs(4096, None);
        n.per_address = Some(10);
        assert_eq!(plan(n).unwrap().per_address, 10);
        n.per_address = Some(0);
        let b = plan(n).unwrap();
        assert_eq!(b.per_address, b.per_listener);
    }
}
