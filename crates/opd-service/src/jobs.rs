//! Every background job and its cadence, in one list: `opd serve` runs
//! each job's loop ([`run`]); tests drive the same steps ([`Job::step`],
//! [`drain`]) without any sleeping. A step does a bounded amount of work
//! and says whether more is waiting, so a job runs again at once while
//! busy and rests while idle.
//!
//! Beside them, every node follows the changes other nodes announce
//! ([`follow_changes`]), workers or not.
//!
//! Every job is safe on several nodes at once: each step claims what it
//! works on in the database (payments by lease, webhooks by claim), or its
//! work is idempotent (expiry, pruning, voiding expired holds).

use std::sync::Arc;
use std::time::Duration;

use opd_store::Heard;
use tokio::sync::watch;

use crate::payments::outgoing::lifecycle::{self, Step};
use crate::platform::changes::Change;
use crate::{ServiceError, Services};

/// A background job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Job {
    /// Sends due outgoing payments (one payment per step).
    Payments,
    /// Announces expired incoming payments, fails unfunded payments whose
    /// quote expired, prunes the replay log, voids expired ILP holds,
    /// reports what wallet addresses received over SPSP.
    Housekeeping,
    /// Deletes what is past its retention.
    Retention,
    /// Delivers webhook events (a claimed batch per step).
    Webhooks,
}

/// What a step found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Progress {
    /// Nothing (more) to do now.
    Idle,
    /// It did something, and more may be waiting.
    Busy,
    /// It finished a piece of work; more is announced when it comes (a
    /// payment loop then rests as when idle, until an announcement or its
    /// next poll).
    Done,
}

/// When a job's loop runs its next step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cadence {
    /// After a busy step.
    pub after_busy: Duration,
    /// After an idle step (a payment loop also wakes when a payment is
    /// created on this node).
    pub after_idle: Duration,
    /// After a step that failed (logged).
    pub after_error: Duration,
}

const fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

impl Job {
    /// Every job, in the order `opd serve` starts them.
    pub const ALL: [Job; 4] = [
        Job::Payments,
        Job::Housekeeping,
        Job::Retention,
        Job::Webhooks,
    ];

    /// Its name in logs.
    pub fn name(self) -> &'static str {
        match self {
            Job::Payments => "payments",
            Job::Housekeeping => "housekeeping",
            Job::Retention => "retention",
            Job::Webhooks => "webhooks",
        }
    }

    /// Concurrent loops per process. Several payment loops each claim their
    /// own payment, so sends overlap (and get more turns at SQLite's single
    /// writer under API load).
    pub fn loops(self) -> usize {
        match self {
            Job::Payments => 16,
            _ => 1,
        }
    }

    /// Its cadence. An idle payment loop looks for payments it was not told
    /// about (created on other nodes, leases that ended) every 250 ms; with
    /// 16 loops idle, one looks every 16 ms on average. Retention runs a
    /// pass a minute, or again at once while passes find full batches.
    pub fn cadence(self) -> Cadence {
        match self {
            Job::Payments => Cadence {
                after_busy: ms(0),
                after_idle: ms(250),
                after_error: ms(500),
            },
            Job::Housekeeping => Cadence {
                after_busy: ms(200),
                after_idle: ms(200),
                after_error: ms(200),
            },
            Job::Retention => Cadence {
                after_busy: ms(0),
                after_idle: ms(60_000),
                after_error: ms(60_000),
            },
            Job::Webhooks => Cadence {
                after_busy: ms(0),
                after_idle: ms(200),
                after_error: ms(500),
            },
        }
    }

    /// Runs one step of the job.
    pub async fn step(self, services: &Services) -> Result<Progress, ServiceError> {
        match self {
            Job::Payments => Ok(match send_payment(services).await? {
                Step::Idle => Progress::Idle,
                // This payment or another may be due at once: look again.
                Step::Again(_) | Step::Waiting(_) => Progress::Busy,
                Step::Completed(_) | Step::Failed(..) => Progress::Done,
            }),
            Job::Housekeeping => Ok(housekeeping(services).await),
            Job::Retention => retention(services).await,
            Job::Webhooks => Ok(match crate::webhooks::deliver_once(services).await? {
                0 => Progress::Idle,
                _ => Progress::Busy,
            }),
        }
    }
}

/// Sends the next due outgoing payment, if any (the payments job's step,
/// with what it did).
pub async fn send_payment(services: &Services) -> Result<Step, ServiceError> {
    crate::payments::outgoing::send_next(services).await
}

/// The housekeeping steps, each on its own: one failing does not keep the
/// others from running. Busy when any found work.
async fn housekeeping(services: &Services) -> Progress {
    let mut busy = false;
    let mut note = |what: &str, done: Result<usize, ServiceError>| match done {
        Ok(n) => busy |= n > 0,
        Err(e) => tracing::error!(error = %e, "{what} failed"),
    };
    note(
        "announcing expired incoming payments",
        crate::payments::incoming::expire_once(services).await,
    );
    note(
        "failing unfunded payments",
        lifecycle::fail_unfunded_once(services).await,
    );
    note(
        "pruning the replay log",
        crate::access::replays::prune_once(services)
            .await
            .map(|n| usize::try_from(n).unwrap_or(usize::MAX)),
    );
    note(
        "voiding expired ILP holds",
        crate::interledger::connector::void_expired_once(services).await,
    );
    note(
        "reporting what arrived over SPSP",
        crate::interledger::spsp::report_once(services).await,
    );
    if busy {
        Progress::Busy
    } else {
        Progress::Idle
    }
}

/// One retention pass; busy while a pass still fills a whole batch.
async fn retention(services: &Services) -> Result<Progress, ServiceError> {
    let p = retention_once(services).await?;
    if p.total() == 0 {
        return Ok(Progress::Idle);
    }
    tracing::info!(
        tokens = p.tokens,
        grants = p.grants,
        quotes = p.quotes,
        webhook_events = p.webhook_events,
        holds = p.holds,
        client_networks = p.client_networks,
        receipt_totals = p.receipt_totals,
        "pruned past retention"
    );
    let full = [
        p.tokens,
        p.grants,
        p.quotes,
        p.webhook_events,
        p.holds,
        p.client_networks,
        p.receipt_totals,
    ];
    let full = full.into_iter().any(|n| n >= opd_store::PRUNE_BATCH as u64);
    Ok(if full { Progress::Busy } else { Progress::Idle })
}

/// Deletes what is past its retention (`ServiceConfig::retention`; see
/// `opd_store::RetentionStore` for what goes); nothing when it is zero.
pub async fn retention_once(services: &Services) -> Result<opd_store::Pruned, ServiceError> {
    let keep = services.config.retention;
    if keep.is_zero() {
        return Ok(opd_store::Pruned::default());
    }
    let cutoff = services.clock.now().minus(keep);
    Ok(services.store.prune_before(cutoff).await?)
}

/// Runs `job`'s steps at its cadence until `stop` turns true.
pub async fn run(job: Job, services: Arc<Services>, mut stop: watch::Receiver<bool>) {
    let cadence = job.cadence();
    loop {
        let (pause, idle) = match job.step(&services).await {
            Ok(Progress::Busy) => (cadence.after_busy, false),
            Ok(Progress::Idle | Progress::Done) => (cadence.after_idle, true),
            Err(e) => {
                tracing::error!(job = job.name(), error = %e, "background step failed");
                (cadence.after_error, false)
            }
        };
        if *stop.borrow() {
            return;
        }
        if pause.is_zero() {
            continue;
        }
        let woken = async {
            if job == Job::Payments && idle {
                services.payments.due.wait().await;
            } else {
                std::future::pending::<()>().await;
            }
        };
        tokio::select! {
            _ = woken => {},
            _ = tokio::time::sleep(pause) => {},
            _ = stop.wait_for(|s| *s) => return,
        }
    }
}

/// Listens for changes announced by any node and drops the matching cached
/// data, until `stop` says so; returns at once on SQLite (one node). A lost
/// connection drops everything (changes may have been missed) and listens
/// again.
pub async fn follow_changes(services: Arc<Services>, mut stop: watch::Receiver<bool>) {
    loop {
        let feed = tokio::select! {
            f = services.store.listen_changes() => f,
            _ = stop.wait_for(|s| *s) => return,
        };
        let mut feed = match feed {
            Ok(Some(feed)) => feed,
            Ok(None) => return,
            Err(e) => {
                tracing::warn!(error = %e, "cannot listen for changes from other nodes; retrying");
                tokio::select! {
                    _ = tokio::time::sleep(Duration::from_secs(1)) => continue,
                    _ = stop.wait_for(|s| *s) => return,
                }
            }
        };
        // Whatever changed before the feed listened is unknown.
        for c in Change::ALL {
            services.forget(c);
        }
        loop {
            let heard = tokio::select! {
                h = feed.next() => h,
                _ = stop.wait_for(|s| *s) => return,
            };
            match heard {
                Ok(Heard::Topic(t)) => match Change::from_topic(&t) {
                    Some(c) => services.forget(c),
                    None => tracing::debug!(topic = %t, "ignored an unknown change topic"),
                },
                Ok(Heard::Reconnected) => {
                    for c in Change::ALL {
                        services.forget(c);
                    }
                }
                Err(e) => {
                    tracing::warn!(error = %e, "lost the change feed; listening again");
                    break;
                }
            }
        }
    }
}

/// Runs every job until each is idle (tests: what `opd serve` would do
/// before anything new arrives); returns the payment steps taken. Bounded,
/// so a job that never settles fails the caller's assertions instead of
/// hanging.
pub async fn drain(services: &Services) -> Result<Vec<Step>, ServiceError> {
    let mut steps = Vec::new();
    for _ in 0..10_000 {
        let mut busy = false;
        match send_payment(services).await? {
            Step::Idle => {}
            step => {
                steps.push(step);
                busy = true;
            }
        }
        for job in [Job::Housekeeping, Job::Retention, Job::Webhooks] {
            busy |= job.step(services).await? == Progress::Busy;
        }
        if !busy {
            break;
        }
    }
    Ok(steps)
}
