//! Text that came from elsewhere (another server's names, asset codes,
//! URLs, error descriptions), made inert before a person reads it.
//!
//! A terminal obeys the characters it is given: an escape sequence in a
//! wallet's public name can hide every line after it, clear the screen,
//! move the cursor to overwrite what was said, or set the window title; a
//! newline fakes a line of its own; a right-to-left override reverses what
//! follows. The pages and the terminal show such characters the same way,
//! as their code point (`[U+001B]`, `[U+202E]`), so that what was sent
//! stays visible and nothing is obeyed:
//!
//! - [`Untrusted`] shows one value for a terminal: every control character
//!   (line breaks and tabs too: one value is one line) and every
//!   [`disguising`] character as its code point;
//! - [`lines`] is the last pass over a whole message about to be printed:
//!   the same, except the line breaks the message is made of;
//! - [`json`] makes serialized JSON inert without changing what it says:
//!   the characters serde leaves raw become JSON escapes (`\u202e`), which
//!   read back as the same text.

use std::fmt::{self, Write as _};

/// Whether `c` can disguise or take over text where line breaks and tabs
/// are harmless (a page): the C0 and C1 controls but line breaks and
/// tabs, DEL, the bidirectional marks, embeddings, overrides and isolates,
/// and other invisible format characters.
pub fn disguising(c: char) -> bool {
    matches!(c,
        '\u{0}'..='\u{8}' | '\u{b}' | '\u{c}' | '\u{e}'..='\u{1f}' | '\u{7f}'..='\u{9f}'
        | '\u{61c}' | '\u{200b}' | '\u{200e}' | '\u{200f}'
        | '\u{202a}'..='\u{202e}' | '\u{2060}'..='\u{2064}' | '\u{2066}'..='\u{2069}'
        | '\u{feff}')
}

/// Whether `c`, inside one value, must not reach a terminal as itself.
fn unsafe_in_value(c: char) -> bool {
    c.is_control() || disguising(c)
}

/// Writes `text` to `out` with every character `hidden` says as its code
/// point, `[U+XXXX]`.
fn write_shown(out: &mut impl fmt::Write, text: &str, hidden: fn(char) -> bool) -> fmt::Result {
    let mut rest = text;
    while let Some((at, c)) = rest.char_indices().find(|&(_, c)| hidden(c)) {
        out.write_str(&rest[..at])?;
        write!(out, "[U+{:04X}]", u32::from(c))?;
        rest = &rest[at + c.len_utf8()..];
    }
    out.write_str(rest)
}

/// One value from elsewhere, as a terminal may show it: `format!("{}",
/// Untrusted(name))`. Width and alignment are not applied.
#[derive(Debug, Clone, Copy)]
pub struct Untrusted<'a>(pub &'a str);

impl fmt::Display for Untrusted<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_shown(f, self.0, unsafe_in_value)
    }
}

/// A whole message about to be printed: every control character but the
/// line breaks it is made of, and every [`disguising`] one, as its code
/// point. The values in it should have gone through [`Untrusted`] already
/// (a newline inside one would otherwise still fake a line); this pass
/// catches what was not.
pub fn lines(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let _ = write_shown(&mut out, text, |c| c != '\n' && unsafe_in_value(c));
    out
}

/// Serialized JSON, inert on a terminal and meaning the same: serde
/// escapes the C0 controls already; DEL, the C1 controls and the
/// [`disguising`] format characters become `\uXXXX` escapes. Outside
/// strings JSON is ASCII, so every such character is inside a string,
/// where the escape reads back as the character itself.
pub fn json(serialized: &str) -> String {
    let mut out = String::with_capacity(serialized.len());
    for c in serialized.chars() {
        if disguising(c) {
            // Every disguising character is in the Basic Multilingual
            // Plane: one escape, no surrogate pair.
            let _ = write!(out, "\\u{:04x}", u32::from(c));
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_shows_controls_and_bidi_characters_as_code_points() {
        let shown = Untrusted("Bob\u{1b}[8m\u{1b}[2J\nPaid.\u{202e}x\u{9b}\t\r\u{7f}").to_string();
        assert_eq!(
            shown,
            "Bob[U+001B][8m[U+001B][2J[U+000A]Paid.[U+202E]x[U+009B][U+0009][U+000D][U+007F]"
        );
        assert_eq!(
            Untrusted("Café 🙂 12.34 USD").to_string(),
            "Café 🙂 12.34 USD"
        );
        assert_eq!(Untrusted("").to_string(), "");
    }

    #[test]
    fn a_message_keeps_its_own_line_breaks() {
        assert_eq!(
            lines("error: x\u{1b}[1A\n  reason: \u{2066}y\r"),
            "error: x[U+001B][1A\n  reason: [U+2066]y[U+000D]"
        );
    }

    #[test]
    fn json_stays_json_and_says_the_same() {
        let name = "Bob\u{202e}\u{9b}\u{1b}[8m\u{7f}\n\u{feff}é";
        let serialized = serde_json::json!({ "publicName": name, "k\u{2066}": 1 }).to_string();
        let inert = json(&serialized);
        assert!(
            inert.chars().all(|c| !c.is_control() && !disguising(c)),
            "{inert}"
        );
        let back: serde_json::Value = serde_json::from_str(&inert).unwrap_or_default();
        assert_eq!(back["publicName"], name);
        assert_eq!(back["k\u{2066}"], 1);
    }

    #[test]
    fn pages_and_terminals_agree_on_what_disguises() {
        for c in [
            '\u{0}', '\u{1b}', '\u{7f}', '\u{85}', '\u{202e}', '\u{2067}', '\u{feff}',
        ] {
            assert!(disguising(c) && unsafe_in_value(c), "{c:?}");
        }
        // A page shows line breaks and tabs as spaces; in one value on a
        // terminal they would break or shift the line.
        for c in ['\n', '\t', '\r'] {
            assert!(!disguising(c) && unsafe_in_value(c), "{c:?}");
        }
        assert!(!disguising('a') && !unsafe_in_value('é'));
    }
}
