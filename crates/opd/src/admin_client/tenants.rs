//! `opd tenant ...`: the wallet providers a server serves (the operator's
//! token only). `create` and `rotate-token` print the tenant's admin
//! token, once.

use anyhow::Context;
use reqwest::Method;
use serde_json::{json, Value};

use super::render::{self, typed};
use super::{encode_segment, AdminClient, Answer};
use crate::cli::{TenantCommand, TenantSettings};

/// The fields of a tenant's settings that were given.
fn tenant_body(s: TenantSettings) -> anyhow::Result<Value> {
    let mut body = json!({});
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

/// A tenant's details, one per line.
fn tenant_details(t: &Value) -> Vec<String> {
    let mut lines = vec![render::tenant(t)];
    lines.extend(render::details(&[
        (
            "authorization server",
            render::optional(&t["authServerUrl"]),
        ),
        ("webhook URL", render::optional(&t["webhookUrl"])),
        ("consent app", render::optional(&t["idpConsentUrl"])),
        ("created", render::optional(&t["createdAt"])),
        ("updated", render::optional(&t["updatedAt"])),
    ]));
    lines
}

/// The line giving tenant `id`'s new admin token (of `answer`), which
/// is shown only once.
fn token_line(id: &str, answer: &Value) -> String {
    format!(
        "admin token of {} (shown once; opd keeps only its digest): {}",
        typed(id),
        render::text(&answer["adminToken"])
    )
}

impl AdminClient {
    pub async fn tenant(&self, cmd: TenantCommand) -> anyhow::Result<Answer> {
        let one = |id: &str| format!("/tenants/{}", encode_segment(id));
        match cmd {
            TenantCommand::Create { id, settings } => {
                let mut body = tenant_body(settings)?;
                body["id"] = Value::String(id.clone());
                let t = self.call(Method::POST, "/tenants", Some(body)).await?;
                let lines = vec![
                    format!("tenant created: {}", render::tenant(&t)),
                    token_line(&id, &t),
                ];
                Ok(Answer::new(t, lines))
            }
            TenantCommand::List => {
                let all = self.call(Method::GET, "/tenants", None).await?;
                let lines = render::list(&all, "no tenants", render::tenant);
                Ok(Answer::new(all, lines))
            }
            TenantCommand::Get { id } => {
                let t = self.call(Method::GET, &one(&id), None).await?;
                let lines = tenant_details(&t);
                Ok(Answer::new(t, lines))
            }
            TenantCommand::Update { id, settings } => {
                let body = tenant_body(settings)?;
                let t = self.call(Method::PATCH, &one(&id), Some(body)).await?;
                let line = format!("tenant updated: {}", render::tenant(&t));
                Ok(Answer::line(t, line))
            }
            TenantCommand::RotateToken { id } => {
                let path = format!("{}/token", one(&id));
                let t = self.call(Method::POST, &path, None).await?;
                let line = token_line(&id, &t);
                Ok(Answer::line(t, line))
            }
            TenantCommand::Delete { id } => {
                self.call(Method::DELETE, &one(&id), None).await?;
                let line = format!("tenant deleted: {}", typed(&id));
                Ok(Answer::line(json!({ "deleted": id }), line))
            }
        }
    }
}
