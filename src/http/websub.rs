//! `POST /websub`: a WebSub hub (W3C WebSub) for the feed of sealed hours
//! (`/hours.atom`), so that a feed aggregator is told of each sealed hour within seconds,
//! the way it is told of any feed it follows, without polling.
//!
//! - **Subscribing** (`hub.mode=subscribe|unsubscribe`, `hub.callback`, `hub.topic`,
//!   `hub.lease_seconds`, `hub.secret`, form-encoded): checked at once (`400` for a
//!   request that is not one, a topic that is not this server's feed, a callback that is
//!   not `http`/`https` or resolves into a network not allowed; `503` past
//!   `websub_max_subscriptions`), answered `202`, then the intent is verified: the hub
//!   GETs the callback with a `hub.challenge`, and only a `2xx` echoing it makes (or
//!   ends) the subscription. Leases run `hub.lease_seconds`, at most
//!   `websub_max_lease_seconds` (its default too).
//! - **Kept in the store** (`Store::subscriptions`), so they survive restarts and every
//!   node of a fleet shares them.
//! - **Delivery**: on each sealed hour, one node (the first to claim the hour in the
//!   store) POSTs the feed, as read from the topic's own URL, to every live
//!   subscription: `Content-Type: application/atom+xml`, `Link` to the hub and the topic,
//!   and with a secret `X-Hub-Signature: sha256=<HMAC-SHA256 of the body>`. A failed
//!   delivery is tried again 5 times over about a minute (1, 2, 4, 8, 16 s), then logged and
//!   counted. At most `websub_deliveries` are in flight.
//! - **Leases**: a subscription within ten minutes of its end (a tenth of the longest lease
//!   when that is less) is
//!   verified again as a renewal (`hub.mode=subscribe`, the longest lease): a subscriber that
//!   confirms keeps it; one that does not is dropped when it runs out. Every drop (lease
//!   out, refused verification) is logged and counted (`/stats` `websub`).
//! - **Callbacks** go only to `http`/`https` URLs whose host resolves to public addresses,
//!   or into networks `websub_callback_networks` lists (e.g. `10.0.0.0/8`): no delivery
//!   into the server's own network by default. The address checked is the address
//!   connected to (no second lookup), and redirects are not followed.

use super::atom::{self, Origin};
use super::error::{ApiError, Result};
use super::AppState;
use crate::hour::Hour;
use crate::service::Service;
use crate::store::{Store, Subscription};
use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use hmac::{Hmac, Mac};
use std::collections::{HashMap, HashSet};
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The hub's path.
pub const PATH: &str = "/websub";

/// Longest callback URL taken.
const MAX_CALLBACK: usize = 2048;
/// Longest `hub.secret` taken (WebSub: under 200 bytes).
const MAX_SECRET: usize = 199;
/// Tries of one delivery, and the first wait between them (doubling).
const TRIES: u32 = 6;
const FIRST_BACKOFF: Duration = Duration::from_secs(1);
/// How often leases are looked at.
const LEASE_CHECK: Duration = Duration::from_secs(30);
/// A subscription is asked to renew this many seconds before its lease runs out, at
/// most (a tenth of `websub_max_lease_seconds` when that is less).
const RENEW_WINDOW: i64 = 600;

/// The hub's settings (`websub_*`).
#[derive(Debug, Clone)]
pub struct HubSettings {
    pub max_subscriptions: usize,
    pub max_lease: Duration,
    pub deliveries: usize,
    /// Networks callbacks may resolve into besides public addresses.
    pub callback_networks: Vec<ipnet::IpNet>,
    /// How long one verification or delivery may take.
    pub timeout: Duration,
}

impl Default for HubSettings {
    fn default() -> HubSettings {
        HubSettings {
            max_subscriptions: 1000,
            max_lease: Duration::from_secs(10 * 24 * 3600),
            deliveries: 16,
            callback_networks: Vec::new(),
            timeout: Duration::from_secs(10),
        }
    }
}

/// What the hub did, for `/stats`.
#[derive(Debug, Default)]
pub struct HubCounts {
    verified: AtomicU64,
    refused: AtomicU64,
    expired: AtomicU64,
    delivered: AtomicU64,
    failed: AtomicU64,
    renewed: AtomicU64,
}

/// The hub.
pub struct Hub {
    settings: HubSettings,
    store: Arc<dyn Store>,
    /// Leases are kept in this clock's time.
    clock: Arc<dyn crate::clock::Clock>,
    counts: HubCounts,
    in_flight: Arc<tokio::sync::Semaphore>,
    /// Subscriptions (callback, topic, expires) asked to renew already.
    renewing: Mutex<HashSet<(String, String, i64)>>,
}

/// A subscription request, as read from the form.
#[derive(Debug, Clone)]
struct Request {
    subscribe: bool,
    callback: url::Url,
    topic: url::Url,
    lease: Duration,
    secret: Option<String>,
}

impl Hub {
    pub fn new(
        settings: HubSettings,
        store: Arc<dyn Store>,
        clock: Arc<dyn crate::clock::Clock>,
    ) -> Hub {
        Hub {
            clock,
            in_flight: Arc::new(tokio::sync::Semaphore::new(settings.deliveries.max(1))),
            settings,
            store,
            counts: HubCounts::default(),
            renewing: Mutex::new(HashSet::new()),
        }
    }

    /// The figures for `/stats`: subscriptions held (`null` when the store cannot say)
    /// and what the hub did since start.
    pub async fn stats(&self) -> serde_json::Value {
        let held = self.store.subscriptions().await.ok().map(|s| s.len());
        let c = &self.counts;
        let n = |a: &AtomicU64| a.load(Ordering::Relaxed);
        serde_json::json!({
            "subscriptions": held,
            "verified": n(&c.verified),
            "refused": n(&c.refused),
            "renewed": n(&c.renewed),
            "expired": n(&c.expired),
            "delivered": n(&c.delivered),
            "failed_deliveries": n(&c.failed),
        })
    }

    /// Reads and checks a subscription request.
    async fn read(&self, form: &[(String, String)]) -> Result<Request> {
        let field = |name: &str| {
            form.iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.as_str())
        };
        let required = |name: &str| {
            field(name).filter(|v| !v.is_empty()).ok_or_else(|| {
                ApiError::BadRequest(format!("{name} is required (WebSub subscription request)"))
            })
        };
        let subscribe = match required("hub.mode")? {
            "subscribe" => true,
            "unsubscribe" => false,
            other => {
                return Err(ApiError::BadRequest(format!(
                    "hub.mode {other:?}: this hub takes subscribe or unsubscribe"
                )))
            }
        };
        let callback = required("hub.callback")?;
        if callback.len() > MAX_CALLBACK {
            return Err(ApiError::BadRequest(format!(
                "hub.callback is longer than {MAX_CALLBACK} bytes"
            )));
        }
        let callback = url::Url::parse(callback)
            .map_err(|e| ApiError::BadRequest(format!("hub.callback is not a URL: {e}")))?;
        if !matches!(callback.scheme(), "http" | "https") || callback.host_str().is_none() {
            return Err(ApiError::BadRequest(
                "hub.callback must be an http or https URL with a host".into(),
            ));
        }
        let topic = url::Url::parse(required("hub.topic")?)
            .map_err(|e| ApiError::BadRequest(format!("hub.topic is not a URL: {e}")))?;
        if topic.path() != atom::PATH || !matches!(topic.scheme(), "http" | "https") {
            return Err(ApiError::BadRequest(format!(
                "hub.topic {topic}: this hub publishes only this server's feed of sealed hours, {}",
                atom::PATH
            )));
        }
        let lease = match field("hub.lease_seconds").filter(|v| !v.is_empty()) {
            None => self.settings.max_lease,
            Some(v) => match v.parse::<u64>() {
                Ok(n) if n > 0 => Duration::from_secs(n).min(self.settings.max_lease),
                _ => {
                    return Err(ApiError::BadRequest(format!(
                        "hub.lease_seconds {v:?} must be a whole number of seconds above 0"
                    )))
                }
            },
        };
        let secret = field("hub.secret").filter(|v| !v.is_empty());
        if secret.is_some_and(|s| s.len() > MAX_SECRET) {
            return Err(ApiError::BadRequest(
                "hub.secret must be under 200 bytes".into(),
            ));
        }
        self.allowed(&callback).await?;
        Ok(Request {
            subscribe,
            callback,
            topic,
            lease,
            secret: secret.map(str::to_owned),
        })
    }

    /// The addresses `url`'s host resolves to, each allowed (public, or in a listed
    /// network); the one lookup a request to it uses.
    async fn allowed(&self, url: &url::Url) -> Result<Vec<SocketAddr>> {
        let host = url.host_str().unwrap_or_default().to_owned();
        let port = url.port_or_known_default().unwrap_or(80);
        let lookup = host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_owned();
        let lookup = tokio::net::lookup_host((lookup.as_str(), port));
        let resolved = tokio::time::timeout(self.settings.timeout, lookup)
            .await
            .map_err(|_| {
                ApiError::BadRequest(format!(
                    "hub.callback's host {host} did not resolve in time"
                ))
            })?;
        let addrs: Vec<SocketAddr> = resolved
            .map_err(|e| {
                ApiError::BadRequest(format!("hub.callback's host {host} does not resolve: {e}"))
            })?
            .collect();
        if addrs.is_empty() {
            return Err(ApiError::BadRequest(format!(
                "hub.callback's host {host} has no address"
            )));
        }
        for addr in &addrs {
            let ip = addr.ip();
            let listed = self
                .settings
                .callback_networks
                .iter()
                .any(|n| n.contains(&ip));
            if !listed && !is_public(ip) {
                return Err(ApiError::BadRequest(format!(
                    "hub.callback's host {host} resolves to {ip}, which is not a public address: \
                     this hub calls back only public addresses and the networks \
                     websub_callback_networks lists"
                )));
            }
        }
        Ok(addrs)
    }

    /// An HTTP client that connects `url`'s host to `addrs` only, following no redirect.
    fn client_to(&self, url: &url::Url, addrs: &[SocketAddr]) -> reqwest::Client {
        let mut builder = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(self.settings.timeout)
            .connect_timeout(self.settings.timeout);
        if let Some(host) = url.host_str() {
            builder = builder.resolve_to_addrs(host, addrs);
        }
        builder.build().unwrap_or_default()
    }

    /// Verifies the intent of `request` with its callback, then makes (or ends) the
    /// subscription; whether the subscriber confirmed.
    async fn verify(&self, request: &Request) -> bool {
        let outcome = self.verify_once(request).await;
        match &outcome {
            Ok(()) => {
                self.counts.verified.fetch_add(1, Ordering::Relaxed);
                let stored = if request.subscribe {
                    let expires = self.clock.now().timestamp() + request.lease.as_secs() as i64;
                    self.store
                        .put_subscription(&Subscription {
                            callback: request.callback.to_string(),
                            topic: request.topic.to_string(),
                            secret: request.secret.clone(),
                            expires,
                        })
                        .await
                } else {
                    self.store
                        .remove_subscription(request.callback.as_str(), request.topic.as_str())
                        .await
                        .map(drop)
                };
                match stored {
                    Ok(()) => tracing::info!(callback = %request.callback, topic = %request.topic,
                        subscribe = request.subscribe, lease_s = request.lease.as_secs(), "WebSub subscription verified"),
                    Err(e) => {
                        tracing::warn!(callback = %request.callback, error = %e, "WebSub subscription verified but not stored");
                        return false;
                    }
                }
                true
            }
            Err(why) => {
                self.counts.refused.fetch_add(1, Ordering::Relaxed);
                tracing::warn!(callback = %request.callback, topic = %request.topic,
                    subscribe = request.subscribe, reason = %why, "WebSub intent not verified: nothing changed");
                false
            }
        }
    }

    async fn verify_once(&self, request: &Request) -> std::result::Result<(), String> {
        let addrs = self
            .allowed(&request.callback)
            .await
            .map_err(|e| e.to_string())?;
        let mut challenge = [0u8; 16];
        getrandom::fill(&mut challenge).map_err(|e| format!("no randomness: {e}"))?;
        let challenge = hex::encode(challenge);
        let mut url = request.callback.clone();
        {
            let mut query = url.query_pairs_mut();
            query
                .append_pair(
                    "hub.mode",
                    if request.subscribe {
                        "subscribe"
                    } else {
                        "unsubscribe"
                    },
                )
                .append_pair("hub.topic", request.topic.as_str())
                .append_pair("hub.challenge", &challenge);
            if request.subscribe {
                query.append_pair("hub.lease_seconds", &request.lease.as_secs().to_string());
            }
        }
        let response = self
            .client_to(&request.callback, &addrs)
            .get(url)
            .send()
            .await
            .map_err(|e| format!("the callback did not answer: {e}"))?;
        let status = response.status();
        if !status.is_success() {
            return Err(format!("the callback answered {status}"));
        }
        let body = response.bytes().await.map_err(|e| e.to_string())?;
        if body.as_ref() != challenge.as_bytes() {
            return Err("the callback did not echo hub.challenge".into());
        }
        Ok(())
    }

    /// Delivers `hour`'s seal to every live subscription, if this node claims it.
    async fn deliver(self: &Arc<Self>, service: &Arc<Service>, hour: Hour) {
        match self.store.claim_delivery(hour).await {
            Ok(true) => {}
            Ok(false) => return,
            Err(e) => {
                tracing::warn!(%hour, error = %e, "cannot claim the WebSub delivery of a sealed hour; trying at the next change");
                return;
            }
        }
        let subscriptions = match self.store.subscriptions().await {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!(%hour, error = %e, "cannot read the WebSub subscriptions: no delivery for this hour");
                return;
            }
        };
        let now = self.clock.now().timestamp();
        // The feed as read from each topic's URL, rendered once for all its subscribers
        // (and their retries).
        let mut feeds: HashMap<String, Arc<str>> = HashMap::new();
        for subscription in subscriptions.into_iter().filter(|s| s.expires > now) {
            let body = match feeds.get(&subscription.topic) {
                Some(body) => body.clone(),
                None => match feed_of(service, &subscription.topic).await {
                    Ok(body) => {
                        feeds.insert(subscription.topic.clone(), body.clone());
                        body
                    }
                    Err(e) => {
                        self.counts.failed.fetch_add(1, Ordering::Relaxed);
                        tracing::warn!(callback = %subscription.callback, %hour, error = %e,
                            "WebSub delivery failed: the feed cannot be read");
                        continue;
                    }
                },
            };
            let hub = self.clone();
            let Ok(slot) = self.in_flight.clone().acquire_owned().await else {
                return;
            };
            tokio::spawn(async move {
                hub.deliver_one(&subscription, &body, hour).await;
                drop(slot);
            });
        }
    }

    async fn deliver_one(&self, s: &Subscription, body: &str, hour: Hour) {
        let mut wait = FIRST_BACKOFF;
        let mut last = String::new();
        for attempt in 1..=TRIES {
            match self.post(s, body).await {
                Ok(()) => {
                    self.counts.delivered.fetch_add(1, Ordering::Relaxed);
                    tracing::debug!(callback = %s.callback, %hour, attempt, "WebSub delivery made");
                    return;
                }
                Err(e) => last = e,
            }
            if attempt < TRIES {
                tokio::time::sleep(wait).await;
                wait *= 2;
            }
        }
        self.counts.failed.fetch_add(1, Ordering::Relaxed);
        tracing::warn!(callback = %s.callback, %hour, tries = TRIES, error = %last,
            "WebSub delivery failed; the subscription stays, and gets the next hour's");
    }

    async fn post(&self, s: &Subscription, body: &str) -> std::result::Result<(), String> {
        let callback = url::Url::parse(&s.callback).map_err(|e| e.to_string())?;
        let origin = origin_of(&s.topic)?;
        let addrs = self.allowed(&callback).await.map_err(|e| e.to_string())?;
        let links = format!(
            "<{}{}>; rel=\"hub\", <{}>; rel=\"self\"",
            origin.base(),
            PATH,
            s.topic
        );
        let mut request = self
            .client_to(&callback, &addrs)
            .post(callback)
            .header(header::CONTENT_TYPE, "application/atom+xml")
            .header(header::LINK, links);
        if let Some(secret) = &s.secret {
            request = request.header("x-hub-signature", signature(secret, body.as_bytes()));
        }
        let response = request
            .body(body.to_owned())
            .send()
            .await
            .map_err(|e| e.to_string())?;
        if response.status().is_success() {
            Ok(())
        } else {
            Err(format!("the callback answered {}", response.status()))
        }
    }

    /// Drops subscriptions whose lease ran out, and asks those near the end to renew.
    async fn check_leases(self: &Arc<Self>) {
        let Ok(subscriptions) = self.store.subscriptions().await else {
            return;
        };
        let now = self.clock.now().timestamp();
        // Renewals asked of leases that have ended since (renewed or dropped) are done.
        crate::sync::lock(&self.renewing).retain(|(_, _, expires)| *expires > now);
        for s in subscriptions {
            if s.expires <= now {
                if let Ok(true) = self.store.remove_subscription(&s.callback, &s.topic).await {
                    self.counts.expired.fetch_add(1, Ordering::Relaxed);
                    tracing::warn!(callback = %s.callback, topic = %s.topic,
                        "WebSub subscription dropped: its lease ran out without a renewal");
                }
                continue;
            }
            let window = (self.settings.max_lease.as_secs() as i64 / 10).min(RENEW_WINDOW);
            let key = (s.callback.clone(), s.topic.clone(), s.expires);
            if s.expires - now > window || !crate::sync::lock(&self.renewing).insert(key) {
                continue;
            }
            let (Ok(callback), Ok(topic)) =
                (url::Url::parse(&s.callback), url::Url::parse(&s.topic))
            else {
                continue;
            };
            let request = Request {
                subscribe: true,
                callback,
                topic,
                lease: self.settings.max_lease,
                secret: s.secret.clone(),
            };
            let hub = self.clone();
            tokio::spawn(async move {
                if hub.verify(&request).await {
                    hub.counts.renewed.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
    }

    /// Delivers each hour sealed from now on, and the last two hours' seals not yet
    /// delivered (a node that was down), and keeps the leases, until `shutdown`.
    pub async fn run(
        self: Arc<Self>,
        service: Arc<Service>,
        shutdown: impl std::future::Future<Output = ()>,
    ) {
        tokio::pin!(shutdown);
        let mut changes = service.hours().changes();
        let mut through: Option<Hour> = Some(Hour::from_index(service.current_hour().index() - 3));
        let mut leases = tokio::time::interval(LEASE_CHECK);
        loop {
            let now = service.current_hour();
            let from = through.map_or(now, Hour::next);
            if from < now {
                match service
                    .hours()
                    .sealed_notes(from, (now.index() - from.index()) as usize)
                    .await
                {
                    Ok(notes) => {
                        for note in notes.iter().filter(|n| n.hour < now) {
                            self.deliver(&service, note.hour).await;
                            through = Some(note.hour);
                        }
                    }
                    Err(e) => tracing::warn!(error = %e, "cannot read the sealed hours for WebSub"),
                }
            }
            tokio::select! {
                changed = changes.changed() => if changed.is_err() { return },
                _ = leases.tick() => self.check_leases().await,
                () = &mut shutdown => return,
            }
        }
    }
}

/// The origin a topic URL names: the feed delivered for it is read as from there.
fn origin_of(topic: &str) -> std::result::Result<Origin, String> {
    let topic = url::Url::parse(topic).map_err(|e| e.to_string())?;
    Ok(Origin {
        authority: topic[url::Position::BeforeHost..url::Position::AfterPort].to_owned(),
        https: topic.scheme() == "https",
    })
}

/// The feed as read from `topic`.
async fn feed_of(service: &Service, topic: &str) -> std::result::Result<Arc<str>, String> {
    let origin = origin_of(topic)?;
    let xml = atom::feed(service, &origin)
        .await
        .map_err(|e| e.to_string())?;
    Ok(Arc::from(xml))
}

/// `X-Hub-Signature` of `body` under `secret`: `sha256=<lowercase hex HMAC>`.
pub fn signature(secret: &str, body: &[u8]) -> String {
    let mut mac =
        Hmac::<sha2::Sha256>::new_from_slice(secret.as_bytes()).expect("HMAC takes any key");
    mac.update(body);
    format!("sha256={}", hex::encode(mac.finalize().into_bytes()))
}

/// Whether `ip` is an address on the public internet (not loopback, private, link-local,
/// unique-local, shared, documentation, multicast or unspecified).
fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let o = v4.octets();
            !(v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_broadcast()
                || v4.is_documentation()
                || v4.is_unspecified()
                || v4.is_multicast()
                || o[0] == 0
                || (o[0] == 100 && (64..128).contains(&o[1]))
                || (o[0] == 192 && o[1] == 0 && o[2] == 0)
                || (o[0] == 198 && (18..20).contains(&o[1]))
                || o[0] >= 240)
        }
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return is_public(IpAddr::V4(v4));
            }
            let s = v6.segments();
            !(v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (s[0] & 0xfe00) == 0xfc00
                || (s[0] & 0xffc0) == 0xfe80
                || (s[0] == 0x2001 && s[1] == 0x0db8))
        }
    }
}

/// `POST /websub`: a subscription request (form-encoded): `202` once it is checked; the
/// intent is verified after.
pub async fn post_hub(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: bytes::Bytes,
) -> Result<Response> {
    let form_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| {
            t.trim()
                .to_ascii_lowercase()
                .starts_with("application/x-www-form-urlencoded")
        });
    if !form_type {
        return Err(ApiError::UnsupportedMediaType(
            "a WebSub request is a form: Content-Type: application/x-www-form-urlencoded".into(),
        ));
    }
    let form: Vec<(String, String)> = url::form_urlencoded::parse(&body).into_owned().collect();
    let hub = state.hub.clone();
    let request = hub.read(&form).await?;
    if request.subscribe {
        let held = hub
            .store
            .subscriptions()
            .await
            .map_err(crate::service::ServiceError::from)?;
        let renewal = held
            .iter()
            .any(|s| s.callback == request.callback.as_str() && s.topic == request.topic.as_str());
        if !renewal && held.len() >= hub.settings.max_subscriptions {
            return Err(ApiError::Busy(format!(
                "this hub keeps {} subscriptions, its most (websub_max_subscriptions)",
                hub.settings.max_subscriptions
            )));
        }
    }
    tokio::spawn(async move {
        hub.verify(&request).await;
    });
    Ok(StatusCode::ACCEPTED.into_response())
}
