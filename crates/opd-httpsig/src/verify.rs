//! Verifying Open Payments request signatures.
//!
//! Verification is split in two so the caller can look the key up (possibly
//! asynchronously) between the steps:
//!
//! 1. [`parse_signature`] checks everything that does not need the key:
//!    header syntax, covered components, `keyid`/`alg`/`created`/`expires`,
//!    the Content-Digest, and builds the signature base;
//! 2. [`ParsedSignature::verify`] checks the Ed25519 signature with a
//!    [`VerifyingKey`], a [`Jwk`] or a key set.
//!
//! Replay protection is the caller's: opd keeps a replay log keyed on
//! [`ParsedSignature::signature_bytes`] (`opd_service::access::replays`).

use std::time::Duration;

use ed25519_dalek::{Signature, Verifier as _, VerifyingKey, SIGNATURE_LENGTH};

use crate::base::{build_signature_base, combined_header, RequestParts};
use crate::digest::verify_content_digest;
use crate::error::SigError;
use crate::jwk::{Jwk, Jwks};
use crate::sf::{self, BareItem, DictMember, MemberValue, Params, BASE64_LENIENT};
use base64::Engine as _;

/// What [`parse_signature`] accepts besides the fixed Open Payments rules.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifyPolicy {
    /// Oldest acceptable `created`, relative to now. Default 300 s.
    pub max_age: Duration,
    /// How far in the future `created` may be (client clock ahead of
    /// ours). Default 60 s.
    pub max_future_skew: Duration,
    /// Accept the non-RFC format of the `open-payments` Rust SDK 0.2.0
    /// (unquoted component names, bare base64 `Signature`) when strict
    /// parsing fails. Default true.
    pub accept_sdk_compat_format: bool,
}

// The defaults, in the units of `opd serve`'s flags, which take their
// defaults from here: each is written once.
impl VerifyPolicy {
    /// [`VerifyPolicy::max_age`]'s default, in seconds.
    pub const DEFAULT_MAX_AGE_SECS: u64 = 300;
    /// [`VerifyPolicy::max_future_skew`]'s default, in seconds.
    pub const DEFAULT_MAX_FUTURE_SKEW_SECS: u64 = 60;
    /// [`VerifyPolicy::accept_sdk_compat_format`]'s default.
    pub const DEFAULT_ACCEPT_SDK_COMPAT_FORMAT: bool = true;
}

impl Default for VerifyPolicy {
    fn default() -> Self {
        VerifyPolicy {
            max_age: Duration::from_secs(Self::DEFAULT_MAX_AGE_SECS),
            max_future_skew: Duration::from_secs(Self::DEFAULT_MAX_FUTURE_SKEW_SECS),
            accept_sdk_compat_format: Self::DEFAULT_ACCEPT_SDK_COMPAT_FORMAT,
        }
    }
}

/// A signature that passed every check except the cryptographic one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParsedSignature {
    label: String,
    keyid: String,
    alg: Option<String>,
    created: u64,
    expires: Option<u64>,
    nonce: Option<String>,
    tag: Option<String>,
    components: Vec<String>,
    signature_params: String,
    signature: [u8; SIGNATURE_LENGTH],
    signature_base: Vec<u8>,
    compat: bool,
}

impl ParsedSignature {
    /// The Signature-Input / Signature label that was used (e.g. `sig1`).
    pub fn label(&self) -> &str {
        &self.label
    }
    /// The `keyid` parameter: look the client's key up by this.
    pub fn keyid(&self) -> &str {
        &self.keyid
    }
    /// The `alg` parameter, if sent (always `ed25519` when present).
    pub fn alg(&self) -> Option<&str> {
        self.alg.as_deref()
    }
    /// The `created` parameter (unix seconds).
    pub fn created(&self) -> u64 {
        self.created
    }
    /// The `expires` parameter (unix seconds), if sent.
    pub fn expires(&self) -> Option<u64> {
        self.expires
    }
    /// The `nonce` parameter, if sent as a string.
    pub fn nonce(&self) -> Option<&str> {
        self.nonce.as_deref()
    }
    /// The `tag` parameter, if sent as a string.
    pub fn tag(&self) -> Option<&str> {
        self.tag.as_deref()
    }
    /// Covered component names, unquoted, in signed order.
    pub fn components(&self) -> &[String] {
        &self.components
    }
    /// The exact `@signature-params` text (the Signature-Input member value).
    pub fn signature_params(&self) -> &str {
        &self.signature_params
    }
    /// The 64 signature bytes (e.g. the key of a replay log).
    pub fn signature_bytes(&self) -> &[u8] {
        &self.signature
    }
    /// The signature base that was signed.
    pub fn signature_base(&self) -> &[u8] {
        &self.signature_base
    }
    /// True when the headers were only accepted through the Rust SDK
    /// compatibility fallback (worth a debug log).
    pub fn used_compat_format(&self) -> bool {
        self.compat
    }

    /// Verifies the Ed25519 signature over the signature base.
    ///
    /// `key` may be a [`VerifyingKey`] (no `kid` check), a [`Jwk`] (its `kid`
    /// must equal `keyid`, and it must validate), a `[Jwk]` slice or
    /// [`Jwks`] (the key whose `kid` equals `keyid` is used).
    ///
    /// The check is RFC 8032's (cofactorless, as OpenSSL, and so Node and
    /// the reference server, make it): `S` must be canonical, and `[S]B -
    /// [k]A` must encode to the signature's `R` byte for byte, so a
    /// non-canonical `R` fails too. A key of small order is refused, as
    /// [`Jwk::verifying_key`] already refuses it. Not checked is whether
    /// `R` itself has small order (`verify_strict` decompresses `R` for
    /// that, a square root per request): with a key of full order such a
    /// signature can only come from the key's holder, and it proves no
    /// less than any other.
    pub fn verify<K: VerificationKey + ?Sized>(&self, key: &K) -> Result<(), SigError> {
        let key = key.resolve(&self.keyid)?;
        if key.is_weak() {
            return Err(SigError::BadSignature);
        }
        let sig = Signature::from_bytes(&self.signature);
        key.verify(&self.signature_base, &sig)
            .map_err(|_| SigError::BadSignature)
    }
}

/// Something that can supply the Ed25519 key for a `keyid`.
pub trait VerificationKey {
    /// The key to verify a signature whose `keyid` is `keyid`.
    fn resolve(&self, keyid: &str) -> Result<VerifyingKey, SigError>;
}

impl VerificationKey for VerifyingKey {
    fn resolve(&self, _keyid: &str) -> Result<VerifyingKey, SigError> {
        Ok(*self)
    }
}

impl VerificationKey for Jwk {
    fn resolve(&self, keyid: &str) -> Result<VerifyingKey, SigError> {
        if self.kid != keyid {
            return Err(SigError::UnknownKey(keyid.to_owned()));
        }
        Ok(self.verifying_key()?)
    }
}

impl VerificationKey for [Jwk] {
    fn resolve(&self, keyid: &str) -> Result<VerifyingKey, SigError> {
        self.iter()
            .find(|k| k.kid == keyid)
            .ok_or_else(|| SigError::UnknownKey(keyid.to_owned()))?
            .resolve(keyid)
    }
}

impl VerificationKey for Jwks {
    fn resolve(&self, keyid: &str) -> Result<VerifyingKey, SigError> {
        self.keys.as_slice().resolve(keyid)
    }
}

const SIGNATURE_INPUT: &str = "Signature-Input";
const SIGNATURE: &str = "Signature";

fn malformed(header: &'static str, reason: impl Into<String>) -> SigError {
    SigError::MalformedHeader {
        header,
        reason: reason.into(),
    }
}

/// One usable Signature-Input member.
struct InputMember {
    label: String,
    components: Vec<String>,
    params: Params,
    raw: String,
}

/// Parses Signature-Input; in `lenient` mode unquoted component names (SF
/// tokens and bare `@name`s) are accepted.
fn parse_signature_input(value: &[u8], lenient: bool) -> Result<Vec<InputMember>, SigError> {
    let members =
        sf::parse_dictionary(value, lenient).map_err(|e| malformed(SIGNATURE_INPUT, e.0))?;
    if members.is_empty() {
        return Err(malformed(SIGNATURE_INPUT, "no signatures"));
    }
    members
        .into_iter()
        .map(|m| input_member(m, lenient))
        .collect()
}

fn input_member(m: DictMember, lenient: bool) -> Result<InputMember, SigError> {
    let MemberValue::InnerList(items, params) = m.value else {
        return Err(malformed(
            SIGNATURE_INPUT,
            format!("{} is not a list of components", m.key),
        ));
    };
    let mut components = Vec::with_capacity(items.len());
    for item in items {
        let name = match item.bare {
            BareItem::String(s) => s,
            BareItem::Token(t) if lenient => t,
            _ => {
                return Err(malformed(
                    SIGNATURE_INPUT,
                    "component names must be quoted strings",
                ))
            }
        };
        if !item.params.is_empty() {
            return Err(SigError::UnsupportedComponent(format!(
                "{name} with parameters"
            )));
        }
        components.push(name);
    }
    Ok(InputMember {
        label: m.key,
        components,
        params,
        raw: m.raw,
    })
}

/// The first required component `components` lacks, if any.
fn missing_required(req: &RequestParts<'_>, components: &[String]) -> Option<&'static str> {
    let covers = |c: &str| components.iter().any(|x| x == c);
    let mut required = vec!["@method", "@target-uri"];
    if req.headers.contains_key(http::header::AUTHORIZATION) {
        required.push("authorization");
    }
    if req.has_body() {
        required.push("content-digest");
    }
    required.into_iter().find(|c| !covers(c))
}

fn param<'p>(params: &'p Params, key: &str) -> Option<&'p BareItem> {
    params.iter().find(|(k, _)| k == key).map(|(_, v)| v)
}

fn param_string(params: &Params, key: &str) -> Result<Option<String>, SigError> {
    match param(params, key) {
        None => Ok(None),
        Some(BareItem::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(malformed(
            SIGNATURE_INPUT,
            format!("{key} must be a string"),
        )),
    }
}

/// Finds the signature bytes for `label` in the Signature header.
/// Returns the bytes and whether the compat fallback was needed.
fn signature_bytes(
    value: &[u8],
    label: &str,
    only_label: bool,
    compat_allowed: bool,
) -> Result<(Vec<u8>, bool), SigError> {
    let parsed = sf::parse_dictionary(value, false).and_then(|members| {
        if members.is_empty() {
            Err(sf::SfError("no signatures"))
        } else {
            Ok(members)
        }
    });
    match parsed {
        Ok(members) => {
            let member = members
                .into_iter()
                .find(|m| m.key == label)
                .ok_or_else(|| SigError::MissingSignatureLabel(label.to_owned()))?;
            match member.value {
                MemberValue::Item(item) => match item.bare {
                    BareItem::ByteSeq(bytes) => Ok((bytes, false)),
                    _ => Err(malformed(SIGNATURE, "signature is not a byte sequence")),
                },
                MemberValue::InnerList(..) => {
                    Err(malformed(SIGNATURE, "signature is not a byte sequence"))
                }
            }
        }
        Err(strict) if compat_allowed && only_label => {
            // Rust SDK 0.2.0: bare base64. Also tolerate `label=<b64>` and
            // `:` delimiters, which the reference verifier ignores too.
            let text = std::str::from_utf8(value)
                .map_err(|_| malformed(SIGNATURE, strict.0))?
                .trim_matches([' ', '\t']);
            let text = text
                .strip_prefix(label)
                .and_then(|t| t.strip_prefix('='))
                .unwrap_or(text);
            let text = text.strip_prefix(':').unwrap_or(text);
            let text = text.strip_suffix(':').unwrap_or(text);
            let bytes = BASE64_LENIENT
                .decode(text)
                .map_err(|_| malformed(SIGNATURE, strict.0))?;
            Ok((bytes, true))
        }
        Err(strict) => Err(malformed(SIGNATURE, strict.0)),
    }
}

/// Parses and checks the signature of `req`, without the key.
///
/// `now` is the current unix time in seconds. On success the returned
/// [`ParsedSignature`] carries the `keyid` to look the key up by; call
/// [`ParsedSignature::verify`] with it.
///
/// Checks, in order:
/// - `Signature-Input` and `Signature` are present;
/// - `Signature-Input` is an RFC 8941 dictionary of inner lists of quoted
///   component names (or, with `accept_sdk_compat_format`, unquoted ones);
/// - the first label (in header order) whose components include `@method`,
///   `@target-uri`, `authorization` if the request has an Authorization
///   header, and `content-digest` if the body is non-empty is chosen;
///   otherwise [`SigError::MissingComponent`] names what the first label
///   lacks;
/// - `keyid` (non-empty string) and `created` are present, `alg` if present
///   is `ed25519`, `now - max_age <= created <= now + max_future_skew`, and
///   `expires`, if present, is after `now`;
/// - `Signature` has a 64-byte byte sequence under the same label (with
///   compat: or is bare base64, when Signature-Input has a single label);
/// - if `content-digest` is covered, Content-Digest matches the body;
/// - the signature base can be built (every covered header is present).
pub fn parse_signature(
    req: &RequestParts<'_>,
    policy: &VerifyPolicy,
    now: u64,
) -> Result<ParsedSignature, SigError> {
    let input_value = combined_header(req.headers, "signature-input")
        .ok_or(SigError::MissingHeader(SIGNATURE_INPUT))?;
    let sig_value =
        combined_header(req.headers, "signature").ok_or(SigError::MissingHeader(SIGNATURE))?;

    let (members, mut compat) = match parse_signature_input(&input_value, false) {
        Ok(m) => (m, false),
        Err(strict) if policy.accept_sdk_compat_format => {
            match parse_signature_input(&input_value, true) {
                Ok(m) => (m, true),
                Err(_) => return Err(strict),
            }
        }
        Err(strict) => return Err(strict),
    };
    let only_label = members.len() == 1;

    let mut first_missing = None;
    let mut chosen = None;
    for m in members {
        match missing_required(req, &m.components) {
            None => {
                chosen = Some(m);
                break;
            }
            Some(missing) => {
                first_missing.get_or_insert(missing);
            }
        }
    }
    let Some(member) = chosen else {
        return Err(SigError::MissingComponent(
            first_missing.unwrap_or("@method").to_owned(),
        ));
    };

    let keyid = param_string(&member.params, "keyid")?
        .filter(|k| !k.is_empty())
        .ok_or(SigError::MissingKeyId)?;
    let alg = param_string(&member.params, "alg")?;
    if let Some(alg) = &alg {
        if alg != "ed25519" {
            return Err(SigError::UnsupportedAlg(alg.clone()));
        }
    }
    let created = match param(&member.params, "created") {
        None => return Err(SigError::MissingCreated),
        Some(BareItem::Integer(c)) => u64::try_from(*c).map_err(|_| SigError::InvalidCreated)?,
        Some(_) => return Err(SigError::InvalidCreated),
    };
    let expires = match param(&member.params, "expires") {
        None => None,
        Some(BareItem::Integer(e)) => {
            Some(u64::try_from(*e).map_err(|_| malformed(SIGNATURE_INPUT, "invalid expires"))?)
        }
        Some(_) => return Err(malformed(SIGNATURE_INPUT, "invalid expires")),
    };
    if created.saturating_add(policy.max_age.as_secs()) < now {
        return Err(SigError::Stale { created, now });
    }
    if created > now.saturating_add(policy.max_future_skew.as_secs()) {
        return Err(SigError::Future { created, now });
    }
    if let Some(expires) = expires {
        if expires <= now {
            return Err(SigError::Expired { expires, now });
        }
    }
    let nonce = param_string(&member.params, "nonce")?;
    let tag = param_string(&member.params, "tag")?;

    let (sig, sig_compat) = signature_bytes(
        &sig_value,
        &member.label,
        only_label,
        policy.accept_sdk_compat_format,
    )?;
    compat |= sig_compat;
    let signature: [u8; SIGNATURE_LENGTH] = sig
        .try_into()
        .map_err(|_| malformed(SIGNATURE, "an Ed25519 signature is 64 bytes"))?;

    if member.components.iter().any(|c| c == "content-digest") {
        let digest = combined_header(req.headers, "content-digest")
            .ok_or(SigError::MissingHeader("Content-Digest"))?;
        verify_content_digest(&digest, req.body.unwrap_or_default())?;
    }

    let signature_base = build_signature_base(req, &member.components, &member.raw)?;

    Ok(ParsedSignature {
        label: member.label,
        keyid,
        alg,
        created,
        expires,
        nonce,
        tag,
        components: member.components,
        signature_params: member.raw,
        signature,
        signature_base,
        compat,
    })
}
