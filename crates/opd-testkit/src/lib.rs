#![doc = include_str!("../README.md")]
#![allow(clippy::unwrap_used, clippy::expect_used)] // test support: failing loudly is the point

pub mod app;
pub mod client;
pub mod dice;
pub mod hostile;
pub mod pg;
pub mod proxy;
pub mod spec;
pub mod stores;

/// A loopback port free right now, for a server process a test starts
/// (another process may take it before the server binds it: callers that
/// can, retry on other ports).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}
