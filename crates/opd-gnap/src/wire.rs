//! The JSON shapes of the Open Payments auth server (`auth-server.yaml`)
//! and of token introspection (`token-introspection.yaml`), with exactly the
//! spec's member names.
//!
//! These types are *unvalidated*: they only describe shapes. Requests are
//! turned into domain values with [`ValidatedGrantRequest::parse`] and
//! [`AccessItem::parse`], which enforce everything the spec and opd require.
//! Optional members are never serialized as `null`.
//!
//! Objects the spec closes (`additionalProperties: false` or
//! `unevaluatedProperties: false`: access items, the object forms of
//! `client`, amounts, the issued `access_token`) reject unknown members.
//! Outgoing-payment `limits` reject unknown members too, although the spec
//! leaves them open: a misspelled limit (`"debitAmmount"`) silently granting
//! unlimited spending is worse than a 400. Other objects accept unknown
//! members, as GNAP allows extensions.
//!
//! [`ValidatedGrantRequest::parse`]: crate::ValidatedGrantRequest::parse
//! [`AccessItem::parse`]: crate::AccessItem::parse

use opd_core::AmountWire;
use opd_httpsig::Jwk;
use serde::{Deserialize, Serialize};

/// `POST /` body: a grant request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GrantRequest {
    /// The access being asked for; required unless `subject` is present.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub access_token: Option<AccessTokenRequest>,
    /// Who is asking.
    pub client: ClientWire,
    /// How the client can start and finish an interaction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interact: Option<InteractRequest>,
    /// Subject information being asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<Subject>,
}

/// The `access_token` member of a grant request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AccessTokenRequest {
    /// At most three distinct access items.
    pub access: Vec<AccessItemWire>,
}

/// One access item (`access-incoming`, `access-outgoing` or `access-quote`)
/// as it appears on the wire, in requests, responses and introspection.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AccessItemWire {
    /// `incoming-payment`, `outgoing-payment` or `quote`.
    #[serde(rename = "type")]
    pub kind: String,
    /// Action names such as `create` or `read-all`.
    pub actions: Vec<String>,
    /// A wallet address URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identifier: Option<String>,
    /// Outgoing-payment limits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limits: Option<LimitsWire>,
}

/// `limits-outgoing`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LimitsWire {
    /// The only incoming payment URL payments may go to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receiver: Option<String>,
    /// Maximum total debit (per interval when `interval` is set).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub debit_amount: Option<AmountWire>,
    /// Maximum total delivered amount (per interval when `interval` is set).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receive_amount: Option<AmountWire>,
    /// An ISO 8601 repeating interval such as `R12/2019-08-24T14:15:22Z/P1M`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval: Option<String>,
}

/// The `client` member: a bare wallet address URL (deprecated but what
/// most clients send), `{"walletAddress": url}`, or `{"jwk": {…}}`
/// (directed identity). Introspection responses use the two object forms.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged, deny_unknown_fields)]
pub enum ClientWire {
    /// `"https://wallet.example/alice"`.
    Url(String),
    /// `{"walletAddress": "https://wallet.example/alice"}`.
    WalletAddress {
        /// The client's wallet address URL.
        #[serde(rename = "walletAddress")]
        wallet_address: String,
    },
    /// `{"jwk": {…}}`.
    Jwk {
        /// The client's public key.
        jwk: Jwk,
    },
}

/// The `interact` member of a grant request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InteractRequest {
    /// Start modes; only `redirect` is supported.
    pub start: Vec<String>,
    /// How the AS tells the client the interaction finished. `null` (sent by
    /// the Rust SDK) is read as absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finish: Option<Finish>,
}

/// `interact.finish`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finish {
    /// Only `redirect` is supported.
    pub method: String,
    /// Where the AS sends the user after the interaction.
    pub uri: String,
    /// The client's nonce, an input of the finish hash.
    pub nonce: String,
    /// GNAP's hash method; only `sha-256` (the default) is supported. Not
    /// in the Open Payments spec, read so that a client asking for another
    /// method gets an error instead of a hash it cannot check.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hash_method: Option<String>,
}

/// `subject`: in requests and in continue responses.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Subject {
    /// Exactly one identifier.
    pub sub_ids: Vec<SubjectId>,
}

/// One subject identifier.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SubjectId {
    /// The identifier, e.g. a wallet address URL.
    pub id: String,
    /// Only `uri`.
    pub format: String,
}

/// `POST /continue/{id}` body. An empty or missing body is a poll.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ContinueRequest {
    /// The interaction reference from the finish redirect.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interact_ref: Option<String>,
}

/// An issued access token (`access_token` in responses).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AccessTokenResponse {
    /// The token value.
    pub value: String,
    /// The token management URL (`…/token/{managementId}`).
    pub manage: String,
    /// Lifetime in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_in: Option<u64>,
    /// The granted access.
    pub access: Vec<AccessItemWire>,
}

/// The continuation access token.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContinueToken {
    /// The token value.
    pub value: String,
}

/// `continue` in responses.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContinueResponse {
    /// The continuation token.
    pub access_token: ContinueToken,
    /// The continuation URL (`…/continue/{continueId}`).
    pub uri: String,
    /// Seconds the client must wait before continuing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait: Option<u64>,
}

/// `interact` in a pending grant response.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InteractResponse {
    /// Where to send the user.
    pub redirect: String,
    /// The AS nonce, an input of the finish hash.
    pub finish: String,
}

/// `POST /` 200 body when a token is issued at once.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApprovedGrantResponse {
    /// The issued token.
    pub access_token: AccessTokenResponse,
    /// How to continue (to cancel the grant).
    #[serde(rename = "continue")]
    pub continue_: ContinueResponse,
}

/// `POST /` 200 body when interaction is needed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingGrantResponse {
    /// Interaction instructions.
    pub interact: InteractResponse,
    /// How to continue once the interaction finished.
    #[serde(rename = "continue")]
    pub continue_: ContinueResponse,
}

/// `POST /` 200 body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum GrantResponse {
    /// Interaction needed.
    Pending(PendingGrantResponse),
    /// Token issued.
    Approved(ApprovedGrantResponse),
}

/// `POST /continue/{id}` 200 body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContinueGrantResponse {
    /// The issued token; absent while pending and for subject-only grants.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub access_token: Option<AccessTokenResponse>,
    /// Subject information, when it was asked for and approved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<Subject>,
    /// How to continue.
    #[serde(rename = "continue")]
    pub continue_: ContinueResponse,
}

/// `POST /token/{id}` 200 body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RotateTokenResponse {
    /// The new token.
    pub access_token: AccessTokenResponse,
}

/// Introspection request body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IntrospectionRequest {
    /// The token the client presented to the RS.
    pub access_token: String,
    /// The access the RS needs; each item usually has one action. When
    /// absent, an active response carries `access: []`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub access: Option<Vec<AccessItemWire>>,
}

/// Introspection response body: `{"active":false}` or a [`TokenInfo`] with
/// `"active":true`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    try_from = "IntrospectionResponseRaw",
    into = "IntrospectionResponseRaw"
)]
pub enum IntrospectionResponse {
    /// Unknown, expired or revoked token (or revoked grant).
    Inactive,
    /// A live token.
    Active(TokenInfo),
}

/// What introspection says about a live token.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenInfo {
    /// The grant id.
    pub grant: String,
    /// The granted items that matched the requested access, in full.
    pub access: Vec<AccessItemWire>,
    /// The client the grant was issued to (object form; older servers sent
    /// a bare URL, which is accepted when reading).
    pub client: ClientWire,
}

#[derive(Clone, Serialize, Deserialize)]
struct IntrospectionResponseRaw {
    active: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    grant: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    access: Option<Vec<AccessItemWire>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    client: Option<ClientWire>,
}

impl TryFrom<IntrospectionResponseRaw> for IntrospectionResponse {
    type Error = String;
    fn try_from(raw: IntrospectionResponseRaw) -> Result<Self, String> {
        if !raw.active {
            return Ok(Self::Inactive);
        }
        match (raw.grant, raw.access, raw.client) {
            (Some(grant), Some(access), Some(client)) => Ok(Self::Active(TokenInfo {
                grant,
                access,
                client,
            })),
            _ => Err("an active token needs grant, access and client".to_owned()),
        }
    }
}

impl From<IntrospectionResponse> for IntrospectionResponseRaw {
    fn from(r: IntrospectionResponse) -> Self {
        match r {
            IntrospectionResponse::Inactive => Self {
                active: false,
                grant: None,
                access: None,
                client: None,
            },
            IntrospectionResponse::Active(info) => Self {
                active: true,
                grant: Some(info.grant),
                access: Some(info.access),
                client: Some(info.client),
            },
        }
    }
}
