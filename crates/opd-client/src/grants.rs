//! Non-interactive grants that do not pile up: a token for an access is
//! taken from the grants the profile keeps (rotated first when it is
//! about to expire), else a new grant is asked for and kept. A request
//! refused because of its kept token (revoked, expired over there) gets
//! the token rotated, or a new grant, and is sent once more: never more.
//!
//! The kept grants are written into the profile file after each change
//! (see [`crate::profile::update_grants`]), changed from what the file
//! holds then, so that two `opd client` runs at once lose little of each
//! other's. Once the profile cannot be written (a read-only one), the run
//! keeps its grants in memory only, and they are cancelled at its end
//! ([`cancel_unsaved`]): nothing is left behind that no one can use.
//!
//! One more thing changes with a reused token: the official client, and
//! so this one, signs with whole seconds and no nonce, so two identical
//! state-changing requests with one token in one second are the same
//! bytes, which servers such as opd answer as one (the first one's
//! answer). Two identical creates asked for by two commands are two, so
//! the second waits for the next second ([`pace`]).
//!
//! Decisions are in [`crate::kept`]; this is the state and the requests.

use std::future::Future;
use std::path::PathBuf;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use reqwest::Method;
use serde_json::Value;
use sha2::{Digest as _, Sha256};

use crate::gnap::{self, Continuation};
use crate::http::{Client, ClientError};
use crate::kept::{self, KeptGrant, LastChange, Reuse, Wanted};

/// The grants a client keeps, and where.
#[derive(Debug, Default)]
pub struct KeptGrants {
    /// The profile file, or `None` to keep them for this process only.
    path: Option<PathBuf>,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    grants: Vec<KeptGrant>,
    /// Grants of this run that could not be written to the profile.
    unsaved: Vec<Continuation>,
    /// Why the profile could not be written, once it could not: from
    /// then on, this run keeps its grants in memory.
    write_failed: Option<String>,
}

impl KeptGrants {
    /// The grants kept in the profile file at `path` (read from it).
    pub fn in_profile(path: PathBuf, grants: Vec<KeptGrant>) -> Self {
        Self {
            path: Some(path),
            state: Mutex::new(State {
                grants,
                ..State::default()
            }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The grants kept now.
    pub fn list(&self) -> Vec<KeptGrant> {
        self.lock().grants.clone()
    }

    /// Why the profile could not be written, when it could not.
    pub fn write_failed(&self) -> Option<String> {
        self.lock().write_failed.clone()
    }

    /// Makes `change` to the kept grants, in the profile file too; `false`
    /// when it is kept in memory only.
    fn change(&self, change: impl FnOnce(&mut Vec<KeptGrant>)) -> bool {
        let mut state = self.lock();
        let (Some(path), None) = (&self.path, &state.write_failed) else {
            change(&mut state.grants);
            return self.path.is_none();
        };
        match crate::profile::update_grants(path, &mut state.grants, change) {
            Ok(()) => true,
            Err(e) => {
                state.write_failed = Some(format!("{e:#}"));
                false
            }
        }
    }

    /// Keeps `grant`, in place of any other for the same access.
    fn keep(&self, grant: KeptGrant) {
        let continuation = grant.grant.clone();
        let kept = self.change(|all| {
            all.retain(|g| !g.same_access(&grant));
            all.push(grant);
        });
        if let (false, Some(c)) = (kept, continuation) {
            self.lock().unsaved.push(c);
        }
    }

    /// Stops keeping the grant whose token is `token`: the grant, if any.
    fn forget(&self, token: &str) -> Option<KeptGrant> {
        let found = self
            .lock()
            .grants
            .iter()
            .find(|g| g.token == token)
            .cloned();
        self.change(|all| all.retain(|g| g.token != token));
        found
    }

    /// The grants of this run that could not be kept, once.
    pub fn take_unsaved(&self) -> Vec<Continuation> {
        std::mem::take(&mut self.lock().unsaved)
    }
}

fn now_ms() -> i64 {
    i64::try_from(time::OffsetDateTime::now_utc().unix_timestamp_nanos() / 1_000_000)
        .unwrap_or(i64::MAX)
}

/// A token to use, and whether it was just issued (a refusal of a token
/// just issued is not retried: another would fare no better).
struct Lease {
    value: String,
    fresh: bool,
}

/// A token for `wanted`: a kept one, rotated first when it is about to
/// expire, else a new grant's (kept).
async fn token(client: &Client, wanted: &Wanted) -> Result<Lease, ClientError> {
    let kept = client.kept.list();
    let me = &client.profile.wallet_address;
    match kept::reuse(&kept, me, wanted, now_ms()) {
        Reuse::Use(i) => Ok(Lease {
            value: kept[i].token.clone(),
            fresh: false,
        }),
        Reuse::Rotate(i) => {
            client.kept.forget(&kept[i].token);
            refresh(client, wanted, &kept[i]).await
        }
        Reuse::Ask => ask(client, wanted).await,
    }
}

/// A new token for the grant `old` (no longer kept): rotated through its
/// management URL, or, when that is refused, a new grant (`old` is then
/// cancelled, as far as it still can be).
async fn refresh(client: &Client, wanted: &Wanted, old: &KeptGrant) -> Result<Lease, ClientError> {
    match gnap::rotate(client, &old.manage, &old.token).await {
        Ok(t) => {
            client.kept.keep(old.rotated(&t, now_ms()));
            Ok(Lease {
                value: t.value,
                fresh: true,
            })
        }
        Err(_) => {
            if let Some(c) = &old.grant {
                // Best effort: a grant that cannot rotate is mostly gone.
                let _ = gnap::cancel(client, c).await;
            }
            ask(client, wanted).await
        }
    }
}

/// A new grant for `wanted`, kept.
async fn ask(client: &Client, wanted: &Wanted) -> Result<Lease, ClientError> {
    let issued = gnap::request_grant(client, &wanted.auth_server, wanted.access.clone()).await?;
    let me = &client.profile.wallet_address;
    let grant = KeptGrant::issued(me, wanted, &issued.token, issued.grant, now_ms());
    client.kept.keep(grant);
    Ok(Lease {
        value: issued.token.value,
        fresh: true,
    })
}

/// Runs `call` with a token for `wanted`. When the server refuses a kept
/// token ([`kept::token_refused`]), the grant is forgotten, a new token
/// had (rotated, or a new grant) and `call` runs once more.
pub async fn with_token<T, F, Fut>(
    client: &Client,
    wanted: &Wanted,
    call: F,
) -> Result<T, ClientError>
where
    F: Fn(String) -> Fut,
    Fut: Future<Output = Result<T, ClientError>>,
{
    let lease = token(client, wanted).await?;
    match call(lease.value.clone()).await {
        Err(e) if !lease.fresh && kept::token_refused(&e) => {
            let lease = match client.kept.forget(&lease.value) {
                Some(old) => refresh(client, wanted, &old).await?,
                None => ask(client, wanted).await?,
            };
            call(lease.value).await
        }
        done => done,
    }
}

/// A token the user gave (`--token`), or the access to have one for.
#[derive(Debug, Clone)]
pub enum TokenFor {
    Given(String),
    Access(Wanted),
}

impl TokenFor {
    /// `given`, else a token for the access `wanted` makes.
    pub fn given_or(given: Option<String>, wanted: impl FnOnce() -> Wanted) -> Self {
        given.map_or_else(|| Self::Access(wanted()), Self::Given)
    }
}

/// Runs `call` with the given token as it is, or with one for the access
/// as [`with_token`] does. For reads: a state-changing request goes
/// through [`signed`].
pub async fn call_with<T, F, Fut>(
    client: &Client,
    token: &TokenFor,
    call: F,
) -> Result<T, ClientError>
where
    F: Fn(String) -> Fut,
    Fut: Future<Output = Result<T, ClientError>>,
{
    match token {
        TokenFor::Given(t) => call(t.clone()).await,
        TokenFor::Access(wanted) => with_token(client, wanted, call).await,
    }
}

/// One signed request with `token` (see [`call_with`]); a state-changing
/// one with a kept token is [`pace`]d first. A kept token only goes to
/// the resource server it was asked for (a quote URL given by hand may
/// name any server).
pub async fn signed(
    client: &Client,
    token: &TokenFor,
    method: Method,
    url: &str,
    body: Option<&Value>,
) -> Result<Value, ClientError> {
    if let TokenFor::Access(w) = token {
        if crate::resources::origin(url) != w.resource_server {
            return Err(ClientError::Unexpected(format!(
                "{url} is not on {}, the wallet address's resource server: its token is not sent there",
                w.resource_server
            )));
        }
    }
    let changes = !matches!(method, Method::GET | Method::HEAD | Method::OPTIONS);
    let request = &request_digest(&method, url, body);
    let method = &method;
    call_with(client, token, |t| async move {
        if changes && matches!(token, TokenFor::Access(_)) {
            pace(client, &t, request).await;
        }
        client.signed(method.clone(), url, Some(&t), body).await
    })
    .await
}

/// What identifies a request besides its token and time: method, URL
/// and body.
fn request_digest(method: &Method, url: &str, body: Option<&Value>) -> String {
    let mut hash = Sha256::new();
    hash.update(format!("{method}\n{url}\n"));
    if let Some(b) = body {
        hash.update(b.to_string());
    }
    hash.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// Books the second in which `request` is signed with the kept token
/// `token` ([`kept::second_for`]), and waits for it.
async fn pace(client: &Client, token: &str, request: &str) {
    let now = now_ms();
    let second = now.div_euclid(1000);
    let mut slot = second;
    client.kept.change(|all| {
        let Some(g) = all.iter_mut().find(|g| g.token == token) else {
            return;
        };
        slot = kept::second_for(g.last_change.as_ref(), request, second);
        g.last_change = Some(LastChange {
            at: slot,
            request: request.to_owned(),
        });
    });
    if slot > second {
        let wait = slot.saturating_mul(1000).saturating_sub(now);
        // A few milliseconds past the turn of the second.
        let wait = u64::try_from(wait).unwrap_or(0).saturating_add(5);
        tokio::time::sleep(Duration::from_millis(wait)).await;
    }
}

/// Cancels the grants of this run that could not be kept (the profile
/// could not be written); what failed, in a few words, if anything did.
pub async fn cancel_unsaved(client: &Client) -> Option<String> {
    let mut failed = None;
    for grant in client.kept.take_unsaved() {
        if let Err(e) = gnap::cancel(client, &grant).await {
            failed.get_or_insert_with(|| e.to_string());
        }
    }
    failed
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::Profile;

    #[tokio::test]
    async fn a_kept_token_only_goes_to_its_resource_server() {
        let profile = Profile::generate("https://w.example/shop", "k1");
        let client = Client::new(profile, None).unwrap();
        let token = TokenFor::Access(Wanted {
            auth_server: "https://w.example/gnap".into(),
            resource_server: "https://w.example".into(),
            access: serde_json::json!([{ "type": "quote", "actions": ["read"] }]),
        });
        // Refused before any request (none could be answered here).
        let e = signed(
            &client,
            &token,
            Method::GET,
            "https://evil.example/quotes/1",
            None,
        )
        .await
        .unwrap_err();
        assert!(
            e.to_string()
                .contains("is not on https://w.example, the wallet address's resource server"),
            "{e}"
        );
        assert!(client.kept.list().is_empty());
    }
}
