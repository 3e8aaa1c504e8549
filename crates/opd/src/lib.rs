#![doc = include_str!("../README.md")]

pub mod admin_client;
pub mod admin_listener;
pub mod app;
pub mod backups;
pub mod cli;
pub mod config;
pub mod demo;
pub mod descriptors;
pub mod listener;
pub mod logging;
pub mod parse_errors;
pub mod tls;

/// The memory allocator of every binary that runs the server (`opd`, and
/// `opd-bench`, which runs it in a child process of its own): see
/// BENCHMARKS.md for what it gained over the system's.
pub type Allocator = mimalloc::MiMalloc;
