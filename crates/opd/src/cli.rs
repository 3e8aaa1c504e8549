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
    Check {
        /// The server runs with `--external-funding`: received money may wait on incoming payments (reported, not a problem).
        #[arg(long, env = "OPD_EXTERNAL_FUNDING", num_args = 0..=1, default_missing_value = "true")]
        external_funding: Option<bool>,
    },
    /// Manage wallet addresses through a running server's admin API.
    #[command(subcommand, name = "wallet-address")]
    WalletAddress(WalletAddressCommand),
    /// Manage wallet address keys through a running server's admin API.
    #[command(subcommand)]
    Key(KeyCommand),
    /// Manage Interledger peers and their liquidity through a running server's admin API.
    #[command(subcommand)]
    Peer(PeerCommand),
    /// Take what incoming payments received out of opd (`--external-funding`) through a running server's admin API.
    #[command(subcommand, name = "incoming-payment")]
    IncomingPayment(IncomingPaymentCommand),
    /// Open Payments from the terminal, against any Open Payments server: pay, keys, grants, incoming payments, quotes, outgoing payments.
    Client(opd_client::cli::ClientArgs),
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

/// The settings of a peer, for `create` (name, address and asset required)
/// and `update` (only what is given changes).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct PeerSettings {
    #[arg(long)]
    pub name: Option<String>,
    /// The peer's own ILP address, such as `g.other-bank`.
    #[arg(long)]
    pub static_ilp_address: Option<String>,
    /// Asset code of the peering (create only).
    #[arg(long)]
    pub asset_code: Option<String>,
    /// Asset scale of the peering (create only).
    #[arg(long)]
    pub asset_scale: Option<u8>,
    /// Largest packet amount the peer may send (F08 above it), in minor units of the peering's asset (1000 is 10.00 at scale 2).
    #[arg(long)]
    pub max_packet_amount: Option<u64>,
    /// An ILP address prefix reached through the peer (repeatable) [default: its static address].
    #[arg(long = "route")]
    pub routes: Vec<String>,
    /// A bearer token the peer presents to us (repeatable; stored as a digest).
    #[arg(long = "incoming-token")]
    pub incoming_tokens: Vec<String>,
    /// The peer's ILP-over-HTTP endpoint.
    #[arg(long, requires = "outgoing_token")]
    pub outgoing_endpoint: Option<String>,
    /// The bearer token we present to the peer.
    #[arg(long, requires = "outgoing_endpoint")]
    pub outgoing_token: Option<String>,
    /// `peer.liquidity_low` when the liquidity falls to or below this, in minor units.
    #[arg(long)]
    pub liquidity_low: Option<u64>,
    /// `peer.liquidity_high` when the liquidity rises to or above this, in minor units.
    #[arg(long)]
    pub liquidity_high: Option<u64>,
}

#[derive(Debug, Subcommand)]
pub enum IncomingPaymentCommand {
    /// Move everything the incoming payment received and was not withdrawn yet out of opd; prints the amount.
    Withdraw {
        /// The incoming payment's id (the last segment of its URL).
        id: String,
        /// Required: repeating it returns the first answer, so a retry never withdraws twice.
        #[arg(long)]
        idempotency_key: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum PeerCommand {
    /// Create a peer.
    Create(PeerSettings),
    /// List peers.
    List,
    /// Show a peer.
    Get { id: String },
    /// Change a peer's settings (the given ones).
    Update {
        id: String,
        #[command(flatten)]
        settings: PeerSettings,
    },
    /// Delete a peer (its liquidity must be zero).
    Delete { id: String },
    /// Add liquidity: what the peer may send us before settling.
    Deposit {
        /// The peer's id or name.
        id: String,
        /// In the peering's asset, such as 100.00 (an integer of minor units with --minor-units).
        #[arg(long, allow_hyphen_values = true)]
        amount: String,
        /// --amount is in minor units (10000 is 100.00 at scale 2).
        #[arg(long)]
        minor_units: bool,
        /// Makes a retry safe [default: a new random key].
        #[arg(long)]
        idempotency_key: Option<String>,
    },
    /// Take liquidity back.
    Withdraw {
        /// The peer's id or name.
        id: String,
        /// In the peering's asset, such as 100.00 (an integer of minor units with --minor-units).
        #[arg(long, allow_hyphen_values = true)]
        amount: String,
        /// --amount is in minor units (10000 is 100.00 at scale 2).
        #[arg(long)]
        minor_units: bool,
        #[arg(long)]
        idempotency_key: Option<String>,
    },
    /// Show a peer's liquidity balance.
    Balance { id: String },
    /// Ask another server to peer (its auto-peering URL, as the reference
    /// server's auto-peering protocol has it) and create the peer from its
    /// answer; run again to renew the peering.
    AutoPeer {
        /// The other server's auto-peering URL.
        url: String,
        /// The peering's asset code, such as USD.
        #[arg(long)]
        asset_code: String,
        /// The peering's asset scale, such as 2.
        #[arg(long)]
        asset_scale: u8,
        /// The largest packet (minor units) to take from them.
        #[arg(long)]
        max_packet_amount: Option<u64>,
        /// The peer's name here [default: the name they answer with].
        #[arg(long)]
        name: Option<String>,
    },
}
