//! Query parameters of the read routes: each route accepts the few it reads, and a
//! request naming any other (or one of its own twice, but `id`) is 400 `bad_request`,
//! never ignored. An ignored parameter would give one resource as many URLs as a client
//! cares to invent, each a miss for every cache on the way and, for a build, a fresh
//! one (docs/PROTOCOL.md section 9, "Query parameters").
//!
//! A layer of the router ([`super::routes`]), so it sees the route matched.

use super::error::ApiError;
use axum::extract::{MatchedPath, Query, Request};
use axum::http::{Method, Uri};
use axum::response::{IntoResponse, Response};

/// The parameters the read route `route` (as matched) accepts, or `None` for one this
/// layer does not judge (writes, and what matched no route: 404 or 405 follows).
pub fn accepted(route: &str) -> Option<&'static [&'static str]> {
    Some(match route {
        "/{y}/{mo}/{d}/{h}" | "/{y}/{mo}/{d}" | "/since/{y}/{mo}/{d}/{h}" => &["fpp"],
        "/chain/{y}/{mo}/{d}/{h}" => &["limit"],
        "/stats" => &["hours"],
        "/history" => &["id", "since"],
        "/"
        | "/healthz"
        | "/metrics"
        | "/dashboard"
        | "/dashboard/app.js"
        | "/dashboard/style.css"
        | "/dashboard/bloomcast.js"
        | "/universe"
        | "/.well-known/bloomcast.json"
        | "/checkpoint"
        | "/openapi.json"
        | "/events"
        | "/hours.atom"
        | "/dictionaries/{y}/{mo}/{d}/{h}/{id}" => &[],
        _ => return None,
    })
}

/// Parameters that may be given more than once.
const REPEATABLE: &[&str] = &["id"];

/// Why the query of `uri` does not suit a route accepting `accepted`, if it does not.
pub fn check(route: &str, accepted: &[&str], uri: &Uri) -> Result<(), ApiError> {
    let Query(pairs) = Query::<Vec<(String, String)>>::try_from_uri(uri)
        .map_err(|e| ApiError::BadRequest(format!("unreadable query: {e}")))?;
    let mut seen: Vec<&str> = Vec::new();
    for (name, _) in &pairs {
        let name = name.as_str();
        if !accepted.contains(&name) {
            let takes = if accepted.is_empty() {
                "no query parameters".to_owned()
            } else {
                format!("only {}", accepted.join(", "))
            };
            return Err(ApiError::BadRequest(format!(
                "unknown query parameter {name:?}: {route} takes {takes}"
            )));
        }
        if seen.contains(&name) && !REPEATABLE.contains(&name) {
            return Err(ApiError::BadRequest(format!(
                "query parameter {name:?} given more than once"
            )));
        }
        seen.push(name);
    }
    Ok(())
}

/// The guard ([`super::guard::Guard`]): refuses a read whose query names what its route
/// does not read.
pub fn only_known(request: &mut Request) -> Option<Response> {
    let query_of_a_read = request.uri().query().is_some()
        && (request.method() == Method::GET || request.method() == Method::HEAD);
    if !query_of_a_read {
        return None;
    }
    let matched = request.extensions().get::<MatchedPath>()?.as_str();
    let accepted = accepted(matched)?;
    check(matched, accepted, request.uri())
        .err()
        .map(IntoResponse::into_response)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(route: &str, accepted: &[&str], query: &str) -> Result<(), ApiError> {
        super::check(route, accepted, &format!("/x?{query}").parse().unwrap())
    }

    #[test]
    fn only_the_routes_own_parameters_pass_once() {
        let filter = accepted("/{y}/{mo}/{d}/{h}").unwrap();
        assert!(check("/x", filter, "fpp=0.01").is_ok());
        assert!(check("/x", filter, "").is_ok());
        assert!(check("/x", filter, "fpp=0.01&x=1").is_err());
        assert!(check("/x", filter, "x").is_err());
        assert!(check("/x", filter, "fpp=1e-3&fpp=1e-4").is_err());
        let history = accepted("/history").unwrap();
        assert!(check("/history", history, "id=a&id=b&since=2008-09-03T13").is_ok());
        assert!(check("/history", history, "since=a&since=b").is_err());
        assert!(check("/", accepted("/").unwrap(), "v=2").is_err());
        assert_eq!(accepted("/updates"), None);
    }
}
