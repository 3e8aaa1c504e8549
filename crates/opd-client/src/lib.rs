//! `opd client`: an Open Payments client for people and scripts, usable
//! against any Open Payments server, not only opd.
//!
//! It identifies itself by a wallet address and an Ed25519 key (a
//! [`profile::Profile`]), signs every request exactly like the official
//! Node client, asks grants of the wallet's authorization server (without
//! interaction where the server allows it; with the owner's consent in a
//! browser for outgoing payments), and formats amounts with their scale.
//!
//! - [`amount`]: `12.34` ⇄ minor units, exactly;
//! - [`profile`]: the client's identity file;
//! - [`http`]: signed requests and server errors;
//! - [`gnap`]: grants, consent through a loopback redirect, tokens,
//!   cancellation;
//! - [`kept`] and [`grants`]: grants kept in the profile and reused;
//! - [`resources`]: wallet addresses, receivers, the grant each request needs;
//! - [`pay`]: the whole payment in one command;
//! - [`render`] and [`cli`]: the command line.

pub mod amount;
pub mod cli;
mod finish_page;
pub mod gnap;
pub mod grants;
pub mod http;
pub mod kept;
pub mod pay;
pub mod profile;
pub mod render;
pub mod resources;
