//! `GET /dashboard/pricing`: the fees outgoing payments pay and the
//! exchange rates quotes use, as set here (the admin API's, which take
//! precedence) and from the configuration file; forms to change them:
//! `POST /dashboard/fees` (set or remove one asset's fee) and
//! `POST /dashboard/rates` (one rate of a base, the base's others kept).

use std::collections::HashMap;

use askama::Template;
use axum::extract::State;
use axum::http::{StatusCode, Uri};
use axum::response::Response;
use axum::Extension;
use opd_core::{Asset, AssetCode, Fee, Rate, TenantId};
use opd_service::operator::{FeeRow as StoredFee, RateRow as StoredRate};
use opd_service::{operator, pricing, ServiceError};

use super::{done, done_message, failed, query_pairs, refusal, CheckedForm, Nav, Session, CSS};
use crate::admin::state::AdminState;
use crate::{display, pages};

/// One fee as the page lists it.
struct FeeRow {
    asset: String,
    code: String,
    scale: u8,
    fixed: String,
    share: String,
    /// `set here` or `configuration file`.
    from: &'static str,
}

/// One rate as the page lists it.
struct RateRow {
    base: String,
    counter: String,
    rate: String,
    from: &'static str,
}

#[derive(Template)]
#[template(path = "dashboard/pricing.html")]
struct PricingPage {
    page_title: &'static str,
    css_href: &'static str,
    nav: Nav,
    notice: Option<&'static str>,
    error: Option<String>,
    fees: Vec<FeeRow>,
    rates: Vec<RateRow>,
    rates_url: Option<String>,
}

/// `basis_points` as a percentage: 50 is "0.5 %".
fn percent(basis_points: u16) -> String {
    let text = display::decimal(u64::from(basis_points), 2);
    let text = text.trim_end_matches('0').trim_end_matches('.');
    format!("{text} %")
}

/// The fees set here, and those of the configuration file for the other
/// assets, by asset.
fn fee_rows(set: &[StoredFee], configured: &HashMap<Asset, Fee>) -> Vec<FeeRow> {
    let fee_row = |asset: &Asset, fee: &Fee, from| FeeRow {
        asset: format!("{} (scale {})", asset.code, asset.scale),
        code: asset.code.to_string(),
        scale: asset.scale,
        fixed: display::amount(fee.fixed, asset.code.as_str(), asset.scale),
        share: percent(fee.basis_points),
        from,
    };
    let mut fees: Vec<FeeRow> = set
        .iter()
        .map(|f| fee_row(&f.asset, &f.fee, "set here"))
        .collect();
    for (asset, fee) in configured {
        if !set.iter().any(|f| &f.asset == asset) {
            fees.push(fee_row(asset, fee, "configuration file"));
        }
    }
    fees.sort_by(|a, b| (&a.code, a.scale).cmp(&(&b.code, b.scale)));
    fees
}

/// The rates set here, and those of the configuration file for the other
/// pairs, by pair.
fn rate_rows(
    set: &[StoredRate],
    configured: &HashMap<AssetCode, HashMap<AssetCode, Rate>>,
) -> Vec<RateRow> {
    let mut rates: Vec<RateRow> = set
        .iter()
        .map(|r| RateRow {
            base: r.base.to_string(),
            counter: r.counter.to_string(),
            rate: r.rate.to_string(),
            from: "set here",
        })
        .collect();
    for (base, counters) in configured {
        for (counter, rate) in counters {
            if !set.iter().any(|r| &r.base == base && &r.counter == counter) {
                rates.push(RateRow {
                    base: base.to_string(),
                    counter: counter.to_string(),
                    rate: rate.to_string(),
                    from: "configuration file",
                });
            }
        }
    }
    rates.sort_by(|a, b| (&a.base, &a.counter).cmp(&(&b.base, &b.counter)));
    rates
}

async fn render(
    state: &AdminState,
    session: &Session,
    notice: Option<&'static str>,
    error: Option<String>,
) -> Response {
    let services = &state.app.services;
    let loaded = async {
        Ok::<_, ServiceError>((
            operator::fees(services, Some(&TenantId::operator())).await?,
            operator::rates(services).await?,
            operator::rates_url(services).await?,
        ))
    };
    let (set_fees, set_rates, rates_url) = match loaded.await {
        Ok(l) => l,
        Err(e) => return failed(e),
    };
    let config = &services.config;
    let fees = fee_rows(&set_fees, &config.fees);
    let rates = rate_rows(&set_rates, &config.rates);
    let status = if error.is_some() {
        StatusCode::BAD_REQUEST
    } else {
        StatusCode::OK
    };
    pages::render(
        status,
        &PricingPage {
            page_title: "Fees and rates",
            css_href: CSS,
            nav: Nav::new("/dashboard/pricing", session),
            notice,
            error,
            fees,
            rates,
            rates_url,
        },
    )
}

pub(crate) async fn page(
    State(state): State<AdminState>,
    Extension(session): Extension<Session>,
    uri: Uri,
) -> Response {
    render(&state, &session, done_message(&query_pairs(&uri)), None).await
}

/// A refused form: the page again with why (client mistakes), or the
/// failure page (the server's).
async fn refused(state: &AdminState, form: &CheckedForm, e: ServiceError) -> Response {
    match refusal(e) {
        Ok(why) => render(state, &form.session, None, Some(why)).await,
        Err(e) => failed(e),
    }
}

/// `POST /dashboard/fees` `{asset_code, asset_scale, fixed, percent, remove}`:
/// sets one asset's fee (fixed in the asset's units, the share in percent
/// with up to two decimals), or removes it.
pub(crate) async fn set_fee(State(state): State<AdminState>, form: CheckedForm) -> Response {
    let invalid = |m: String| ServiceError::InvalidRequest(m);
    let asset = form
        .field("asset_scale")
        .trim()
        .parse::<i64>()
        .map_err(|_| invalid("The asset scale is a whole number from 0 to 255.".into()))
        .and_then(|scale| {
            Asset::parse(form.field("asset_code").trim(), scale)
                .map_err(|e| invalid(format!("Asset: {e}.")))
        });
    let asset = match asset {
        Ok(a) => a,
        Err(e) => return refused(&state, &form, e).await,
    };
    if form.field("remove") == "yes" {
        return match pricing::set_fee(&state.app.services, &TenantId::operator(), &asset, None)
            .await
        {
            Ok(()) => done("/dashboard/pricing", "fee_removed"),
            Err(e) => refused(&state, &form, e).await,
        };
    }
    let fixed = match form.field("fixed").trim() {
        "" => Some(0),
        text => display::parse_decimal(text, asset.scale),
    };
    let share = match form.field("percent").trim() {
        "" => Some(0),
        text => display::parse_decimal(text, 2).and_then(|bp| u16::try_from(bp).ok()),
    };
    let fee = match (fixed, share) {
        (Some(fixed), Some(bp)) => Fee::new(fixed, bp).map_err(|e| invalid(e.to_string())),
        (None, _) => Err(invalid(format!(
            "The fixed part is not an amount in {}.",
            asset.code
        ))),
        (_, None) => Err(invalid(
            "The share is a percentage from 0 to 100, such as 0.5.".into(),
        )),
    };
    let result = match fee {
        Ok(fee) => {
            pricing::set_fee(
                &state.app.services,
                &TenantId::operator(),
                &asset,
                Some(fee),
            )
            .await
        }
        Err(e) => Err(e),
    };
    match result {
        Ok(()) => done("/dashboard/pricing", "fee_set"),
        Err(e) => refused(&state, &form, e).await,
    }
}

/// `POST /dashboard/rates` `{base, counter, rate}`: sets one rate (an empty
/// rate removes it); the base's other rates are kept.
pub(crate) async fn set_rate(State(state): State<AdminState>, form: CheckedForm) -> Response {
    let services = &state.app.services;
    let parsed = (|| {
        let invalid = |m: String| ServiceError::InvalidRequest(m);
        let base = AssetCode::parse(form.field("base").trim())
            .map_err(|e| invalid(format!("Base: {e}.")))?;
        let counter = AssetCode::parse(form.field("counter").trim())
            .map_err(|e| invalid(format!("Counter: {e}.")))?;
        let rate = match form.field("rate").trim() {
            "" => None,
            text => Some(Rate::parse(text).map_err(|e| invalid(format!("Rate: {e}.")))?),
        };
        Ok::<_, ServiceError>((base, counter, rate))
    })();
    let (base, counter, rate) = match parsed {
        Ok(p) => p,
        Err(e) => return refused(&state, &form, e).await,
    };
    let removed = rate.is_none();
    match pricing::set_rate(services, &base, &counter, rate).await {
        Ok(_) if removed => done("/dashboard/pricing", "rate_removed"),
        Ok(_) => done("/dashboard/pricing", "rate_set"),
        Err(e) => refused(&state, &form, e).await,
    }
}
