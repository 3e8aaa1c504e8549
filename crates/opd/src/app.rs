//! Startup: open the database, assemble the services, bind the three
//! listeners and serve until shutdown. `opd serve` and the tests' `TestApp`
//! both run `start`.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context};
use opd_api::admin::{admin_router, AdminState};
use opd_api::auth_server::auth_router;
use opd_api::resource_server::open_payments_router;
use opd_api::AppState;
use opd_core::{Asset, AssetCode, Clock, Fee, Random, Rate};
use opd_ilp::IlpAddress;
use opd_service::platform::network::{Ipv6PrefixLen, NetworkPolicy, TrustedProxies};
use opd_service::{wallets, PublicUrl, ServiceConfig, Services};
use opd_store::ConnectOptions;
use secrecy::{ExposeSecret, SecretString};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinSet;

use crate::config::Settings;

/// A started server.
#[derive(Debug)]
pub struct Running {
    pub open_payments_addr: SocketAddr,
    pub auth_addr: SocketAddr,
    pub admin_addr: SocketAddr,
    /// The admin API's base URL (`https://` only with TLS and
    /// `--allow-remote-admin`).
    pub admin_url: String,
    /// Where peers send ILP packets (ILP-over-HTTP).
    pub ilp_addr: SocketAddr,
    /// The auto-peering acceptor, when it is on.
    pub auto_peering_addr: Option<SocketAddr>,
    pub public_url: String,
    pub auth_public_url: String,
    pub admin_token: SecretString,
    /// The file the admin token was generated into, when this start
    /// generated it (to say where it is).
    pub admin_token_generated: Option<PathBuf>,
    /// What `--demo` made, to tell the user.
    pub demo: Option<crate::demo::Demo>,
    pub services: Arc<Services>,
    shutdown: watch::Sender<bool>,
    tasks: JoinSet<std::io::Result<()>>,
}

impl Running {
    /// Asks every listener to stop, and waits for them.
    pub async fn shutdown(mut self) -> anyhow::Result<()> {
        let _ = self.shutdown.send(true);
        while let Some(done) = self.tasks.join_next().await {
            done.context("listener task failed")?
                .context("listener failed")?;
        }
        Ok(())
    }

    /// Serves until a listener fails or `signal` resolves.
    pub async fn serve_until(
        mut self,
        signal: impl std::future::Future<Output = ()>,
    ) -> anyhow::Result<()> {
        tokio::select! {
            _ = signal => {}
            Some(done) = self.tasks.join_next() => {
                done.context("listener task failed")?.context("listener failed")?;
                bail!("a listener stopped unexpectedly");
            }
        }
        self.shutdown().await
    }
}

/// Reads the admin token from the data directory, or creates it there
/// (mode 0600) on first start. Returns the token and, when it is new, its
/// file.
fn admin_token(
    settings: &Settings,
    random: &dyn Random,
) -> anyhow::Result<(SecretString, Option<PathBuf>)> {
    if let Some(t) = &settings.common.admin_token {
        if t.expose_secret().len() < 32 {
            bail!("the admin token must be at least 32 characters (128 bits or more of randomness: it is the only defence against guessing)");
        }
        return Ok((t.clone(), None));
    }
    let path = settings.common.data_dir.join("admin-token");
    if path.exists() {
        let token = std::fs::read_to_string(&path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        return Ok((token.trim().into(), None));
    }
    let mut bytes = [0u8; 32];
    random.fill(&mut bytes);
    let token = opd_core::hex::lower(&bytes);
    write_private(&path, &token)?;
    Ok((token.into(), Some(path)))
}

/// Reads a 32-byte key written as 64 hex digits.
fn parse_key(text: &str, what: &str) -> anyhow::Result<[u8; 32]> {
    let text = text.trim();
    let bytes: Option<Vec<u8>> = (text.len() == 64)
        .then(|| {
            (0..32)
                .map(|i| u8::from_str_radix(&text[2 * i..2 * i + 2], 16).ok())
                .collect()
        })
        .flatten();
    bytes
        .and_then(|b| <[u8; 32]>::try_from(b).ok())
        .ok_or_else(|| anyhow::anyhow!("{what} must be 64 hex digits (32 bytes)"))
}

fn read_key(path: &Path, what: &str) -> anyhow::Result<[u8; 32]> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    parse_key(&text, what)
}

/// The key server secrets are sealed with: `OPD_SECRETS_KEY`, else
/// `--secrets-key-file`, else `<data-dir>/secrets-key` (created, 0600, on
/// first start).
fn secrets_key(
    settings: &Settings,
    random: &dyn Random,
) -> anyhow::Result<opd_service::platform::secrets::SecretsKey> {
    let current = if let Ok(hex) = std::env::var("OPD_SECRETS_KEY").map(SecretString::from) {
        parse_key(hex.expose_secret(), "OPD_SECRETS_KEY")?
    } else if let Some(path) = &settings.serve.secrets_key_file {
        read_key(path, "the secrets key file")?
    } else {
        let path = settings.common.data_dir.join("secrets-key");
        if path.exists() {
            read_key(&path, "the secrets key file")?
        } else {
            let mut bytes = [0u8; 32];
            random.fill(&mut bytes);
            write_private(&path, &opd_core::hex::lower(&bytes))?;
            bytes
        }
    };
    let previous = settings
        .serve
        .secrets_key_previous_file
        .as_deref()
        .map(|p| read_key(p, "the previous secrets key file"))
        .transpose()?;
    Ok(opd_service::platform::secrets::SecretsKey { current, previous })
}

#[cfg(unix)]
fn write_private(path: &Path, contents: &str) -> anyhow::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("cannot create {}", path.display()))?;
    f.write_all(contents.as_bytes())?;
    Ok(())
}

#[cfg(not(unix))]
fn write_private(path: &Path, contents: &str) -> anyhow::Result<()> {
    std::fs::write(path, contents).with_context(|| format!("cannot create {}", path.display()))
}

fn service_config(
    settings: &Settings,
    public_url: PublicUrl,
    auth_url: String,
) -> anyhow::Result<ServiceConfig> {
    let ilp = IlpAddress::new(settings.serve.ilp_address.clone()).map_err(|e| {
        anyhow::anyhow!("invalid ILP address {:?}: {e}", settings.serve.ilp_address)
    })?;
    let mut config = ServiceConfig::new(public_url, auth_url, ilp);
    config.quote_lifespan = Duration::from_secs(settings.serve.quote_lifespan_secs);
    config.incoming_payment_default_expiry =
        Duration::from_secs(settings.serve.incoming_payment_expiry_secs);
    config.incoming_payment_max_expiry =
        Duration::from_secs(settings.serve.incoming_payment_max_expiry_secs);
    if config.incoming_payment_default_expiry > config.incoming_payment_max_expiry {
        bail!("incoming_payment_expiry_secs must not exceed incoming_payment_max_expiry_secs");
    }
    config.rates_url = settings.serve.rates_url.clone();
    config.rates_cache_ttl = Duration::from_secs(settings.serve.rates_cache_secs);
    config.access_token_ttl = Duration::from_secs(settings.serve.access_token_ttl_secs);
    if settings
        .serve
        .idp_secret
        .as_ref()
        .is_some_and(|s| s.expose_secret().len() < 16)
    {
        bail!("the identity-provider secret must be at least 16 characters");
    }
    config.idp_secret = settings.serve.idp_secret.clone();
    config.idp_consent_url = settings.serve.idp_consent_url.clone();
    config.introspection_url = settings.serve.introspection_url.clone();
    config.introspection_token = settings.serve.introspection_token.clone();
    config.webhook_url = settings.serve.webhook_url.clone();
    config.webhook_secret = settings.serve.webhook_secret.clone();
    config.external_funding = settings.serve.external_funding;
    config.cache_ttl = Duration::from_millis(settings.serve.cache_ttl_ms);
    // A forward must end (and its reply reach the peer) before the ILP
    // listener's request timeout does.
    let request_ms = settings
        .serve
        .request_timeout_secs
        .max(1)
        .saturating_mul(1000);
    config.ilp = opd_service::IlpLimits {
        packet_timeout: Duration::from_millis(settings.serve.ilp_packet_timeout_ms.max(1)),
        forward_timeout: Duration::from_millis(
            settings
                .serve
                .ilp_forward_timeout_ms
                .clamp(1, request_ms.saturating_sub(1000).max(1)),
        ),
        packets_per_step: settings.serve.ilp_packets_per_step.max(1),
        packets_per_minute: settings.serve.ilp_packets_per_minute.max(1),
        stall: opd_service::StallBounds {
            attempts: settings.serve.payment_stall_attempts.max(1),
            time: Duration::from_secs(settings.serve.payment_stall_secs.max(1)),
        },
    };
    config.retention = Duration::from_secs(settings.serve.retention_days.saturating_mul(24 * 3600));
    config.grant_requests_per_minute = settings.serve.grant_requests_per_minute;
    config.create_requests_per_minute = settings.serve.create_requests_per_minute;
    config.slippage_basis_points = settings.serve.slippage_basis_points;
    config.max_pending_interactions = settings.serve.max_pending_interactions;
    config.key_only_incoming_per_hour = settings.serve.key_only_incoming_per_hour;
    config.key_only_incoming_per_hour_total = settings.serve.key_only_incoming_per_hour_total;
    config.key_only_incoming_per_hour_per_network =
        settings.serve.key_only_incoming_per_hour_per_network;
    config.networks = network_policy(&settings.serve)?;
    // What the operator configured by URL is trusted to be reached, even
    // on an internal address; anything else needs --outbound-allow.
    config.outbound_allow = settings.serve.outbound_allow.clone();
    config.outbound_ca_pem = match &settings.serve.ca_file {
        Some(path) => Some(
            std::fs::read(path)
                .with_context(|| format!("cannot read the CA file {}", path.display()))?,
        ),
        None => None,
    };
    for url in [
        &settings.serve.rates_url,
        &settings.serve.webhook_url,
        &settings.serve.introspection_url,
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
    config.signature_policy = opd_httpsig::VerifyPolicy {
        max_age: Duration::from_secs(settings.serve.signature_max_age_secs),
        max_future_skew: Duration::from_secs(settings.serve.signature_max_future_secs),
        accept_sdk_compat_format: settings.serve.accept_sdk_signatures,
    };
    let mut fees = HashMap::new();
    for f in &settings.fees {
        let asset = Asset::parse(&f.asset_code, i64::from(f.asset_scale))
            .map_err(|e| anyhow::anyhow!("fees: {e}"))?;
        fees.insert(
            asset,
            Fee::new(f.fixed, f.basis_points).map_err(|e| anyhow::anyhow!("fees: {e}"))?,
        );
    }
    config.fees = fees;
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
    config.rates = rates;
    Ok(config)
}

/// Creates the data directory readable by this user only (0700); an
/// existing one keeps its mode.
fn create_private_dir(dir: &std::path::Path) -> anyhow::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    if dir.is_dir() {
        return Ok(());
    }
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .with_context(|| format!("cannot create data directory {}", dir.display()))
}

/// Creates the SQLite database file readable by this user only (0600)
/// before SQLite opens it (its WAL and shared-memory files take the same
/// mode); an existing file keeps its mode.
fn create_private_file(path: &std::path::Path) -> anyhow::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    if path.exists() {
        return Ok(());
    }
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map(|_| ())
        .with_context(|| format!("cannot create {}", path.display()))
}

async fn bind(addr: SocketAddr, what: &str) -> anyhow::Result<(TcpListener, SocketAddr)> {
    let listener = TcpListener::bind(addr)
        .await
        .with_context(|| format!("cannot listen on {addr} ({what})"))?;
    let local = listener.local_addr()?;
    Ok((listener, local))
}

/// `--ipv6-prefix-len` and `--trusted-proxies`.
fn network_policy(serve: &crate::config::ServeArgs) -> anyhow::Result<NetworkPolicy> {
    Ok(NetworkPolicy {
        ipv6_prefix: Ipv6PrefixLen::new(serve.ipv6_prefix_len)
            .map_err(|e| anyhow::anyhow!("--ipv6-prefix-len: {e}"))?,
        trusted_proxies: TrustedProxies::parse(&serve.trusted_proxies)
            .map_err(|e| anyhow::anyhow!("--trusted-proxies: {e}"))?,
    })
}

/// The grant endpoint of `--auth-public-url`, or why it cannot be served.
fn auth_grant_endpoint(url: &str) -> anyhow::Result<String> {
    opd_service::platform::urls::grant_endpoint(url)
        .map_err(|e| anyhow::anyhow!("--auth-public-url {url:?} cannot be served: {e}"))
}

/// Starts opd with the given settings, clock and random source.
pub async fn start(
    settings: Settings,
    clock: Arc<dyn Clock>,
    random: Arc<dyn Random>,
) -> anyhow::Result<Running> {
    if !settings.common.admin_listen.ip().is_loopback() && !settings.serve.allow_remote_admin {
        bail!(
            "the admin API would listen on {}, which is not a loopback address; set --allow-remote-admin to allow it",
            settings.common.admin_listen
        );
    }
    // Refused before anything is opened or bound.
    if let Some(url) = &settings.serve.auth_public_url {
        auth_grant_endpoint(url)?;
    }
    let budget = file_budget(&settings)?;
    if settings.common.database_is_default() || !settings.common.data_dir.as_os_str().is_empty() {
        create_private_dir(&settings.common.data_dir)?;
    }
    if settings.common.database_is_default() {
        create_private_file(&settings.common.data_dir.join("opd.sqlite"))?;
    }
    // Once per process, whatever the number of servers it starts (see
    // `opd_api::metrics`).
    opd_api::metrics::install();
    let (admin_token, admin_token_generated) = admin_token(&settings, random.as_ref())?;
    let sealing_key = secrets_key(&settings, random.as_ref())?;

    let mut options =
        ConnectOptions::new(settings.common.database_url().expose_secret().to_owned());
    options.create_sqlite_file = settings.common.database_is_default();
    options.migrate_postgres = settings.serve.migrate;
    options.exclusive_sqlite = true;
    let store = opd_store::connect(&options)
        .await
        .context("cannot open the database")?;

    let tls = match (&settings.serve.tls_cert, &settings.serve.tls_key) {
        (Some(cert), Some(key)) => Some(crate::tls::acceptor(cert, key)?),
        _ => None,
    };
    let scheme = if tls.is_some() { "https" } else { "http" };
    let (op_listener, op_addr) = bind(settings.serve.listen, "Open Payments").await?;
    let (auth_listener, auth_addr) =
        bind(settings.serve.auth_listen, "authorization server").await?;
    let (admin_listener, admin_addr) = bind(settings.common.admin_listen, "admin API").await?;
    let (ilp_listener, ilp_addr) = bind(settings.serve.ilp_listen, "ILP-over-HTTP").await?;
    let auto_peering = match settings.serve.auto_peering_listen {
        Some(addr) => Some(bind(addr, "auto-peering").await?),
        None => None,
    };

    let public_url = settings
        .serve
        .public_url
        .clone()
        .unwrap_or_else(|| format!("{scheme}://{op_addr}"));
    let public_url = PublicUrl::parse(&public_url)
        .map_err(|e| anyhow::anyhow!("public URL {public_url:?}: {e}"))?;
    // The published `authServer` is the grant endpoint itself (see
    // `grant_endpoint`); the auth listener serves under its path.
    let auth_public_url = settings
        .serve
        .auth_public_url
        .clone()
        .unwrap_or_else(|| format!("{scheme}://{auth_addr}"));
    let grant_endpoint = auth_grant_endpoint(&auth_public_url)?;
    let auth_public_url = grant_endpoint.trim_end_matches('/').to_owned();
    let ilp_public_url = settings
        .serve
        .ilp_public_url
        .clone()
        .unwrap_or_else(|| format!("{scheme}://{ilp_addr}/ilp"));
    let mut config = service_config(&settings, public_url.clone(), grant_endpoint)?;
    config.secrets_key = sealing_key;
    config.ilp_public_url = ilp_public_url.clone();
    config.outbound_max_concurrent = budget.outbound;
    let services = Arc::new(Services::new(store, clock, random, config).await?);
    wallets::ensure_server_identity(&services).await?;
    opd_service::ledger::settle_received(&services).await?;
    let demo = if settings.serve.demo {
        Some(crate::demo::seed(&services, &settings.common.data_dir).await?)
    } else {
        None
    };

    let app = AppState {
        services: services.clone(),
    };
    let (shutdown, _) = watch::channel(false);
    let mut tasks = JoinSet::new();
    let mut shown = vec![
        ("Open Payments", op_addr),
        ("Authorization server", auth_addr),
        ("Admin API and dashboard", admin_addr),
        ("ILP over HTTP", ilp_addr),
    ];
    if let Some((_, addr)) = &auto_peering {
        shown.push(("Auto-peering", *addr));
    }
    let node = opd_api::admin::Node { listeners: shown };
    let mut listeners = vec![
        (
            op_listener,
            "open_payments",
            open_payments_router(app.clone()),
        ),
        (auth_listener, "auth", auth_router(app.clone())),
        (
            admin_listener,
            "admin",
            admin_router(AdminState::new(app.clone(), admin_token.expose_secret()).with_node(node)),
        ),
        (
            ilp_listener,
            "ilp",
            opd_api::interledger::ilp_router(app.clone()),
        ),
    ];
    let mut auto_peering_addr = None;
    if let Some((listener, addr)) = auto_peering {
        let state = opd_api::interledger::auto_peering::AutoPeering {
            app: app.clone(),
            ilp_connector_url: ilp_public_url.clone(),
            name: "opd".into(),
            limits: opd_store::AutoPeeringLimits {
                max_peers: settings.serve.auto_peering_max_peers,
                liquidity_per_peer: settings.serve.auto_peering_liquidity,
                liquidity_total: settings.serve.auto_peering_liquidity_total,
            },
            throttle: std::sync::Arc::new(opd_service::platform::throttle::Throttle::new(
                settings.serve.auto_peering_requests_per_minute,
                settings.serve.auto_peering_requests_per_minute,
            )),
        };
        listeners.push((
            listener,
            "auto_peering",
            opd_api::interledger::auto_peering::auto_peering_router(state),
        ));
        auto_peering_addr = Some(addr);
    }
    let public = crate::listener::Limits {
        header_read_timeout: Duration::from_secs(settings.serve.header_timeout_secs.max(1)),
        request_timeout: Duration::from_secs(settings.serve.request_timeout_secs.max(1)),
        max_connections: budget.per_listener,
        max_per_address: budget.per_address,
        networks: Arc::new(services.config.networks.clone()),
    };
    // The admin listener keeps room of its own whatever the public ones
    // get, and the operator's way in within it (`crate::admin_listener`).
    let admin = crate::admin_listener::AdminLimits::new(
        public.header_read_timeout,
        public.request_timeout,
        budget.admin,
        services.config.networks.ipv6_prefix,
    );
    for (i, (listener, name, router)) in listeners.into_iter().enumerate() {
        // Outermost, so every answer is measured with its final status.
        let router = router.layer(axum::middleware::from_fn_with_state(
            opd_api::metrics::Listener::new(name),
            opd_api::metrics::track,
        ));
        let stop = shutdown.subscribe();
        // The admin listener speaks TLS only when it is reachable from the
        // network: on loopback (the default) the admin helpers, the
        // dashboard and Prometheus reach it as they always did.
        let plain_admin = i == ADMIN_LISTENER && !settings.serve.allow_remote_admin;
        let acceptor = tls
            .as_ref()
            .filter(|_| !plain_admin)
            .map(|(acceptor, _)| acceptor.clone());
        if i == ADMIN_LISTENER {
            tasks.spawn(crate::admin_listener::serve(
                listener, router, admin, acceptor, stop,
            ));
        } else {
            tasks.spawn(crate::listener::serve(
                listener,
                router,
                public.clone(),
                acceptor,
                stop,
            ));
        }
    }
    if let Some((_, reloading)) = &tls {
        let (reloading, stop) = (reloading.clone(), shutdown.subscribe());
        tasks.spawn(async move {
            reloading.watch(stop).await;
            Ok(())
        });
    }
    // Every node keeps its caches true to what the others change, workers
    // or not (PostgreSQL; returns at once on SQLite).
    {
        let (services, mut stop) = (services.clone(), shutdown.subscribe());
        tasks.spawn(async move {
            opd_service::jobs::follow_changes(services, stop.clone()).await;
            // A task that ends early reads as a failure: wait for shutdown.
            let _ = stop.wait_for(|s| *s).await;
            Ok(())
        });
    }
    if settings.serve.workers {
        spawn_workers(&mut tasks, &services, &shutdown);
    }
    Ok(Running {
        open_payments_addr: op_addr,
        auth_addr,
        admin_addr,
        admin_url: format!(
            "{}://{admin_addr}",
            if tls.is_some() && settings.serve.allow_remote_admin {
                "https"
            } else {
                "http"
            }
        ),
        ilp_addr,
        auto_peering_addr,
        public_url: public_url.as_str().to_owned(),
        auth_public_url,
        admin_token,
        admin_token_generated,
        demo,
        services,
        shutdown,
        tasks,
    })
}

/// Raises the open-file limit and shares it out (`crate::descriptors`).
fn file_budget(settings: &Settings) -> anyhow::Result<crate::descriptors::Budget> {
    use crate::descriptors::{plan, raise, Needs};
    let files = raise();
    let connections = u64::from(ConnectOptions::new("").max_connections);
    let url = settings.common.database_url();
    // SQLite: the writer, the checkpointer and each reader hold the
    // database, its WAL and its shared memory; PostgreSQL: one socket per
    // pooled connection, plus the change listener and the migrator.
    let database = match opd_store::backend_of(url.expose_secret()) {
        Ok(opd_store::Backend::Sqlite) => 3 * (connections + 2),
        _ => connections + 2,
    };
    let budget = plan(Needs {
        limit: files.soft,
        public_listeners: 3 + u64::from(settings.serve.auto_peering_listen.is_some()),
        database,
        max_connections: settings.serve.max_connections,
        per_address: settings.serve.max_connections_per_address,
    })
    .map_err(|e| anyhow::anyhow!(e))?;
    tracing::info!(
        open_files = files.soft,
        raised_from = files.was,
        per_public_listener = budget.per_listener,
        per_client_address = budget.per_address,
        admin_listener = budget.admin,
        outbound_requests = budget.outbound,
        database_files = database,
        "open files shared out"
    );
    Ok(budget)
}

/// The admin listener's place in the list of listeners.
const ADMIN_LISTENER: usize = 2;

/// The background jobs (`opd_service::jobs`), each in its own loops, until
/// shutdown.
fn spawn_workers(
    tasks: &mut JoinSet<std::io::Result<()>>,
    services: &Arc<Services>,
    shutdown: &watch::Sender<bool>,
) {
    use opd_service::jobs::{self, Job};
    for job in Job::ALL {
        for _ in 0..job.loops() {
            let (services, stop) = (services.clone(), shutdown.subscribe());
            tasks.spawn(async move {
                jobs::run(job, services, stop).await;
                Ok(())
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
    /// README's table is checked against), the service's own tests and
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
