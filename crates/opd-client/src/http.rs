//! Requests to Open Payments servers: signed exactly like the official
//! Node client (`opd_httpsig::sign_request`), JSON in and out, and a
//! server's error answer kept whole (status, code, description) so the
//! user sees what the server said, its text made inert for a terminal
//! ([`Untrusted`]). Servers are reached over rustls, trusting the
//! platform's trust store, the compiled-in public roots and the
//! authorities of `--ca-file`; a refused certificate is named (not
//! trusted, expired, another host's) as the server names it.

use std::sync::Arc;
use std::time::Duration;

use opd_core::certificates::CertificateProblem;
use opd_core::untrusted::Untrusted;
use opd_httpsig::signed_request_headers;
use reqwest::header::{HeaderMap, HeaderValue, ACCEPT};
use reqwest::{Method, StatusCode};
use serde_json::Value;

use crate::grants::KeptGrants;
use crate::profile::Profile;

/// How long one request may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// What went wrong talking to a server.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The server answered with an error: one line, then its `details`
    /// (why, what is available and required, ...), one per line; what the
    /// server wrote shown inert.
    #[error(
        "{method} {}: {status} {}: {}{}",
        Untrusted(.url),
        Untrusted(.code),
        Untrusted(.description),
        details_text(.details)
    )]
    Server {
        method: Method,
        url: String,
        status: StatusCode,
        code: String,
        description: String,
        /// The error's `details`, when the server gave some (boxed: the
        /// error travels by value through every call).
        details: Option<Box<Value>>,
    },
    /// No answer: refused, timed out, a refused certificate, not HTTP.
    #[error("{method} {}: {reason}", Untrusted(.url))]
    Transport {
        method: Method,
        url: String,
        reason: String,
    },
    /// An answer this client cannot use: one line, which may quote the
    /// server (shown inert).
    #[error("{}", Untrusted(.0))]
    Unexpected(String),
}

impl ClientError {
    /// The server's status, when it answered.
    pub fn status(&self) -> Option<StatusCode> {
        match self {
            Self::Server { status, .. } => Some(*status),
            _ => None,
        }
    }
}

/// A client identity and an HTTP client.
#[derive(Debug, Clone)]
pub struct Client {
    pub profile: Profile,
    http: reqwest::Client,
    /// The grants it reuses: for this process only unless
    /// [`keeping_grants`](Self::keeping_grants) says where.
    pub kept: Arc<KeptGrants>,
}

impl Client {
    /// A client for `profile`, trusting the authorities of `extra_roots`
    /// (a PEM bundle, `--ca-file`) besides the platform's trust store
    /// (`SSL_CERT_FILE` honoured) and the compiled-in public roots.
    pub fn new(profile: Profile, extra_roots: Option<&[u8]>) -> anyhow::Result<Self> {
        // rustls whatever else the build links: certificate errors are
        // read from it.
        let mut builder = reqwest::Client::builder()
            .use_rustls_tls()
            .timeout(REQUEST_TIMEOUT)
            .user_agent(concat!("opd-client/", env!("CARGO_PKG_VERSION")));
        if let Some(pem) = extra_roots {
            let roots = reqwest::Certificate::from_pem_bundle(pem)
                .map_err(|e| anyhow::anyhow!("the CA file cannot be read as PEM: {e}"))?;
            anyhow::ensure!(!roots.is_empty(), "the CA file holds no certificate");
            for root in roots {
                builder = builder.add_root_certificate(root);
            }
        }
        Ok(Self {
            profile,
            http: builder.build()?,
            kept: Arc::default(),
        })
    }

    /// The same client, reusing `kept` grants (those of its profile file).
    pub fn keeping_grants(self, kept: KeptGrants) -> Self {
        Self {
            kept: Arc::new(kept),
            ..self
        }
    }

    /// A client sending through `http` instead of its own HTTP client (the
    /// tests pass one going through a recording proxy).
    pub fn with_http(profile: Profile, http: reqwest::Client) -> Self {
        Self {
            profile,
            http,
            kept: Arc::default(),
        }
    }

    /// An unsigned `GET` (wallet address documents, public incoming
    /// payment views).
    pub async fn get_public(&self, url: &str) -> Result<Value, ClientError> {
        Ok(self
            .exchange(Method::GET, url, HeaderMap::new(), None)
            .await?
            .0)
    }

    /// A signed request, with `Authorization: GNAP <token>` when a token is
    /// given and `body` sent as compact JSON.
    pub async fn signed(
        &self,
        method: Method,
        url: &str,
        token: Option<&str>,
        body: Option<&Value>,
    ) -> Result<Value, ClientError> {
        Ok(self.signed_with_headers(method, url, token, body).await?.0)
    }

    /// Like [`signed`](Self::signed), with the answer's headers.
    pub async fn signed_with_headers(
        &self,
        method: Method,
        url: &str,
        token: Option<&str>,
        body: Option<&Value>,
    ) -> Result<(Value, HeaderMap), ClientError> {
        let unexpected = |e: &dyn std::fmt::Display| ClientError::Unexpected(e.to_string());
        let bytes = body
            .map(serde_json::to_vec)
            .transpose()
            .map_err(|e| unexpected(&e))?;
        let created = time::OffsetDateTime::now_utc().unix_timestamp();
        let headers = signed_request_headers(
            &method,
            url,
            token,
            bytes.as_deref(),
            self.profile.key(),
            &self.profile.key_id,
            u64::try_from(created).unwrap_or_default(),
        )
        .map_err(|e| unexpected(&e))?;
        self.exchange(method, url, headers, bytes).await
    }

    async fn exchange(
        &self,
        method: Method,
        url: &str,
        mut headers: HeaderMap,
        body: Option<Vec<u8>>,
    ) -> Result<(Value, HeaderMap), ClientError> {
        headers.insert(ACCEPT, HeaderValue::from_static("application/json"));
        let mut req = self.http.request(method.clone(), url).headers(headers);
        if let Some(b) = body {
            req = req.body(b);
        }
        let transport = |e: reqwest::Error| ClientError::Transport {
            method: method.clone(),
            url: url.to_owned(),
            reason: describe_transport(&e),
        };
        let resp = req.send().await.map_err(transport)?;
        let status = resp.status();
        let answer_headers = resp.headers().clone();
        let text = resp.text().await.map_err(transport)?;
        let json: Option<Value> = serde_json::from_str(&text).ok();
        if status.is_success() {
            return match json {
                Some(v) => Ok((v, answer_headers)),
                None if text.trim().is_empty() => Ok((Value::Null, answer_headers)),
                None => Err(ClientError::Unexpected(format!(
                    "{method} {url}: {status} with a body that is not JSON"
                ))),
            };
        }
        let (code, description) = json
            .as_ref()
            .map(error_of)
            .unwrap_or_else(|| (status_code_name(status), short(&text)));
        let details = json
            .as_ref()
            .map(|v| v["error"]["details"].clone())
            .filter(|d| d.is_object())
            .map(Box::new);
        Err(ClientError::Server {
            method,
            url: url.to_owned(),
            status,
            code,
            description,
            details,
        })
    }
}

/// `(code, description)` of an error body in any of the shapes servers
/// use: `{"error":{"code","description"}}` (opd, GNAP),
/// `{"error":"code","error_description"}`, `{"message"}`.
fn error_of(body: &Value) -> (String, String) {
    let text = |v: &Value| v.as_str().map(str::to_owned);
    let e = &body["error"];
    let code = text(&e["code"])
        .or_else(|| text(e))
        .or_else(|| text(&body["code"]))
        .unwrap_or_else(|| "error".into());
    let description = text(&e["description"])
        .or_else(|| text(&body["error_description"]))
        .or_else(|| text(&body["message"]))
        .unwrap_or_default();
    (code, description)
}

/// An error's `details`, one per line and indented, amounts in their
/// asset's units (`12.34 USD`): what a person reads under the error.
fn details_text(details: &Option<Box<Value>>) -> String {
    let Some(Value::Object(map)) = details.as_deref() else {
        return String::new();
    };
    let mut out = String::new();
    for (key, value) in map {
        let shown = match crate::amount::Amount::from_json(value) {
            Some(amount) => amount.to_string(),
            None => match value {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            },
        };
        out.push_str(&format!("\n  {}: {}", Untrusted(key), Untrusted(&shown)));
    }
    out
}

fn status_code_name(status: StatusCode) -> String {
    status
        .canonical_reason()
        .unwrap_or("error")
        .to_lowercase()
        .replace(' ', "_")
}

fn short(text: &str) -> String {
    text.chars().take(200).collect()
}

/// Why no answer came, in terms a person acts on: a refused certificate
/// named (with how to trust a private authority), a timeout, or the
/// connection's own cause.
fn describe_transport(e: &reqwest::Error) -> String {
    if let Some(problem) = CertificateProblem::in_chain(e) {
        let hint = match problem {
            CertificateProblem::NotTrusted => {
                " (a private authority is trusted with --ca-file or OPD_CA_FILE)"
            }
            _ => "",
        };
        return format!("the server's TLS {problem}{hint}");
    }
    if e.is_timeout() {
        return "no answer in time".into();
    }
    // The chain holds the cause (refused, reset, DNS).
    let mut causes = Vec::new();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        causes.push(s.to_string());
        source = s.source();
    }
    if e.is_connect() {
        match causes.last() {
            Some(root) => format!("cannot connect: {root}"),
            None => "cannot connect".into(),
        }
    } else {
        std::iter::once(e.to_string())
            .chain(causes)
            .collect::<Vec<_>>()
            .join(": ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn details_are_shown_one_per_line_with_amounts_in_units() {
        let details = Some(Box::new(json!({
            "reason": "the destination address is not allowed",
            "available": { "value": "8766", "assetCode": "USD", "assetScale": 2 },
        })));
        assert_eq!(
            details_text(&details),
            "\n  available: 87.66 USD\n  reason: the destination address is not allowed"
        );
        assert_eq!(details_text(&None), "");
    }

    #[test]
    fn a_servers_error_is_shown_inert() {
        let e = ClientError::Server {
            method: Method::GET,
            url: "https://w.example/\u{1b}[2J".into(),
            status: StatusCode::BAD_REQUEST,
            code: "bad\u{202e}".into(),
            description: "no\nerror: fake".into(),
            details: Some(Box::new(json!({ "why\u{1b}[1A": "x\u{9b}y" }))),
        };
        assert_eq!(
            e.to_string(),
            "GET https://w.example/[U+001B][2J: 400 Bad Request bad[U+202E]: no[U+000A]error: fake\n  why[U+001B][1A: x[U+009B]y"
        );
    }

    #[test]
    fn reads_every_error_shape() {
        assert_eq!(
            error_of(
                &json!({ "error": { "code": "invalid_receiver", "description": "invalid receiver" } })
            ),
            ("invalid_receiver".into(), "invalid receiver".into())
        );
        assert_eq!(
            error_of(&json!({ "error": "invalid_client", "error_description": "unknown key" })),
            ("invalid_client".into(), "unknown key".into())
        );
        assert_eq!(
            error_of(&json!({ "message": "Not Found" })),
            ("error".into(), "Not Found".into())
        );
    }
}
