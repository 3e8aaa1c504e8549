//! The command line: `opd serve`, `opd migrate` and the admin helpers.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

use crate::config::{CommonArgs, ServeArgs};

/// opd: an Open Payments server.
#[derive(Debug, Parser)]
#[command(name = "opd", version, about)]
pub struct Cli {
    #[command(flatten)]
    pub common: CommonArgs,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the Open Payments, authorization server and admin listeners.
    Serve(Box<ServeArgs>),
    /// Apply pending database migrations and exit.
    Migrate,
    /// Check the ledger invariants (balances add up) and exit non-zero if not.
    Check,
    /// Manage wallet addresses through a running server's admin API.
    #[command(subcommand, name = "wallet-address")]
    WalletAddress(WalletAddressCommand),
    /// Manage wallet address keys through a running server's admin API.
    #[command(subcommand)]
    Key(KeyCommand),
}

#[derive(Debug, Subcommand)]
pub enum WalletAddressCommand {
    /// Create a wallet address.
    Create {
        /// Path below the public URL, such as `alice` or `accounts/alice`.
        #[arg(long)]
        path: String,
        #[arg(long)]
        asset_code: String,
        #[arg(long)]
        asset_scale: u8,
        #[arg(long)]
        public_name: Option<String>,
    },
    /// List wallet addresses.
    List,
    /// Show one wallet address (by id or path).
    Get { wallet_address: String },
    /// Deactivate a wallet address (by id or path).
    Deactivate { wallet_address: String },
}

#[derive(Debug, Subcommand)]
pub enum KeyCommand {
    /// Add an Ed25519 public key (a JWK) to a wallet address.
    Add {
        /// Wallet address id or path.
        #[arg(long)]
        wallet_address: String,
        /// The JWK as JSON: {"kid":"...","kty":"OKP","crv":"Ed25519","x":"..."}.
        #[arg(
            long,
            conflicts_with = "jwk_file",
            required_unless_present = "jwk_file"
        )]
        jwk: Option<String>,
        /// A file holding the JWK as JSON.
        #[arg(long)]
        jwk_file: Option<PathBuf>,
    },
    /// List a wallet address's keys, revoked ones included.
    List {
        #[arg(long)]
        wallet_address: String,
    },
    /// Revoke a key.
    Revoke {
        #[arg(long)]
        wallet_address: String,
        #[arg(long)]
        kid: String,
    },
}
