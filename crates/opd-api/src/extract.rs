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

/// An HTML form's fields, sent `application/x-www-form-urlencoded` or
/// `multipart/form-data` (a form with a file input, whose file is read as
/// text, within the body limit). Fields with the same name keep their
/// order; unreadable input is an empty form, which every page refuses for
/// its missing token.
#[derive(Debug, Default)]
pub struct FormFields(pub Vec<(String, String)>);

impl FormFields {
    /// The value of field `name` (empty when absent).
    pub fn field(&self, name: &str) -> String {
        self.0
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
            .unwrap_or_default()
    }

    /// The first of the fields `names` that is not blank (a key pasted,
    /// else its file): empty when none is given.
    pub fn first_given(&self, names: &[&str]) -> String {
        names
            .iter()
            .map(|n| self.field(n))
            .find(|v| !v.trim().is_empty())
            .unwrap_or_default()
    }

    /// The fields of a urlencoded body.
    pub fn urlencoded(body: &[u8]) -> Self {
        Self(url::form_urlencoded::parse(body).into_owned().collect())
    }
}

impl<S: Send + Sync> FromRequest<S> for FormFields {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        let multipart = req
            .headers()
            .get(axum::http::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("multipart/form-data"));
        if !multipart {
            let RawBody(body) = RawBody::from_request(req, state).await?;
            return Ok(Self::urlencoded(&body));
        }
        let Ok(mut parts) = axum::extract::Multipart::from_request(req, state).await else {
            return Ok(Self::default());
        };
        let mut fields = Vec::new();
        while let Ok(Some(part)) = parts.next_field().await {
            let name = part.name().unwrap_or_default().to_owned();
            match part.text().await {
                Ok(text) => fields.push((name, text)),
                Err(e) if e.status() == axum::http::StatusCode::PAYLOAD_TOO_LARGE => {
                    return Err(payload_too_large())
                }
                Err(_) => return Ok(Self::default()),
            }
        }
        Ok(Self(fields))
    }
}
