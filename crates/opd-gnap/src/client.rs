//! The client side of GNAP as Open Payments uses it, with no I/O: the
//! bodies a client sends, reading an authorization server's answers, when
//! to rotate a token and checking the interaction's finish redirect.
//!
//! opd's own client of other servers (reading their incoming payments,
//! in opd-service) and `opd client` both speak GNAP through this module,
//! each over its own transport: the server through its hardened outbound
//! client, `opd client` through a plain one.
//!
//! Answers are read leniently (unknown members are ignored, `access` is
//! kept as sent): they come from other implementations, which add members
//! the spec does not name. Only what a client needs is required.

use serde_json::{json, Value};

/// A token this close to its expiry (milliseconds) is rotated before use,
/// so that it does not expire between being read and being checked.
pub const ROTATE_BEFORE_MS: i64 = 30_000;

/// An authorization server's answer a client cannot use.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct AnswerError(pub String);

fn missing(what: &str) -> AnswerError {
    AnswerError(format!("the grant answer has no {what}"))
}

/// An issued access token and where to manage it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IssuedToken {
    /// The token value (sent as `authorization: GNAP <value>`).
    pub value: String,
    /// The token management URL: rotate with POST, revoke with DELETE.
    pub manage: String,
    /// Seconds it is valid for, when the server says.
    pub expires_in: Option<u64>,
    /// What it grants, as the server described it.
    pub access: Value,
}

impl IssuedToken {
    fn from_json(v: &Value) -> Result<Self, AnswerError> {
        let text = |k: &str| {
            v[k].as_str()
                .map(str::to_owned)
                .ok_or_else(|| AnswerError(format!("the access token has no {k}")))
        };
        Ok(Self {
            value: text("value")?,
            manage: text("manage")?,
            expires_in: v["expires_in"].as_u64(),
            access: v["access"].clone(),
        })
    }

    /// When it expires, in Unix milliseconds, given the time the answer
    /// arrived; `None` when it does not expire.
    pub fn expires_at(&self, received_unix_ms: i64) -> Option<i64> {
        self.expires_in.map(|s| {
            let ms = i64::try_from(s).unwrap_or(i64::MAX).saturating_mul(1000);
            received_unix_ms.saturating_add(ms)
        })
    }
}

/// Whether a token expiring at `expires_at` (Unix milliseconds, `None`
/// for never) should be rotated before being used at `now`.
pub fn needs_rotation(expires_at: Option<i64>, now_unix_ms: i64) -> bool {
    expires_at.is_some_and(|t| t.saturating_sub(ROTATE_BEFORE_MS) <= now_unix_ms)
}

/// A grant waiting for the user's consent: where to send them and how to
/// continue afterwards.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingGrant {
    /// The consent URL the user opens.
    pub redirect: String,
    /// The server's nonce, an input of the finish hash.
    pub finish_nonce: String,
    /// Where to continue the grant.
    pub continue_uri: String,
    /// The continuation token.
    pub continue_token: String,
}

/// The answer to a grant request or to its continuation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GrantAnswer {
    /// A token was issued.
    Granted(IssuedToken),
    /// The user must consent first.
    Pending(PendingGrant),
}

impl GrantAnswer {
    /// Reads a grant (or continuation) answer's body.
    pub fn parse(body: &[u8]) -> Result<Self, AnswerError> {
        let v: Value = serde_json::from_slice(body)
            .map_err(|_| AnswerError("the grant answer is not JSON".into()))?;
        Self::from_json(&v)
    }

    /// Reads a grant (or continuation) answer already parsed as JSON.
    pub fn from_json(v: &Value) -> Result<Self, AnswerError> {
        if v.get("access_token").is_some() {
            return IssuedToken::from_json(&v["access_token"]).map(Self::Granted);
        }
        let text =
            |x: &Value, what: &str| x.as_str().map(str::to_owned).ok_or_else(|| missing(what));
        Ok(Self::Pending(PendingGrant {
            redirect: text(&v["interact"]["redirect"], "interact.redirect")?,
            finish_nonce: text(&v["interact"]["finish"], "interact.finish")?,
            continue_uri: text(&v["continue"]["uri"], "continue.uri")?,
            continue_token: text(&v["continue"]["access_token"]["value"], "continue token")?,
        }))
    }
}

/// Reads a token rotation's answer: the new token.
pub fn parse_rotation(body: &[u8]) -> Result<IssuedToken, AnswerError> {
    let v: Value = serde_json::from_slice(body)
        .map_err(|_| AnswerError("the rotation answer is not JSON".into()))?;
    rotation_from_json(&v)
}

/// Reads a token rotation's answer already parsed as JSON.
pub fn rotation_from_json(v: &Value) -> Result<IssuedToken, AnswerError> {
    IssuedToken::from_json(&v["access_token"])
}

/// Where the authorization server sends the user back after consent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FinishAt<'a> {
    /// The client's redirect URI.
    pub uri: &'a str,
    /// The client's nonce, an input of the finish hash.
    pub nonce: &'a str,
}

/// The body of a grant request for `access` (a JSON array of access
/// items) by the client identified by its wallet address `client`; with
/// `finish`, the user is to consent in a browser and come back there.
pub fn grant_request(client: &str, access: &Value, finish: Option<FinishAt<'_>>) -> Value {
    let mut body = json!({
        "access_token": { "access": access },
        "client": client,
    });
    if let Some(f) = finish {
        body["interact"] = json!({
            "start": ["redirect"],
            "finish": { "method": "redirect", "uri": f.uri, "nonce": f.nonce },
        });
    }
    body
}

/// The body continuing a grant after the user's consent.
pub fn continue_request(interact_ref: &str) -> Value {
    json!({ "interact_ref": interact_ref })
}

/// Where the user's consent ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Consent {
    /// Approved: the finish redirect's `interact_ref` (its hash checked).
    Approved(String),
    /// The user rejected it, or the server ended it (`result=...`).
    Refused(String),
}

/// What a finish redirect's query says: `interact_ref` with a `hash` that
/// must match the two nonces and the grant endpoint (so that nobody but
/// the authorization server asked can finish the grant), or
/// `result=<why>` when it was not approved.
pub fn judge_finish(
    query: &str,
    client_nonce: &str,
    server_nonce: &str,
    grant_endpoint: &str,
) -> Result<Consent, AnswerError> {
    let mut interact_ref = None;
    let mut hash = None;
    let mut result = None;
    for (k, v) in url::form_urlencoded::parse(query.as_bytes()) {
        match k.as_ref() {
            "interact_ref" => interact_ref = Some(v.into_owned()),
            "hash" => hash = Some(v.into_owned()),
            "result" => result = Some(v.into_owned()),
            _ => {}
        }
    }
    match (interact_ref, hash, result) {
        (Some(r), Some(h), _) => {
            if crate::interaction_hash_matches(&h, client_nonce, server_nonce, &r, grant_endpoint) {
                Ok(Consent::Approved(r))
            } else {
                Err(AnswerError(
                    "the finish redirect's hash does not match: not continuing".into(),
                ))
            }
        }
        (_, _, Some(why)) => Ok(Consent::Refused(why)),
        _ => Err(AnswerError(
            "the finish redirect has neither interact_ref and hash nor result".into(),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_finish_hash_is_checked() {
        let good = crate::interaction_hash("cn", "sn", "ref1", "https://auth.example/");
        let query = url::form_urlencoded::Serializer::new(String::new())
            .append_pair("hash", &good)
            .append_pair("interact_ref", "ref1")
            .finish();
        assert_eq!(
            judge_finish(&query, "cn", "sn", "https://auth.example/").unwrap(),
            Consent::Approved("ref1".into())
        );
        // Another grant endpoint, another nonce: refused.
        assert!(judge_finish(&query, "cn", "sn", "https://evil.example/").is_err());
        assert!(judge_finish(&query, "other", "sn", "https://auth.example/").is_err());
        assert!(judge_finish(&query, "cn", "other", "https://auth.example/").is_err());
        assert_eq!(
            judge_finish("result=grant_rejected", "cn", "sn", "x").unwrap(),
            Consent::Refused("grant_rejected".into())
        );
        assert!(judge_finish("", "cn", "sn", "x").is_err());
    }

    #[test]
    fn reads_both_grant_answers() {
        let granted = br#"{ "access_token": { "value": "t", "manage": "https://a/token/1", "expires_in": 600, "access": [] }, "extra": 1 }"#;
        assert!(
            matches!(GrantAnswer::parse(granted), Ok(GrantAnswer::Granted(t)) if t.value == "t" && t.expires_in == Some(600))
        );
        let pending = br#"{
            "interact": { "redirect": "https://a/interact/1/2", "finish": "sn" },
            "continue": { "uri": "https://a/continue/1", "access_token": { "value": "ct" }, "wait": 5 }
        }"#;
        assert!(
            matches!(GrantAnswer::parse(pending), Ok(GrantAnswer::Pending(p)) if p.finish_nonce == "sn" && p.continue_token == "ct")
        );
        assert!(GrantAnswer::parse(b"{}").is_err());
        assert!(GrantAnswer::parse(b"not json").is_err());
        // A token without its management URL cannot be rotated: refused.
        assert!(GrantAnswer::parse(br#"{ "access_token": { "value": "t" } }"#).is_err());
        let rotated = parse_rotation(br#"{ "access_token": { "value": "u", "manage": "m" } }"#);
        assert_eq!(rotated.map(|t| t.value), Ok("u".to_owned()));
        assert!(parse_rotation(b"{}").is_err());
    }

    #[test]
    fn tokens_are_rotated_shortly_before_they_expire() {
        let token = IssuedToken {
            value: "t".into(),
            manage: "m".into(),
            expires_in: Some(600),
            access: Value::Null,
        };
        let at = token.expires_at(1_000).unwrap();
        assert_eq!(at, 601_000);
        assert!(!needs_rotation(Some(at), at - ROTATE_BEFORE_MS - 1));
        assert!(needs_rotation(Some(at), at - ROTATE_BEFORE_MS));
        assert!(needs_rotation(Some(at), at + 1));
        assert!(!needs_rotation(None, i64::MAX));
        // A lifetime near u64::MAX does not overflow.
        let long = IssuedToken {
            expires_in: Some(u64::MAX),
            ..token
        };
        assert_eq!(long.expires_at(1), Some(i64::MAX));
    }

    #[test]
    fn request_bodies_match_what_servers_expect() {
        let access = json!([{ "type": "incoming-payment", "actions": ["read-all"] }]);
        let plain = grant_request("https://w.example/alice", &access, None);
        assert_eq!(
            plain,
            json!({ "access_token": { "access": access }, "client": "https://w.example/alice" })
        );
        let with_consent = grant_request(
            "https://w.example/alice",
            &access,
            Some(FinishAt {
                uri: "http://127.0.0.1:1/finish",
                nonce: "n",
            }),
        );
        assert_eq!(with_consent["interact"]["start"], json!(["redirect"]));
        assert_eq!(with_consent["interact"]["finish"]["nonce"], "n");
        // What the authorization server side accepts.
        let parsed: crate::GrantRequest = serde_json::from_value(with_consent).unwrap();
        assert!(parsed.interact.is_some());
        assert_eq!(continue_request("r"), json!({ "interact_ref": "r" }));
    }
}
