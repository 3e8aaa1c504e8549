//! The service configuration `opd serve` runs with, from its settings
//! (flags over the file over defaults): each group of settings converted
//! to the service's units, clamped where a value of 0 would stop the
//! server, and checked where two settings must agree.

use std::collections::HashMap;
use std::time::Duration;

use anyhow::{bail, Context};
use opd_core::{Asset, AssetCode, Fee, Rate};
use opd_ilp::IlpAddress;
use opd_service::platform::network::{Ipv6PrefixLen, NetworkPolicy, TrustedProxies};
use opd_service::{PublicUrl, ServiceConfig};
use secrecy::ExposeSecret;

use crate::config::{ServeArgs, Settings};

/// The service configuration of `settings`, serving `public_url` and the
/// grant endpoint `auth_url`.
pub(super) fn service_config(
    settings: &Settings,
    public_url: PublicUrl,
    auth_url: String,
) -> anyhow::Result<ServiceConfig> {
    let serve = &settings.serve;
    let ilp = IlpAddress::new(serve.ilp_address.clone())
        .map_err(|e| anyhow::anyhow!("invalid ILP address {:?}: {e}", serve.ilp_address))?;
    let mut config = ServiceConfig::new(public_url, auth_url, ilp);
    lifetimes(&mut config, serve)?;
    integrations(&mut config, serve)?;
    config.ilp = ilp_limits(serve);
    request_limits(&mut config, serve)?;
    outbound(&mut config, serve)?;
    config.signature_policy = opd_httpsig::VerifyPolicy {
        max_age: Duration::from_secs(serve.signature_max_age_secs),
        max_future_skew: Duration::from_secs(serve.signature_max_future_secs),
        accept_sdk_compat_format: serve.accept_sdk_signatures,
    };
    config.fees = fees(settings)?;
    config.rates = rates(settings)?;
    Ok(config)
}

/// How long quotes, incoming payments, tokens, cached reads and records
/// last.
fn lifetimes(config: &mut ServiceConfig, serve: &ServeArgs) -> anyhow::Result<()> {
    config.quote_lifespan = Duration::from_secs(serve.quote_lifespan_secs);
    config.incoming_payment_default_expiry =
        Duration::from_secs(serve.incoming_payment_expiry_secs);
    config.incoming_payment_max_expiry =
        Duration::from_secs(serve.incoming_payment_max_expiry_secs);
    if config.incoming_payment_default_expiry > config.incoming_payment_max_expiry {
        bail!("incoming_payment_expiry_secs must not exceed incoming_payment_max_expiry_secs");
    }
    config.access_token_ttl = Duration::from_secs(serve.access_token_ttl_secs);
    config.cache_ttl = Duration::from_millis(serve.cache_ttl_ms);
    config.retention = Duration::from_secs(serve.retention_days.saturating_mul(24 * 3600));
    Ok(())
}

/// The services opd talks to (rates, the identity provider, token
/// introspection, webhooks) and the funding mode.
fn integrations(config: &mut ServiceConfig, serve: &ServeArgs) -> anyhow::Result<()> {
    config.rates_url = serve.rates_url.clone();
    config.rates_cache_ttl = Duration::from_secs(serve.rates_cache_secs);
    if serve
        .idp_secret
        .as_ref()
        .is_some_and(|s| s.expose_secret().len() < 16)
    {
        bail!("the identity-provider secret must be at least 16 characters");
    }
    config.idp_secret = serve.idp_secret.clone();
    config.idp_consent_url = serve.idp_consent_url.clone();
    config.introspection_url = serve.introspection_url.clone();
    config.introspection_token = serve.introspection_token.clone();
    config.webhook_url = serve.webhook_url.clone();
    config.webhook_secret = serve.webhook_secret.clone();
    config.external_funding = serve.external_funding;
    config.spsp = serve.spsp;
    config.web_monetization_event_interval = Duration::from_secs(serve.web_monetization_event_secs);
    Ok(())
}

/// Packet timeouts and rates, none of them zero. A forward must end (and
/// its reply reach the peer) before the ILP listener's request timeout
/// does.
fn ilp_limits(serve: &ServeArgs) -> opd_service::IlpLimits {
    let request_ms = serve.request_timeout_secs.max(1).saturating_mul(1000);
    opd_service::IlpLimits {
        packet_timeout: Duration::from_millis(serve.ilp_packet_timeout_ms.max(1)),
        forward_timeout: Duration::from_millis(
            serve
                .ilp_forward_timeout_ms
                .clamp(1, request_ms.saturating_sub(1000).max(1)),
        ),
        packets_per_step: serve.ilp_packets_per_step.max(1),
        packets_per_minute: serve.ilp_packets_per_minute.max(1),
        stall: opd_service::StallBounds {
            attempts: serve.payment_stall_attempts.max(1),
            time: Duration::from_secs(serve.payment_stall_secs.max(1)),
        },
    }
}

/// How much clients may ask (grants, creates, waiting interactions,
/// key-only incoming payments), by client and by network, and the quotes'
/// slippage.
fn request_limits(config: &mut ServiceConfig, serve: &ServeArgs) -> anyhow::Result<()> {
    config.grant_requests_per_minute = serve.grant_requests_per_minute;
    config.create_requests_per_minute = serve.create_requests_per_minute;
    config.slippage_basis_points = serve.slippage_basis_points;
    config.max_pending_interactions = serve.max_pending_interactions;
    config.key_only_incoming_per_hour = serve.key_only_incoming_per_hour;
    config.key_only_incoming_per_hour_total = serve.key_only_incoming_per_hour_total;
    config.key_only_incoming_per_hour_per_network = serve.key_only_incoming_per_hour_per_network;
    config.networks = network_policy(serve)?;
    Ok(())
}

/// Whom opd may reach and which CAs it trusts. What the operator configured
/// by URL is trusted to be reached, even on an internal address; anything
/// else needs --outbound-allow.
fn outbound(config: &mut ServiceConfig, serve: &ServeArgs) -> anyhow::Result<()> {
    config.outbound_allow = serve.outbound_allow.clone();
    config.outbound_ca_pem = match &serve.ca_file {
        Some(path) => Some(
            std::fs::read(path)
                .with_context(|| format!("cannot read the CA file {}", path.display()))?,
        ),
        None => None,
    };
    for url in [
        &serve.rates_url,
        &serve.webhook_url,
        &serve.introspection_url,
    ]
    .into_iter()
    .flatten()
    {
        if let Some(host) = url::Url::parse(url)
            .ok()
            .and_then(|u| u.host_str().map(str::to_owned))
        {
            config
                .outbound_allow
                .push(host.trim_matches(['[', ']']).to_owned());
        }
    }
    Ok(())
}

/// `--ipv6-prefix-len` and `--trusted-proxies`.
fn network_policy(serve: &ServeArgs) -> anyhow::Result<NetworkPolicy> {
    Ok(NetworkPolicy {
        ipv6_prefix: Ipv6PrefixLen::new(serve.ipv6_prefix_len)
            .map_err(|e| anyhow::anyhow!("--ipv6-prefix-len: {e}"))?,
        trusted_proxies: TrustedProxies::parse(&serve.trusted_proxies)
            .map_err(|e| anyhow::anyhow!("--trusted-proxies: {e}"))?,
    })
}

/// The configuration file's fees, by asset.
fn fees(settings: &Settings) -> anyhow::Result<HashMap<Asset, Fee>> {
    let mut fees = HashMap::new();
    for f in &settings.fees {
        let asset = Asset::parse(&f.asset_code, i64::from(f.asset_scale))
            .map_err(|e| anyhow::anyhow!("fees: {e}"))?;
        fees.insert(
            asset,
            Fee::new(f.fixed, f.basis_points).map_err(|e| anyhow::anyhow!("fees: {e}"))?,
        );
    }
    Ok(fees)
}

/// The configuration file's rates, by base and counter asset.
fn rates(settings: &Settings) -> anyhow::Result<HashMap<AssetCode, HashMap<AssetCode, Rate>>> {
    let mut rates: HashMap<AssetCode, HashMap<AssetCode, Rate>> = HashMap::new();
    for (base, counters) in &settings.rates {
        let base = AssetCode::parse(base).map_err(|e| anyhow::anyhow!("rates: {e}"))?;
        for (counter, rate) in counters {
            let counter = AssetCode::parse(counter).map_err(|e| anyhow::anyhow!("rates: {e}"))?;
            let rate =
                Rate::parse(rate).map_err(|e| anyhow::anyhow!("rates.{base}.{counter}: {e}"))?;
            rates.entry(base.clone()).or_default().insert(counter, rate);
        }
    }
    Ok(rates)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn the_service_configuration_never_shows_its_secrets_in_debug() {
        let mut settings = Settings::for_data_dir(Path::new("/data"));
        let secrets = [
            "idp-secret-0123456789",
            "webhook-secret-0123456789",
            "token-0123456789",
        ];
        settings.serve.idp_secret = Some(secrets[0].into());
        settings.serve.webhook_secret = Some(secrets[1].into());
        settings.serve.introspection_token = Some(secrets[2].into());
        let public_url =
            PublicUrl::parse("http://127.0.0.1:8080").unwrap_or_else(|e| panic!("{e}"));
        let config = service_config(&settings, public_url, "http://127.0.0.1:8081/".into())
            .unwrap_or_else(|e| panic!("{e:#}"));
        let shown = format!("{config:?}");
        for secret in secrets {
            assert!(!shown.contains(secret), "{secret} shows in {shown}");
        }
    }

    /// `opd serve` runs with the flags' defaults (`config.rs`, which the
    /// operator's guide's table is checked against), the service's own tests and
    /// embedders with `ServiceConfig::new`, `IlpLimits::default` and
    /// `VerifyPolicy::default`. Both read the same constants
    /// (`opd_service::defaults`, `VerifyPolicy::DEFAULT_*`); this checks
    /// what the constants cannot: a setting given its default by a literal
    /// on one side, and `service_config`'s unit conversions and clamps. The
    /// destructuring has no `..`: a new field does not compile until it is
    /// compared here.
    #[test]
    fn the_flags_defaults_are_the_service_defaults() {
        let settings = Settings::for_data_dir(Path::new("/data"));
        let public_url =
            PublicUrl::parse("http://127.0.0.1:8080").unwrap_or_else(|e| panic!("{e}"));
        let auth_url = "http://127.0.0.1:8081/".to_owned();
        let served = service_config(&settings, public_url.clone(), auth_url.clone())
            .unwrap_or_else(|e| panic!("{e:#}"));
        // The ILP address's default is the flag's alone (`new` takes it).
        let ilp_address =
            IlpAddress::new(settings.serve.ilp_address.clone()).unwrap_or_else(|e| panic!("{e}"));
        let ServiceConfig {
            public_url,
            auth_server_url,
            ilp_address,
            quote_lifespan,
            incoming_payment_default_expiry,
            incoming_payment_max_expiry,
            fees,
            rates,
            slippage_basis_points,
            rates_url,
            rates_cache_ttl,
            rates_timeout,
            outbound_allow,
            // Not a default: `start` sets the key it loads or creates.
            secrets_key: _,
            grant_requests_per_minute,
            create_requests_per_minute,
            max_pending_interactions,
            key_only_incoming_per_hour,
            key_only_incoming_per_hour_total,
            key_only_incoming_per_hour_per_network,
            networks,
            outbound_max_concurrent,
            outbound_ca_pem,
            ilp_public_url,
            retention,
            pricing_cache_ttl,
            client_keys_ttl,
            access_token_ttl,
            interaction_ttl,
            continue_wait_secs,
            idp_secret,
            idp_consent_url,
            introspection_url,
            introspection_token,
            signature_policy,
            replay_wait,
            replay_capacity,
            replay_max_bytes,
            webhook_url,
            webhook_secret,
            external_funding,
            cache_ttl,
            spsp,
            web_monetization_event_interval,
            ilp:
                opd_service::IlpLimits {
                    packet_timeout,
                    forward_timeout,
                    packets_per_step,
                    packets_per_minute,
                    stall,
                },
        } = ServiceConfig::new(public_url, auth_url, ilp_address);
        macro_rules! same {
            (ilp: $($field:ident),* $(,)?) => {
                $(assert_eq!(served.ilp.$field, $field, "ilp.{}", stringify!($field));)*
            };
            ($($field:ident),* $(,)?) => {
                $(assert_eq!(served.$field, $field, "{}", stringify!($field));)*
            };
        }
        // Every setting with a flag.
        same!(
            quote_lifespan,
            incoming_payment_default_expiry,
            incoming_payment_max_expiry,
            fees,
            rates,
            slippage_basis_points,
            rates_url,
            rates_cache_ttl,
            outbound_allow,
            grant_requests_per_minute,
            create_requests_per_minute,
            max_pending_interactions,
            key_only_incoming_per_hour,
            key_only_incoming_per_hour_total,
            key_only_incoming_per_hour_per_network,
            networks,
            outbound_ca_pem,
            retention,
            access_token_ttl,
            idp_consent_url,
            introspection_url,
            signature_policy,
            webhook_url,
            external_funding,
            cache_ttl,
            spsp,
            web_monetization_event_interval,
        );
        same!(ilp: packet_timeout, forward_timeout, packets_per_step, packets_per_minute, stall);
        // Secrets have no `PartialEq`; none has a default.
        for (name, served, new) in [
            ("idp_secret", &served.idp_secret, &idp_secret),
            (
                "introspection_token",
                &served.introspection_token,
                &introspection_token,
            ),
            ("webhook_secret", &served.webhook_secret, &webhook_secret),
        ] {
            assert!(served.is_none() && new.is_none(), "{name}");
        }
        // `start` derives the ILP public URL from --ilp-listen.
        assert_eq!(
            format!("http://{}/ilp", settings.serve.ilp_listen),
            ilp_public_url,
            "ilp_public_url"
        );
        // Not settings: the arguments, and what has no flag (so comes from
        // `new` on both sides, or is set by `start`: the connection budget).
        same!(
            public_url,
            auth_server_url,
            ilp_address,
            rates_timeout,
            outbound_max_concurrent,
            pricing_cache_ttl,
            client_keys_ttl,
            interaction_ttl,
            continue_wait_secs,
            replay_wait,
            replay_capacity,
            replay_max_bytes,
        );
    }
}
