//! Request extractors that turn every malformed input into an `ApiError`
//! (never axum's plain-text rejections).

use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use serde::de::DeserializeOwned;

use crate::error::ApiError;

/// The largest request body accepted (larger ones get a 413 from the body
/// limit layer).
pub const MAX_BODY_BYTES: usize = 64 * 1024;

/// A JSON body parsed into `T` (which should `deny_unknown_fields`). The
/// raw bytes are kept for signature verification.
#[derive(Debug)]
pub struct JsonBody<T> {
    pub value: T,
    pub raw: Bytes,
}

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for JsonBody<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        let raw = Bytes::from_request(req, state).await.map_err(|e| {
            if e.status() == axum::http::StatusCode::PAYLOAD_TOO_LARGE {
                payload_too_large()
            } else {
                ApiError::invalid_request(format!("cannot read the request body: {e}"))
            }
        })?;
        let value = parse_json(&raw)?;
        Ok(Self { value, raw })
    }
}

pub fn payload_too_large() -> ApiError {
    ApiError::new(
        axum::http::StatusCode::PAYLOAD_TOO_LARGE,
        "payload_too_large",
        format!("the request body is larger than {MAX_BODY_BYTES} bytes"),
    )
}

/// Parses JSON, telling malformed JSON apart from a body of the wrong shape.
pub fn parse_json<T: DeserializeOwned>(raw: &[u8]) -> Result<T, ApiError> {
    serde_json::from_slice(raw).map_err(|e| {
        use serde_json::error::Category;
        match e.classify() {
            Category::Syntax | Category::Eof | Category::Io => ApiError::new(
                axum::http::StatusCode::BAD_REQUEST,
                "invalid_json",
                format!("the body is not valid JSON: {e}"),
            ),
            Category::Data => ApiError::invalid_request(format!("invalid request body: {e}")),
        }
    })
}

/// The decoded query string as ordered pairs.
#[derive(Debug, Default)]
pub struct QueryPairs(pub Vec<(String, String)>);

impl QueryPairs {
    /// The value of a parameter given at most once.
    pub fn single(&self, name: &str) -> Result<Option<&str>, ApiError> {
        let mut found = self
            .0
            .iter()
            .filter(|(k, _)| k == name)
            .map(|(_, v)| v.as_str());
        let first = found.next();
        if found.next().is_some() {
            return Err(ApiError::invalid_request(format!(
                "query parameter {name} given more than once"
            )));
        }
        Ok(first)
    }
}

impl<S: Send + Sync> FromRequestParts<S> for QueryPairs {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ApiError> {
        let q = parts.uri.query().unwrap_or_default();
        Ok(Self(
            url::form_urlencoded::parse(q.as_bytes())
                .into_owned()
                .collect(),
        ))
    }
}

pub use opd_core::requests::non_null;

/// The single path parameter of a route, with bad encodings as a JSON 404
/// (the resource cannot exist).
#[derive(Debug)]
pub struct PathParam(pub String);

impl<S: Send + Sync> FromRequestParts<S> for PathParam {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        axum::extract::Path::<String>::from_request_parts(parts, state)
            .await
            .map(|p| Self(p.0))
            .map_err(|_| ApiError::not_found("resource"))
    }
}

/// Two path parameters, as `PathParam`.
#[derive(Debug)]
pub struct PathParams2(pub String, pub String);

impl<S: Send + Sync> FromRequestParts<S> for PathParams2 {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        axum::extract::Path::<(String, String)>::from_request_parts(parts, state)
            .await
            .map(|p| Self(p.0 .0, p.0 .1))
            .map_err(|_| ApiError::not_found("resource"))
    }
}

/// The raw request body, with an over-large body as a JSON 413.
#[derive(Debug)]
pub struct RawBody(pub Bytes);

impl<S: Send + Sync> FromRequest<S> for RawBody {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        Bytes::from_request(req, state)
            .await
            .map(Self)
            .map_err(|e| {
                if e.status() == axum::http::StatusCode::PAYLOAD_TOO_LARGE {
                    payload_too_large()
                } else {
                    ApiError::invalid_request(format!("cannot read the request body: {e}"))
                }
            })
    }
}
