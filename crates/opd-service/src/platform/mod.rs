//! What every area stands on and nothing business-specific: caches,
//! throttles, the client networks they count by, outbound HTTP (its
//! certificate errors named by `opd_core::certificates`), sealed secrets,
//! public URLs, metrics, the change feed between nodes and health.
//! Modules here call nothing in the business areas (payments,
//! interledger, access, grants).

pub mod cache;
pub mod changes;
pub mod health;
pub mod metrics;
pub mod network;
pub mod outbound;
pub mod secrets;
pub mod throttle;
pub mod urls;
