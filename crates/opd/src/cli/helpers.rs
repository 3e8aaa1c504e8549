//! The admin helpers' command lines: `opd tenant|wallet-address|key|peer|
//! rate|fee|incoming-payment ...`. Each names what it acts on by a
//! positional argument (a wallet address, a peer, a tenant, a key id),
//! takes amounts in the asset's units (`12.34`; `--minor-units` for
//! integers of minor units) and fee shares in percent, and prints text for
//! people, or the admin API's JSON with `--json`.

use std::path::PathBuf;

use clap::Subcommand;

/// An admin helper: its command, and how its answer is printed.
#[derive(Debug, clap::Args)]
pub struct Helper<C: Subcommand> {
    /// Print the admin API's JSON answer instead of text (for scripts).
    #[arg(long, global = true)]
    pub json: bool,
    #[command(subcommand)]
    pub command: C,
}

/// The help of an argument naming a wallet address.
const WALLET: &str = "The wallet address: its id, its path (such as `alice`), or tenant:path";

#[derive(Debug, Subcommand)]
pub enum WalletAddressCommand {
    /// Create a wallet address.
    Create {
        /// Path below the public URL, such as `alice` or `accounts/alice`.
        #[arg(long)]
        path: String,
        /// The tenant it belongs to [default: the operator's, or the token's tenant].
        #[arg(long)]
        tenant: Option<String>,
        /// The code of its asset, such as USD or EUR.
        #[arg(long)]
        asset_code: String,
        /// The scale of its asset: how many decimals its amounts have, such as 2 (1234 is 12.34).
        #[arg(long)]
        asset_scale: u8,
        /// The name its owner is shown by, such as "Alice" (its wallet address document's publicName).
        #[arg(long)]
        public_name: Option<String>,
        /// The password its owner approves grants with on the consent page, read from this file (`-`: standard input).
        #[arg(long, value_name = "FILE", conflicts_with = "prompt")]
        owner_password_file: Option<PathBuf>,
        /// Type its owner's password at the terminal instead (asked twice, not shown).
        #[arg(long)]
        prompt: bool,
    },
    /// Set (or reset) the password a wallet address's owner approves grants with on the consent page.
    Password {
        #[arg(help = WALLET)]
        wallet_address: String,
        /// Read the password from this file (`-`: standard input).
        #[arg(
            long,
            value_name = "FILE",
            required_unless_present = "prompt",
            conflicts_with = "prompt"
        )]
        password_file: Option<PathBuf>,
        /// Type the password at the terminal instead (asked twice, not shown).
        #[arg(long)]
        prompt: bool,
    },
    /// List wallet addresses (every tenant's, or one's): path, URL, asset.
    List {
        /// Only this tenant's.
        #[arg(long)]
        tenant: Option<String>,
    },
    /// Show one wallet address.
    Get {
        #[arg(help = WALLET)]
        wallet_address: String,
    },
    /// Deactivate a wallet address (it then answers 404).
    Deactivate {
        #[arg(help = WALLET)]
        wallet_address: String,
    },
    /// Add money to a wallet address, such as what its owner paid in.
    Deposit {
        #[arg(help = WALLET)]
        wallet_address: String,
        #[command(flatten)]
        movement: Movement,
    },
    /// Take money out of a wallet address, such as what its owner cashed out.
    Withdraw {
        #[arg(help = WALLET)]
        wallet_address: String,
        #[command(flatten)]
        movement: Movement,
    },
    /// Show a wallet address's balance, in its asset's units.
    Balance {
        #[arg(help = WALLET)]
        wallet_address: String,
    },
}

/// Money moved in or out of a wallet address or a peer's liquidity.
#[derive(Debug, Clone, clap::Args)]
pub struct Movement {
    /// In the asset of the wallet address or peering, such as 100.00 (an integer of minor units with --minor-units).
    #[arg(long, allow_hyphen_values = true)]
    pub amount: String,
    /// --amount is in minor units (10000 is 100.00 at scale 2).
    #[arg(long)]
    pub minor_units: bool,
    /// Makes a retry safe: the same key moves the money once [default: a new random key].
    #[arg(long)]
    pub idempotency_key: Option<String>,
}

/// A tenant's settings.
#[derive(Debug, Clone, clap::Args)]
pub struct TenantSettings {
    /// The name its consent and owner pages show, such as "Bank A".
    #[arg(long)]
    pub public_name: Option<String>,
    /// Where its wallet addresses are: its own host (https://wallet.a.example) or a path on the server's (https://opd.example/a).
    #[arg(long)]
    pub public_url: Option<String>,
    /// Its own authorization server: the root of a host of its own routed to the authorization server listener, such as https://auth.bank-a.example/ [default: the server's].
    #[arg(long)]
    pub auth_server_url: Option<String>,
    /// Where its webhook events go [default: the server's --webhook-url].
    #[arg(long)]
    pub webhook_url: Option<String>,
    /// The key its webhook events are signed with (Opd-Signature), read from this file.
    #[arg(long, value_name = "FILE")]
    pub webhook_secret_file: Option<PathBuf>,
    /// Its own consent app, where its wallet owners approve grants [default: the built-in consent page].
    #[arg(long)]
    pub idp_consent_url: Option<String>,
    /// What its consent app sends as x-idp-secret to the identity-provider API, read from this file.
    #[arg(long, value_name = "FILE")]
    pub idp_secret_file: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
pub enum TenantCommand {
    /// Create a tenant; prints its admin token once (opd keeps only a digest).
    Create {
        /// Its id: 1 to 32 of a-z 0-9 -, such as `bank-a`.
        id: String,
        #[command(flatten)]
        settings: TenantSettings,
    },
    /// List the tenants, the operator's (`default`) first.
    List,
    /// Show one tenant.
    Get {
        /// The tenant's id.
        id: String,
    },
    /// Change a tenant's name or URLs.
    Update {
        /// The tenant's id.
        id: String,
        #[command(flatten)]
        settings: TenantSettings,
    },
    /// Give a tenant a new admin token (the old one stops working at once); prints it once.
    RotateToken {
        /// The tenant's id.
        id: String,
    },
    /// Delete a tenant that has no wallet addresses.
    Delete {
        /// The tenant's id.
        id: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum RateCommand {
    /// Set one exchange rate (1 BASE is worth RATE COUNTER), as the dashboard does: the other rates of BASE are kept.
    Set {
        /// The asset code converted from, such as USD.
        base: String,
        /// The asset code converted to, such as EUR.
        counter: String,
        /// How many COUNTER one BASE is worth, such as 0.9.
        rate: String,
    },
    /// Remove one exchange rate; the other rates of BASE are kept.
    Delete {
        /// The asset code converted from, such as USD.
        base: String,
        /// The asset code converted to, such as EUR.
        counter: String,
    },
    /// List the exchange rates set here (and the rates URL, when set); those of the configuration file are not listed.
    List,
}

/// The asset a fee is for.
#[derive(Debug, Clone, clap::Args)]
pub struct FeeAsset {
    /// The code of the asset its payments are sent in, such as USD.
    #[arg(long)]
    pub asset_code: String,
    /// The scale of that asset: how many decimals its amounts have, such as 2.
    #[arg(long)]
    pub asset_scale: u8,
}

#[derive(Debug, Subcommand)]
pub enum FeeCommand {
    /// Set the fee outgoing payments in an asset pay: a fixed part plus a share of what is sent.
    Set {
        #[command(flatten)]
        asset: FeeAsset,
        /// The fixed part, in the asset, such as 0.30 (an integer of minor units with --minor-units).
        #[arg(long, default_value = "0")]
        fixed: String,
        /// --fixed is in minor units (30 is 0.30 at scale 2).
        #[arg(long)]
        minor_units: bool,
        /// The share of what is sent, in percent with up to two decimals, such as 1.5 (0 to 100), as on the dashboard.
        #[arg(long, default_value = "0")]
        percent: String,
    },
    /// List the fees, one line each (every tenant's with the operator's token).
    List,
    /// Remove the fee of an asset (its payments pay none).
    Delete {
        #[command(flatten)]
        asset: FeeAsset,
    },
}

#[derive(Debug, Subcommand)]
pub enum KeyCommand {
    /// Add an Ed25519 public key (a JWK) to a wallet address.
    Add {
        #[arg(help = WALLET)]
        wallet_address: String,
        /// The key as a JWK in JSON: {"kid":"...","kty":"OKP","crv":"Ed25519","x":"..."} (`opd client keys show` prints one).
        #[arg(
            long,
            conflicts_with = "jwk_file",
            required_unless_present = "jwk_file"
        )]
        jwk: Option<String>,
        /// A file holding the JWK as JSON.
        #[arg(long, value_name = "FILE")]
        jwk_file: Option<PathBuf>,
    },
    /// List a wallet address's keys, revoked ones included.
    List {
        #[arg(help = WALLET)]
        wallet_address: String,
    },
    /// Revoke a key: it leaves the wallet address's key set at once.
    Revoke {
        #[arg(help = WALLET)]
        wallet_address: String,
        /// The key's id (its JWK's kid).
        kid: String,
    },
}

/// The settings of a peer, for `create` (name, address and asset required)
/// and `update` (only what is given changes).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct PeerSettings {
    /// The peer's name here, which names it in the other helpers too, such as `other-bank`.
    #[arg(long)]
    pub name: Option<String>,
    /// The peer's own ILP address, such as `g.other-bank`.
    #[arg(long)]
    pub static_ilp_address: Option<String>,
    /// The code of the peering's asset, such as USD (create only).
    #[arg(long)]
    pub asset_code: Option<String>,
    /// The scale of the peering's asset: how many decimals its amounts have, such as 2 (create only).
    #[arg(long)]
    pub asset_scale: Option<u8>,
    /// Largest packet amount the peer may send (F08 above it), in the peering's asset, such as 1000.00.
    #[arg(long, allow_hyphen_values = true)]
    pub max_packet_amount: Option<String>,
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
    /// `peer.liquidity_low` when the liquidity falls to or below this, in the peering's asset.
    #[arg(long, allow_hyphen_values = true)]
    pub liquidity_low: Option<String>,
    /// `peer.liquidity_high` when the liquidity rises to or above this, in the peering's asset.
    #[arg(long, allow_hyphen_values = true)]
    pub liquidity_high: Option<String>,
    /// The amounts above are integers of minor units (10000 is 100.00 at scale 2).
    #[arg(long)]
    pub minor_units: bool,
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

/// The help of an argument naming a peer.
const PEER: &str = "The peer: its name or its id";

#[derive(Debug, Subcommand)]
pub enum PeerCommand {
    /// Create a peer.
    Create(PeerSettings),
    /// List peers: name, ILP address, asset, liquidity.
    List,
    /// Show a peer.
    Get {
        #[arg(help = PEER)]
        id: String,
    },
    /// Change a peer's settings (the given ones).
    Update {
        #[arg(help = PEER)]
        id: String,
        #[command(flatten)]
        settings: PeerSettings,
    },
    /// Delete a peer (its liquidity must be zero).
    Delete {
        #[arg(help = PEER)]
        id: String,
    },
    /// Add liquidity: what the peer may send us before settling.
    Deposit {
        #[arg(help = PEER)]
        id: String,
        #[command(flatten)]
        movement: Movement,
    },
    /// Take liquidity back.
    Withdraw {
        #[arg(help = PEER)]
        id: String,
        #[command(flatten)]
        movement: Movement,
    },
    /// Show a peer's liquidity, in the peering's asset.
    Balance {
        #[arg(help = PEER)]
        id: String,
    },
    /// Ask another server to peer (its auto-peering URL, as the reference
    /// server's auto-peering protocol has it) and create the peer from its
    /// answer; run again to renew the peering.
    AutoPeer {
        /// The other server's auto-peering URL.
        url: String,
        /// The peering's asset code, such as USD.
        #[arg(long)]
        asset_code: String,
        /// The peering's asset scale: how many decimals its amounts have, such as 2.
        #[arg(long)]
        asset_scale: u8,
        /// The largest packet to take from them, in the peering's asset, such as 1000.00.
        #[arg(long, allow_hyphen_values = true)]
        max_packet_amount: Option<String>,
        /// --max-packet-amount is an integer of minor units.
        #[arg(long)]
        minor_units: bool,
        /// The peer's name here [default: the name they answer with].
        #[arg(long)]
        name: Option<String>,
    },
}
