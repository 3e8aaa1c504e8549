//! A wallet address's balance history as people read it: every transfer
//! in or out of its account, named by what it was for the wallet
//! (`deposit`, `received`, `payment`, ...) and signed. The operator's
//! dashboard and the owner's own page show it alike.

use opd_core::ledger::{AccountKind, Transfer, TransferKind};
use opd_core::wallet_address::WalletAddress;

use crate::display;

/// One transfer in or out of a wallet address, as its history shows it.
pub(crate) struct HistoryRow {
    /// What it was for the wallet: `received`, `payment`, `deposit`...
    pub(crate) what: &'static str,
    pub(crate) kind: String,
    /// The payment (or the wallet address, for the operator's moves).
    pub(crate) reference: String,
    /// Signed: `+` in, `−` out.
    pub(crate) amount: String,
    pub(crate) created: String,
}

/// What a transfer was for the wallet it credited (`incoming`) or debited.
fn what(kind: TransferKind, incoming: bool) -> &'static str {
    match (kind, incoming) {
        (TransferKind::Deposit, _) => "deposit",
        (TransferKind::Withdrawal, _) => "withdrawal",
        // Money an incoming payment received lands here (balance mode);
        // `settle` moved money that was held on an incoming payment.
        (TransferKind::Deliver | TransferKind::Receive | TransferKind::Settle, true) => "received",
        (TransferKind::Refund, _) => "refund",
        (_, false) => "payment",
        (_, true) => "credit",
    }
}

/// Its balance history: every transfer in or out, signed.
pub(crate) fn history(wallet: &WalletAddress, transfers: &[Transfer]) -> Vec<HistoryRow> {
    let account = AccountKind::Wallet.account_id(&wallet.id.to_string(), &wallet.asset);
    let (code, scale) = (wallet.asset.code.as_str(), wallet.asset.scale);
    transfers
        .iter()
        .map(|t| {
            let incoming = t.credit_account == account;
            let sign = if incoming { "+" } else { "−" };
            HistoryRow {
                what: what(t.kind, incoming),
                kind: t.kind.as_str().to_owned(),
                reference: t.reference.clone().unwrap_or_default(),
                amount: format!("{sign}{}", display::amount(t.amount, code, scale)),
                created: display::datetime(t.created_at),
            }
        })
        .collect()
}
