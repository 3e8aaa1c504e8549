//! Shared helpers for the integration tests.
// `allow`, not `expect`: this module is shared by several test binaries,
// and what is dead (or unwrapped) differs from one to the next.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use base64::Engine as _;
use ed25519_dalek::Signer as _;
use http::{HeaderMap, HeaderName, HeaderValue, Method};
use opd_httpsig::{build_signature_base, RequestParts, SigningKey};

/// RFC 8037 §A.1 private key (also the Open Payments JWKS example key).
pub const RFC8037_D: &str = "nWGxne_9WmC6hEr0kuwsxERJxWl7MmkZcDusAxyuf2A";
pub const RFC8037_X: &str = "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo";
pub const KID: &str = "test-key-ed25519";
pub const CREATED: u64 = 1_700_000_000;

pub fn rfc8037_key() -> SigningKey {
    let seed: [u8; 32] = URL_SAFE_NO_PAD
        .decode(RFC8037_D)
        .unwrap()
        .try_into()
        .unwrap();
    SigningKey::from_bytes(&seed)
}

pub fn random_key() -> SigningKey {
    SigningKey::generate(&mut rand::rngs::OsRng)
}

pub fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
    let mut h = HeaderMap::new();
    for (k, v) in pairs {
        h.append(
            HeaderName::from_bytes(k.as_bytes()).unwrap(),
            HeaderValue::from_str(v).unwrap(),
        );
    }
    h
}

pub fn set(h: &mut HeaderMap, name: &str, value: &str) {
    h.insert(
        HeaderName::from_bytes(name.as_bytes()).unwrap(),
        HeaderValue::from_str(value).unwrap(),
    );
}

/// Signs an arbitrary `Signature-Input` member (label `label`, value
/// `params` which must start with the quoted component list) and sets
/// Signature-Input and Signature on `h`.
#[allow(clippy::too_many_arguments)]
pub fn sign_custom(
    method: &Method,
    uri: &str,
    h: &mut HeaderMap,
    body: Option<&[u8]>,
    key: &SigningKey,
    label: &str,
    components: &[&str],
    params: &str,
) {
    let base = {
        let req = RequestParts::new(method, uri, h, body);
        build_signature_base(&req, components, params).unwrap()
    };
    let sig = key.sign(&base);
    set(h, "signature-input", &format!("{label}={params}"));
    set(
        h,
        "signature",
        &format!("{label}=:{}:", STANDARD.encode(sig.to_bytes())),
    );
}

/// A quoted inner list: `("a" "b")`.
pub fn list(components: &[&str]) -> String {
    let q: Vec<String> = components.iter().map(|c| format!("\"{c}\"")).collect();
    format!("({})", q.join(" "))
}
