//! A small, strict parser for RFC 8941 structured-field dictionaries.
//!
//! Only what HTTP Message Signatures and Content-Digest need is implemented:
//! dictionaries whose members are items or inner lists, with parameters, and
//! the bare item types of RFC 8941 (integer, decimal, string, token, byte
//! sequence, boolean). The parser works on bytes, never panics on any input,
//! and records the exact source text of every dictionary member value so
//! that `@signature-params` can be reproduced byte for byte.
//!
//! A `lenient` mode additionally accepts bare `@name` items inside inner
//! lists, which is what the open-payments Rust SDK 0.2.0 sends in its
//! `Signature-Input` (`sig1=(@method @target-uri ...)`).

use base64::alphabet;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use base64::Engine as _;

/// Standard base64 that accepts input with or without `=` padding
/// (RFC 8941 §4.2.7: parsers SHOULD NOT fail when padding is absent).
pub(crate) const BASE64_LENIENT: GeneralPurpose = GeneralPurpose::new(
    &alphabet::STANDARD,
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

/// A bare item (RFC 8941 §3.3).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum BareItem {
    Integer(i64),
    /// Decimals are kept as their source text; nothing here needs their value.
    Decimal(String),
    String(String),
    Token(String),
    ByteSeq(Vec<u8>),
    Boolean(bool),
}

/// Ordered parameters; a repeated key overwrites the earlier value in place.
pub(crate) type Params = Vec<(String, BareItem)>;

/// An item with its parameters.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Item {
    pub(crate) bare: BareItem,
    pub(crate) params: Params,
}

/// The value of a dictionary member.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum MemberValue {
    Item(Item),
    InnerList(Vec<Item>, Params),
}

/// One dictionary member.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct DictMember {
    pub(crate) key: String,
    pub(crate) value: MemberValue,
    /// The exact text after `key=` up to the end of the member's parameters
    /// (empty for a bare-key boolean member).
    pub(crate) raw: String,
}

/// Why a structured field failed to parse.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SfError(pub(crate) &'static str);

/// Parses `input` as an RFC 8941 dictionary.
pub(crate) fn parse_dictionary(input: &[u8], lenient: bool) -> Result<Vec<DictMember>, SfError> {
    let mut p = Parser {
        b: input,
        pos: 0,
        lenient,
    };
    p.skip_sp();
    let dict = p.dictionary()?;
    p.skip_sp();
    if p.pos != p.b.len() {
        return Err(SfError("unexpected trailing characters"));
    }
    Ok(dict)
}

/// Serializes `s` as an RFC 8941 string, or `None` if it contains characters
/// outside printable ASCII.
pub(crate) fn serialize_string(s: &str) -> Option<String> {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            ' '..='~' => out.push(c),
            _ => return None,
        }
    }
    out.push('"');
    Some(out)
}

struct Parser<'a> {
    b: &'a [u8],
    pos: usize,
    lenient: bool,
}

fn is_lcalpha(c: u8) -> bool {
    c.is_ascii_lowercase()
}

fn is_key_char(c: u8) -> bool {
    is_lcalpha(c) || c.is_ascii_digit() || matches!(c, b'_' | b'-' | b'.' | b'*')
}

fn is_tchar(c: u8) -> bool {
    c.is_ascii_alphanumeric()
        || matches!(
            c,
            b'!' | b'#'
                | b'$'
                | b'%'
                | b'&'
                | b'\''
                | b'*'
                | b'+'
                | b'-'
                | b'.'
                | b'^'
                | b'_'
                | b'`'
                | b'|'
                | b'~'
        )
}

fn is_base64_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'+' | b'/' | b'=')
}

fn set_param(params: &mut Params, key: String, value: BareItem) {
    if let Some(slot) = params.iter_mut().find(|(k, _)| *k == key) {
        slot.1 = value;
    } else {
        params.push((key, value));
    }
}

impl Parser<'_> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.pos).copied()
    }

    fn skip_sp(&mut self) {
        while self.peek() == Some(b' ') {
            self.pos += 1;
        }
    }

    fn skip_ows(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t')) {
            self.pos += 1;
        }
    }

    /// The source text between `start` and the current position. Every
    /// byte the parser accepts is ASCII, so this never fails in practice.
    fn text_from(&self, start: usize) -> Result<String, SfError> {
        let bytes = self
            .b
            .get(start..self.pos)
            .ok_or(SfError("internal span"))?;
        String::from_utf8(bytes.to_vec()).map_err(|_| SfError("non-ASCII text"))
    }

    fn dictionary(&mut self) -> Result<Vec<DictMember>, SfError> {
        let mut out: Vec<DictMember> = Vec::new();
        while self.pos < self.b.len() {
            let key = self.key()?;
            let (value, raw) = if self.peek() == Some(b'=') {
                self.pos += 1;
                let start = self.pos;
                let value = self.item_or_inner_list()?;
                (value, self.text_from(start)?)
            } else {
                let params = self.parameters()?;
                (
                    MemberValue::Item(Item {
                        bare: BareItem::Boolean(true),
                        params,
                    }),
                    String::new(),
                )
            };
            if let Some(existing) = out.iter_mut().find(|m| m.key == key) {
                existing.value = value;
                existing.raw = raw;
            } else {
                out.push(DictMember { key, value, raw });
            }
            self.skip_ows();
            if self.pos >= self.b.len() {
                return Ok(out);
            }
            if self.peek() != Some(b',') {
                return Err(SfError("expected ',' between dictionary members"));
            }
            self.pos += 1;
            self.skip_ows();
            if self.pos >= self.b.len() {
                return Err(SfError("trailing ',' in dictionary"));
            }
        }
        Ok(out)
    }

    fn item_or_inner_list(&mut self) -> Result<MemberValue, SfError> {
        if self.peek() == Some(b'(') {
            self.inner_list()
        } else {
            Ok(MemberValue::Item(self.item()?))
        }
    }

    fn inner_list(&mut self) -> Result<MemberValue, SfError> {
        // Caller checked the '('.
        self.pos += 1;
        let mut items = Vec::new();
        while self.pos < self.b.len() {
            self.skip_sp();
            if self.peek() == Some(b')') {
                self.pos += 1;
                let params = self.parameters()?;
                return Ok(MemberValue::InnerList(items, params));
            }
            items.push(self.item()?);
            match self.peek() {
                Some(b' ' | b')') => {}
                _ => return Err(SfError("expected ' ' or ')' in inner list")),
            }
        }
        Err(SfError("unterminated inner list"))
    }

    fn item(&mut self) -> Result<Item, SfError> {
        let bare = if self.lenient && self.peek() == Some(b'@') {
            self.bare_component_name()?
        } else {
            self.bare_item()?
        };
        let params = self.parameters()?;
        Ok(Item { bare, params })
    }

    /// Lenient only: `@name` without quotes, returned as a token.
    fn bare_component_name(&mut self) -> Result<BareItem, SfError> {
        let start = self.pos;
        self.pos += 1;
        while self.peek().is_some_and(is_key_char) {
            self.pos += 1;
        }
        if self.pos == start + 1 {
            return Err(SfError("empty component name"));
        }
        Ok(BareItem::Token(self.text_from(start)?))
    }

    fn parameters(&mut self) -> Result<Params, SfError> {
        let mut params = Params::new();
        while self.peek() == Some(b';') {
            self.pos += 1;
            self.skip_sp();
            let key = self.key()?;
            let value = if self.peek() == Some(b'=') {
                self.pos += 1;
                self.bare_item()?
            } else {
                BareItem::Boolean(true)
            };
            set_param(&mut params, key, value);
        }
        Ok(params)
    }

    fn key(&mut self) -> Result<String, SfError> {
        match self.peek() {
            Some(c) if is_lcalpha(c) || c == b'*' => {}
            _ => return Err(SfError("expected a key")),
        }
        let start = self.pos;
        while self.peek().is_some_and(is_key_char) {
            self.pos += 1;
        }
        self.text_from(start)
    }

    fn bare_item(&mut self) -> Result<BareItem, SfError> {
        match self.peek() {
            Some(b'-' | b'0'..=b'9') => self.number(),
            Some(b'"') => self.string(),
            Some(b':') => self.byte_seq(),
            Some(b'?') => self.boolean(),
            Some(c) if c.is_ascii_alphabetic() || c == b'*' => self.token(),
            _ => Err(SfError("expected an item")),
        }
    }

    fn number(&mut self) -> Result<BareItem, SfError> {
        let start = self.pos;
        let negative = self.peek() == Some(b'-');
        if negative {
            self.pos += 1;
        }
        if !self.peek().is_some_and(|c| c.is_ascii_digit()) {
            return Err(SfError("expected a digit"));
        }
        let digits_start = self.pos;
        let mut dot: Option<usize> = None;
        while let Some(c) = self.peek() {
            if c.is_ascii_digit() {
                self.pos += 1;
            } else if c == b'.' && dot.is_none() {
                if self.pos - digits_start > 12 {
                    return Err(SfError("decimal has too many integer digits"));
                }
                dot = Some(self.pos);
                self.pos += 1;
            } else {
                break;
            }
            let len = self.pos - digits_start;
            if dot.is_none() && len > 15 {
                return Err(SfError("integer has too many digits"));
            }
            if dot.is_some() && len > 16 {
                return Err(SfError("decimal has too many digits"));
            }
        }
        match dot {
            None => {
                let text = self.text_from(start)?;
                text.parse::<i64>()
                    .map(BareItem::Integer)
                    .map_err(|_| SfError("invalid integer"))
            }
            Some(d) => {
                let frac = self.pos - d - 1;
                if frac == 0 {
                    return Err(SfError("decimal ends with '.'"));
                }
                if frac > 3 {
                    return Err(SfError("decimal has too many fractional digits"));
                }
                Ok(BareItem::Decimal(self.text_from(start)?))
            }
        }
    }

    fn string(&mut self) -> Result<BareItem, SfError> {
        self.pos += 1;
        let mut out = String::new();
        while let Some(c) = self.peek() {
            self.pos += 1;
            match c {
                b'\\' => match self.peek() {
                    Some(e @ (b'"' | b'\\')) => {
                        self.pos += 1;
                        out.push(char::from(e));
                    }
                    _ => return Err(SfError("invalid escape in string")),
                },
                b'"' => return Ok(BareItem::String(out)),
                0x20..=0x7e => out.push(char::from(c)),
                _ => return Err(SfError("invalid character in string")),
            }
        }
        Err(SfError("unterminated string"))
    }

    fn token(&mut self) -> Result<BareItem, SfError> {
        let start = self.pos;
        self.pos += 1;
        while self
            .peek()
            .is_some_and(|c| is_tchar(c) || c == b':' || c == b'/')
        {
            self.pos += 1;
        }
        Ok(BareItem::Token(self.text_from(start)?))
    }

    fn byte_seq(&mut self) -> Result<BareItem, SfError> {
        self.pos += 1;
        let start = self.pos;
        while let Some(c) = self.peek() {
            if c == b':' {
                let encoded = self
                    .b
                    .get(start..self.pos)
                    .ok_or(SfError("internal span"))?;
                self.pos += 1;
                return BASE64_LENIENT
                    .decode(encoded)
                    .map(BareItem::ByteSeq)
                    .map_err(|_| SfError("invalid base64 in byte sequence"));
            }
            if !is_base64_char(c) {
                return Err(SfError("invalid character in byte sequence"));
            }
            self.pos += 1;
        }
        Err(SfError("unterminated byte sequence"))
    }

    fn boolean(&mut self) -> Result<BareItem, SfError> {
        self.pos += 1;
        let value = match self.peek() {
            Some(b'1') => true,
            Some(b'0') => false,
            _ => return Err(SfError("invalid boolean")),
        };
        self.pos += 1;
        Ok(BareItem::Boolean(value))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn dict(s: &str) -> Result<Vec<DictMember>, SfError> {
        parse_dictionary(s.as_bytes(), false)
    }

    #[test]
    fn parses_signature_input_and_keeps_raw_text() {
        let d =
            dict(r#"sig1=("@method" "@target-uri");keyid="k";created=1700000000, b=?0"#).unwrap();
        assert_eq!(d.len(), 2);
        assert_eq!(d[0].key, "sig1");
        assert_eq!(
            d[0].raw,
            r#"("@method" "@target-uri");keyid="k";created=1700000000"#
        );
        let MemberValue::InnerList(items, params) = &d[0].value else {
            panic!("not an inner list")
        };
        assert_eq!(items.len(), 2);
        assert_eq!(items[0].bare, BareItem::String("@method".into()));
        assert_eq!(params[0], ("keyid".into(), BareItem::String("k".into())));
        assert_eq!(
            params[1],
            ("created".into(), BareItem::Integer(1_700_000_000))
        );
        assert_eq!(
            d[1].value,
            MemberValue::Item(Item {
                bare: BareItem::Boolean(false),
                params: vec![]
            })
        );
    }

    #[test]
    fn parses_items() {
        let d = dict("a=-12, b=1.5, c=tok/en:x, d=:aGVsbG8=:, e, f=\"q\\\"\\\\\"").unwrap();
        let bares: Vec<_> = d
            .iter()
            .map(|m| match &m.value {
                MemberValue::Item(i) => i.bare.clone(),
                MemberValue::InnerList(..) => panic!("unexpected list"),
            })
            .collect();
        assert_eq!(
            bares,
            vec![
                BareItem::Integer(-12),
                BareItem::Decimal("1.5".into()),
                BareItem::Token("tok/en:x".into()),
                BareItem::ByteSeq(b"hello".to_vec()),
                BareItem::Boolean(true),
                BareItem::String("q\"\\".into()),
            ]
        );
    }

    #[test]
    fn byte_sequence_padding_is_optional() {
        let d = dict("a=:aGVsbG8:").unwrap();
        assert_eq!(
            d[0].value,
            MemberValue::Item(Item {
                bare: BareItem::ByteSeq(b"hello".to_vec()),
                params: vec![]
            })
        );
    }

    #[test]
    fn duplicate_keys_overwrite() {
        let d = dict("a=1, b=2, a=3").unwrap();
        assert_eq!(d.len(), 2);
        assert_eq!(d[0].raw, "3");
    }

    #[test]
    fn rejects_invalid() {
        for bad in [
            "A=1",
            "a=1,",
            "a=1 b=2",
            "a=(\"x\"",
            "a=\"unterminated",
            "a=:not base64!:",
            "a=1234567890123456",
            "a=1.2345",
            "a=1.",
            "a=?2",
            "a=(@method)",
            "a=\"\\x\"",
            "a=\u{e9}",
            "sig1=abc==",
        ] {
            assert!(dict(bad).is_err(), "{bad:?} should not parse");
        }
    }

    #[test]
    fn lenient_accepts_bare_component_names() {
        let s = r#"sig1=(@method @target-uri content-type);created=1;keyid="k""#;
        assert!(dict(s).is_err());
        let d = parse_dictionary(s.as_bytes(), true).unwrap();
        assert_eq!(
            d[0].raw,
            r#"(@method @target-uri content-type);created=1;keyid="k""#
        );
        let MemberValue::InnerList(items, _) = &d[0].value else {
            panic!("not an inner list")
        };
        assert_eq!(items[0].bare, BareItem::Token("@method".into()));
        assert_eq!(items[2].bare, BareItem::Token("content-type".into()));
    }

    #[test]
    fn serializes_strings() {
        assert_eq!(
            serialize_string("a\"b\\").as_deref(),
            Some("\"a\\\"b\\\\\"")
        );
        assert_eq!(serialize_string("caf\u{e9}"), None);
        assert_eq!(serialize_string("tab\t"), None);
    }

    proptest! {
        #[test]
        fn never_panics_on_bytes(input in proptest::collection::vec(any::<u8>(), 0..200), lenient in any::<bool>()) {
            let _ = parse_dictionary(&input, lenient);
        }

        #[test]
        fn never_panics_on_sf_like_text(input in r#"[a-z0-9@:;=,()"*?. \-+/\\]{0,120}"#, lenient in any::<bool>()) {
            if let Ok(d) = parse_dictionary(input.as_bytes(), lenient) {
                // Every raw span is a substring of the input.
                for m in d {
                    prop_assert!(input.contains(&m.raw));
                }
            }
        }

        #[test]
        fn string_round_trip(s in "[ -~]{0,40}") {
            let ser = serialize_string(&s).unwrap();
            let d = parse_dictionary(format!("k={ser}").as_bytes(), false).unwrap();
            prop_assert_eq!(&d[0].value, &MemberValue::Item(Item { bare: BareItem::String(s), params: vec![] }));
            prop_assert_eq!(&d[0].raw, &ser);
        }
    }
}
