#![doc = include_str!("../README.md")]

pub mod backoff;
#[cfg(feature = "tls")]
pub mod certificates;
pub mod clock;
pub mod decimal;
pub mod hex;
pub mod ids;
pub mod incoming_payment;
pub mod ledger;
pub mod money;
pub mod outgoing_payment;
pub mod owner_login;
pub mod pagination;
pub mod peer;
pub mod quote;
pub mod requests;
pub mod tenant;
pub mod time;
pub mod untrusted;
pub mod wallet_address;
pub mod webhook;

pub use backoff::Backoff;
pub use clock::{Clock, ManualClock, OsRandom, Random, SeededRandom, SystemClock};
pub use ids::{GrantId, IncomingPaymentId, OutgoingPaymentId, PeerId, QuoteId, WalletAddressId};
pub use money::{Amount, AmountWire, Asset, AssetCode, AssetScale, Fee, MoneyError, Rate};
pub use tenant::TenantId;
pub use time::Timestamp;
