//! Grants the client keeps for reuse, and the pure decisions about them:
//! which kept grant serves a requested access, whether its token must be
//! rotated first, and whether a server's refusal means the token itself
//! is no good (so that one new token, and one retry, may help).
//!
//! Only non-interactive grants are kept (incoming payments, quotes): an
//! outgoing-payment grant carries one payment's limits and the owner's
//! consent to exactly that payment, so it is never reused.
//!
//! Kept grants live in the profile file (see [`crate::grants`]), next to
//! the private key: they hold access tokens, so the file stays private.

use opd_gnap::client::needs_rotation;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::gnap::{Continuation, Token};
use crate::http::ClientError;

/// What a non-interactive grant request asks for: the same `Wanted`
/// twice is the same grant, so a kept one serves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wanted {
    /// The grant endpoint asked.
    pub auth_server: String,
    /// The origin the token is sent to. A kept token only ever goes to
    /// the resource server it was asked for, so a receiver naming another
    /// server's authorization server never gets that server's token.
    pub resource_server: String,
    /// The access items (a JSON array), as sent.
    pub access: Value,
}

/// A kept grant, as the profile file holds it.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KeptGrant {
    /// The client's wallet address that asked for it: a profile naming
    /// another one never uses it.
    pub client: String,
    pub auth_server: String,
    pub resource_server: String,
    /// What was asked for, and granted.
    pub access: Value,
    /// The access token.
    pub token: String,
    /// The token's management URL (rotation).
    pub manage: String,
    /// When the token expires (RFC 3339); `None` when it does not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<String>,
    /// Where the grant is cancelled, when the server said.
    #[serde(default, rename = "continue", skip_serializing_if = "Option::is_none")]
    pub grant: Option<Continuation>,
    /// The last state-changing request signed with the token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_change: Option<LastChange>,
}

/// A state-changing request signed with a kept token: the second it was
/// signed in (its `created`), and a digest of its method, URL and body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LastChange {
    pub at: i64,
    pub request: String,
}

/// The second to sign `request` in, at `second` (Unix seconds), with a
/// token whose last state-changing request was `last`: this one, unless
/// the same request was signed in it or is booked for a later one (it
/// would be the same bytes, answered as the same request); then the
/// second after that, but never more than two seconds ahead.
pub fn second_for(last: Option<&LastChange>, request: &str, second: i64) -> i64 {
    match last {
        Some(l) if l.request == request && l.at >= second => {
            l.at.saturating_add(1).min(second.saturating_add(2))
        }
        _ => second,
    }
}

impl std::fmt::Debug for KeptGrant {
    // The token stays out of logs and panics.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeptGrant")
            .field("auth_server", &self.auth_server)
            .field("access", &self.access)
            .field("expires_at", &self.expires_at)
            .finish_non_exhaustive()
    }
}

impl KeptGrant {
    /// A grant just issued for `wanted` to `client`, its token received at
    /// `now_ms` (Unix milliseconds).
    pub fn issued(
        client: &str,
        wanted: &Wanted,
        token: &Token,
        grant: Option<Continuation>,
        now_ms: i64,
    ) -> Self {
        Self {
            client: client.to_owned(),
            auth_server: wanted.auth_server.clone(),
            resource_server: wanted.resource_server.clone(),
            access: wanted.access.clone(),
            token: token.value.clone(),
            manage: token.manage.clone(),
            expires_at: token.expires_at(now_ms).and_then(rfc3339),
            grant,
            last_change: None,
        }
    }

    /// The same grant with a rotated token.
    pub fn rotated(&self, token: &Token, now_ms: i64) -> Self {
        Self {
            token: token.value.clone(),
            manage: token.manage.clone(),
            expires_at: token.expires_at(now_ms).and_then(rfc3339),
            ..self.clone()
        }
    }

    /// When its token expires, in Unix milliseconds (`None`: never). An
    /// unreadable time counts as expired: rotated before use.
    pub fn expires_at_ms(&self) -> Option<i64> {
        let text = self.expires_at.as_deref()?;
        let at = time::OffsetDateTime::parse(text, &time::format_description::well_known::Rfc3339);
        Some(at.map_or(0, |t| {
            i64::try_from(t.unix_timestamp_nanos() / 1_000_000).unwrap_or(0)
        }))
    }

    /// Whether `other` was asked by the same client for the same access.
    pub fn same_access(&self, other: &Self) -> bool {
        self.client == other.client
            && self.auth_server == other.auth_server
            && self.resource_server == other.resource_server
            && self.access == other.access
    }

    /// Whether it was asked by `client` for what `wanted` asks.
    pub fn serves(&self, client: &str, wanted: &Wanted) -> bool {
        self.client == client
            && self.auth_server == wanted.auth_server
            && self.resource_server == wanted.resource_server
            && covers(&self.access, &wanted.access)
    }
}

fn rfc3339(unix_ms: i64) -> Option<String> {
    let at = time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(unix_ms) * 1_000_000);
    at.ok()?
        .format(&time::format_description::well_known::Rfc3339)
        .ok()
}

/// What to do for a requested access.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reuse {
    /// Use the kept grant at this index as it is.
    Use(usize),
    /// The kept grant at this index serves, but its token expires within
    /// [`opd_gnap::client::ROTATE_BEFORE_MS`] (or did): rotate it first.
    Rotate(usize),
    /// None serves: ask for a new grant.
    Ask,
}

/// Which kept grant serves `wanted` for `client` at `now_ms`: a valid one
/// first, else one to rotate.
pub fn reuse(kept: &[KeptGrant], client: &str, wanted: &Wanted, now_ms: i64) -> Reuse {
    let mut expiring = None;
    for (i, g) in kept.iter().enumerate() {
        if !g.serves(client, wanted) {
            continue;
        }
        if !needs_rotation(g.expires_at_ms(), now_ms) {
            return Reuse::Use(i);
        }
        expiring.get_or_insert(i);
    }
    expiring.map_or(Reuse::Ask, Reuse::Rotate)
}

/// Whether access `kept` (as asked) gives everything `wanted` asks: each
/// wanted item has a kept one of its type and identifier with at least
/// its actions. Items with limits, and outgoing payments, are never
/// served by a kept grant.
pub fn covers(kept: &Value, wanted: &Value) -> bool {
    let (Some(kept), Some(wanted)) = (kept.as_array(), wanted.as_array()) else {
        return false;
    };
    !wanted.is_empty()
        && wanted
            .iter()
            .all(|w| kept.iter().any(|k| item_covers(k, w)))
}

fn item_covers(kept: &Value, wanted: &Value) -> bool {
    let reusable = |v: &Value| {
        v["type"].is_string() && v["type"] != "outgoing-payment" && v.get("limits").is_none()
    };
    let actions = |v: &Value| -> Vec<String> {
        v["actions"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|a| a.as_str().map(str::to_owned))
            .collect()
    };
    let have = actions(kept);
    reusable(kept)
        && reusable(wanted)
        && kept["type"] == wanted["type"]
        && kept["identifier"] == wanted["identifier"]
        && actions(wanted).iter().all(|a| have.contains(a))
}

/// Whether a resource server's refusal is of the token itself (unknown,
/// expired, revoked): a new token may then succeed. opd and the reference
/// server answer 401 `invalid_token` / `Invalid Token`; the reference
/// server answers an expired token with 403 `Inactive Token`. A refused
/// signature, a replay or missing access is no token problem: asking
/// again would only pile up grants.
pub fn token_refused(e: &ClientError) -> bool {
    let ClientError::Server {
        status,
        code,
        description,
        ..
    } = e
    else {
        return false;
    };
    let says = |what: &str| code == what || description.eq_ignore_ascii_case(what);
    match status.as_u16() {
        401 => says("invalid_token") || says("Invalid Token") || says("Inactive Token"),
        403 => says("Inactive Token"),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::{Method, StatusCode};
    use serde_json::json;

    const SHOP: &str = "https://w.example/shop";
    const NOW: i64 = 1_800_000_000_000;

    fn wanted(kind: &str, actions: &[&str], identifier: &str) -> Wanted {
        Wanted {
            auth_server: "https://auth.example/".into(),
            resource_server: "https://w.example".into(),
            access: json!([{ "type": kind, "actions": actions, "identifier": identifier }]),
        }
    }

    fn kept(w: &Wanted, expires_in: Option<u64>) -> KeptGrant {
        let token = Token {
            value: "t".into(),
            manage: "https://auth.example/token/1".into(),
            expires_in,
            access: Value::Null,
        };
        KeptGrant::issued(SHOP, w, &token, None, NOW)
    }

    #[test]
    fn a_kept_grant_serves_the_same_access_until_shortly_before_it_expires() {
        let quote = wanted(
            "quote",
            &["create", "read", "read-all"],
            "https://w.example/alice",
        );
        let grants = [kept(&quote, Some(600))];
        assert_eq!(reuse(&grants, SHOP, &quote, NOW), Reuse::Use(0));
        // Fewer actions: served. Another action, wallet, type, server,
        // resource server or client: not.
        let fewer = wanted("quote", &["read"], "https://w.example/alice");
        assert_eq!(reuse(&grants, SHOP, &fewer, NOW), Reuse::Use(0));
        for other in [
            wanted("quote", &["create", "list"], "https://w.example/alice"),
            wanted("quote", &["create"], "https://w.example/bob"),
            wanted("incoming-payment", &["create"], "https://w.example/alice"),
            Wanted {
                auth_server: "https://other.example/".into(),
                ..quote.clone()
            },
            Wanted {
                resource_server: "https://evil.example".into(),
                ..quote.clone()
            },
        ] {
            assert_eq!(reuse(&grants, SHOP, &other, NOW), Reuse::Ask, "{other:?}");
        }
        assert_eq!(
            reuse(&grants, "https://w.example/x", &quote, NOW),
            Reuse::Ask
        );
        // 30 s before its expiry (and after), it is rotated first.
        let expiry = NOW + 600_000;
        assert_eq!(reuse(&grants, SHOP, &quote, expiry - 30_001), Reuse::Use(0));
        assert_eq!(
            reuse(&grants, SHOP, &quote, expiry - 30_000),
            Reuse::Rotate(0)
        );
        assert_eq!(reuse(&grants, SHOP, &quote, expiry + 1), Reuse::Rotate(0));
        // A valid one is preferred to an expiring one; no expiry: forever.
        let grants = [kept(&quote, Some(10)), kept(&quote, None)];
        assert_eq!(reuse(&grants, SHOP, &quote, NOW + 60_000), Reuse::Use(1));
        assert_eq!(reuse(&[], SHOP, &quote, NOW), Reuse::Ask);
    }

    #[test]
    fn outgoing_payments_and_limits_are_never_served_by_a_kept_grant() {
        let outgoing = wanted("outgoing-payment", &["create"], "https://w.example/alice");
        assert!(!covers(&outgoing.access, &outgoing.access));
        let limited = json!([{ "type": "quote", "actions": ["create"], "limits": {} }]);
        assert!(!covers(&limited, &limited));
        assert!(!covers(&json!([]), &json!([])));
        assert!(!covers(&Value::Null, &limited));
        // Without an identifier is another access than with one.
        let any = json!([{ "type": "incoming-payment", "actions": ["read"] }]);
        let alices =
            json!([{ "type": "incoming-payment", "actions": ["read"], "identifier": "a" }]);
        assert!(covers(&any, &any));
        assert!(!covers(&any, &alices) && !covers(&alices, &any));
    }

    #[test]
    fn expiry_is_kept_as_a_time_and_read_back() {
        let g = kept(&wanted("quote", &["read"], "a"), Some(600));
        assert_eq!(g.expires_at.as_deref(), Some("2027-01-15T08:10:00Z"));
        assert_eq!(g.expires_at_ms(), Some(NOW + 600_000));
        let broken = KeptGrant {
            expires_at: Some("soon".into()),
            ..g.clone()
        };
        assert_eq!(broken.expires_at_ms(), Some(0));
        // The token is never shown by Debug.
        assert!(!format!("{g:?}").contains("\"t\""));
        let back: KeptGrant = serde_json::from_value(serde_json::to_value(&g).unwrap()).unwrap();
        assert_eq!(back, g);
    }

    #[test]
    fn the_same_request_with_one_token_is_signed_in_another_second() {
        let last = LastChange {
            at: 100,
            request: "r".into(),
        };
        assert_eq!(second_for(None, "r", 100), 100);
        assert_eq!(second_for(Some(&last), "r", 100), 101);
        assert_eq!(second_for(Some(&last), "other", 100), 100);
        assert_eq!(second_for(Some(&last), "r", 101), 101);
        // Booked ahead by others: after them, at most two seconds on.
        let ahead = LastChange { at: 105, ..last };
        assert_eq!(second_for(Some(&ahead), "r", 100), 102);
        assert_eq!(second_for(Some(&ahead), "r", 104), 106);
    }

    #[test]
    fn only_a_refused_token_is_worth_a_new_one() {
        let refusal = |status: u16, code: &str, description: &str| ClientError::Server {
            method: Method::GET,
            url: "https://w.example/x".into(),
            status: StatusCode::from_u16(status).unwrap(),
            code: code.into(),
            description: description.into(),
            details: None,
        };
        assert!(token_refused(&refusal(
            401,
            "invalid_token",
            "Invalid Token"
        )));
        assert!(token_refused(&refusal(401, "error", "Invalid Token")));
        assert!(token_refused(&refusal(403, "error", "Inactive Token")));
        assert!(!token_refused(&refusal(401, "invalid_signature", "bad")));
        assert!(!token_refused(&refusal(401, "replayed_request", "x")));
        assert!(!token_refused(&refusal(
            403,
            "insufficient_balance",
            "unauthorized"
        )));
        assert!(!token_refused(&refusal(
            404,
            "invalid_token",
            "Invalid Token"
        )));
        assert!(!token_refused(&ClientError::Unexpected(
            "Invalid Token".into()
        )));
    }
}
