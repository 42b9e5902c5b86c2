//! `GET /YYYY/MM/DD/HH`, `GET /YYYY/MM/DD` and `GET /since/YYYY/MM/DD/HH`: filters in
//! the negotiated representation and encoding, with validators and cache headers.

use super::error::{ApiError, Result};
use super::negotiate::{accepts_gzip, choose_repr, dcz_dictionary};
use super::paths::{canonical_path, filter_path};
use super::AppState;
use crate::render::Head;
use crate::render::{Encodings, Rendered, Repr};
use crate::service::{Target, View};
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::request::Parts;
use axum::http::{header, HeaderMap, HeaderName, HeaderValue, StatusCode};
use axum::response::Response;
use chrono::{DateTime, Utc};

const IMMUTABLE: &str = "max-age=31536000, immutable";

/// `GET` of any filter path: the compact form when asked for, else the filter.
pub async fn get_filter(State(state): State<AppState>, request: Request) -> Result<Response> {
    let (parts, _) = request.into_parts();
    if let Some(exact) = super::exact::maybe_serve(&state, &parts).await {
        return exact;
    }
    if let Some(compact) = super::compact::maybe_serve(&state, &parts).await {
        return compact;
    }
    let (target, suffix) = filter_path(parts.uri.path())?;
    serve(&state, target, suffix, &parts).await
}

async fn serve(
    state: &AppState,
    target: Target,
    suffix: Option<Repr>,
    parts: &Parts,
) -> Result<Response> {
    super::compact::refuse_fpp_on_v1(parts.uri.query())?;
    let headers = &parts.headers;
    let repr = match suffix {
        Some(repr) => repr,
        None => choose_repr(headers).ok_or_else(refused_every_type)?,
    };
    let gzip_accepted = accepts_gzip(headers);
    if let Some(response) = revalidated(state, target, repr, headers, gzip_accepted).await? {
        return Ok(response);
    }
    let asked = Encodings::asked(gzip_accepted);
    let view = state.service.hours().view(target, repr, asked).await?;
    let delta = open_hour_delta(state, &view, headers).await;
    Ok(respond(state, &view, suffix, headers, gzip_accepted, delta))
}

/// The 406 to an `Accept` that refuses every type a filter is served as (each at `q=0`,
/// or `*/*;q=0`): RFC 9110 §12.4.2 reads `q=0` as "not acceptable".
fn refused_every_type() -> ApiError {
    ApiError::NotAcceptable(
        "Accept refuses every type this filter is served as (q=0 means not acceptable): \
         ask for application/json, text/plain or application/octet-stream, or use a \
         .json, .hex or .bin suffix"
            .into(),
    )
}

/// The 304 to a revalidation of a complete union, answered from what names it (its
/// hours' digests) without building it; `None` when it cannot be told that way.
async fn revalidated(
    state: &AppState,
    target: Target,
    repr: Repr,
    request: &HeaderMap,
    gzip_accepted: bool,
) -> Result<Option<Response>> {
    if !request.contains_key(header::IF_NONE_MATCH) {
        return Ok(None);
    }
    let name = state.service.hours().known_validator(target, repr).await?;
    Ok(not_modified_by_name(
        name,
        request,
        gzip_accepted,
        vary(false),
    ))
}

/// The 304 to a request whose `If-None-Match` names `name`, the name of a complete
/// rendering known without its bytes (its ETag for a gzip body when `gzip`); `None`
/// when there is no such name or the request names another.
pub(super) fn not_modified_by_name(
    name: Option<[u8; 32]>,
    request: &HeaderMap,
    gzip: bool,
    vary: HeaderValue,
) -> Option<Response> {
    let if_none_match = request.get(header::IF_NONE_MATCH)?.to_str().ok()?;
    let name = name?;
    if !super::if_none_match::matches_name(&name, Encodings::Both, if_none_match) {
        return None;
    }
    let etag = crate::render::head::etag_of_name(&name, gzip);
    let immutable = HeaderValue::from_static(IMMUTABLE);
    Some(not_modified_response(etag, immutable, vary))
}

/// A 304: the validator, and the cache headers the 200 would have had.
fn not_modified_response(
    etag: HeaderValue,
    cache_control: HeaderValue,
    vary: HeaderValue,
) -> Response {
    let mut response = Response::new(Body::empty());
    *response.status_mut() = StatusCode::NOT_MODIFIED;
    let out = response.headers_mut();
    out.insert(header::ETAG, etag);
    out.insert(header::CACHE_CONTROL, cache_control);
    out.insert(header::VARY, vary);
    response
}

/// `Vary` of a filter: the open hour's answers also depend on the dictionary offered.
fn vary(open_hour: bool) -> HeaderValue {
    HeaderValue::from_static(if open_hour {
        "Accept, Accept-Encoding, Available-Dictionary"
    } else {
        "Accept, Accept-Encoding"
    })
}

/// The `dcz` body of the open hour when the request offers a kept dictionary, accepts
/// `dcz` and is not answered 304 (the service keeps the versions and makes the deltas).
async fn open_hour_delta(
    state: &AppState,
    view: &View,
    request: &HeaderMap,
) -> Option<bytes::Bytes> {
    let hour = view.open_hour?;
    let dictionary = dcz_dictionary(request)?;
    if not_modified(&view.rendered, request) {
        return None;
    }
    state
        .service
        .hours()
        .delta(hour, &view.rendered, &dictionary)
        .await
}

/// The response to a filter request (`gzip_accepted`: its `Accept-Encoding` takes gzip),
/// with the open hour's `delta` when one was made for it ([`open_hour_delta`]).
///
/// A complete view's headers depend on nothing but its rendering, the body sent, the
/// URL's form and its neighbours: the whole block is made on its first 200 and kept
/// with the rendering ([`Head::finished`]), so a 200 of a closed hour or day copies one
/// header map and formats nothing.
pub(super) fn respond(
    state: &AppState,
    view: &View,
    suffix: Option<Repr>,
    request: &HeaderMap,
    gzip_accepted: bool,
    delta: Option<bytes::Bytes>,
) -> Response {
    let r = &view.rendered;
    let head = r.head();
    let gzip = r.encodings.sends_gzip(gzip_accepted);

    if not_modified(r, request) {
        let cache_control = view_cache_control(state, view);
        let vary = vary(view.open_hour.is_some());
        return not_modified_response(head.etag(gzip).clone(), cache_control, vary);
    }

    let body = match &delta {
        Some(delta) => delta,
        None if gzip => &r.gzip,
        None => &r.identity,
    };
    let mut response = Response::new(Body::from(body.clone()));
    let complete = view.open_hour.is_none() && view.open_until.is_none() && !view.signature_pending;
    *response.headers_mut() = if complete && delta.is_none() {
        let key = neighbours_key(view) | u128::from(suffix.is_some()) << 127;
        head.finished(gzip, key, || headers(state, view, suffix, gzip, None))
    } else {
        headers(state, view, suffix, gzip, delta.as_ref())
    };
    response
}

/// The headers of a 200 of `view` sending its gzip body when `gzip`, or `delta`.
fn headers(
    state: &AppState,
    view: &View,
    suffix: Option<Repr>,
    gzip: bool,
    delta: Option<&bytes::Bytes>,
) -> HeaderMap {
    let r = &view.rendered;
    let head = r.head();
    let dictionary = kept_as_dictionary(state, view, head, suffix);
    let linked = linked_dictionary(state, view, suffix);
    // What the rendering's head says of the body sent (its ETag, `Bloom-*` and chain
    // headers, `Repr-Digest`, coding), made once per rendering; a delta, made per
    // delta, has its own ETag, digest and coding.
    let mut out = head.sent(gzip && delta.is_none()).clone();
    if let Some(delta) = delta {
        out.insert(header::ETAG, head.etag_dcz().clone());
        let digest = HeaderValue::try_from(crate::chain::repr_digest(delta)).expect("base64");
        out.insert(
            HeaderName::from_static(crate::chain::HEADER_REPR_DIGEST),
            digest,
        );
        out.insert(header::CONTENT_ENCODING, HeaderValue::from_static("dcz"));
    }
    out.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(r.repr.content_type()),
    );
    out.insert(header::CACHE_CONTROL, view_cache_control(state, view));
    out.insert(header::VARY, vary(view.open_hour.is_some()));
    if let Some(link) = link_header(view, suffix, linked) {
        out.insert(header::LINK, link);
    }
    if let Some(dictionary) = dictionary {
        out.insert(HeaderName::from_static("use-as-dictionary"), dictionary);
    }
    out
}

/// What a complete view's header block depends on beyond its rendering and the body sent
/// ([`Head::finished`]), but the URL's form (the top bit, left 0 here): its neighbours
/// (its `Link`), exactly.
fn neighbours_key(view: &View) -> u128 {
    let one = |target: Option<Target>| -> u64 {
        let (kind, hour) = match target {
            None => return 0,
            Some(Target::Hour(hour)) => (1, hour),
            Some(Target::Day(day)) => (2, day.first_hour()),
            Some(Target::Since(hour)) => (3, hour),
        };
        kind | (hour.index() as u64) << 2
    };
    u128::from(one(view.prev)) << 64 | u128::from(one(view.next))
}

/// RFC 9842 for the open hour: its `Use-As-Dictionary` value when the service keeps
/// this version as a dictionary.
fn kept_as_dictionary(
    state: &AppState,
    view: &View,
    head: &Head,
    suffix: Option<Repr>,
) -> Option<HeaderValue> {
    let hour = view.open_hour?;
    state
        .service
        .hours()
        .keep_as_dictionary(hour, &view.rendered)
        .then(|| {
            let path = canonical_path((Target::Hour(hour), suffix));
            let id = head.dictionary_id();
            let value = format!("match=\"{path}\", id=\"{id}\"");
            HeaderValue::try_from(value).expect("ascii")
        })
}

/// RFC 9842 for the open hour: the URL of the kept version its responses link to as a
/// dictionary with a lifetime of its own (`Link: <url>; rel="compression-dictionary"`),
/// when the service links one; taken after [`kept_as_dictionary`], which may keep this
/// very version.
fn linked_dictionary(state: &AppState, view: &View, suffix: Option<Repr>) -> Option<String> {
    let hour = view.open_hour?;
    let sha256 = state
        .service
        .hours()
        .linked_dictionary(hour, &view.rendered)?;
    let path = canonical_path((Target::Hour(hour), suffix));
    Some(super::dictionaries::url(&path, &sha256))
}

/// Whether the request's `If-None-Match` names this representation (either encoding).
pub(super) fn not_modified(r: &Rendered, request: &HeaderMap) -> bool {
    request
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| super::if_none_match::matches(r, v))
}

/// `Cache-Control` of a view: as [`cache_control`], but `no-store` for a closed hour
/// whose signature is still to come, which a cache keeping it for ever would serve
/// unsigned for ever (a 304 carries no signature).
pub(super) fn view_cache_control(state: &AppState, view: &View) -> HeaderValue {
    if view.signature_pending {
        return HeaderValue::from_static("no-store");
    }
    cache_control(state, view.open_until)
}

/// `Cache-Control` of a filter: immutable when complete, else a max-age that never runs
/// past the end of the open hour (nor past `open_max_age`).
pub(super) fn cache_control(state: &AppState, open_until: Option<DateTime<Utc>>) -> HeaderValue {
    let Some(until) = open_until else {
        return HeaderValue::from_static(IMMUTABLE);
    };
    let left = (until - state.service.now()).num_seconds().max(0) as u64;
    let max_age = left.min(state.open_max_age);
    match MAX_AGES.get(max_age as usize) {
        Some(value) => value.clone(),
        None => HeaderValue::try_from(format!("max-age={max_age}")).expect("ascii"),
    }
}

/// `max-age=N` for every N an open hour can have (at most an hour), formatted
/// once rather than on every poll of the open hour.
static MAX_AGES: std::sync::LazyLock<Vec<HeaderValue>> = std::sync::LazyLock::new(|| {
    (0..=3600)
        .map(|n| HeaderValue::try_from(format!("max-age={n}")).expect("ascii"))
        .collect()
});

/// `Link`: the previous and next filters, then the open hour's linked dictionary.
fn link_header(
    view: &View,
    suffix: Option<Repr>,
    dictionary: Option<String>,
) -> Option<HeaderValue> {
    let mut links = String::new();
    let neighbours = [(view.prev, "prev"), (view.next, "next")]
        .into_iter()
        .filter_map(|(target, rel)| Some((canonical_path((target?, suffix)), rel)));
    let dictionary = dictionary.map(|url| (url, "compression-dictionary"));
    for (url, rel) in neighbours.chain(dictionary) {
        if !links.is_empty() {
            links.push_str(", ");
        }
        links.push('<');
        links.push_str(&url);
        links.push_str(">; rel=\"");
        links.push_str(rel);
        links.push('"');
    }
    (!links.is_empty()).then(|| HeaderValue::try_from(links).expect("ascii links"))
}
