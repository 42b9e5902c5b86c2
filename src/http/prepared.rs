//! Responses prepared once per rendering and worker thread, for the read path's fast
//! lane: a poll clones a finished header map and a body this thread owns, so it builds
//! nothing and writes no cache line another core reads (a shared `Bytes` or header
//! value would bump a reference count every core touches).
//!
//! A prepared response is the very response [`respond`] and the CORS layer give, made
//! by that code (the CORS layer's headers applied once here, not per request) for one
//! *variant* of the request (gzip or not, suffix or not, 304 or
//! not, whether the hour has a previous and a next hour): only `Cache-Control` of an
//! open hour changes with time, and it is set per request from a static table.

use super::cors::CorsHeaders;
use super::filters::{cache_control, respond};
use super::AppState;
use crate::render::{Rendered, Repr};
use crate::service::ReadyHour;
use axum::body::{Body, HttpBody as _};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::Response;
use bytes::Bytes;
use rustc_hash::FxBuildHasher;
use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Renderings a thread keeps prepared responses for; past it, or past half its part of
/// the memory budget (`Split::responses_per_thread`; the service's renderings served
/// lately have the other half): each kept rendering is held alive, with the thread's
/// copy of its bodies), the thread starts over (renderings come and go by
/// the hour, and a thread serves few at a time).
const RENDERINGS: usize = 64;

/// Bytes every thread's prepared responses hold now, for `/stats` and `/metrics`.
static HELD: AtomicU64 = AtomicU64::new(0);

/// Bytes every worker thread's prepared responses hold now.
pub fn held_bytes() -> u64 {
    HELD.load(Ordering::Relaxed)
}
/// Renderings larger than this are not kept: their responses are built per request
/// (sending their bodies costs far more than building their headers).
const KEPT_MAX: usize = 128 * 1024;

/// What in a request, besides the rendering, decides its response.
#[derive(Clone, Copy)]
pub struct Variant {
    pub gzip: bool,
    /// The representation came from the path's suffix (the `Link` targets carry it).
    pub suffix: bool,
    pub not_modified: bool,
}

impl Variant {
    fn index(self, ready: &ReadyHour) -> usize {
        usize::from(self.gzip)
            | usize::from(self.suffix) << 1
            | usize::from(self.not_modified) << 2
            | usize::from(ready.prev) << 3
            | usize::from(ready.next) << 4
    }
}

/// A thread's prepared responses, by the address of their rendering.
#[derive(Default)]
struct Kept {
    renderings: HashMap<usize, Prepared, FxBuildHasher>,
    bytes: usize,
}

impl Drop for Kept {
    fn drop(&mut self) {
        HELD.fetch_sub(self.bytes as u64, Ordering::Relaxed);
    }
}

/// One rendering's prepared responses, by variant.
struct Prepared {
    /// Keeps the rendering alive, so its address is not reused while it keys this entry.
    _rendered: Arc<Rendered>,
    identity: Bytes,
    gzip: Bytes,
    variants: [Option<(StatusCode, HeaderMap)>; 32],
}

thread_local! {
    static KEPT: RefCell<Kept> = RefCell::new(Kept::default());
}

/// The prepared response to a request of `variant` for a ready hour.
pub fn response(
    state: &AppState,
    cors: &CorsHeaders,
    ready: &ReadyHour,
    variant: Variant,
) -> Response {
    let cache_control = ready
        .open_until
        .map(|until| cache_control(state, Some(until)));
    // Twice: the thread's copy of the bodies, and the rendering it keeps alive.
    let size = 2 * ready.rendered.size();
    let budget = state.service.split().responses_per_thread as usize / 2;
    let mut response = if size > KEPT_MAX.min(budget) {
        let response = finished(state, cors, ready, variant);
        let r = ready.rendered;
        let (parts, _) = response.into_parts();
        let body = body_for(parts.status, variant.gzip, &r.identity, &r.gzip).clone();
        Response::from_parts(parts, body_of(body))
    } else {
        kept(state, cors, ready, variant)
    };
    if let Some(value) = cache_control {
        response.headers_mut().insert(header::CACHE_CONTROL, value);
    }
    response
}

/// The response from this thread's prepared ones, prepared now if it is the first.
fn kept(state: &AppState, cors: &CorsHeaders, ready: &ReadyHour, variant: Variant) -> Response {
    let size = 2 * ready.rendered.size();
    let slot = variant.index(ready);
    KEPT.with(|kept| {
        let kept = &mut *kept.borrow_mut();
        let key = Arc::as_ptr(ready.rendered) as usize;
        let budget = state.service.split().responses_per_thread as usize / 2;
        if !kept.renderings.contains_key(&key)
            && (kept.renderings.len() >= RENDERINGS || kept.bytes + size > budget)
        {
            kept.renderings.clear();
            HELD.fetch_sub(kept.bytes as u64, Ordering::Relaxed);
            kept.bytes = 0;
        }
        let entry = kept.renderings.entry(key).or_insert_with(|| {
            kept.bytes += size;
            HELD.fetch_add(size as u64, Ordering::Relaxed);
            Prepared {
                _rendered: ready.rendered.clone(),
                identity: Bytes::copy_from_slice(&ready.rendered.identity),
                gzip: Bytes::copy_from_slice(&ready.rendered.gzip),
                variants: std::array::from_fn(|_| None),
            }
        });
        let (status, headers) = entry.variants[slot].get_or_insert_with(|| {
            let (parts, _) = finished(state, cors, ready, variant).into_parts();
            (parts.status, parts.headers)
        });
        let body = body_for(*status, variant.gzip, &entry.identity, &entry.gzip).clone();
        let mut response = Response::new(body_of(body));
        *response.status_mut() = *status;
        *response.headers_mut() = headers.clone();
        response
    })
}

fn body_of(bytes: Bytes) -> Body {
    if bytes.is_empty() {
        Body::empty()
    } else {
        Body::from(bytes)
    }
}

/// The body a response of `status` sends: none on a 304, else the encoding asked for.
fn body_for<'b>(
    status: StatusCode,
    gzip: bool,
    identity: &'b Bytes,
    gzipped: &'b Bytes,
) -> &'b Bytes {
    static EMPTY: Bytes = Bytes::new();
    match (status, gzip) {
        (StatusCode::NOT_MODIFIED, _) => &EMPTY,
        (_, true) => gzipped,
        (_, false) => identity,
    }
}

/// The whole response to a request of `variant`, made by the handler's own code as the
/// router finishes it (with `Content-Length`).
fn finished(state: &AppState, cors: &CorsHeaders, ready: &ReadyHour, variant: Variant) -> Response {
    let mut request = HeaderMap::new();
    if variant.gzip {
        request.insert(header::ACCEPT_ENCODING, HeaderValue::from_static("gzip"));
    }
    if variant.not_modified {
        request.insert(header::IF_NONE_MATCH, HeaderValue::from_static("*"));
    }
    let suffix: Option<Repr> = variant.suffix.then_some(ready.rendered.repr);
    let mut response = respond(state, &ready.view(), suffix, &request, None);
    // Last, as the router sets it on every response with a body of known size.
    if let Some(length) = response.body().size_hint().exact() {
        let length = HeaderValue::from(length);
        response
            .headers_mut()
            .insert(header::CONTENT_LENGTH, length);
    }
    // Then the CORS layer's headers, by its own code, as it adds them to every response
    // above the router; it leaves the lane's responses as they are.
    cors.apply(response.headers_mut());
    response
}
