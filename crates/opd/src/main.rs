//! `opd`: parse the command line and run the subcommand.

use std::sync::Arc;

use anyhow::Context;
use opd::admin_client::{AdminClient, Answer};
use opd::cli::Command;
use opd::config::{ConfigFile, Settings};
use opd_core::untrusted;
use opd_core::{OsRandom, SystemClock};
use secrecy::ExposeSecret;
use std::io::Write as _;

#[global_allocator]
static ALLOCATOR: opd::Allocator = opd::Allocator {};

/// A failure is printed for people: what failed, then why, on two lines;
/// never a backtrace, whatever `RUST_BACKTRACE` says.
#[tokio::main]
async fn main() {
    if let Err(e) = run().await {
        print_failure(&e);
        std::process::exit(1);
    }
}

async fn run() -> anyhow::Result<()> {
    // Checks the command line (and answers --help) before anything else;
    // its settings are then read again over the file's.
    let cli = opd::cli::parse();
    let file = ConfigFile::load(cli.common.config.as_deref())?;
    let settings = Settings::from_command_line(std::env::args_os(), file)?;
    let node = opd::logging::init(settings.common.log_format);
    match cli.command {
        Command::Serve(_) => run_serve(settings, node).await,
        Command::Migrate => migrate(&settings).await,
        Command::Check { external_funding } => check(&settings, external_funding).await,
        Command::Backup { file } => lines(opd::backups::backup(&settings.common, &file)),
        Command::Restore { file, replace } => lines(opd::backups::restore(
            &settings.common,
            &file,
            replace,
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
        )),
        Command::WalletAddress(h) => {
            let client = AdminClient::new(&settings.common);
            answer(h.json, async { client?.wallet_address(h.command).await }).await
        }
        Command::Tenant(h) => {
            let client = AdminClient::new(&settings.common);
            answer(h.json, async { client?.tenant(h.command).await }).await
        }
        Command::Key(h) => {
            let client = AdminClient::new(&settings.common);
            answer(h.json, async { client?.key(h.command).await }).await
        }
        Command::Peer(h) => {
            let client = AdminClient::new(&settings.common);
            answer(h.json, async { client?.peer(h.command).await }).await
        }
        Command::Rate(h) => {
            let client = AdminClient::new(&settings.common);
            answer(h.json, async { client?.rate(h.command).await }).await
        }
        Command::Fee(h) => {
            let client = AdminClient::new(&settings.common);
            answer(h.json, async { client?.fee(h.command).await }).await
        }
        Command::IncomingPayment(h) => {
            let client = AdminClient::new(&settings.common);
            answer(h.json, async { client?.incoming_payment(h.command).await }).await
        }
        Command::Client(args) => {
            // A person reads this: the error's chain on one line, without
            // the backtrace anyhow would add.
            if let Err(e) = opd_client::cli::run(args).await {
                print_error(&e);
                std::process::exit(1);
            }
            Ok(())
        }
    }
}

/// `opd migrate`: brings the database's schema up to date.
async fn migrate(settings: &Settings) -> anyhow::Result<()> {
    opd_store::migrate(settings.common.database_url().expose_secret())
        .await
        .context("migration failed")?;
    println!("database is up to date");
    Ok(())
}

/// `opd check`: checks that the ledger balances, in the funding mode of
/// `external_funding` (its own flag, else the file's).
async fn check(settings: &Settings, external_funding: Option<bool>) -> anyhow::Result<()> {
    let store = opd_store::connect(&opd_store::ConnectOptions::new(
        settings.common.database_url().expose_secret().to_owned(),
    ))
    .await
    .context("cannot open the database")?;
    let external_funding = external_funding.unwrap_or(settings.serve.external_funding);
    let receipts = opd_core::ledger::Receipts::for_external_funding(external_funding);
    let report = opd_service::ledger::check(store.as_ref(), receipts).await?;
    for w in &report.awaiting_withdrawal {
        println!(
            "incoming payments and payment pointers (SPSP) await the withdrawal of {} (minor units of {})",
            w.value, w.asset
        );
    }
    let problems = report.problems;
    if problems.is_empty() {
        println!("ledger balanced");
        return Ok(());
    }
    for p in &problems {
        println!("{p}");
    }
    anyhow::bail!("the ledger is not balanced ({} problems)", problems.len())
}

/// Prints a line on standard output. A server outlives whoever reads its
/// standard output: when that pipe is closed (a supervisor or a terminal
/// gone), the line is dropped rather than the server panicking; so is a
/// helper's answer.
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout(), $($arg)*);
    }};
}

/// An admin helper's answer: with `--json` the admin API's JSON, inert on
/// a terminal (bidirectional and C1 controls as JSON escapes, which read
/// back the same); otherwise its lines for people, inert too (their
/// server text went through `Untrusted` already; this is the last pass).
fn print(answer: &Answer, json: bool) -> anyhow::Result<()> {
    if json {
        say!(
            "{}",
            untrusted::json(&serde_json::to_string_pretty(&answer.json)?)
        );
    } else {
        for line in &answer.lines {
            say!("{}", untrusted::lines(line));
        }
    }
    Ok(())
}

/// What failed (the outermost context), then its causes on a second line.
fn print_failure(e: &anyhow::Error) {
    let mut out = format!("error: {}", untrusted::lines(&e.to_string()));
    let causes: Vec<String> = e.chain().skip(1).map(|c| c.to_string()).collect();
    if !causes.is_empty() {
        out.push_str(&format!(
            "\n  cause: {}",
            untrusted::lines(&causes.join("; "))
        ));
    }
    let _ = writeln!(std::io::stderr(), "{out}");
}

/// An error of `opd client` or an admin helper, which may quote a server:
/// inert on a terminal, its own line breaks kept.
fn print_error(e: &anyhow::Error) {
    eprintln!("error: {}", untrusted::lines(&format!("{e:#}")));
}

async fn run_serve(settings: Settings, node: String) -> anyhow::Result<()> {
    let settings_gave_token = settings.common.admin_token.is_some();
    let token_file = settings.common.data_dir.join("admin-token");
    let running = opd::app::start(settings, Arc::new(SystemClock), Arc::new(OsRandom)).await?;
    tracing::info!(
        open_payments = %running.public_url,
        auth_server = %running.auth_public_url,
        admin = %running.admin_addr,
        ilp = %running.ilp_addr,
        node = %node,
        "opd is serving"
    );
    if let Some(path) = &running.admin_token_generated {
        // Where it is, not what it is: standard output often ends up in a
        // log collector, and the token opens the whole admin API.
        say!(
            "admin token: generated into {} (readable by this user only; the admin helpers read it there)",
            path.display()
        );
    }
    // Where the operator signs in, and with what (never the token itself).
    let token_from = if settings_gave_token {
        "the token given with --admin-token or OPD_ADMIN_TOKEN".to_owned()
    } else {
        format!("the admin token in {}", token_file.display())
    };
    say!(
        "dashboard: {}/dashboard (sign in with {token_from})",
        running.admin_url
    );
    if let Some(demo) = &running.demo {
        print_demo(demo, &running.public_url);
    }
    running.serve_until(shutdown_signal()).await
}

/// Prints an admin helper's answer (its JSON with `json`), or its error
/// as `opd client` does: one line (then any details), without a
/// backtrace.
async fn answer(
    json: bool,
    work: impl std::future::Future<Output = anyhow::Result<Answer>>,
) -> anyhow::Result<()> {
    match work.await {
        Ok(answer) => print(&answer, json),
        Err(e) => {
            print_error(&e);
            std::process::exit(1);
        }
    }
}

/// Prints a command's lines, or its error on one line without a
/// backtrace.
fn lines(work: anyhow::Result<Vec<String>>) -> anyhow::Result<()> {
    match work {
        Ok(lines) => {
            for line in lines {
                say!("{line}");
            }
            Ok(())
        }
        Err(e) => {
            print_error(&e);
            std::process::exit(1);
        }
    }
}

/// The demo's wallet addresses, passwords and the next commands.
fn print_demo(demo: &opd::demo::Demo, public_url: &str) {
    say!("demo: wallet addresses {public_url}/alice (100.00 USD) and {public_url}/bob;");
    for (path, password) in &demo.passwords {
        // Demo data, printed so that the quickstart can be tried at once.
        say!("demo: {path}'s password on the consent page (demo data): {password}");
    }
    let profile = if demo.profile == std::path::Path::new(opd_client::profile::DEFAULT_PROFILE) {
        String::new()
    } else {
        format!(" --profile {}", demo.profile.display())
    };
    say!("demo: pay bob 12.34 USD from alice (open the page it prints, approve with alice's password):");
    say!(
        "  cargo run --release -- client{profile} pay {public_url}/bob --from {public_url}/alice --amount 12.34"
    );
    say!("demo: then see bob's incoming payments:");
    say!(
        "  cargo run --release -- client{profile} incoming-payment list --wallet-address {public_url}/bob"
    );
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! { _ = ctrl_c => {}, _ = term => {} }
    tracing::info!("shutting down");
}
