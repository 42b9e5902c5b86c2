//! `GET /openapi.json`: the OpenAPI 3.1 description of this API, `docs/openapi.json` as
//! kept in the repository and compiled in, so the served description is the reviewed one
//! (`tests/api/openapi.rs` checks that every route of the router is in it).

use axum::http::HeaderMap;
use axum::response::Response;

/// The description, byte for byte `docs/openapi.json`.
pub const DOCUMENT: &str = include_str!("../../docs/openapi.json");

/// The description as JSON, revalidated and gzipped as the index is.
pub async fn document(request: HeaderMap) -> Response {
    super::meta::revalidated_json(DOCUMENT.as_bytes().to_vec(), &request)
}
