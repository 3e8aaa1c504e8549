//! The request description and the RFC 9421 §2.5 signature base.
//!
//! Each covered component contributes a line `"<name>": <value>`; lines are
//! joined with `\n` and the last line is `"@signature-params": <params>`,
//! with no trailing newline.
//!
//! Supported components (none with component parameters such as `;sf`):
//! - `@method`: the method, upper-cased;
//! - `@target-uri`: the target URI string exactly as given;
//! - `@authority`: host (lower-cased) and port, default port omitted;
//! - `@scheme`: lower-cased scheme;
//! - `@path`: the path, `/` when empty;
//! - `@query`: `?` plus the query, or `?` alone when there is none;
//! - `@request-target`: path plus `?query` when there is a query;
//! - any lower-case header name: each field line value trimmed of
//!   SP/HTAB, multiple lines joined with `", "`.

use http::{HeaderMap, Method, Uri};

use crate::error::SigError;

/// What the verifier (or signer) needs to know about a request.
#[derive(Debug, Clone, Copy)]
pub struct RequestParts<'a> {
    /// The request method.
    pub method: &'a Method,
    /// The full target URI as the client saw it, e.g.
    /// `https://rs.example/incoming-payments/123?x=1`. It is used verbatim for
    /// `@target-uri`, so a server behind a proxy must rebuild the public
    /// scheme and host here.
    pub target_uri: &'a str,
    /// The request headers.
    pub headers: &'a HeaderMap,
    /// The raw body bytes, if any. `Some(&[])` is treated like `None`.
    pub body: Option<&'a [u8]>,
}

impl<'a> RequestParts<'a> {
    /// Bundles the parts of a request.
    pub fn new(
        method: &'a Method,
        target_uri: &'a str,
        headers: &'a HeaderMap,
        body: Option<&'a [u8]>,
    ) -> Self {
        RequestParts {
            method,
            target_uri,
            headers,
            body,
        }
    }

    /// True when the request has a non-empty body.
    pub fn has_body(&self) -> bool {
        self.body.is_some_and(|b| !b.is_empty())
    }
}

/// The combined value of all field lines named `name`, each trimmed of
/// SP/HTAB and joined with `", "`, or `None` if the header is absent.
pub(crate) fn combined_header(headers: &HeaderMap, name: &str) -> Option<Vec<u8>> {
    let mut values = headers.get_all(name).iter().peekable();
    values.peek()?;
    let mut out = Vec::new();
    for (i, v) in values.enumerate() {
        if i > 0 {
            out.extend_from_slice(b", ");
        }
        out.extend_from_slice(v.as_bytes().trim_ascii_sp_tab());
    }
    Some(out)
}

trait TrimSpTab {
    fn trim_ascii_sp_tab(&self) -> &[u8];
}

impl TrimSpTab for [u8] {
    fn trim_ascii_sp_tab(&self) -> &[u8] {
        let is_ws = |c: &u8| *c == b' ' || *c == b'\t';
        let start = self.iter().position(|c| !is_ws(c)).unwrap_or(self.len());
        let end = self
            .iter()
            .rposition(|c| !is_ws(c))
            .map_or(start, |e| e + 1);
        self.get(start..end).unwrap_or_default()
    }
}

fn parse_uri(target: &str) -> Result<Uri, SigError> {
    let uri: Uri = target.parse().map_err(|_| SigError::InvalidTargetUri)?;
    if uri.scheme().is_none() || uri.authority().is_none() {
        return Err(SigError::InvalidTargetUri);
    }
    Ok(uri)
}

fn path_of(uri: &Uri) -> &str {
    match uri.path() {
        "" => "/",
        p => p,
    }
}

fn authority_of(uri: &Uri) -> Result<String, SigError> {
    let authority = uri.authority().ok_or(SigError::InvalidTargetUri)?.as_str();
    // Drop any userinfo.
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, hp)| hp);
    let host_port = host_port.to_ascii_lowercase();
    let default_port = match uri.scheme_str().map(str::to_ascii_lowercase).as_deref() {
        Some("https") => Some(":443"),
        Some("http") => Some(":80"),
        _ => None,
    };
    if let Some(port) = default_port {
        if let Some(host) = host_port.strip_suffix(port) {
            return Ok(host.to_owned());
        }
    }
    Ok(host_port)
}

/// The canonical value of one covered component.
fn component_value(req: &RequestParts<'_>, name: &str) -> Result<Vec<u8>, SigError> {
    let value = match name {
        "@method" => req.method.as_str().to_ascii_uppercase(),
        "@target-uri" => req.target_uri.to_owned(),
        "@authority" => authority_of(&parse_uri(req.target_uri)?)?,
        "@scheme" => parse_uri(req.target_uri)?
            .scheme_str()
            .unwrap_or_default()
            .to_ascii_lowercase(),
        "@path" => path_of(&parse_uri(req.target_uri)?).to_owned(),
        "@query" => match parse_uri(req.target_uri)?.query() {
            Some(q) => format!("?{q}"),
            None => "?".to_owned(),
        },
        "@request-target" => {
            let uri = parse_uri(req.target_uri)?;
            match uri.query() {
                Some(q) => format!("{}?{q}", path_of(&uri)),
                None => path_of(&uri).to_owned(),
            }
        }
        _ if name.starts_with('@') => {
            return Err(SigError::UnsupportedComponent(name.to_owned()));
        }
        _ => {
            let valid = !name.is_empty()
                && name == name.to_ascii_lowercase()
                && http::HeaderName::from_bytes(name.as_bytes()).is_ok();
            if !valid {
                return Err(SigError::UnsupportedComponent(name.to_owned()));
            }
            return combined_header(req.headers, name)
                .ok_or_else(|| SigError::ComponentNotPresent(name.to_owned()));
        }
    };
    Ok(value.into_bytes())
}

/// Builds the RFC 9421 §2.5 signature base.
///
/// `components` are component names without quotes (`@method`,
/// `content-digest`, ...), in signing order; `signature_params` is the exact
/// text to place after `"@signature-params": ` (the Signature-Input member
/// value without its label). The result is bytes because header values may
/// contain obs-text.
///
/// Errors: [`SigError::UnsupportedComponent`] for unknown derived
/// components, upper-case, invalid, duplicate or `@signature-params` names;
/// [`SigError::ComponentNotPresent`] for a header the request lacks;
/// [`SigError::InvalidTargetUri`] when a URI-derived component is asked for
/// and the target URI does not parse as an absolute URI.
pub fn build_signature_base<S: AsRef<str>>(
    req: &RequestParts<'_>,
    components: &[S],
    signature_params: &str,
) -> Result<Vec<u8>, SigError> {
    let mut base = Vec::new();
    for (i, c) in components.iter().enumerate() {
        let name = c.as_ref();
        if name == "@signature-params" || components[..i].iter().any(|p| p.as_ref() == name) {
            return Err(SigError::UnsupportedComponent(name.to_owned()));
        }
        let value = component_value(req, name)?;
        base.push(b'"');
        base.extend_from_slice(name.as_bytes());
        base.extend_from_slice(b"\": ");
        base.extend_from_slice(&value);
        base.push(b'\n');
    }
    base.extend_from_slice(b"\"@signature-params\": ");
    base.extend_from_slice(signature_params.as_bytes());
    Ok(base)
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(*k, HeaderValue::from_static(v));
        }
        h
    }

    fn value(target: &str, name: &str) -> Result<String, SigError> {
        let h = headers(&[("x-multi", " a "), ("x-multi", "b\t"), ("x-empty", "")]);
        let req = RequestParts::new(&Method::POST, target, &h, None);
        component_value(&req, name).map(|v| String::from_utf8(v).unwrap())
    }

    #[test]
    fn derived_components() {
        let t = "https://Example.COM:443/foo/bar?param=Value&Pet=dog";
        assert_eq!(value(t, "@method").unwrap(), "POST");
        assert_eq!(value(t, "@target-uri").unwrap(), t);
        assert_eq!(value(t, "@authority").unwrap(), "example.com");
        assert_eq!(value(t, "@scheme").unwrap(), "https");
        assert_eq!(value(t, "@path").unwrap(), "/foo/bar");
        assert_eq!(value(t, "@query").unwrap(), "?param=Value&Pet=dog");
        assert_eq!(
            value(t, "@request-target").unwrap(),
            "/foo/bar?param=Value&Pet=dog"
        );
        let t = "http://user@host.example:8080";
        assert_eq!(value(t, "@authority").unwrap(), "host.example:8080");
        assert_eq!(value(t, "@path").unwrap(), "/");
        assert_eq!(value(t, "@query").unwrap(), "?");
        assert_eq!(value(t, "@request-target").unwrap(), "/");
        assert_eq!(
            value("http://h.example:80/x", "@authority").unwrap(),
            "h.example"
        );
    }

    #[test]
    fn header_components() {
        let t = "https://h.example/";
        assert_eq!(value(t, "x-multi").unwrap(), "a, b");
        assert_eq!(value(t, "x-empty").unwrap(), "");
        assert_eq!(
            value(t, "x-absent"),
            Err(SigError::ComponentNotPresent("x-absent".into()))
        );
        assert_eq!(
            value(t, "X-Multi"),
            Err(SigError::UnsupportedComponent("X-Multi".into()))
        );
        assert_eq!(
            value(t, "@status"),
            Err(SigError::UnsupportedComponent("@status".into()))
        );
        assert_eq!(value("not a uri", "@path"), Err(SigError::InvalidTargetUri));
        assert_eq!(
            value("/relative", "@authority"),
            Err(SigError::InvalidTargetUri)
        );
        // @target-uri never needs parsing.
        assert_eq!(value("not a uri", "@target-uri").unwrap(), "not a uri");
    }

    #[test]
    fn base_layout_and_duplicates() {
        let h = headers(&[("authorization", "GNAP t")]);
        let req = RequestParts::new(&Method::GET, "https://h.example/", &h, None);
        let base =
            build_signature_base(&req, &["@method", "authorization"], "(\"@method\")").unwrap();
        assert_eq!(
            base,
            b"\"@method\": GET\n\"authorization\": GNAP t\n\"@signature-params\": (\"@method\")"
        );
        assert_eq!(
            build_signature_base(&req, &["@method", "@method"], ""),
            Err(SigError::UnsupportedComponent("@method".into()))
        );
        assert_eq!(
            build_signature_base(&req, &["@signature-params"], ""),
            Err(SigError::UnsupportedComponent("@signature-params".into()))
        );
    }
}
