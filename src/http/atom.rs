//! `GET /hours.atom`: an Atom feed (RFC 4287) of the sealed hours, newest first, for
//! the feed readers and aggregators this service is for: one entry per sealed hour with
//! its count, its chain digest and header, and links to each of its forms.
//!
//! Ids are tag URIs (RFC 4151) made of the host the feed was asked of and the service's
//! first hour, so they stay the same for as long as the feed does:
//! `tag:HOST,YYYY-MM-DD:hours` for the feed, `tag:HOST,YYYY-MM-DD:hour/YYYY-MM-DDTHH` for
//! an entry. An entry's `updated` is its hour's end (when it closed), so the feed's bytes
//! change only when an hour is sealed: `ETag`, `304` and a short `max-age` keep polling
//! it cheap.

use super::error::Result;
use super::AppState;
use crate::hour::Hour;
use crate::service::Service;
use axum::extract::State;
use axum::http::{header, HeaderMap};
use axum::response::Response;
use std::fmt::Write as _;

/// Sealed hours in the feed at most: two days.
pub const ENTRIES: i64 = 48;

/// The namespace of the feed's own elements (`count`, `digest`, `header`).
pub const NAMESPACE: &str = "urn:bloomcast:atom:1";

/// Where the feed is read from: the host asked, and whether through `https`.
#[derive(Debug, Clone)]
pub struct Origin {
    pub authority: String,
    pub https: bool,
}

impl Origin {
    /// The origin a request was made to (`Host`, and `X-Forwarded-Proto: https` from
    /// a proxy that says so).
    pub fn of(request: &HeaderMap) -> Origin {
        let authority = request
            .get(header::HOST)
            .and_then(|v| v.to_str().ok())
            .filter(|h| !h.is_empty())
            .unwrap_or("localhost")
            .to_owned();
        let https = request
            .get("x-forwarded-proto")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|p| p.trim().eq_ignore_ascii_case("https"));
        Origin { authority, https }
    }

    /// `http://HOST` or `https://HOST`.
    pub fn base(&self) -> String {
        let scheme = if self.https { "https" } else { "http" };
        format!("{scheme}://{}", self.authority)
    }
}

/// The path of the feed, its WebSub topic.
pub const PATH: &str = "/hours.atom";

/// `GET /hours.atom`.
pub async fn get_feed(State(state): State<AppState>, request: HeaderMap) -> Result<Response> {
    let origin = Origin::of(&request);
    let xml = feed(&state.service, &origin).await?;
    let mut response = super::meta::revalidated(
        xml.into_bytes(),
        "application/atom+xml",
        "max-age=60",
        &request,
    );
    // WebSub discovery by header as well as in the feed.
    let links = format!(
        "<{base}{hub}>; rel=\"hub\", <{base}{PATH}>; rel=\"self\"",
        base = origin.base(),
        hub = super::websub::PATH
    );
    if let Ok(links) = axum::http::HeaderValue::try_from(links) {
        response.headers_mut().insert(header::LINK, links);
    }
    Ok(response)
}

/// The feed as read from `origin`: the sealed hours of the last [`ENTRIES`], newest
/// first, with its hub (`/websub`).
///
/// # Errors
/// The store cannot list the sealed hours.
pub async fn feed(service: &Service, origin: &Origin) -> Result<String> {
    let now = service.current_hour();
    let from = Hour::from_index(now.index() - ENTRIES).max(service.genesis());
    let mut notes = service.hours().sealed_notes(from, ENTRIES as usize).await?;
    notes.retain(|n| n.hour < now);
    notes.reverse();
    let base = escape(&origin.base());
    let tag = format!(
        "tag:{},{}",
        escape(&origin.authority),
        service.genesis().start().format("%Y-%m-%d")
    );
    let updated = notes
        .first()
        .map_or(service.genesis().start(), |n| n.hour.end());
    let mut xml = String::with_capacity(1024 + notes.len() * 1200);
    let _ = write!(
        xml,
        r#"<?xml version="1.0" encoding="utf-8"?>
<feed xmlns="http://www.w3.org/2005/Atom" xmlns:bc="{NAMESPACE}">
  <id>{tag}:hours</id>
  <title>bloomcast: sealed hours</title>
  <subtitle>One Bloom filter per hour of the IDs that changed in it; each entry links its forms.</subtitle>
  <updated>{updated}</updated>
  <author><name>bloomcast</name></author>
  <generator version="{version}">bloomcast</generator>
  <link rel="self" type="application/atom+xml" href="{base}{PATH}"/>
  <link rel="hub" href="{base}{HUB}"/>
  <link rel="alternate" type="application/json" href="{base}/"/>
"#,
        updated = rfc3339(updated),
        version = env!("CARGO_PKG_VERSION"),
        HUB = super::websub::PATH,
    );
    for note in &notes {
        let hour = note.hour;
        let path = hour.path();
        let stamp = hour.start().format("%Y-%m-%dT%H");
        let _ = write!(
            xml,
            r#"  <entry>
    <id>{tag}:hour/{stamp}</id>
    <title>{hour}: {count} IDs changed</title>
    <updated>{updated}</updated>
    <link rel="alternate" type="application/json" href="{base}{path}"/>
    <link rel="alternate" type="application/octet-stream" title="bin" href="{base}{path}.bin"/>
    <link rel="alternate" type="text/plain" title="hex" href="{base}{path}.hex"/>
    <link rel="related" type="application/octet-stream" title="ribbon2" href="{base}{path}.ribbon2"/>
    <link rel="related" type="application/json" title="chain" href="{base}/chain{path}"/>
    <summary>{count} distinct IDs changed in the hour from {hour}; its filter's SHA-256 is {digest}.</summary>
    <bc:count>{count}</bc:count>
    <bc:digest>{digest}</bc:digest>
    <bc:header>{header}</bc:header>
  </entry>
"#,
            hour = hour.rfc3339(),
            count = note.count,
            updated = rfc3339(hour.end()),
            digest = hex::encode(note.digest),
            header = hex::encode(note.header),
        );
    }
    xml.push_str("</feed>\n");
    Ok(xml)
}

fn rfc3339(t: chrono::DateTime<chrono::Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// `text` safe in XML content and attribute values.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c => out.push(c),
        }
    }
    out
}
