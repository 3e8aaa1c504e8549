#![doc = include_str!("../README.md")]
//!
//! ## Modules
//!
//! - [`wire`]: the JSON request and response types;
//! - [`access`]: access items, their validation and matching;
//! - [`request`]: grant request validation and the interaction decision;
//! - [`interval`]: ISO 8601 repeating intervals;
//! - [`token`]: token values, token digests and the finish hash;
//! - [`state`]: the grant state machine and continuation rules;
//! - [`error`]: GNAP error codes;
//! - [`client`]: the client side: request bodies, reading answers,
//!   rotation timing and the finish redirect check.
#![warn(missing_docs)]

pub mod access;
pub mod client;
pub mod error;
pub mod interval;
pub mod request;
pub mod state;
pub mod token;
pub mod wire;

pub use access::{
    find_access, introspection_matches, is_http_url, is_incoming_payment_url, AccessItem,
    AccessType, Action, InteractionPolicy, OutgoingLimits, MAX_ACCESS_ITEMS,
};
pub use error::{ErrorBody, ErrorResponse, GnapError, GnapErrorCode};
pub use interval::{IntervalError, IntervalSpec, IsoDuration, RepeatingInterval, Repetitions};
pub use request::{ClientIdent, FinishRedirect, Interact, ValidatedGrantRequest};
pub use state::{
    continue_with_ref_decision, poll_decision, ContinueDecision, FinalizationReason, GrantState,
    TransitionError,
};
pub use token::{
    interaction_hash, interaction_hash_matches, interaction_hash_rfc9635, new_token, token_digest,
    TOKEN_BYTES,
};
pub use wire::{
    AccessItemWire, AccessTokenRequest, AccessTokenResponse, ApprovedGrantResponse, ClientWire,
    ContinueGrantResponse, ContinueRequest, ContinueResponse, ContinueToken, Finish, GrantRequest,
    GrantResponse, InteractRequest, InteractResponse, IntrospectionRequest, IntrospectionResponse,
    LimitsWire, PendingGrantResponse, RotateTokenResponse, Subject, SubjectId, TokenInfo,
};
