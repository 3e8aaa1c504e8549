//! SPSP on wallet addresses (Interledger RFC 9, as the reference server
//! serves it): `GET <wallet address>` asking for `application/spsp4+json`
//! answers STREAM credentials for paying the wallet address by its payment
//! pointer, `{destination_account, shared_secret, receipts_enabled}`, with
//! `Content-Type: application/spsp4+json`; with `Receipt-Nonce` (16 bytes,
//! base64) and `Receipt-Secret` (32 bytes, base64) the connection's
//! Fulfills carry STREAM receipts for that verifier.
//!
//! Which answer a request gets is its `Accept` header's ([`negotiate`]):
//! SPSP when it names `application/spsp4+json` at least as high as it
//! accepts JSON (what `@interledger/pay` and the SPSP client send: both,
//! equally); otherwise the Open Payments document when it accepts JSON
//! (`application/json`, `application/*`, `*/*`, or no `Accept` at all);
//! otherwise 406 `not_acceptable`. Both answers carry `Vary: Accept`.

use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use opd_core::wallet_address::WalletAddress;
use opd_service::interledger::spsp::{self, ReceiptSetup};

use crate::error::{ApiError, ApiResult};

/// The SPSP media type.
pub const SPSP_CONTENT_TYPE: &str = "application/spsp4+json";

/// What a wallet address request asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wanted {
    /// The Open Payments wallet address document.
    Json,
    /// SPSP credentials.
    Spsp,
    /// Neither: 406.
    NotAcceptable,
}

/// The answer an `Accept` header gets (see the module doc); `spsp` off
/// leaves JSON or nothing.
pub fn negotiate(accept: Option<&str>, spsp: bool) -> Wanted {
    let accept = accept.map(str::trim).filter(|a| !a.is_empty());
    let Some(accept) = accept else {
        return Wanted::Json;
    };
    let (mut json, mut spsp_q) = (0u16, 0u16);
    for range in accept.split(',') {
        let mut parts = range.split(';');
        let media = parts.next().unwrap_or_default().trim().to_ascii_lowercase();
        let q = parts
            .filter_map(|p| p.trim().strip_prefix("q=").or(p.trim().strip_prefix("Q=")))
            .find_map(quality)
            .unwrap_or(1000);
        match media.as_str() {
            SPSP_CONTENT_TYPE => spsp_q = spsp_q.max(q),
            "application/json" | "application/*" | "*/*" => json = json.max(q),
            _ => {}
        }
    }
    if spsp && spsp_q > 0 && spsp_q >= json {
        Wanted::Spsp
    } else if json > 0 {
        Wanted::Json
    } else {
        Wanted::NotAcceptable
    }
}

/// An HTTP quality value in thousandths (`0.8` is 800); `None` when it is
/// not one.
fn quality(q: &str) -> Option<u16> {
    let (whole, frac) = q.split_once('.').unwrap_or((q, ""));
    if frac.len() > 3 || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let thousandths = format!("{frac:0<3}").parse::<u16>().ok()?;
    match whole {
        "0" => Some(thousandths),
        "1" if thousandths == 0 => Some(1000),
        _ => None,
    }
}

/// 406 `not_acceptable`.
pub fn not_acceptable() -> ApiError {
    ApiError::new(
        StatusCode::NOT_ACCEPTABLE,
        "not_acceptable",
        format!("a wallet address is served as application/json or {SPSP_CONTENT_TYPE}"),
    )
}

fn invalid_receipt_setup(why: &str) -> ApiError {
    ApiError::new(
        StatusCode::BAD_REQUEST,
        "invalid_receipt_setup",
        format!("cannot set up STREAM receipts: {why}"),
    )
}

/// The receipt setup of `Receipt-Nonce` and `Receipt-Secret`: both or
/// neither, base64 (standard or url-safe, padded or not) of 16 and 32
/// bytes.
pub fn receipt_setup(headers: &HeaderMap) -> ApiResult<Option<ReceiptSetup>> {
    let nonce = single(headers, "receipt-nonce")?;
    let secret = single(headers, "receipt-secret")?;
    let (nonce, secret) = match (nonce, secret) {
        (None, None) => return Ok(None),
        (Some(nonce), Some(secret)) => (nonce, secret),
        _ => {
            return Err(invalid_receipt_setup(
                "Receipt-Nonce and Receipt-Secret must accompany each other",
            ))
        }
    };
    let nonce: [u8; 16] = decode(nonce)
        .and_then(|b| b.try_into().ok())
        .ok_or_else(|| invalid_receipt_setup("Receipt-Nonce must be 16 bytes of base64"))?;
    let secret: [u8; 32] = decode(secret)
        .and_then(|b| b.try_into().ok())
        .ok_or_else(|| invalid_receipt_setup("Receipt-Secret must be 32 bytes of base64"))?;
    Ok(Some(ReceiptSetup { nonce, secret }))
}

/// A header given at most once, as text.
fn single<'h>(headers: &'h HeaderMap, name: &str) -> ApiResult<Option<&'h str>> {
    let mut values = headers.get_all(name).iter();
    let Some(first) = values.next() else {
        return Ok(None);
    };
    if values.next().is_some() {
        return Err(invalid_receipt_setup("a receipt header is given twice"));
    }
    first
        .to_str()
        .map(|v| Some(v.trim()))
        .map_err(|_| invalid_receipt_setup("a receipt header is not text"))
}

fn decode(text: &str) -> Option<Vec<u8>> {
    use base64::engine::general_purpose::{STANDARD_NO_PAD, URL_SAFE_NO_PAD};
    let unpadded = text.trim_end_matches('=');
    let engine = if unpadded.contains(['-', '_']) {
        URL_SAFE_NO_PAD
    } else {
        STANDARD_NO_PAD
    };
    engine.decode(unpadded).ok()
}

/// The SPSP answer for `wallet`: fresh credentials (with receipts for
/// `receipt`), never cached (each is a connection of its own).
pub fn answer(
    services: &opd_service::Services,
    wallet: &WalletAddress,
    receipt: Option<&ReceiptSetup>,
) -> ApiResult<Response> {
    let credentials = spsp::credentials(services, wallet, receipt)?;
    let body = serde_json::json!({
        "destination_account": credentials.ilp_address.as_str(),
        "shared_secret": credentials.shared_secret_base64url(),
        "receipts_enabled": receipt.is_some(),
    });
    let mut response = (StatusCode::OK, body.to_string()).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(SPSP_CONTENT_TYPE),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    Ok(response)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spsp_is_answered_when_asked_for_at_least_as_much_as_json() {
        let cases = [
            (None, Wanted::Json),
            (Some(""), Wanted::Json),
            (Some("application/json"), Wanted::Json),
            (Some("*/*"), Wanted::Json),
            (
                Some("text/html,application/xhtml+xml,*/*;q=0.8"),
                Wanted::Json,
            ),
            (Some("application/spsp4+json"), Wanted::Spsp),
            // @interledger/pay and ilp-protocol-spsp.
            (
                Some("application/json, application/spsp4+json"),
                Wanted::Spsp,
            ),
            (
                Some("application/spsp4+json, application/spsp+json"),
                Wanted::Spsp,
            ),
            (Some("Application/SPSP4+JSON"), Wanted::Spsp),
            (
                Some("application/json, application/spsp4+json;q=0.5"),
                Wanted::Json,
            ),
            (
                Some("application/spsp4+json;q=0.5, */*;q=0.1"),
                Wanted::Spsp,
            ),
            (Some("application/spsp4+json;q=0"), Wanted::NotAcceptable),
            (Some("text/html"), Wanted::NotAcceptable),
            (Some("application/spsp+json"), Wanted::NotAcceptable),
            (
                Some("application/json;q=0, application/spsp4+json"),
                Wanted::Spsp,
            ),
        ];
        for (accept, wanted) in cases {
            assert_eq!(negotiate(accept, true), wanted, "{accept:?}");
        }
        // With SPSP off, only JSON.
        assert_eq!(
            negotiate(Some("application/json, application/spsp4+json"), false),
            Wanted::Json
        );
        assert_eq!(
            negotiate(Some("application/spsp4+json"), false),
            Wanted::NotAcceptable
        );
    }

    #[test]
    fn qualities_are_read_in_thousandths() {
        for (q, v) in [
            ("1", 1000),
            ("1.000", 1000),
            ("0.8", 800),
            ("0.125", 125),
            ("0", 0),
        ] {
            assert_eq!(quality(q), Some(v), "{q}");
        }
        for q in ["2", "1.5", "0.1234", "x", "0.a", "-0.1"] {
            assert_eq!(quality(q), None, "{q}");
        }
    }

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(
                *k,
                HeaderValue::from_str(v).unwrap_or(HeaderValue::from_static("x")),
            );
        }
        h
    }

    #[test]
    fn receipt_headers_come_together_with_their_lengths() {
        use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
        let nonce = STANDARD.encode([0xfb; 16]);
        let secret = STANDARD.encode([0xfe; 32]);
        let setup = receipt_setup(&headers(&[
            ("receipt-nonce", &nonce),
            ("receipt-secret", &secret),
        ]));
        assert_eq!(
            setup.ok().flatten(),
            Some(ReceiptSetup {
                nonce: [0xfb; 16],
                secret: [0xfe; 32]
            })
        );
        let url_safe = [
            ("receipt-nonce", URL_SAFE_NO_PAD.encode([0xfb; 16])),
            ("receipt-secret", URL_SAFE_NO_PAD.encode([0xfe; 32])),
        ];
        let h = headers(&[
            (url_safe[0].0, &url_safe[0].1),
            (url_safe[1].0, &url_safe[1].1),
        ]);
        assert!(receipt_setup(&h).is_ok_and(|s| s.is_some()));
        assert!(receipt_setup(&headers(&[])).is_ok_and(|s| s.is_none()));
        let short = STANDARD.encode([1; 15]);
        let refused = [
            headers(&[("receipt-nonce", &nonce)]),
            headers(&[("receipt-secret", &secret)]),
            headers(&[("receipt-nonce", &short), ("receipt-secret", &secret)]),
            headers(&[("receipt-nonce", &nonce), ("receipt-secret", &nonce)]),
            headers(&[("receipt-nonce", "!!!"), ("receipt-secret", &secret)]),
            headers(&[
                ("receipt-nonce", &nonce),
                ("receipt-nonce", &nonce),
                ("receipt-secret", &secret),
            ]),
        ];
        for h in refused {
            let e = receipt_setup(&h).expect_err("refused");
            assert_eq!((e.status.as_u16(), e.code), (400, "invalid_receipt_setup"));
        }
    }
}
