//! Startup: open the database, assemble the services, bind the three
//! listeners and serve until shutdown. `opd serve` and the tests' `TestApp`
//! both run `start`.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context};
use opd_api::admin::{admin_router, AdminState};
use opd_api::auth_server::auth_router;
use opd_api::resource_server::open_payments_router;
use opd_api::AppState;
use opd_core::{Clock, Random};
use opd_service::{wallets, PublicUrl, Services};
use opd_store::ConnectOptions;
use secrecy::{ExposeSecret, SecretString};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinSet;

use crate::config::Settings;
use service_config::service_config;

mod service_config;

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

/// The grant endpoint of `--auth-public-url`, or why it cannot be served.
fn auth_grant_endpoint(url: &str) -> anyhow::Result<String> {
    opd_service::platform::urls::grant_endpoint(url)
        .map_err(|e| anyhow::anyhow!("--auth-public-url {url:?} cannot be served: {e}"))
}

/// Starts opd with the given settings, clock and random source: checks
/// what can be checked before anything is opened, opens the database,
/// binds the listeners, assembles the services, and serves.
pub async fn start(
    settings: Settings,
    clock: Arc<dyn Clock>,
    random: Arc<dyn Random>,
) -> anyhow::Result<Running> {
    let budget = prepare(&settings)?;
    // Bound before anything is written: a server that cannot listen
    // leaves no data directory behind.
    let bound = Bound::bind(&settings).await?;
    create_data_dir(&settings)?;
    let (admin_token, admin_token_generated) = admin_token(&settings, random.as_ref())?;
    let sealing_key = secrets_key(&settings, random.as_ref())?;
    let store = open_store(&settings).await?;
    let tls = match (&settings.serve.tls_cert, &settings.serve.tls_key) {
        (Some(cert), Some(key)) => Some(crate::tls::acceptor(cert, key)?),
        _ => None,
    };
    let urls = Urls::new(&settings, tls.is_some(), &bound)?;
    let mut config = service_config(&settings, urls.public.clone(), urls.grant_endpoint.clone())?;
    config.secrets_key = sealing_key;
    config.ilp_public_url = urls.ilp.clone();
    config.outbound_max_concurrent = budget.outbound;
    let services = Arc::new(Services::new(store, clock, random, config).await?);
    wallets::ensure_server_identity(&services).await?;
    opd_service::ledger::settle_received(&services).await?;
    let demo = if settings.serve.demo {
        Some(crate::demo::seed(&services, &settings.common.data_dir).await?)
    } else {
        None
    };
    let (op_addr, auth_addr, admin_addr, ilp_addr) = bound.addrs;
    let auto_peering_addr = bound.auto_peering.as_ref().map(|(_, addr)| *addr);
    let routed = routers(&settings, &services, bound, &admin_token, &urls.ilp);
    let (shutdown, _) = watch::channel(false);
    let mut tasks = JoinSet::new();
    serve(
        &mut tasks,
        &settings,
        &services,
        &budget,
        routed,
        tls.as_ref(),
        &shutdown,
    );
    spawn_background(&mut tasks, &settings, &services, tls.as_ref(), &shutdown);
    let admin_scheme = if tls.is_some() && settings.serve.allow_remote_admin {
        "https"
    } else {
        "http"
    };
    Ok(Running {
        open_payments_addr: op_addr,
        auth_addr,
        admin_addr,
        admin_url: format!("{admin_scheme}://{admin_addr}"),
        ilp_addr,
        auto_peering_addr,
        public_url: urls.public.as_str().to_owned(),
        auth_public_url: urls.auth,
        admin_token,
        admin_token_generated,
        demo,
        services,
        shutdown,
        tasks,
    })
}

/// What is checked and made ready before anything is opened or bound: the
/// admin API on loopback unless allowed elsewhere, the authorization
/// server's URL, the open-file budget and the metrics recorder.
fn prepare(settings: &Settings) -> anyhow::Result<crate::descriptors::Budget> {
    if !settings.common.admin_listen.ip().is_loopback() && !settings.serve.allow_remote_admin {
        bail!(
            "the admin API would listen on {}, which is not a loopback address; set --allow-remote-admin to allow it",
            settings.common.admin_listen
        );
    }
    if let Some(url) = &settings.serve.auth_public_url {
        auth_grant_endpoint(url)?;
    }
    let budget = file_budget(settings)?;
    // Once per process, whatever the number of servers it starts (see
    // `opd_api::metrics`).
    opd_api::metrics::install();
    Ok(budget)
}

/// The data directory (0700) and the default SQLite file (0600).
fn create_data_dir(settings: &Settings) -> anyhow::Result<()> {
    if settings.common.database_is_default() || !settings.common.data_dir.as_os_str().is_empty() {
        create_private_dir(&settings.common.data_dir)?;
    }
    if settings.common.database_is_default() {
        create_private_file(&settings.common.data_dir.join("opd.sqlite"))?;
    }
    Ok(())
}

/// Opens the database (SQLite held by this process alone; PostgreSQL
/// migrated when asked).
async fn open_store(settings: &Settings) -> anyhow::Result<Arc<dyn opd_store::Store>> {
    let mut options =
        ConnectOptions::new(settings.common.database_url().expose_secret().to_owned());
    options.create_sqlite_file = settings.common.database_is_default();
    options.migrate_postgres = settings.serve.migrate;
    options.exclusive_sqlite = true;
    opd_store::connect(&options)
        .await
        .context("cannot open the database")
}

/// The listeners, bound: Open Payments, the authorization server, the
/// admin API and ILP over HTTP (their addresses in that order), and the
/// auto-peering acceptor when it is on.
struct Bound {
    listeners: [TcpListener; 4],
    addrs: (SocketAddr, SocketAddr, SocketAddr, SocketAddr),
    auto_peering: Option<(TcpListener, SocketAddr)>,
}

impl Bound {
    async fn bind(settings: &Settings) -> anyhow::Result<Self> {
        let (op, op_addr) = bind(settings.serve.listen, "Open Payments").await?;
        let (auth, auth_addr) = bind(settings.serve.auth_listen, "authorization server").await?;
        let (admin, admin_addr) = bind(settings.common.admin_listen, "admin API").await?;
        let (ilp, ilp_addr) = bind(settings.serve.ilp_listen, "ILP-over-HTTP").await?;
        let auto_peering = match settings.serve.auto_peering_listen {
            Some(addr) => Some(bind(addr, "auto-peering").await?),
            None => None,
        };
        Ok(Self {
            listeners: [op, auth, admin, ilp],
            addrs: (op_addr, auth_addr, admin_addr, ilp_addr),
            auto_peering,
        })
    }
}

/// Where clients reach this server: the configured URLs, else the bound
/// addresses.
struct Urls {
    public: PublicUrl,
    /// The grant endpoint, published as `authServer`.
    grant_endpoint: String,
    /// The grant endpoint without its trailing slash.
    auth: String,
    /// Where peers send ILP packets.
    ilp: String,
}

impl Urls {
    fn new(settings: &Settings, tls: bool, bound: &Bound) -> anyhow::Result<Self> {
        let scheme = if tls { "https" } else { "http" };
        let (op_addr, auth_addr, _, ilp_addr) = bound.addrs;
        let serve = &settings.serve;
        let public = serve
            .public_url
            .clone()
            .unwrap_or_else(|| format!("{scheme}://{op_addr}"));
        let public =
            PublicUrl::parse(&public).map_err(|e| anyhow::anyhow!("public URL {public:?}: {e}"))?;
        // The published `authServer` is the grant endpoint itself (see
        // `grant_endpoint`); the auth listener serves under its path.
        let auth = serve
            .auth_public_url
            .clone()
            .unwrap_or_else(|| format!("{scheme}://{auth_addr}"));
        let grant_endpoint = auth_grant_endpoint(&auth)?;
        let ilp = serve
            .ilp_public_url
            .clone()
            .unwrap_or_else(|| format!("{scheme}://{ilp_addr}/ilp"));
        Ok(Self {
            public,
            auth: grant_endpoint.trim_end_matches('/').to_owned(),
            grant_endpoint,
            ilp,
        })
    }
}

/// A listener with its name (for the metrics) and what it serves.
type Routed = (TcpListener, &'static str, axum::Router);

/// Each bound listener with its router, in `Bound`'s order (the admin
/// listener at [`ADMIN_LISTENER`]), then the auto-peering acceptor's.
fn routers(
    settings: &Settings,
    services: &Arc<Services>,
    bound: Bound,
    admin_token: &SecretString,
    ilp_public_url: &str,
) -> Vec<Routed> {
    let app = AppState {
        services: services.clone(),
    };
    let (op_addr, auth_addr, admin_addr, ilp_addr) = bound.addrs;
    let mut shown = vec![
        ("Open Payments", op_addr),
        ("Authorization server", auth_addr),
        ("Admin API and dashboard", admin_addr),
        ("ILP over HTTP", ilp_addr),
    ];
    if let Some((_, addr)) = &bound.auto_peering {
        shown.push(("Auto-peering", *addr));
    }
    let node = opd_api::admin::Node { listeners: shown };
    let admin = AdminState::new(app.clone(), admin_token.expose_secret()).with_node(node);
    let [op, auth, admin_listener, ilp] = bound.listeners;
    let mut routed = vec![
        (op, "open_payments", open_payments_router(app.clone())),
        (auth, "auth", auth_router(app.clone())),
        (admin_listener, "admin", admin_router(admin)),
        (ilp, "ilp", opd_api::interledger::ilp_router(app.clone())),
    ];
    if let Some((listener, _)) = bound.auto_peering {
        let router = auto_peering_router(&settings.serve, app, ilp_public_url);
        routed.push((listener, "auto_peering", router));
    }
    routed
}

/// The auto-peering acceptor's router, with its limits.
fn auto_peering_router(
    serve: &crate::config::ServeArgs,
    app: AppState,
    ilp_public_url: &str,
) -> axum::Router {
    let state = opd_api::interledger::auto_peering::AutoPeering {
        app,
        ilp_connector_url: ilp_public_url.to_owned(),
        name: "opd".into(),
        limits: opd_store::AutoPeeringLimits {
            max_peers: serve.auto_peering_max_peers,
            liquidity_per_peer: serve.auto_peering_liquidity,
            liquidity_total: serve.auto_peering_liquidity_total,
        },
        throttle: Arc::new(opd_service::platform::throttle::Throttle::new(
            serve.auto_peering_requests_per_minute,
            serve.auto_peering_requests_per_minute,
        )),
    };
    opd_api::interledger::auto_peering::auto_peering_router(state)
}

/// Serves each listener until shutdown, each answer measured: the public
/// ones within the budget's limits, the admin listener within room of its
/// own (`crate::admin_listener`), over TLS when it is on.
fn serve(
    tasks: &mut JoinSet<std::io::Result<()>>,
    settings: &Settings,
    services: &Services,
    budget: &crate::descriptors::Budget,
    routed: Vec<Routed>,
    tls: Option<&(tokio_rustls::TlsAcceptor, Arc<crate::tls::Reloading>)>,
    shutdown: &watch::Sender<bool>,
) {
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
    for (i, (listener, name, router)) in routed.into_iter().enumerate() {
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
            .filter(|_| !plain_admin)
            .map(|(acceptor, _)| acceptor.clone());
        if i == ADMIN_LISTENER {
            tasks.spawn(crate::admin_listener::serve(
                listener, router, admin, acceptor, stop,
            ));
        } else {
            let limits = public.clone();
            tasks.spawn(crate::listener::serve(
                listener, router, limits, acceptor, stop,
            ));
        }
    }
}

/// What runs beside the listeners until shutdown: the certificate reload,
/// the change follower every node runs (workers or not), and the workers.
fn spawn_background(
    tasks: &mut JoinSet<std::io::Result<()>>,
    settings: &Settings,
    services: &Arc<Services>,
    tls: Option<&(tokio_rustls::TlsAcceptor, Arc<crate::tls::Reloading>)>,
    shutdown: &watch::Sender<bool>,
) {
    if let Some((_, reloading)) = tls {
        let (reloading, stop) = (reloading.clone(), shutdown.subscribe());
        tasks.spawn(async move {
            reloading.watch(stop).await;
            Ok(())
        });
    }
    // Every node keeps its caches true to what the others change, workers
    // or not (PostgreSQL; returns at once on SQLite).
    let (follower, mut stop) = (services.clone(), shutdown.subscribe());
    tasks.spawn(async move {
        opd_service::jobs::follow_changes(follower, stop.clone()).await;
        // A task that ends early reads as a failure: wait for shutdown.
        let _ = stop.wait_for(|s| *s).await;
        Ok(())
    });
    if settings.serve.workers {
        spawn_workers(tasks, services, shutdown);
    }
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
