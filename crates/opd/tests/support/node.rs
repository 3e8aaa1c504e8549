//! One `opd serve` process of a cluster sharing one PostgreSQL database
//! behind one public URL (as behind a load balancer): the multinode and
//! failover tests start their nodes with it.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use opd_testkit::app::IDP_SECRET;
use reqwest::{Method, StatusCode};
use serde_json::Value;

pub const ADMIN_TOKEN: &str = "multinode-admin-token-0123456789";

/// One `opd serve` process of the cluster.
pub struct Node {
    child: Option<Child>,
    pub dir: tempfile::TempDir,
    /// Where this node's Open Payments listener really is.
    pub op: String,
    pub admin: String,
}

/// The public URLs every node shares (those of node 0, as a load balancer
/// would publish one name).
#[derive(Clone)]
pub struct Public {
    pub op: String,
    pub auth: String,
}

impl Node {
    fn start(database_url: &str, public: Option<&Public>, extra: &[String]) -> (Self, Public) {
        let dir = tempfile::tempdir().unwrap();
        let (op, auth, admin) = (
            opd_testkit::free_port(),
            opd_testkit::free_port(),
            opd_testkit::free_port(),
        );
        let own = Public {
            op: format!("http://127.0.0.1:{op}"),
            auth: format!("http://127.0.0.1:{auth}"),
        };
        let public = public.cloned().unwrap_or(own);
        let child = Command::new(env!("CARGO_BIN_EXE_opd"))
            .args([
                "serve".to_owned(),
                format!("--listen=127.0.0.1:{op}"),
                format!("--auth-listen=127.0.0.1:{auth}"),
                format!("--admin-listen=127.0.0.1:{admin}"),
                // Any free port: the tests send no ILP packets.
                "--ilp-listen=127.0.0.1:0".to_owned(),
                format!("--public-url={}", public.op),
                format!("--auth-public-url={}", public.auth),
                format!("--admin-token={ADMIN_TOKEN}"),
                format!("--idp-secret={IDP_SECRET}"),
                format!("--data-dir={}", dir.path().display()),
                format!("--database-url={database_url}"),
                "--migrate".to_owned(),
                // Caches live long: only the change announcements can make
                // another node see a revocation quickly.
                "--cache-ttl-ms=60000".to_owned(),
            ])
            .args(extra)
            .current_dir(dir.path())
            .env_remove("OPD_CONFIG")
            .env("OPD_LOG", "warn")
            // Every node of one database seals secrets with one key.
            .env(
                "OPD_SECRETS_KEY",
                "5ec7e75ec7e75ec7e75ec7e75ec7e75ec7e75ec7e75ec7e75ec7e75ec7e75ec7",
            )
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start opd");
        let node = Self {
            child: Some(child),
            dir,
            op: format!("http://127.0.0.1:{op}"),
            admin: format!("http://127.0.0.1:{admin}"),
        };
        (node, public)
    }

    /// Waits until the node answers; `false` if it exited first (a port
    /// picked free was taken by another process meanwhile).
    async fn ready(&mut self) -> bool {
        let deadline = Instant::now() + Duration::from_secs(30);
        let http = reqwest::Client::new();
        loop {
            if let Ok(r) = http.get(format!("{}/healthz", self.op)).send().await {
                if r.status() == StatusCode::OK {
                    return true;
                }
            }
            if let Some(c) = self.child.as_mut() {
                if c.try_wait().ok().flatten().is_some() {
                    self.child = None;
                    return false;
                }
            }
            assert!(Instant::now() < deadline, "opd did not become ready");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Starts a node and waits until it answers, on other ports if the
    /// first ones were taken meanwhile.
    pub async fn start_ready(
        database_url: &str,
        public: Option<&Public>,
        extra: &[String],
    ) -> (Self, Public) {
        for _ in 0..3 {
            let (mut node, shared) = Node::start(database_url, public, extra);
            if node.ready().await {
                return (node, shared);
            }
        }
        panic!("opd exited at start three times");
    }

    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            c.kill().expect("kill");
            c.wait().expect("reap");
        }
    }

    pub async fn admin(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
    ) -> (StatusCode, Value) {
        opd_testkit::app::admin_at(&self.admin, ADMIN_TOKEN, method, path, body).await
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        self.kill();
    }
}
