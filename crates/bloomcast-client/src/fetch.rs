//! The SDK's requests: filters (with the validator cache), the index and ingest.

use super::dictionaries::Dictionary;
use super::{Client, ClientError, Fetched, Index, Receipt, Result};
use crate::wire::Repr;
use crate::wire::{self, Document};
use reqwest::header::{self, HeaderMap};
use reqwest::{RequestBuilder, Response, StatusCode};
use std::io::Read;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

/// The path of a filter's raw-bytes representation: the fewest bytes on the wire.
pub(crate) fn bin_path(path: &str) -> String {
    format!("{path}.bin")
}

impl Client {
    /// Fetches the filter at `path` (`/2008/09/03/13`, `/2008/09/03`,
    /// `/since/2008/09/03/13`; a `.json`, `.hex` or `.bin` suffix is also accepted),
    /// answering from the cache when the filter is complete, revalidating otherwise.
    ///
    /// # Errors
    /// [`ClientError::Status`] for an error status, transport and decoding errors.
    pub async fn filter(&self, path: &str) -> Result<Arc<Fetched>> {
        self.filter_with(path, false).await
    }

    /// As [`Client::filter`], asking every cache between for a copy no older than now
    /// (`Cache-Control: no-cache`): the fetch that follows an event of the server's
    /// stream (`GET /events`) about a newer version of an open resource, which a cache
    /// would otherwise answer from its copy until that copy's `max-age` runs out
    /// (deploy/varnish/bloomcast.vcl fetches such a copy again).
    ///
    /// # Errors
    /// As [`Client::filter`].
    pub async fn filter_fresh(&self, path: &str) -> Result<Arc<Fetched>> {
        self.filter_with(path, true).await
    }

    async fn filter_with(&self, path: &str, fresh: bool) -> Result<Arc<Fetched>> {
        // A form the caller named is read as named; the default one may be replaced.
        let chosen = suffix_of(path).is_some();
        let (path, repr) = match suffix_of(path) {
            Some(repr) => (path.to_owned(), repr),
            None => (bin_path(path), Repr::Bin),
        };
        let cached = self.cache.get(&path);
        if let Some(hit) = cached.as_ref().filter(|c| c.meta.complete) {
            self.counters.cache_hits.fetch_add(1, Ordering::Relaxed);
            return Ok(Arc::clone(hit));
        }
        // The default form (`.bin`) from a static mirror comes without the `Bloom-*`
        // headers it needs: read the self-describing JSON form there instead.
        let json_path = || format!("{}.json", path.trim_end_matches(".bin"));
        let mut asked = if !chosen && self.static_layout.load(Ordering::Relaxed) {
            (json_path(), Repr::Json)
        } else {
            (path.clone(), repr)
        };
        let (headers, body) = loop {
            let dictionary = self.dictionaries.get(&asked.0);
            let mut request = match &dictionary {
                Some(d) => self
                    .http
                    .get(format!("{}{}", self.base, asked.0))
                    .header(header::ACCEPT_ENCODING, "dcz, gzip")
                    .header("available-dictionary", d.offer()),
                None => self.get(&asked.0),
            };
            // A version of the open hour verified with a `made` now past the freshness
            // bound is fetched whole: a 304 would carry no newer signature.
            let too_old = cached.as_ref().is_some_and(|c| !c.meta.complete)
                && hour_of_path(&path).is_some_and(|h| self.open_too_old(h));
            if fresh {
                request = request.header(header::CACHE_CONTROL, "no-cache");
            }
            if let Some(etag) = cached.as_ref().and_then(|c| c.etag.as_deref()) {
                if !too_old {
                    request = request.header(header::IF_NONE_MATCH, etag);
                }
            }
            let response = self.send(request).await?;
            if response.status() == StatusCode::NOT_MODIFIED {
                self.counters.not_modified.fetch_add(1, Ordering::Relaxed);
                return cached.ok_or_else(|| ClientError::Protocol("304 without a request".into()));
            }
            let response = check(response).await?;
            let headers = response.headers().clone();
            if !chosen && asked.1 == Repr::Bin && !headers.contains_key(wire::HEADER_M) {
                self.static_layout.store(true, Ordering::Relaxed);
                asked = (json_path(), Repr::Json);
                continue;
            }
            let body = self.body(response, dictionary.as_deref()).await?;
            break (headers, body);
        };
        let fetched = Arc::new(decode(asked.1, &headers, &body)?);
        // Before it is cached: a tampered hour is refused, never kept.
        self.check_signed(&asked.0, &headers, &fetched).await?;
        if fetched.meta.complete {
            self.dictionaries.remove(&asked.0);
        } else if headers.contains_key("use-as-dictionary") {
            self.dictionaries.put(&asked.0, Dictionary::new(body));
        }
        self.cache.put(&path, Arc::clone(&fetched));
        Ok(fetched)
    }

    /// The server's index (`GET /`).
    ///
    /// # Errors
    /// Transport errors, an error status, or a body that is not an index.
    pub async fn index(&self) -> Result<Index> {
        let response = check(self.send(self.get("/")).await?).await?;
        let body = self.body(response, None).await?;
        let index: Index = serde_json::from_slice(&body)
            .map_err(|e| ClientError::Protocol(format!("index: {e}")))?;
        if let Ok(current) = index.current_hour() {
            self.current.fetch_max(current.index(), Ordering::Relaxed);
        }
        Ok(index)
    }

    /// Records `ids` in the server's current hour; returns once they are durable.
    ///
    /// A batch is all-or-nothing, so on any error it is safe to send it again.
    ///
    /// # Errors
    /// [`ClientError::Status`] 401 without a valid token ([`super::ClientBuilder::token`]),
    /// 400 for an empty or over-long ID, 413 for a batch over the server's body limit,
    /// 503 (transient) while the server cannot store; transport errors.
    pub async fn ingest<S: AsRef<str>>(&self, ids: &[S]) -> Result<Receipt> {
        let ids: Vec<&str> = ids.iter().map(AsRef::as_ref).collect();
        let mut request = self
            .http
            .post(format!("{}/updates", self.base))
            .json(&serde_json::json!({ "ids": ids }));
        if let Some(token) = &self.token {
            request = request.bearer_auth(token);
        }
        let response = check(self.send(request).await?).await?;
        let body = self.body(response, None).await?;
        serde_json::from_slice(&body).map_err(|e| ClientError::Protocol(format!("receipt: {e}")))
    }

    pub(super) fn get(&self, path: &str) -> RequestBuilder {
        self.http
            .get(format!("{}{path}", self.base))
            .header(header::ACCEPT_ENCODING, "gzip")
    }

    /// Sends the request. A read (GET) the server answers 503 with a `Retry-After` of at
    /// most [`MAX_RETRY_WAIT`] (a build busy, the store recovering) is sent again after
    /// that wait, up to `read_tries` tries in all (default [`READ_TRIES`]); anything else
    /// is returned as it came.
    pub(super) async fn send(&self, request: RequestBuilder) -> Result<Response> {
        let mut request = request.build()?;
        let mut tries = 1;
        loop {
            let again = (request.method() == reqwest::Method::GET && tries < self.read_tries)
                .then(|| request.try_clone())
                .flatten();
            self.counters.requests.fetch_add(1, Ordering::Relaxed);
            let response = self.http.execute(request).await?;
            match (again, retry_wait(&response)) {
                (Some(next), Some(wait)) => {
                    tracing::debug!(url = %next.url(), ?wait, "503 with Retry-After: trying again");
                    tokio::time::sleep(wait).await;
                    request = next;
                    tries += 1;
                }
                _ => return Ok(response),
            }
        }
    }

    /// Reads the body, counting its wire bytes, and gunzips it, or decodes a delta with
    /// the `dictionary` it was asked with.
    pub(super) async fn body(
        &self,
        response: Response,
        dictionary: Option<&Dictionary>,
    ) -> Result<Vec<u8>> {
        let encoding = response
            .headers()
            .get(header::CONTENT_ENCODING)
            .map(|v| v.as_bytes().to_ascii_lowercase());
        let wire = response.bytes().await?;
        self.counters
            .body_bytes
            .fetch_add(wire.len() as u64, Ordering::Relaxed);
        match encoding.as_deref() {
            Some(b"gzip") => {
                let mut out = Vec::with_capacity(wire.len() * 2);
                flate2::read::GzDecoder::new(&wire[..])
                    .read_to_end(&mut out)
                    .map_err(|e| ClientError::Protocol(format!("bad gzip body: {e}")))?;
                Ok(out)
            }
            Some(b"dcz") => {
                let dictionary = dictionary
                    .ok_or_else(|| ClientError::Protocol("dcz body without a dictionary".into()))?;
                let out = crate::dcz::decode(&dictionary.bytes, &wire)
                    .map_err(|e| ClientError::Protocol(format!("bad dcz body: {e}")))?;
                self.counters.deltas.fetch_add(1, Ordering::Relaxed);
                Ok(out)
            }
            _ => Ok(wire.to_vec()),
        }
    }
}

/// Tries of a read answered 503 with a short `Retry-After` by default (`Client::send`).
pub(crate) const READ_TRIES: u32 = 3;
/// The longest `Retry-After` a read waits for before trying again.
pub(crate) const MAX_RETRY_WAIT: Duration = Duration::from_secs(5);

/// How long to wait before sending a read again: a 503's `Retry-After`, in seconds, when
/// it is at most [`MAX_RETRY_WAIT`].
fn retry_wait(response: &Response) -> Option<Duration> {
    if response.status() != StatusCode::SERVICE_UNAVAILABLE {
        return None;
    }
    retry_after(response.headers()).filter(|wait| *wait <= MAX_RETRY_WAIT)
}

/// A response's `Retry-After`, in whole seconds.
fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    headers
        .get(header::RETRY_AFTER)?
        .to_str()
        .ok()?
        .trim()
        .parse()
        .ok()
        .map(Duration::from_secs)
}

/// The hour a response's header `name` (`Bloom-Hour`, `Bloom-From`, `Bloom-To`) names.
pub(super) fn header_hour(headers: &HeaderMap, name: &str) -> Option<crate::hour::Hour> {
    let value = headers.get(name)?.to_str().ok()?;
    crate::hour::Hour::parse_flexible(value).ok()
}

/// Turns an error status into [`ClientError::Status`], reading the JSON error body.
pub(super) async fn check(response: Response) -> Result<Response> {
    let status = response.status();
    if status.is_success() {
        return Ok(response);
    }
    let retry_after = retry_after(response.headers());
    let text = response.text().await.unwrap_or_default();
    #[derive(serde::Deserialize)]
    struct ErrorBody {
        error: String,
        message: String,
    }
    let (code, message) = match serde_json::from_str::<ErrorBody>(&text) {
        Ok(body) => (body.error, body.message),
        Err(_) => (
            status.canonical_reason().unwrap_or("error").to_owned(),
            text.chars().take(200).collect(),
        ),
    };
    Err(ClientError::Status {
        status: status.as_u16(),
        code,
        message,
        retry_after,
    })
}

/// The hour a filter's path names (`/2008/09/03/13.bin`), if it names one.
fn hour_of_path(path: &str) -> Option<crate::hour::Hour> {
    let stem = path.rsplit_once('.').map_or(path, |(stem, _)| stem);
    crate::hour::Hour::parse_path(stem).ok()
}

/// The representation a path's suffix names (`/2008/09/03/13.hex`), if any.
fn suffix_of(path: &str) -> Option<Repr> {
    let last = path.rsplit('/').next()?;
    Repr::from_suffix(last.rsplit_once('.')?.1)
}

/// Decodes a filter body in the representation that was asked for.
fn decode(repr: Repr, headers: &HeaderMap, body: &[u8]) -> Result<Fetched> {
    let etag = headers
        .get(header::ETAG)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let (meta, filter) = match repr {
        Repr::Json => Document::parse(body)?,
        Repr::Hex => wire::decode_raw(header, body, true)?,
        Repr::Bin => wire::decode_raw(header, body, false)?,
    };
    Ok(Fetched { meta, filter, etag })
}
