//! What every HTML page shares: rendering an askama template into a
//! response with the security headers, the stylesheet, and a page with a
//! title and a few paragraphs (errors, "done"), and the escaper every
//! page's text goes through ([`PageText`], named in `askama.toml`).

use askama::Template;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{Html, IntoResponse, Response};

/// The stylesheet, compiled in (no build step, no CDN).
const CSS: &str = include_str!("../static/opd.css");

/// Where the authorization listener serves the stylesheet, under its path
/// (see [`auth_css`]).
pub(crate) const AUTH_CSS: &str = "/assets/opd.css";

/// The stylesheet's path on the authorization listener, as its pages link
/// it: under the grant endpoint's path.
pub(crate) fn auth_css(services: &opd_service::Services) -> String {
    format!("{}{AUTH_CSS}", services.config.auth_path_prefix())
}

/// `GET` of the stylesheet.
pub(crate) async fn stylesheet() -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/css; charset=utf-8"),
            (header::CACHE_CONTROL, "public, max-age=3600"),
        ],
        CSS,
    )
        .into_response()
}

/// The template rendered with `status`, never framed, never cached, no
/// scripts and no resources from elsewhere. A template that fails to render
/// (a bug) is a plain 500.
pub(crate) fn render(status: StatusCode, page: &impl Template) -> Response {
    let mut response = match page.render() {
        Ok(html) => (status, Html(html)).into_response(),
        Err(e) => {
            tracing::error!(error = %e, "page did not render");
            return (StatusCode::INTERNAL_SERVER_ERROR, "internal error").into_response();
        }
    };
    let headers = response.headers_mut();
    for (name, value) in [
        ("x-frame-options", "DENY"),
        ("x-content-type-options", "nosniff"),
        ("referrer-policy", "no-referrer"),
        (
            "content-security-policy",
            // No form-action: the consent form's answer redirects to the
            // client's finish URI, which browsers would check against it.
            "default-src 'none'; style-src 'self'; img-src 'self'; script-src 'self'; \
             frame-ancestors 'none'; base-uri 'none'",
        ),
        ("cache-control", "no-store"),
    ] {
        headers.insert(name, HeaderValue::from_static(value));
    }
    response
}

/// A page with a title and paragraphs.
#[derive(Template)]
#[template(path = "message.html")]
pub(crate) struct Message<'a> {
    pub page_title: &'a str,
    pub css_href: &'a str,
    pub paragraphs: Vec<String>,
}

/// A title-and-paragraphs page on the authorization listener.
pub(crate) fn message(
    services: &opd_service::Services,
    status: StatusCode,
    title: &str,
    paragraphs: &[&str],
) -> Response {
    render(
        status,
        &Message {
            page_title: title,
            css_href: &auth_css(services),
            paragraphs: paragraphs.iter().map(|p| (*p).to_owned()).collect(),
        },
    )
}

/// The escaper of every page (`askama.toml`): HTML escaping, plus control
/// and bidirectional formatting characters written as their code point
/// (`[U+202E]`), so that a name sent by a client or a peer cannot reorder
/// or hide the text around it (a client named `shop\u{202E}evil` would
/// otherwise read as another name on the consent page).
#[derive(Debug, Clone, Copy, Default)]
pub struct PageText;

/// Whether `c` must be shown as its code point: the characters that
/// disguise text (controls but line breaks and tabs, which HTML shows as
/// spaces; bidirectional and invisible format characters), the same set
/// `opd client` and the admin helpers show that way on a terminal.
fn neutralised(c: char) -> bool {
    opd_core::untrusted::disguising(c)
}

impl askama::filters::Escaper for PageText {
    fn write_escaped_str<W: std::fmt::Write>(&self, mut dest: W, text: &str) -> std::fmt::Result {
        let html = askama::filters::Html;
        let mut rest = text;
        while let Some((at, c)) = rest.char_indices().find(|(_, c)| neutralised(*c)) {
            html.write_escaped_str(&mut dest, &rest[..at])?;
            write!(dest, "[U+{:04X}]", u32::from(c))?;
            rest = &rest[at + c.len_utf8()..];
        }
        html.write_escaped_str(dest, rest)
    }
}

#[cfg(test)]
mod tests {
    use askama::filters::Escaper as _;

    fn escaped(text: &str) -> String {
        let mut out = String::new();
        super::PageText.write_escaped_str(&mut out, text).unwrap();
        out
    }

    #[test]
    fn controls_and_bidi_characters_are_shown_as_code_points() {
        assert_eq!(escaped("shop\u{202E}lave"), "shop[U+202E]lave");
        assert_eq!(escaped("<b>\u{2066}x\u{0}"), "&#60;b&#62;[U+2066]x[U+0000]");
        assert_eq!(escaped("Café 🙂 line\nbreak"), "Café 🙂 line\nbreak");
        assert_eq!(escaped(""), "");
    }
}
