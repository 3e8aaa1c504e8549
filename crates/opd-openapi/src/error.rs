//! Error types: [`SpecError`] (the spec documents could not be loaded or
//! used) and [`ValidationError`] (a body does not match, or the operation,
//! status or component asked for is not in the spec).
//!
//! `Debug` of both types prints the same human-readable text as `Display`,
//! so that `.unwrap()` in a test prints a readable failure.

use std::fmt;
use std::path::PathBuf;

use crate::Api;

/// The spec documents could not be loaded, or a schema in them could not be
/// compiled.
#[derive(Clone, PartialEq, Eq, thiserror::Error)]
pub enum SpecError {
    /// The spec directory does not exist (or is not a directory).
    #[error(
        "Open Payments OpenAPI spec directory {} does not exist or is not a directory \
         (it was {origin}); set ${env_var} to the directory that holds \
         resource-server.yaml, wallet-address-server.yaml, auth-server.yaml and \
         token-introspection.yaml",
        path.display()
    )]
    MissingDir {
        /// The directory that was looked for.
        path: PathBuf,
        /// Where the path came from (the env var or the default).
        origin: String,
        /// The env var that overrides the directory.
        env_var: &'static str,
    },
    /// One of the four spec files is missing.
    #[error(
        "Open Payments OpenAPI spec file {} ({api}) does not exist (spec directory \
         was {origin}; set ${env_var} to override it)",
        path.display()
    )]
    MissingFile {
        /// Which document.
        api: Api,
        /// The file that was looked for.
        path: PathBuf,
        /// Where the directory came from.
        origin: String,
        /// The env var that overrides the directory.
        env_var: &'static str,
    },
    /// A spec file could not be read.
    #[error("cannot read OpenAPI spec file {}: {message}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        message: String,
    },
    /// A spec file is not valid YAML, or not a mapping at the top.
    #[error("cannot parse OpenAPI spec file {} as YAML: {message}", path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// The parser's message.
        message: String,
    },
    /// A `$ref` in the document (outside schemas) could not be followed.
    #[error("{api}: cannot resolve reference `{reference}` at {at}")]
    BadReference {
        /// Which document.
        api: Api,
        /// The `$ref` value.
        reference: String,
        /// JSON pointer of the object holding the `$ref`.
        at: String,
    },
    /// `jsonschema` refused to compile a schema of the document.
    #[error("{api}: cannot compile the schema at {pointer}: {message}")]
    Compile {
        /// Which document.
        api: Api,
        /// JSON pointer of the schema in the document.
        pointer: String,
        /// The compiler's message.
        message: String,
    },
}

impl fmt::Debug for SpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// What kind of problem a [`Violation`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ViolationKind {
    /// The JSON Schema of the spec rejects the value.
    Schema,
    /// A JSON `null` (opd never emits `null`; see
    /// [`crate::Specs::validate_response_allow_null`]).
    Null,
}

/// One problem found in a body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// Schema violation or forbidden `null`.
    pub kind: ViolationKind,
    /// JSON Pointer (RFC 6901) into the body; `""` is the body itself.
    pub instance_path: String,
    /// JSON Pointer into the spec document of the schema keyword that failed
    /// (`None` for [`ViolationKind::Null`]).
    pub keyword_location: Option<String>,
    /// Human-readable message.
    pub message: String,
    /// For a failed `anyOf` / `oneOf`: why each alternative failed, one list
    /// per alternative (in spec order). Empty otherwise.
    pub alternatives: Vec<Vec<Violation>>,
}

impl Violation {
    fn write_indented(&self, f: &mut fmt::Formatter<'_>, depth: usize) -> fmt::Result {
        let indent = "    ".repeat(depth);
        let at = if self.instance_path.is_empty() {
            "(body root)"
        } else {
            self.instance_path.as_str()
        };
        write!(f, "{indent}  - at {at}: {}", self.message)?;
        if let Some(location) = &self.keyword_location {
            write!(f, "  [spec: {location}]")?;
        }
        writeln!(f)?;
        for (index, alternative) in self.alternatives.iter().enumerate() {
            writeln!(f, "{indent}      alternative #{index} fails because:")?;
            for violation in alternative {
                violation.write_indented(f, depth + 2)?;
            }
        }
        Ok(())
    }
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.write_indented(f, 0)
    }
}

/// A body does not match the spec, or what was asked for is not in the spec.
#[derive(Clone, PartialEq, Eq, thiserror::Error)]
pub enum ValidationError {
    /// No operation with this `operationId` in the document.
    #[error("{api}: no operation has operationId `{operation_id}` (known: {})", known.join(", "))]
    UnknownOperation {
        /// Which document.
        api: Api,
        /// The operation asked for.
        operation_id: String,
        /// The operationIds the document does have.
        known: Vec<String>,
    },
    /// The status code is not one of the operation's documented responses.
    #[error(
        "{api}: operation `{operation_id}` does not document status {status} \
         (documented: {})",
        documented.join(", ")
    )]
    UndocumentedStatus {
        /// Which document.
        api: Api,
        /// The operation.
        operation_id: String,
        /// The status that was returned.
        status: u16,
        /// The response keys the spec documents (`"201"`, `"401"`, ...).
        documented: Vec<String>,
    },
    /// No `#/components/schemas/<name>` in the document.
    #[error("{api}: no schema `#/components/schemas/{name}` (known: {})", known.join(", "))]
    UnknownComponent {
        /// Which document.
        api: Api,
        /// The schema asked for.
        name: String,
        /// The component schema names the document does have.
        known: Vec<String>,
    },
    /// The body violates the schema and/or contains `null`s.
    #[error("{}", invalid_text(api, target, violations, body))]
    Invalid {
        /// Which document.
        api: Api,
        /// What was validated, e.g. ``response 201 of `create-quote` `` or
        /// ``component `quote` ``.
        target: String,
        /// Every problem found (schema violations first, then `null`s).
        violations: Vec<Violation>,
        /// The body, as compact JSON, shortened when long.
        body: String,
    },
    /// The spec could not be loaded or used.
    #[error(transparent)]
    Spec(#[from] SpecError),
}

impl fmt::Debug for ValidationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl ValidationError {
    /// The violations of an [`ValidationError::Invalid`] body; empty for the
    /// other variants.
    pub fn violations(&self) -> &[Violation] {
        match self {
            Self::Invalid { violations, .. } => violations,
            _ => &[],
        }
    }
}

fn invalid_text(api: &Api, target: &str, violations: &[Violation], body: &str) -> String {
    struct List<'a>(&'a [Violation]);
    impl fmt::Display for List<'_> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            for violation in self.0 {
                violation.write_indented(f, 0)?;
            }
            Ok(())
        }
    }
    let count = violations.len();
    let plural = if count == 1 { "" } else { "s" };
    format!(
        "{api}: {target} does not match the Open Payments spec ({count} violation{plural}):\n{}  body: {body}",
        List(violations)
    )
}
