//! Logs, each line naming the node that wrote it: with several nodes on
//! one database, an operator reading the merged logs must know which
//! process did what. The id is `OPD_NODE_ID` when set, otherwise made at
//! start (process id and a random suffix, so a restarted node gets a new
//! one).

use std::fmt;

use rand::Rng as _;
use tracing::{Event, Subscriber};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;

/// This process's node id.
pub fn node_id() -> String {
    match std::env::var("OPD_NODE_ID") {
        Ok(id) if !id.trim().is_empty() => id.trim().to_owned(),
        _ => format!(
            "{}-{:04x}",
            std::process::id(),
            rand::thread_rng().gen::<u16>()
        ),
    }
}

/// The default line format, after `node=<id> `.
struct WithNode<F> {
    node: String,
    inner: F,
}

impl<S, N, F> FormatEvent<S, N> for WithNode<F>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
    F: FormatEvent<S, N>,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        write!(writer, "node={} ", self.node)?;
        self.inner.format_event(ctx, writer, event)
    }
}

/// Sends logs to standard error, filtered by `OPD_LOG`, each line with the
/// node id; returns the id.
pub fn init() -> String {
    let node = node_id();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("OPD_LOG")
                .unwrap_or_else(|_| "info,sqlx=warn".into()),
        )
        .with_writer(std::io::stderr)
        .event_format(WithNode {
            node: node.clone(),
            inner: tracing_subscriber::fmt::format(),
        })
        .init();
    node
}
