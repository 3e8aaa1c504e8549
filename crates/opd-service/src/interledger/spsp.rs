//! Paid by a payment pointer: SPSP (Interledger RFC 9) on every wallet
//! address, STREAM receipts (RFC 39), and the
//! `wallet_address.web_monetization` events that report what arrived.
//!
//! **Credentials.** `GET <wallet address>` asking for
//! `application/spsp4+json` gets STREAM credentials made as an incoming
//! payment's are (`opd_ilp::generate_credentials`, from the server's
//! STREAM secret, nothing stored), with the payment tag `w:<wallet address
//! id>` ([`PaymentTag`]) and, when the request carried `Receipt-Nonce` and
//! `Receipt-Secret`, those two encrypted into the token. Every node
//! derives the same thing from the same secret: a packet may reach any of
//! them.
//!
//! **Money.** The STREAM receiver (`super::receive`) reads the tag of a
//! Prepare's destination: a wallet address's packets are credited to its
//! balance (in external mode to its SPSP account, held for the operator)
//! from the peer's liquidity, grouped like an incoming payment's
//! (`super::credits`), by the same rules (deadlines, exact conversion,
//! F99/T04/R00 answers) but with no amount to reach.
//!
//! **Receipts.** A connection made with a receipt setup gets, in every
//! Fulfill, a receipt for stream 1 signing what the connection received in
//! all, this packet included: the total the credit's own transaction raised
//! in the database (so a connection whose packets reach several nodes
//! counts once). Stream 1 whatever the packet's streams, as the reference
//! receiver does: senders pay on stream 1, and a verifier credits a nonce
//! the same amount either way.
//!
//! **Reports.** What arrives is reported per wallet address in
//! `wallet_address.web_monetization` events, at most one per
//! `--web-monetization-event-secs`: the first credit since the last event
//! makes the next one due that long after it; the housekeeping job claims
//! due reports ([`report_once`]) and commits their events in the same
//! transaction that marks them reported, so each amount is announced
//! exactly once across nodes.

use opd_core::wallet_address::WalletAddress;
use opd_core::webhook::EventKind;
use opd_core::{Amount, AmountWire, IncomingPaymentId, WalletAddressId};
pub use opd_ilp::ReceiptSetup;
use opd_ilp::{generate_credentials_with_receipts, StreamCredentials};
use sha2::{Digest, Sha256};

use crate::webhooks::{event_at, Stamp};
use crate::{ServiceError, Services};

/// How many wallet addresses one housekeeping pass reports at most.
const REPORTS_PER_PASS: i64 = 64;

/// What a connection token's payment tag names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PaymentTag {
    /// An incoming payment's credentials: its id.
    Incoming(IncomingPaymentId),
    /// A wallet address's SPSP credentials: `w:` and its id.
    Wallet(WalletAddressId),
}

impl PaymentTag {
    const WALLET: &'static str = "w:";

    /// The tag of a token, or `None` when it names nothing of ours.
    pub(crate) fn parse(tag: &str) -> Option<Self> {
        match tag.strip_prefix(Self::WALLET) {
            Some(id) => WalletAddressId::parse(id).map(Self::Wallet),
            None => IncomingPaymentId::parse(tag).map(Self::Incoming),
        }
    }

    /// The tag as tokens carry it.
    pub(crate) fn encode(self) -> String {
        match self {
            Self::Incoming(id) => id.to_string(),
            Self::Wallet(id) => format!("{}{id}", Self::WALLET),
        }
    }
}

/// Whether wallet addresses answer SPSP queries and take SPSP money
/// (`--spsp`).
pub fn enabled(services: &Services) -> bool {
    services.config.spsp
}

/// STREAM credentials for paying `wallet` by its payment pointer, with
/// STREAM receipts for `receipt`'s verifier when given. Fresh each time
/// (a random IV), all paying the same wallet address.
pub fn credentials(
    services: &Services,
    wallet: &WalletAddress,
    receipt: Option<&ReceiptSetup>,
) -> Result<StreamCredentials, ServiceError> {
    let mut iv = [0u8; 12];
    services.random.fill(&mut iv);
    let asset = Some((wallet.asset.code.as_str(), wallet.asset.scale));
    generate_credentials_with_receipts(
        &services.interledger.stream_secret,
        &services.config.ilp_address,
        &PaymentTag::Wallet(wallet.id).encode(),
        asset,
        receipt,
        iv,
    )
    .map_err(|e| ServiceError::Internal(format!("cannot derive SPSP credentials: {e}")))
}

/// The active wallet address an SPSP connection pays; `None` when it is
/// unknown, deactivated, or SPSP is off.
pub(crate) async fn receiver(
    services: &Services,
    id: WalletAddressId,
) -> Result<Option<WalletAddress>, ServiceError> {
    if !enabled(services) {
        return Ok(None);
    }
    let wallet = services.wallet_by_id(id).await?;
    Ok(wallet.filter(|w| w.is_active(services.clock.now())))
}

/// The body of a `wallet_address.web_monetization` event, in the reference
/// server's shape (`walletAddress.receivedAmount`: what arrived since the
/// last event) with the wallet address's URL as its id, plus what its SPSP
/// account holds for the operator (`amountToWithdraw`, external mode; 0
/// otherwise), as incoming payments' events carry it.
pub(crate) fn report_data(
    wallet_url: &str,
    wallet: &WalletAddress,
    amount: u64,
    to_withdraw: u64,
) -> serde_json::Value {
    let received = Amount::new(amount, wallet.asset.clone());
    let held = Amount::new(to_withdraw, wallet.asset.clone());
    serde_json::json!({
        "walletAddress": {
            "id": wallet_url,
            "createdAt": wallet.created_at.to_rfc3339(),
            "receivedAmount": AmountWire::from(&received),
        },
        "amountToWithdraw": AmountWire::from(&held),
    })
}

/// Makes the `wallet_address.web_monetization` events that are due; returns
/// how many. Their claim and their events commit together.
pub async fn report_once(services: &Services) -> Result<usize, ServiceError> {
    let now = services.clock.now();
    let claimed = services
        .store
        .claim_spsp_reports(now, REPORTS_PER_PASS)
        .await?;
    if claimed.outcome().is_empty() {
        claimed.commit(&[]).await?;
        return Ok(0);
    }
    let sites = services.sites.table().await?;
    let stamp = Stamp::of(services, &sites);
    let mut events = Vec::with_capacity(claimed.outcome().len());
    for report in claimed.outcome() {
        let wallet = services
            .wallet_by_id(report.wallet)
            .await?
            .ok_or_else(|| ServiceError::corrupt("an SPSP report without its wallet address"))?;
        let site = stamp.sites.of(&wallet.tenant);
        let url = site.public_url.wallet_address(&wallet.path);
        let data = report_data(&url, &wallet, report.amount, report.to_withdraw);
        let kind = EventKind::WalletAddressWebMonetization;
        events.push(event_at(
            stamp.now,
            stamp.random,
            wallet.tenant.clone(),
            kind,
            data,
        ));
    }
    let n = events.len();
    claimed.commit(&events).await?;
    Ok(n)
}

/// External mode: moves everything `wallet` received over SPSP and the
/// operator has not withdrawn yet out of opd (to the settlement account),
/// once per idempotency key, as `ledger::withdraw_received` does for an
/// incoming payment. `nothing_to_withdraw` when nothing waits (always in
/// balance mode, where SPSP money is on the wallet address's balance); the
/// key is then not spent.
pub async fn withdraw(
    services: &Services,
    wallet: &WalletAddress,
    idempotency_key: &str,
) -> Result<(opd_core::ledger::Transfer, bool), ServiceError> {
    crate::ledger::check_key(idempotency_key)?;
    let digest = opd_core::hex::lower(&Sha256::digest(
        format!("spsp-withdrawal|{}", wallet.id).as_bytes(),
    ));
    // Its own key space: no other withdrawal's key answers this.
    let key = format!("spsp-withdrawal:{idempotency_key}");
    let outcome = services
        .store
        .withdraw_spsp(
            wallet.id,
            &wallet.asset,
            &key,
            &digest,
            services.clock.now(),
        )
        .await?;
    let (transfer, new) = crate::ledger::transfer_of(outcome, &wallet.asset, 0)?;
    if transfer.amount == 0 {
        return Err(ServiceError::Conflict {
            code: "nothing_to_withdraw",
            message: "the wallet address holds no SPSP money to withdraw".into(),
        });
    }
    Ok((transfer, new))
}

#[cfg(test)]
mod tests {
    use super::*;
    use opd_core::clock::SeededRandom;
    use opd_core::Timestamp;

    #[test]
    fn tags_name_an_incoming_payment_or_a_wallet_address() {
        let at = Timestamp::from_unix_millis(1_000_000);
        let wallet = WalletAddressId::new(at, &SeededRandom::new(1));
        let incoming = IncomingPaymentId::new(at, &SeededRandom::new(2));
        for tag in [PaymentTag::Wallet(wallet), PaymentTag::Incoming(incoming)] {
            assert_eq!(PaymentTag::parse(&tag.encode()), Some(tag));
        }
        assert_eq!(PaymentTag::Wallet(wallet).encode(), format!("w:{wallet}"));
        assert_eq!(
            PaymentTag::Incoming(incoming).encode(),
            incoming.to_string()
        );
        for junk in [
            "",
            "w:",
            "w:nope",
            "x:0190f3a2-7c1e-7d0a-9a43-5b7e0f6c2d81",
            "w",
        ] {
            assert_eq!(PaymentTag::parse(junk), None, "{junk:?}");
        }
    }

    #[test]
    fn a_report_says_what_arrived_since_the_last_in_the_wallets_asset() {
        let at = Timestamp::from_unix_millis(1_790_000_000_000);
        let wallet = WalletAddress {
            id: WalletAddressId::new(at, &SeededRandom::new(1)),
            tenant: opd_core::TenantId::operator(),
            path: opd_core::wallet_address::WalletAddressPath::parse("alice").expect("path"),
            asset: opd_core::Asset::parse("USD", 2).expect("asset"),
            public_name: None,
            created_at: at,
            deactivated_at: None,
        };
        let data = report_data("https://w.example/alice", &wallet, 1234, 7);
        assert_eq!(
            data,
            serde_json::json!({
                "walletAddress": {
                    "id": "https://w.example/alice",
                    "createdAt": at.to_rfc3339(),
                    "receivedAmount": {"value": "1234", "assetCode": "USD", "assetScale": 2},
                },
                "amountToWithdraw": {"value": "7", "assetCode": "USD", "assetScale": 2},
            })
        );
    }
}
