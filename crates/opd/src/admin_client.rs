//! The admin helpers' HTTP client: talks to a running server's admin API
//! with the admin token from `--admin-token`/`OPD_ADMIN_TOKEN` or the data
//! directory.

use anyhow::{bail, Context};
use opd_core::untrusted::Untrusted;
use secrecy::{ExposeSecret, SecretString};
use serde_json::Value;

use crate::cli::{
    FeeCommand, IncomingPaymentCommand, KeyCommand, Movement, PeerCommand, PeerSettings,
    RateCommand, TenantCommand, TenantSettings, WalletAddressCommand,
};
use crate::config::CommonArgs;

/// A client of the admin API.
#[derive(Debug)]
pub struct AdminClient {
    base: String,
    token: SecretString,
    http: reqwest::Client,
}

fn encode_segment(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// A password from a file, or standard input for `-`, without its line
/// ending (the rest is kept: spaces may be part of it).
fn read_password(file: &std::path::Path) -> anyhow::Result<String> {
    let text = if file == std::path::Path::new("-") {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin(), &mut text)
            .context("cannot read the password from standard input")?;
        text
    } else {
        std::fs::read_to_string(file)
            .with_context(|| format!("cannot read the password from {}", file.display()))?
    };
    let password = text.trim_end_matches(['\n', '\r']).to_owned();
    if password.is_empty() {
        anyhow::bail!("the password is empty");
    }
    Ok(password)
}

/// The fields of a tenant's settings that were given.
fn tenant_body(s: TenantSettings) -> anyhow::Result<Value> {
    let mut body = serde_json::json!({});
    let files = [
        ("webhookSecret", &s.webhook_secret_file),
        ("idpSecret", &s.idp_secret_file),
    ];
    for (key, file) in files {
        if let Some(file) = file {
            let secret = std::fs::read_to_string(file)
                .with_context(|| format!("cannot read {key} from {}", file.display()))?;
            body[key] = Value::String(secret.trim().to_owned());
        }
    }
    for (key, value) in [
        ("publicName", s.public_name),
        ("publicUrl", s.public_url),
        ("authServerUrl", s.auth_server_url),
        ("webhookUrl", s.webhook_url),
        ("idpConsentUrl", s.idp_consent_url),
    ] {
        if let Some(v) = value {
            body[key] = Value::String(v);
        }
    }
    Ok(body)
}

impl AdminClient {
    pub fn new(common: &CommonArgs) -> anyhow::Result<Self> {
        let addr = common.admin_listen;
        let token = match &common.admin_token {
            Some(t) => t.clone(),
            None => {
                let path = common.data_dir.join("admin-token");
                std::fs::read_to_string(&path)
                    .with_context(|| {
                        format!("no admin token: pass --admin-token, set OPD_ADMIN_TOKEN, or run where {} exists", path.display())
                    })?
                    .trim()
                    .into()
            }
        };
        let base = common
            .admin_url
            .clone()
            .unwrap_or_else(|| format!("http://{addr}"))
            .trim_end_matches('/')
            .to_owned();
        Ok(Self {
            base,
            token,
            http: reqwest::Client::new(),
        })
    }

    async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> anyhow::Result<Value> {
        let mut req = self
            .http
            .request(method, format!("{}{path}", self.base))
            .bearer_auth(self.token.expose_secret());
        if let Some(b) = body {
            req = req.json(&b);
        }
        let resp = req
            .send()
            .await
            .with_context(|| format!("cannot reach the admin API at {}", self.base))?;
        let status = resp.status();
        let text = resp.text().await?;
        let value: Value = if text.is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&text).unwrap_or(Value::String(text))
        };
        if status == reqwest::StatusCode::UNAUTHORIZED {
            bail!(
                "the admin API at {} refused the admin token: give that server's token with --admin-token (or OPD_ADMIN_TOKEN), or --data-dir of that server (its admin-token file); --admin-url names another server",
                self.base
            );
        }
        if !status.is_success() {
            let error = &value["error"];
            let code = error["code"].as_str().unwrap_or("error");
            let description = error["description"].as_str().unwrap_or_default();
            // The server's text, inert: whatever it wrote, one line each.
            let mut message = format!(
                "admin API: {} {}: {}",
                status.as_u16(),
                Untrusted(code),
                Untrusted(description)
            );
            if let Some(details) = error["details"].as_object() {
                for (k, v) in details {
                    let shown = v.as_str().map_or_else(|| v.to_string(), str::to_owned);
                    message.push_str(&format!("\n  {}: {}", Untrusted(k), Untrusted(&shown)));
                }
            }
            bail!(message);
        }
        Ok(value)
    }

    /// A deposit or withdrawal (`kind`) of a peer's liquidity, given its
    /// id or name, in the peering's asset.
    async fn move_peer_money(
        &self,
        id: &str,
        kind: &str,
        movement: Movement,
    ) -> anyhow::Result<Value> {
        let id = self.peer_id(id).await?;
        let amount = if movement.minor_units {
            minor(&movement.amount)?
        } else {
            let scale = self.peer_scale(&id).await?;
            opd_core::decimal::parse_decimal(movement.amount.trim(), scale)?
        };
        let body = move_body(amount, movement.idempotency_key);
        let path = format!("/peers/{}{kind}", encode_segment(&id));
        self.call(reqwest::Method::POST, &path, Some(body)).await
    }

    /// The asset scale of the peering with peer `id`.
    async fn peer_scale(&self, id: &str) -> anyhow::Result<u8> {
        let peer = self
            .call(
                reqwest::Method::GET,
                &format!("/peers/{}", encode_segment(id)),
                None,
            )
            .await?;
        peer["asset"]["scale"]
            .as_u64()
            .and_then(|s| u8::try_from(s).ok())
            .ok_or_else(|| anyhow::anyhow!("the peer has no asset scale: {peer}"))
    }

    /// A peer's id, given its id or its name.
    async fn peer_id(&self, id_or_name: &str) -> anyhow::Result<String> {
        if uuid::Uuid::parse_str(id_or_name).is_ok() {
            return Ok(id_or_name.to_owned());
        }
        let all = self.call(reqwest::Method::GET, "/peers", None).await?;
        all.as_array()
            .into_iter()
            .flatten()
            .find(|p| p["name"] == id_or_name)
            .and_then(|p| p["id"].as_str())
            .map(str::to_owned)
            .ok_or_else(|| anyhow::anyhow!("no peer has the id or name {id_or_name:?}"))
    }

    pub async fn wallet_address(&self, cmd: WalletAddressCommand) -> anyhow::Result<Value> {
        use reqwest::Method;
        match cmd {
            create @ WalletAddressCommand::Create { .. } => self.create_wallet(create).await,
            WalletAddressCommand::Password {
                wallet_address,
                password_file,
            } => {
                let password = read_password(&password_file)?;
                self.set_owner_password(&wallet_address, &password).await?;
                Ok(serde_json::json!({ "ownerPassword": "set", "walletAddress": wallet_address }))
            }
            WalletAddressCommand::List { tenant } => {
                let path = match tenant {
                    Some(t) => format!("/wallet-addresses?tenant={}", encode_segment(&t)),
                    None => "/wallet-addresses".to_owned(),
                };
                self.call(Method::GET, &path, None).await
            }
            WalletAddressCommand::Get { wallet_address } => {
                self.call(
                    Method::GET,
                    &format!("/wallet-addresses/{}", encode_segment(&wallet_address)),
                    None,
                )
                .await
            }
            WalletAddressCommand::Deactivate { wallet_address } => {
                let path = format!(
                    "/wallet-addresses/{}/deactivate",
                    encode_segment(&wallet_address)
                );
                self.call(Method::POST, &path, None).await
            }
            WalletAddressCommand::Deposit {
                wallet_address,
                movement,
            } => {
                self.move_wallet_money(&wallet_address, "/deposits", movement)
                    .await
            }
            WalletAddressCommand::Withdraw {
                wallet_address,
                movement,
            } => {
                self.move_wallet_money(&wallet_address, "/withdrawals", movement)
                    .await
            }
            WalletAddressCommand::Balance { wallet_address } => {
                let path = format!(
                    "/wallet-addresses/{}/balance",
                    encode_segment(&wallet_address)
                );
                self.call(Method::GET, &path, None).await
            }
        }
    }

    pub async fn tenant(&self, cmd: TenantCommand) -> anyhow::Result<Value> {
        use reqwest::Method;
        let one = |id: &str| format!("/tenants/{}", encode_segment(id));
        match cmd {
            TenantCommand::Create { id, settings } => {
                let mut body = tenant_body(settings)?;
                body["id"] = Value::String(id);
                self.call(Method::POST, "/tenants", Some(body)).await
            }
            TenantCommand::List => self.call(Method::GET, "/tenants", None).await,
            TenantCommand::Get { id } => self.call(Method::GET, &one(&id), None).await,
            TenantCommand::Update { id, settings } => {
                let body = tenant_body(settings)?;
                self.call(Method::PATCH, &one(&id), Some(body)).await
            }
            TenantCommand::RotateToken { id } => {
                let path = format!("{}/token", one(&id));
                self.call(Method::POST, &path, None).await
            }
            TenantCommand::Delete { id } => {
                self.call(Method::DELETE, &one(&id), None).await?;
                Ok(serde_json::json!({ "deleted": id }))
            }
        }
    }

    /// `opd wallet-address create`: the wallet address, then its owner's
    /// password when one is given (read first: a file that cannot be read
    /// makes no wallet address).
    async fn create_wallet(&self, cmd: WalletAddressCommand) -> anyhow::Result<Value> {
        let WalletAddressCommand::Create {
            path,
            tenant,
            asset_code,
            asset_scale,
            public_name,
            owner_password_file,
        } = cmd
        else {
            bail!("not a create command");
        };
        let password = owner_password_file
            .as_deref()
            .map(read_password)
            .transpose()?;
        let mut body =
            serde_json::json!({ "path": path, "assetCode": asset_code, "assetScale": asset_scale });
        if let Some(n) = public_name {
            body["publicName"] = Value::String(n);
        }
        if let Some(t) = tenant {
            body["tenant"] = Value::String(t);
        }
        let made = self
            .call(reqwest::Method::POST, "/wallet-addresses", Some(body))
            .await?;
        if let Some(password) = password {
            let id = made["id"].as_str().unwrap_or_default().to_owned();
            self.set_owner_password(&id, &password).await?;
        }
        Ok(made)
    }

    /// Sets the owner password of a wallet address (id, path or
    /// `tenant:path`).
    async fn set_owner_password(&self, wallet: &str, password: &str) -> anyhow::Result<()> {
        let path = format!(
            "/wallet-addresses/{}/owner-password",
            encode_segment(wallet)
        );
        let body = serde_json::json!({ "password": password });
        self.call(reqwest::Method::PUT, &path, Some(body)).await?;
        Ok(())
    }

    /// A deposit or withdrawal (`kind`) of `amount` in the wallet
    /// address's asset.
    async fn move_wallet_money(
        &self,
        wallet_address: &str,
        kind: &str,
        movement: Movement,
    ) -> anyhow::Result<Value> {
        let base = format!("/wallet-addresses/{}", encode_segment(wallet_address));
        let amount = if movement.minor_units {
            minor(&movement.amount)?
        } else {
            let wallet = self.call(reqwest::Method::GET, &base, None).await?;
            let scale = wallet["assetScale"]
                .as_u64()
                .and_then(|s| u8::try_from(s).ok())
                .ok_or_else(|| {
                    anyhow::anyhow!("the wallet address has no asset scale: {wallet}")
                })?;
            opd_core::decimal::parse_decimal(movement.amount.trim(), scale)?
        };
        let body = move_body(amount, movement.idempotency_key);
        self.call(reqwest::Method::POST, &format!("{base}{kind}"), Some(body))
            .await
    }

    pub async fn rate(&self, cmd: RateCommand) -> anyhow::Result<Value> {
        match cmd {
            RateCommand::Set { base, rates } => {
                let mut body = serde_json::Map::new();
                for pair in &rates {
                    let (counter, rate) = pair.split_once('=').ok_or_else(|| {
                        anyhow::anyhow!("{pair:?} is not COUNTER=RATE, such as EUR=0.9")
                    })?;
                    body.insert(counter.trim().to_owned(), rate.trim().into());
                }
                let path = format!("/rates/{}", encode_segment(&base));
                let body = serde_json::json!({ "rates": body });
                self.call(reqwest::Method::PUT, &path, Some(body)).await
            }
            RateCommand::List => self.call(reqwest::Method::GET, "/rates", None).await,
        }
    }

    pub async fn fee(&self, cmd: FeeCommand) -> anyhow::Result<Value> {
        let path = |code: &str, scale: u8| format!("/fees/{}/{scale}", encode_segment(code));
        match cmd {
            FeeCommand::Set {
                asset_code,
                asset_scale,
                fixed,
                minor_units,
                basis_points,
            } => {
                let fixed = if minor_units {
                    minor(&fixed)?
                } else {
                    opd_core::decimal::parse_decimal(fixed.trim(), asset_scale)?
                };
                let body =
                    serde_json::json!({ "fixed": fixed.to_string(), "basisPoints": basis_points });
                self.call(
                    reqwest::Method::PUT,
                    &path(&asset_code, asset_scale),
                    Some(body),
                )
                .await
            }
            FeeCommand::List => self.call(reqwest::Method::GET, "/fees", None).await,
            FeeCommand::Delete {
                asset_code,
                asset_scale,
            } => {
                self.call(
                    reqwest::Method::DELETE,
                    &path(&asset_code, asset_scale),
                    None,
                )
                .await
            }
        }
    }

    pub async fn key(&self, cmd: KeyCommand) -> anyhow::Result<Value> {
        use reqwest::Method;
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
                let path = format!("/wallet-addresses/{}/keys", encode_segment(&wallet_address));
                self.call(Method::POST, &path, Some(serde_json::json!({ "jwk": jwk })))
                    .await
            }
            KeyCommand::List { wallet_address } => {
                self.call(
                    Method::GET,
                    &format!("/wallet-addresses/{}/keys", encode_segment(&wallet_address)),
                    None,
                )
                .await
            }
            KeyCommand::Revoke {
                wallet_address,
                kid,
            } => {
                let path = format!(
                    "/wallet-addresses/{}/keys/{}",
                    encode_segment(&wallet_address),
                    encode_segment(&kid)
                );
                self.call(Method::DELETE, &path, None).await
            }
        }
    }

    pub async fn peer(&self, cmd: PeerCommand) -> anyhow::Result<Value> {
        use reqwest::Method;
        let one = |id: &str, rest: &str| format!("/peers/{}{rest}", encode_segment(id));
        match cmd {
            PeerCommand::Create(settings) => {
                let body = peer_body(settings.asset_scale, settings)?;
                self.call(Method::POST, "/peers", Some(body)).await
            }
            PeerCommand::List => self.call(Method::GET, "/peers", None).await,
            // Every command naming a peer takes its name too.
            PeerCommand::Get { id } => {
                let id = self.peer_id(&id).await?;
                self.call(Method::GET, &one(&id, ""), None).await
            }
            PeerCommand::Update { id, settings } => {
                let id = self.peer_id(&id).await?;
                let amounts = [
                    &settings.max_packet_amount,
                    &settings.liquidity_low,
                    &settings.liquidity_high,
                ];
                // Decimals need the peering's scale, which only the server knows.
                let scale = if amounts.iter().any(|a| a.is_some()) && !settings.minor_units {
                    Some(self.peer_scale(&id).await?)
                } else {
                    None
                };
                let body = peer_body(scale, settings)?;
                self.call(Method::PATCH, &one(&id, ""), Some(body)).await
            }
            PeerCommand::Delete { id } => {
                let id = self.peer_id(&id).await?;
                self.call(Method::DELETE, &one(&id, ""), None).await
            }
            PeerCommand::Deposit { id, movement } => {
                self.move_peer_money(&id, "/deposits", movement).await
            }
            PeerCommand::Withdraw { id, movement } => {
                self.move_peer_money(&id, "/withdrawals", movement).await
            }
            PeerCommand::Balance { id } => {
                let id = self.peer_id(&id).await?;
                self.call(Method::GET, &one(&id, "/balance"), None).await
            }
            PeerCommand::AutoPeer {
                url,
                asset_code,
                asset_scale,
                max_packet_amount,
                minor_units,
                name,
            } => {
                let mut body = serde_json::json!({
                    "url": url,
                    "asset": { "code": asset_code, "scale": asset_scale },
                });
                if let Some(max) = max_packet_amount {
                    let max = units(&max, Some(asset_scale), minor_units, "--max-packet-amount")?;
                    body["maxPacketAmount"] = max.to_string().into();
                }
                if let Some(name) = name {
                    body["name"] = name.into();
                }
                self.call(Method::POST, "/peers/auto-peer", Some(body))
                    .await
            }
        }
    }
}

impl AdminClient {
    pub async fn incoming_payment(&self, cmd: IncomingPaymentCommand) -> anyhow::Result<Value> {
        match cmd {
            IncomingPaymentCommand::Withdraw {
                id,
                idempotency_key,
            } => {
                let path = format!("/incoming-payments/{}/withdrawals", encode_segment(&id));
                let body = serde_json::json!({ "idempotencyKey": idempotency_key });
                self.call(reqwest::Method::POST, &path, Some(body)).await
            }
        }
    }
}

/// `text` in minor units: a decimal at `scale`, or with `minor_units` an
/// integer of minor units; `flag` names it in errors.
fn units(text: &str, scale: Option<u8>, minor_units: bool, flag: &str) -> anyhow::Result<u64> {
    if minor_units {
        return minor(text);
    }
    let scale = scale.ok_or_else(|| {
        anyhow::anyhow!("{flag} in the asset's units needs --asset-scale (or give --minor-units)")
    })?;
    opd_core::decimal::parse_decimal(text.trim(), scale).with_context(|| format!("{flag} {text:?}"))
}

/// The admin API body of a peer's settings: only what was given, amounts
/// in minor units of the peering's asset (at `scale`).
fn peer_body(scale: Option<u8>, s: PeerSettings) -> anyhow::Result<Value> {
    let amount = |text: &Option<String>, flag: &str| {
        text.as_deref()
            .map(|t| units(t, scale, s.minor_units, flag).map(|v| Value::from(v.to_string())))
            .transpose()
    };
    let max_packet_amount = amount(&s.max_packet_amount, "--max-packet-amount")?;
    let low = amount(&s.liquidity_low, "--liquidity-low")?;
    let high = amount(&s.liquidity_high, "--liquidity-high")?;
    let mut body = serde_json::Map::new();
    let mut put = |k: &str, v: Value| {
        body.insert(k.to_owned(), v);
    };
    if let Some(n) = s.name {
        put("name", n.into());
    }
    if let Some(a) = s.static_ilp_address {
        put("staticIlpAddress", a.into());
    }
    if let (Some(code), Some(scale)) = (&s.asset_code, s.asset_scale) {
        put("asset", serde_json::json!({ "code": code, "scale": scale }));
    }
    if let Some(m) = max_packet_amount {
        put("maxPacketAmount", m);
    }
    if !s.routes.is_empty() {
        put("routes", s.routes.into());
    }
    let mut http = serde_json::Map::new();
    if !s.incoming_tokens.is_empty() {
        http.insert(
            "incoming".into(),
            serde_json::json!({ "authTokens": s.incoming_tokens }),
        );
    }
    if let (Some(endpoint), Some(token)) = (s.outgoing_endpoint, s.outgoing_token) {
        http.insert(
            "outgoing".into(),
            serde_json::json!({ "endpoint": endpoint, "authToken": token }),
        );
    }
    if !http.is_empty() {
        put("http", Value::Object(http));
    }
    let mut threshold = serde_json::Map::new();
    if let Some(l) = low {
        threshold.insert("low".into(), l);
    }
    if let Some(h) = high {
        threshold.insert("high".into(), h);
    }
    if !threshold.is_empty() {
        put("liquidityThreshold", Value::Object(threshold));
    }
    Ok(Value::Object(body))
}

/// `text` as an integer of minor units (`--minor-units`).
fn minor(text: &str) -> anyhow::Result<u64> {
    opd_core::money::parse_u64_canonical(text.trim()).map_err(|_| {
        anyhow::anyhow!(
            "{text:?} is not an integer of minor units (drop --minor-units to write 1.50)"
        )
    })
}

fn move_body(amount: u64, key: Option<String>) -> Value {
    let key = key.unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
    serde_json::json!({ "amount": amount.to_string(), "idempotencyKey": key })
}
