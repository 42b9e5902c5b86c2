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
use axum::extract::State;
use axum::http::{header, HeaderMap};
use axum::response::Response;
use std::fmt::Write as _;

/// Sealed hours in the feed at most: two days.
pub const ENTRIES: i64 = 48;

/// The namespace of the feed's own elements (`count`, `digest`, `header`).
pub const NAMESPACE: &str = "urn:bloomcast:atom:1";

/// `GET /hours.atom`.
pub async fn get_feed(State(state): State<AppState>, request: HeaderMap) -> Result<Response> {
    let service = &state.service;
    let now = service.current_hour();
    let from = Hour::from_index(now.index() - ENTRIES).max(service.genesis());
    let mut notes = service.hours().sealed_notes(from, ENTRIES as usize).await?;
    notes.retain(|n| n.hour < now);
    notes.reverse();
    let base = base_url(&request);
    let tag = format!(
        "tag:{},{}",
        escape(&authority(&request)),
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
  <link rel="self" type="application/atom+xml" href="{base}/hours.atom"/>
  <link rel="alternate" type="application/json" href="{base}/"/>
"#,
        updated = rfc3339(updated),
        version = env!("CARGO_PKG_VERSION"),
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
    Ok(super::meta::revalidated(
        xml.into_bytes(),
        "application/atom+xml",
        "max-age=60",
        &request,
    ))
}

fn rfc3339(t: chrono::DateTime<chrono::Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// The host the feed was asked of (`Host`), for its ids and links.
fn authority(request: &HeaderMap) -> String {
    request
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .filter(|h| !h.is_empty())
        .unwrap_or("localhost")
        .to_owned()
}

/// `http://HOST`, or `https://HOST` behind a proxy that says so
/// (`X-Forwarded-Proto: https`), escaped for XML.
fn base_url(request: &HeaderMap) -> String {
    let https = request
        .get("x-forwarded-proto")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|p| p.trim().eq_ignore_ascii_case("https"));
    let scheme = if https { "https" } else { "http" };
    escape(&format!("{scheme}://{}", authority(request)))
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
