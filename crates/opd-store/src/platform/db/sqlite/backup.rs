//! Online backups of the embedded SQLite database, and their restore.
//!
//! A copy of the database file taken with `cp` while opd runs can be torn:
//! committed transactions may still sit in the `-wal` file, and a page
//! written mid-copy mixes two states. [`backup`] instead runs
//! `VACUUM INTO` on a read transaction of its own, so the copy is the
//! database as of one commit, with the server still serving (readers never
//! block the writer in WAL mode). It is written beside its destination and
//! renamed into place only once complete and checked, so a crash or a full
//! disk never leaves a file that looks like a backup and is not one.
//!
//! [`restore`] takes the same lock `opd serve` holds on its database, so a
//! running server's data is never overwritten; an existing database is
//! kept beside the restored one rather than deleted.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};

use super::{lock_exclusively, migrations, sqlite_path};
use crate::{StoreError, StoreResult};

/// What a backup or a restore wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Copied {
    /// The file written.
    pub file: PathBuf,
    /// Its size in bytes.
    pub bytes: u64,
    /// The latest migration applied to it.
    pub migration: i64,
    /// On a restore, where the database it replaced was kept.
    pub kept: Option<PathBuf>,
}

/// Copies the database `url` names into `dest` (which must not exist),
/// consistently, while a server may be writing it.
pub fn backup(url: &str, dest: &Path) -> StoreResult<Copied> {
    let source = existing_database(url)?;
    if dest.exists() {
        return Err(config(format!(
            "{} already exists; a backup never overwrites a file",
            dest.display()
        )));
    }
    let partial = beside(dest, ".partial");
    let _ = std::fs::remove_file(&partial);
    let written = vacuum_into(&source, &partial).and_then(|()| checked(&partial));
    let migration = match written {
        Ok(migration) => migration,
        Err(e) => {
            let _ = std::fs::remove_file(&partial);
            return Err(e);
        }
    };
    private_file(&partial)?;
    sync(&partial)?;
    std::fs::rename(&partial, dest)
        .map_err(|e| config(format!("cannot move the backup to {}: {e}", dest.display())))?;
    Ok(Copied {
        bytes: size(dest),
        file: dest.to_owned(),
        migration,
        kept: None,
    })
}

/// Puts the backup `src` in place of the database `url` names. Refused
/// while a server has that database open; an existing database is
/// refused unless `replace`, and then kept as `<database>.before-restore-<unix
/// seconds>` (with its journal files).
pub fn restore(url: &str, src: &Path, replace: bool, now_unix: u64) -> StoreResult<Copied> {
    let path = sqlite_path(url);
    let target = Path::new(path);
    if let Some(dir) = target.parent().filter(|d| !d.as_os_str().is_empty()) {
        private_dir(dir)?;
    }
    let _lock = lock_exclusively(path).map_err(|_| {
        config(format!(
            "{path} is in use by a running opd; stop it before restoring into its data"
        ))
    })?;
    let migration = checked(src)?;
    if target.exists() && !replace {
        return Err(config(format!(
            "{path} already exists; pass --replace to put the backup in its place (the current database is kept beside it)"
        )));
    }
    // A journal left without its database would be replayed into the
    // restored one: it goes aside with it.
    let kept = if ["", "-wal", "-shm"]
        .iter()
        .any(|s| beside(target, s).exists())
    {
        Some(keep_aside(target, now_unix)?)
    } else {
        None
    };
    let restoring = beside(target, ".restoring");
    std::fs::copy(src, &restoring)
        .map_err(|e| config(format!("cannot copy {} to {path}: {e}", src.display())))?;
    private_file(&restoring)?;
    sync(&restoring)?;
    std::fs::rename(&restoring, target)
        .map_err(|e| config(format!("cannot move the restored database into place: {e}")))?;
    Ok(Copied {
        bytes: size(target),
        file: target.to_owned(),
        migration,
        kept,
    })
}

/// The database file `url` names, which must exist.
fn existing_database(url: &str) -> StoreResult<PathBuf> {
    let path = PathBuf::from(sqlite_path(url));
    if !path.is_file() {
        return Err(config(format!(
            "SQLite database {} does not exist",
            path.display()
        )));
    }
    Ok(path)
}

/// `VACUUM INTO` on a connection of its own: one read transaction, so
/// the copy is one committed state of the database.
fn vacuum_into(source: &Path, dest: &Path) -> StoreResult<()> {
    let conn = Connection::open_with_flags(
        source,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| config(format!("cannot open {}: {e}", source.display())))?;
    conn.busy_timeout(Duration::from_secs(30))
        .map_err(|e| config(e.to_string()))?;
    let dest = dest
        .to_str()
        .ok_or_else(|| config(format!("{} is not a UTF-8 path", dest.display())))?;
    conn.execute("VACUUM INTO ?1", [dest])
        .map_err(|e| config(format!("the backup failed: {e}")))?;
    Ok(())
}

/// Checks that `file` is a whole opd database this binary can open:
/// SQLite's integrity check passes and its migrations are ones this
/// binary has. Returns its latest migration.
fn checked(file: &Path) -> StoreResult<i64> {
    let conn = Connection::open_with_flags(
        file,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| config(format!("cannot open {}: {e}", file.display())))?;
    let not_ours = |e: rusqlite::Error| {
        config(format!(
            "{} is not an opd SQLite database: {e}",
            file.display()
        ))
    };
    let integrity: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .map_err(not_ours)?;
    if integrity != "ok" {
        return Err(config(format!(
            "{} fails SQLite's integrity check: {integrity}",
            file.display()
        )));
    }
    let migration: i64 = conn
        .query_row(
            "SELECT COALESCE(MAX(version), 0) FROM _sqlx_migrations WHERE success",
            [],
            |r| r.get(0),
        )
        .map_err(not_ours)?;
    if migration > migrations::latest() {
        return Err(config(format!(
            "{} was made by a newer opd (migration {migration}; this one knows up to {})",
            file.display(),
            migrations::latest()
        )));
    }
    Ok(migration)
}

/// Renames the database and its journal files to
/// `<database>.before-restore-<now>` (their journals keep their suffixes,
/// so the pair still opens as one database).
fn keep_aside(target: &Path, now_unix: u64) -> StoreResult<PathBuf> {
    let kept = beside(target, &format!(".before-restore-{now_unix}"));
    for suffix in ["-wal", "-shm", ""] {
        let from = beside(target, suffix);
        if from.exists() {
            std::fs::rename(&from, beside(&kept, suffix))
                .map_err(|e| config(format!("cannot keep {}: {e}", from.display())))?;
        }
    }
    Ok(kept)
}

/// `path` with `suffix` appended to its file name.
fn beside(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// Flushes `file` to disk, so a rename never publishes unwritten pages.
fn sync(file: &Path) -> StoreResult<()> {
    std::fs::File::open(file)
        .and_then(|f| f.sync_all())
        .map_err(|e| config(format!("cannot flush {}: {e}", file.display())))
}

/// Makes `file` readable by this user only: a database holds digests of
/// tokens and sealed secrets.
fn private_file(file: &Path) -> StoreResult<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(file, std::fs::Permissions::from_mode(0o600))
            .map_err(|e| config(format!("cannot restrict {}: {e}", file.display())))?;
    }
    #[cfg(not(unix))]
    let _ = file;
    Ok(())
}

/// Creates `dir` (readable by this user only) when it is missing.
fn private_dir(dir: &Path) -> StoreResult<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt as _;
        builder.mode(0o700);
    }
    builder
        .create(dir)
        .map_err(|e| config(format!("cannot create {}: {e}", dir.display())))
}

fn size(file: &Path) -> u64 {
    std::fs::metadata(file).map_or(0, |m| m.len())
}

fn config(message: String) -> StoreError {
    StoreError::Config(message)
}
