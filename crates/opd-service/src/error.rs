//! The use cases' one error enum. `opd-api` maps each variant to an HTTP
//! status and a stable code exactly once.

use opd_core::Amount;
use opd_store::StoreError;

/// Why a use case refused or failed.
#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    /// The request is malformed in a way the wire layer could not catch.
    #[error("{0}")]
    InvalidRequest(String),
    /// `metadata` is larger than `MAX_METADATA_BYTES` of JSON.
    #[error("metadata must be at most {max} bytes of JSON, not {size}")]
    MetadataTooLarge { size: usize, max: usize },
    /// An amount is not acceptable here (asset, zero, beyond what is owed).
    #[error("{0}")]
    InvalidAmount(String),
    /// A timestamp is not acceptable (in the past, too far ahead).
    #[error("{0}")]
    InvalidExpiry(String),
    /// The receiver cannot be paid; the reason goes in `details.reason`.
    #[error("invalid receiver: {0}")]
    InvalidReceiver(String),
    /// The quote would deliver nothing.
    #[error("non-positive receive amount")]
    NonPositiveReceiveAmount { min_send_amount: Option<Amount> },
    /// No exchange rate is known between the two assets.
    #[error("no exchange rate from {from} to {to}")]
    NoExchangeRate { from: String, to: String },
    /// The path to a receiver on another server converts at a worse rate
    /// than the configured rate less the slippage allowance.
    #[error("the exchange rate to the receiver is below the minimum acceptable rate")]
    InsufficientExchangeRate,
    /// The rates service did not answer usefully.
    #[error("exchange rates are unavailable: {0}")]
    RatesUnavailable(String),
    /// An amount computation overflowed a u64.
    #[error("amount overflows an unsigned 64-bit integer")]
    AmountOverflow,
    /// The wallet address is not served here.
    #[error("unknown wallet address")]
    UnknownWalletAddress,
    /// The wallet address was deactivated.
    #[error("inactive wallet address")]
    InactiveWalletAddress,
    /// The resource does not exist (or is not visible to the caller).
    #[error("{0} not found")]
    NotFound(&'static str),
    /// A uniqueness rule or a state rule was broken.
    #[error("{message}")]
    Conflict { code: &'static str, message: String },
    /// The quote cannot be paid (unknown, another wallet's, expired, used).
    #[error("invalid quote: {0}")]
    InvalidQuote(String),
    /// The token's grant does not allow this payment (limits, receiver).
    #[error("{message}")]
    Forbidden { code: &'static str, message: String },
    /// The wallet address's balance does not cover the debit.
    #[error("insufficient balance: {available:?} available, {required:?} required")]
    InsufficientBalance { available: Amount, required: Amount },
    /// The database could not be reached or timed out; try again later.
    #[error("database unavailable: {0}")]
    Unavailable(String),
    /// The database's disk is full: nothing of the request was saved.
    #[error("storage full: {0}")]
    StorageFull(String),
    /// A fault of this server (a store failure, corrupt data); the message
    /// is for the logs, never for the requester.
    #[error("internal error: {0}")]
    Internal(String),
    /// An auto-peering request that would take, overlap or reuse what
    /// exists. The reason is for the logs only: every refusal looks the
    /// same to the requester, so none tells what exists.
    #[error("peering refused: {0}")]
    PeeringRefused(String),
    /// The auto-peering listener created as many peers as it may.
    #[error("the auto-peering quota is reached")]
    PeeringQuotaReached,
    /// Another server did not peer when asked (unreachable, refused, or an
    /// answer that is no peering).
    #[error("{0}")]
    PeeringFailed(String),
    /// A quota is used up; try again after `retry_after_secs`.
    #[error("{message}")]
    RateLimited {
        message: String,
        retry_after_secs: u32,
    },
}

impl From<StoreError> for ServiceError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::Unavailable(m) => ServiceError::Unavailable(m),
            StoreError::Full(m) => ServiceError::StorageFull(m),
            // The replay layer answers with the first request's response;
            // should that fail, the client retries and gets it then.
            StoreError::Replayed => ServiceError::Unavailable(e_replayed()),
            other => ServiceError::Internal(other.to_string()),
        }
    }
}

fn e_replayed() -> String {
    "an identical request was answered first".to_owned()
}

impl ServiceError {
    /// A stored value that does not decode.
    pub fn corrupt(what: &str) -> Self {
        ServiceError::Internal(format!("stored data is invalid: {what}"))
    }
}
