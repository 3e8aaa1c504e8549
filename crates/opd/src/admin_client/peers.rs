//! `opd peer ...`: Interledger peers and their liquidity, each named by
//! its name or id, amounts in the peering's asset.

use reqwest::Method;
use serde_json::{json, Value};

use super::render::{self, typed, Asset};
use super::{encode_segment, minor, move_body, units, AdminClient, Answer};
use crate::cli::{Movement, PeerCommand, PeerSettings};

/// `/peers/{id}` and what follows.
fn peer_path(id: &str, rest: &str) -> String {
    format!("/peers/{}{rest}", encode_segment(id))
}

/// A peer's details, one per line, amounts in the peering's asset.
fn peer_details(p: &Value) -> Vec<String> {
    let asset = Asset::of_object(&p["asset"]);
    let amount = |v: &Value| (!v.is_null()).then(|| asset.amount_of(v));
    let routes: Vec<String> = p["routes"]
        .as_array()
        .into_iter()
        .flatten()
        .map(render::text)
        .collect();
    let threshold = &p["liquidityThreshold"];
    let mut lines = vec![render::peer(p)];
    lines.extend(render::details(&[
        ("id", render::optional(&p["id"])),
        ("routes", Some(routes.join(", "))),
        ("max packet amount", amount(&p["maxPacketAmount"])),
        ("liquidity low", amount(&threshold["low"])),
        ("liquidity high", amount(&threshold["high"])),
        (
            "outgoing endpoint",
            render::optional(&p["http"]["outgoing"]["endpoint"]),
        ),
        ("created by", render::optional(&p["createdBy"])),
    ]));
    lines
}

impl AdminClient {
    pub async fn peer(&self, cmd: PeerCommand) -> anyhow::Result<Answer> {
        match cmd {
            PeerCommand::Create(settings) => {
                let body = peer_body(settings.asset_scale, settings)?;
                let made = self.call(Method::POST, "/peers", Some(body)).await?;
                let line = format!("peer created: {}", render::peer(&made));
                Ok(Answer::line(made, line))
            }
            PeerCommand::List => {
                let all = self.call(Method::GET, "/peers", None).await?;
                let lines = render::list(&all, "no peers", render::peer);
                Ok(Answer::new(all, lines))
            }
            // Every command naming a peer takes its name too.
            PeerCommand::Get { id } => {
                let id = self.peer_id(&id).await?;
                let p = self.call(Method::GET, &peer_path(&id, ""), None).await?;
                let lines = peer_details(&p);
                Ok(Answer::new(p, lines))
            }
            PeerCommand::Update { id, settings } => self.update_peer(&id, settings).await,
            PeerCommand::Delete { id: named } => {
                let id = self.peer_id(&named).await?;
                self.call(Method::DELETE, &peer_path(&id, ""), None).await?;
                Ok(Answer::line(
                    json!({ "deleted": id }),
                    format!("peer deleted: {}", typed(&named)),
                ))
            }
            PeerCommand::Deposit { id, movement } => {
                self.move_peer_money(&id, true, movement).await
            }
            PeerCommand::Withdraw { id, movement } => {
                self.move_peer_money(&id, false, movement).await
            }
            PeerCommand::Balance { id: named } => {
                let id = self.peer_id(&named).await?;
                let answer = self
                    .call(Method::GET, &peer_path(&id, "/balance"), None)
                    .await?;
                let asset = Asset::of_object(&answer["asset"]);
                let line = format!("{}: {}", typed(&named), asset.amount_of(&answer["balance"]));
                Ok(Answer::line(answer, line))
            }
            auto @ PeerCommand::AutoPeer { .. } => self.auto_peer(auto).await,
        }
    }

    /// `opd peer update`: amounts in the peering's asset, whose scale only
    /// the server knows.
    async fn update_peer(&self, id: &str, settings: PeerSettings) -> anyhow::Result<Answer> {
        let id = self.peer_id(id).await?;
        let amounts = [
            &settings.max_packet_amount,
            &settings.liquidity_low,
            &settings.liquidity_high,
        ];
        let scale = if amounts.iter().any(|a| a.is_some()) && !settings.minor_units {
            let peer = self.call(Method::GET, &peer_path(&id, ""), None).await?;
            Some(peering_scale(&peer)?)
        } else {
            None
        };
        let body = peer_body(scale, settings)?;
        let p = self
            .call(Method::PATCH, &peer_path(&id, ""), Some(body))
            .await?;
        let line = format!("peer updated: {}", render::peer(&p));
        Ok(Answer::line(p, line))
    }

    /// `opd peer auto-peer`: asks another server to peer.
    async fn auto_peer(&self, cmd: PeerCommand) -> anyhow::Result<Answer> {
        let PeerCommand::AutoPeer {
            url,
            asset_code,
            asset_scale,
            max_packet_amount,
            minor_units,
            name,
        } = cmd
        else {
            anyhow::bail!("not an auto-peer command");
        };
        let mut body = json!({
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
        let p = self
            .call(Method::POST, "/peers/auto-peer", Some(body))
            .await?;
        let line = format!("peered: {}", render::peer(&p));
        Ok(Answer::line(p, line))
    }

    /// A deposit (or withdrawal) of a peer's liquidity, given its id or
    /// name, in the peering's asset: `deposited 1.50 USD to peer bank;
    /// liquidity 1.75 USD`.
    async fn move_peer_money(
        &self,
        named: &str,
        deposit: bool,
        movement: Movement,
    ) -> anyhow::Result<Answer> {
        let id = self.peer_id(named).await?;
        let peer = self.call(Method::GET, &peer_path(&id, ""), None).await?;
        let asset = Asset::of_object(&peer["asset"]);
        let amount = if movement.minor_units {
            minor(&movement.amount)?
        } else {
            opd_core::decimal::parse_decimal(movement.amount.trim(), peering_scale(&peer)?)?
        };
        let body = move_body(amount, movement.idempotency_key);
        let kind = if deposit { "/deposits" } else { "/withdrawals" };
        let answer = self
            .call(Method::POST, &peer_path(&id, kind), Some(body))
            .await?;
        let (done, to) = if deposit {
            ("deposited", "to")
        } else {
            ("withdrew", "from")
        };
        let line = format!(
            "{done} {} {to} peer {}; liquidity {}",
            asset.amount_of(&answer["transfer"]["amount"]),
            render::text(&peer["name"]),
            asset.amount_of(&answer["balance"])
        );
        Ok(Answer::line(answer, line))
    }

    /// A peer's id, given its id or its name.
    async fn peer_id(&self, id_or_name: &str) -> anyhow::Result<String> {
        if uuid::Uuid::parse_str(id_or_name).is_ok() {
            return Ok(id_or_name.to_owned());
        }
        let all = self.call(Method::GET, "/peers", None).await?;
        all.as_array()
            .into_iter()
            .flatten()
            .find(|p| p["name"] == id_or_name)
            .and_then(|p| p["id"].as_str())
            .map(str::to_owned)
            .ok_or_else(|| anyhow::anyhow!("no peer has the id or name {id_or_name:?}"))
    }
}

/// The asset scale of a peering, from the peer's answer.
fn peering_scale(peer: &Value) -> anyhow::Result<u8> {
    Asset::of_object(&peer["asset"])
        .scale()
        .ok_or_else(|| anyhow::anyhow!("the peer has no asset scale: {peer}"))
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
        put("asset", json!({ "code": code, "scale": scale }));
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
            json!({ "authTokens": s.incoming_tokens }),
        );
    }
    if let (Some(endpoint), Some(token)) = (s.outgoing_endpoint, s.outgoing_token) {
        http.insert(
            "outgoing".into(),
            json!({ "endpoint": endpoint, "authToken": token }),
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
