//! The command line: `opd serve`, `opd migrate` and the admin helpers.

use std::path::PathBuf;

use clap::parser::ValueSource;
use clap::{Args as _, CommandFactory, FromArgMatches, Parser, Subcommand};

use crate::config::{CommonArgs, ServeArgs};

/// The shared settings ([`CommonArgs`], by their field names) that a
/// subcommand reads. They are declared once, for every subcommand, so that
/// they can be written before or after its name; each subcommand's help
/// shows only its own, and giving another on the command line is an error
/// rather than silently ignored (from the environment or the file it is
/// ignored, since those are shared by every command).
fn settings_of(subcommand: &str) -> &'static [&'static str] {
    const ADMIN_HELPER: &[&str] = &[
        "config",
        "data_dir",
        "admin_listen",
        "admin_url",
        "admin_token",
    ];
    match subcommand {
        "serve" => &[
            "config",
            "data_dir",
            "database_url",
            "admin_listen",
            "admin_token",
            "log_format",
        ],
        "migrate" | "check" | "backup" | "restore" => {
            &["config", "data_dir", "database_url", "log_format"]
        }
        "tenant" | "wallet-address" | "key" | "peer" | "rate" | "fee" | "incoming-payment" => {
            ADMIN_HELPER
        }
        // `client` talks to any Open Payments server with its own profile.
        _ => &[],
    }
}

/// The ids of every shared setting.
fn shared_settings() -> Vec<String> {
    CommonArgs::augment_args(clap::Command::new("shared"))
        .get_arguments()
        .map(|a| a.get_id().to_string())
        .collect()
}

/// `opd`'s command line, with each subcommand's help trimmed to the shared
/// settings it reads.
pub fn command() -> clap::Command {
    let mut cli = Cli::command();
    let shared: Vec<clap::Arg> = cli.get_arguments().cloned().collect();
    let names: Vec<String> = cli
        .get_subcommands()
        .map(|s| s.get_name().to_owned())
        .collect();
    for name in names {
        let keep = settings_of(&name);
        let hidden: Vec<clap::Arg> = shared
            .iter()
            .filter(|a| a.is_global_set() && !keep.contains(&a.get_id().as_str()))
            .map(|a| a.clone().hide(true))
            .collect();
        cli = cli.mut_subcommand(&name, |sub| hide(sub, &hidden));
    }
    cli
}

/// `command` and its subcommands with their own hidden copies of the
/// global settings `hidden`: clap then propagates its shown ones only to
/// the others, and the hidden ones still parse (for [`try_parse_from`] to
/// name them).
fn hide(mut command: clap::Command, hidden: &[clap::Arg]) -> clap::Command {
    command = command.args(hidden.iter().cloned());
    let names: Vec<String> = command
        .get_subcommands()
        .map(|s| s.get_name().to_owned())
        .collect();
    for name in names {
        command = command.mut_subcommand(&name, |sub| hide(sub, hidden));
    }
    command
}

/// Parses `args` (the program's name first), refusing a shared setting
/// given on the command line to a subcommand that does not read it.
pub fn try_parse_from<I, T>(args: I) -> Result<Cli, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let mut command = command();
    let matches = command.try_get_matches_from_mut(args)?;
    if let Some((name, _)) = matches.subcommand() {
        let keep = settings_of(name);
        for id in shared_settings() {
            if !keep.contains(&id.as_str())
                && matches.value_source(&id) == Some(ValueSource::CommandLine)
            {
                let flag = format!("--{}", id.replace('_', "-"));
                return Err(command.error(
                    clap::error::ErrorKind::ArgumentConflict,
                    format!("{flag} does not apply to `opd {name}`"),
                ));
            }
        }
    }
    Cli::from_arg_matches(&matches).map_err(|e| e.format(&mut command))
}

/// [`try_parse_from`] the program's arguments; exits with clap's message
/// (and answers `--help`) on error.
pub fn parse() -> Cli {
    try_parse_from(std::env::args_os()).unwrap_or_else(|e| e.exit())
}

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
    /// Copy the embedded SQLite database into FILE, consistently, while the server runs (PostgreSQL sites use pg_dump or base backups).
    Backup {
        /// Where the copy goes; it must not exist.
        file: PathBuf,
    },
    /// Put a backup made by `opd backup` in place of the SQLite database; refused while a server uses it.
    Restore {
        /// The backup to restore.
        file: PathBuf,
        /// Replace an existing database (it is kept beside, as `opd.sqlite.before-restore-<time>`).
        #[arg(long)]
        replace: bool,
    },
    /// Manage tenants (the wallet providers this server serves) through a running server's admin API; the operator's token only.
    #[command(subcommand)]
    Tenant(TenantCommand),
    /// Manage wallet addresses through a running server's admin API.
    #[command(subcommand, name = "wallet-address")]
    WalletAddress(WalletAddressCommand),
    /// Manage wallet address keys through a running server's admin API.
    #[command(subcommand)]
    Key(KeyCommand),
    /// Manage Interledger peers and their liquidity through a running server's admin API.
    #[command(subcommand)]
    Peer(PeerCommand),
    /// Set and list exchange rates through a running server's admin API.
    #[command(subcommand)]
    Rate(RateCommand),
    /// Set and list the fees of outgoing payments through a running server's admin API.
    #[command(subcommand)]
    Fee(FeeCommand),
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
        /// The tenant it belongs to [default: the operator's, or the token's tenant].
        #[arg(long)]
        tenant: Option<String>,
        #[arg(long)]
        asset_code: String,
        #[arg(long)]
        asset_scale: u8,
        #[arg(long)]
        public_name: Option<String>,
        /// The password its owner approves grants with on the consent page, read from this file (`-`: standard input).
        #[arg(long, value_name = "FILE")]
        owner_password_file: Option<std::path::PathBuf>,
    },
    /// Set (or reset) the password a wallet address's owner approves grants with on the consent page.
    Password {
        /// The wallet address: its id, its path, or tenant:path.
        wallet_address: String,
        /// Read the password from this file (`-`: standard input).
        #[arg(long, value_name = "FILE")]
        password_file: std::path::PathBuf,
    },
    /// List wallet addresses (every tenant's, or one's).
    List {
        /// Only this tenant's.
        #[arg(long)]
        tenant: Option<String>,
    },
    /// Show one wallet address (by id or path).
    Get { wallet_address: String },
    /// Deactivate a wallet address (by id or path).
    Deactivate { wallet_address: String },
    /// Add money to a wallet address (by id or path), such as what its owner paid in.
    Deposit {
        wallet_address: String,
        #[command(flatten)]
        movement: Movement,
    },
    /// Take money out of a wallet address (by id or path), such as what its owner cashed out.
    Withdraw {
        wallet_address: String,
        #[command(flatten)]
        movement: Movement,
    },
    /// Show a wallet address's balance (by id or path), in minor units of its asset.
    Balance { wallet_address: String },
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
    /// Makes a retry safe [default: a new random key].
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
    pub webhook_secret_file: Option<std::path::PathBuf>,
    /// Its own consent app, where its wallet owners approve grants [default: the built-in consent page].
    #[arg(long)]
    pub idp_consent_url: Option<String>,
    /// What its consent app sends as x-idp-secret to the identity-provider API, read from this file.
    #[arg(long, value_name = "FILE")]
    pub idp_secret_file: Option<std::path::PathBuf>,
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
    /// Set the exchange rates from one asset code: every rate of BASE is replaced by the given ones.
    Set {
        /// The asset code converted from, such as USD.
        base: String,
        /// COUNTER=RATE, such as EUR=0.9 (1 BASE is worth 0.9 EUR); repeat for more.
        #[arg(required = true, value_name = "COUNTER=RATE")]
        rates: Vec<String>,
    },
    /// List the exchange rates (and the rates URL, when set).
    List,
}

#[derive(Debug, Subcommand)]
pub enum FeeCommand {
    /// Set the fee outgoing payments in an asset pay: fixed plus a share of what is sent.
    Set {
        #[arg(long)]
        asset_code: String,
        #[arg(long)]
        asset_scale: u8,
        /// The fixed part, in the asset, such as 0.10 (an integer of minor units with --minor-units).
        #[arg(long, default_value = "0")]
        fixed: String,
        /// --fixed is in minor units (10 is 0.10 at scale 2).
        #[arg(long)]
        minor_units: bool,
        /// The share of the amount, in hundredths of a percent (50 is 0.5 %), 0 to 10000.
        #[arg(long, default_value_t = 0)]
        basis_points: u16,
    },
    /// List the fees.
    List,
    /// Remove the fee of an asset (its payments pay none).
    Delete {
        #[arg(long)]
        asset_code: String,
        #[arg(long)]
        asset_scale: u8,
    },
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
        #[command(flatten)]
        movement: Movement,
    },
    /// Take liquidity back.
    Withdraw {
        /// The peer's id or name.
        id: String,
        #[command(flatten)]
        movement: Movement,
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

#[cfg(test)]
mod tests {

    use super::*;

    /// The long help of `opd <path>`.
    fn help(path: &[&str]) -> String {
        let mut args = vec!["opd"];
        args.extend_from_slice(path);
        args.push("--help");
        let e = try_parse_from(args).expect_err("--help ends parsing");
        assert_eq!(e.kind(), clap::error::ErrorKind::DisplayHelp);
        e.to_string()
    }

    #[test]
    fn each_subcommand_shows_only_the_shared_settings_it_reads() {
        for path in [
            &["client"][..],
            &["client", "pay"],
            &["client", "keys", "generate"],
        ] {
            let text = help(path);
            for flag in [
                "--database-url",
                "--admin-token",
                "--data-dir",
                "--log-format",
            ] {
                assert!(
                    !text.contains(flag),
                    "`opd {path:?} --help` shows {flag}:\n{text}"
                );
            }
        }
        for path in [
            &["peer"][..],
            &["peer", "deposit"],
            &["wallet-address", "create"],
        ] {
            let text = help(path);
            assert!(text.contains("--admin-url"), "{text}");
            assert!(text.contains("--admin-token"), "{text}");
            assert!(!text.contains("--database-url"), "{text}");
            assert!(!text.contains("--log-format"), "{text}");
        }
        let serve = help(&["serve"]);
        assert!(serve.contains("--database-url") && serve.contains("--admin-token"));
        assert!(!serve.contains("--admin-url"), "{serve}");
        let check = help(&["check"]);
        assert!(check.contains("--database-url") && !check.contains("--admin-token"));
    }

    #[test]
    fn shared_settings_parse_before_or_after_the_subcommand() {
        for args in [
            &["opd", "--data-dir", "d", "peer", "list"][..],
            &["opd", "peer", "list", "--data-dir", "d"],
            &["opd", "peer", "--data-dir", "d", "list"],
        ] {
            let cli = try_parse_from(args).unwrap();
            assert_eq!(cli.common.data_dir, PathBuf::from("d"), "{args:?}");
        }
    }

    #[test]
    fn a_shared_setting_a_subcommand_does_not_read_is_refused_by_name() {
        for (args, flag, name) in [
            (
                &[
                    "opd",
                    "client",
                    "--database-url",
                    "x",
                    "keys",
                    "generate",
                    "--wallet-address",
                    "http://x/a",
                ][..],
                "--database-url",
                "client",
            ),
            (
                &[
                    "opd",
                    "--admin-token",
                    "t",
                    "client",
                    "keys",
                    "generate",
                    "--wallet-address",
                    "http://x/a",
                ],
                "--admin-token",
                "client",
            ),
            (
                &["opd", "peer", "list", "--database-url", "x"],
                "--database-url",
                "peer",
            ),
            (
                &["opd", "migrate", "--admin-url", "http://x"],
                "--admin-url",
                "migrate",
            ),
        ] {
            let e = try_parse_from(args).expect_err("refused");
            assert!(
                e.to_string()
                    .contains(&format!("{flag} does not apply to `opd {name}`")),
                "{args:?}: {e}"
            );
        }
    }
}
