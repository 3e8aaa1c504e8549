//! Statement parameters: typed values both drivers bind.

use opd_core::Timestamp;

/// A statement parameter. Amounts travel as text (`num`) and are cast to
/// `NUMERIC` by the statement, so no value passes through a float or a
/// signed integer; nulls keep their type so PostgreSQL can infer it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Param {
    Int(Option<i64>),
    Text(Option<String>),
    Bool(bool),
}

/// Bound by SQLite as it is, borrowed: text is never copied to be sent.
impl rusqlite::ToSql for Param {
    fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
        match self {
            Param::Int(v) => v.to_sql(),
            Param::Text(v) => v.to_sql(),
            Param::Bool(v) => v.to_sql(),
        }
    }
}

/// An amount (or any u64) for a `?::numeric` parameter.
pub(crate) fn num(value: u64) -> Param {
    Param::Text(Some(value.to_string()))
}

impl From<i64> for Param {
    fn from(v: i64) -> Self {
        Param::Int(Some(v))
    }
}
impl From<Option<i64>> for Param {
    fn from(v: Option<i64>) -> Self {
        Param::Int(v)
    }
}
impl From<u8> for Param {
    fn from(v: u8) -> Self {
        Param::Int(Some(i64::from(v)))
    }
}
impl From<u16> for Param {
    fn from(v: u16) -> Self {
        Param::Int(Some(i64::from(v)))
    }
}
impl From<bool> for Param {
    fn from(v: bool) -> Self {
        Param::Bool(v)
    }
}
impl From<&str> for Param {
    fn from(v: &str) -> Self {
        Param::Text(Some(v.to_owned()))
    }
}
impl From<String> for Param {
    fn from(v: String) -> Self {
        Param::Text(Some(v))
    }
}
impl From<&String> for Param {
    fn from(v: &String) -> Self {
        Param::Text(Some(v.clone()))
    }
}
impl From<Option<&str>> for Param {
    fn from(v: Option<&str>) -> Self {
        Param::Text(v.map(str::to_owned))
    }
}
impl From<&Option<String>> for Param {
    fn from(v: &Option<String>) -> Self {
        Param::Text(v.clone())
    }
}
impl From<Option<String>> for Param {
    fn from(v: Option<String>) -> Self {
        Param::Text(v)
    }
}
impl From<Timestamp> for Param {
    fn from(v: Timestamp) -> Self {
        Param::Int(Some(v.unix_millis()))
    }
}
impl From<Option<Timestamp>> for Param {
    fn from(v: Option<Timestamp>) -> Self {
        Param::Int(v.map(Timestamp::unix_millis))
    }
}

/// `params![a, b, c]`: the parameters of one statement, each converted
/// with `Param::from`.
macro_rules! params {
    ($($p:expr),* $(,)?) => {
        &[$($crate::platform::db::Param::from($p)),*]
    };
}
pub(crate) use params;
