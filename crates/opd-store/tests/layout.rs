//! The shape of the store (`opd-store/src`), checked: folders by area
//! (mirroring the service's), short files and functions, no folder with a
//! long flat list, a module doc on every file, no import circle between
//! modules (two files that each need the other are one concept cut in
//! two), and areas that use only those below them. See ARCHITECTURE.md
//! ("The store").
//!
//! Sources are read as text: comments and string literals are blanked out
//! first (a doc link or an SQL string may name anything), and unit tests
//! (`#[cfg(test)] mod tests` at the end of a file, or a `tests.rs`) are
//! left out.

#![expect(clippy::expect_used, reason = "tests fail loudly by design")]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

const MAX_LINES: usize = 500;
const MAX_FILES_PER_FOLDER: usize = 12;
const MAX_FUNCTION_LINES: usize = 80;

/// Functions allowed to be longer than [`MAX_FUNCTION_LINES`], each with
/// why (file under `src`, function name, why).
const LONG_FUNCTIONS: &[(&str, &str, &str)] = &[];

/// The areas, each with the areas it may use (besides itself, the crate
/// root and `platform`, which every area stands on). The order is the
/// service's: the areas below serve those above and never call them.
const AREAS: &[(&str, &[&str])] = &[
    ("platform", &[]),
    ("ledger", &[]),
    ("access", &[]),
    ("tenants", &[]),
    ("wallets", &[]),
    ("grants", &["access"]),
    ("interledger", &["ledger"]),
    ("payments", &["ledger", "access", "interledger"]),
    (
        "operator",
        &["payments", "grants", "interledger", "ledger", "wallets"],
    ),
];

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
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

fn all_files() -> Vec<PathBuf> {
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    files.sort();
    files
}

fn relative(file: &Path) -> String {
    let rel = file.strip_prefix(src()).expect("under src");
    rel.to_string_lossy().replace('\\', "/")
}

/// The module path of a file: `payments/outgoing/mod.rs` is
/// `payments::outgoing`, `lib.rs` is the empty path.
fn module_of(file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src()).expect("under src");
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

/// `text` with every comment and the inside of every string and character
/// literal replaced by spaces (line breaks kept, so lines still count).
fn blank_comments_and_strings(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let blank = |c: char| if c == '\n' { '\n' } else { ' ' };
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                out.push(' ');
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    out.push_str("  ");
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    out.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    out.push(blank(chars[i]));
                    i += 1;
                }
            }
        } else if c == 'r' && (next == Some('"') || next == Some('#')) && !ident_before(&chars, i) {
            // A raw string: r"..." or r#"..."#.
            let mut hashes = 0;
            let mut j = i + 1;
            while chars.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if chars.get(j) != Some(&'"') {
                out.push(c);
                i += 1;
                continue;
            }
            out.push('"');
            i = j + 1;
            while i < chars.len() {
                let closes =
                    chars[i] == '"' && (1..=hashes).all(|k| chars.get(i + k) == Some(&'#'));
                if closes {
                    out.push('"');
                    i += 1 + hashes;
                    break;
                }
                out.push(blank(chars[i]));
                i += 1;
            }
        } else if c == '"' {
            out.push('"');
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                if chars[i] == '\\' {
                    out.push(' ');
                    i += 1;
                }
                if let Some(&ch) = chars.get(i) {
                    out.push(blank(ch));
                }
                i += 1;
            }
            out.push('"');
            i += 1;
        } else if c == '\'' {
            // A character literal ('x', '\n', '{'), or a lifetime ('a).
            let end = match next {
                Some('\\') => (i + 2..chars.len()).find(|&k| chars[k] == '\''),
                Some(_) if chars.get(i + 2) == Some(&'\'') => Some(i + 2),
                _ => None,
            };
            match end {
                Some(end) => {
                    out.push('\'');
                    out.extend(std::iter::repeat_n(' ', end - i - 1));
                    out.push('\'');
                    i = end + 1;
                }
                None => {
                    out.push(c);
                    i += 1;
                }
            }
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

fn ident_before(chars: &[char], i: usize) -> bool {
    i > 0 && is_ident(chars[i - 1])
}

/// The code of a file: comments and strings blanked, unit tests left out
/// (a file of them, `tests.rs`, has no code).
fn code(file: &Path) -> String {
    if file.file_name().is_some_and(|n| n == "tests.rs") {
        return String::new();
    }
    let text = std::fs::read_to_string(file).expect("readable");
    let text = match text.find("#[cfg(test)]\nmod tests") {
        Some(i) => &text[..i],
        None => &text,
    };
    blank_comments_and_strings(text)
}

/// The paths a `use` tree or path starting at `rest` names (after its
/// `crate::` or `super::`): `a::{b, c::{d, e}}` names `a::b`, `a::c::d`
/// and `a::c::e`.
fn path_tree(rest: &str) -> Vec<Vec<String>> {
    fn tree(s: &[char], i: &mut usize, prefix: Vec<String>, out: &mut Vec<Vec<String>>) {
        let mut path = prefix;
        loop {
            while s.get(*i).is_some_and(|c| c.is_whitespace()) {
                *i += 1;
            }
            if s.get(*i) == Some(&'{') {
                *i += 1;
                loop {
                    tree(s, i, path.clone(), out);
                    while s.get(*i).is_some_and(|c| c.is_whitespace()) {
                        *i += 1;
                    }
                    match s.get(*i) {
                        Some(',') => *i += 1,
                        Some('}') => {
                            *i += 1;
                            return;
                        }
                        _ => return,
                    }
                    while s.get(*i).is_some_and(|c| c.is_whitespace()) {
                        *i += 1;
                    }
                    if s.get(*i) == Some(&'}') {
                        *i += 1;
                        return;
                    }
                }
            }
            let start = *i;
            while s.get(*i).is_some_and(|c| is_ident(*c)) {
                *i += 1;
            }
            if *i == start {
                out.push(path);
                return;
            }
            path.push(s[start..*i].iter().collect());
            if s.get(*i) == Some(&':') && s.get(*i + 1) == Some(&':') {
                *i += 2;
            } else {
                out.push(path);
                return;
            }
        }
    }
    let chars: Vec<char> = rest.chars().collect();
    let mut out = Vec::new();
    tree(&chars, &mut 0, Vec::new(), &mut out);
    out
}

/// The modules a file names: `crate::a::b::c`, `crate::{a, b::c}` and
/// `super::x` (resolved against the file's own module), each as its
/// longest prefix that is a known module.
fn uses(file: &Path, modules: &BTreeSet<Vec<String>>) -> BTreeSet<Vec<String>> {
    let own = module_of(file);
    let text = code(file);
    let mut found = BTreeSet::new();
    for (i, word) in text
        .match_indices("crate::")
        .chain(text.match_indices("super::"))
    {
        if i > 0 && text[..i].ends_with(is_ident) {
            continue;
        }
        let base = if word == "crate::" {
            Vec::new()
        } else {
            // `mod.rs` is its folder's module: `super` is the parent.
            let mut p = own.clone();
            p.pop();
            p
        };
        for tail in path_tree(&text[i + word.len()..]) {
            let mut path = base.clone();
            let mut best = None;
            for s in tail {
                if s == "super" {
                    path.pop();
                    continue;
                }
                path.push(s);
                if modules.contains(&path) {
                    best = Some(path.clone());
                }
            }
            if let Some(m) = best.filter(|m| *m != own) {
                found.insert(m);
            }
        }
    }
    found
}

fn graph() -> BTreeMap<Vec<String>, BTreeSet<Vec<String>>> {
    let files = all_files();
    let modules: BTreeSet<Vec<String>> = files.iter().map(|f| module_of(f)).collect();
    files
        .iter()
        .map(|f| (module_of(f), uses(f, &modules)))
        .collect()
}

#[test]
fn files_are_short_and_folders_small() {
    let mut per_folder: BTreeMap<PathBuf, usize> = BTreeMap::new();
    let mut long = Vec::new();
    for f in all_files() {
        let lines = std::fs::read_to_string(&f)
            .expect("readable")
            .lines()
            .count();
        if lines > MAX_LINES {
            long.push(format!("{} has {lines} lines", relative(&f)));
        }
        *per_folder
            .entry(f.parent().expect("a folder").to_path_buf())
            .or_default() += 1;
    }
    assert!(long.is_empty(), "files over {MAX_LINES} lines: {long:#?}");
    for (folder, n) in per_folder {
        assert!(
            n <= MAX_FILES_PER_FOLDER,
            "{} holds {n} files",
            folder.display()
        );
    }
}

#[test]
fn every_file_says_what_it_holds() {
    for f in all_files() {
        let text = std::fs::read_to_string(&f).expect("readable");
        assert!(
            text.starts_with("//!") || text.starts_with("#![doc"),
            "{} does not start with a module doc (`//!`)",
            relative(&f)
        );
    }
}

/// The functions of `code` (blanked, see [`code`]) longer than `max`
/// lines, from their `fn` line to their closing brace, as (name, lines).
/// A declaration without a body (a trait's) is no function here.
fn long_functions(code: &str, max: usize) -> Vec<(String, usize)> {
    let chars: Vec<char> = code.chars().collect();
    let line_at = |i: usize| chars[..i].iter().filter(|c| **c == '\n').count();
    let mut found = Vec::new();
    let mut i = 0;
    while i + 2 < chars.len() {
        let is_fn = chars[i] == 'f'
            && chars[i + 1] == 'n'
            && chars[i + 2].is_whitespace()
            && !ident_before(&chars, i);
        if !is_fn {
            i += 1;
            continue;
        }
        let mut j = i + 2;
        while chars.get(j).is_some_and(|c| c.is_whitespace()) {
            j += 1;
        }
        let name: String = chars[j..].iter().take_while(|c| is_ident(**c)).collect();
        // The body starts at the first `{` outside parentheses and
        // brackets; a `;` there first ends a declaration.
        let mut depth = 0i32;
        let mut body = None;
        while let Some(&c) = chars.get(j) {
            match c {
                '(' | '[' => depth += 1,
                ')' | ']' => depth -= 1,
                ';' if depth == 0 => break,
                '{' if depth == 0 => {
                    body = Some(j);
                    break;
                }
                _ => {}
            }
            j += 1;
        }
        if let Some(open) = body {
            let mut braces = 0i32;
            let mut k = open;
            while let Some(&c) = chars.get(k) {
                match c {
                    '{' => braces += 1,
                    '}' => braces -= 1,
                    _ => {}
                }
                if braces == 0 {
                    break;
                }
                k += 1;
            }
            let lines = line_at(k.min(chars.len() - 1)) - line_at(i) + 1;
            if lines > max {
                found.push((name, lines));
            }
        }
        i += 2;
    }
    found
}

#[test]
fn production_functions_are_short() {
    let mut long = Vec::new();
    for f in all_files() {
        let file = relative(&f);
        for (name, lines) in long_functions(&code(&f), MAX_FUNCTION_LINES) {
            let excused = LONG_FUNCTIONS
                .iter()
                .any(|(ef, en, _)| *ef == file && *en == name);
            if !excused {
                long.push(format!("{file}: fn {name} has {lines} lines"));
            }
        }
    }
    assert!(
        long.is_empty(),
        "functions over {MAX_FUNCTION_LINES} lines: {long:#?}"
    );
}

#[test]
fn the_scanners_read_rust_as_written() {
    let text = "fn a() {\n    let s = \"}\";\n    let c = '{'; // }\n}\n\
                fn b<'x>(v: [u8; 2]) -> &'x str {\n\n\n\n}\ntrait T { fn c(&self); }\n";
    let code = blank_comments_and_strings(text);
    assert_eq!(code.lines().count(), text.lines().count());
    assert_eq!(long_functions(&code, 4), vec![("b".to_owned(), 5)]);
    assert_eq!(long_functions(&code, 5), vec![]);
    assert_eq!(
        path_tree("a::{b, c::{d, e}}, f"),
        vec![
            vec!["a".to_owned(), "b".to_owned()],
            vec!["a".to_owned(), "c".to_owned(), "d".to_owned()],
            vec!["a".to_owned(), "c".to_owned(), "e".to_owned()],
        ]
    );
}

#[test]
fn no_module_imports_one_that_imports_it_back() {
    let graph = graph();
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
    // The root (`lib.rs`: `SqlStore`, `StoreResult`) is what every module
    // takes, and is not followed.
    assert!(circles.is_empty(), "import circles: {circles:#?}");
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

#[test]
fn areas_use_only_those_below_them() {
    let graph = graph();
    let mut wrong = Vec::new();
    for (from, tos) in &graph {
        let Some(area) = from.first() else {
            continue; // the root declares every area
        };
        let (_, allowed) = AREAS
            .iter()
            .find(|(a, _)| a == area)
            .unwrap_or_else(|| panic!("{area} is in no area of AREAS"));
        for to in tos {
            let Some(used) = to.first() else { continue };
            let fine = used == area || used == "platform" || allowed.contains(&used.as_str());
            if !fine {
                wrong.push(format!("{} uses {}", from.join("::"), to.join("::")));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "uses against the areas' order: {wrong:#?}"
    );
}
