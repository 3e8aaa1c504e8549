//! `docs/errors.md` walked against the sources: every code the listeners
//! can answer is in its tables, every code in its tables is one the
//! sources can answer, and every description marked **exact** (what
//! deployed clients match) is written in the sources as documented, so the
//! table a client developer reads is the one the server keeps.

#![expect(clippy::unwrap_used, reason = "tests fail loudly by design")]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The crates whose code can end up in an error answer.
const SOURCES: &[&str] = &[
    "opd-api/src",
    "opd-service/src",
    "opd/src",
    "opd-gnap/src",
    "opd-ilp/src",
];

fn crates_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

fn sources() -> String {
    let mut files = Vec::new();
    for dir in SOURCES {
        rust_files(&crates_dir().join(dir), &mut files);
    }
    files
        .iter()
        .map(|f| std::fs::read_to_string(f).unwrap())
        .collect::<Vec<_>>()
        .join("\n")
}

fn errors_md() -> String {
    std::fs::read_to_string(crates_dir().join("../docs/errors.md")).unwrap()
}

/// The codes of the tables' rows: `| \`code\` | ...`.
fn documented(doc: &str) -> BTreeSet<String> {
    doc.lines()
        .filter_map(|l| l.strip_prefix("| `"))
        .filter_map(|l| l.split_once('`').map(|(code, _)| code.to_owned()))
        .collect()
}

/// The `"snake_case"` literal at the start of `text` (after spaces and
/// line breaks), if any.
fn literal(text: &str) -> Option<String> {
    let rest = text.trim_start().strip_prefix('"')?;
    let code = &rest[..rest.find('"')?];
    let snake = !code.is_empty()
        && code
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
    snake.then(|| code.to_owned())
}

/// Codes as the sources write them: `ApiError::new(StatusCode::X, "code"`,
/// the service's `code: "code"` and the mapping's `bad("code"`.
fn answered(src: &str) -> BTreeSet<String> {
    let after = |marker: &'static str| {
        src.match_indices(marker)
            .map(move |(at, _)| &src[at + marker.len()..])
    };
    let status_then_code = after("StatusCode::").filter_map(|rest| {
        let name_end = rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))?;
        literal(rest[name_end..].trim_start().strip_prefix(',')?)
    });
    let mut codes: BTreeSet<String> = status_then_code.collect();
    codes.extend(after("code: ").filter_map(literal));
    codes.extend(after("bad(").filter_map(literal));
    codes
}

#[test]
fn every_code_answered_is_documented_and_every_documented_code_is_answered() {
    let (doc, src) = (errors_md(), sources());
    let documented = documented(&doc);
    let answered = answered(&src);
    assert!(
        answered.len() > 30,
        "the walk finds the codes: {answered:?}"
    );
    let undocumented: Vec<_> = answered.difference(&documented).collect();
    assert!(
        undocumented.is_empty(),
        "answered but not in docs/errors.md: {undocumented:?}"
    );
    // Interledger reject codes (`F02`) are names in the sources, not
    // string literals.
    let unknown: Vec<_> = documented
        .iter()
        .filter(|code| !src.contains(&format!("\"{code}\"")))
        .filter(|code| literal(&format!("\"{code}\"")).is_some() || !src.contains(code.as_str()))
        .collect();
    assert!(
        unknown.is_empty(),
        "in docs/errors.md but never answered: {unknown:?}"
    );
}

#[test]
fn every_exact_description_is_the_one_the_sources_answer() {
    let (doc, src) = (errors_md(), sources());
    let mut exact = 0;
    for line in doc.lines().filter(|l| l.starts_with("| `")) {
        let Some((_, after)) = line.split_once("Description **exact**: `") else {
            continue;
        };
        let description = after.split('`').next().unwrap();
        exact += 1;
        assert!(
            src.contains(&format!("\"{description}\"")),
            "{line}: the sources never answer {description:?}"
        );
    }
    assert!(exact >= 3, "the exact descriptions are found ({exact})");
}
