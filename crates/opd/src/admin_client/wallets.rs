//! `opd wallet-address ...` (wallet addresses, their owners' passwords and
//! their money) and `opd incoming-payment withdraw`.

use anyhow::bail;
use reqwest::Method;
use serde_json::{json, Value};

use super::password;
use super::render::{self, typed, Asset};
use super::{encode_segment, minor, move_body, AdminClient, Answer};
use crate::cli::{IncomingPaymentCommand, Movement, WalletAddressCommand};

/// `/wallet-addresses/{wallet}` and what follows.
fn wallet_path(wallet: &str, rest: &str) -> String {
    format!("/wallet-addresses/{}{rest}", encode_segment(wallet))
}

/// A wallet address's details, one per line.
fn wallet_details(w: &Value) -> Vec<String> {
    let mut lines = vec![render::wallet(w)];
    lines.extend(render::details(&[
        ("id", render::optional(&w["id"])),
        ("tenant", render::optional(&w["tenant"])),
        ("public name", render::optional(&w["publicName"])),
        ("created", render::optional(&w["createdAt"])),
        ("deactivated", render::optional(&w["deactivatedAt"])),
    ]));
    lines
}

impl AdminClient {
    pub async fn wallet_address(&self, cmd: WalletAddressCommand) -> anyhow::Result<Answer> {
        match cmd {
            create @ WalletAddressCommand::Create { .. } => self.create_wallet(create).await,
            WalletAddressCommand::Password {
                wallet_address,
                password_file,
                prompt,
            } => {
                let Some(password) = password::given(password_file.as_deref(), prompt)? else {
                    bail!("give the password with --password-file or --prompt");
                };
                self.set_owner_password(&wallet_address, &password).await?;
                Ok(Answer::line(
                    json!({ "ownerPassword": "set", "walletAddress": wallet_address }),
                    format!("owner password set: {}", typed(&wallet_address)),
                ))
            }
            WalletAddressCommand::List { tenant } => {
                let path = match tenant {
                    Some(t) => format!("/wallet-addresses?tenant={}", encode_segment(&t)),
                    None => "/wallet-addresses".to_owned(),
                };
                let all = self.call(Method::GET, &path, None).await?;
                let lines = render::list(&all, "no wallet addresses", render::wallet);
                Ok(Answer::new(all, lines))
            }
            WalletAddressCommand::Get { wallet_address } => {
                let path = wallet_path(&wallet_address, "");
                let w = self.call(Method::GET, &path, None).await?;
                let lines = wallet_details(&w);
                Ok(Answer::new(w, lines))
            }
            WalletAddressCommand::Deactivate { wallet_address } => {
                let path = wallet_path(&wallet_address, "/deactivate");
                let w = self.call(Method::POST, &path, None).await?;
                let line = format!("wallet address deactivated: {}", render::wallet(&w));
                Ok(Answer::line(w, line))
            }
            WalletAddressCommand::Deposit {
                wallet_address,
                movement,
            } => {
                self.move_wallet_money(&wallet_address, true, movement)
                    .await
            }
            WalletAddressCommand::Withdraw {
                wallet_address,
                movement,
            } => {
                self.move_wallet_money(&wallet_address, false, movement)
                    .await
            }
            WalletAddressCommand::Balance { wallet_address } => {
                let path = wallet_path(&wallet_address, "/balance");
                let answer = self.call(Method::GET, &path, None).await?;
                let balance = &answer["balance"];
                let line = format!(
                    "{}: {}",
                    typed(&wallet_address),
                    Asset::of_fields(balance).amount_of(&balance["value"])
                );
                Ok(Answer::line(answer, line))
            }
        }
    }

    /// `opd wallet-address create`: the wallet address, then its owner's
    /// password when one is given (read first: a file that cannot be read
    /// makes no wallet address).
    async fn create_wallet(&self, cmd: WalletAddressCommand) -> anyhow::Result<Answer> {
        let WalletAddressCommand::Create {
            path,
            tenant,
            asset_code,
            asset_scale,
            public_name,
            owner_password_file,
            prompt,
        } = cmd
        else {
            bail!("not a create command");
        };
        let password = password::given(owner_password_file.as_deref(), prompt)?;
        let mut body = json!({ "path": path, "assetCode": asset_code, "assetScale": asset_scale });
        if let Some(n) = public_name {
            body["publicName"] = Value::String(n);
        }
        if let Some(t) = tenant {
            body["tenant"] = Value::String(t);
        }
        let made = self
            .call(Method::POST, "/wallet-addresses", Some(body))
            .await?;
        let mut lines = vec![format!("wallet address created: {}", render::wallet(&made))];
        if let Some(password) = password {
            let id = made["id"].as_str().unwrap_or_default().to_owned();
            self.set_owner_password(&id, &password).await?;
            lines.push(format!(
                "owner password set: {}",
                render::wallet_name(&made)
            ));
        }
        Ok(Answer::new(made, lines))
    }

    /// Sets the owner password of a wallet address (id, path or
    /// `tenant:path`).
    async fn set_owner_password(&self, wallet: &str, password: &str) -> anyhow::Result<()> {
        let path = wallet_path(wallet, "/owner-password");
        let body = json!({ "password": password });
        self.call(Method::PUT, &path, Some(body)).await?;
        Ok(())
    }

    /// A deposit (or withdrawal) of an amount in the wallet address's
    /// asset: `deposited 12.50 EUR to carol; balance 12.50 EUR`.
    async fn move_wallet_money(
        &self,
        wallet_address: &str,
        deposit: bool,
        movement: Movement,
    ) -> anyhow::Result<Answer> {
        let amount = if movement.minor_units {
            minor(&movement.amount)?
        } else {
            let wallet = self
                .call(Method::GET, &wallet_path(wallet_address, ""), None)
                .await?;
            let scale = Asset::of_fields(&wallet).scale().ok_or_else(|| {
                anyhow::anyhow!("the wallet address has no asset scale: {wallet}")
            })?;
            opd_core::decimal::parse_decimal(movement.amount.trim(), scale)?
        };
        let body = move_body(amount, movement.idempotency_key);
        let kind = if deposit { "/deposits" } else { "/withdrawals" };
        let path = wallet_path(wallet_address, kind);
        let answer = self.call(Method::POST, &path, Some(body)).await?;
        let balance = &answer["balance"];
        let asset = Asset::of_fields(balance);
        let (done, to) = if deposit {
            ("deposited", "to")
        } else {
            ("withdrew", "from")
        };
        let line = format!(
            "{done} {} {to} {}; balance {}",
            asset.amount_of(&answer["transfer"]["amount"]),
            typed(wallet_address),
            asset.amount_of(&balance["value"])
        );
        Ok(Answer::line(answer, line))
    }

    pub async fn incoming_payment(&self, cmd: IncomingPaymentCommand) -> anyhow::Result<Answer> {
        match cmd {
            IncomingPaymentCommand::Withdraw {
                id,
                idempotency_key,
            } => {
                let path = format!("/incoming-payments/{}/withdrawals", encode_segment(&id));
                let body = json!({ "idempotencyKey": idempotency_key });
                let answer = self.call(Method::POST, &path, Some(body)).await?;
                let amount = &answer["amount"];
                let line = format!(
                    "withdrew {} received by incoming payment {}",
                    Asset::of_fields(amount).amount_of(&amount["value"]),
                    typed(&id)
                );
                Ok(Answer::line(answer, line))
            }
        }
    }
}
