//! The configuration's tests: the order of the layers, the file's keys,
//! the secrets kept out of `Debug`, and the configuration table of the
//! operator's guide (`docs/operating.md`) against the declarations.

use std::net::SocketAddr;

use secrecy::ExposeSecret;

use super::*;

fn addr(s: &str) -> SocketAddr {
    s.parse().unwrap_or_else(|e| panic!("{s}: {e}"))
}

/// `opd`'s command line blind to the environment, so that a variable set
/// where the tests run cannot change their result.
fn command_without_env() -> Command {
    map_settings_args(Cli::command(), |arg| arg.env(None))
}

fn settings(args: &[&str], file: &str) -> Settings {
    let file = ConfigFile::parse(file).unwrap_or_else(|e| panic!("{e:#}"));
    Settings::layered(command_without_env(), args, file).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn flags_beat_the_file_and_the_file_beats_defaults() {
    let s = settings(
        &["opd", "serve", "--listen", "127.0.0.1:7000"],
        r#"
        listen = "127.0.0.1:9000"
        auth_listen = "127.0.0.1:9001"
        ilp_address = "test.file"
        [[fees]]
        asset_code = "USD"
        asset_scale = 2
        fixed = 5
        basis_points = 100
        [rates.USD]
        EUR = "0.91"
        "#,
    );
    assert_eq!(s.serve.listen, addr("127.0.0.1:7000"));
    assert_eq!(s.serve.auth_listen, addr("127.0.0.1:9001"));
    assert_eq!(s.common.admin_listen, addr("127.0.0.1:8082"));
    assert_eq!(s.serve.ilp_address, "test.file");
    assert_eq!(s.fees.len(), 1);
    assert_eq!(s.rates["USD"]["EUR"], "0.91");
    assert!(s.common.database_is_default());
    assert_eq!(
        s.common.database_url().expose_secret(),
        "sqlite://opd-data/opd.sqlite"
    );
}

#[test]
fn the_log_format_comes_from_the_flag_then_the_file() {
    let file = r#"log_format = "json""#;
    assert_eq!(
        settings(&["opd", "migrate"], file).common.log_format,
        LogFormat::Json
    );
    let flag = settings(&["opd", "--log-format", "text", "migrate"], file);
    assert_eq!(flag.common.log_format, LogFormat::Text);
    assert_eq!(
        settings(&["opd", "migrate"], "").common.log_format,
        LogFormat::Text
    );
    assert!(ConfigFile::parse(r#"log_format = "xml""#).is_err());
}

#[test]
fn unknown_file_keys_are_rejected() {
    assert!(ConfigFile::parse("lisen = \"127.0.0.1:1\"").is_err());
    // `config` is a flag, but the file cannot name another file.
    assert!(ConfigFile::parse("config = \"other.toml\"").is_err());
}

#[test]
fn file_values_of_the_wrong_type_are_rejected() {
    assert!(ConfigFile::parse("listen = 8080").is_err());
    assert!(ConfigFile::parse("workers = \"yes\"").is_err());
    assert!(ConfigFile::parse("outbound_allow = \"10.0.0.1\"").is_err());
    let ok = ConfigFile::parse("outbound_allow = [\"10.0.0.1\"]\nworkers = false")
        .unwrap_or_else(|e| panic!("{e:#}"));
    assert_eq!(ok.serve.outbound_allow, ["10.0.0.1"]);
    assert!(!ok.serve.workers);
}

#[test]
fn settings_of_every_subcommand_are_read_before_and_after_it() {
    let before = settings(&["opd", "--data-dir", "/before", "serve"], "");
    assert_eq!(before.common.data_dir, Path::new("/before"));
    let after = settings(&["opd", "serve", "--data-dir", "/after"], "");
    assert_eq!(after.common.data_dir, Path::new("/after"));
    assert_eq!(
        after.common.database_url().expose_secret(),
        "sqlite:///after/opd.sqlite"
    );
}

#[test]
fn flags_given_without_a_value_mean_true() {
    let s = settings(
        &["opd", "serve", "--demo", "--migrate=false"],
        "migrate = true",
    );
    assert!(s.serve.demo);
    assert!(!s.serve.migrate);
    assert!(!s.serve.allow_remote_admin);
}

#[test]
fn the_defaults_are_the_declared_ones() {
    let s = Settings::for_data_dir(Path::new("/data"));
    assert_eq!(s.serve.listen, addr("127.0.0.1:8080"));
    assert_eq!(s.serve.ilp_listen, addr("127.0.0.1:8083"));
    assert_eq!(s.serve.incoming_payment_expiry_secs, 30 * 24 * 3600);
    assert_eq!(s.serve.slippage_basis_points, 100);
    assert!(s.serve.accept_sdk_signatures && s.serve.workers);
    assert!(!s.serve.external_funding);
    assert!(s.serve.outbound_allow.is_empty());
    assert!(s.common.admin_token.is_none() && s.serve.auto_peering_listen.is_none());
    assert_eq!(
        s.common.database_url().expose_secret(),
        "sqlite:///data/opd.sqlite"
    );
}

/// Marks the child process of
/// `flag_beats_environment_beats_file_beats_default`.
const CHILD: &str = "OPD_CONFIG_PRECEDENCE_CHILD";

/// Environment variables belong to the whole process, and the other tests
/// run alongside: the assertions run in a child process of this test
/// binary, given an environment of its own.
#[test]
fn flag_beats_environment_beats_file_beats_default() {
    let exe = std::env::current_exe().unwrap_or_else(|e| panic!("{e}"));
    let mut child = std::process::Command::new(exe);
    child.args([
        "--exact",
        "--ignored",
        "--nocapture",
        "config::tests::precedence_in_a_child_process",
    ]);
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().starts_with("OPD_") {
            child.env_remove(name);
        }
    }
    child
        .env(CHILD, "1")
        .env("OPD_LISTEN", "127.0.0.1:7100")
        .env("OPD_AUTH_LISTEN", "127.0.0.1:7101")
        .env("OPD_DATA_DIR", "/from-env")
        .env("OPD_ADMIN_TOKEN", "token-from-the-environment")
        .env("OPD_WORKERS", "false")
        .env("OPD_OUTBOUND_ALLOW", "a.example,b.example");
    let output = child.output().unwrap_or_else(|e| panic!("{e}"));
    let report = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{report}");
    // A filter matching no test would succeed too.
    assert!(report.contains("1 passed"), "{report}");
}

#[test]
#[ignore = "run by flag_beats_environment_beats_file_beats_default, in its environment"]
fn precedence_in_a_child_process() {
    assert_eq!(
        std::env::var(CHILD).as_deref(),
        Ok("1"),
        "run by its parent test"
    );
    let file = ConfigFile::parse(
        r#"
        listen = "127.0.0.1:9000"
        auth_listen = "127.0.0.1:9001"
        ilp_listen = "127.0.0.1:9003"
        admin_token = "token-from-the-file"
        workers = true
        outbound_allow = ["c.example"]
        quote_lifespan_secs = 42
        "#,
    )
    .unwrap_or_else(|e| panic!("{e:#}"));
    let args = [
        "opd",
        "serve",
        "--listen",
        "127.0.0.1:7000",
        "--data-dir",
        "/from-flag",
    ];
    let s = Settings::from_command_line(args, file).unwrap_or_else(|e| panic!("{e}"));
    // Flag over environment over file.
    assert_eq!(s.serve.listen, addr("127.0.0.1:7000"));
    assert_eq!(s.common.data_dir, Path::new("/from-flag"));
    // Environment over file.
    assert_eq!(s.serve.auth_listen, addr("127.0.0.1:7101"));
    let token = s.common.admin_token.as_ref().map(|t| t.expose_secret());
    assert_eq!(token, Some("token-from-the-environment"));
    assert!(!s.serve.workers);
    assert_eq!(s.serve.outbound_allow, ["a.example", "b.example"]);
    // File over default.
    assert_eq!(s.serve.ilp_listen, addr("127.0.0.1:9003"));
    assert_eq!(s.serve.quote_lifespan_secs, 42);
    // Default.
    assert_eq!(s.common.admin_listen, addr("127.0.0.1:8082"));
    assert_eq!(s.serve.retention_days, 30);
}

#[test]
fn secrets_never_show_in_debug() {
    let secrets = [
        "admin-token-0123456789",
        "idp-secret-0123456789",
        "webhook-secret-0123456789",
        "introspection-token-0123456789",
        "database-password-0123456789",
    ];
    let s = settings(
        &["opd", "serve", "--webhook-secret", secrets[2]],
        &format!(
            r#"
            admin_token = "{}"
            idp_secret = "{}"
            introspection_token = "{}"
            database_url = "postgres://opd:{}@db.internal/opd"
            "#,
            secrets[0], secrets[1], secrets[3], secrets[4]
        ),
    );
    assert_eq!(
        s.serve.webhook_secret.as_ref().map(|t| t.expose_secret()),
        Some(secrets[2])
    );
    let shown = format!("{s:?} {s:#?}");
    for secret in secrets {
        assert!(!shown.contains(secret), "{secret} shows in {shown}");
    }
    assert!(shown.contains("REDACTED"));
}

/// One row of the operator's guide's configuration table, as the
/// declarations say it must begin.
struct Row {
    /// `` `--listen` / `listen` ``: the flag and the file key.
    flag: String,
    /// `` `OPD_LISTEN` ``.
    env: String,
    /// The default: `` `127.0.0.1:8080` `` when clap has one, else the
    /// help's `[default: ...]`, else `none`.
    default: String,
}

fn declared_rows() -> Vec<Row> {
    let command = CommonArgs::augment_args(ServeArgs::augment_args(Command::new("opd")));
    let keys = file_keys();
    command
        .get_arguments()
        .map(|arg| {
            let id = arg.get_id().to_string();
            let long = arg.get_long().unwrap_or_default();
            let flag = if keys.contains(&id) {
                format!("`--{long}` / `{id}`")
            } else {
                format!("`--{long}`")
            };
            let env = arg.get_env().map(|e| e.to_string_lossy().into_owned());
            let declared: Vec<_> = arg
                .get_default_values()
                .iter()
                .map(|v| v.to_string_lossy().into_owned())
                .collect();
            let help = arg.get_help().map(ToString::to_string).unwrap_or_default();
            let default = if !declared.is_empty() {
                format!("`{}`", declared.join(","))
            } else if let Some((_, rest)) = help.split_once("[default: ") {
                rest.split(']').next().unwrap_or_default().to_owned()
            } else {
                "none".to_owned()
            };
            Row {
                flag,
                env: format!("`{}`", env.unwrap_or_default()),
                default,
            }
        })
        .collect()
}

/// Whether a table cell says `expected`, possibly followed by a comment
/// (after a space); backticks only format it.
fn says(cell: &str, expected: &str) -> bool {
    let unquoted = |s: &str| s.replace('`', "");
    let (cell, expected) = if expected.starts_with('`') {
        (cell.to_owned(), expected.to_owned())
    } else {
        (unquoted(cell), unquoted(expected))
    };
    cell.strip_prefix(&expected)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with(' '))
}

#[test]
fn the_configuration_table_matches_the_declared_settings() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/operating.md");
    let guide =
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    // The rows of flags: `| flag / key | environment | default | meaning |`.
    let table: Vec<Vec<&str>> = guide
        .lines()
        .filter(|line| line.starts_with("| `--"))
        .map(|line| line.trim_matches('|').split('|').map(str::trim).collect())
        .collect();
    let mut problems = Vec::new();
    let declared = declared_rows();
    for row in &declared {
        let found: Vec<_> = table.iter().filter(|cells| cells[0] == row.flag).collect();
        let ok = match found.as_slice() {
            [cells] => cells.len() >= 3 && says(cells[1], &row.env) && says(cells[2], &row.default),
            _ => false,
        };
        if !ok {
            problems.push(format!(
                "| {} | {} | {} | ... |",
                row.flag, row.env, row.default
            ));
        }
    }
    for cells in &table {
        if !declared.iter().any(|row| row.flag == cells[0]) {
            problems.push(format!("no such setting: {}", cells[0]));
        }
    }
    assert!(
        problems.is_empty(),
        "docs/operating.md's configuration table does not match the settings declared in \
         crates/opd/src/config.rs. Make these rows begin as shown (one row each; \
         a default or environment cell may go on with a comment after a space), \
         and remove rows of no setting:\n{}",
        problems.join("\n")
    );
}
