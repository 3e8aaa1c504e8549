//! GNAP error codes and the error value every fallible function of this
//! crate returns.
//!
//! The codes are the ones the Open Payments auth server spec
//! (`auth-server.yaml`) and the reference server use. Each [`GnapError`]
//! also carries the HTTP status the reference server answers with in that
//! situation, so the HTTP layer can render it without a lookup table of its
//! own: `{"error":{"code":…,"description":…}}` (see [`GnapError::to_response`]).

use std::fmt;

use serde::{Deserialize, Serialize};

/// A GNAP error code as sent in `error.code`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GnapErrorCode {
    /// The request is malformed or asks for something impossible.
    InvalidRequest,
    /// The client could not be identified or authenticated, or is not
    /// allowed to make this request (e.g. a JWK client asking for an
    /// interactive grant).
    InvalidClient,
    /// The interaction is unknown, expired or in the wrong state.
    InvalidInteraction,
    /// The access token could not be rotated.
    InvalidRotation,
    /// The continuation request does not match a live grant.
    InvalidContinuation,
    /// The resource owner denied the request.
    UserDenied,
    /// The request was denied for a reason not covered by another code.
    RequestDenied,
    /// The interaction reference is unknown.
    UnknownInteraction,
    /// The client continued before `wait` seconds had passed.
    TooFast,
    /// The client asked too often, or has too many grants waiting for a
    /// decision (RFC 9635 `too_many_attempts`); sent with 429.
    TooManyAttempts,
}

impl GnapErrorCode {
    /// Every code, in declaration order.
    pub const ALL: [GnapErrorCode; 10] = [
        Self::InvalidRequest,
        Self::InvalidClient,
        Self::InvalidInteraction,
        Self::InvalidRotation,
        Self::InvalidContinuation,
        Self::UserDenied,
        Self::RequestDenied,
        Self::UnknownInteraction,
        Self::TooFast,
        Self::TooManyAttempts,
    ];

    /// The wire form, e.g. `invalid_request`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::InvalidRequest => "invalid_request",
            Self::InvalidClient => "invalid_client",
            Self::InvalidInteraction => "invalid_interaction",
            Self::InvalidRotation => "invalid_rotation",
            Self::InvalidContinuation => "invalid_continuation",
            Self::UserDenied => "user_denied",
            Self::RequestDenied => "request_denied",
            Self::UnknownInteraction => "unknown_interaction",
            Self::TooFast => "too_fast",
            Self::TooManyAttempts => "too_many_attempts",
        }
    }

    /// Parses the wire form.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.as_str() == s)
    }

    /// The HTTP status usually sent with this code. Situations that use a
    /// different status build their error with [`GnapError::with_status`].
    pub const fn default_status(self) -> u16 {
        match self {
            Self::InvalidRequest | Self::InvalidInteraction | Self::TooFast => 400,
            Self::InvalidClient
            | Self::InvalidContinuation
            | Self::UserDenied
            | Self::RequestDenied => 401,
            Self::InvalidRotation | Self::UnknownInteraction => 404,
            Self::TooManyAttempts => 429,
        }
    }
}

impl fmt::Display for GnapErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A GNAP error: code, human description and the HTTP status to send.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{code}: {description}")]
pub struct GnapError {
    /// The GNAP code.
    pub code: GnapErrorCode,
    /// A human-readable description (safe to show to the client).
    pub description: String,
    /// The HTTP status to answer with.
    pub status: u16,
}

impl GnapError {
    /// An error with the code's [default status](GnapErrorCode::default_status).
    pub fn new(code: GnapErrorCode, description: impl Into<String>) -> Self {
        Self {
            code,
            description: description.into(),
            status: code.default_status(),
        }
    }

    /// `invalid_request` (400).
    pub fn invalid_request(description: impl Into<String>) -> Self {
        Self::new(GnapErrorCode::InvalidRequest, description)
    }

    /// `invalid_client` (401; use [`with_status`](Self::with_status) for 400).
    pub fn invalid_client(description: impl Into<String>) -> Self {
        Self::new(GnapErrorCode::InvalidClient, description)
    }

    /// `request_denied` (401).
    pub fn request_denied(description: impl Into<String>) -> Self {
        Self::new(GnapErrorCode::RequestDenied, description)
    }

    /// `invalid_continuation` (401; the reference server uses 404 when the
    /// interaction reference does not match).
    pub fn invalid_continuation(description: impl Into<String>) -> Self {
        Self::new(GnapErrorCode::InvalidContinuation, description)
    }

    /// `too_fast` (400).
    pub fn too_fast(description: impl Into<String>) -> Self {
        Self::new(GnapErrorCode::TooFast, description)
    }

    /// The same error with another HTTP status.
    #[must_use]
    pub fn with_status(mut self, status: u16) -> Self {
        self.status = status;
        self
    }

    /// The JSON body: `{"error":{"code":…,"description":…}}`.
    pub fn to_response(&self) -> ErrorResponse {
        ErrorResponse {
            error: ErrorBody {
                code: self.code.as_str().to_owned(),
                description: self.description.clone(),
            },
        }
    }
}

/// The JSON error body of the auth server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorResponse {
    /// The error.
    pub error: ErrorBody,
}

/// The `error` member of [`ErrorResponse`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorBody {
    /// A GNAP error code ([`GnapErrorCode::as_str`]).
    pub code: String,
    /// A human-readable description.
    pub description: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip_and_render() {
        for c in GnapErrorCode::ALL {
            assert_eq!(GnapErrorCode::parse(c.as_str()), Some(c));
        }
        assert_eq!(GnapErrorCode::parse("nope"), None);
        let e = GnapError::too_fast("wait 5 s");
        assert_eq!(e.status, 400);
        assert_eq!(e.to_string(), "too_fast: wait 5 s");
        let body = serde_json::to_value(e.to_response()).unwrap_or_default();
        assert_eq!(
            body,
            serde_json::json!({"error":{"code":"too_fast","description":"wait 5 s"}})
        );
        assert_eq!(GnapError::invalid_client("x").with_status(400).status, 400);
    }
}
