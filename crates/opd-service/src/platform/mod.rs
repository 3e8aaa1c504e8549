//! What every area stands on and nothing business-specific: caches,
//! throttles, the client networks they count by, outbound HTTP (and its certificate errors), sealed secrets,
//! public URLs, metrics, the change feed between nodes and health.
//! Modules here call nothing in the business areas (payments,
//! interledger, access, grants).

pub mod cache;
pub mod certificates;
pub mod changes;
pub mod health;
pub mod metrics;
pub mod network;
pub mod outbound;
pub mod secrets;
pub mod throttle;
pub mod urls;
