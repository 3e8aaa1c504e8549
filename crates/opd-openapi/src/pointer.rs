//! JSON Pointer (RFC 6901) helpers: building pointers, looking them up in a
//! document, and turning them into URI fragments usable in `$ref`.

use serde_json::Value;

/// Escapes one reference token (`~` → `~0`, `/` → `~1`).
pub(crate) fn escape_token(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}

/// Undoes [`escape_token`].
pub(crate) fn unescape_token(token: &str) -> String {
    token.replace("~1", "/").replace("~0", "~")
}

/// Appends one (unescaped) token to a pointer.
pub(crate) fn push(pointer: &str, token: &str) -> String {
    format!("{pointer}/{}", escape_token(token))
}

/// Looks a pointer up in `doc`; `""` is the whole document.
pub(crate) fn lookup<'a>(doc: &'a Value, pointer: &str) -> Option<&'a Value> {
    if pointer.is_empty() {
        return Some(doc);
    }
    let rest = pointer.strip_prefix('/')?;
    let mut current = doc;
    for raw in rest.split('/') {
        let token = unescape_token(raw);
        current = match current {
            Value::Object(map) => map.get(&token)?,
            Value::Array(items) => items.get(token.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some(current)
}

/// Percent-encodes a JSON pointer so that it can be used as a URI fragment
/// (e.g. the `{` and `}` of a templated OpenAPI path are not legal there).
pub(crate) fn to_fragment(pointer: &str) -> String {
    let mut out = String::with_capacity(pointer.len());
    for byte in pointer.bytes() {
        let keep = byte.is_ascii_alphanumeric()
            || matches!(
                byte,
                b'-' | b'.'
                    | b'_'
                    | b'~'
                    | b'!'
                    | b'$'
                    | b'&'
                    | b'\''
                    | b'('
                    | b')'
                    | b'*'
                    | b'+'
                    | b','
                    | b';'
                    | b'='
                    | b':'
                    | b'@'
                    | b'/'
                    | b'?'
            );
        if keep {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// Turns a local `$ref` (`#/a/b`) into a pointer (`/a/b`), decoding
/// percent-escapes. Returns `None` for anything that is not document-local.
pub(crate) fn from_local_ref(reference: &str) -> Option<String> {
    let fragment = reference.strip_prefix('#')?;
    let bytes = fragment.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).ok()?;
            decoded.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            decoded.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(decoded).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn escaping_round_trips() {
        assert_eq!(escape_token("a/b~c"), "a~1b~0c");
        assert_eq!(unescape_token("a~1b~0c"), "a/b~c");
        assert_eq!(push("/paths", "/quotes/{id}"), "/paths/~1quotes~1{id}");
    }

    #[test]
    fn lookup_walks_objects_and_arrays() {
        let doc = json!({"a": {"b/c": [1, {"d": true}]}});
        assert_eq!(lookup(&doc, ""), Some(&doc));
        assert_eq!(lookup(&doc, "/a/b~1c/1/d"), Some(&json!(true)));
        assert_eq!(lookup(&doc, "/a/missing"), None);
        assert_eq!(lookup(&doc, "a"), None);
    }

    #[test]
    fn fragments_are_percent_encoded_and_decoded() {
        let pointer = "/paths/~1quotes~1{id}/get";
        let fragment = to_fragment(pointer);
        assert_eq!(fragment, "/paths/~1quotes~1%7Bid%7D/get");
        assert_eq!(
            from_local_ref(&format!("#{fragment}")).as_deref(),
            Some(pointer)
        );
        assert_eq!(from_local_ref("other.yaml#/a"), None);
    }
}
