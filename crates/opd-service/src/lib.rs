#![doc = include_str!("../README.md")]

pub mod access;
mod config;
pub mod defaults;
mod error;
pub mod grants;
pub mod interledger;
pub mod jobs;
pub mod ledger;
pub mod operator;
pub mod payments;
pub mod platform;
pub mod pricing;
mod services;
pub mod tenants;
pub mod views;
pub mod wallets;
pub mod webhooks;

pub use config::{IlpLimits, ServiceConfig, StallBounds};
pub use error::ServiceError;
pub use platform::urls::PublicUrl;
pub use services::{Limits, ServerIdentity, Services};
