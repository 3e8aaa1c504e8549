//! Decoding helpers shared by both backends: stored text and integers back
//! into domain types, failing with `Corrupt` instead of panicking.

use opd_core::money::parse_u64_canonical;
use opd_core::{Asset, Rate};
use uuid::Uuid;

use crate::StoreError;

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
