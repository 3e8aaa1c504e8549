//! Access items: the typed, validated form of `access-incoming`,
//! `access-outgoing` and `access-quote`, and the matching rules the
//! introspection endpoint and the resource server use.

use std::collections::BTreeSet;
use std::fmt;

use opd_core::Amount;

use crate::error::GnapError;
use crate::interval::RepeatingInterval;
use crate::wire::{AccessItemWire, LimitsWire};

/// The maximum number of access items in a request (spec `maxItems`).
pub const MAX_ACCESS_ITEMS: usize = 3;

/// The kind of resource an access item is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum AccessType {
    /// `incoming-payment`.
    IncomingPayment,
    /// `outgoing-payment`.
    OutgoingPayment,
    /// `quote`.
    Quote,
}

impl AccessType {
    /// The wire form.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::IncomingPayment => "incoming-payment",
            Self::OutgoingPayment => "outgoing-payment",
            Self::Quote => "quote",
        }
    }

    /// Parses the wire form.
    pub fn parse(s: &str) -> Option<Self> {
        [Self::IncomingPayment, Self::OutgoingPayment, Self::Quote]
            .into_iter()
            .find(|t| t.as_str() == s)
    }

    /// The actions the spec allows for this type.
    pub const fn allowed_actions(self) -> &'static [Action] {
        match self {
            Self::IncomingPayment => &[
                Action::Create,
                Action::Complete,
                Action::Read,
                Action::ReadAll,
                Action::List,
                Action::ListAll,
            ],
            Self::OutgoingPayment => &[
                Action::Create,
                Action::Read,
                Action::ReadAll,
                Action::List,
                Action::ListAll,
            ],
            Self::Quote => &[Action::Create, Action::Read, Action::ReadAll],
        }
    }
}

impl fmt::Display for AccessType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An action on a resource. `read`/`list` cover only the resources the
/// client created; `read-all`/`list-all` cover every resource of the
/// wallet address.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Action {
    /// `create`.
    Create,
    /// `complete` (incoming payments only).
    Complete,
    /// `read`.
    Read,
    /// `read-all`.
    ReadAll,
    /// `list`.
    List,
    /// `list-all`.
    ListAll,
}

impl Action {
    /// Every action.
    pub const ALL: [Action; 6] = [
        Self::Create,
        Self::Complete,
        Self::Read,
        Self::ReadAll,
        Self::List,
        Self::ListAll,
    ];

    /// The wire form.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Create => "create",
            Self::Complete => "complete",
            Self::Read => "read",
            Self::ReadAll => "read-all",
            Self::List => "list",
            Self::ListAll => "list-all",
        }
    }

    /// Parses the wire form.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|a| a.as_str() == s)
    }

    /// The broader action that also satisfies this one (`read` → `read-all`,
    /// `list` → `list-all`).
    pub const fn broader(self) -> Option<Action> {
        match self {
            Self::Read => Some(Self::ReadAll),
            Self::List => Some(Self::ListAll),
            _ => None,
        }
    }
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Limits of an outgoing-payment grant. At most one of `debit_amount` and
/// `receive_amount` is set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutgoingLimits {
    /// The only incoming payment URL payments may go to.
    pub receiver: Option<String>,
    /// Maximum total debit, per interval when `interval` is set.
    pub debit_amount: Option<Amount>,
    /// Maximum total delivered amount, per interval when `interval` is set.
    pub receive_amount: Option<Amount>,
    /// The repeating interval the amounts apply to.
    pub interval: Option<RepeatingInterval>,
}

impl OutgoingLimits {
    /// Validates `limits-outgoing`.
    pub fn parse(w: &LimitsWire) -> Result<Self, GnapError> {
        if w.debit_amount.is_some() && w.receive_amount.is_some() {
            return Err(GnapError::invalid_request(
                "only one of debitAmount and receiveAmount may be given",
            ));
        }
        let receiver = match &w.receiver {
            Some(r) if is_incoming_payment_url(r) => Some(r.clone()),
            Some(r) => {
                return Err(GnapError::invalid_request(format!(
                    "limits.receiver must be an incoming payment URL, got {r:?}"
                )))
            }
            None => None,
        };
        let amount = |name: &str, a: &Option<opd_core::AmountWire>| {
            a.as_ref()
                .map(|a| {
                    Amount::try_from(a)
                        .map_err(|e| GnapError::invalid_request(format!("limits.{name}: {e}")))
                })
                .transpose()
        };
        let interval = w
            .interval
            .as_deref()
            .map(|i| {
                RepeatingInterval::parse(i)
                    .map_err(|e| GnapError::invalid_request(format!("limits.interval: {e}")))
            })
            .transpose()?;
        Ok(Self {
            receiver,
            debit_amount: amount("debitAmount", &w.debit_amount)?,
            receive_amount: amount("receiveAmount", &w.receive_amount)?,
            interval,
        })
    }

    /// The wire form (the interval exactly as it was given).
    pub fn to_wire(&self) -> LimitsWire {
        LimitsWire {
            receiver: self.receiver.clone(),
            debit_amount: self.debit_amount.as_ref().map(Into::into),
            receive_amount: self.receive_amount.as_ref().map(Into::into),
            interval: self.interval.as_ref().map(|i| i.as_str().to_owned()),
        }
    }
}

/// The spec's receiver pattern `^(https|http)://(.+)/incoming-payments/(.+)$`
/// (where `.` excludes line terminators).
pub fn is_incoming_payment_url(s: &str) -> bool {
    if s.contains(['\n', '\r', '\u{2028}', '\u{2029}']) {
        return false;
    }
    let Some(rest) = s
        .strip_prefix("https://")
        .or_else(|| s.strip_prefix("http://"))
    else {
        return false;
    };
    const SEG: &str = "/incoming-payments/";
    rest.match_indices(SEG)
        .any(|(i, _)| i > 0 && rest.len() > i + SEG.len())
}

/// An absolute `http`/`https` URL with a host and no whitespace or control
/// characters: what a wallet address URL must look like.
pub fn is_http_url(s: &str) -> bool {
    let Some(rest) = s
        .strip_prefix("https://")
        .or_else(|| s.strip_prefix("http://"))
    else {
        return false;
    };
    let host = rest.split(['/', '?', '#']).next().unwrap_or_default();
    !host.is_empty() && !s.chars().any(|c| c.is_whitespace() || c.is_control())
}

/// A validated access item.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccessItem {
    /// The resource type.
    pub kind: AccessType,
    /// The actions; never empty, all allowed for `kind`.
    pub actions: BTreeSet<Action>,
    /// The wallet address URL the access is limited to; required for
    /// outgoing payments. `None` means any wallet address of this server.
    pub identifier: Option<String>,
    /// Only for outgoing payments.
    pub limits: Option<OutgoingLimits>,
}

impl AccessItem {
    /// Validates one access item:
    ///
    /// - `type` is known, `actions` is non-empty, without duplicates, and
    ///   each action is allowed for the type;
    /// - `identifier`, when present, is an `http(s)` URL; it is required for
    ///   `outgoing-payment`;
    /// - `limits` appear only on `outgoing-payment` and are valid
    ///   ([`OutgoingLimits::parse`]).
    ///
    /// Errors are `invalid_request`.
    pub fn parse(w: &AccessItemWire) -> Result<Self, GnapError> {
        let kind = AccessType::parse(&w.kind).ok_or_else(|| {
            GnapError::invalid_request(format!(
                "unknown access type {:?}; expected incoming-payment, outgoing-payment or quote",
                w.kind
            ))
        })?;
        let actions = parse_actions(kind, &w.actions)?;
        if actions.is_empty() {
            return Err(GnapError::invalid_request(format!(
                "{kind} access needs at least one action"
            )));
        }
        if let Some(id) = &w.identifier {
            if !is_http_url(id) {
                return Err(GnapError::invalid_request(format!(
                    "{kind} access identifier must be a wallet address URL, got {id:?}"
                )));
            }
        } else if kind == AccessType::OutgoingPayment {
            return Err(GnapError::invalid_request(
                "outgoing-payment access requires an identifier",
            ));
        }
        let limits = match (&w.limits, kind) {
            (None, _) => None,
            (Some(l), AccessType::OutgoingPayment) => Some(OutgoingLimits::parse(l)?),
            (Some(_), _) => {
                return Err(GnapError::invalid_request(format!(
                    "limits are only allowed on outgoing-payment access, not {kind}"
                )))
            }
        };
        Ok(Self {
            kind,
            actions,
            identifier: w.identifier.clone(),
            limits,
        })
    }

    /// Validates a request's access list: each item, at most
    /// [`MAX_ACCESS_ITEMS`], and no two equal (actions compared as sets).
    pub fn parse_list(items: &[AccessItemWire]) -> Result<Vec<Self>, GnapError> {
        if items.len() > MAX_ACCESS_ITEMS {
            return Err(GnapError::invalid_request(format!(
                "at most {MAX_ACCESS_ITEMS} access items may be requested"
            )));
        }
        let mut out: Vec<Self> = Vec::with_capacity(items.len());
        for w in items {
            let item = Self::parse(w)?;
            if out.contains(&item) {
                return Err(GnapError::invalid_request("access items must be unique"));
            }
            out.push(item);
        }
        Ok(out)
    }

    /// The wire form, actions in the order create, complete, read,
    /// read-all, list, list-all.
    pub fn to_wire(&self) -> AccessItemWire {
        AccessItemWire {
            kind: self.kind.as_str().to_owned(),
            actions: self.actions.iter().map(|a| a.as_str().to_owned()).collect(),
            identifier: self.identifier.clone(),
            limits: self.limits.as_ref().map(OutgoingLimits::to_wire),
        }
    }

    /// The wire form in a grant response (`access_token.access`): as
    /// [`AccessItem::to_wire`], except that a quote item leaves out its
    /// identifier, which the spec's `access-quote` does not have (and its
    /// `access-item` refuses unknown members). opd accepts one in requests
    /// and keeps limiting the grant's quotes to that wallet address.
    pub fn to_response_wire(&self) -> AccessItemWire {
        let mut wire = self.to_wire();
        if self.kind == AccessType::Quote {
            wire.identifier = None;
        }
        wire
    }

    /// Whether this item by itself makes a grant interactive under `policy`.
    pub fn requires_interaction(&self, policy: &InteractionPolicy) -> bool {
        let by_type = match self.kind {
            AccessType::OutgoingPayment => true,
            AccessType::IncomingPayment => policy.incoming_payment,
            AccessType::Quote => policy.quote,
        };
        by_type || (policy.list_all && self.actions.contains(&Action::ListAll))
    }

    /// The action of this item that satisfies `action`, if any: `action`
    /// itself, or for `read`/`list` the broader `read-all`/`list-all`. The
    /// broader action wins when the item has both, since it is what the
    /// client may actually do.
    pub fn satisfying_action(&self, action: Action) -> Option<Action> {
        match action.broader() {
            Some(b) if self.actions.contains(&b) => Some(b),
            _ => self.actions.contains(&action).then_some(action),
        }
    }
}

fn parse_actions(kind: AccessType, names: &[String]) -> Result<BTreeSet<Action>, GnapError> {
    let mut set = BTreeSet::new();
    for name in names {
        let action = Action::parse(name)
            .filter(|a| kind.allowed_actions().contains(a))
            .ok_or_else(|| {
                GnapError::invalid_request(format!(
                    "action {name:?} is not allowed for {kind} access"
                ))
            })?;
        if !set.insert(action) {
            return Err(GnapError::invalid_request(format!(
                "action {name:?} is repeated in {kind} access"
            )));
        }
    }
    Ok(set)
}

/// Which access makes a grant interactive. A subject request and any
/// outgoing-payment access always do.
///
/// The default matches the reference server's defaults: incoming-payment
/// and quote access is granted without interaction unless `list-all` is
/// asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InteractionPolicy {
    /// Incoming-payment access needs interaction.
    pub incoming_payment: bool,
    /// Quote access needs interaction.
    pub quote: bool,
    /// Any `list-all` action needs interaction.
    pub list_all: bool,
}

impl Default for InteractionPolicy {
    fn default() -> Self {
        Self {
            incoming_payment: false,
            quote: false,
            list_all: true,
        }
    }
}

/// Finds the granted item that allows `action` on `kind` for the wallet
/// address `identifier`, and the action the caller should act as.
///
/// An item matches when:
/// - its type is `kind`;
/// - it has `action`, or `read-all` for `read`, or `list-all` for `list`
///   (never the reverse: `read` does not satisfy `read-all`);
/// - its identifier equals `identifier` when both are present. A grant item
///   without an identifier matches every wallet address, and a request
///   without an identifier matches any item: the resource server must pass
///   the wallet address whenever the resource has one (it passes none only
///   for grant-wide routes such as `GET /outgoing-payment-grant`).
///
/// Identifiers are compared exactly; pass canonical URLs.
///
/// The first matching item wins. The effective action is `read-all` /
/// `list-all` when the item has it and `read` / `list` was asked for (even
/// if it also has the narrower action), otherwise `action`.
pub fn find_access<'a>(
    granted: &'a [AccessItem],
    kind: AccessType,
    action: Action,
    identifier: Option<&str>,
) -> Option<(&'a AccessItem, Action)> {
    granted.iter().find_map(|item| {
        if item.kind != kind || !identifier_matches(item, identifier) {
            return None;
        }
        item.satisfying_action(action).map(|a| (item, a))
    })
}

fn identifier_matches(item: &AccessItem, identifier: Option<&str>) -> bool {
    match (item.identifier.as_deref(), identifier) {
        (Some(granted), Some(asked)) => granted == asked,
        _ => true,
    }
}

/// The introspection matching: for each requested item (type, actions,
/// optional identifier; limits are ignored), the first granted item of that
/// type that satisfies **every** requested action and whose identifier
/// matches as in [`find_access`]. Returns the matched granted items in
/// request order, each at most once.
///
/// A requested item with an unknown type or action is `invalid_request`;
/// it is not validated further (an RS may send `outgoing-payment` without
/// an identifier).
pub fn introspection_matches<'a>(
    granted: &'a [AccessItem],
    requested: &[AccessItemWire],
) -> Result<Vec<&'a AccessItem>, GnapError> {
    let mut out: Vec<&'a AccessItem> = Vec::new();
    for r in requested {
        let kind = AccessType::parse(&r.kind).ok_or_else(|| {
            GnapError::invalid_request(format!("unknown access type {:?}", r.kind))
        })?;
        let actions = r
            .actions
            .iter()
            .map(|a| {
                Action::parse(a)
                    .ok_or_else(|| GnapError::invalid_request(format!("unknown action {a:?}")))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let found = granted.iter().find(|g| {
            g.kind == kind
                && identifier_matches(g, r.identifier.as_deref())
                && actions.iter().all(|a| g.satisfying_action(*a).is_some())
        });
        if let Some(g) = found {
            if !out.iter().any(|o| std::ptr::eq(*o, g)) {
                out.push(g);
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wire(json: serde_json::Value) -> AccessItemWire {
        serde_json::from_value(json).unwrap()
    }

    fn item(json: serde_json::Value) -> AccessItem {
        AccessItem::parse(&wire(json)).unwrap()
    }

    fn err(json: serde_json::Value) -> String {
        let e = AccessItem::parse(&wire(json)).unwrap_err();
        assert_eq!(e.code, crate::GnapErrorCode::InvalidRequest);
        assert_eq!(e.status, 400);
        e.description
    }

    #[test]
    fn receiver_pattern() {
        for ok in [
            "https://ilp.interledger-test.dev/incoming-payments/08394f02-7b7b-45e2-b645-51d04e7c330c",
            "http://ilp.interledger-test.dev/incoming-payments/1",
            "https://x/bob/incoming-payments/1",
            "https://x/incoming-payments/incoming-payments/",
        ] {
            assert!(is_incoming_payment_url(ok), "{ok}");
        }
        for bad in [
            "ftp://x/incoming-payments/1",
            "https:///incoming-payments/1",
            "https://x/incoming-payments/",
            "https://x/outgoing-payments/1",
            "https://x/incoming-payments/1\n",
            "x https://x/incoming-payments/1",
        ] {
            assert!(!is_incoming_payment_url(bad), "{bad}");
        }
    }

    #[test]
    fn http_url() {
        assert!(is_http_url("https://wallet.example/alice"));
        assert!(is_http_url("http://localhost:3000"));
        assert!(!is_http_url("https://"));
        assert!(!is_http_url("https:///alice"));
        assert!(!is_http_url("wallet.example/alice"));
        assert!(!is_http_url("https://wallet.example/al ice"));
        assert!(!is_http_url("urn:x"));
    }

    #[test]
    fn a_quote_item_in_a_response_has_no_identifier() {
        // The spec's access-quote has no identifier; the other types keep
        // theirs.
        let quote = item(
            serde_json::json!({"type": "quote", "actions": ["create"], "identifier": "https://w/a"}),
        );
        assert_eq!(quote.identifier.as_deref(), Some("https://w/a"));
        assert_eq!(quote.to_response_wire().identifier, None);
        let incoming = item(
            serde_json::json!({"type": "incoming-payment", "actions": ["read"], "identifier": "https://w/a"}),
        );
        assert_eq!(incoming.to_response_wire(), incoming.to_wire());
    }

    #[test]
    fn parses_and_round_trips() {
        let json = serde_json::json!({
            "type": "outgoing-payment",
            "actions": ["read", "create"],
            "identifier": "https://ilp.interledger-test.dev/alice",
            "limits": {
                "receiver": "https://ilp.interledger-test.dev/incoming-payments/45a0d0ee",
                "interval": "R12/2019-08-24T14:15:22Z/P1M",
                "debitAmount": {"value": "500", "assetCode": "USD", "assetScale": 2}
            }
        });
        let i = item(json.clone());
        assert_eq!(i.kind, AccessType::OutgoingPayment);
        assert_eq!(
            i.actions.iter().copied().collect::<Vec<_>>(),
            [Action::Create, Action::Read]
        );
        let limits = i.limits.as_ref().unwrap();
        assert_eq!(limits.debit_amount.as_ref().unwrap().value, 500);
        assert_eq!(limits.receive_amount, None);
        let back = serde_json::to_value(i.to_wire()).unwrap();
        let mut expected = json;
        expected["actions"] = serde_json::json!(["create", "read"]);
        assert_eq!(back, expected);
        assert_eq!(AccessItem::parse(&i.to_wire()).unwrap(), i);
    }

    #[test]
    fn validation_errors() {
        let d = err(serde_json::json!({"type": "payments", "actions": ["read"]}));
        assert!(d.contains("unknown access type"), "{d}");
        let d = err(serde_json::json!({"type": "quote", "actions": []}));
        assert!(d.contains("at least one action"), "{d}");
        let d = err(serde_json::json!({"type": "quote", "actions": ["complete"]}));
        assert!(d.contains("not allowed for quote"), "{d}");
        let d = err(serde_json::json!({"type": "quote", "actions": ["list"]}));
        assert!(d.contains("not allowed"), "{d}");
        let d = err(
            serde_json::json!({"type": "outgoing-payment", "actions": ["complete"], "identifier": "https://w/a"}),
        );
        assert!(d.contains("not allowed for outgoing-payment"), "{d}");
        let d = err(serde_json::json!({"type": "incoming-payment", "actions": ["fly"]}));
        assert!(d.contains("\"fly\""), "{d}");
        let d = err(serde_json::json!({"type": "incoming-payment", "actions": ["read", "read"]}));
        assert!(d.contains("repeated"), "{d}");
        let d = err(serde_json::json!({"type": "outgoing-payment", "actions": ["create"]}));
        assert!(d.contains("requires an identifier"), "{d}");
        let d = err(
            serde_json::json!({"type": "incoming-payment", "actions": ["read"], "identifier": "alice"}),
        );
        assert!(d.contains("wallet address URL"), "{d}");
        let d =
            err(serde_json::json!({"type": "incoming-payment", "actions": ["read"], "limits": {}}));
        assert!(d.contains("only allowed on outgoing-payment"), "{d}");
        let op = |limits: serde_json::Value| serde_json::json!({"type": "outgoing-payment", "actions": ["create"], "identifier": "https://w/a", "limits": limits});
        let amt = serde_json::json!({"value": "1", "assetCode": "USD", "assetScale": 2});
        let d = err(op(
            serde_json::json!({"debitAmount": amt, "receiveAmount": amt}),
        ));
        assert_eq!(d, "only one of debitAmount and receiveAmount may be given");
        let d = err(op(serde_json::json!({"receiver": "https://w/a"})));
        assert!(d.contains("limits.receiver"), "{d}");
        let d = err(op(
            serde_json::json!({"debitAmount": {"value": "-1", "assetCode": "USD", "assetScale": 2}}),
        ));
        assert!(d.starts_with("limits.debitAmount"), "{d}");
        let d = err(op(
            serde_json::json!({"receiveAmount": {"value": "1", "assetCode": "USD", "assetScale": 256}}),
        ));
        assert!(d.starts_with("limits.receiveAmount"), "{d}");
        let d = err(op(
            serde_json::json!({"debitAmount": {"value": "18446744073709551616", "assetCode": "USD", "assetScale": 2}}),
        ));
        assert!(d.starts_with("limits.debitAmount"), "{d}");
        let d = err(op(
            serde_json::json!({"interval": "R-5/2019-08-24T14:15:22Z/P1M"}),
        ));
        assert!(d.starts_with("limits.interval"), "{d}");
        // Empty limits and receiveAmount alone are fine; exact u64::MAX too.
        assert!(AccessItem::parse(&wire(op(serde_json::json!({})))).is_ok());
        let i = item(op(
            serde_json::json!({"receiveAmount": {"value": "18446744073709551615", "assetCode": "EUR", "assetScale": 2}}),
        ));
        assert_eq!(i.limits.unwrap().receive_amount.unwrap().value, u64::MAX);
    }

    #[test]
    fn wire_rejects_unknown_members() {
        for bad in [
            serde_json::json!({"type": "quote", "actions": ["read"], "extra": 1}),
            serde_json::json!({"type": "outgoing-payment", "actions": ["read"], "identifier": "https://w/a", "limits": {"debitAmmount": {}}}),
            serde_json::json!({"type": "outgoing-payment", "actions": ["read"], "identifier": "https://w/a", "limits": {"debitAmount": {"value": "1", "assetCode": "USD", "assetScale": 2, "x": 1}}}),
            serde_json::json!({"actions": ["read"]}),
        ] {
            assert!(
                serde_json::from_value::<AccessItemWire>(bad.clone()).is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn list_rules() {
        let a =
            wire(serde_json::json!({"type": "incoming-payment", "actions": ["create", "read"]}));
        let b =
            wire(serde_json::json!({"type": "incoming-payment", "actions": ["read", "create"]}));
        let q = wire(serde_json::json!({"type": "quote", "actions": ["create"]}));
        let q2 = wire(serde_json::json!({"type": "quote", "actions": ["read"]}));
        assert_eq!(
            AccessItem::parse_list(&[a.clone(), q.clone(), q2.clone()])
                .unwrap()
                .len(),
            3
        );
        let e = AccessItem::parse_list(&[a.clone(), b]).unwrap_err();
        assert_eq!(e.description, "access items must be unique");
        let e = AccessItem::parse_list(&[a.clone(), q.clone(), q2.clone(), a.clone()]).unwrap_err();
        assert!(e.description.contains("at most 3"));
        assert!(AccessItem::parse_list(&[]).unwrap().is_empty());
    }

    fn granted() -> Vec<AccessItem> {
        vec![
            item(
                serde_json::json!({"type": "incoming-payment", "actions": ["create", "read-all"], "identifier": "https://w/bob"}),
            ),
            item(serde_json::json!({"type": "quote", "actions": ["create", "read"]})),
            item(
                serde_json::json!({"type": "outgoing-payment", "actions": ["create", "list-all", "list"], "identifier": "https://w/alice"}),
            ),
        ]
    }

    #[test]
    fn find_access_rules() {
        let g = granted();
        // read satisfied by read-all, effective read-all.
        let (i, a) = find_access(
            &g,
            AccessType::IncomingPayment,
            Action::Read,
            Some("https://w/bob"),
        )
        .unwrap();
        assert_eq!((i.kind, a), (AccessType::IncomingPayment, Action::ReadAll));
        // read-all not satisfied by read.
        assert!(find_access(&g, AccessType::Quote, Action::ReadAll, Some("https://w/x")).is_none());
        // Quote item has no identifier: matches any wallet address.
        assert_eq!(
            find_access(&g, AccessType::Quote, Action::Read, Some("https://w/x")).map(|x| x.1),
            Some(Action::Read)
        );
        // Identifier mismatch.
        assert!(find_access(
            &g,
            AccessType::IncomingPayment,
            Action::Create,
            Some("https://w/alice")
        )
        .is_none());
        // Identifier comparison is exact.
        assert!(find_access(
            &g,
            AccessType::IncomingPayment,
            Action::Create,
            Some("https://w/bob/")
        )
        .is_none());
        // No identifier asked: grant-wide routes.
        assert!(find_access(&g, AccessType::OutgoingPayment, Action::Create, None).is_some());
        // list with both list and list-all: the broader wins.
        assert_eq!(
            find_access(
                &g,
                AccessType::OutgoingPayment,
                Action::List,
                Some("https://w/alice")
            )
            .map(|x| x.1),
            Some(Action::ListAll)
        );
        // Type mismatch / action absent.
        assert!(find_access(
            &g,
            AccessType::OutgoingPayment,
            Action::Read,
            Some("https://w/alice")
        )
        .is_none());
        assert!(find_access(
            &g,
            AccessType::IncomingPayment,
            Action::Complete,
            Some("https://w/bob")
        )
        .is_none());
        assert!(find_access(&[], AccessType::Quote, Action::Create, None).is_none());
        // First match wins.
        let two = vec![
            item(serde_json::json!({"type": "quote", "actions": ["read"]})),
            item(serde_json::json!({"type": "quote", "actions": ["read-all"]})),
        ];
        assert_eq!(
            find_access(&two, AccessType::Quote, Action::Read, None).map(|x| x.1),
            Some(Action::Read)
        );
    }

    #[test]
    fn introspection_matching() {
        let g = granted();
        let req =
            |v: serde_json::Value| -> Vec<AccessItemWire> { serde_json::from_value(v).unwrap() };
        let m = introspection_matches(
            &g,
            &req(serde_json::json!([
                {"type": "incoming-payment", "actions": ["read"], "identifier": "https://w/bob"}
            ])),
        )
        .unwrap();
        assert_eq!(m, vec![&g[0]]);
        // All requested actions must be satisfied.
        let m = introspection_matches(&g, &req(serde_json::json!([
            {"type": "incoming-payment", "actions": ["read", "complete"], "identifier": "https://w/bob"}
        ]))).unwrap();
        assert!(m.is_empty());
        // Two requests matching the same item give it once; order kept.
        let m = introspection_matches(
            &g,
            &req(serde_json::json!([
                {"type": "quote", "actions": ["create"]},
                {"type": "incoming-payment", "actions": ["create"], "identifier": "https://w/bob"},
                {"type": "quote", "actions": ["read"]}
            ])),
        )
        .unwrap();
        assert_eq!(m, vec![&g[1], &g[0]]);
        assert!(introspection_matches(&g, &[]).unwrap().is_empty());
        assert!(
            introspection_matches(&g, &req(serde_json::json!([{"type": "x", "actions": []}])))
                .is_err()
        );
        assert!(introspection_matches(
            &g,
            &req(serde_json::json!([{"type": "quote", "actions": ["x"]}]))
        )
        .is_err());
    }

    #[test]
    fn interaction_policy() {
        let p = InteractionPolicy::default();
        let g = granted();
        assert!(!g[0].requires_interaction(&p));
        assert!(!g[1].requires_interaction(&p));
        assert!(g[2].requires_interaction(&p));
        let ip_list_all =
            item(serde_json::json!({"type": "incoming-payment", "actions": ["list-all"]}));
        assert!(ip_list_all.requires_interaction(&p));
        let relaxed = InteractionPolicy {
            list_all: false,
            ..p
        };
        assert!(!ip_list_all.requires_interaction(&relaxed));
        let strict = InteractionPolicy {
            incoming_payment: true,
            quote: true,
            list_all: true,
        };
        assert!(g[0].requires_interaction(&strict) && g[1].requires_interaction(&strict));
    }
}
