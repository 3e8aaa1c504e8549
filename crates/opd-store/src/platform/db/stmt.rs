//! SQL statements, each declared once in a portable dialect and translated
//! to a backend's dialect the first time it runs there: `?` placeholders;
//! `?::numeric` / `?::uuid` mark parameters PostgreSQL must cast (SQLite
//! ignores the marks); `FOR UPDATE` and `FOR UPDATE SKIP LOCKED` are
//! PostgreSQL-only (SQLite has one writer and needs no row locks).

use std::sync::OnceLock;

use crate::Backend;

/// One SQL statement, declared once (`static X: Stmt = Stmt::new(&[..])`)
/// from parts that are joined, then translated once per dialect.
#[derive(Debug)]
pub(crate) struct Stmt {
    parts: &'static [&'static str],
    sqlite: OnceLock<String>,
    postgres: OnceLock<String>,
}

impl Stmt {
    pub(crate) const fn new(parts: &'static [&'static str]) -> Self {
        Self {
            parts,
            sqlite: OnceLock::new(),
            postgres: OnceLock::new(),
        }
    }

    /// The statement in `backend`'s dialect.
    pub(crate) fn sql(&self, backend: Backend) -> &str {
        let cell = match backend {
            Backend::Sqlite => &self.sqlite,
            Backend::Postgres => &self.postgres,
        };
        cell.get_or_init(|| translate(&self.parts.concat(), backend))
    }
}

/// Rewrites portable SQL for one dialect: `?` becomes `$n` on PostgreSQL
/// (keeping a `::type` cast after it); SQLite drops the casts and the row
/// locks. Quoted text is copied as it is.
pub(crate) fn translate(sql: &str, backend: Backend) -> String {
    let postgres = backend == Backend::Postgres;
    let unlocked;
    let mut sql = sql.trim_end();
    if !postgres {
        unlocked = sql
            .replace(" FOR UPDATE SKIP LOCKED", "")
            .replace(" FOR UPDATE", "");
        sql = &unlocked;
    }
    let mut out = String::with_capacity(sql.len() + 16);
    let mut n = 0;
    let mut in_quote = false;
    let mut chars = sql.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\'' {
            in_quote = !in_quote;
        }
        if c != '?' || in_quote {
            out.push(c);
            continue;
        }
        n += 1;
        let mut cast = String::new();
        let mut ahead = chars.clone();
        if ahead.next() == Some(':') && ahead.next() == Some(':') {
            chars.next();
            chars.next();
            while let Some(&a) = chars.peek() {
                if !(a.is_ascii_alphanumeric() || a == '_') {
                    break;
                }
                cast.push(a);
                chars.next();
            }
        }
        if postgres {
            out.push('$');
            out.push_str(&n.to_string());
            if !cast.is_empty() {
                out.push_str("::");
                out.push_str(&cast);
            }
        } else {
            out.push('?');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_per_dialect() {
        let s = "UPDATE t SET a = ?::numeric, b = ? WHERE id = ?::uuid AND c = '?'";
        assert_eq!(
            translate(s, Backend::Postgres),
            "UPDATE t SET a = $1::numeric, b = $2 WHERE id = $3::uuid AND c = '?'"
        );
        assert_eq!(
            translate(s, Backend::Sqlite),
            "UPDATE t SET a = ?, b = ? WHERE id = ? AND c = '?'"
        );
    }

    #[test]
    fn row_locks_are_postgres_only() {
        let s = "SELECT id FROM t WHERE a = ? LIMIT 1 FOR UPDATE SKIP LOCKED";
        assert_eq!(
            translate(s, Backend::Postgres),
            "SELECT id FROM t WHERE a = $1 LIMIT 1 FOR UPDATE SKIP LOCKED"
        );
        assert_eq!(
            translate(s, Backend::Sqlite),
            "SELECT id FROM t WHERE a = ? LIMIT 1"
        );
        assert_eq!(
            translate("SELECT 1 FROM t FOR UPDATE", Backend::Sqlite),
            "SELECT 1 FROM t"
        );
        assert_eq!(
            translate(
                "UPDATE t SET a = ? WHERE id IN (SELECT id FROM t LIMIT ? FOR UPDATE SKIP LOCKED)",
                Backend::Sqlite
            ),
            "UPDATE t SET a = ? WHERE id IN (SELECT id FROM t LIMIT ?)"
        );
    }

    #[test]
    fn statements_are_translated_once() {
        static S: Stmt = Stmt::new(&["SELECT ", "a FROM t WHERE b = ?::uuid"]);
        let first = S.sql(Backend::Postgres) as *const str;
        assert_eq!(
            S.sql(Backend::Postgres),
            "SELECT a FROM t WHERE b = $1::uuid"
        );
        assert_eq!(first, S.sql(Backend::Postgres) as *const str);
        assert_eq!(S.sql(Backend::Sqlite), "SELECT a FROM t WHERE b = ?");
    }
}
