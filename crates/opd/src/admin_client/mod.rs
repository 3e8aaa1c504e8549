//! The admin helpers' HTTP client: talks to a running server's admin API
//! with the admin token from `--admin-token`/`OPD_ADMIN_TOKEN` or the data
//! directory, and answers each helper with the API's JSON (for `--json`)
//! and text for people ([`Answer`]), amounts in their asset's units.
//!
//! By area: wallet addresses and their money (`wallets`), their keys
//! (`keys`), peers (`peers`), fees and exchange rates (`pricing`), tenants
//! (`tenants`); `render` writes the text.

use anyhow::{bail, Context};
use opd_core::untrusted::Untrusted;
use secrecy::{ExposeSecret, SecretString};
use serde_json::Value;

use crate::config::CommonArgs;

mod keys;
mod password;
mod peers;
mod pricing;
mod render;
mod tenants;
mod wallets;

/// A client of the admin API.
#[derive(Debug)]
pub struct AdminClient {
    base: String,
    token: SecretString,
    http: reqwest::Client,
}

/// An admin helper's answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    /// What `--json` prints: the admin API's answer, or for an answer
    /// without a body (`204`) what was done, such as `{"deleted": id}`.
    pub json: Value,
    /// What is printed for people: at least one line, amounts in their
    /// asset's units, every text of the server's made inert.
    pub lines: Vec<String>,
}

impl Answer {
    fn new(json: Value, lines: Vec<String>) -> Self {
        Self { json, lines }
    }

    fn line(json: Value, line: String) -> Self {
        Self::new(json, vec![line])
    }
}

/// `s` as one path segment.
fn encode_segment(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

impl AdminClient {
    pub fn new(common: &CommonArgs) -> anyhow::Result<Self> {
        let addr = common.admin_listen;
        let token = match &common.admin_token {
            Some(t) => t.clone(),
            None => {
                let path = common.data_dir.join("admin-token");
                std::fs::read_to_string(&path)
                    .with_context(|| {
                        format!("no admin token: pass --admin-token, set OPD_ADMIN_TOKEN, or run where {} exists", path.display())
                    })?
                    .trim()
                    .into()
            }
        };
        let base = common
            .admin_url
            .clone()
            .unwrap_or_else(|| format!("http://{addr}"))
            .trim_end_matches('/')
            .to_owned();
        Ok(Self {
            base,
            token,
            http: reqwest::Client::new(),
        })
    }

    async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> anyhow::Result<Value> {
        let mut req = self
            .http
            .request(method, format!("{}{path}", self.base))
            .bearer_auth(self.token.expose_secret());
        if let Some(b) = body {
            req = req.json(&b);
        }
        let resp = req
            .send()
            .await
            .with_context(|| format!("cannot reach the admin API at {}", self.base))?;
        let status = resp.status();
        let text = resp.text().await?;
        let value: Value = if text.is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&text).unwrap_or(Value::String(text))
        };
        if status == reqwest::StatusCode::UNAUTHORIZED {
            bail!(
                "the admin API at {} refused the admin token: give that server's token with --admin-token (or OPD_ADMIN_TOKEN), or --data-dir of that server (its admin-token file); --admin-url names another server",
                self.base
            );
        }
        if !status.is_success() {
            bail!(refusal(status, &value));
        }
        Ok(value)
    }
}

/// The admin API's refusal, inert: whatever the server wrote, its code and
/// description on one line, then one line per detail.
fn refusal(status: reqwest::StatusCode, value: &Value) -> String {
    let error = &value["error"];
    let code = error["code"].as_str().unwrap_or("error");
    let description = error["description"].as_str().unwrap_or_default();
    let mut message = format!(
        "admin API: {} {}: {}",
        status.as_u16(),
        Untrusted(code),
        Untrusted(description)
    );
    if let Some(details) = error["details"].as_object() {
        for (k, v) in details {
            let shown = v.as_str().map_or_else(|| v.to_string(), str::to_owned);
            message.push_str(&format!("\n  {}: {}", Untrusted(k), Untrusted(&shown)));
        }
    }
    message
}

/// `text` in minor units: a decimal at `scale`, or with `minor_units` an
/// integer of minor units; `flag` names it in errors.
fn units(text: &str, scale: Option<u8>, minor_units: bool, flag: &str) -> anyhow::Result<u64> {
    if minor_units {
        return minor(text);
    }
    let scale = scale.ok_or_else(|| {
        anyhow::anyhow!("{flag} in the asset's units needs --asset-scale (or give --minor-units)")
    })?;
    opd_core::decimal::parse_decimal(text.trim(), scale).with_context(|| format!("{flag} {text:?}"))
}

/// `text` as an integer of minor units (`--minor-units`).
fn minor(text: &str) -> anyhow::Result<u64> {
    opd_core::money::parse_u64_canonical(text.trim()).map_err(|_| {
        anyhow::anyhow!(
            "{text:?} is not an integer of minor units (drop --minor-units to write 1.50)"
        )
    })
}

/// The body of a deposit or withdrawal.
fn move_body(amount: u64, key: Option<String>) -> Value {
    let key = key.unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
    serde_json::json!({ "amount": amount.to_string(), "idempotencyKey": key })
}
