#![doc = include_str!("../README.md")]
#![allow(clippy::unwrap_used, clippy::expect_used)] // test support: failing loudly is the point

pub mod app;
pub mod client;
pub mod pg;
pub mod stores;
