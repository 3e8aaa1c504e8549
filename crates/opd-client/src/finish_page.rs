//! The page the browser lands on after the consent page (the grant's
//! finish redirect to this client's loopback port): what was decided and
//! what to do next, in the consent page's look (its palette, card and
//! type, inlined: this client serves no stylesheet, and the page must
//! work offline and without JavaScript).

/// How the person's decision came back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    Approved,
    Refused,
    /// The redirect's hash did not verify: not from the server asked.
    Unverified,
}

const STYLE: &str = "\
:root{--ink:#1b1f24;--muted:#57606a;--line:#d0d7de;--soft:#f6f8fa;--ok:#1a7f37;--danger:#b42318;color-scheme:light}\
*{box-sizing:border-box}\
body{margin:0;font:1rem/1.55 system-ui,-apple-system,\"Segoe UI\",Roboto,\"Noto Sans\",\"DejaVu Sans\",sans-serif;color:var(--ink);background:var(--soft)}\
.top{padding:.75rem 1.25rem;background:#fff;border-bottom:1px solid var(--line);font-weight:700;letter-spacing:.02em}\
main{padding:1.5rem 1rem 3rem;max-width:38rem;margin:0 auto}\
.card{background:#fff;border:1px solid var(--line);border-radius:10px;padding:1.5rem 1.5rem 1.75rem}\
.eyebrow{margin:0 0 .25rem;color:var(--muted);font-size:.875rem;text-transform:uppercase;letter-spacing:.06em}\
h1{font-size:1.5rem;line-height:1.25;margin:0 0 1rem}\
h1.ok{color:var(--ok)}h1.no{color:var(--danger)}\
p{margin:0 0 .75rem}.muted{color:var(--muted)}";

/// The whole page for `outcome`.
pub(crate) fn page(outcome: Outcome) -> String {
    let (class, title, text) = match outcome {
        Outcome::Approved => (
            "ok",
            "Approved",
            "The payment goes on in the terminal: return there to follow it.",
        ),
        Outcome::Refused => (
            "no",
            "Not approved",
            "Nothing will be paid. The terminal says so too.",
        ),
        Outcome::Unverified => (
            "no",
            "This answer could not be verified",
            "It did not come from the authorization server asked, so it is ignored and nothing will be paid.",
        ),
    };
    format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <meta name=\"referrer\" content=\"no-referrer\">\
         <title>{title} · opd client</title><style>{STYLE}</style></head>\
         <body><header class=\"top\">opd client</header><main>\
         <section class=\"card\"><p class=\"eyebrow\">Access request</p>\
         <h1 class=\"{class}\">{title}</h1><p>{text}</p>\
         <p class=\"muted\">You can close this window.</p></section></main></body></html>"
    )
}

#[cfg(test)]
mod tests {
    use super::{page, Outcome};

    #[test]
    fn each_outcome_has_its_words_in_the_consent_pages_look() {
        let approved = page(Outcome::Approved);
        assert!(approved.contains("<h1 class=\"ok\">Approved</h1>"));
        assert!(approved.contains("--ink:#1b1f24") && approved.contains("class=\"card\""));
        assert!(page(Outcome::Refused).contains("<h1 class=\"no\">Not approved</h1>"));
        assert!(page(Outcome::Unverified).contains("could not be verified"));
    }
}
