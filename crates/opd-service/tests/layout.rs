//! The shape of the service layer (`opd-service`) and of the HTTP layer
//! (`opd-api`), checked: folders by business area or listener, short
//! files, no folder with a long flat list, and no import circle between
//! modules (two files that each need the other are one concept cut in
//! two). Functions are short there and in the `opd` crate too. See
//! ARCHITECTURE.md.

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

/// The longest a production function may be, from its `fn` line to its
/// closing brace: past this, a function does several things and reads
/// better as named steps.
const MAX_FN_LINES: usize = 80;

/// Functions allowed past `MAX_FN_LINES`, as `crate::module::name`, each
/// with why. Keep this short: split where splitting reads better.
const LONG_FUNCTIONS: &[(&str, &str)] = &[];

/// No production function of opd-service, opd-api or opd runs past
/// `MAX_FN_LINES`, but those named in `LONG_FUNCTIONS`; and each of those
/// still does (an exception no longer needed is removed).
#[test]
fn functions_are_short() {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    let checked = [
        ("opd_service", here.join("src")),
        ("opd_api", here.join("../opd-api/src")),
        ("opd", here.join("../opd/src")),
    ];
    let mut long = Vec::new();
    let mut excused = BTreeSet::new();
    for (krate, src) in &checked {
        for f in long_functions_in(src) {
            let name = format!("{krate}::{}", f.name);
            if LONG_FUNCTIONS.iter().any(|(n, _)| *n == name) {
                excused.insert(name);
            } else {
                long.push(format!("{name} ({}): {} lines", f.at, f.lines));
            }
        }
    }
    assert!(
        long.is_empty(),
        "functions longer than {MAX_FN_LINES} lines (split them, or name them in LONG_FUNCTIONS with why): {long:#?}"
    );
    let stale: Vec<_> = LONG_FUNCTIONS
        .iter()
        .filter(|(n, _)| !excused.contains(*n))
        .map(|(n, _)| n)
        .collect();
    assert!(stale.is_empty(), "exceptions no longer needed: {stale:#?}");
}

/// A function over `MAX_FN_LINES`.
struct LongFunction {
    /// `module::name`.
    name: String,
    /// `file:line` of its `fn`.
    at: String,
    lines: usize,
}

/// The functions of a crate's sources longer than `MAX_FN_LINES`, tests
/// left out: `#[cfg(test)]` items, the files of `#[cfg(test)] mod x;`,
/// and `tests` folders.
fn long_functions_in(src: &Path) -> Vec<LongFunction> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    files.retain(|f| {
        let rel = f.strip_prefix(src).expect("under src");
        !rel.components().any(|c| c.as_os_str() == "tests")
    });
    let mut test_files = BTreeSet::new();
    let mut found = Vec::new();
    for file in &files {
        let code = masked(&std::fs::read_to_string(file).expect("readable"));
        let (test_spans, test_mods) = test_items(&code);
        for name in test_mods {
            test_files.extend(child_files(file, &name));
        }
        let module = module_of(src, file);
        for (name, start, end) in functions(&code) {
            if test_spans.iter().any(|s| s.contains(&start)) {
                continue;
            }
            let first = line_of(&code, start);
            let lines = line_of(&code, end) - first + 1;
            if lines > MAX_FN_LINES {
                let mut path = module.clone();
                path.push(name);
                found.push((
                    file.clone(),
                    LongFunction {
                        name: path.join("::"),
                        at: format!("{}:{first}", relative(src, file)),
                        lines,
                    },
                ));
            }
        }
    }
    found
        .into_iter()
        .filter(|(file, _)| !test_files.contains(file))
        .map(|(_, f)| f)
        .collect()
}

/// A file's path under its crate's `src`.
fn relative(src: &Path, file: &Path) -> String {
    file.strip_prefix(src)
        .expect("under src")
        .display()
        .to_string()
}

/// The source with comments and the insides of string and character
/// literals blanked (line breaks kept), so that its braces and keywords
/// can be read off the bytes.
fn masked(text: &str) -> Vec<u8> {
    let b = text.as_bytes();
    let mut out = b.to_vec();
    let blank = |out: &mut Vec<u8>, from: usize, to: usize| {
        for c in &mut out[from..to.min(b.len())] {
            if *c != b'\n' {
                *c = b' ';
            }
        }
    };
    let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    let mut i = 0;
    while i < b.len() {
        let next = b.get(i + 1).copied();
        let after_ident = i > 0 && ident(b[i - 1]);
        let end = match b[i] {
            b'/' if next == Some(b'/') => b[i..]
                .iter()
                .position(|c| *c == b'\n')
                .map_or(b.len(), |n| i + n),
            b'/' if next == Some(b'*') => block_comment_end(b, i),
            b'"' => string_end(b, i + 1),
            b'r' if !after_ident || (i > 1 && b[i - 1] == b'b' && !ident(b[i - 2])) => {
                match raw_string_end(b, i + 1) {
                    Some(end) => end,
                    None => {
                        i += 1;
                        continue;
                    }
                }
            }
            b'\'' => match char_end(text, i) {
                Some(end) => end,
                None => {
                    i += 1;
                    continue;
                }
            },
            _ => {
                i += 1;
                continue;
            }
        };
        blank(&mut out, i, end);
        i = end.max(i + 1);
    }
    out
}

/// The end of a (nestable) block comment starting at `i`.
fn block_comment_end(b: &[u8], mut i: usize) -> usize {
    let mut depth = 0;
    while i + 1 < b.len() {
        match (b[i], b[i + 1]) {
            (b'/', b'*') => {
                depth += 1;
                i += 2;
            }
            (b'*', b'/') => {
                depth -= 1;
                i += 2;
                if depth == 0 {
                    return i;
                }
            }
            _ => i += 1,
        }
    }
    b.len()
}

/// The end (past the closing quote) of a string whose contents start at
/// `i`.
fn string_end(b: &[u8], mut i: usize) -> usize {
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'"' => return i + 1,
            _ => i += 1,
        }
    }
    b.len()
}

/// The end of a raw string `r#"…"#` whose hashes start at `i`, if one
/// starts there (and not a raw identifier such as `r#type`).
fn raw_string_end(b: &[u8], i: usize) -> Option<usize> {
    let hashes = b[i..].iter().take_while(|c| **c == b'#').count();
    if b.get(i + hashes) != Some(&b'"') {
        return None;
    }
    let close: Vec<u8> = std::iter::once(b'"')
        .chain(std::iter::repeat_n(b'#', hashes))
        .collect();
    let body = i + hashes + 1;
    Some(
        b[body..]
            .windows(close.len())
            .position(|w| w == close.as_slice())
            .map_or(b.len(), |n| body + n + close.len()),
    )
}

/// The end of a character literal starting at `i`, if one starts there
/// (and not a lifetime such as `'a`).
fn char_end(text: &str, i: usize) -> Option<usize> {
    let b = text.as_bytes();
    if b.get(i + 1) == Some(&b'\\') {
        return b[i + 2..]
            .iter()
            .position(|c| *c == b'\'')
            .map(|n| i + 2 + n + 1);
    }
    let c = text.get(i + 1..)?.chars().next()?;
    let close = i + 1 + c.len_utf8();
    (b.get(close) == Some(&b'\'')).then_some(close + 1)
}

/// Where an item starting at `i` ends: past its closing brace if it has a
/// body, or past its `;`; and whether it has a body.
fn item_end(code: &[u8], mut i: usize) -> (usize, bool) {
    let mut depth = 0usize;
    while i < code.len() {
        match code[i] {
            b'(' | b'[' => depth += 1,
            b')' | b']' => depth = depth.saturating_sub(1),
            b';' if depth == 0 => return (i + 1, false),
            b'{' if depth == 0 => return (matching_brace(code, i) + 1, true),
            _ => {}
        }
        i += 1;
    }
    (code.len(), false)
}

/// The position of the brace closing the one at `open`.
fn matching_brace(code: &[u8], open: usize) -> usize {
    let mut depth = 0usize;
    for (i, c) in code.iter().enumerate().skip(open) {
        match c {
            b'{' => depth += 1,
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    return i;
                }
            }
            _ => {}
        }
    }
    code.len() - 1
}

/// The spans of `#[cfg(test)]` items with a body, and the names of the
/// `#[cfg(test)] mod x;` declared in files of their own.
fn test_items(code: &[u8]) -> (Vec<std::ops::Range<usize>>, Vec<String>) {
    let attribute = b"#[cfg(test)]";
    let mut spans = Vec::new();
    let mut files = Vec::new();
    for at in code
        .windows(attribute.len())
        .enumerate()
        .filter(|(_, w)| *w == attribute)
        .map(|(i, _)| i)
    {
        let (end, body) = item_end(code, at + attribute.len());
        if body {
            spans.push(at..end);
            continue;
        }
        let item = String::from_utf8_lossy(&code[at + attribute.len()..end]);
        if let Some(name) = item.trim().strip_prefix("mod ") {
            files.push(name.trim_end_matches(';').trim().to_owned());
        }
    }
    (spans, files)
}

/// The files a module `name` declared in `file` may live in.
fn child_files(file: &Path, name: &str) -> [PathBuf; 2] {
    let dir = file.parent().expect("a folder");
    let stem = file.file_stem().expect("a name").to_string_lossy();
    let dir = if ["mod", "lib", "main"].contains(&stem.as_ref()) {
        dir.to_path_buf()
    } else {
        dir.join(stem.as_ref())
    };
    [
        dir.join(format!("{name}.rs")),
        dir.join(name).join("mod.rs"),
    ]
}

/// The functions with a body: name, position of `fn`, position of the
/// closing brace. Nested functions are counted too.
fn functions(code: &[u8]) -> Vec<(String, usize, usize)> {
    let ident = |c: &u8| c.is_ascii_alphanumeric() || *c == b'_';
    let mut found = Vec::new();
    for i in 0..code.len().saturating_sub(3) {
        let keyword = &code[i..i + 3] == b"fn " && (i == 0 || !ident(&code[i - 1]));
        if !keyword {
            continue;
        }
        let rest = &code[i + 3..];
        let skip = rest.iter().take_while(|c| c.is_ascii_whitespace()).count();
        let name: String = rest[skip..]
            .iter()
            .take_while(|c| ident(c))
            .map(|c| char::from(*c))
            .collect();
        if name.is_empty() {
            continue;
        }
        let (end, body) = item_end(code, i + 3 + skip + name.len());
        if body {
            found.push((name, i, end - 1));
        }
    }
    found
}

/// The 1-based line of a position.
fn line_of(code: &[u8], at: usize) -> usize {
    code[..at].iter().filter(|c| **c == b'\n').count() + 1
}

/// The scanner reads past what would trip it: braces in strings, chars
/// and comments, lifetimes, raw strings, declarations without a body,
/// and unit tests.
#[test]
fn the_function_scanner_reads_rust() {
    let source = r####"
fn short() { let s = "}}}"; let c = '}'; let r = r#"}"#; }
// fn commented() {
trait T { fn declared(&self) -> [u8; 2]; }
fn with_lifetime<'a>(x: &'a str) -> &'a str {
    /* } */
    x
}
#[cfg(test)]
mod tests {
    fn ignored() {}
}
"####;
    let code = masked(source);
    let names: Vec<_> = functions(&code).into_iter().map(|(n, _, _)| n).collect();
    assert_eq!(names, ["short", "with_lifetime", "ignored"]);
    let (spans, _) = test_items(&code);
    let f = functions(&code);
    assert_eq!(line_of(&code, f[1].1), 5);
    assert_eq!(line_of(&code, f[1].2), 8);
    assert!(spans[0].contains(&f[2].1));
}
