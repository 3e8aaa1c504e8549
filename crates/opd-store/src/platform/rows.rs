//! Decoding shared by both backends: the column reads ([`Columns`]) and
//! the conversions every decoder uses (both schemas read back as the same
//! text and integer columns), failing with `Corrupt` instead of panicking.
//! Each area decodes its own rows.

use opd_core::money::parse_u64_canonical;
use opd_core::{Asset, Rate, Timestamp};
use uuid::Uuid;

use crate::{StoreError, StoreResult};

/// The column reads the decoders need, for either backend's rows.
pub(crate) trait Columns {
    fn text(&self, col: &str) -> StoreResult<String>;
    fn opt_text(&self, col: &str) -> StoreResult<Option<String>>;
    fn int(&self, col: &str) -> StoreResult<i64>;
    fn opt_int(&self, col: &str) -> StoreResult<Option<i64>>;
    fn flag(&self, col: &str) -> StoreResult<bool>;
}

pub(crate) fn id(row: &impl Columns, col: &str) -> StoreResult<Uuid> {
    uuid_from_text(&row.text(col)?)
}

pub(crate) fn time(row: &impl Columns, col: &str) -> StoreResult<Timestamp> {
    Ok(Timestamp::from_unix_millis(row.int(col)?))
}

pub(crate) fn opt_time(row: &impl Columns, col: &str) -> StoreResult<Option<Timestamp>> {
    Ok(row.opt_int(col)?.map(Timestamp::from_unix_millis))
}

pub(crate) fn corrupt(what: &str) -> StoreError {
    StoreError::Corrupt(what.to_owned())
}

pub(crate) fn u64_from_text(s: &str, what: &str) -> Result<u64, StoreError> {
    parse_u64_canonical(s).map_err(|_| corrupt(what))
}

pub(crate) fn opt_u64_from_text(s: Option<String>, what: &str) -> Result<Option<u64>, StoreError> {
    s.map(|s| u64_from_text(&s, what)).transpose()
}

pub(crate) fn asset(code: &str, scale: i64) -> Result<Asset, StoreError> {
    Asset::parse(code, scale).map_err(|_| corrupt("asset"))
}

pub(crate) fn rate(s: &str) -> Result<Rate, StoreError> {
    Rate::parse(s).map_err(|_| corrupt("exchange rate"))
}

pub(crate) fn uuid_from_text(s: &str) -> Result<Uuid, StoreError> {
    Uuid::try_parse(s).map_err(|_| corrupt("id"))
}

pub(crate) fn metadata_from_text(
    s: Option<String>,
) -> Result<Option<serde_json::Map<String, serde_json::Value>>, StoreError> {
    s.map(|s| serde_json::from_str(&s).map_err(|_| corrupt("metadata")))
        .transpose()
}

pub(crate) fn metadata_to_text(
    m: &Option<serde_json::Map<String, serde_json::Value>>,
) -> Option<String> {
    m.as_ref()
        .map(|m| serde_json::Value::Object(m.clone()).to_string())
}
