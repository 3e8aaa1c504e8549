//! Grants from an Open Payments authorization server (GNAP): requested
//! without interaction when the server allows it (incoming payments,
//! quotes), or with the user's consent in a browser (outgoing payments):
//! the client prints the consent URL, receives the finish redirect on a
//! loopback port, checks its hash and continues the grant.
//!
//! What GNAP says (bodies, answers, the finish hash) is in
//! `opd_gnap::client`, shared with the server's own client of other
//! servers; this module is the transport and the loopback listener.
//!
//! A grant is also cancelled here (`DELETE` on its continue URI with its
//! latest continuation token): a grant waiting for a consent that failed
//! (refused, timed out, unverifiable) is cancelled at once, so that
//! nothing the user did not finish stays pending.

use std::time::Duration;

use opd_core::untrusted::Untrusted;
use opd_gnap::client::{self as gnap, Consent, FinishAt, GrantAnswer};
use rand::Rng as _;
use reqwest::Method;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpListener;

use crate::http::{Client, ClientError};

/// An access token and where to manage it.
pub type Token = gnap::IssuedToken;

/// A token as `opd client` prints it in JSON.
pub fn token_json(t: &Token) -> Value {
    json!({
        "value": t.value,
        "manage": t.manage,
        "expiresIn": t.expires_in,
        "access": t.access,
    })
}

fn answer(v: &Value) -> Result<GrantAnswer, ClientError> {
    GrantAnswer::from_json(v).map_err(|e| ClientError::Unexpected(e.0))
}

/// Where a grant is continued or cancelled, with its latest continuation
/// token (opd hands out a new one with every continuation answer).
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Continuation {
    pub uri: String,
    pub token: String,
}

impl std::fmt::Debug for Continuation {
    // The token stays out of logs and panics.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Continuation")
            .field("uri", &self.uri)
            .finish_non_exhaustive()
    }
}

impl Continuation {
    /// The `continue` of a grant answer, when it has a usable one.
    fn of(reply: &Value) -> Option<Self> {
        let c = &reply["continue"];
        Some(Self {
            uri: c["uri"].as_str()?.to_owned(),
            token: c["access_token"]["value"].as_str()?.to_owned(),
        })
    }
}

/// An issued grant: its token, and where to cancel it when the server
/// said.
#[derive(Debug, Clone)]
pub struct Issued {
    pub token: Token,
    pub grant: Option<Continuation>,
}

/// A grant without interaction (incoming payments, quotes): the token, or
/// an error when the server wants the user's consent.
pub async fn request(
    client: &Client,
    auth_server: &str,
    access: Value,
) -> Result<Token, ClientError> {
    Ok(request_grant(client, auth_server, access).await?.token)
}

/// [`request`], with where to cancel the grant.
pub async fn request_grant(
    client: &Client,
    auth_server: &str,
    access: Value,
) -> Result<Issued, ClientError> {
    let body = gnap::grant_request(&client.profile.wallet_address, &access, None);
    let reply = client
        .signed(Method::POST, auth_server, None, Some(&body))
        .await?;
    match answer(&reply)? {
        GrantAnswer::Granted(token) => Ok(Issued {
            token,
            grant: Continuation::of(&reply),
        }),
        GrantAnswer::Pending(p) => {
            // Nobody will consent to it: it does not stay pending.
            let _ = cancel(
                client,
                &Continuation {
                    uri: p.continue_uri,
                    token: p.continue_token,
                },
            )
            .await;
            Err(ClientError::Unexpected(
                "the authorization server wants the user's consent for this grant".into(),
            ))
        }
    }
}

/// Cancels a grant (GNAP `DELETE` on its continue URI): it and its tokens
/// stop working.
pub async fn cancel(client: &Client, grant: &Continuation) -> Result<(), ClientError> {
    client
        .signed(Method::DELETE, &grant.uri, Some(&grant.token), None)
        .await
        .map(drop)
}

/// `e`, after cancelling `grant`; what failed in cancelling it is added
/// in a few words, never in place of `e`.
pub async fn cancelled_after(
    client: &Client,
    grant: &Continuation,
    e: anyhow::Error,
) -> anyhow::Error {
    match cancel(client, grant).await {
        Ok(()) => e,
        Err(c) => anyhow::anyhow!("{e:#} (and its grant could not be cancelled: {c})"),
    }
}

/// A grant the user consents to in a browser: `show` is called with the
/// consent URL (to print it), then the finish redirect is awaited on a
/// loopback port for at most `wait`, its hash checked and the grant
/// continued. When that fails, the pending grant is cancelled.
pub async fn request_with_consent(
    client: &Client,
    auth_server: &str,
    access: Value,
    wait: Duration,
    show: impl FnOnce(&str),
) -> anyhow::Result<Issued> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let finish_uri = format!("http://{}/finish", listener.local_addr()?);
    let nonce = random_nonce();
    let finish = FinishAt {
        uri: &finish_uri,
        nonce: &nonce,
    };
    let body = gnap::grant_request(&client.profile.wallet_address, &access, Some(finish));
    let reply = client
        .signed(Method::POST, auth_server, None, Some(&body))
        .await?;
    let pending = match answer(&reply)? {
        // Some servers grant at once what they need no consent for.
        GrantAnswer::Granted(token) => {
            return Ok(Issued {
                token,
                grant: Continuation::of(&reply),
            })
        }
        GrantAnswer::Pending(p) => p,
    };
    let mut grant = Continuation {
        uri: pending.continue_uri.clone(),
        token: pending.continue_token.clone(),
    };
    show(&pending.redirect);
    let awaited = Awaited {
        listener: &listener,
        nonce: &nonce,
        auth_server,
        wait,
    };
    match consent_and_continue(client, &awaited, &pending, &mut grant).await {
        Ok(token) => Ok(Issued {
            token,
            grant: Some(grant),
        }),
        Err(e) => Err(cancelled_after(client, &grant, e).await),
    }
}

/// Where and how long the finish redirect is awaited.
struct Awaited<'a> {
    listener: &'a TcpListener,
    /// The client's nonce.
    nonce: &'a str,
    auth_server: &'a str,
    wait: Duration,
}

/// Awaits the consent, then continues the grant: its token. `grant` is
/// kept up to date with the continuation token the server last gave.
async fn consent_and_continue(
    client: &Client,
    awaited: &Awaited<'_>,
    pending: &gnap::PendingGrant,
    grant: &mut Continuation,
) -> anyhow::Result<Token> {
    let finish = receive_finish(
        awaited.listener,
        awaited.nonce,
        &pending.finish_nonce,
        awaited.auth_server,
    );
    let wait = awaited.wait;
    let consent = tokio::time::timeout(wait, finish).await.map_err(|_| {
        anyhow::anyhow!(
            "no answer from the consent page within {} s",
            wait.as_secs()
        )
    })??;
    let interact_ref = match consent {
        Consent::Approved(r) => r,
        // `why` arrived in the redirect's query: anyone's text.
        Consent::Refused(why) => {
            anyhow::bail!("the grant was not approved ({})", Untrusted(&why))
        }
    };
    let reply = client
        .signed(
            Method::POST,
            &pending.continue_uri,
            Some(&grant.token),
            Some(&gnap::continue_request(&interact_ref)),
        )
        .await?;
    if let Some(next) = Continuation::of(&reply) {
        *grant = next;
    }
    match answer(&reply)? {
        GrantAnswer::Granted(t) => Ok(t),
        GrantAnswer::Pending(_) => anyhow::bail!("the grant is still pending after the consent"),
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
        let consent = gnap::judge_finish(
            query.trim_start_matches('?'),
            client_nonce,
            server_nonce,
            grant_endpoint,
        )
        .map_err(|e| anyhow::anyhow!(e));
        let page = crate::finish_page::page(match &consent {
            Ok(Consent::Approved(_)) => crate::finish_page::Outcome::Approved,
            Ok(Consent::Refused(_)) => crate::finish_page::Outcome::Refused,
            Err(_) => crate::finish_page::Outcome::Unverified,
        });
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

/// Rotates a token: the new one.
pub async fn rotate(client: &Client, manage: &str, token: &str) -> Result<Token, ClientError> {
    let reply = client
        .signed(Method::POST, manage, Some(token), None)
        .await?;
    gnap::rotation_from_json(&reply).map_err(|e| ClientError::Unexpected(e.0))
}

/// Revokes a token.
pub async fn revoke(client: &Client, manage: &str, token: &str) -> Result<(), ClientError> {
    client
        .signed(Method::DELETE, manage, Some(token), None)
        .await
        .map(drop)
}
