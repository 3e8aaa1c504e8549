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

use axum::extract::{FromRequest, FromRequestParts, Path, Request, State};
use axum::response::{IntoResponse, Response};
use opd_core::wallet_address::WalletAddress;
use opd_service::{grants, wallets, ServiceError};

use super::wallet::{render, wallet_of};
use crate::admin::dashboard::{done, failed, refusal, CheckedForm};
use crate::admin::state::AdminState;

/// A form of the page (its token checked) and the wallet address it is
/// for, when the session may see it.
pub(crate) struct WalletForm {
    form: CheckedForm,
    wallet: WalletAddress,
}

impl FromRequest<AdminState> for WalletForm {
    type Rejection = Response;

    async fn from_request(request: Request, state: &AdminState) -> Result<Self, Response> {
        let (mut parts, body) = request.into_parts();
        let Path(id) = Path::<String>::from_request_parts(&mut parts, state)
            .await
            .map_err(IntoResponse::into_response)?;
        let form = CheckedForm::from_request(Request::from_parts(parts, body), state).await?;
        let wallet = wallet_of(&state.app.services, &form.session, &id).await?;
        Ok(Self { form, wallet })
    }
}

impl WalletForm {
    /// Back to the page with `code`'s notice, or the page again with why
    /// `outcome` was refused.
    async fn answer(
        &self,
        state: &AdminState,
        outcome: Result<(), ServiceError>,
        code: &str,
    ) -> Response {
        match outcome {
            Ok(()) => done(&format!("/dashboard/wallets/{}", self.wallet.id), code),
            Err(e) => match refusal(e) {
                Ok(reason) => self.refused(state, reason).await,
                Err(e) => failed(e),
            },
        }
    }

    /// The page again, with why nothing was changed.
    async fn refused(&self, state: &AdminState, reason: String) -> Response {
        let services = &state.app.services;
        render(
            services,
            &self.form.session,
            &self.wallet,
            None,
            Some(reason),
        )
        .await
    }
}

pub(crate) async fn set_password(State(state): State<AdminState>, f: WalletForm) -> Response {
    let (password, confirm) = (f.form.field("password"), f.form.field("confirm"));
    if password != confirm {
        let reason = "The two passwords differ: nothing was changed.".to_owned();
        return f.refused(&state, reason).await;
    }
    let set = grants::set_owner_password(&state.app.services, f.wallet.id, &password);
    f.answer(&state, set.await, "password_set").await
}

pub(crate) async fn add_key(State(state): State<AdminState>, f: WalletForm) -> Response {
    let key = match wallets::pasted_key(&f.form.first_given(&["jwk", "jwk_file"])) {
        Ok(key) => key,
        Err(reason) => {
            let reason = format!("That key was not added: {reason}.");
            return f.refused(&state, reason).await;
        }
    };
    let added = wallets::add_key(&state.app.services, f.wallet.id, key).await;
    f.answer(&state, added.map(|_| ()), "key_added").await
}

pub(crate) async fn revoke_key(State(state): State<AdminState>, f: WalletForm) -> Response {
    let kid = f.form.field("kid");
    let revoked = wallets::revoke_key(&state.app.services, f.wallet.id, &kid).await;
    f.answer(&state, revoked, "key_revoked").await
}

pub(crate) async fn deactivate(State(state): State<AdminState>, f: WalletForm) -> Response {
    if f.form.field("confirm") != "yes" {
        let reason = "Tick the box to confirm: a deactivated wallet address cannot be used again."
            .to_owned();
        return f.refused(&state, reason).await;
    }
    let deactivated = wallets::deactivate(&state.app.services, f.wallet.id).await;
    f.answer(&state, deactivated.map(|_| ()), "deactivated")
        .await
}
