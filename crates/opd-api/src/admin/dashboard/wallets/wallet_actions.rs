//! The forms of a wallet address's page that change the wallet address
//! itself, for the operator or its tenant:
//!
//! - `POST /dashboard/wallets/{id}/password` `{password, confirm}`: sets or
//!   resets the password its owner approves grants with;
//! - `POST /dashboard/wallets/{id}/keys` `{jwk | jwk_file}`: adds a key,
//!   pasted as JSON or base64 (what a client such as the Web Monetization
//!   extension shows its user) or sent as a file (multipart);
//! - `POST /dashboard/wallets/{id}/keys/revoke` `{kid}`: revokes one;
//! - `POST /dashboard/wallets/{id}/deactivate` `{confirm}`: deactivates it
//!   (it then answers 404 to everyone, and cannot be undone).
//!
//! A refusal the operator can fix (a weak password, a key that is no JWK)
//! shows the page again with the reason; nothing was changed.

use axum::extract::{Path, State};
use axum::response::Response;
use opd_core::wallet_address::WalletAddress;
use opd_service::{grants, wallets, ServiceError};

use super::wallet::{render, wallet_of};
use crate::admin::dashboard::{done, failed, refusal, CheckedForm};
use crate::admin::state::AdminState;

/// The wallet address of the form, if the session may see it.
async fn target(
    state: &AdminState,
    form: &CheckedForm,
    id: &str,
) -> Result<WalletAddress, Response> {
    wallet_of(&state.app.services, &form.session, id).await
}

/// Back to the page with `code`'s notice, or the page again with why
/// `outcome` was refused.
async fn answer(
    state: &AdminState,
    form: &CheckedForm,
    wallet: &WalletAddress,
    outcome: Result<(), ServiceError>,
    code: &str,
) -> Response {
    match outcome {
        Ok(()) => done(&format!("/dashboard/wallets/{}", wallet.id), code),
        Err(e) => match refusal(e) {
            Ok(reason) => show_refused(state, form, wallet, reason).await,
            Err(e) => failed(e),
        },
    }
}

async fn show_refused(
    state: &AdminState,
    form: &CheckedForm,
    wallet: &WalletAddress,
    reason: String,
) -> Response {
    render(
        &state.app.services,
        &form.session,
        wallet,
        None,
        Some(reason),
    )
    .await
}

pub(crate) async fn set_password(
    State(state): State<AdminState>,
    Path(id): Path<String>,
    form: CheckedForm,
) -> Response {
    let wallet = match target(&state, &form, &id).await {
        Ok(w) => w,
        Err(response) => return response,
    };
    let (password, confirm) = (form.field("password"), form.field("confirm"));
    if password != confirm {
        let reason = "The two passwords differ: nothing was changed.".to_owned();
        return show_refused(&state, &form, &wallet, reason).await;
    }
    let outcome = grants::set_owner_password(&state.app.services, wallet.id, &password).await;
    answer(&state, &form, &wallet, outcome, "password_set").await
}

pub(crate) async fn add_key(
    State(state): State<AdminState>,
    Path(id): Path<String>,
    form: CheckedForm,
) -> Response {
    let wallet = match target(&state, &form, &id).await {
        Ok(w) => w,
        Err(response) => return response,
    };
    let key = match wallets::pasted_key(&form.first_given(&["jwk", "jwk_file"])) {
        Ok(key) => key,
        Err(reason) => {
            let reason = format!("That key was not added: {reason}.");
            return show_refused(&state, &form, &wallet, reason).await;
        }
    };
    let outcome = wallets::add_key(&state.app.services, wallet.id, key)
        .await
        .map(|_| ());
    answer(&state, &form, &wallet, outcome, "key_added").await
}

pub(crate) async fn revoke_key(
    State(state): State<AdminState>,
    Path(id): Path<String>,
    form: CheckedForm,
) -> Response {
    let wallet = match target(&state, &form, &id).await {
        Ok(w) => w,
        Err(response) => return response,
    };
    let kid = form.field("kid");
    let outcome = wallets::revoke_key(&state.app.services, wallet.id, &kid).await;
    answer(&state, &form, &wallet, outcome, "key_revoked").await
}

pub(crate) async fn deactivate(
    State(state): State<AdminState>,
    Path(id): Path<String>,
    form: CheckedForm,
) -> Response {
    let wallet = match target(&state, &form, &id).await {
        Ok(w) => w,
        Err(response) => return response,
    };
    if form.field("confirm") != "yes" {
        let reason = "Tick the box to confirm: a deactivated wallet address cannot be used again."
            .to_owned();
        return show_refused(&state, &form, &wallet, reason).await;
    }
    let outcome = wallets::deactivate(&state.app.services, wallet.id)
        .await
        .map(|_| ());
    answer(&state, &form, &wallet, outcome, "deactivated").await
}
