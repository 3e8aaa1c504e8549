//! The admin API (loopback by default). Every request carries
//! `Authorization: Bearer <admin token>`, compared in constant time.
//!
//! Routes:
//! - `POST /wallet-addresses`, `GET /wallet-addresses`,
//!   `GET /wallet-addresses/{ref}`, `POST /wallet-addresses/{ref}/deactivate`
//! - `GET|POST /wallet-addresses/{ref}/keys`,
//!   `DELETE /wallet-addresses/{ref}/keys/{kid}`
//! - `GET /fees`, `PUT|DELETE /fees/{assetCode}/{assetScale}`
//! - `GET /rates`, `PUT /rates/{base}`, `PUT /rates-url`
//! - `PUT /wallet-addresses/{ref}/owner-password`: the password the owner
//!   approves grants with on the built-in consent page
//! - `POST /introspect`: GNAP token introspection (token-introspection.yaml)
//!   for resource servers deployed apart from this authorization server
//! - `POST /wallet-addresses/{ref}/deposits|withdrawals` `{amount,
//!   idempotencyKey}`, `GET /wallet-addresses/{ref}/balance|transfers`
//! - `POST /outgoing-payments/{id}/cancel`: before it is sent
//! - `POST /outgoing-payments/{id}/fund`: with external funding
//! - `POST /incoming-payments/{id}/withdrawals {idempotencyKey}`: with
//!   external funding, takes what the incoming payment received out of opd
//! - `GET /ledger/check`: the ledger invariants
//! - the Interledger peers (`crate::admin_peers`)
//! - `GET /metrics`: Prometheus metrics (`crate::metrics`), the one route
//!   without the token
//! - `/dashboard/...`: the operator dashboard (`crate::dashboard`), HTML
//!   pages with their own sign-in
//!
//! `{ref}` is a wallet address id or its path (with `/` as `%2F`).

use std::collections::BTreeMap;

use axum::extract::{Request, State};
use axum::http::{header, StatusCode};
use axum::middleware::{self, Next};
use axum::response::Response;
use axum::routing::{delete, get, post, put};
use axum::{Json, Router};
use opd_core::wallet_address::{PublicKey, WalletAddress, WalletAddressKey};
use opd_core::{Asset, AssetCode, Fee, Rate, WalletAddressId};
use opd_service::{operator, pricing, wallets};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::error::{ApiError, ApiResult};
use crate::extract::{non_null, JsonBody, PathParam, PathParams2};
use crate::wire::JwkWire;
use crate::AppState;

/// State of the admin router: the app plus the hash of the admin token.
#[derive(Clone, Debug)]
pub struct AdminState {
    pub app: AppState,
    token_sha256: [u8; 32],
}

impl AdminState {
    pub fn new(app: AppState, admin_token: &str) -> Self {
        Self {
            app,
            token_sha256: Sha256::digest(admin_token.as_bytes()).into(),
        }
    }

    /// The SHA-256 of the admin token (the dashboard's login compares it).
    pub(crate) fn token_sha256(&self) -> &[u8; 32] {
        &self.token_sha256
    }
}

/// The admin routes, all behind the bearer token.
pub fn admin_router(state: AdminState) -> Router {
    let routes = Router::new()
        .route(
            "/wallet-addresses",
            post(create_wallet_address).get(list_wallet_addresses),
        )
        .route("/wallet-addresses/{wallet}", get(get_wallet_address))
        .route(
            "/wallet-addresses/{wallet}/deactivate",
            post(deactivate_wallet_address),
        )
        .route(
            "/wallet-addresses/{wallet}/keys",
            get(list_keys).post(add_key),
        )
        .route("/wallet-addresses/{wallet}/keys/{kid}", delete(revoke_key))
        .route("/fees", get(list_fees))
        .route("/fees/{code}/{scale}", put(set_fee).delete(delete_fee))
        .route("/rates", get(list_rates))
        .route("/rates/{base}", put(set_rates))
        .route("/rates-url", put(set_rates_url))
        .route(
            "/wallet-addresses/{wallet}/owner-password",
            put(set_owner_password),
        )
        .route("/introspect", post(introspect))
        .route("/wallet-addresses/{wallet}/deposits", post(deposit))
        .route("/wallet-addresses/{wallet}/withdrawals", post(withdraw))
        .route("/wallet-addresses/{wallet}/balance", get(balance))
        .route("/wallet-addresses/{wallet}/transfers", get(transfers))
        .route(
            "/outgoing-payments/{id}/cancel",
            post(cancel_outgoing_payment),
        )
        .route("/ledger/check", get(ledger_check))
        .route("/stats", get(stats))
        .route("/outgoing-payments/{id}/fund", post(fund_outgoing_payment))
        .route(
            "/incoming-payments/{id}/withdrawals",
            post(withdraw_incoming_payment),
        )
        .merge(crate::admin_peers::routes())
        .with_state(state.clone());
    // The token is checked before routing: without it, every path (unknown
    // ones too) answers 401, so the API's shape is not revealed.
    let protected = crate::with_common_layers(routes)
        .layer(middleware::from_fn_with_state(state.clone(), require_token));
    // `GET /metrics` alone needs no token, so Prometheus scrapes it as it
    // scrapes any target: the listener is loopback-only unless the
    // operator opens it (`--allow-remote-admin`).
    Router::new()
        .route(
            "/metrics",
            get(crate::metrics::scrape).fallback(crate::method_not_allowed_fallback),
        )
        .with_state(state.app.clone())
        // The dashboard's pages have their own sign-in (a session cookie).
        .merge(crate::dashboard::routes(state))
        .merge(protected)
}

async fn require_token(
    State(state): State<AdminState>,
    request: Request,
    next: Next,
) -> Result<Response, ApiError> {
    let presented = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim);
    let refused = || {
        ApiError::new(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "the admin API needs Authorization: Bearer <admin token>",
        )
    };
    let Some(token) = presented else {
        return Err(refused());
    };
    // Guessing is slowed per address: after three wrong tokens each
    // further one doubles the wait, during which no token is checked.
    let peer = request
        .extensions()
        .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
        .map(|c| c.0.ip().to_string())
        .unwrap_or_default();
    let key = format!("admin:{peer}");
    let lockout = &state.app.services.password_lockout;
    if let Err(wait) = lockout.check(&key) {
        let mut e = ApiError::new(
            StatusCode::TOO_MANY_REQUESTS,
            "too_many_attempts",
            "too many wrong admin tokens from this address; try again later",
        );
        e.retry_after = Some(u32::try_from(wait.as_secs().max(1)).unwrap_or(u32::MAX));
        return Err(e);
    }
    let digest: [u8; 32] = Sha256::digest(token.as_bytes()).into();
    if !bool::from(digest.ct_eq(&state.token_sha256)) {
        lockout.failed(&key);
        return Err(refused());
    }
    lockout.succeeded(&key);
    Ok(next.run(request).await)
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct WalletAddressAdmin {
    id: String,
    path: String,
    url: String,
    asset_code: String,
    asset_scale: u8,
    #[serde(skip_serializing_if = "Option::is_none")]
    public_name: Option<String>,
    created_at: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    deactivated_at: Option<String>,
}

fn wallet_admin(state: &AdminState, w: &WalletAddress) -> WalletAddressAdmin {
    WalletAddressAdmin {
        id: w.id.to_string(),
        path: w.path.to_string(),
        url: state.app.services.config.public_url.wallet_address(&w.path),
        asset_code: w.asset.code.to_string(),
        asset_scale: w.asset.scale,
        public_name: w.public_name.clone(),
        created_at: w.created_at.to_rfc3339(),
        deactivated_at: w.deactivated_at.map(|t| t.to_rfc3339()),
    }
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct CreateWalletAddress {
    path: String,
    asset_code: String,
    asset_scale: i64,
    #[serde(default, deserialize_with = "non_null")]
    public_name: Option<String>,
}

/// Finds a wallet address by id or by path.
async fn resolve(state: &AdminState, reference: &str) -> ApiResult<WalletAddress> {
    let services = &state.app.services;
    if let Some(id) = WalletAddressId::parse(reference) {
        return Ok(wallets::get(services, id).await?);
    }
    let path = opd_core::wallet_address::WalletAddressPath::parse_any(reference)
        .map_err(|_| ApiError::not_found("wallet address"))?;
    operator::wallet_address_at(services, &path)
        .await?
        .ok_or_else(|| ApiError::not_found("wallet address"))
}

async fn create_wallet_address(
    State(state): State<AdminState>,
    JsonBody { value: req, .. }: JsonBody<CreateWalletAddress>,
) -> ApiResult<(StatusCode, Json<WalletAddressAdmin>)> {
    let asset = Asset::parse(&req.asset_code, req.asset_scale)
        .map_err(|e| ApiError::invalid_request(e.to_string()))?;
    let wallet = wallets::create(&state.app.services, &req.path, asset, req.public_name).await?;
    Ok((StatusCode::CREATED, Json(wallet_admin(&state, &wallet))))
}

async fn list_wallet_addresses(
    State(state): State<AdminState>,
) -> ApiResult<Json<Vec<WalletAddressAdmin>>> {
    let all = wallets::list(&state.app.services).await?;
    Ok(Json(all.iter().map(|w| wallet_admin(&state, w)).collect()))
}

async fn get_wallet_address(
    State(state): State<AdminState>,
    PathParam(reference): PathParam,
) -> ApiResult<Json<WalletAddressAdmin>> {
    let wallet = resolve(&state, &reference).await?;
    Ok(Json(wallet_admin(&state, &wallet)))
}

async fn deactivate_wallet_address(
    State(state): State<AdminState>,
    PathParam(reference): PathParam,
) -> ApiResult<Json<WalletAddressAdmin>> {
    let wallet = resolve(&state, &reference).await?;
    let wallet = wallets::deactivate(&state.app.services, wallet.id).await?;
    Ok(Json(wallet_admin(&state, &wallet)))
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct KeyAdmin {
    jwk: JwkWire,
    created_at: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    revoked_at: Option<String>,
}

impl From<&WalletAddressKey> for KeyAdmin {
    fn from(k: &WalletAddressKey) -> Self {
        Self {
            jwk: JwkWire::from(&k.key),
            created_at: k.created_at.to_rfc3339(),
            revoked_at: k.revoked_at.map(|t| t.to_rfc3339()),
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct JwkInput {
    kid: String,
    kty: String,
    crv: String,
    x: String,
    #[serde(default, deserialize_with = "non_null")]
    alg: Option<String>,
    #[serde(default, rename = "use", deserialize_with = "non_null")]
    use_: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct AddKey {
    jwk: JwkInput,
}

async fn list_keys(
    State(state): State<AdminState>,
    PathParam(reference): PathParam,
) -> ApiResult<Json<Vec<KeyAdmin>>> {
    let wallet = resolve(&state, &reference).await?;
    let keys = wallets::keys(&state.app.services, wallet.id).await?;
    Ok(Json(keys.iter().map(KeyAdmin::from).collect()))
}

async fn add_key(
    State(state): State<AdminState>,
    PathParam(reference): PathParam,
    JsonBody { value: req, .. }: JsonBody<AddKey>,
) -> ApiResult<(StatusCode, Json<KeyAdmin>)> {
    let wallet = resolve(&state, &reference).await?;
    let j = req.jwk;
    let key = PublicKey::from_jwk_parts(
        &j.kid,
        &j.kty,
        &j.crv,
        j.alg.as_deref(),
        j.use_.as_deref(),
        &j.x,
    )
    .map_err(|e| ApiError::invalid_request(e.to_string()))?;
    let stored = wallets::add_key(&state.app.services, wallet.id, key).await?;
    Ok((StatusCode::CREATED, Json(KeyAdmin::from(&stored))))
}

async fn revoke_key(
    State(state): State<AdminState>,
    PathParams2(reference, kid): PathParams2,
) -> ApiResult<StatusCode> {
    let wallet = resolve(&state, &reference).await?;
    wallets::revoke_key(&state.app.services, wallet.id, &kid).await?;
    Ok(StatusCode::NO_CONTENT)
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct FeeInput {
    /// Minor units, as a decimal string like every amount.
    fixed: String,
    basis_points: i64,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct FeeAdmin {
    asset_code: String,
    asset_scale: u8,
    fixed: String,
    basis_points: u16,
    updated_at: String,
}

fn parse_asset_path(code: &str, scale: &str) -> ApiResult<Asset> {
    let scale: i64 = scale
        .parse()
        .map_err(|_| ApiError::invalid_request("asset scale must be an integer from 0 to 255"))?;
    Asset::parse(code, scale).map_err(|e| ApiError::invalid_request(e.to_string()))
}

async fn list_fees(State(state): State<AdminState>) -> ApiResult<Json<Vec<FeeAdmin>>> {
    let fees = operator::fees(&state.app.services).await?;
    Ok(Json(
        fees.iter()
            .map(|f| FeeAdmin {
                asset_code: f.asset.code.to_string(),
                asset_scale: f.asset.scale,
                fixed: f.fee.fixed.to_string(),
                basis_points: f.fee.basis_points,
                updated_at: f.updated_at.to_rfc3339(),
            })
            .collect(),
    ))
}

async fn set_fee(
    State(state): State<AdminState>,
    PathParams2(code, scale): PathParams2,
    JsonBody { value: req, .. }: JsonBody<FeeInput>,
) -> ApiResult<StatusCode> {
    let asset = parse_asset_path(&code, &scale)?;
    let fixed = opd_core::money::parse_u64_canonical(&req.fixed).map_err(|e| {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            "invalid_amount",
            format!("fixed: {e}"),
        )
    })?;
    let bp = u16::try_from(req.basis_points).ok();
    let fee = bp.and_then(|bp| Fee::new(fixed, bp).ok()).ok_or_else(|| {
        ApiError::invalid_request("basisPoints must be an integer from 0 to 10000")
    })?;
    pricing::set_fee(&state.app.services, &asset, Some(fee)).await?;
    Ok(StatusCode::NO_CONTENT)
}

async fn delete_fee(
    State(state): State<AdminState>,
    PathParams2(code, scale): PathParams2,
) -> ApiResult<StatusCode> {
    let asset = parse_asset_path(&code, &scale)?;
    pricing::set_fee(&state.app.services, &asset, None).await?;
    Ok(StatusCode::NO_CONTENT)
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct RatesAdmin {
    /// base -> counter -> rate, as exact decimal strings.
    rates: BTreeMap<String, BTreeMap<String, String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    rates_url: Option<String>,
}

async fn list_rates(State(state): State<AdminState>) -> ApiResult<Json<RatesAdmin>> {
    let services = &state.app.services;
    let mut rates: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    for r in operator::rates(services).await? {
        rates
            .entry(r.base.to_string())
            .or_default()
            .insert(r.counter.to_string(), r.rate.to_string());
    }
    let rates_url = operator::rates_url(services).await?;
    Ok(Json(RatesAdmin { rates, rates_url }))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SetRates {
    /// counter -> rate; rates may be strings (`"0.91"`) or numbers.
    rates: BTreeMap<String, Rate>,
}

async fn set_rates(
    State(state): State<AdminState>,
    PathParam(base): PathParam,
    JsonBody { value: req, .. }: JsonBody<SetRates>,
) -> ApiResult<StatusCode> {
    let base = AssetCode::parse(&base).map_err(|e| ApiError::invalid_request(e.to_string()))?;
    let mut rates = Vec::new();
    for (counter, rate) in req.rates {
        let counter =
            AssetCode::parse(&counter).map_err(|e| ApiError::invalid_request(e.to_string()))?;
        rates.push((counter, rate));
    }
    pricing::set_rates(&state.app.services, &base, &rates).await?;
    Ok(StatusCode::NO_CONTENT)
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SetRatesUrl {
    url: Option<String>,
}

async fn set_rates_url(
    State(state): State<AdminState>,
    JsonBody { value: req, .. }: JsonBody<SetRatesUrl>,
) -> ApiResult<StatusCode> {
    pricing::set_rates_url(&state.app.services, req.url.as_deref()).await?;
    Ok(StatusCode::NO_CONTENT)
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct OwnerPassword {
    password: String,
}

async fn set_owner_password(
    State(state): State<AdminState>,
    PathParam(reference): PathParam,
    JsonBody { value: req, .. }: JsonBody<OwnerPassword>,
) -> ApiResult<StatusCode> {
    let wallet = resolve(&state, &reference).await?;
    opd_service::grants::set_owner_password(&state.app.services, wallet.id, &req.password).await?;
    Ok(StatusCode::NO_CONTENT)
}

async fn introspect(
    State(state): State<AdminState>,
    JsonBody { value: req, .. }: JsonBody<opd_gnap::IntrospectionRequest>,
) -> ApiResult<Json<opd_gnap::IntrospectionResponse>> {
    let services = &state.app.services;
    let Some(active) = opd_service::grants::introspect(services, &req.access_token).await? else {
        return Ok(Json(opd_gnap::IntrospectionResponse::Inactive));
    };
    let access = match &req.access {
        Some(requested) => opd_gnap::introspection_matches(&active.access, requested)
            .map_err(|e| ApiError::invalid_request(e.description))?
            .into_iter()
            .map(opd_gnap::AccessItem::to_wire)
            .collect(),
        None => Vec::new(),
    };
    Ok(Json(opd_gnap::IntrospectionResponse::Active(
        opd_gnap::TokenInfo {
            grant: active.grant_id.to_string(),
            access,
            client: active.client.to_wire(),
        },
    )))
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct MoveMoney {
    /// Minor units of the account's asset, as a decimal string.
    pub(crate) amount: String,
    pub(crate) idempotency_key: String,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct TransferAdmin {
    id: String,
    kind: String,
    debit_account: String,
    credit_account: String,
    amount: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    reference: Option<String>,
    created_at: String,
}

impl From<&opd_core::ledger::Transfer> for TransferAdmin {
    fn from(t: &opd_core::ledger::Transfer) -> Self {
        Self {
            id: t.id.clone(),
            kind: t.kind.as_str().to_owned(),
            debit_account: t.debit_account.clone(),
            credit_account: t.credit_account.clone(),
            amount: t.amount.to_string(),
            reference: t.reference.clone(),
            created_at: t.created_at.to_rfc3339(),
        }
    }
}

async fn move_money(
    state: &AdminState,
    reference: &str,
    req: MoveMoney,
    deposit: bool,
) -> ApiResult<(StatusCode, Json<serde_json::Value>)> {
    let wallet = resolve(state, reference).await?;
    let amount = opd_core::money::parse_u64_canonical(&req.amount).map_err(|e| {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            "invalid_amount",
            format!("amount: {e}"),
        )
    })?;
    let services = &state.app.services;
    let (transfer, new) =
        opd_service::ledger::move_money(services, &wallet, amount, deposit, &req.idempotency_key)
            .await?;
    let balance = opd_service::ledger::balance(services, &wallet).await?;
    let status = idempotent_status(new);
    Ok((
        status,
        Json(serde_json::json!({
            "transfer": TransferAdmin::from(&transfer),
            "balance": opd_core::AmountWire::from(&balance),
        })),
    ))
}

async fn deposit(
    State(state): State<AdminState>,
    PathParam(reference): PathParam,
    JsonBody { value: req, .. }: JsonBody<MoveMoney>,
) -> ApiResult<(StatusCode, Json<serde_json::Value>)> {
    move_money(&state, &reference, req, true).await
}

async fn withdraw(
    State(state): State<AdminState>,
    PathParam(reference): PathParam,
    JsonBody { value: req, .. }: JsonBody<MoveMoney>,
) -> ApiResult<(StatusCode, Json<serde_json::Value>)> {
    move_money(&state, &reference, req, false).await
}

async fn balance(
    State(state): State<AdminState>,
    PathParam(reference): PathParam,
) -> ApiResult<Json<serde_json::Value>> {
    let wallet = resolve(&state, &reference).await?;
    let balance = opd_service::ledger::balance(&state.app.services, &wallet).await?;
    Ok(Json(
        serde_json::json!({ "balance": opd_core::AmountWire::from(&balance) }),
    ))
}

async fn transfers(
    State(state): State<AdminState>,
    PathParam(reference): PathParam,
) -> ApiResult<Json<Vec<TransferAdmin>>> {
    let wallet = resolve(&state, &reference).await?;
    let list = opd_service::ledger::transfers(&state.app.services, &wallet, 100).await?;
    Ok(Json(list.iter().map(TransferAdmin::from).collect()))
}

async fn cancel_outgoing_payment(
    State(state): State<AdminState>,
    PathParam(id): PathParam,
) -> ApiResult<StatusCode> {
    let id = opd_core::OutgoingPaymentId::parse(&id)
        .ok_or_else(|| ApiError::not_found("outgoing payment"))?;
    opd_service::payments::outgoing::lifecycle::cancel(&state.app.services, id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// `GET /stats`: this node's counters (SQL round trips so far), for
/// benchmarks and capacity planning.
async fn stats(State(state): State<AdminState>) -> Json<serde_json::Value> {
    let stats = operator::store_stats(&state.app.services);
    Json(serde_json::json!({
        "backend": stats.backend,
        "sqlRoundTrips": stats.round_trips,
    }))
}

async fn ledger_check(State(state): State<AdminState>) -> ApiResult<Json<serde_json::Value>> {
    let report = operator::check_ledger(&state.app.services).await?;
    let waiting: Vec<_> = report
        .awaiting_withdrawal
        .iter()
        .map(opd_core::AmountWire::from)
        .collect();
    Ok(Json(serde_json::json!({
        "balanced": report.problems.is_empty(),
        "problems": report.problems,
        "awaitingWithdrawal": waiting,
    })))
}

/// `{idempotencyKey}` of `POST /incoming-payments/{id}/withdrawals`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct WithdrawReceived {
    pub(crate) idempotency_key: String,
}

/// External mode: takes what an incoming payment received (and was not
/// withdrawn yet) out of opd; 201 with the amount, or 200 with the first
/// answer when the key is repeated.
async fn withdraw_incoming_payment(
    State(state): State<AdminState>,
    PathParam(id): PathParam,
    JsonBody { value: req, .. }: JsonBody<WithdrawReceived>,
) -> ApiResult<(StatusCode, Json<serde_json::Value>)> {
    let id = opd_core::IncomingPaymentId::parse(&id)
        .ok_or_else(|| ApiError::not_found("incoming payment"))?;
    let (transfer, asset, new) =
        opd_service::ledger::withdraw_received(&state.app.services, id, &req.idempotency_key)
            .await?;
    let amount = opd_core::Amount::new(transfer.amount, asset);
    let status = idempotent_status(new);
    Ok((
        status,
        Json(serde_json::json!({
            "amount": opd_core::AmountWire::from(&amount),
            "transfer": TransferAdmin::from(&transfer),
        })),
    ))
}

async fn fund_outgoing_payment(
    State(state): State<AdminState>,
    PathParam(id): PathParam,
) -> ApiResult<StatusCode> {
    let id = opd_core::OutgoingPaymentId::parse(&id)
        .ok_or_else(|| ApiError::not_found("outgoing payment"))?;
    opd_service::payments::outgoing::lifecycle::fund(&state.app.services, id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// The status of an idempotent money movement: 201 when this request made
/// it, 200 when its key repeats an earlier one (answered as then).
pub(crate) fn idempotent_status(new: bool) -> StatusCode {
    if new {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    }
}
