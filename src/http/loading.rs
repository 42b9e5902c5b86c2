//! Requests that need the open hour wait until it is loaded after a start, outside the
//! request timeout; closed hours, `/healthz` and `/metrics` are answered meanwhile.

use super::paths::filter_path;
use crate::service::{Service, Target};
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;
use std::sync::Arc;

pub async fn wait_until_loaded(
    State(service): State<Arc<Service>>,
    request: Request,
    next: Next,
) -> Response {
    if !service.is_loaded() && needs_open_hour(&service, request.uri().path()) {
        service.wait_loaded().await;
    }
    next.run(request).await
}

/// Everything but health, metrics and hours before the current one reads or writes the
/// open hour (ingest, the index, the open hour, unions ending now).
fn needs_open_hour(service: &Service, path: &str) -> bool {
    if matches!(path, "/healthz" | "/metrics") {
        return false;
    }
    match filter_path(path) {
        Ok((Target::Hour(hour), _)) => hour >= service.current_hour(),
        _ => true,
    }
}
