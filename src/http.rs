//! The HTTP layer: routing, shared state and thin handlers over [`Service`].

mod access_log;
mod app;
mod atom;
mod auth;
mod chain;
mod client;
mod clock;
mod coding;
mod compact;
mod dashboard;
mod dictionaries;
mod error;
mod events;
mod exact;
mod filters;
mod guard;
mod history;
mod if_none_match;
mod ingest;
mod loading;
mod meta;
mod metrics;
mod negotiate;
mod openapi;
mod params;
mod paths;
mod ranges;
mod series;
mod stats;
mod timeouts;
mod universe;
mod websub;

pub use app::App;
pub use auth::Auth;
pub use error::ApiError;
pub use events::{EventSettings, Events};
/// The typed request layer of the router, for `benches/layers.rs` (against `from_fn`).
pub use guard::Guard;
pub use ingest::{decode_keys, BodyKind, MAX_ID_BYTES};
pub use metrics::{Metrics, Totals};
pub use negotiate::AVAILABLE_DICTIONARY;
pub use paths::{canonical_path, filter_path, FilterPath};
pub use series::run_sampler;
pub use websub::{signature as websub_signature, Hub, HubSettings};

use crate::service::Service;
use axum::http::{header, HeaderName, Method};
use axum::response::IntoResponse;
use axum::routing::{get, post};
use axum::Router;
use std::sync::Arc;
use std::time::Duration;
use tower_http::cors::{Any, CorsLayer};
use tower_http::decompression::RequestDecompressionLayer;
use tower_http::limit::RequestBodyLimitLayer;

/// Everything a handler needs, cloned per request (all shared behind `Arc`s).
#[derive(Clone)]
pub struct AppState {
    pub service: Arc<Service>,
    pub auth: Arc<Auth>,
    pub metrics: Arc<Metrics>,
    pub body_limit: usize,
    pub open_max_age: u64,
    /// How long a request may take, body included: a client trickling its body cannot
    /// hold a connection and a handler forever (408), nor can a handler (503).
    pub request_timeout: Duration,
    /// Ingest bodies read at once: bounds the memory uploads can hold.
    pub ingest_permits: Arc<tokio::sync::Semaphore>,
    /// Whether to log one line per request (setting `access_log`).
    pub access_log: bool,
    /// The node's event streams (`GET /events`).
    pub events: Arc<Events>,
    /// The WebSub hub of the feed of sealed hours (`POST /websub`).
    pub hub: Arc<Hub>,
}

/// The application as one `Router`, for in-process tests (`oneshot`): the whole stack
/// ([`App`]), as the server serves it.
pub fn router(state: AppState) -> Router {
    Router::new().fallback_service(app(state))
}

/// The application as the server runs it: one stack in front of the routes ([`App`]).
pub fn app(state: AppState) -> App {
    App::new(state.metrics.clone(), state.access_log, routes(state))
}

/// The application of a node in standby (cluster mode, PostgreSQL not reachable yet):
/// the same stack ([`App`]) around routes that answer 503 — `/healthz` `unavailable`
/// with `reason()`, ingest and reads `store_unavailable` with `Retry-After` — but
/// `/metrics` (`bloomcast_store_up 0`).
pub fn standby_app(
    metrics: Arc<Metrics>,
    access_log: bool,
    request_timeout: Duration,
    reason: impl Fn() -> String + Clone + Send + Sync + 'static,
) -> App {
    let routes = Router::new()
        .route(
            "/healthz",
            get(move || {
                let why = reason();
                async move { meta::standby_health(&why) }
            }),
        )
        .route(
            "/metrics",
            get(|| async { meta::exposition(metrics::standby_exposition()) }),
        )
        .fallback(|| async { error::ApiError::Unavailable })
        .layer(timeouts::layer(request_timeout));
    App::new(metrics, access_log, routes)
}

/// Any origin may read every response, its validators and `Bloom-*` headers included
/// (public for `examples/hyper_floor.rs`, whose stock floor sends the same headers).
/// The CORS headers are the same whatever the request's `Origin`, so they add nothing to
/// `Vary` (`tower_http`'s default lists `Origin` and the preflight headers, which would
/// split a shared cache's one object per hour into one per web page origin).
pub fn cors() -> CorsLayer {
    CorsLayer::new()
        .vary([] as [HeaderName; 0])
        .allow_origin(Any)
        .allow_methods([Method::GET, Method::HEAD])
        // `Last-Event-ID`: a page's own reader of `/events` resuming (EventSource sends
        // it without asking); `Cache-Control`: the fetch that follows an event asks the
        // caches between for a copy no older than it (`no-cache`).
        .allow_headers([
            header::ACCEPT,
            header::IF_NONE_MATCH,
            header::CACHE_CONTROL,
            HeaderName::from_static("last-event-id"),
        ])
        .expose_headers([
            header::ETAG,
            header::LINK,
            // The canonical URL of a compact grade asked for by another spelling.
            header::CONTENT_LOCATION,
            HeaderName::from_static("bloom-m"),
            HeaderName::from_static("bloom-k"),
            HeaderName::from_static("bloom-hash"),
            HeaderName::from_static("bloom-count"),
            HeaderName::from_static("bloom-complete"),
            HeaderName::from_static("bloom-fpp"),
            HeaderName::from_static("bloom-hour"),
            HeaderName::from_static("bloom-from"),
            HeaderName::from_static("bloom-to"),
            HeaderName::from_static("bloom-ribbon"),
            HeaderName::from_static("bloom-universe"),
            HeaderName::from_static("bloom-prev-header"),
            HeaderName::from_static("bloom-signature"),
            HeaderName::from_static("bloom-open-signature"),
            HeaderName::from_static("repr-digest"),
        ])
}

/// Every route, with what only routed requests need: the route tag the metrics read,
/// the loading gate, and the request timeout (408 or 503). The layers every request
/// passes are [`App`]'s.
fn routes(state: AppState) -> Router {
    // Uploads: the time the body has stamped on the request (408 past it), the bytes
    // sent bounded, the coding noted for messages, the body decoded as it is read (gzip
    // and zstd; anything else 415), the layers' bare answers given their JSON bodies.
    let limit = state.body_limit;
    let uploads = tower::ServiceBuilder::new()
        .layer(guard::Guard(timeouts::stamp(state.request_timeout)))
        .layer(axum::middleware::from_fn_with_state(limit, coding::note))
        .map_response(IntoResponse::into_response)
        .layer(RequestBodyLimitLayer::new(limit))
        .layer(RequestDecompressionLayer::new());
    Router::new()
        .route("/", get(meta::index))
        .route("/healthz", get(meta::healthz))
        .route("/metrics", get(meta::metrics))
        .route("/stats", get(stats::stats))
        .route("/dashboard", get(dashboard::page))
        .route("/dashboard/app.js", get(dashboard::app))
        .route("/dashboard/style.css", get(dashboard::style))
        .route("/dashboard/bloomcast.js", get(dashboard::client))
        .route("/openapi.json", get(openapi::document))
        .route(
            "/updates",
            post(ingest::post_updates).layer(uploads.clone()),
        )
        .route("/clock/confirm", post(clock::confirm))
        .route(
            "/universe",
            post(universe::post_universe)
                .layer(uploads)
                .get(universe::get_universe),
        )
        .route("/history", get(history::get_history))
        .route("/events", get(events::get_events))
        .route("/hours.atom", get(atom::get_feed))
        .route("/websub", post(websub::post_hub))
        .route("/.well-known/bloomcast.json", get(chain::well_known))
        .route("/checkpoint", get(chain::checkpoint))
        .route("/chain/{y}/{mo}/{d}/{h}", get(chain::get_chain))
        .route("/since/{y}/{mo}/{d}/{h}", get(filters::get_filter))
        .route(
            "/dictionaries/{y}/{mo}/{d}/{h}/{id}",
            get(dictionaries::get_dictionary),
        )
        .route("/{y}/{mo}/{d}/{h}", get(filters::get_filter))
        .route("/{y}/{mo}/{d}", get(filters::get_filter))
        .fallback(meta::not_found)
        .method_not_allowed_fallback(meta::method_not_allowed)
        // One stack, applied once: the router boxes (and clones per request) each
        // `.layer` separately. Outermost first: the route tag, the query's parameters
        // (400 for any the route does not read), the loading gate (outside the timeout:
        // waiting for the open hour to load never times out), the request timeout
        // (`timeouts`; uploads also stamp their body's deadline under it). Each is a typed
        // layer: a request costs none of them a boxed future.
        .layer(
            tower::ServiceBuilder::new()
                .layer(metrics::TagLayer)
                .layer(guard::Guard(params::only_known))
                .layer(loading::LoadingLayer(state.service.clone()))
                .layer(timeouts::layer(state.request_timeout)),
        )
        .with_state(state)
}
