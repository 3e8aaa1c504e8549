//! The one wire error of the HTTP layer: `{"error": {"code", "description",
//! "details"?}}` with a stable snake_case `code`. `ServiceError` maps to it
//! exactly once, here. Codes are listed in `docs/errors.md`.

use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use opd_core::AmountWire;
use opd_service::ServiceError;
use serde_json::{json, Map, Value};

/// An error response.
#[derive(Debug, Clone)]
pub struct ApiError {
    pub status: StatusCode,
    pub code: &'static str,
    pub description: String,
    pub details: Option<Map<String, Value>>,
    /// `WWW-Authenticate` for 401s: `GNAP as_uri=<authorization server>`.
    pub www_authenticate: Option<String>,
    /// `Retry-After` seconds (429s, 503s).
    pub retry_after: Option<u32>,
}

impl ApiError {
    /// 503 `service_unavailable`: the database cannot be reached. Clients
    /// back off (`Retry-After: 1`) and come back once it can.
    pub fn unavailable() -> Self {
        let mut e = Self::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "service_unavailable",
            "the database is unavailable; try again later",
        );
        e.retry_after = Some(1);
        e
    }

    pub fn new(status: StatusCode, code: &'static str, description: impl Into<String>) -> Self {
        Self {
            status,
            code,
            description: description.into(),
            details: None,
            www_authenticate: None,
            retry_after: None,
        }
    }

    pub fn with_detail(mut self, key: &str, value: Value) -> Self {
        self.details
            .get_or_insert_with(Map::new)
            .insert(key.to_owned(), value);
        self
    }

    /// The description deployed Open Payments clients match exactly when
    /// an outgoing payment is refused for its grant or its balance:
    /// `unauthorized` (they then mark the wallet out of funds for the
    /// grant). The reason stays in the details; other errors are left as
    /// they are.
    pub fn as_clients_expect(mut self) -> Self {
        if matches!(self.code, "insufficient_balance" | "insufficient_grant") {
            self.description = "unauthorized".into();
        }
        self
    }

    pub fn invalid_request(description: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "invalid_request", description)
    }

    pub fn not_found(what: &str) -> Self {
        Self::new(
            StatusCode::NOT_FOUND,
            "not_found",
            format!("{what} not found"),
        )
    }

    pub fn internal() -> Self {
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal_error",
            "internal server error",
        )
    }
}

impl From<ServiceError> for ApiError {
    fn from(e: ServiceError) -> Self {
        use ServiceError as S;
        let bad =
            |code, description: String| ApiError::new(StatusCode::BAD_REQUEST, code, description);
        match e {
            S::InvalidRequest(m) => ApiError::invalid_request(m),
            e @ S::MetadataTooLarge { .. } => bad("metadata_too_large", e.to_string()),
            S::InvalidAmount(m) => bad("invalid_amount", m),
            S::InvalidExpiry(m) => bad("invalid_expiry", m),
            // Deployed clients match this description exactly.
            S::InvalidReceiver(reason) => bad("invalid_receiver", "invalid receiver".into())
                .with_detail("reason", Value::String(reason)),
            S::NonPositiveReceiveAmount { min_send_amount } => non_positive(min_send_amount),
            S::NoExchangeRate { .. } => bad("no_exchange_rate", e.to_string()),
            S::InsufficientExchangeRate => bad("insufficient_exchange_rate", e.to_string()),
            S::RatesUnavailable(_) => {
                tracing::warn!(error = %e, "exchange rates unavailable");
                rates_unavailable()
            }
            S::AmountOverflow => bad("amount_overflow", e.to_string()),
            S::UnknownWalletAddress => {
                let unknown = "unknown wallet address";
                ApiError::new(StatusCode::NOT_FOUND, "unknown_wallet_address", unknown)
            }
            S::InactiveWalletAddress => {
                bad("inactive_wallet_address", "inactive wallet address".into())
            }
            S::NotFound(what) => ApiError::not_found(what),
            S::InvalidQuote(m) => bad("invalid_quote", m),
            S::Forbidden { code, message } => {
                ApiError::new(StatusCode::FORBIDDEN, code, message.clone())
                    .with_detail("reason", Value::String(message))
            }
            S::InsufficientBalance {
                available,
                required,
            } => insufficient_balance(&available, &required),
            S::Conflict { code, message } => ApiError::new(StatusCode::CONFLICT, code, message),
            // One answer for every refusal, whatever the reason (logged).
            S::PeeringRefused(reason) => {
                tracing::info!(%reason, "auto-peering request refused");
                let refused = "the peering request was refused";
                ApiError::new(StatusCode::FORBIDDEN, "peering_refused", refused)
            }
            S::PeeringFailed(m) => ApiError::new(StatusCode::BAD_GATEWAY, "peering_failed", m),
            S::PeeringQuotaReached => {
                let full = "this server accepts no more peering requests";
                ApiError::new(StatusCode::FORBIDDEN, "peering_quota_reached", full)
            }
            S::RateLimited {
                message,
                retry_after_secs,
            } => rate_limited(message, retry_after_secs),
            S::Unavailable(m) => {
                tracing::error!(error = %m, "database unavailable");
                ApiError::unavailable()
            }
            S::StorageFull(m) => {
                tracing::error!(error = %m, "the database's disk is full; writes are refused");
                storage_full()
            }
            S::Internal(m) => {
                tracing::error!(error = %m, "internal failure");
                ApiError::internal()
            }
        }
    }
}

/// 400 `non_positive_receive_amount`, with the least amount that would
/// deliver something when there is one.
fn non_positive(min_send_amount: Option<opd_core::Amount>) -> ApiError {
    let e = ApiError::new(
        StatusCode::BAD_REQUEST,
        "non_positive_receive_amount",
        "non-positive receive amount",
    );
    match min_send_amount {
        Some(a) => e.with_detail("minSendAmount", json!(AmountWire::from(&a))),
        None => e,
    }
}

/// 503 `rates_unavailable`: the rates service cannot be reached; clients
/// come back in a second.
fn rates_unavailable() -> ApiError {
    let mut e = ApiError::new(
        StatusCode::SERVICE_UNAVAILABLE,
        "rates_unavailable",
        "exchange rates are unavailable; try again later",
    );
    e.retry_after = Some(1);
    e
}

/// 403 `insufficient_balance`, both amounts in the details.
fn insufficient_balance(available: &opd_core::Amount, required: &opd_core::Amount) -> ApiError {
    let reason = "the wallet address's balance does not cover the amount";
    ApiError::new(StatusCode::FORBIDDEN, "insufficient_balance", reason)
        .with_detail("reason", Value::String(reason.into()))
        .with_detail("available", json!(AmountWire::from(available)))
        .with_detail("required", json!(AmountWire::from(required)))
}

/// 429 `too_many_requests`, retried after at least a second.
fn rate_limited(message: String, retry_after_secs: u32) -> ApiError {
    let mut e = ApiError::new(StatusCode::TOO_MANY_REQUESTS, "too_many_requests", message);
    e.retry_after = Some(retry_after_secs.max(1));
    e
}

/// 507 `insufficient_storage`: the database's disk is full.
fn storage_full() -> ApiError {
    ApiError::new(
        StatusCode::INSUFFICIENT_STORAGE,
        "insufficient_storage",
        "the server's storage is full; nothing of this request was saved",
    )
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut error = Map::new();
        error.insert("code".into(), Value::String(self.code.to_owned()));
        error.insert("description".into(), Value::String(self.description));
        if let Some(d) = self.details {
            error.insert("details".into(), Value::Object(d));
        }
        let body = json!({ "error": error }).to_string();
        let mut response = (self.status, body).into_response();
        response.headers_mut().insert(
            axum::http::header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        if let Some(secs) = self.retry_after {
            response
                .headers_mut()
                .insert(axum::http::header::RETRY_AFTER, HeaderValue::from(secs));
        }
        if let Some(v) = self
            .www_authenticate
            .and_then(|v| HeaderValue::from_str(&v).ok())
        {
            response
                .headers_mut()
                .insert(axum::http::header::WWW_AUTHENTICATE, v);
        }
        response
    }
}

/// The result of every handler.
pub type ApiResult<T> = Result<T, ApiError>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unavailable_answers_say_when_to_come_back() {
        for e in [
            ServiceError::Unavailable("pool timed out".into()),
            ServiceError::RatesUnavailable("503".into()),
        ] {
            let api = ApiError::from(e);
            assert_eq!(api.status, StatusCode::SERVICE_UNAVAILABLE);
            assert_eq!(api.retry_after, Some(1));
            assert!(
                !api.description.contains("pool"),
                "no internals: {}",
                api.description
            );
        }
    }

    #[test]
    fn an_out_of_funds_refusal_says_why_and_says_unauthorized_only_where_clients_match_it() {
        let usd = opd_core::Asset::parse("USD", 2).unwrap();
        let refusal = || ServiceError::InsufficientBalance {
            available: opd_core::Amount::new(499, usd.clone()),
            required: opd_core::Amount::new(500, usd.clone()),
        };
        let for_people = ApiError::from(refusal());
        assert_eq!(
            for_people.description,
            "the wallet address's balance does not cover the amount"
        );
        let for_clients = ApiError::from(refusal()).as_clients_expect();
        assert_eq!(for_clients.description, "unauthorized");
        assert_eq!(
            for_clients.details.unwrap()["reason"],
            "the wallet address's balance does not cover the amount"
        );
        let other = ApiError::from(ServiceError::UnknownWalletAddress).as_clients_expect();
        assert_eq!(other.description, "unknown wallet address");
    }
}
