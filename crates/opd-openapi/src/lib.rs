#![doc = include_str!("../README.md")]
//!
//! # Module map
//!
//! * this module: [`Api`], [`Specs`] (loading, operation/status lookup,
//!   validation, the compiled-validator cache), [`find_nulls`] and the
//!   panicking `assert_*` helpers for tests;
//! * [`SpecError`], [`ValidationError`], [`Violation`], [`ViolationKind`]:
//!   errors, whose `Display` (and `Debug`) list every problem with its JSON
//!   path in the body and the spec location of the failing keyword.

mod error;
mod normalize;
mod pointer;

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use jsonschema::{Draft, Validator};
use serde_json::Value;

pub use error::{SpecError, ValidationError, Violation, ViolationKind};

/// Environment variable naming the directory that holds the four spec
/// files. When unset (or empty) [`Specs::load`] uses the copy kept in the
/// repository (`<workspace>/spec`).
pub const SPEC_DIR_ENV: &str = "OPD_SPEC_DIR";

/// The meta-schema every compiled schema declares.
const DRAFT_2020_12: &str = "https://json-schema.org/draft/2020-12/schema";

/// Longest body excerpt kept in a [`ValidationError::Invalid`].
const MAX_BODY_CHARS: usize = 2_000;

/// HTTP methods an OpenAPI path item may hold an operation under.
const METHODS: [&str; 8] = [
    "get", "put", "post", "delete", "options", "head", "patch", "trace",
];

/// One of the four Open Payments OpenAPI documents.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Api {
    /// `resource-server.yaml`: incoming/outgoing payments, quotes.
    ResourceServer,
    /// `wallet-address-server.yaml`: wallet address, JWKS, DID document.
    WalletAddressServer,
    /// `auth-server.yaml`: GNAP grant, continuation and token management.
    AuthServer,
    /// `token-introspection.yaml`: AS ↔ RS token introspection.
    TokenIntrospection,
}

impl Api {
    /// All four documents.
    pub const ALL: [Api; 4] = [
        Api::ResourceServer,
        Api::WalletAddressServer,
        Api::AuthServer,
        Api::TokenIntrospection,
    ];

    /// File name of the document inside the spec directory.
    pub const fn file_name(self) -> &'static str {
        match self {
            Api::ResourceServer => "resource-server.yaml",
            Api::WalletAddressServer => "wallet-address-server.yaml",
            Api::AuthServer => "auth-server.yaml",
            Api::TokenIntrospection => "token-introspection.yaml",
        }
    }

    const fn index(self) -> usize {
        match self {
            Api::ResourceServer => 0,
            Api::WalletAddressServer => 1,
            Api::AuthServer => 2,
            Api::TokenIntrospection => 3,
        }
    }
}

impl fmt::Display for Api {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.file_name())
    }
}

/// One loaded (and normalized) spec document.
struct Document {
    path: PathBuf,
    doc: Value,
    normalized: Vec<String>,
}

/// A validator and the spec location it was compiled for.
type Cache = HashMap<(Api, String), Arc<Validator>>;

/// The four Open Payments OpenAPI documents, ready to validate bodies.
///
/// Get the shared instance with [`Specs::load`]; compiled schema validators
/// are cached inside it, keyed by document and schema location (so every
/// (operation, status) pair, and every component, is compiled once).
pub struct Specs {
    dir: PathBuf,
    docs: Vec<Document>,
    cache: Mutex<Cache>,
}

impl fmt::Debug for Specs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Specs")
            .field("dir", &self.dir)
            .field(
                "files",
                &self.docs.iter().map(|d| &d.path).collect::<Vec<_>>(),
            )
            .finish_non_exhaustive()
    }
}

/// Where the response schema of an operation lives.
struct ResponseTarget {
    /// JSON pointer of the `application/json` schema, if the response has one.
    schema: Option<String>,
    /// The response key that matched (`"201"`, `"4XX"`, `"default"`).
    key: String,
}

impl Specs {
    /// The shared instance, loaded on first use from `$OPD_SPEC_DIR` or,
    /// when that is unset or empty, from `<workspace root>/spec`.
    ///
    /// The outcome (success or error) is computed once per process.
    ///
    /// # Errors
    ///
    /// A missing directory or file, or an unparseable document, is a
    /// [`SpecError`] naming the path and [`SPEC_DIR_ENV`]: nothing is
    /// silently skipped.
    pub fn load() -> Result<&'static Specs, SpecError> {
        static SPECS: OnceLock<Result<Specs, SpecError>> = OnceLock::new();
        SPECS
            .get_or_init(|| {
                let (dir, origin) = spec_dir(std::env::var_os(SPEC_DIR_ENV));
                Specs::load_dir(dir, origin)
            })
            .as_ref()
            .map_err(Clone::clone)
    }

    /// Loads the four documents from `dir`, bypassing the environment and
    /// the process-wide instance (each call reads and parses again).
    ///
    /// # Errors
    ///
    /// As for [`Specs::load`].
    pub fn load_from(dir: impl Into<PathBuf>) -> Result<Specs, SpecError> {
        Specs::load_dir(dir.into(), "given to Specs::load_from".to_owned())
    }

    /// The directory [`Specs::load`] reads: `$OPD_SPEC_DIR` if set and not
    /// empty, else `<workspace root>/spec`.
    pub fn default_dir() -> PathBuf {
        spec_dir(std::env::var_os(SPEC_DIR_ENV)).0
    }

    fn load_dir(dir: PathBuf, origin: String) -> Result<Specs, SpecError> {
        if !dir.is_dir() {
            return Err(SpecError::MissingDir {
                path: dir,
                origin,
                env_var: SPEC_DIR_ENV,
            });
        }
        let mut docs = Vec::with_capacity(Api::ALL.len());
        for api in Api::ALL {
            let path = dir.join(api.file_name());
            if !path.is_file() {
                return Err(SpecError::MissingFile {
                    api,
                    path,
                    origin,
                    env_var: SPEC_DIR_ENV,
                });
            }
            let text = std::fs::read_to_string(&path).map_err(|err| SpecError::Read {
                path: path.clone(),
                message: err.to_string(),
            })?;
            let mut doc = parse_document(&text).map_err(|message| SpecError::Parse {
                path: path.clone(),
                message,
            })?;
            let normalized = normalize::normalize(&mut doc);
            docs.push(Document {
                path,
                doc,
                normalized,
            });
        }
        Ok(Specs {
            dir,
            docs,
            cache: Mutex::new(HashMap::new()),
        })
    }

    fn document_of(&self, api: Api) -> Result<&Document, SpecError> {
        // `docs` always holds the four documents in `Api::ALL` order.
        self.docs.get(api.index()).ok_or_else(|| SpecError::Read {
            path: self.dir.join(api.file_name()),
            message: "document not loaded".to_owned(),
        })
    }

    /// The directory the documents were read from.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The file one document was read from.
    pub fn path(&self, api: Api) -> Option<&Path> {
        self.docs.get(api.index()).map(|d| d.path.as_path())
    }

    /// A document as JSON, after the normalization described in
    /// [`Specs::normalized_locations`] (examples are left untouched).
    pub fn document(&self, api: Api) -> Option<&Value> {
        self.docs.get(api.index()).map(|d| &d.doc)
    }

    /// JSON pointers of the schema objects of `api` whose
    /// `additionalProperties: false` sitting next to a bare `$ref` was turned
    /// into `unevaluatedProperties: false` at load time (under strict
    /// 2020-12 semantics such a schema rejects every non-empty object; the
    /// intent is "nothing beyond the referenced schema's properties").
    pub fn normalized_locations(&self, api: Api) -> &[String] {
        self.docs
            .get(api.index())
            .map_or(&[], |d| d.normalized.as_slice())
    }

    /// Every `operationId` of a document, in document order.
    pub fn operation_ids(&self, api: Api) -> Vec<String> {
        let Some(doc) = self.document(api) else {
            return Vec::new();
        };
        operations(doc)
            .filter_map(|(_, op)| op.get("operationId")?.as_str().map(str::to_owned))
            .collect()
    }

    /// Names of `#/components/schemas/*` of a document.
    pub fn component_names(&self, api: Api) -> Vec<String> {
        self.document(api)
            .and_then(|doc| doc.pointer("/components/schemas")?.as_object())
            .map(|schemas| schemas.keys().cloned().collect())
            .unwrap_or_default()
    }

    /// The response keys (`"201"`, `"401"`, ...) an operation documents.
    ///
    /// # Errors
    ///
    /// [`ValidationError::UnknownOperation`] if there is no such operation.
    pub fn documented_statuses(
        &self,
        api: Api,
        operation_id: &str,
    ) -> Result<Vec<String>, ValidationError> {
        let (_, op) = self.find_operation(api, operation_id)?;
        Ok(response_keys(op))
    }

    /// Validates a response body of `operation_id` returned with `status`.
    ///
    /// Checks, all at once (every problem is reported):
    /// * the operation exists and documents `status` (exactly, or through a
    ///   `2XX`-style range or `default`);
    /// * the body matches the response's `application/json` schema with
    ///   JSON Schema 2020-12 semantics, `uri` and `date-time` formats
    ///   asserted (unknown formats such as `uint64` ignored); a response
    ///   without a JSON schema accepts any body;
    /// * the body contains no JSON `null` anywhere.
    ///
    /// # Errors
    ///
    /// A [`ValidationError`] describing every problem.
    pub fn validate_response(
        &self,
        api: Api,
        operation_id: &str,
        status: u16,
        body: &Value,
    ) -> Result<(), ValidationError> {
        self.response(api, operation_id, status, body, false)
    }

    /// Like [`Specs::validate_response`] but without the `null` check, for
    /// the responses whose schema itself allows `null` (in the current spec
    /// only `get-outgoing-payment-grant`: `spentDebitAmount: null`). The
    /// schema still decides where `null` is legal.
    ///
    /// # Errors
    ///
    /// A [`ValidationError`] describing every problem.
    pub fn validate_response_allow_null(
        &self,
        api: Api,
        operation_id: &str,
        status: u16,
        body: &Value,
    ) -> Result<(), ValidationError> {
        self.response(api, operation_id, status, body, true)
    }

    /// Validates `value` against `#/components/schemas/<schema_name>` of
    /// `api`, plus the no-`null` check.
    ///
    /// # Errors
    ///
    /// A [`ValidationError`] describing every problem.
    pub fn validate_component(
        &self,
        api: Api,
        schema_name: &str,
        value: &Value,
    ) -> Result<(), ValidationError> {
        let document = self.document_of(api)?;
        let exists = document
            .doc
            .pointer("/components/schemas")
            .and_then(Value::as_object)
            .is_some_and(|schemas| schemas.contains_key(schema_name));
        if !exists {
            return Err(ValidationError::UnknownComponent {
                api,
                name: schema_name.to_owned(),
                known: self.component_names(api),
            });
        }
        let schema = pointer::push("/components/schemas", schema_name);
        let target = format!("component `{schema_name}`");
        self.check(api, Some(&schema), target, value, false)
    }

    fn response(
        &self,
        api: Api,
        operation_id: &str,
        status: u16,
        body: &Value,
        allow_null: bool,
    ) -> Result<(), ValidationError> {
        let target = self.response_target(api, operation_id, status)?;
        let label = format!(
            "response {status} (spec key `{}`) of `{operation_id}`",
            target.key
        );
        self.check(api, target.schema.as_deref(), label, body, allow_null)
    }

    fn find_operation(
        &self,
        api: Api,
        operation_id: &str,
    ) -> Result<(String, &Value), ValidationError> {
        let document = self.document_of(api)?;
        operations(&document.doc)
            .find(|(_, op)| op.get("operationId").and_then(Value::as_str) == Some(operation_id))
            .ok_or_else(|| ValidationError::UnknownOperation {
                api,
                operation_id: operation_id.to_owned(),
                known: self.operation_ids(api),
            })
    }

    fn response_target(
        &self,
        api: Api,
        operation_id: &str,
        status: u16,
    ) -> Result<ResponseTarget, ValidationError> {
        let document = self.document_of(api)?;
        let (op_pointer, op) = self.find_operation(api, operation_id)?;
        let responses = op.get("responses").and_then(Value::as_object);
        let exact = status.to_string();
        let range = format!("{}XX", status / 100);
        let key = responses.and_then(|responses| {
            responses
                .keys()
                .find(|k| **k == exact)
                .or_else(|| responses.keys().find(|k| k.eq_ignore_ascii_case(&range)))
                .or_else(|| responses.keys().find(|k| *k == "default"))
        });
        let Some(key) = key else {
            return Err(ValidationError::UndocumentedStatus {
                api,
                operation_id: operation_id.to_owned(),
                status,
                documented: response_keys(op),
            });
        };
        let start = pointer::push(&pointer::push(&op_pointer, "responses"), key);
        let (response_pointer, response) = follow_refs(api, &document.doc, start)?;
        let schema = response
            .get("content")
            .and_then(Value::as_object)
            .and_then(|content| {
                let media = content
                    .keys()
                    .find(|k| *k == "application/json")
                    .or_else(|| content.keys().find(|k| is_json_media_type(k)))?;
                content.get(media)?.get("schema")?;
                Some(pointer::push(
                    &pointer::push(&pointer::push(&response_pointer, "content"), media),
                    "schema",
                ))
            });
        Ok(ResponseTarget {
            schema,
            key: key.clone(),
        })
    }

    /// Schema check (when there is a schema) plus, unless allowed, the
    /// `null` check; every problem goes into one error.
    fn check(
        &self,
        api: Api,
        schema: Option<&str>,
        target: String,
        body: &Value,
        allow_null: bool,
    ) -> Result<(), ValidationError> {
        let mut violations = Vec::new();
        if let Some(schema) = schema {
            let validator = self.validator(api, schema)?;
            violations.extend(validator.iter_errors(body).map(|e| convert(&e)));
        }
        if !allow_null {
            violations.extend(find_nulls(body).into_iter().map(|path| {
                Violation {
                    kind: ViolationKind::Null,
                    instance_path: path,
                    keyword_location: None,
                    message: "null is not allowed: opd never emits JSON null (only the \
                          `_allow_null` variant skips this check)"
                        .to_owned(),
                    alternatives: Vec::new(),
                }
            }));
        }
        if violations.is_empty() {
            Ok(())
        } else {
            Err(ValidationError::Invalid {
                api,
                target,
                violations,
                body: excerpt(body),
            })
        }
    }

    /// The compiled validator for the schema at `schema` (a JSON pointer
    /// into the document), from the cache or freshly compiled.
    fn validator(&self, api: Api, schema: &str) -> Result<Arc<Validator>, SpecError> {
        let key = (api, schema.to_owned());
        if let Some(found) = self
            .cache
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&key)
        {
            return Ok(Arc::clone(found));
        }
        let compiled = Arc::new(self.compile(api, schema)?);
        let mut cache = self.cache.lock().unwrap_or_else(PoisonError::into_inner);
        Ok(Arc::clone(cache.entry(key).or_insert(compiled)))
    }

    /// Compiles the schema at `schema` by making the whole document the root
    /// schema resource and pointing its `$ref` there: every local
    /// `#/components/...` reference then resolves inside the same document,
    /// and error locations are real locations in the spec file.
    fn compile(&self, api: Api, schema: &str) -> Result<Validator, SpecError> {
        let compile_error = |message: String| SpecError::Compile {
            api,
            pointer: schema.to_owned(),
            message,
        };
        let document = self.document_of(api)?;
        let mut root = document.doc.clone();
        let Some(map) = root.as_object_mut() else {
            return Err(compile_error("document is not a mapping".to_owned()));
        };
        map.insert("$schema".to_owned(), Value::from(DRAFT_2020_12));
        map.insert(
            "$ref".to_owned(),
            Value::from(format!("#{}", pointer::to_fragment(schema))),
        );
        jsonschema::options()
            .with_draft(Draft::Draft202012)
            .with_base_uri(base_uri(api))
            .should_validate_formats(true)
            .should_ignore_unknown_formats(true)
            .build(&root)
            .map_err(|err| compile_error(err.to_string()))
    }
}

/// `(dir, where it came from)` for the given value of `$OPD_SPEC_DIR`.
fn spec_dir(env: Option<std::ffi::OsString>) -> (PathBuf, String) {
    match env {
        Some(value) if !value.is_empty() => {
            (PathBuf::from(value), format!("taken from ${SPEC_DIR_ENV}"))
        }
        _ => {
            let raw = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../spec");
            let dir = std::fs::canonicalize(&raw).unwrap_or(raw);
            (
                dir,
                format!("the default <workspace root>/spec, as ${SPEC_DIR_ENV} is unset"),
            )
        }
    }
}

/// Parses a YAML document into JSON and checks it is an OpenAPI 3.1 mapping.
fn parse_document(text: &str) -> Result<Value, String> {
    let doc: Value = serde_norway::from_str(text).map_err(|err| err.to_string())?;
    let version = doc
        .get("openapi")
        .and_then(Value::as_str)
        .ok_or_else(|| "not an OpenAPI document (no `openapi` version string)".to_owned())?;
    if !version.starts_with("3.1") {
        return Err(format!(
            "OpenAPI {version} is not supported: only 3.1 schemas are JSON Schema 2020-12"
        ));
    }
    Ok(doc)
}

/// The base URI each document is compiled under (never fetched: all
/// references in the documents are local).
fn base_uri(api: Api) -> String {
    format!("https://opd-openapi.invalid/{}", api.file_name())
}

/// `(pointer, operation)` for every operation under `paths`.
fn operations(doc: &Value) -> impl Iterator<Item = (String, &Value)> {
    doc.get("paths")
        .and_then(Value::as_object)
        .into_iter()
        .flat_map(|paths| paths.iter())
        .flat_map(|(path, item)| {
            let path_pointer = pointer::push("/paths", path);
            METHODS.iter().filter_map(move |method| {
                let op = item.get(*method)?;
                op.is_object()
                    .then(|| (pointer::push(&path_pointer, method), op))
            })
        })
}

fn response_keys(op: &Value) -> Vec<String> {
    op.get("responses")
        .and_then(Value::as_object)
        .map(|responses| responses.keys().cloned().collect())
        .unwrap_or_default()
}

/// Follows (local) `$ref`s starting at `start` until a non-reference object.
fn follow_refs(api: Api, doc: &Value, start: String) -> Result<(String, &Value), SpecError> {
    let mut at = start;
    for _ in 0..32 {
        let value = pointer::lookup(doc, &at).ok_or_else(|| SpecError::BadReference {
            api,
            reference: format!("#{at}"),
            at: at.clone(),
        })?;
        let Some(reference) = value.get("$ref").and_then(Value::as_str) else {
            return Ok((at, value));
        };
        let next = pointer::from_local_ref(reference)
            .filter(|next| pointer::lookup(doc, next).is_some())
            .ok_or_else(|| SpecError::BadReference {
                api,
                reference: reference.to_owned(),
                at: at.clone(),
            })?;
        at = next;
    }
    Err(SpecError::BadReference {
        api,
        reference: "(reference chain longer than 32)".to_owned(),
        at,
    })
}

fn is_json_media_type(media: &str) -> bool {
    let essence = media
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    essence == "application/json" || essence.ends_with("+json")
}

/// Converts one `jsonschema` error (and, for `anyOf`/`oneOf`, the reasons
/// each alternative failed) into a [`Violation`].
fn convert(err: &jsonschema::ValidationError<'_>) -> Violation {
    use jsonschema::error::ValidationErrorKind as Kind;
    let message = match err.instance().as_ref() {
        Value::Object(_) | Value::Array(_) => err.masked_with("the value").to_string(),
        _ => err.to_string(),
    };
    let alternatives = match err.kind() {
        Kind::AnyOf { context } | Kind::OneOfNotValid { context } => context
            .iter()
            .map(|errors| errors.iter().map(convert).collect())
            .collect(),
        _ => Vec::new(),
    };
    let keyword_location = err
        .absolute_keyword_location()
        .and_then(|uri| uri.as_str().split_once('#').map(|(_, f)| f.to_owned()))
        .and_then(|fragment| pointer::from_local_ref(&format!("#{fragment}")))
        .unwrap_or_else(|| err.schema_path().to_string());
    Violation {
        kind: ViolationKind::Schema,
        instance_path: err.instance_path().to_string(),
        keyword_location: Some(keyword_location),
        message,
        alternatives,
    }
}

/// JSON Pointers (RFC 6901) of every `null` in `value`, in document order;
/// `""` if `value` itself is `null`.
pub fn find_nulls(value: &Value) -> Vec<String> {
    fn walk(value: &Value, at: &str, found: &mut Vec<String>) {
        match value {
            Value::Null => found.push(at.to_owned()),
            Value::Array(items) => {
                for (index, item) in items.iter().enumerate() {
                    walk(item, &format!("{at}/{index}"), found);
                }
            }
            Value::Object(map) => {
                for (key, item) in map {
                    walk(item, &pointer::push(at, key), found);
                }
            }
            Value::Bool(_) | Value::Number(_) | Value::String(_) => {}
        }
    }
    let mut found = Vec::new();
    walk(value, "", &mut found);
    found
}

fn excerpt(body: &Value) -> String {
    let text = body.to_string();
    if text.chars().count() <= MAX_BODY_CHARS {
        return text;
    }
    let cut: String = text.chars().take(MAX_BODY_CHARS).collect();
    format!("{cut}… ({} bytes in all)", text.len())
}

/// Loads the shared [`Specs`] or panics with the loading error.
#[track_caller]
fn loaded() -> &'static Specs {
    match Specs::load() {
        Ok(specs) => specs,
        Err(err) => panic!("{err}"),
    }
}

/// Test helper: [`Specs::validate_response`] on the shared [`Specs`],
/// panicking with the full, readable report on failure.
///
/// # Panics
///
/// If the spec cannot be loaded or the body is not valid.
#[track_caller]
pub fn assert_response(api: Api, operation_id: &str, status: u16, body: &Value) {
    if let Err(err) = loaded().validate_response(api, operation_id, status, body) {
        panic!("{err}");
    }
}

/// Test helper: [`Specs::validate_response_allow_null`] on the shared
/// [`Specs`], panicking with the full report on failure.
///
/// # Panics
///
/// If the spec cannot be loaded or the body is not valid.
#[track_caller]
pub fn assert_response_allow_null(api: Api, operation_id: &str, status: u16, body: &Value) {
    if let Err(err) = loaded().validate_response_allow_null(api, operation_id, status, body) {
        panic!("{err}");
    }
}

/// Test helper: [`Specs::validate_component`] on the shared [`Specs`],
/// panicking with the full report on failure.
///
/// # Panics
///
/// If the spec cannot be loaded or the value is not valid.
#[track_caller]
pub fn assert_component(api: Api, schema_name: &str, value: &Value) {
    if let Err(err) = loaded().validate_component(api, schema_name, value) {
        panic!("{err}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn env_var_wins_when_set_and_not_empty() {
        let (dir, origin) = spec_dir(Some("/some/where".into()));
        assert_eq!(dir, PathBuf::from("/some/where"));
        assert!(origin.contains(SPEC_DIR_ENV));
        let (default, origin) = spec_dir(Some("".into()));
        assert!(default.ends_with("spec"), "{}", default.display());
        assert!(default.join("resource-server.yaml").is_file());
        assert!(origin.contains("default"));
        assert_eq!(spec_dir(None).0, default);
    }

    #[test]
    fn missing_dir_is_a_loud_error_naming_path_and_env_var() {
        let err = Specs::load_from("/definitely/not/here/spec").expect_err("must fail");
        let text = err.to_string();
        assert!(text.contains("/definitely/not/here/spec"), "{text}");
        assert!(text.contains("$OPD_SPEC_DIR"), "{text}");
    }

    #[test]
    fn missing_file_is_a_loud_error_naming_the_file() {
        let dir = std::env::temp_dir().join(format!("opd-openapi-empty-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let err = Specs::load_from(&dir).expect_err("must fail");
        let _ = std::fs::remove_dir(&dir);
        assert!(matches!(
            err,
            SpecError::MissingFile {
                api: Api::ResourceServer,
                ..
            }
        ));
        let text = err.to_string();
        assert!(text.contains("resource-server.yaml"), "{text}");
        assert!(text.contains("$OPD_SPEC_DIR"), "{text}");
    }

    #[test]
    fn rejects_openapi_3_0() {
        let err = parse_document("openapi: 3.0.3\ninfo: {}\n").expect_err("must fail");
        assert!(err.contains("3.0.3"), "{err}");
        assert!(parse_document("- a list").is_err());
    }

    #[test]
    fn finds_every_null_with_its_path() {
        let body = json!({"a": null, "b": [1, null, {"c/d": null}], "e": {"f": 0}});
        assert_eq!(find_nulls(&body), vec!["/a", "/b/1", "/b/2/c~1d"]);
        assert_eq!(find_nulls(&Value::Null), vec![""]);
        assert!(find_nulls(&json!({"x": [true, "s", 1.5]})).is_empty());
    }

    #[test]
    fn json_media_types() {
        assert!(is_json_media_type("application/json"));
        assert!(is_json_media_type("application/json; charset=utf-8"));
        assert!(is_json_media_type("application/problem+json"));
        assert!(!is_json_media_type("text/html"));
    }

    #[test]
    fn long_bodies_are_shortened() {
        let body = json!({"s": "x".repeat(5_000)});
        let text = excerpt(&body);
        assert!(text.chars().count() < MAX_BODY_CHARS + 40);
        assert!(text.ends_with("bytes in all)"));
    }
}
