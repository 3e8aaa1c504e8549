//! The double-entry ledger's domain: account kinds, transfers, and the
//! balance arithmetic every posting goes through.
//!
//! Every money movement is a transfer between two accounts. Liability
//! accounts (wallet addresses, payments, fees) never go below zero and
//! never above u64::MAX, the largest amount opd represents; each asset's
//! settlement account is the outside world and goes negative by what came
//! in, down to [`SETTLEMENT_FLOOR`] (all deposits of an asset together may
//! exceed u64::MAX). A posting that would break a bound is refused as
//! [`PostError::Overflow`] before anything is written, so a stored balance
//! always reads back.

use std::fmt;

use crate::money::Asset;
use crate::time::Timestamp;

/// The largest balance an account may hold.
pub const MAX_BALANCE: i128 = u64::MAX as i128;

/// The lowest balance of a settlement account: −10^38, within both the
/// 128-bit arithmetic here and PostgreSQL's `NUMERIC(40,0)` column.
pub const SETTLEMENT_FLOOR: i128 = -100_000_000_000_000_000_000_000_000_000_000_000_000;

/// Where money received by incoming payments goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Receipts {
    /// Straight to the receiving wallet address's balance, in the
    /// transaction that credits the incoming payment (the default: opd
    /// keeps wallet balances, so a receiver can spend at once).
    #[default]
    ToWallet,
    /// Held on the incoming payment's account until the operator
    /// withdraws it (`--external-funding`: balances live in the
    /// operator's own books).
    Held,
}

impl Receipts {
    /// The mode that goes with `--external-funding`.
    pub fn for_external_funding(external: bool) -> Self {
        if external {
            Self::Held
        } else {
            Self::ToWallet
        }
    }
}

/// Ledger account kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AccountKind {
    /// A wallet address's balance (owner: wallet address id).
    Wallet,
    /// Money held for an outgoing payment (owner: payment id).
    Outgoing,
    /// Money received by an incoming payment (owner: payment id), held
    /// there only in external mode ([`Receipts::Held`]) until withdrawn.
    Incoming,
    /// Money a wallet address received over SPSP, paid by its payment
    /// pointer without an incoming payment (owner: wallet address id),
    /// held there only in external mode until withdrawn.
    Spsp,
    /// Sending fees earned by the operator (owner: `fees`).
    Fees,
    /// The outside world for one asset (owner: `settlement`).
    Settlement,
    /// What an Interledger peer may still send us (owner: peer id).
    Peer,
    /// A forwarded packet's amount, until it is fulfilled or not (owner:
    /// the hold id).
    Hold,
}

impl AccountKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Wallet => "wallet",
            Self::Outgoing => "outgoing",
            Self::Incoming => "incoming",
            Self::Spsp => "spsp",
            Self::Fees => "fees",
            Self::Settlement => "settlement",
            Self::Peer => "peer",
            Self::Hold => "hold",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "wallet" => Self::Wallet,
            "outgoing" => Self::Outgoing,
            "incoming" => Self::Incoming,
            "spsp" => Self::Spsp,
            "fees" => Self::Fees,
            "settlement" => Self::Settlement,
            "peer" => Self::Peer,
            "hold" => Self::Hold,
            _ => return None,
        })
    }

    /// The kind of the account `id` names (ids start with their kind).
    pub fn of_account(id: &str) -> Option<Self> {
        Self::parse(id.split(':').next().unwrap_or_default())
    }

    /// The id of the account of this kind for `owner` in `asset`.
    pub fn account_id(self, owner: &str, asset: &Asset) -> String {
        format!("{}:{}:{}:{}", self.as_str(), owner, asset.code, asset.scale)
    }

    /// Only the outside world may owe: every other account is a liability
    /// of the operator and never goes below zero.
    pub fn may_go_negative(self) -> bool {
        self == Self::Settlement
    }
}

impl fmt::Display for AccountKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why money moves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TransferKind {
    /// Into a wallet address from outside.
    Deposit,
    /// Out of a wallet address to outside.
    Withdrawal,
    /// Into an outgoing payment's account.
    Fund,
    /// To an incoming payment.
    Deliver,
    /// Out to the settlement account of the debit asset (cross-currency).
    Send,
    /// The sending fee.
    Fee,
    /// Back from a failed or cancelled payment.
    Refund,
    /// From a peer's liquidity to an incoming payment, for an ILP packet
    /// opd fulfilled (the reference names the incoming payment); or to a
    /// wallet address paid over SPSP (the reference names the wallet
    /// address).
    Receive,
    /// From a peer's liquidity into a hold, for a packet forwarded.
    Hold,
    /// From a hold to the next peer, the forwarded packet fulfilled.
    Forward,
    /// From a hold back to the peer, the forwarded packet not fulfilled.
    Void,
    /// From an outgoing payment to the peer that carried one of its ILP
    /// packets, fulfilled.
    Packet,
    /// From an incoming payment's account to its wallet address: money an
    /// incoming payment received before opd credited wallets directly
    /// (moved once, at start-up, in balance mode).
    Settle,
}

impl TransferKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Deposit => "deposit",
            Self::Withdrawal => "withdrawal",
            Self::Fund => "fund",
            Self::Deliver => "deliver",
            Self::Send => "send",
            Self::Fee => "fee",
            Self::Refund => "refund",
            Self::Receive => "receive",
            Self::Hold => "hold",
            Self::Forward => "forward",
            Self::Void => "void",
            Self::Packet => "packet",
            Self::Settle => "settle",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        [
            Self::Deposit,
            Self::Withdrawal,
            Self::Fund,
            Self::Deliver,
            Self::Send,
            Self::Fee,
            Self::Refund,
            Self::Receive,
            Self::Hold,
            Self::Forward,
            Self::Void,
            Self::Packet,
            Self::Settle,
        ]
        .into_iter()
        .find(|k| k.as_str() == s)
    }
}

impl fmt::Display for TransferKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An account and its balance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Account {
    pub id: String,
    pub kind: AccountKind,
    pub owner_id: String,
    pub asset: Asset,
    pub balance: i128,
}

/// A posted transfer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transfer {
    pub id: String,
    pub debit_account: String,
    pub credit_account: String,
    pub amount: u64,
    pub kind: TransferKind,
    pub reference: Option<String>,
    pub idempotency_key: Option<String>,
    pub created_at: Timestamp,
}

/// The result of a deposit or withdrawal with an idempotency key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LedgerOutcome {
    /// Posted now.
    Posted(Transfer),
    /// The key was used before with the same request: its first result.
    Repeated(Transfer),
    /// The key was used before with a different request.
    KeyReused,
    /// The debited account lacks the money; nothing was posted.
    InsufficientBalance { available: u64 },
    /// A balance would pass ±u64::MAX; nothing was posted.
    Overflow,
}

/// Why a posting was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PostError {
    /// The debited liability account holds only `available`.
    Insufficient { available: u64 },
    /// A balance would pass ±u64::MAX.
    Overflow,
}

/// The two balances after moving `amount` from an account of
/// `debit_kind` holding `debit` to one holding `credit`.
pub fn post_balances(
    debit_kind: AccountKind,
    debit: i128,
    credit: i128,
    amount: u64,
) -> Result<(i128, i128), PostError> {
    let amount = i128::from(amount);
    let new_debit = debit - amount;
    if !debit_kind.may_go_negative() && new_debit < 0 {
        let available = u64::try_from(debit.max(0)).unwrap_or(u64::MAX);
        return Err(PostError::Insufficient { available });
    }
    let new_credit = credit + amount;
    if new_debit < SETTLEMENT_FLOOR || new_credit > MAX_BALANCE {
        return Err(PostError::Overflow);
    }
    Ok((new_debit, new_credit))
}

/// Whether a stored balance is one the ledger can hold for its kind.
pub fn balance_in_range(kind: AccountKind, balance: i128) -> bool {
    let floor = if kind.may_go_negative() {
        SETTLEMENT_FLOOR
    } else {
        0
    };
    (floor..=MAX_BALANCE).contains(&balance)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn liabilities_never_go_negative() {
        assert_eq!(
            post_balances(AccountKind::Wallet, 5, 0, 6),
            Err(PostError::Insufficient { available: 5 })
        );
        assert_eq!(post_balances(AccountKind::Wallet, 6, 1, 6), Ok((0, 7)));
        assert_eq!(post_balances(AccountKind::Settlement, 0, 0, 6), Ok((-6, 6)));
    }

    #[test]
    fn no_balance_passes_u64_max() {
        assert_eq!(
            post_balances(AccountKind::Settlement, 0, MAX_BALANCE, 1),
            Err(PostError::Overflow)
        );
        assert_eq!(
            post_balances(AccountKind::Settlement, SETTLEMENT_FLOOR, 0, 1),
            Err(PostError::Overflow)
        );
        assert_eq!(
            post_balances(AccountKind::Settlement, 0, 0, u64::MAX),
            Ok((-MAX_BALANCE, MAX_BALANCE))
        );
        // Deposits of an asset into several wallets may add up past u64::MAX.
        assert_eq!(
            post_balances(AccountKind::Settlement, -MAX_BALANCE, 0, 5),
            Ok((-MAX_BALANCE - 5, 5))
        );
        assert!(balance_in_range(AccountKind::Wallet, MAX_BALANCE));
        assert!(!balance_in_range(AccountKind::Wallet, -1));
        assert!(!balance_in_range(AccountKind::Wallet, MAX_BALANCE + 1));
        assert!(!balance_in_range(
            AccountKind::Settlement,
            SETTLEMENT_FLOOR - 1
        ));
    }

    #[test]
    fn settlement_may_reach_its_floor_exactly() {
        assert_eq!(
            post_balances(AccountKind::Settlement, SETTLEMENT_FLOOR + 5, 0, 5),
            Ok((SETTLEMENT_FLOOR, 5))
        );
    }

    #[test]
    fn receipts_follow_external_funding() {
        assert_eq!(Receipts::for_external_funding(true), Receipts::Held);
        assert_eq!(Receipts::for_external_funding(false), Receipts::ToWallet);
    }

    #[test]
    fn account_ids_name_kind_owner_and_asset() {
        let usd = Asset::parse("USD", 2).unwrap();
        let id = AccountKind::Wallet.account_id("w1", &usd);
        assert_eq!(id, "wallet:w1:USD:2");
        assert_eq!(AccountKind::of_account(&id), Some(AccountKind::Wallet));
    }

    #[test]
    fn kinds_round_trip() {
        for k in [
            AccountKind::Wallet,
            AccountKind::Outgoing,
            AccountKind::Incoming,
            AccountKind::Spsp,
            AccountKind::Fees,
            AccountKind::Settlement,
            AccountKind::Peer,
            AccountKind::Hold,
        ] {
            assert_eq!(AccountKind::parse(k.as_str()), Some(k));
            assert_eq!(k.to_string(), k.as_str());
        }
        assert_eq!(TransferKind::Settle.to_string(), "settle");
        assert_eq!(
            AccountKind::of_account("settlement:settlement:USD:2"),
            Some(AccountKind::Settlement)
        );
        for t in [
            "deposit",
            "withdrawal",
            "fund",
            "deliver",
            "send",
            "fee",
            "refund",
        ] {
            assert_eq!(TransferKind::parse(t).map(TransferKind::as_str), Some(t));
        }
    }
}
