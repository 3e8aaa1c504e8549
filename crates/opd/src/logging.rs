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

/// The levels `OPD_LOG` asks for (`info` when unset), the database
/// driver's notices below warnings left out unless asked for.
fn env_filter() -> tracing_subscriber::EnvFilter {
    tracing_subscriber::EnvFilter::try_from_env("OPD_LOG")
        .unwrap_or_else(|_| "info,tokio_postgres=warn".into())
}

/// Every target outside opd's own crates at `info` at most, whatever
/// `OPD_LOG` says: below it the libraries log what passes through them,
/// and that includes secrets (tokio-postgres logs each statement's
/// parameters at debug: interaction nonces, `interact_ref` values,
/// password hashes; HTTP libraries log headers at trace). The one
/// exception is `tower_http`'s request tracing, which opd configures to
/// show the method, the cut path, the status and the time taken.
pub fn dependencies_capped(
) -> tracing_subscriber::filter::FilterFn<impl Fn(&tracing::Metadata<'_>) -> bool> {
    tracing_subscriber::filter::filter_fn(|meta: &tracing::Metadata<'_>| {
        *meta.level() <= tracing::Level::INFO || is_vetted(meta.target())
    })
}

/// Whether `target` is one of opd's crates (`opd`, `opd_api::…`, …) or
/// its request tracing (`tower_http::trace`).
fn is_vetted(target: &str) -> bool {
    let krate = target.split("::").next().unwrap_or_default();
    krate == "opd" || krate.starts_with("opd_") || target.starts_with("tower_http::trace")
}

/// Sends logs to standard error in `format`, filtered by `OPD_LOG` (and
/// [`dependencies_capped`]), each line with the node id; returns the id.
pub fn init(format: LogFormat) -> String {
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;
    let node = node_id();
    match format {
        LogFormat::Text => tracing_subscriber::fmt()
            .with_env_filter(env_filter())
            .with_writer(std::io::stderr)
            .event_format(WithNode {
                node: node.clone(),
                inner: tracing_subscriber::fmt::format(),
            })
            .finish()
            .with(dependencies_capped())
            .init(),
        LogFormat::Json => tracing_subscriber::fmt()
            .json()
            .with_env_filter(env_filter())
            .with_writer(std::io::stderr)
            .event_format(JsonWithNode {
                // A string always serializes; the fallback is never used.
                node: serde_json::to_string(&node).unwrap_or_else(|_| "\"\"".into()),
                inner: tracing_subscriber::fmt::format().json(),
            })
            .finish()
            .with(dependencies_capped())
            .init(),
    }
    node
}

#[cfg(test)]
mod tests {
    use super::is_vetted;

    #[test]
    fn only_opds_crates_and_its_request_tracing_are_vetted() {
        let vetted = [
            "opd",
            "opd_api::auth_server",
            "opd_store::postgres::driver",
            "tower_http::trace::on_response",
        ];
        for target in vetted {
            assert!(is_vetted(target), "{target}");
        }
        for target in ["tokio_postgres::query", "hyper::proto", "opdx", "h2", ""] {
            assert!(!is_vetted(target), "{target}");
        }
    }
}
