//! Logs, each line naming the node that wrote it: with several nodes on
//! one database, an operator reading the merged logs must know which
//! process did what. The id is `OPD_NODE_ID` when set, otherwise made at
//! start (process id and a random suffix, so a restarted node gets a new
//! one).
//!
//! Two formats (`--log-format`): `text` for people, and `json`, one JSON
//! object per line for log collectors, with the node id as its `node`
//! key. Neither carries text that acts on a terminal or fakes a line:
//! values come from peers, remote servers and clients, so the text lines
//! show control and bidirectional characters as code points (`[U+001B]`,
//! a newline in a value as `[U+000A]`) and the JSON lines escape them. Both carry the same events and fields, and so, like the text
//! lines, never a secret: no event logs a token, key or password, and
//! request spans hold the method and URI only.

use std::fmt;

use opd_core::untrusted::{self, Untrusted};
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
        let mut line = String::new();
        self.inner
            .format_event(ctx, Writer::new(&mut line), event)?;
        // One event, one line, whatever a value holds: a peer's name or a
        // remote error with a newline would fake a line of its own, an
        // escape sequence would act on the operator's terminal.
        let line = line.strip_suffix('\n').unwrap_or(&line);
        writeln!(writer, "node={} {}", self.node, Untrusted(line))
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
        // serde escapes the control characters; the bidirectional and
        // invisible ones become escapes too, read back as themselves.
        let line = untrusted::json(&line);
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
    use tracing_subscriber::util::SubscriberInitExt as _;
    let node = node_id();
    dispatch(format, &node, env_filter(), std::io::stderr).init();
    node
}

/// The logs of `format` written to `writer`: the lines [`init`] writes.
fn dispatch<W>(
    format: LogFormat,
    node: &str,
    filter: tracing_subscriber::EnvFilter,
    writer: W,
) -> tracing::Dispatch
where
    W: for<'w> tracing_subscriber::fmt::MakeWriter<'w> + Send + Sync + 'static,
{
    use tracing_subscriber::layer::SubscriberExt as _;
    match format {
        LogFormat::Text => tracing_subscriber::fmt()
            // No colours: their escape sequences would be shown as code
            // points with everything else a line carries.
            .with_ansi(false)
            .with_env_filter(filter)
            .with_writer(writer)
            .event_format(WithNode {
                node: node.to_owned(),
                inner: tracing_subscriber::fmt::format(),
            })
            .finish()
            .with(dependencies_capped())
            .into(),
        LogFormat::Json => tracing_subscriber::fmt()
            .json()
            .with_env_filter(filter)
            .with_writer(writer)
            .event_format(JsonWithNode {
                // A string always serializes; the fallback is never used.
                node: serde_json::to_string(node).unwrap_or_else(|_| "\"\"".into()),
                inner: tracing_subscriber::fmt::format().json(),
            })
            .finish()
            .with(dependencies_capped())
            .into(),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::{dispatch, is_vetted, LogFormat};

    /// Log lines written to memory.
    #[derive(Clone, Default)]
    struct Lines(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Lines {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Lines {
        type Writer = Lines;
        fn make_writer(&'a self) -> Lines {
            self.clone()
        }
    }

    /// What `format` writes for one event carrying hostile text, in its
    /// message and in a field, as `%` and as `?`.
    fn logged(format: LogFormat) -> String {
        let lines = Lines::default();
        let filter = tracing_subscriber::EnvFilter::new("info");
        let logs = dispatch(format, "n1", filter, lines.clone());
        let evil = "Bob\u{1b}[2J\nnode=n1 INFO opd: paid in full \u{202e}cba";
        tracing::dispatcher::with_default(&logs, || {
            tracing::warn!(name = %evil, debug = ?evil, "peer {evil} refused");
        });
        let text = String::from_utf8(lines.0.lock().unwrap().clone()).unwrap();
        text
    }

    #[test]
    fn hostile_text_in_a_log_line_is_shown_not_obeyed() {
        let text = logged(LogFormat::Text);
        assert_eq!(text.matches('\n').count(), 1, "one event, one line: {text}");
        assert!(
            !text.contains('\u{1b}') && !text.contains('\u{202e}'),
            "{text}"
        );
        assert!(text.starts_with("node=n1 "), "{text}");
        assert!(
            text.contains("name=Bob[U+001B][2J[U+000A]node=n1 INFO"),
            "{text}"
        );
        let json = logged(LogFormat::Json);
        assert_eq!(json.matches('\n').count(), 1, "{json}");
        assert!(
            !json.contains('\u{1b}') && !json.contains('\u{202e}'),
            "{json}"
        );
        let value: serde_json::Value = serde_json::from_str(json.trim_end()).unwrap();
        assert_eq!(value["node"], "n1");
        let name = value["fields"]["name"].as_str().unwrap();
        assert!(
            name.ends_with("paid in full \u{202e}cba"),
            "the same text: {name}"
        );
    }

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
