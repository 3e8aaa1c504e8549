//! The shape of the service layer (`opd-service`) and of the HTTP layer
//! (`opd-api`), checked: folders by business area or listener, short
//! files, no folder with a long flat list, and no import circle between
//! modules (two files that each need the other are one concept cut in
//! two). See ARCHITECTURE.md.

#![expect(clippy::expect_used, reason = "tests fail loudly by design")]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

const MAX_LINES: usize = 500;
const MAX_FILES_PER_FOLDER: usize = 12;

/// The checked crates' source folders.
fn crates() -> [PathBuf; 2] {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    [here.join("src"), here.join("../opd-api/src")]
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The module path of a file: `payments/outgoing/mod.rs` is
/// `payments::outgoing`, `lib.rs` is the empty path.
fn module_of(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).expect("under src");
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().expect("a file name");
    let stem = last.trim_end_matches(".rs");
    if stem != "mod" && stem != "lib" {
        parts.push(stem.to_owned());
    }
    parts
}

/// The code of a file without its comments and unit tests (tests may use
/// anything; a comment may mention anything).
fn code(file: &Path) -> String {
    let text = std::fs::read_to_string(file).expect("readable");
    let text = match text.find("#[cfg(test)]\nmod tests") {
        Some(i) => &text[..i],
        None => &text,
    };
    text.lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Module paths a file names: `crate::a::b::c` and `super::x` (resolved
/// against the file's own module), each as its longest prefix that is a
/// known module.
fn uses(src: &Path, file: &Path, modules: &BTreeSet<Vec<String>>) -> BTreeSet<Vec<String>> {
    let own = module_of(src, file);
    let text = code(file);
    let mut found = BTreeSet::new();
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == ':';
    for (i, _) in text
        .match_indices("crate::")
        .chain(text.match_indices("super::"))
    {
        if i > 0 && text[..i].ends_with(|c: char| c.is_ascii_alphanumeric() || c == '_') {
            continue;
        }
        let rest: String = text[i..].chars().take_while(|c| ident(*c)).collect();
        let mut segments = rest.split("::").filter(|s| !s.is_empty());
        let mut path = match segments.next() {
            Some("crate") => Vec::new(),
            Some("super") => {
                // `mod.rs` is its folder's module: `super` is the parent.
                let mut p = own.clone();
                p.pop();
                p
            }
            _ => continue,
        };
        let mut best = None;
        for s in segments {
            if s == "super" {
                path.pop();
                continue;
            }
            path.push(s.to_owned());
            if modules.contains(&path) {
                best = Some(path.clone());
            }
        }
        if let Some(m) = best {
            if m != own {
                found.insert(m);
            }
        }
    }
    found
}

#[test]
fn files_are_short_and_folders_small() {
    for src in crates() {
        files_are_short_and_folders_small_in(&src);
    }
}

fn files_are_short_and_folders_small_in(src: &Path) {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let mut per_folder: BTreeMap<PathBuf, usize> = BTreeMap::new();
    for f in &files {
        let lines = std::fs::read_to_string(f)
            .expect("readable")
            .lines()
            .count();
        assert!(lines <= MAX_LINES, "{} has {lines} lines", f.display());
        *per_folder
            .entry(f.parent().expect("a folder").to_path_buf())
            .or_default() += 1;
    }
    for (folder, n) in per_folder {
        assert!(
            n <= MAX_FILES_PER_FOLDER,
            "{} holds {n} files",
            folder.display()
        );
    }
}

#[test]
fn no_module_imports_one_that_imports_it_back() {
    for src in crates() {
        no_import_circle_in(&src);
    }
}

fn no_import_circle_in(src: &Path) {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let modules: BTreeSet<Vec<String>> = files.iter().map(|f| module_of(src, f)).collect();
    let graph: BTreeMap<Vec<String>, BTreeSet<Vec<String>>> = files
        .iter()
        .map(|f| (module_of(src, f), uses(src, f, &modules)))
        .collect();
    // A parent re-exporting or declaring its children is not a use, and a
    // child using its parent's shared helpers is the usual shape: only
    // circles between modules that are not ancestor and descendant count.
    let related = |a: &[String], b: &[String]| a.starts_with(b) || b.starts_with(a);
    let mut circles = Vec::new();
    for (from, tos) in &graph {
        for to in tos {
            if related(from, to) {
                continue;
            }
            if reaches(&graph, to, from, &related) {
                circles.push(format!("{} <-> {}", from.join("::"), to.join("::")));
            }
        }
    }
    // The root (`lib.rs`: `Services`) is what every module takes; the
    // platform modules that take `Services` are noted in ARCHITECTURE.md.
    assert!(
        circles.is_empty(),
        "import circles in {}: {circles:#?}",
        src.display()
    );
}

/// Whether `from` reaches `to` through unrelated modules.
fn reaches(
    graph: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>,
    from: &[String],
    to: &[String],
    related: &dyn Fn(&[String], &[String]) -> bool,
) -> bool {
    let mut seen = BTreeSet::new();
    let mut stack = vec![from.to_vec()];
    while let Some(m) = stack.pop() {
        if m == to {
            return true;
        }
        if !seen.insert(m.clone()) {
            continue;
        }
        for next in graph.get(&m).into_iter().flatten() {
            if !related(&m, next) && !next.is_empty() {
                stack.push(next.clone());
            }
        }
    }
    false
}

/// The platform modules stand on nothing business-specific: not on the
/// areas, and not on `Services` (the composition root).
#[test]
fn platform_modules_use_nothing_above_them() {
    uses_none(
        "platform",
        &[
            "Services",
            "crate::payments",
            "crate::interledger",
            "crate::access",
            "crate::grants",
            "crate::jobs",
            "crate::wallets",
            "crate::webhooks",
            "crate::ledger",
            "crate::pricing",
            "crate::operator",
        ],
    );
}

/// The areas' order (ARCHITECTURE.md): the Interledger and access areas
/// serve the payments area and never call it; the authorization server
/// calls neither.
#[test]
fn areas_call_downwards_only() {
    let rules: [(&str, &[&str]); 3] = [
        (
            "interledger",
            &["crate::payments", "crate::access", "crate::jobs"],
        ),
        (
            "access",
            &["crate::payments", "crate::interledger", "crate::jobs"],
        ),
        (
            "grants",
            &["crate::payments", "crate::interledger", "crate::jobs"],
        ),
    ];
    for (area, forbidden) in rules {
        uses_none(area, forbidden);
    }
}

/// Panics if any file of `area` (a folder of opd-service) names one of
/// `forbidden` outside comments and unit tests.
fn uses_none(area: &str, forbidden: &[&str]) {
    let mut files = Vec::new();
    rust_files(&crates()[0].join(area), &mut files);
    assert!(!files.is_empty(), "{area} has no files");
    for f in files {
        let text = code(&f);
        for word in forbidden {
            assert!(!text.contains(word), "{} uses {word}", f.display());
        }
    }
}
