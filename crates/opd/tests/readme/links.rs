//! The README stays a page a newcomer finishes, and the documentation's
//! links lead somewhere: `README.md` has at most [`README_MAX_LINES`]
//! lines, and every relative link of the repository's documentation (the
//! Markdown files at its root, in `docs/` and the crates' READMEs) names a
//! file or folder that exists; one with a `#fragment` into a Markdown
//! file (or into its own) names a heading of that file, by GitHub's slug
//! rules. Links inside code (fenced blocks, code spans) are not links and
//! are not checked; links with a scheme (`https:`, `mailto:`) are not
//! relative. No fenced code block of that documentation is empty.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// The most lines the README may have.
const README_MAX_LINES: usize = 300;

/// The repository's root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

/// The `*.md` files directly in `dir`, sorted.
fn markdown_in(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md") && p.is_file())
        .collect();
    files.sort();
    files
}

/// The documentation whose links are checked: the Markdown files at the
/// root and in `docs/`, and each crate's README.
fn documents() -> Vec<PathBuf> {
    let root = root();
    let mut docs = markdown_in(&root);
    docs.extend(markdown_in(&root.join("docs")));
    let mut crates: Vec<PathBuf> = std::fs::read_dir(root.join("crates"))
        .unwrap()
        .map(|entry| entry.unwrap().path().join("README.md"))
        .filter(|p| p.is_file())
        .collect();
    crates.sort();
    docs.extend(crates);
    docs
}

/// `text` with its fenced code blocks' lines left empty (line numbers and
/// paragraphs kept), and a list of its headings (ATX, outside code).
fn without_fences(text: &str) -> (String, Vec<String>) {
    let mut prose = String::new();
    let mut headings = Vec::new();
    // The open fence: its character and length.
    let mut fence: Option<(char, usize)> = None;
    for line in text.lines() {
        let trimmed = line.trim_start();
        let marker = trimmed.chars().next().filter(|c| *c == '`' || *c == '~');
        let run = marker.map_or(0, |c| trimmed.chars().take_while(|x| *x == c).count());
        match (fence, marker) {
            (None, Some(c)) if run >= 3 => fence = Some((c, run)),
            (Some((open, len)), Some(c))
                if c == open && run >= len && trimmed[run..].trim().is_empty() =>
            {
                fence = None;
            }
            (Some(_), _) => {}
            (None, _) => {
                if let Some(heading) = atx_heading(line) {
                    headings.push(heading);
                }
                prose.push_str(line);
            }
        }
        prose.push('\n');
    }
    (prose, headings)
}

/// The text of `line` when it is an ATX heading (`## Text`).
fn atx_heading(line: &str) -> Option<String> {
    let hashes = line.chars().take_while(|c| *c == '#').count();
    let rest = &line[hashes..];
    if !(1..=6).contains(&hashes) || !(rest.is_empty() || rest.starts_with(' ')) {
        return None;
    }
    let text = rest.trim().trim_end_matches('#').trim_end();
    Some(text.to_owned())
}

/// `paragraph` with its code spans blanked: a run of backticks opens one,
/// the next run of the same length closes it; an unclosed run is text.
fn without_code_spans(paragraph: &str) -> String {
    let chars: Vec<char> = paragraph.chars().collect();
    let run_at = |i: usize| chars[i..].iter().take_while(|c| **c == '`').count();
    let mut out = String::new();
    let mut i = 0;
    while i < chars.len() {
        if chars[i] != '`' {
            out.push(chars[i]);
            i += 1;
            continue;
        }
        let len = run_at(i);
        let mut j = i + len;
        let close = loop {
            match chars[j..].iter().position(|c| *c == '`') {
                None => break None,
                Some(k) if run_at(j + k) == len => break Some(j + k),
                Some(k) => j += k + run_at(j + k),
            }
        };
        match close {
            Some(end) => {
                out.push(' ');
                i = end + len;
            }
            None => {
                out.extend(&chars[i..i + len]);
                i += len;
            }
        }
    }
    out
}

/// The targets of the links of `text`: inline (`[text](target)`, images
/// too) and reference definitions (`[label]: target`), outside code.
fn link_targets(text: &str) -> Vec<String> {
    let (prose, _) = without_fences(text);
    let mut targets = Vec::new();
    for paragraph in prose.split("\n\n") {
        let prose = without_code_spans(paragraph);
        for (i, _) in prose.match_indices("](") {
            let rest = &prose[i + 2..];
            let end = rest.find([')', ' ', '\n']).unwrap_or(rest.len());
            targets.push(rest[..end].trim_matches(['<', '>']).to_owned());
        }
        for line in prose.lines() {
            let line = line.trim_start();
            if let Some((label, target)) = line.split_once("]:") {
                if label.starts_with('[') && !label.contains(']') {
                    let target = target.split_whitespace().next().unwrap_or_default();
                    targets.push(target.to_owned());
                }
            }
        }
    }
    targets
}

/// GitHub's anchor for a heading: lowercase, spaces to `-`, punctuation
/// other than `-` and `_` dropped.
fn slug(heading: &str) -> String {
    heading
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            '-' | '_' => Some(c),
            c if c.is_alphanumeric() => Some(c),
            _ => None,
        })
        .collect()
}

/// The anchors of a Markdown text's headings; a repeated one gets `-1`,
/// `-2`, ... as on GitHub.
fn anchors(text: &str) -> HashSet<String> {
    let (_, headings) = without_fences(text);
    let mut seen = HashSet::new();
    for heading in headings {
        let base = slug(&heading);
        let mut anchor = base.clone();
        let mut n = 0;
        while seen.contains(&anchor) {
            n += 1;
            anchor = format!("{base}-{n}");
        }
        seen.insert(anchor);
    }
    seen
}

/// Whether `target` names a scheme (`https:`, `mailto:`): not relative.
fn has_scheme(target: &str) -> bool {
    target.split_once(':').is_some_and(|(scheme, _)| {
        !scheme.is_empty()
            && scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
    })
}

/// What is wrong with the relative links of the Markdown file `doc`, one
/// line each (`root` is where a link starting with `/` begins).
fn broken_links(doc: &Path, root: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(doc).unwrap_or_else(|e| panic!("{}: {e}", doc.display()));
    let shown = doc.strip_prefix(root).unwrap_or(doc).display();
    let mut problems = Vec::new();
    for target in link_targets(&text) {
        if target.is_empty() || has_scheme(&target) {
            continue;
        }
        let (path, fragment) = match target.split_once('#') {
            Some((path, fragment)) => (path, Some(fragment)),
            None => (target.as_str(), None),
        };
        let file = match path {
            "" => doc.to_path_buf(),
            absolute if absolute.starts_with('/') => root.join(&absolute[1..]),
            relative => doc.parent().unwrap().join(relative),
        };
        if !file.exists() {
            problems.push(format!("{shown}: {target}: no such file or folder"));
            continue;
        }
        let Some(fragment) = fragment else { continue };
        if file.extension().is_none_or(|e| e != "md") || file.is_dir() {
            continue;
        }
        let heading_text = std::fs::read_to_string(&file).unwrap();
        if !anchors(&heading_text).contains(fragment) {
            problems.push(format!("{shown}: {target}: no heading has that anchor"));
        }
    }
    problems
}

/// The lines (from 1) where an empty fenced code block of `text` opens.
fn empty_code_blocks(text: &str) -> Vec<usize> {
    let mut empty = Vec::new();
    // Where the open block began, and whether it has content yet.
    let mut open: Option<(usize, bool)> = None;
    for (i, line) in text.lines().enumerate() {
        let fence = line.trim_start().starts_with("```") || line.trim_start().starts_with("~~~");
        open = match (open, fence) {
            (None, true) => Some((i + 1, false)),
            (Some((start, false)), true) => {
                empty.push(start);
                None
            }
            (Some(_), true) => None,
            (Some((start, seen)), false) => Some((start, seen || !line.trim().is_empty())),
            (None, false) => None,
        };
    }
    empty
}

#[test]
fn no_code_block_of_the_documentation_is_empty() {
    let root = root();
    let found: Vec<String> = documents()
        .iter()
        .flat_map(|doc| {
            let text = std::fs::read_to_string(doc).unwrap();
            let shown = doc.strip_prefix(&root).unwrap_or(doc).display().to_string();
            empty_code_blocks(&text)
                .into_iter()
                .map(move |line| format!("{shown}:{line}"))
        })
        .collect();
    assert!(found.is_empty(), "empty code blocks at {found:?}");
    assert_eq!(
        empty_code_blocks("a\n\n```sh\n```\n\n```sh\nls\n```\n"),
        [3]
    );
}

#[test]
fn the_readme_is_at_most_300_lines() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let lines = readme.lines().count();
    assert!(
        lines <= README_MAX_LINES,
        "README.md has {lines} lines, more than {README_MAX_LINES}: move the details to a guide \
         in docs/ and link it"
    );
}

#[test]
fn every_relative_link_of_the_documentation_leads_somewhere() {
    let root = root();
    let docs = documents();
    assert!(
        docs.iter().any(|d| d.ends_with("docs/operating.md")),
        "{docs:?}"
    );
    let problems: Vec<String> = docs.iter().flat_map(|d| broken_links(d, &root)).collect();
    assert!(
        problems.is_empty(),
        "broken links (relative to the file they are in; anchors by GitHub's slug rules):\n{}",
        problems.join("\n")
    );
}

#[test]
fn anchors_follow_github_slugs() {
    assert_eq!(
        slug("Peering two opd servers, step by step"),
        "peering-two-opd-servers-step-by-step"
    );
    assert_eq!(
        slug("Replays are answered, not refused"),
        "replays-are-answered-not-refused"
    );
    assert_eq!(
        slug("The service layer (`crates/opd-service/src`)"),
        "the-service-layer-cratesopd-servicesrc"
    );
    assert_eq!(slug("2026-11-25: grant_limits"), "2026-11-25-grant_limits");
    let text = "# A\n\n```sh\n# not a heading\n```\n\n## A\n\n### Ünïcode café\n";
    let found = anchors(text);
    let expected: HashSet<String> = ["a", "a-1", "ünïcode-café"].map(String::from).into();
    assert_eq!(found, expected);
}

#[test]
fn a_missing_file_or_heading_is_reported_and_code_is_not_a_link() {
    let dir = tempfile::tempdir().unwrap();
    let guide = dir.path().join("guide.md");
    std::fs::write(&guide, "# Guide\n\n## Some section\n").unwrap();
    let doc = dir.path().join("doc.md");
    let text = "# Doc\n\nSee [the guide](guide.md), [its section](guide.md#some-section),\n\
        [below](#doc), [the web](https://example.com/x.md#nowhere), and\n\
        [a section it lacks](guide.md#other-section) and [a file](missing.md).\n\n\
        ```md\n[in a fence](fenced.md)\n```\n\nA code span: `[x](spanned.md)`.\n\n\
        [ref]: missing-too.md\n";
    std::fs::write(&doc, text).unwrap();
    let problems = broken_links(&doc, dir.path());
    assert_eq!(
        problems,
        [
            "doc.md: guide.md#other-section: no heading has that anchor",
            "doc.md: missing.md: no such file or folder",
            "doc.md: missing-too.md: no such file or folder",
        ]
    );
}
