//! The operator's side of the ledger: deposits into and withdrawals from
//! wallet addresses (idempotent by key), balances, transfer history, and
//! the invariant check behind `opd check`.

use opd_core::ledger::{balance_in_range, AccountKind, LedgerOutcome, Receipts, Transfer};
use opd_core::wallet_address::WalletAddress;
use opd_core::Amount;
use sha2::{Digest, Sha256};

use crate::{ServiceError, Services};

/// What every deposit and withdrawal (of a wallet address or of a peer's
/// liquidity) must have: a positive amount and an idempotency key of 1 to
/// 200 characters.
pub(crate) fn check_movement(amount: u64, idempotency_key: &str) -> Result<(), ServiceError> {
    if amount == 0 {
        return Err(ServiceError::InvalidAmount(
            "amount must be greater than 0".into(),
        ));
    }
    check_key(idempotency_key)
}

/// An idempotency key has 1 to 200 characters.
pub(crate) fn check_key(idempotency_key: &str) -> Result<(), ServiceError> {
    if idempotency_key.is_empty() || idempotency_key.len() > 200 {
        return Err(ServiceError::InvalidRequest(
            "idempotencyKey must be 1 to 200 characters".into(),
        ));
    }
    Ok(())
}

/// Moves money into (`deposit`) or out of a wallet address. A repeat with
/// the same key and request returns the first transfer; the same key with
/// another request is a conflict.
pub async fn move_money(
    services: &Services,
    wallet: &WalletAddress,
    amount: u64,
    deposit: bool,
    idempotency_key: &str,
) -> Result<(Transfer, bool), ServiceError> {
    check_movement(amount, idempotency_key)?;
    let kind = if deposit { "deposit" } else { "withdrawal" };
    let digest = opd_core::hex::lower(&Sha256::digest(
        format!("{kind}|{}|{}|{amount}", wallet.id, wallet.asset).as_bytes(),
    ));
    let key = format!("{kind}:{idempotency_key}");
    let outcome = services
        .store
        .ledger_move(
            wallet.id,
            &wallet.asset,
            amount,
            deposit,
            &key,
            &digest,
            services.clock.now(),
        )
        .await?;
    transfer_of(outcome, &wallet.asset, amount)
}

/// External mode: moves everything the incoming payment received and the
/// operator has not withdrawn yet out of opd (to the settlement account),
/// once per idempotency key; a repeat of the key for the same payment
/// returns the first transfer, for another payment is a conflict. Returns
/// the transfer, the payment's asset, and whether it is new; when nothing
/// waits (always in balance mode, where received money is on the wallet
/// address) `nothing_to_withdraw`, and the key is not spent.
pub async fn withdraw_received(
    services: &Services,
    id: opd_core::IncomingPaymentId,
    idempotency_key: &str,
) -> Result<(Transfer, opd_core::Asset, bool), ServiceError> {
    check_key(idempotency_key)?;
    let payment = services
        .store
        .get_incoming_payment(id)
        .await?
        .ok_or(ServiceError::NotFound("incoming payment"))?;
    let digest = opd_core::hex::lower(&Sha256::digest(
        format!("incoming-withdrawal|{id}").as_bytes(),
    ));
    // Its own key space: a wallet withdrawal's key never answers this.
    let key = format!("incoming-withdrawal:{idempotency_key}");
    let outcome = services
        .store
        .withdraw_received(id, &key, &digest, services.clock.now())
        .await?
        .ok_or(ServiceError::NotFound("incoming payment"))?;
    let (transfer, new) = transfer_of(outcome, &payment.asset, 0)?;
    if transfer.amount == 0 {
        // Not recorded, so the key is not spent: a later withdrawal with it
        // takes what arrives meanwhile, and repeats of that answer it.
        return Err(ServiceError::Conflict {
            code: "nothing_to_withdraw",
            message: "the incoming payment holds nothing to withdraw".into(),
        });
    }
    Ok((transfer, payment.asset, new))
}

/// The transfer of an idempotent movement, and whether it is new; the
/// refusals as errors.
pub(crate) fn transfer_of(
    outcome: LedgerOutcome,
    asset: &opd_core::Asset,
    amount: u64,
) -> Result<(Transfer, bool), ServiceError> {
    match outcome {
        LedgerOutcome::Posted(t) => Ok((t, true)),
        LedgerOutcome::Repeated(t) => Ok((t, false)),
        LedgerOutcome::KeyReused => Err(ServiceError::Conflict {
            code: "idempotency_key_reused",
            message: "this idempotency key was used for a different request".into(),
        }),
        LedgerOutcome::Overflow => Err(ServiceError::AmountOverflow),
        LedgerOutcome::InsufficientBalance { available } => {
            Err(ServiceError::InsufficientBalance {
                available: Amount::new(available, asset.clone()),
                required: Amount::new(amount, asset.clone()),
            })
        }
    }
}

/// A wallet address's balance.
pub async fn balance(services: &Services, wallet: &WalletAddress) -> Result<Amount, ServiceError> {
    let id = AccountKind::Wallet.account_id(&wallet.id.to_string(), &wallet.asset);
    let accounts = services.store.ledger_accounts().await?;
    let value = accounts
        .iter()
        .find(|a| a.id == id)
        .map_or(0, |a| a.balance);
    let value = u64::try_from(value).map_err(|_| ServiceError::corrupt("balance"))?;
    Ok(Amount::new(value, wallet.asset.clone()))
}

/// A wallet address's newest transfers.
pub async fn transfers(
    services: &Services,
    wallet: &WalletAddress,
    limit: i64,
) -> Result<Vec<Transfer>, ServiceError> {
    let id = AccountKind::Wallet.account_id(&wallet.id.to_string(), &wallet.asset);
    Ok(services.store.ledger_transfers_of(&id, limit).await?)
}

/// Balance mode: moves what incoming payments' accounts still hold (money
/// received before opd credited wallet addresses directly) to their
/// wallet addresses, at start-up. Each account is emptied in one
/// transaction that locks its balance, so the money moves exactly once
/// whatever the number of starts or nodes. External mode leaves it for
/// the operator to withdraw.
pub async fn settle_received(services: &Services) -> Result<(), ServiceError> {
    if services.config.receipts() != Receipts::ToWallet {
        return Ok(());
    }
    let settled = services.store.settle_received(services.clock.now()).await?;
    if settled > 0 {
        tracing::info!(
            accounts = settled,
            "moved money received by incoming payments to their wallet addresses"
        );
    }
    Ok(())
}

/// What the operator still has to withdraw from an incoming payment: what
/// its account holds in external mode; 0 in balance mode without a read
/// (received money is on the wallet address).
pub(crate) async fn to_withdraw(
    services: &Services,
    id: opd_core::IncomingPaymentId,
) -> Result<u64, ServiceError> {
    Ok(match services.config.receipts() {
        Receipts::ToWallet => 0,
        Receipts::Held => services.store.unwithdrawn(id).await?,
    })
}

/// What received money's account `a` (an incoming payment's, or a wallet
/// address's SPSP account) means for `opd check`: in balance mode money on
/// it is a problem (it belongs on the wallet address); in external mode it
/// waits for the operator (`waiting`, per asset).
fn received_money(
    a: &opd_core::ledger::Account,
    receipts: Receipts,
    problems: &mut Vec<String>,
    waiting: &mut std::collections::BTreeMap<String, (opd_core::Asset, u128)>,
) {
    let what = match a.kind {
        AccountKind::Incoming => "incoming payment",
        AccountKind::Spsp => "SPSP",
        _ => return,
    };
    if a.balance == 0 {
        return;
    }
    match receipts {
        Receipts::ToWallet => problems.push(format!(
            "{what} account {} holds {} (in balance mode received money belongs on the \
             wallet address; `opd serve` moves it there at start-up)",
            a.id, a.balance
        )),
        Receipts::Held => {
            let entry = waiting
                .entry(a.asset.to_string())
                .or_insert_with(|| (a.asset.clone(), 0));
            // In range (checked before), so at most u64::MAX each.
            entry.1 += u128::try_from(a.balance).unwrap_or(0);
        }
    }
}

/// What `opd check` found.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LedgerCheck {
    /// The problems found (none when balanced).
    pub problems: Vec<String>,
    /// External mode: what incoming payments (and wallet addresses over
    /// SPSP) received and the operator has not withdrawn yet, per asset
    /// (not a problem: it waits for `POST /incoming-payments/{id}/withdrawals`
    /// and `POST /wallet-addresses/{ref}/spsp-withdrawals`). Empty in
    /// balance mode.
    pub awaiting_withdrawal: Vec<Amount>,
}

/// Checks the ledger: every asset's balances sum to zero, no liability
/// account is negative, no balance is beyond ±u64::MAX, every balance
/// equals what its transfers add up to, and, in balance mode
/// ([`Receipts::ToWallet`]), no incoming payment's or SPSP account holds
/// money (received money goes to the wallet address in the transaction
/// that receives it). In external mode it totals what waits to be
/// withdrawn.
pub async fn check(
    store: &dyn opd_store::Store,
    receipts: Receipts,
) -> Result<LedgerCheck, ServiceError> {
    let accounts = store.ledger_accounts().await?;
    let transfers = store.ledger_all_transfers().await?;
    Ok(judge(&accounts, &transfers, receipts))
}

/// [`check`] on what the store holds.
fn judge(
    accounts: &[opd_core::ledger::Account],
    transfers: &[Transfer],
    receipts: Receipts,
) -> LedgerCheck {
    let mut problems = Vec::new();
    let mut net = std::collections::HashMap::<&str, i128>::new();
    for t in transfers {
        *net.entry(t.credit_account.as_str()).or_default() += i128::from(t.amount);
        *net.entry(t.debit_account.as_str()).or_default() -= i128::from(t.amount);
    }
    // PostgreSQL keeps no foreign key from transfers to accounts (a posting
    // creates both accounts in the statement that inserts the transfer), so
    // the check looks for a transfer naming an account that does not exist.
    let known: std::collections::HashSet<&str> = accounts.iter().map(|a| a.id.as_str()).collect();
    for t in transfers {
        for side in [&t.debit_account, &t.credit_account] {
            if !known.contains(side.as_str()) {
                problems.push(format!(
                    "transfer {} names account {side}, which does not exist",
                    t.id
                ));
            }
        }
    }
    let mut per_asset = std::collections::BTreeMap::<String, i128>::new();
    let mut waiting = std::collections::BTreeMap::<String, (opd_core::Asset, u128)>::new();
    for a in accounts {
        *per_asset.entry(a.asset.to_string()).or_default() += a.balance;
        let expected = net.get(a.id.as_str()).copied().unwrap_or(0);
        if expected != a.balance {
            problems.push(format!(
                "account {} has balance {} but its transfers add up to {expected}",
                a.id, a.balance
            ));
        }
        if !balance_in_range(a.kind, a.balance) {
            problems.push(format!(
                "account {} ({}) has a balance out of range: {}",
                a.id, a.kind, a.balance
            ));
        }
        received_money(a, receipts, &mut problems, &mut waiting);
    }
    for (asset, sum) in per_asset {
        if sum != 0 {
            problems.push(format!("balances in {asset} add up to {sum}, not 0"));
        }
    }
    let mut awaiting_withdrawal = Vec::new();
    for (asset, total) in waiting.into_values() {
        match u64::try_from(total) {
            Ok(v) => awaiting_withdrawal.push(Amount::new(v, asset)),
            Err(_) => problems.push(format!(
                "received money in {asset} awaits the withdrawal of {total}, past u64::MAX"
            )),
        }
    }
    LedgerCheck {
        problems,
        awaiting_withdrawal,
    }
}

#[cfg(test)]
mod tests {
    use opd_core::ledger::{Account, TransferKind};
    use opd_core::{Asset, Timestamp};

    use super::*;

    fn account(kind: AccountKind, owner: &str, asset: &Asset, balance: i128) -> Account {
        Account {
            id: kind.account_id(owner, asset),
            kind,
            owner_id: owner.into(),
            asset: asset.clone(),
            balance,
        }
    }

    fn transfer(from: &Account, to: &Account, amount: u64) -> Transfer {
        Transfer {
            id: format!("{}>{}", from.id, to.id),
            debit_account: from.id.clone(),
            credit_account: to.id.clone(),
            amount,
            kind: TransferKind::Deposit,
            reference: None,
            idempotency_key: None,
            created_at: Timestamp::from_unix_millis(0),
        }
    }

    #[test]
    fn an_idempotency_key_has_1_to_200_characters() {
        assert!(check_key("").is_err());
        assert!(check_key("k").is_ok());
        assert!(check_key(&"k".repeat(200)).is_ok());
        assert!(check_key(&"k".repeat(201)).is_err());
    }

    #[test]
    fn a_transfer_across_assets_unbalances_both() {
        let usd = Asset::parse("USD", 2).unwrap();
        let eur = Asset::parse("EUR", 2).unwrap();
        let settlement = account(AccountKind::Settlement, "operator", &eur, -100);
        let alice = account(AccountKind::Wallet, "alice", &usd, 100);
        let moved = [transfer(&settlement, &alice, 100)];
        let found = judge(&[settlement, alice], &moved, Receipts::ToWallet);
        assert_eq!(
            found.problems,
            [
                "balances in EUR (scale 2) add up to -100, not 0",
                "balances in USD (scale 2) add up to 100, not 0"
            ]
        );
    }

    #[test]
    fn a_transfer_naming_a_missing_account_is_a_problem() {
        let usd = Asset::parse("USD", 2).unwrap();
        let settlement = account(AccountKind::Settlement, "operator", &usd, -100);
        let alice = account(AccountKind::Wallet, "alice", &usd, 100);
        let ghost = account(AccountKind::Wallet, "ghost", &usd, 0);
        let moved = [
            transfer(&settlement, &alice, 100),
            transfer(&alice, &ghost, 0),
        ];
        let found = judge(&[settlement, alice], &moved, Receipts::ToWallet);
        assert_eq!(
            found.problems,
            [format!(
                "transfer {} names account {}, which does not exist",
                moved[1].id, ghost.id
            )]
        );
    }

    #[test]
    fn received_money_waits_in_external_mode_and_is_a_problem_in_balance_mode() {
        let usd = Asset::parse("USD", 2).unwrap();
        let settlement = account(AccountKind::Settlement, "operator", &usd, -100);
        let incoming = account(AccountKind::Incoming, "ip", &usd, 30);
        let spsp = account(AccountKind::Spsp, "bob", &usd, 70);
        let moved = [
            transfer(&settlement, &incoming, 30),
            transfer(&settlement, &spsp, 70),
        ];
        let accounts = [settlement, incoming, spsp];
        let held = judge(&accounts, &moved, Receipts::Held);
        assert_eq!(held.problems, Vec::<String>::new());
        assert_eq!(held.awaiting_withdrawal, [Amount::new(100, usd)]);
        let balance_mode = judge(&accounts, &moved, Receipts::ToWallet);
        assert!(balance_mode.awaiting_withdrawal.is_empty());
        let said: Vec<&str> = balance_mode
            .problems
            .iter()
            .map(|p| p.split(" account ").next().unwrap_or_default())
            .collect();
        assert_eq!(said, ["incoming payment", "SPSP"]);
    }
}
