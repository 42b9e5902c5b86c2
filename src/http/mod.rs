//! The HTTP layer: routing, shared state and thin handlers over [`Service`].

mod access_log;
mod auth;
mod chain;
mod coding;
mod compact;
mod cors;
mod dashboard;
mod deadline;
mod error;
mod fast;
mod filters;
pub mod h1;
mod head;
mod history;
mod ingest;
mod loading;
mod meta;
mod metrics;
mod negotiate;
mod paths;
mod prepared;
mod series;
mod stats;

pub use auth::Auth;
pub use error::ApiError;
pub use fast::{App, Wire};
pub use ingest::{decode_keys, BodyKind, MAX_ID_BYTES};
pub use metrics::{Metrics, Totals};
pub use negotiate::AVAILABLE_DICTIONARY;
pub use paths::{canonical_path, day_segments, hour_segments, parse_filter_path, FilterPath};
pub use series::run_sampler;

use crate::service::Service;
use axum::http::{header, HeaderName, Method};
use axum::routing::{get, post};
use axum::Router;
use std::sync::Arc;
use std::time::Duration;
use tower_http::cors::{Any, CorsLayer};
use tower_http::trace::{DefaultMakeSpan, DefaultOnResponse, TraceLayer};
use tracing::Level;

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
}

/// The application as one `Router`, for in-process tests (`oneshot`): the fast lane
/// in front of the routes, as [`app`] serves them.
pub fn router(state: AppState) -> Router {
    Router::new().fallback_service(app(state))
}

/// The application as the server runs it: the read path's fast lane ([`App`]) in front
/// of the routes.
pub fn app(state: AppState) -> App {
    let cors = cors::FastCorsLayer::new(cors_config());
    let headers = cors.headers();
    App::new(routes(state.clone(), cors), state, headers)
}

/// Any origin may read every response, its validators and `Bloom-*` headers included.
fn cors_config() -> CorsLayer {
    CorsLayer::new()
        .allow_origin(Any)
        .allow_methods([Method::GET, Method::HEAD])
        .allow_headers([header::ACCEPT, header::IF_NONE_MATCH])
        .expose_headers([
            header::ETAG,
            header::LINK,
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
            HeaderName::from_static("bloom-prev-header"),
            HeaderName::from_static("bloom-signature"),
            HeaderName::from_static("repr-digest"),
        ])
}

/// Every route, behind one stack of layers.
fn routes(state: AppState, cors: cors::FastCorsLayer) -> Router {
    let access_log = state.access_log;
    let router = Router::new()
        .route("/", get(meta::index))
        .route("/healthz", get(meta::healthz))
        .route("/metrics", get(meta::metrics))
        .route("/stats", get(stats::stats))
        .route("/dashboard", get(dashboard::page))
        .route("/dashboard/app.js", get(dashboard::app))
        .route("/dashboard/style.css", get(dashboard::style))
        .route("/dashboard/bloomcast.js", get(dashboard::client))
        .route("/updates", post(ingest::post_updates))
        .route("/history", get(history::get_history))
        .route("/.well-known/bloomcast.json", get(chain::well_known))
        .route("/chain/{y}/{mo}/{d}/{h}", get(chain::get_chain))
        .route("/since/{y}/{mo}/{d}/{h}", get(filters::get_since))
        .route("/{y}/{mo}/{d}/{h}", get(filters::get_hour))
        .route("/{y}/{mo}/{d}", get(filters::get_day))
        .fallback(meta::not_found)
        .method_not_allowed_fallback(meta::method_not_allowed)
        // One stack, applied once: the router boxes (and clones per request) each
        // `.layer` separately, so one layer call costs one box instead of five.
        // Outermost first: trace, panics, loading, the request timeout (408 or 503), CORS,
        // metrics.
        .layer(
            tower::ServiceBuilder::new()
                .layer(
                    TraceLayer::new_for_http()
                        .make_span_with(DefaultMakeSpan::new().level(Level::DEBUG))
                        .on_response(DefaultOnResponse::new().level(Level::DEBUG)),
                )
                // A panic in a handler is answered 500 `internal` and logged, never a
                // dropped connection; shared state guards against half-finished updates.
                .layer(tower_http::catch_panic::CatchPanicLayer::custom(
                    meta::panicked,
                ))
                // Outside the timeout: waiting for the open hour to load never times out.
                .layer(axum::middleware::from_fn_with_state(
                    state.service.clone(),
                    loading::wait_until_loaded,
                ))
                .layer(deadline::DeadlineLayer(state.request_timeout))
                .layer(cors)
                .layer(metrics::TrackLayer(state.metrics.clone())),
        )
        .with_state(state);
    if access_log {
        router.layer(axum::middleware::from_fn(access_log::log))
    } else {
        router
    }
}
