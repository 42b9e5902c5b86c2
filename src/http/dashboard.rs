//! `GET /dashboard`: the operator's page, its script and style, and the JavaScript client
//! it uses (`clients/js/bloomcast.js`, the same bytes as the npm package). All embedded
//! at build time: the page works offline and loads nothing from elsewhere.

use axum::http::{header, HeaderValue};
use axum::response::{IntoResponse, Response};

const PAGE: &str = include_str!("dashboard/index.html");
const APP: &str = include_str!("dashboard/app.js");
const STYLE: &str = include_str!("dashboard/style.css");
const CLIENT: &str = include_str!("../../clients/js/bloomcast.js");

/// Everything from this server only; no inline script.
const CSP: &str = "default-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

fn asset(content_type: &'static str, body: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, HeaderValue::from_static(content_type)),
            (header::CACHE_CONTROL, HeaderValue::from_static("no-cache")),
            (
                header::CONTENT_SECURITY_POLICY,
                HeaderValue::from_static(CSP),
            ),
            (
                header::X_CONTENT_TYPE_OPTIONS,
                HeaderValue::from_static("nosniff"),
            ),
        ],
        body,
    )
        .into_response()
}

pub async fn page() -> Response {
    asset("text/html; charset=utf-8", PAGE)
}

pub async fn app() -> Response {
    asset("text/javascript; charset=utf-8", APP)
}

pub async fn style() -> Response {
    asset("text/css; charset=utf-8", STYLE)
}

pub async fn client() -> Response {
    asset("text/javascript; charset=utf-8", CLIENT)
}
