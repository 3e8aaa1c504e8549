//! `opd key add|list|revoke`: the Ed25519 keys of a wallet address, which
//! each names by its positional id (`opd key revoke <WALLET_ADDRESS>
//! <KID>`).

use anyhow::{bail, Context};
use reqwest::Method;
use serde_json::{json, Value};

use super::render::{self, typed};
use super::{encode_segment, AdminClient, Answer};
use crate::cli::KeyCommand;

/// `/wallet-addresses/{wallet}/keys`.
fn keys_path(wallet: &str) -> String {
    format!("/wallet-addresses/{}/keys", encode_segment(wallet))
}

impl AdminClient {
    pub async fn key(&self, cmd: KeyCommand) -> anyhow::Result<Answer> {
        match cmd {
            KeyCommand::Add {
                wallet_address,
                jwk,
                jwk_file,
            } => {
                let text = match (jwk, jwk_file) {
                    (Some(j), _) => j,
                    (None, Some(f)) => std::fs::read_to_string(&f)
                        .with_context(|| format!("cannot read {}", f.display()))?,
                    (None, None) => bail!("give --jwk or --jwk-file"),
                };
                let jwk: Value =
                    serde_json::from_str(&text).context("the JWK is not valid JSON")?;
                let path = keys_path(&wallet_address);
                let added = self
                    .call(Method::POST, &path, Some(json!({ "jwk": jwk })))
                    .await?;
                let line = format!(
                    "key added to {}: {}",
                    typed(&wallet_address),
                    render::key(&added)
                );
                Ok(Answer::line(added, line))
            }
            KeyCommand::List { wallet_address } => {
                let keys = self
                    .call(Method::GET, &keys_path(&wallet_address), None)
                    .await?;
                let lines = render::list(&keys, "no keys", render::key);
                Ok(Answer::new(keys, lines))
            }
            KeyCommand::Revoke {
                wallet_address,
                kid,
            } => {
                let path = format!("{}/{}", keys_path(&wallet_address), encode_segment(&kid));
                self.call(Method::DELETE, &path, None).await?;
                Ok(Answer::line(
                    json!({ "revoked": kid, "walletAddress": wallet_address }),
                    format!("key revoked: {} of {}", typed(&kid), typed(&wallet_address)),
                ))
            }
        }
    }
}
