//! Grants from an Open Payments authorization server (GNAP): requested
//! without interaction when the server allows it (incoming payments,
//! quotes), or with the user's consent in a browser (outgoing payments):
//! the client prints the consent URL, receives the finish redirect on a
//! loopback port, checks its hash and continues the grant.

use std::time::Duration;

use rand::Rng as _;
use reqwest::Method;
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpListener;

use crate::http::{Client, ClientError};

/// An access token and where to manage it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Token {
    pub value: String,
    /// The token management URL (rotate with POST, revoke with DELETE).
    pub manage: String,
    /// Seconds it is valid for, when the server says.
    pub expires_in: Option<u64>,
    /// What it grants, as the server described it.
    pub access: Value,
}

impl Token {
    fn from_json(v: &Value) -> Result<Self, ClientError> {
        let text = |k: &str| {
            v[k].as_str()
                .map(str::to_owned)
                .ok_or_else(|| ClientError::Unexpected(format!("the access token has no {k}")))
        };
        Ok(Self {
            value: text("value")?,
            manage: text("manage")?,
            expires_in: v["expires_in"].as_u64(),
            access: v["access"].clone(),
        })
    }

    pub fn to_json(&self) -> Value {
        json!({
            "value": self.value,
            "manage": self.manage,
            "expiresIn": self.expires_in,
            "access": self.access,
        })
    }
}

/// A grant request waiting for the user: where to send them and how to
/// continue.
#[derive(Debug, Clone)]
pub struct Pending {
    /// The consent URL the user opens.
    pub redirect: String,
    /// The server's nonce for the finish hash.
    pub finish_nonce: String,
    pub continue_uri: String,
    pub continue_token: String,
}

/// The answer to a grant request.
#[derive(Debug, Clone)]
pub enum Outcome {
    Granted(Token),
    Pending(Pending),
}

fn outcome_of(v: &Value) -> Result<Outcome, ClientError> {
    if v.get("access_token").is_some() {
        return Token::from_json(&v["access_token"]).map(Outcome::Granted);
    }
    let text = |x: &Value, what: &str| {
        x.as_str()
            .map(str::to_owned)
            .ok_or_else(|| ClientError::Unexpected(format!("the grant answer has no {what}")))
    };
    Ok(Outcome::Pending(Pending {
        redirect: text(&v["interact"]["redirect"], "interact.redirect")?,
        finish_nonce: text(&v["interact"]["finish"], "interact.finish")?,
        continue_uri: text(&v["continue"]["uri"], "continue.uri")?,
        continue_token: text(&v["continue"]["access_token"]["value"], "continue token")?,
    }))
}

/// A grant without interaction (incoming payments, quotes): the token, or
/// an error when the server wants the user's consent.
pub async fn request(
    client: &Client,
    auth_server: &str,
    access: Value,
) -> Result<Token, ClientError> {
    let body = json!({
        "access_token": { "access": access },
        "client": client.profile.wallet_address,
    });
    let answer = client
        .signed(Method::POST, auth_server, None, Some(&body))
        .await?;
    match outcome_of(&answer)? {
        Outcome::Granted(t) => Ok(t),
        Outcome::Pending(_) => Err(ClientError::Unexpected(
            "the authorization server wants the user's consent for this grant".into(),
        )),
    }
}

/// Where the user's consent ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Consent {
    /// Approved: the finish redirect's `interact_ref` (hash checked).
    Approved(String),
    /// The user rejected it, or the server ended it (`result=...`).
    Refused(String),
}

/// A grant the user consents to in a browser: `show` is called with the
/// consent URL (to print it), then the finish redirect is awaited on a
/// loopback port for at most `wait`, its hash checked and the grant
/// continued.
pub async fn request_with_consent(
    client: &Client,
    auth_server: &str,
    access: Value,
    wait: Duration,
    show: impl FnOnce(&str),
) -> anyhow::Result<Token> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let finish_uri = format!("http://{}/finish", listener.local_addr()?);
    let nonce = random_nonce();
    let body = json!({
        "access_token": { "access": access },
        "client": client.profile.wallet_address,
        "interact": {
            "start": ["redirect"],
            "finish": { "method": "redirect", "uri": finish_uri, "nonce": nonce },
        },
    });
    let answer = client
        .signed(Method::POST, auth_server, None, Some(&body))
        .await?;
    let pending = match outcome_of(&answer)? {
        // Some servers grant at once what they need no consent for.
        Outcome::Granted(t) => return Ok(t),
        Outcome::Pending(p) => p,
    };
    show(&pending.redirect);
    let consent = tokio::time::timeout(
        wait,
        receive_finish(&listener, &nonce, &pending.finish_nonce, auth_server),
    )
    .await
    .map_err(|_| {
        anyhow::anyhow!(
            "no answer from the consent page within {} s",
            wait.as_secs()
        )
    })??;
    let interact_ref = match consent {
        Consent::Approved(r) => r,
        Consent::Refused(why) => anyhow::bail!("the grant was not approved ({why})"),
    };
    let answer = client
        .signed(
            Method::POST,
            &pending.continue_uri,
            Some(&pending.continue_token),
            Some(&json!({ "interact_ref": interact_ref })),
        )
        .await?;
    match outcome_of(&answer)? {
        Outcome::Granted(t) => Ok(t),
        Outcome::Pending(_) => anyhow::bail!("the grant is still pending after the consent"),
    }
}

fn random_nonce() -> String {
    let bytes: [u8; 16] = rand::thread_rng().gen();
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Serves the loopback port until the finish redirect arrives (other
/// requests, such as a browser's favicon, get a 404).
async fn receive_finish(
    listener: &TcpListener,
    client_nonce: &str,
    server_nonce: &str,
    grant_endpoint: &str,
) -> anyhow::Result<Consent> {
    loop {
        let (mut stream, _) = listener.accept().await?;
        let Some(target) = read_request_target(&mut stream).await else {
            continue;
        };
        let Some(query) = target.strip_prefix("/finish") else {
            let _ = stream
                .write_all(
                    b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
                )
                .await;
            continue;
        };
        let consent = judge_finish(
            query.trim_start_matches('?'),
            client_nonce,
            server_nonce,
            grant_endpoint,
        );
        let message = match &consent {
            Ok(Consent::Approved(_)) => {
                "Approved. You can close this window and return to the terminal."
            }
            Ok(Consent::Refused(_)) => "Not approved. You can close this window.",
            Err(_) => "This answer could not be verified. You can close this window.",
        };
        let page = format!(
            "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>opd client</title></head>\
             <body style=\"font-family:sans-serif;margin:3em\"><p>{message}</p></body></html>"
        );
        let head = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: text/html; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
            page.len()
        );
        let _ = stream.write_all(head.as_bytes()).await;
        let _ = stream.write_all(page.as_bytes()).await;
        return consent;
    }
}

/// The request line's target, from a request head of at most 16 KiB.
async fn read_request_target(stream: &mut tokio::net::TcpStream) -> Option<String> {
    let mut head = Vec::new();
    let mut buf = [0u8; 2048];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 16 * 1024 {
        let n = tokio::time::timeout(Duration::from_secs(10), stream.read(&mut buf))
            .await
            .ok()?
            .ok()?;
        if n == 0 {
            break;
        }
        head.extend_from_slice(&buf[..n]);
    }
    let line = String::from_utf8_lossy(&head);
    let mut parts = line.lines().next()?.split(' ');
    match (parts.next(), parts.next()) {
        (Some("GET"), Some(target)) => Some(target.to_owned()),
        _ => None,
    }
}

/// What the finish redirect's query says: `interact_ref` and a `hash`
/// that must match, or `result=<why>` when not approved.
fn judge_finish(
    query: &str,
    client_nonce: &str,
    server_nonce: &str,
    grant_endpoint: &str,
) -> anyhow::Result<Consent> {
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
            if opd_gnap::interaction_hash_matches(
                &h,
                client_nonce,
                server_nonce,
                &r,
                grant_endpoint,
            ) {
                Ok(Consent::Approved(r))
            } else {
                anyhow::bail!("the finish redirect's hash does not match: not continuing")
            }
        }
        (_, _, Some(why)) => Ok(Consent::Refused(why)),
        _ => anyhow::bail!("the finish redirect has neither interact_ref and hash nor result"),
    }
}

/// Rotates a token: the new one.
pub async fn rotate(client: &Client, manage: &str, token: &str) -> Result<Token, ClientError> {
    let answer = client
        .signed(Method::POST, manage, Some(token), None)
        .await?;
    Token::from_json(&answer["access_token"])
}

/// Revokes a token.
pub async fn revoke(client: &Client, manage: &str, token: &str) -> Result<(), ClientError> {
    client
        .signed(Method::DELETE, manage, Some(token), None)
        .await
        .map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_finish_hash_is_checked() {
        let good = opd_gnap::interaction_hash("cn", "sn", "ref1", "https://auth.example/");
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
        assert_eq!(
            judge_finish("result=grant_rejected", "cn", "sn", "x").unwrap(),
            Consent::Refused("grant_rejected".into())
        );
        assert!(judge_finish("", "cn", "sn", "x").is_err());
    }

    #[test]
    fn reads_both_grant_answers() {
        let granted = json!({ "access_token": { "value": "t", "manage": "https://a/token/1", "expires_in": 600, "access": [] } });
        assert!(
            matches!(outcome_of(&granted), Ok(Outcome::Granted(t)) if t.value == "t" && t.expires_in == Some(600))
        );
        let pending = json!({
            "interact": { "redirect": "https://a/interact/1/2", "finish": "sn" },
            "continue": { "uri": "https://a/continue/1", "access_token": { "value": "ct" }, "wait": 5 }
        });
        assert!(
            matches!(outcome_of(&pending), Ok(Outcome::Pending(p)) if p.finish_nonce == "sn" && p.continue_token == "ct")
        );
        assert!(outcome_of(&json!({})).is_err());
    }
}
