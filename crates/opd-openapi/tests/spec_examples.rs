//! Every example the spec documents is run through the validator: the valid
//! ones must pass, and the ones that are actually invalid (the spec has a
//! few) must be rejected for the pinned reason.

// Test code: panicking on an unexpected outcome is the point.
#![expect(clippy::unwrap_used, reason = "tests fail loudly by design")]

use opd_openapi::{Api, Specs, ValidationError};
use serde_json::Value;

/// One example found in a document.
struct Example {
    api: Api,
    /// Human label, e.g. `component quote #0`.
    label: String,
    value: Value,
    kind: ExampleKind,
}

enum ExampleKind {
    Component(String),
    Response { operation_id: String, status: u16 },
}

fn specs() -> &'static Specs {
    Specs::load().unwrap()
}

/// `components.schemas.*.examples` and the `examples` of every JSON response.
fn all_examples() -> Vec<Example> {
    let mut found = Vec::new();
    for api in Api::ALL {
        let doc = specs().document(api).unwrap();
        if let Some(schemas) = doc
            .pointer("/components/schemas")
            .and_then(Value::as_object)
        {
            for (name, schema) in schemas {
                let examples = schema.get("examples").and_then(Value::as_array);
                for (index, value) in examples.into_iter().flatten().enumerate() {
                    found.push(Example {
                        api,
                        label: format!("component {name} #{index}"),
                        value: value.clone(),
                        kind: ExampleKind::Component(name.clone()),
                    });
                }
            }
        }
        for path_item in doc["paths"].as_object().unwrap().values() {
            for op in path_item.as_object().unwrap().values() {
                let Some(operation_id) = op.get("operationId").and_then(Value::as_str) else {
                    continue;
                };
                for (status, response) in op["responses"].as_object().unwrap() {
                    let response = resolve(doc, response);
                    let examples = response
                        .pointer("/content/application~1json/examples")
                        .and_then(Value::as_object);
                    for (name, example) in examples.into_iter().flatten() {
                        let example = resolve(doc, example);
                        let Some(value) = example.get("value") else {
                            continue;
                        };
                        found.push(Example {
                            api,
                            label: format!("{operation_id} {status} example `{name}`"),
                            value: value.clone(),
                            kind: ExampleKind::Response {
                                operation_id: operation_id.to_owned(),
                                status: status.parse().unwrap(),
                            },
                        });
                    }
                }
            }
        }
    }
    found
}

fn resolve<'a>(doc: &'a Value, value: &'a Value) -> &'a Value {
    match value.get("$ref").and_then(Value::as_str) {
        Some(reference) => doc.pointer(reference.strip_prefix('#').unwrap()).unwrap(),
        None => value,
    }
}

fn validate(example: &Example) -> Result<(), ValidationError> {
    match &example.kind {
        ExampleKind::Component(name) => {
            specs().validate_component(example.api, name, &example.value)
        }
        ExampleKind::Response {
            operation_id,
            status,
        } => specs().validate_response(example.api, operation_id, *status, &example.value),
    }
}

/// Examples the spec ships that are NOT valid instances of their own
/// schema, with a fragment of every message the validator must report.
const KNOWN_INVALID: &[(Api, &str, &[&str])] = &[
    (
        Api::ResourceServer,
        "component quote #0",
        // The example carries `sentAmount`, forbidden by
        // `additionalProperties: false`.
        &["'sentAmount' was unexpected"],
    ),
    (
        Api::ResourceServer,
        "component quote #1",
        &[
            "\"receiveAmount\" is a required property",
            "'sentAmount' was unexpected",
        ],
    ),
    (
        Api::ResourceServer,
        "component incoming-payment #1",
        &["\"completed\" is a required property"],
    ),
    (
        Api::ResourceServer,
        "component outgoing-payment #1",
        &[
            "\"receiveAmount\" is a required property",
            "does not match \"^(https|http)://",
        ],
    ),
    (
        Api::ResourceServer,
        "component public-incoming-payment #0",
        &["\"authServer\" is a required property"],
    ),
    (
        Api::ResourceServer,
        "component ilp-payment-method #0",
        // Placeholder values (`type: string`, `ilpAddress: string`).
        &["is not one of \"ilp\"", "\"string\" does not match"],
    ),
    (
        Api::ResourceServer,
        "get-outgoing-payment-grant 200 example `No spent amounts`",
        // Valid for the schema; rejected only by the no-null rule (see
        // `no_spent_amounts_example_passes_with_allow_null`).
        &[
            "at /spentDebitAmount: null is not allowed",
            "at /spentReceiveAmount: null is not allowed",
        ],
    ),
    (
        Api::WalletAddressServer,
        "component json-web-key #0",
        &["\"alg\" is a required property"],
    ),
    (
        Api::WalletAddressServer,
        "component json-web-key #1",
        &["\"alg\" is a required property"],
    ),
];

fn known_invalid(example: &Example) -> Option<&'static [&'static str]> {
    KNOWN_INVALID
        .iter()
        .find(|(api, label, _)| *api == example.api && *label == example.label)
        .map(|(_, _, fragments)| *fragments)
}

#[test]
fn every_valid_spec_example_passes_and_every_invalid_one_is_rejected() {
    let examples = all_examples();
    assert!(
        examples.len() > 100,
        "only {} examples found: the walk is broken",
        examples.len()
    );
    let mut failures = Vec::new();
    for example in &examples {
        let outcome = validate(example);
        match (known_invalid(example), outcome) {
            (None, Ok(())) => {}
            (None, Err(err)) => failures.push(format!(
                "{} {}: expected valid, got:\n{err}",
                example.api, example.label
            )),
            (Some(_), Ok(())) => failures.push(format!(
                "{} {}: the spec example is known to be invalid but was accepted",
                example.api, example.label
            )),
            (Some(fragments), Err(err)) => {
                let text = err.to_string();
                for fragment in fragments {
                    if !text.contains(fragment) {
                        failures.push(format!(
                            "{} {}: rejected, but without `{fragment}`:\n{text}",
                            example.api, example.label
                        ));
                    }
                }
                assert_eq!(
                    err.violations().len(),
                    fragments.len(),
                    "{} {}: unexpected violations:\n{text}",
                    example.api,
                    example.label
                );
            }
        }
    }
    for (api, label, _) in KNOWN_INVALID {
        if !examples.iter().any(|e| e.api == *api && e.label == *label) {
            failures.push(format!(
                "{api} {label}: listed as known-invalid but no longer in the spec"
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn no_spent_amounts_example_passes_with_allow_null() {
    let example = all_examples()
        .into_iter()
        .find(|e| e.label == "get-outgoing-payment-grant 200 example `No spent amounts`")
        .unwrap();
    specs()
        .validate_response_allow_null(
            Api::ResourceServer,
            "get-outgoing-payment-grant",
            200,
            &example.value,
        )
        .unwrap();
}

#[test]
fn quote_component_example_with_sent_amount_is_rejected() {
    // The spec's own `quote` example is invalid: a good proof that
    // `additionalProperties: false` is enforced.
    let doc = specs().document(Api::ResourceServer).unwrap();
    let example = &doc["components"]["schemas"]["quote"]["examples"][0];
    assert!(example.get("sentAmount").is_some());
    let err = specs()
        .validate_component(Api::ResourceServer, "quote", example)
        .unwrap_err();
    let violation = &err.violations()[0];
    assert_eq!(violation.instance_path, "");
    assert_eq!(
        violation.keyword_location.as_deref(),
        Some("/components/schemas/quote/additionalProperties")
    );
    // Without the extra field the example is valid.
    let mut fixed = example.clone();
    fixed.as_object_mut().unwrap().remove("sentAmount");
    specs()
        .validate_component(Api::ResourceServer, "quote", &fixed)
        .unwrap();
}
