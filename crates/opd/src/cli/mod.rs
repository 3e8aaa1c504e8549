//! The command line: `opd serve`, `opd migrate` and the admin helpers.

use std::path::PathBuf;

use clap::parser::ValueSource;
use clap::{Args as _, CommandFactory, FromArgMatches, Parser, Subcommand};

use crate::config::{CommonArgs, ServeArgs};

mod helpers;

pub use helpers::{
    FeeAsset, FeeCommand, Helper, IncomingPaymentCommand, KeyCommand, Movement, PeerCommand,
    PeerSettings, RateCommand, TenantCommand, TenantSettings, WalletAddressCommand,
};

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
    Tenant(Helper<TenantCommand>),
    /// Manage wallet addresses through a running server's admin API.
    #[command(name = "wallet-address")]
    WalletAddress(Helper<WalletAddressCommand>),
    /// Manage wallet address keys through a running server's admin API.
    Key(Helper<KeyCommand>),
    /// Manage Interledger peers and their liquidity through a running server's admin API.
    Peer(Helper<PeerCommand>),
    /// Set and list exchange rates through a running server's admin API.
    Rate(Helper<RateCommand>),
    /// Set and list the fees of outgoing payments through a running server's admin API.
    Fee(Helper<FeeCommand>),
    /// Take what incoming payments received out of opd (`--external-funding`) through a running server's admin API.
    #[command(name = "incoming-payment")]
    IncomingPayment(Helper<IncomingPaymentCommand>),
    /// Open Payments from the terminal, against any Open Payments server: pay, keys, grants, incoming payments, quotes, outgoing payments.
    Client(opd_client::cli::ClientArgs),
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

    /// Every argument of every subcommand, `opd client`'s included, says
    /// what it is: `--help` shows no bare flag or placeholder.
    #[test]
    fn every_argument_has_help() {
        fn walk(command: &clap::Command, path: &str, missing: &mut Vec<String>) {
            for arg in command.get_arguments() {
                let id = arg.get_id().as_str();
                let help = arg.get_help().or(arg.get_long_help());
                let said = help.is_some_and(|h| !h.to_string().trim().is_empty());
                if !said && id != "help" && id != "version" {
                    missing.push(format!("{path} {id}"));
                }
            }
            for sub in command.get_subcommands() {
                walk(sub, &format!("{path} {}", sub.get_name()), missing);
            }
        }
        let mut missing = Vec::new();
        walk(&command(), "opd", &mut missing);
        assert!(missing.is_empty(), "arguments without help: {missing:#?}");
    }
}
