//! The operator learns of a refused outbound request from the log, not only
//! from whoever asked: one `info` line with the host and the reason, and
//! never the path or query (they can carry tokens). A test binary of its
//! own, so that the log it reads is the whole process's.

#![expect(clippy::unwrap_used, reason = "tests fail loudly by design")]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use opd_service::platform::outbound::{Outbound, OutboundPolicy};

/// What the log received.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn a_refused_destination_is_logged_with_its_host_and_reason_and_no_path() {
    let log = Captured::default();
    let writer = log.clone();
    tracing_subscriber::fmt()
        .with_max_level(tracing::Level::INFO)
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .init();
    let o = Outbound::new(OutboundPolicy::default(), 4, None).unwrap();
    // An address refused before connecting, and a name refused when it
    // resolves to loopback.
    assert!(o.check("http://10.1.2.3:8082/secret-path?token=t").is_err());
    let request = o
        .request(reqwest::Method::GET, "http://localhost:9/other-secret")
        .unwrap();
    assert!(o.send(request, Duration::from_secs(5), 10).await.is_err());
    let text = String::from_utf8_lossy(&log.0.lock().unwrap()).into_owned();
    let lines: Vec<&str> = text.lines().collect();
    let refused = |host: &str| {
        lines.iter().any(|l| {
            l.contains(" INFO ")
                && l.contains(&format!("host={host}"))
                && l.contains("the destination address is not allowed")
        })
    };
    assert!(refused("10.1.2.3") && refused("localhost"), "{text}");
    assert!(!text.contains("secret"), "no path or query: {text}");
}
