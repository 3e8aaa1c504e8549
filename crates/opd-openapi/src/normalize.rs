//! The one rewrite applied to the spec documents before compiling schemas.
//!
//! The Open Payments documents write, in two places of
//! `resource-server.yaml` (the items of the `list-incoming-payments` 200 body
//! and the `complete-incoming-payment` 200 body):
//!
//! ```yaml
//! $ref: '#/components/schemas/incoming-payment'
//! additionalProperties: false
//! ```
//!
//! In JSON Schema 2020-12 a sibling of `$ref` does apply, but
//! `additionalProperties` only "sees" the `properties` / `patternProperties`
//! of its *own* schema object. With none there, `additionalProperties: false`
//! literally forbids **every** property, so no incoming payment could ever
//! validate (the spec's own examples included). What the authors mean is
//! "no properties beyond those of the referenced schema", which 2020-12
//! spells `unevaluatedProperties: false` (it does see the properties
//! evaluated through `$ref`). So wherever a schema object has `$ref`,
//! `additionalProperties: false` and neither `properties` nor
//! `patternProperties`, the keyword is renamed to `unevaluatedProperties`.
//! Every location rewritten is recorded and exposed through
//! [`crate::Specs::normalized_locations`].

use serde_json::Value;

use crate::pointer;

/// Keys whose values are instance data (or non-schema maps of data), never
/// schemas: the walk does not descend into them.
const DATA_KEYWORDS: [&str; 5] = ["examples", "example", "enum", "const", "default"];

/// Applies the rewrite described in the module docs to `doc` in place and
/// returns the JSON pointers of every schema object that was changed.
pub(crate) fn normalize(doc: &mut Value) -> Vec<String> {
    let mut rewritten = Vec::new();
    walk(doc, String::new(), &mut rewritten);
    rewritten
}

fn walk(value: &mut Value, at: String, rewritten: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            let needs_rewrite = map.contains_key("$ref")
                && map.get("additionalProperties") == Some(&Value::Bool(false))
                && !map.contains_key("properties")
                && !map.contains_key("patternProperties")
                && !map.contains_key("unevaluatedProperties");
            if needs_rewrite {
                map.remove("additionalProperties");
                map.insert("unevaluatedProperties".to_owned(), Value::Bool(false));
                rewritten.push(at.clone());
            }
            for (key, child) in map.iter_mut() {
                if DATA_KEYWORDS.contains(&key.as_str()) {
                    continue;
                }
                walk(child, pointer::push(&at, key), rewritten);
            }
        }
        Value::Array(items) => {
            for (index, child) in items.iter_mut().enumerate() {
                walk(child, format!("{at}/{index}"), rewritten);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn rewrites_only_bare_ref_siblings() {
        let mut doc = json!({
            "a": {"$ref": "#/x", "additionalProperties": false},
            "b": {"$ref": "#/x", "additionalProperties": false, "properties": {}},
            "c": {"type": "object", "additionalProperties": false},
            "d": {"$ref": "#/x", "additionalProperties": true},
            "examples": [{"$ref": "#/x", "additionalProperties": false}],
            "e": {"items": {"$ref": "#/x", "additionalProperties": false}}
        });
        let rewritten = normalize(&mut doc);
        assert_eq!(rewritten, vec!["/a".to_owned(), "/e/items".to_owned()]);
        assert_eq!(
            doc["a"],
            json!({"$ref": "#/x", "unevaluatedProperties": false})
        );
        assert_eq!(doc["b"]["additionalProperties"], json!(false));
        assert_eq!(doc["c"]["additionalProperties"], json!(false));
        assert_eq!(doc["d"]["additionalProperties"], json!(true));
        assert_eq!(doc["examples"][0]["additionalProperties"], json!(false));
        assert_eq!(doc["e"]["items"]["unevaluatedProperties"], json!(false));
    }

    /// Why the rewrite exists: under strict 2020-12 semantics the spec's
    /// pattern rejects even a perfectly matching object.
    #[test]
    fn strict_semantics_reject_everything_and_the_rewrite_fixes_it() {
        let mut schema = json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "$defs": {"x": {"type": "object", "properties": {"a": {}}}},
            "$ref": "#/$defs/x",
            "additionalProperties": false
        });
        let strict = jsonschema::validator_for(&schema).expect("compiles");
        assert!(!strict.is_valid(&json!({"a": 1})));
        assert!(strict.is_valid(&json!({})));

        assert_eq!(normalize(&mut schema), vec![String::new()]);
        let rewritten = jsonschema::validator_for(&schema).expect("compiles");
        assert!(rewritten.is_valid(&json!({"a": 1})));
        assert!(!rewritten.is_valid(&json!({"a": 1, "b": 2})));
    }
}
