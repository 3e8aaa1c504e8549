//! Form tokens against cross-site request forgery, for the HTML forms (the
//! consent page and the operator dashboard).
//!
//! A browser gets a random value in an `HttpOnly` cookie; each form carries
//! `HMAC-SHA256(key, purpose ‖ binding ‖ cookie)`, where `binding` is what
//! the form acts on (an interaction, a dashboard session). Another site can
//! neither read the cookie nor compute the token, so a POST it forges
//! carries no valid token. The key is derived from the secrets key every
//! node is given, so a form served by one node is accepted by another.

use axum::http::{header, HeaderMap};
use base64::Engine;
use hmac::{Hmac, Mac};
use opd_service::Services;
use sha2::Sha256;
use subtle::ConstantTimeEq;

type HmacSha256 = Hmac<Sha256>;

fn b64() -> base64::engine::GeneralPurpose {
    base64::engine::general_purpose::URL_SAFE_NO_PAD
}

/// A fresh random value for a cookie: 32 bytes, base64url.
pub fn random_value(services: &Services) -> String {
    let mut bytes = [0u8; 32];
    services.random.fill(&mut bytes);
    b64().encode(bytes)
}

/// The value of cookie `name` in the request, when it is present and looks
/// like one of ours (base64url, 43 characters), so that nothing else is
/// ever echoed or hashed.
pub fn cookie(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v.to_owned())
        .filter(|v| {
            v.len() == 43
                && v.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        })
}

/// A `Set-Cookie` value: `HttpOnly`, limited to `path`, `Secure` when the
/// listener's public URL is HTTPS. `max_age` in seconds (`0` deletes).
pub fn set_cookie(
    name: &str,
    value: &str,
    path: &str,
    same_site: &str,
    secure: bool,
    max_age: Option<u64>,
) -> String {
    let mut c = format!("{name}={value}; Path={path}; HttpOnly; SameSite={same_site}");
    if secure {
        c.push_str("; Secure");
    }
    if let Some(age) = max_age {
        c.push_str(&format!("; Max-Age={age}"));
    }
    c
}

/// The form token for `purpose` (e.g. `consent`), bound to `binding` and to
/// the browser's cookie value.
pub fn token(services: &Services, purpose: &str, binding: &str, cookie: &str) -> String {
    // The key's length is fixed (32 bytes): HMAC accepts any length.
    let Ok(mut mac) = HmacSha256::new_from_slice(&services.config.secrets_key.current) else {
        return String::new();
    };
    for part in ["opd form token v1", purpose, binding, cookie] {
        mac.update(&(part.len() as u64).to_be_bytes());
        mac.update(part.as_bytes());
    }
    b64().encode(mac.finalize().into_bytes())
}

/// Whether `presented` is the token for this purpose, binding and cookie
/// (compared in constant time).
pub fn verify(
    services: &Services,
    purpose: &str,
    binding: &str,
    cookie: Option<&str>,
    presented: &str,
) -> bool {
    let Some(cookie) = cookie else {
        return false;
    };
    let expected = token(services, purpose, binding, cookie);
    !expected.is_empty()
        && expected.len() == presented.len()
        && bool::from(expected.as_bytes().ct_eq(presented.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    #[test]
    fn cookies_are_read_only_when_they_look_like_ours() {
        let ours = "a".repeat(43);
        let mut h = HeaderMap::new();
        h.insert(
            header::COOKIE,
            HeaderValue::from_str(&format!("x=1; opd_consent={ours}; y=2")).unwrap(),
        );
        assert_eq!(cookie(&h, "opd_consent").as_deref(), Some(ours.as_str()));
        assert_eq!(cookie(&h, "x"), None);
        assert_eq!(cookie(&h, "missing"), None);
    }

    #[test]
    fn set_cookie_has_the_attributes() {
        assert_eq!(
            set_cookie("s", "v", "/dashboard", "Strict", true, Some(0)),
            "s=v; Path=/dashboard; HttpOnly; SameSite=Strict; Secure; Max-Age=0"
        );
    }
}
