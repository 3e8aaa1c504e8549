//! What every HTML page shares: rendering an askama template into a
//! response with the security headers, the stylesheet, and a page with a
//! title and a few paragraphs (errors, "done").

use askama::Template;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{Html, IntoResponse, Response};

/// The stylesheet, compiled in (no build step, no CDN).
const CSS: &str = include_str!("../static/opd.css");

/// Where the authorization listener serves the stylesheet.
pub(crate) const AUTH_CSS: &str = "/assets/opd.css";

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
pub(crate) fn message(status: StatusCode, title: &str, paragraphs: &[&str]) -> Response {
    render(
        status,
        &Message {
            page_title: title,
            css_href: AUTH_CSS,
            paragraphs: paragraphs.iter().map(|p| (*p).to_owned()).collect(),
        },
    )
}
