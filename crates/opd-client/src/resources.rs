//! Open Payments resources as a client reaches them: wallet address
//! documents, and the grants each kind of request needs (incoming payments
//! and quotes without interaction, kept and reused through
//! [`crate::grants`]; outgoing payments with the user's consent).

use std::time::Duration;

use reqwest::Method;
use serde_json::{json, Value};

use crate::amount::Amount;
use crate::gnap::{self, Issued};
use crate::http::{Client, ClientError};
use crate::kept::Wanted;

/// What the incoming-payment grants ask for: everything a payee's client
/// does with its incoming payments. Not `list-all`: servers (the reference
/// one and opd) want the owner's consent for listing other clients'.
pub const INCOMING_ACTIONS: [&str; 5] = ["create", "read", "read-all", "list", "complete"];

/// A wallet address document.
#[derive(Debug, Clone)]
pub struct WalletAddress {
    pub id: String,
    pub public_name: Option<String>,
    pub asset_code: String,
    pub asset_scale: u8,
    pub auth_server: String,
    pub resource_server: String,
}

impl WalletAddress {
    fn from_json(v: &Value) -> Option<Self> {
        Some(Self {
            id: v["id"].as_str()?.to_owned(),
            public_name: v["publicName"].as_str().map(str::to_owned),
            asset_code: v["assetCode"].as_str()?.to_owned(),
            asset_scale: u8::try_from(v["assetScale"].as_u64()?).ok()?,
            auth_server: v["authServer"].as_str()?.to_owned(),
            resource_server: v["resourceServer"].as_str()?.to_owned(),
        })
    }

    /// `value` minor units of this wallet address's asset.
    pub fn amount(&self, value: u64) -> Amount {
        Amount {
            value,
            asset_code: self.asset_code.clone(),
            asset_scale: self.asset_scale,
        }
    }

    /// `{resourceServer}/{collection}`.
    pub fn collection(&self, collection: &str) -> String {
        format!(
            "{}/{collection}",
            self.resource_server.trim_end_matches('/')
        )
    }

    /// The name to show: its public name, else its URL.
    pub fn name(&self) -> &str {
        self.public_name.as_deref().unwrap_or(&self.id)
    }
}

/// A wallet address or resource URL as people write it: a payment
/// pointer (`$wallet.example/alice` is `https://wallet.example/alice`,
/// `$wallet.example` is `https://wallet.example/.well-known/pay`), a URL,
/// or a URL without its scheme (`https` assumed).
pub fn address(input: &str) -> anyhow::Result<String> {
    let input = input.trim();
    let refused = || {
        anyhow::anyhow!(
            "{input:?} is not an address: give an https URL or a payment pointer ($wallet.example/alice)"
        )
    };
    let url = if let Some(pointer) = input.strip_prefix('$') {
        if pointer.is_empty() || pointer.starts_with('/') {
            return Err(refused());
        }
        match pointer.split_once('/') {
            Some((host, path)) if !path.is_empty() => format!("https://{host}/{path}"),
            _ => format!("https://{}/.well-known/pay", pointer.trim_end_matches('/')),
        }
    } else if input.starts_with("https://") || input.starts_with("http://") {
        input.to_owned()
    } else if input.contains("://") || input.is_empty() {
        return Err(refused());
    } else {
        format!("https://{input}")
    };
    match url::Url::parse(&url) {
        Ok(u) if u.host_str().is_some_and(|h| !h.is_empty()) => Ok(url),
        _ => Err(refused()),
    }
}

/// When `input` named no scheme and `https` was assumed for `url`: what
/// to write instead for a server that speaks plain http.
fn https_assumed(input: &str, url: &str) -> Option<String> {
    let input = input.trim();
    if input.starts_with("https://") || input.starts_with("http://") {
        return None;
    }
    let parsed = url::Url::parse(url).ok()?;
    let host = parsed.host_str()?;
    let host = match parsed.port() {
        Some(port) => format!("{host}:{port}"),
        None => host.to_owned(),
    };
    let plain = url.replacen("https://", "http://", 1);
    Some(format!(
        "https was assumed for {host}; use {plain} for a plain-http server"
    ))
}

/// The public document at `url` (read from `input`); a server that cannot
/// be reached at an assumed `https` URL is answered with how to name it
/// over plain http.
async fn public_document(client: &Client, input: &str, url: &str) -> anyhow::Result<Value> {
    match client.get_public(url).await {
        Ok(v) => Ok(v),
        Err(e @ crate::http::ClientError::Transport { .. }) => match https_assumed(input, url) {
            Some(hint) => Err(anyhow::Error::new(e).context(hint)),
            None => Err(e.into()),
        },
        Err(e) => Err(e.into()),
    }
}

/// Reads a wallet address document (`url` as [`address`] reads it).
pub async fn wallet_address(client: &Client, url: &str) -> anyhow::Result<WalletAddress> {
    let (input, url) = (url, &address(url)?);
    let v = public_document(client, input, url).await?;
    WalletAddress::from_json(&v)
        .ok_or_else(|| anyhow::anyhow!("{url} is not a wallet address: {v}"))
}

/// What a receiver URL names.
#[derive(Debug, Clone)]
pub enum Receiver {
    /// A wallet address: an incoming payment is made on it first.
    WalletAddress(WalletAddress),
    /// An incoming payment, with its public view (`receivedAmount`,
    /// `incomingAmount`, `authServer`).
    IncomingPayment { url: String, public: Value },
}

/// Tells a wallet address from an incoming payment by its public document
/// (only a wallet address names a `resourceServer`).
pub async fn receiver(client: &Client, url: &str) -> anyhow::Result<Receiver> {
    let (input, url) = (url, &address(url)?);
    let v = public_document(client, input, url).await?;
    if let Some(w) = WalletAddress::from_json(&v) {
        return Ok(Receiver::WalletAddress(w));
    }
    if v.get("authServer").is_some() {
        return Ok(Receiver::IncomingPayment {
            url: url.to_owned(),
            public: v,
        });
    }
    anyhow::bail!("{url} is neither a wallet address nor an incoming payment")
}

/// The origin of `url` (where a token for it may go); `url` itself when
/// it is no URL.
pub(crate) fn origin(url: &str) -> String {
    url::Url::parse(url).map_or_else(|_| url.to_owned(), |u| u.origin().ascii_serialization())
}

/// The access for `wallet`'s incoming payments (a non-interactive grant).
pub fn incoming_access(wallet: &WalletAddress) -> Wanted {
    Wanted {
        auth_server: wallet.auth_server.clone(),
        resource_server: origin(&wallet.resource_server),
        access: json!([{ "type": "incoming-payment", "actions": INCOMING_ACTIONS, "identifier": wallet.id }]),
    }
}

/// The access for the incoming payment at `url` when only its URL is
/// known (its public view names the authorization server).
pub fn incoming_access_at(auth_server: &str, url: &str) -> Wanted {
    Wanted {
        auth_server: auth_server.to_owned(),
        resource_server: origin(url),
        access: json!([{ "type": "incoming-payment", "actions": INCOMING_ACTIONS }]),
    }
}

/// The access for quotes of `wallet` (a non-interactive grant).
pub fn quote_access(wallet: &WalletAddress) -> Wanted {
    Wanted {
        auth_server: wallet.auth_server.clone(),
        resource_server: origin(&wallet.resource_server),
        access: json!([{ "type": "quote", "actions": ["create", "read", "read-all"], "identifier": wallet.id }]),
    }
}

/// A token to create and read outgoing payments of `wallet`, within
/// `limits` when given, once its owner consents in a browser; with where
/// to cancel the grant.
pub async fn outgoing_token(
    client: &Client,
    wallet: &WalletAddress,
    limits: Option<Value>,
    wait: Duration,
    show: impl FnOnce(&str),
) -> anyhow::Result<Issued> {
    let mut item = json!({ "type": "outgoing-payment", "actions": ["create", "read", "list"], "identifier": wallet.id });
    if let Some(l) = limits {
        item["limits"] = l;
    }
    gnap::request_with_consent(client, &wallet.auth_server, json!([item]), wait, show).await
}

/// Creates a resource in `wallet`'s `collection` (`incoming-payments`,
/// `quotes`, `outgoing-payments`): the server's answer.
pub async fn create(
    client: &Client,
    wallet: &WalletAddress,
    collection: &str,
    token: &str,
    body: &Value,
) -> Result<Value, ClientError> {
    client
        .signed(
            Method::POST,
            &wallet.collection(collection),
            Some(token),
            Some(body),
        )
        .await
}

/// Every item of a list endpoint, following `pagination.endCursor`, or
/// one page when `first` is given.
pub async fn list(
    client: &Client,
    wallet: &WalletAddress,
    collection: &str,
    token: &str,
    first: Option<u32>,
    cursor: Option<&str>,
) -> Result<Vec<Value>, ClientError> {
    let mut out = Vec::new();
    let mut cursor = cursor.map(str::to_owned);
    loop {
        let mut url = url::Url::parse(&wallet.collection(collection))
            .map_err(|e| ClientError::Unexpected(e.to_string()))?;
        url.query_pairs_mut()
            .append_pair("wallet-address", &wallet.id)
            .append_pair("first", &first.unwrap_or(100).to_string());
        if let Some(c) = &cursor {
            url.query_pairs_mut().append_pair("cursor", c);
        }
        let page = client
            .signed(Method::GET, url.as_str(), Some(token), None)
            .await?;
        out.extend(page["result"].as_array().into_iter().flatten().cloned());
        let next = page["pagination"]["endCursor"].as_str();
        if first.is_some() || page["pagination"]["hasNextPage"] != true || next.is_none() {
            return Ok(out);
        }
        cursor = next.map(str::to_owned);
    }
}

#[cfg(test)]
mod tests {
    use super::{address, https_assumed};

    #[test]
    fn a_pointer_or_a_url_without_scheme_is_told_how_to_name_plain_http() {
        let url = address("$127.0.0.1:8080/bob").unwrap();
        assert_eq!(
            https_assumed("$127.0.0.1:8080/bob", &url).unwrap(),
            "https was assumed for 127.0.0.1:8080; use http://127.0.0.1:8080/bob for a plain-http server"
        );
        assert!(https_assumed("wallet.example/a", "https://wallet.example/a").is_some());
        assert_eq!(
            https_assumed("https://w.example/a", "https://w.example/a"),
            None
        );
        assert_eq!(
            https_assumed("http://w.example/a", "http://w.example/a"),
            None
        );
    }

    #[test]
    fn addresses_are_read_as_people_write_them() {
        for (given, url) in [
            ("$wallet.example/alice", "https://wallet.example/alice"),
            ("$wallet.example", "https://wallet.example/.well-known/pay"),
            ("$wallet.example/", "https://wallet.example/.well-known/pay"),
            ("wallet.example/alice", "https://wallet.example/alice"),
            ("http://127.0.0.1:8080/bob", "http://127.0.0.1:8080/bob"),
            (" https://w.example/a ", "https://w.example/a"),
        ] {
            assert_eq!(address(given).unwrap(), url, "{given}");
        }
        for bad in ["ftp://w.example/a", "$", "", "https://"] {
            let e = address(bad).unwrap_err().to_string();
            assert!(e.contains("is not an address"), "{bad}: {e}");
        }
    }
}
