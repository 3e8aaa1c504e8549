//! `opd backup` and `opd restore`: the embedded SQLite database copied out
//! while the server runs, and put back while it does not. What the copy
//! leaves out (the secrets key, the admin token) is said on every backup,
//! since a database restored without its secrets key cannot open the
//! secrets sealed in it.

use std::path::Path;

use anyhow::Context as _;
use opd_store::Backend;
use secrecy::ExposeSecret as _;

use crate::config::CommonArgs;

/// Copies the database into `file`; returns the lines to print.
pub fn backup(common: &CommonArgs, file: &Path) -> anyhow::Result<Vec<String>> {
    let url = sqlite_url(common)?;
    let copied = opd_store::sqlite::backup(&url, file).context("backup failed")?;
    Ok(vec![
        format!(
            "backup: {} ({} bytes, migration {})",
            copied.file.display(),
            copied.bytes,
            copied.migration
        ),
        format!(
            "backup: keep {} apart from it (sealed secrets need it) and your admin token; neither is in the copy",
            common.data_dir.join("secrets-key").display()
        ),
    ])
}

/// Restores `file` into the database; returns the lines to print.
pub fn restore(
    common: &CommonArgs,
    file: &Path,
    replace: bool,
    now_unix: u64,
) -> anyhow::Result<Vec<String>> {
    let url = sqlite_url(common)?;
    let copied =
        opd_store::sqlite::restore(&url, file, replace, now_unix).context("restore failed")?;
    let mut lines = vec![format!(
        "restored: {} (migration {}); `opd check` verifies its ledger, `opd serve` migrates it if needed",
        copied.file.display(),
        copied.migration
    )];
    if let Some(kept) = &copied.kept {
        lines.push(format!(
            "restored: the previous database is kept as {}",
            kept.display()
        ));
    }
    Ok(lines)
}

/// The SQLite database's URL; a PostgreSQL site is told how it backs up.
fn sqlite_url(common: &CommonArgs) -> anyhow::Result<String> {
    let url = common.database_url().expose_secret().to_owned();
    match opd_store::backend_of(&url)? {
        Backend::Sqlite => Ok(url),
        Backend::Postgres => anyhow::bail!(
            "opd backup copies the embedded SQLite database; a PostgreSQL site backs up with pg_dump, or base backups and WAL archiving (see docs/operating.md, Backups)"
        ),
    }
}
