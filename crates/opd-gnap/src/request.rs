//! Grant request validation: [`GrantRequest`] (wire) into
//! [`ValidatedGrantRequest`] (domain), including whether the grant needs
//! user interaction.

use opd_httpsig::Jwk;

use crate::access::{is_http_url, AccessItem, InteractionPolicy};
use crate::error::GnapError;
use crate::wire::{ClientWire, GrantRequest, InteractRequest, Subject};

/// The validated client identity of a grant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClientIdent {
    /// A client identified by its wallet address URL; its keys are at
    /// `<url>/jwks.json`.
    WalletAddress(String),
    /// A client identified by its key alone ("directed identity"); only
    /// for non-interactive grants.
    Jwk(Jwk),
}

impl ClientIdent {
    /// Validates `client`: a wallet address must be an `http(s)` URL, a JWK
    /// must be a valid Ed25519 key ([`Jwk::validate`]). Errors are
    /// `invalid_client` with status 400.
    pub fn parse(w: &ClientWire) -> Result<Self, GnapError> {
        match w {
            ClientWire::Url(u) | ClientWire::WalletAddress { wallet_address: u } => {
                if is_http_url(u) {
                    Ok(Self::WalletAddress(u.clone()))
                } else {
                    Err(GnapError::invalid_client(format!(
                        "client wallet address must be an http(s) URL, got {u:?}"
                    ))
                    .with_status(400))
                }
            }
            ClientWire::Jwk { jwk } => match jwk.validate() {
                Ok(()) => Ok(Self::Jwk(jwk.clone())),
                Err(e) => {
                    Err(GnapError::invalid_client(format!("client jwk: {e}")).with_status(400))
                }
            },
        }
    }

    /// The object form used in introspection responses and storage:
    /// `{"walletAddress":…}` or `{"jwk":…}` (never the bare string).
    pub fn to_wire(&self) -> ClientWire {
        match self {
            Self::WalletAddress(u) => ClientWire::WalletAddress {
                wallet_address: u.clone(),
            },
            Self::Jwk(jwk) => ClientWire::Jwk { jwk: jwk.clone() },
        }
    }

    /// The wallet address, when the client has one.
    pub fn wallet_address(&self) -> Option<&str> {
        match self {
            Self::WalletAddress(u) => Some(u),
            Self::Jwk(_) => None,
        }
    }
}

/// Validated `interact`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Interact {
    /// `start` contains `redirect` (the only start mode).
    pub redirect: bool,
    /// Where and how to tell the client that the interaction finished.
    pub finish: Option<FinishRedirect>,
}

/// A validated `interact.finish` with method `redirect` and hash method
/// `sha-256`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FinishRedirect {
    /// The client's callback URI (any absolute URI: apps use custom schemes).
    pub uri: String,
    /// The client's nonce, an input of [`interaction_hash`](crate::interaction_hash).
    pub nonce: String,
}

impl Interact {
    /// Validates `interact`: start modes must be `redirect`; `finish` needs
    /// method `redirect`, an absolute URI, a non-empty nonce and, when
    /// given, `hash_method` `sha-256`. Errors are `invalid_request`.
    pub fn parse(w: &InteractRequest) -> Result<Self, GnapError> {
        let mut redirect = false;
        for mode in &w.start {
            if mode == "redirect" {
                redirect = true;
            } else {
                return Err(GnapError::invalid_request(format!(
                    "unsupported interaction start mode {mode:?}; only \"redirect\" is supported"
                )));
            }
        }
        let finish = match &w.finish {
            None => None,
            Some(f) => {
                if f.method != "redirect" {
                    return Err(GnapError::invalid_request(format!(
                        "unsupported interaction finish method {:?}; only \"redirect\" is supported",
                        f.method
                    )));
                }
                if !is_absolute_uri(&f.uri) {
                    return Err(GnapError::invalid_request(format!(
                        "interact.finish.uri must be an absolute URI, got {:?}",
                        f.uri
                    )));
                }
                if !is_safe_redirect(&f.uri) {
                    return Err(GnapError::invalid_request(
                        "interact.finish.uri must be an https URI (http only on a loopback host), without user-info",
                    ));
                }
                if f.nonce.is_empty() {
                    return Err(GnapError::invalid_request(
                        "interact.finish.nonce must not be empty",
                    ));
                }
                if let Some(m) = &f.hash_method {
                    if m != "sha-256" {
                        return Err(GnapError::invalid_request(format!(
                            "unsupported hash_method {m:?}; only \"sha-256\" is supported"
                        )));
                    }
                }
                Some(FinishRedirect {
                    uri: f.uri.clone(),
                    nonce: f.nonce.clone(),
                })
            }
        };
        Ok(Self { redirect, finish })
    }
}

/// RFC 3986 `scheme ":" rest` with a non-empty rest and no whitespace or
/// control characters.
fn is_absolute_uri(s: &str) -> bool {
    let Some((scheme, rest)) = s.split_once(':') else {
        return false;
    };
    let mut chars = scheme.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
        && !rest.is_empty()
        && !s.chars().any(|c| c.is_whitespace() || c.is_control())
}

/// Whether the browser may be sent to `uri` when the grant finishes: an
/// `https` URI, or `http` to a loopback host (a client on the user's own
/// machine), never with user-info. Other schemes (`javascript:`, `data:`,
/// custom app schemes) would let a client run code in, or leave from, the
/// consent page's origin.
fn is_safe_redirect(uri: &str) -> bool {
    let Some((scheme, rest)) = uri.split_once(':') else {
        return false;
    };
    let Some(after) = rest.strip_prefix("//") else {
        return false;
    };
    let authority = after.split(['/', '?', '#']).next().unwrap_or_default();
    if authority.is_empty() || authority.contains('@') {
        return false;
    }
    match scheme.to_ascii_lowercase().as_str() {
        "https" => true,
        "http" => {
            let host = match authority.strip_prefix('[') {
                Some(v6) => v6.split(']').next().unwrap_or_default(),
                None => authority.rsplit_once(':').map_or(authority, |(h, _)| h),
            };
            host.eq_ignore_ascii_case("localhost")
                || host == "::1"
                || host
                    .parse::<std::net::Ipv4Addr>()
                    .is_ok_and(|a| a.is_loopback())
        }
        _ => false,
    }
}

fn validate_subject(s: &Subject) -> Result<(), GnapError> {
    let [id] = s.sub_ids.as_slice() else {
        return Err(GnapError::invalid_request(
            "subject.sub_ids must have exactly one item",
        ));
    };
    if id.format != "uri" {
        return Err(GnapError::invalid_request(format!(
            "unsupported subject format {:?}; only \"uri\" is supported",
            id.format
        )));
    }
    if id.id.is_empty() {
        return Err(GnapError::invalid_request("subject id must not be empty"));
    }
    Ok(())
}

/// A grant request that passed every check, with the interaction decision
/// made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValidatedGrantRequest {
    /// The requested access; empty only for a subject-only request.
    pub access: Vec<AccessItem>,
    /// Who asks.
    pub client: ClientIdent,
    /// Interaction parameters, when given (for an interactive grant they
    /// are present with `redirect` true).
    pub interact: Option<Interact>,
    /// The subject request, when given (exactly one `uri` sub id).
    pub subject: Option<Subject>,
    interactive: bool,
}

impl ValidatedGrantRequest {
    /// [`parse_with_policy`](Self::parse_with_policy) with the default
    /// [`InteractionPolicy`].
    pub fn parse(req: &GrantRequest) -> Result<Self, GnapError> {
        Self::parse_with_policy(req, &InteractionPolicy::default())
    }

    /// Validates a grant request:
    ///
    /// 1. `access_token` or `subject` must be present; without `subject`,
    ///    `access_token.access` must not be empty;
    /// 2. the access list ([`AccessItem::parse_list`]), `client`
    ///    ([`ClientIdent::parse`]), `interact` ([`Interact::parse`]) and
    ///    `subject` (one `uri` id) must each be valid;
    /// 3. a `subject` request needs `interact`;
    /// 4. if the grant needs interaction (a subject, or any item that
    ///    [requires it](AccessItem::requires_interaction)): `interact.start`
    ///    must contain `redirect` (`invalid_request`), the client must be a
    ///    wallet address (`invalid_client`, 400), and every item that
    ///    requires interaction must have an `identifier`
    ///    (`invalid_request`).
    pub fn parse_with_policy(
        req: &GrantRequest,
        policy: &InteractionPolicy,
    ) -> Result<Self, GnapError> {
        if req.access_token.is_none() && req.subject.is_none() {
            return Err(GnapError::invalid_request(
                "a grant request needs access_token or subject",
            ));
        }
        let access = match &req.access_token {
            Some(t) => AccessItem::parse_list(&t.access)?,
            None => Vec::new(),
        };
        if access.is_empty() && req.subject.is_none() {
            return Err(GnapError::invalid_request(
                "access_token.access must not be empty",
            ));
        }
        let client = ClientIdent::parse(&req.client)?;
        let interact = req.interact.as_ref().map(Interact::parse).transpose()?;
        if let Some(s) = &req.subject {
            validate_subject(s)?;
            if interact.is_none() {
                return Err(GnapError::invalid_request(
                    "a subject request needs interact",
                ));
            }
        }
        let interactive =
            req.subject.is_some() || access.iter().any(|a| a.requires_interaction(policy));
        if interactive {
            if !interact.as_ref().is_some_and(|i| i.redirect) {
                return Err(GnapError::invalid_request(
                    "this grant needs interaction: interact.start must contain \"redirect\"",
                ));
            }
            if matches!(client, ClientIdent::Jwk(_)) {
                return Err(GnapError::invalid_client(
                    "a client identified by a jwk may only request non-interactive grants",
                )
                .with_status(400));
            }
            if let Some(item) = access
                .iter()
                .find(|a| a.requires_interaction(policy) && a.identifier.is_none())
            {
                return Err(GnapError::invalid_request(format!(
                    "{} access that needs interaction requires an identifier",
                    item.kind
                )));
            }
        }
        Ok(Self {
            access,
            client,
            interact,
            subject: req.subject.clone(),
            interactive,
        })
    }

    /// Whether the grant needs user interaction before a token is issued:
    /// any outgoing-payment access, any `list-all`, a subject request, or
    /// incoming-payment/quote access when the policy says so.
    pub fn requires_interaction(&self) -> bool {
        self.interactive
    }

    /// The finish redirect, if the client gave one.
    pub fn finish(&self) -> Option<&FinishRedirect> {
        self.interact.as_ref().and_then(|i| i.finish.as_ref())
    }
}

impl TryFrom<&GrantRequest> for ValidatedGrantRequest {
    type Error = GnapError;
    fn try_from(req: &GrantRequest) -> Result<Self, GnapError> {
        Self::parse(req)
    }
}

#[cfg(test)]
mod tests {
    use super::is_safe_redirect;

    #[test]
    fn finish_uris_are_https_or_loopback_http() {
        for ok in [
            "https://shop.example/done",
            "HTTPS://shop.example:8443/done?x=1",
            "http://127.0.0.1:9/finish",
            "http://localhost/finish",
            "http://[::1]:8080/finish",
        ] {
            assert!(is_safe_redirect(ok), "{ok}");
        }
        for bad in [
            "javascript:alert(1)",
            "data:text/html,<script>alert(1)</script>",
            "http://shop.example/done",
            "https://user@shop.example/done",
            "http://127.0.0.1@attacker.example/",
            "ftp://shop.example/",
            "com.example.app:/callback",
            "https:///nohost",
        ] {
            assert!(!is_safe_redirect(bad), "{bad}");
        }
    }
}
