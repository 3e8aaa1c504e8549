//! Signing requests exactly like the official Node client
//! (`@interledger/http-signature-utils` 2.x `createHeaders`).
//!
//! - label `sig1`;
//! - components `"@method" "@target-uri"`, then `"authorization"` if the
//!   request has an Authorization header, then
//!   `"content-digest" "content-length" "content-type"` if the body is
//!   non-empty;
//! - parameters `;keyid="<kid>";created=<unix seconds>` (no `alg`,
//!   `expires`, `nonce` or `tag`);
//! - `Signature: sig1=:<base64>:`;
//! - with a body: `Content-Digest: sha-512=:<base64>:`,
//!   `Content-Length: <byte length>`, `Content-Type: application/json`.
//!
//! Ed25519 is deterministic, so for the same key, request and `created` the
//! output is byte-identical to the Node client's.

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use ed25519_dalek::{Signer as _, SigningKey};
use http::header::{HeaderName, HeaderValue, InvalidHeaderValue};
use http::{HeaderMap, Method};

use crate::base::{build_signature_base, RequestParts};
use crate::digest::content_digest;
use crate::error::SigError;
use crate::sf;

/// The label the Node client (and rafiki's verifier) uses.
pub const SIGNATURE_LABEL: &str = "sig1";

/// The Content-Type the Node client sets and signs for every body.
pub const JSON_CONTENT_TYPE: &str = "application/json";

/// Header values to add to a request produced by [`sign_request`].
///
/// Add them *after* signing with [`SignedHeaders::apply_to`] (which
/// replaces any existing values): the content headers are part of the
/// signature, so the request must carry exactly these values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignedHeaders {
    /// `Signature-Input` value, e.g.
    /// `sig1=("@method" "@target-uri");keyid="k";created=1700000000`.
    pub signature_input: String,
    /// `Signature` value, `sig1=:<base64>:`.
    pub signature: String,
    /// `Content-Digest` value (`sha-512=:<base64>:`) when there is a body.
    pub content_digest: Option<String>,
    /// `Content-Length` value (the body's byte length) when there is a body.
    pub content_length: Option<String>,
    /// `Content-Type` value (`application/json`) when there is a body.
    pub content_type: Option<String>,
}

impl SignedHeaders {
    /// The headers as `(name, value)` pairs, in the order
    /// Content-Digest, Content-Length, Content-Type, Signature,
    /// Signature-Input (absent ones skipped).
    pub fn pairs(&self) -> Vec<(&'static str, &str)> {
        let mut out = Vec::with_capacity(5);
        if let Some(v) = &self.content_digest {
            out.push(("content-digest", v.as_str()));
        }
        if let Some(v) = &self.content_length {
            out.push(("content-length", v.as_str()));
        }
        if let Some(v) = &self.content_type {
            out.push(("content-type", v.as_str()));
        }
        out.push(("signature", self.signature.as_str()));
        out.push(("signature-input", self.signature_input.as_str()));
        out
    }

    /// Inserts every header into `headers`, replacing existing values.
    /// Cannot fail for output of [`sign_request`]; the error exists only
    /// because the fields are public and could have been edited.
    pub fn apply_to(&self, headers: &mut HeaderMap) -> Result<(), InvalidHeaderValue> {
        for (name, value) in self.pairs() {
            headers.insert(HeaderName::from_static(name), HeaderValue::from_str(value)?);
        }
        Ok(())
    }
}

/// The headers of a signed Open Payments request, as the official clients
/// send them: `Authorization: GNAP <token>` when there is a token, then the
/// signature over it and, with a body, the body's digest, length and type
/// (see [`sign_request`]). Every client opd has (its own requests to other
/// servers, `opd client`, the test kit) builds its requests here.
pub fn signed_request_headers(
    method: &Method,
    target_uri: &str,
    gnap_token: Option<&str>,
    body: Option<&[u8]>,
    key: &SigningKey,
    kid: &str,
    created: u64,
) -> Result<HeaderMap, SigError> {
    let malformed = |reason: &str| SigError::MalformedHeader {
        header: "Authorization",
        reason: reason.to_owned(),
    };
    let mut headers = HeaderMap::new();
    if let Some(token) = gnap_token {
        let value = HeaderValue::from_str(&format!("GNAP {token}"))
            .map_err(|_| malformed("the token is not a header value"))?;
        headers.insert(http::header::AUTHORIZATION, value);
    }
    sign_request(method, target_uri, &headers, body, key, kid, created)?
        .apply_to(&mut headers)
        .map_err(|_| SigError::MalformedHeader {
            header: "Signature",
            reason: "not a header value".to_owned(),
        })?;
    Ok(headers)
}

/// Signs a request the way the Node Open Payments client does.
///
/// - `target_uri` is the full URL as sent (the Node client uses the WHATWG
///   serialisation, so a bare origin has a trailing `/`);
/// - `headers` are the request's headers *before* signing; only
///   `Authorization` is read from them (Content-Digest, Content-Length and
///   Content-Type are computed here when `body` is non-empty and override
///   whatever `headers` has);
/// - `body` must be the exact bytes that will be sent (the Node client
///   sends compact JSON); `Some(&[])` is treated as no body;
/// - `created` is the unix time in seconds.
///
/// Fails only with [`SigError::InvalidKeyId`] (empty `kid`, or characters
/// outside printable ASCII, which cannot be written in the header), or
/// with an error from building the base if the `authorization` header
/// value is unusable (it never is for values an `HeaderMap` holds).
pub fn sign_request(
    method: &Method,
    target_uri: &str,
    headers: &HeaderMap,
    body: Option<&[u8]>,
    key: &SigningKey,
    kid: &str,
    created: u64,
) -> Result<SignedHeaders, SigError> {
    if kid.is_empty() {
        return Err(SigError::InvalidKeyId);
    }
    let kid_sf = sf::serialize_string(kid).ok_or(SigError::InvalidKeyId)?;
    let body = body.filter(|b| !b.is_empty());

    // Only the headers that can be covered matter for the base.
    let mut signed = HeaderMap::new();
    let mut components = vec!["@method", "@target-uri"];
    for auth in headers.get_all(http::header::AUTHORIZATION) {
        signed.append(http::header::AUTHORIZATION, auth.clone());
    }
    if signed.contains_key(http::header::AUTHORIZATION) {
        components.push("authorization");
    }
    let content = body.map(|b| (content_digest(b), b.len().to_string()));
    if let Some((digest, length)) = &content {
        for (name, value) in [
            ("content-digest", digest.as_str()),
            ("content-length", length.as_str()),
            ("content-type", JSON_CONTENT_TYPE),
        ] {
            // These values are ASCII digits, base64 and fixed text.
            let value = HeaderValue::from_str(value)
                .map_err(|_| SigError::ComponentNotPresent(name.into()))?;
            signed.insert(HeaderName::from_static(name), value);
        }
        components.extend(["content-digest", "content-length", "content-type"]);
    }

    let list: Vec<String> = components.iter().map(|c| format!("\"{c}\"")).collect();
    let params = format!("({});keyid={kid_sf};created={created}", list.join(" "));
    let req = RequestParts::new(method, target_uri, &signed, body);
    let base = build_signature_base(&req, &components, &params)?;
    let signature = key.sign(&base);

    let (content_digest, content_length) = match content {
        Some((d, l)) => (Some(d), Some(l)),
        None => (None, None),
    };
    Ok(SignedHeaders {
        signature_input: format!("{SIGNATURE_LABEL}={params}"),
        signature: format!(
            "{SIGNATURE_LABEL}=:{}:",
            STANDARD.encode(signature.to_bytes())
        ),
        content_type: content_length
            .as_ref()
            .map(|_| JSON_CONTENT_TYPE.to_owned()),
        content_digest,
        content_length,
    })
}
