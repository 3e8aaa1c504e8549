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
