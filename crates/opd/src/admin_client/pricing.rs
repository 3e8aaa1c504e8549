//! `opd rate ...` and `opd fee ...`, meaning what the dashboard's forms
//! mean: `rate set` sets one rate of a base and keeps its others
//! (`PUT /rates/{base}/{counter}`, the service call the dashboard makes);
//! a fee's share is a percentage with up to two decimals (`--percent 1.5`,
//! stored as 150 basis points).

use anyhow::Context;
use reqwest::Method;
use serde_json::{json, Value};

use super::render::{self, typed, Asset};
use super::{encode_segment, minor, AdminClient, Answer};
use crate::cli::{FeeAsset, FeeCommand, RateCommand};

/// `/rates/{base}/{counter}`.
fn rate_path(base: &str, counter: &str) -> String {
    format!(
        "/rates/{}/{}",
        encode_segment(base),
        encode_segment(counter)
    )
}

/// `/fees/{code}/{scale}`.
fn fee_path(asset: &FeeAsset) -> String {
    format!(
        "/fees/{}/{}",
        encode_segment(&asset.asset_code),
        asset.asset_scale
    )
}

/// A share in percent with up to two decimals (`1.5`) in basis points
/// (150), from 0 to 100 %: as the dashboard reads it.
pub(crate) fn basis_points(percent: &str) -> anyhow::Result<u16> {
    let refused = || {
        anyhow::anyhow!(
            "--percent {percent:?}: a percentage from 0 to 100 with at most two decimals, such as 1.5"
        )
    };
    let bp = opd_core::decimal::parse_decimal(percent.trim(), 2).map_err(|_| refused())?;
    u16::try_from(bp)
        .ok()
        .filter(|bp| *bp <= 10_000)
        .ok_or_else(refused)
}

/// `GET /rates` as lines: `1 USD = 0.9 EUR` each, then the rates URL.
fn rate_lines(answer: &Value) -> Vec<String> {
    let mut lines = Vec::new();
    for (base, counters) in answer["rates"].as_object().into_iter().flatten() {
        for (counter, rate) in counters.as_object().into_iter().flatten() {
            lines.push(format!(
                "1 {} = {} {}",
                typed(base),
                render::text(rate),
                typed(counter)
            ));
        }
    }
    if let Some(url) = render::optional(&answer["ratesUrl"]) {
        lines.push(format!("rates URL: {url}"));
    }
    if lines.is_empty() {
        lines.push("no rates set".to_owned());
    }
    lines
}

impl AdminClient {
    pub async fn rate(&self, cmd: RateCommand) -> anyhow::Result<Answer> {
        match cmd {
            RateCommand::Set {
                base,
                counter,
                rate,
            } => {
                let rate = opd_core::Rate::parse(rate.trim())
                    .with_context(|| format!("{rate:?} is not a rate, such as 0.9"))?
                    .to_string();
                let body = json!({ "rate": rate });
                self.call(Method::PUT, &rate_path(&base, &counter), Some(body))
                    .await?;
                let line = format!("rate set: 1 {} = {rate} {}", typed(&base), typed(&counter));
                let done = json!({ "base": base, "counter": counter, "rate": rate });
                Ok(Answer::line(done, line))
            }
            RateCommand::Delete { base, counter } => {
                self.call(Method::DELETE, &rate_path(&base, &counter), None)
                    .await?;
                let line = format!("rate removed: {} to {}", typed(&base), typed(&counter));
                let done = json!({ "deleted": { "base": base, "counter": counter } });
                Ok(Answer::line(done, line))
            }
            RateCommand::List => {
                let answer = self.call(Method::GET, "/rates", None).await?;
                let lines = rate_lines(&answer);
                Ok(Answer::new(answer, lines))
            }
        }
    }

    pub async fn fee(&self, cmd: FeeCommand) -> anyhow::Result<Answer> {
        match cmd {
            FeeCommand::Set {
                asset,
                fixed,
                minor_units,
                percent,
            } => {
                let fixed = if minor_units {
                    minor(&fixed)?
                } else {
                    opd_core::decimal::parse_decimal(fixed.trim(), asset.asset_scale)
                        .with_context(|| format!("--fixed {fixed:?}"))?
                };
                let bp = basis_points(&percent)?;
                let body = json!({ "fixed": fixed.to_string(), "basisPoints": bp });
                self.call(Method::PUT, &fee_path(&asset), Some(body))
                    .await?;
                let shown = Asset::new(&asset.asset_code, asset.asset_scale);
                let line = format!("fee set: {}", shown.fee(fixed, u64::from(bp)));
                let done = json!({
                    "assetCode": asset.asset_code,
                    "assetScale": asset.asset_scale,
                    "fixed": fixed.to_string(),
                    "basisPoints": bp,
                });
                Ok(Answer::line(done, line))
            }
            FeeCommand::List => {
                let fees = self.call(Method::GET, "/fees", None).await?;
                let lines = render::list(&fees, "no fees set", render::fee);
                Ok(Answer::new(fees, lines))
            }
            FeeCommand::Delete { asset } => {
                self.call(Method::DELETE, &fee_path(&asset), None).await?;
                let shown = Asset::new(&asset.asset_code, asset.asset_scale);
                let done = json!({
                    "deleted": { "assetCode": asset.asset_code, "assetScale": asset.asset_scale }
                });
                Ok(Answer::line(
                    done,
                    format!("fee removed: {}", shown.describe()),
                ))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_are_read_in_percent_as_the_dashboard_reads_them() {
        for (typed, bp) in [
            ("0", 0),
            ("1.5", 150),
            ("0.5", 50),
            ("0.05", 5),
            ("100", 10_000),
            (" 12.50 ", 1250),
        ] {
            assert_eq!(basis_points(typed).unwrap(), bp, "{typed}");
        }
        for bad in ["100.01", "1.555", "-1", "1,5", "", "x"] {
            assert!(basis_points(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn rates_are_listed_one_pair_a_line() {
        let answer = json!({ "rates": { "USD": { "EUR": "0.9", "GBP": "0.8" } } });
        assert_eq!(rate_lines(&answer), ["1 USD = 0.9 EUR", "1 USD = 0.8 GBP"]);
        assert_eq!(rate_lines(&json!({ "rates": {} })), ["no rates set"]);
    }
}
