//! Logs, each line naming the node that wrote it: with several nodes on
//! one database, an operator reading the merged logs must know which
//! process did what. The id is `OPD_NODE_ID` when set, otherwise made at
//! start (process id and a random suffix, so a restarted node gets a new
//! one).
//!
//! Two formats (`--log-format`): `text` for people, and `json`, one JSON
//! object per line for log collectors, with the node id as its `node`
//! key. Both carry the same events and fields, and so, like the text
//! lines, never a secret: no event logs a token, key or password, and
//! request spans hold the method and URI only.

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

/// The JSON line format, with `"node":<id>` first: the inner format's
/// object, opened again to put the id in.
struct JsonWithNode<F> {
    /// The node id as a JSON string (quoted and escaped).
    node: String,
    inner: F,
}

impl<S, N, F> FormatEvent<S, N> for JsonWithNode<F>
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
        let mut line = String::new();
        self.inner
            .format_event(ctx, Writer::new(&mut line), event)?;
        match line.strip_prefix('{') {
            Some(rest) => write!(writer, "{{\"node\":{},{rest}", self.node),
            None => writer.write_str(&line),
        }
    }
}

/// How log lines are written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    /// `node=<id> <time> <level> <spans>: <message> <fields>`.
    #[default]
    Text,
    /// One JSON object per line: `node`, `timestamp`, `level`, `fields`
    /// (with `message`), `target`, `span` and `spans`.
    Json,
}

/// Sends logs to standard error in `format`, filtered by `OPD_LOG`, each
/// line with the node id; returns the id.
pub fn init(format: LogFormat) -> String {
    let node = node_id();
    let filter = tracing_subscriber::EnvFilter::try_from_env("OPD_LOG")
        .unwrap_or_else(|_| "info,tokio_postgres=warn".into());
    match format {
        LogFormat::Text => tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_writer(std::io::stderr)
            .event_format(WithNode {
                node: node.clone(),
                inner: tracing_subscriber::fmt::format(),
            })
            .init(),
        LogFormat::Json => tracing_subscriber::fmt()
            .json()
            .with_env_filter(filter)
            .with_writer(std::io::stderr)
            .event_format(JsonWithNode {
                // A string always serializes; the fallback is never used.
                node: serde_json::to_string(&node).unwrap_or_else(|_| "\"\"".into()),
                inner: tracing_subscriber::fmt::format().json(),
            })
            .init(),
    }
    node
}
