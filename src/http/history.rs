//! `GET /history?id=...`: the hours of the retention window in which each ID may have
//! changed, for publishers only. It needs the ingest token: answering it publicly would
//! let anyone probe IDs without downloading a filter.

use super::error::{ApiError, Result};
use super::AppState;
use crate::hour::Hour;
use crate::wire::check_id;
use axum::extract::{Query, State};
use axum::http::{header, HeaderMap};
use axum::response::{IntoResponse, Response};
use serde_json::json;

/// How many IDs one request may ask about.
pub const MAX_HISTORY_IDS: usize = 1000;

/// Answers from the service's filters; 401 without a valid token, 400 for no IDs, too
/// many, or an unreadable `since`.
#[tracing::instrument(skip_all)]
pub async fn get_history(
    State(state): State<AppState>,
    headers: HeaderMap,
    Query(pairs): Query<Vec<(String, String)>>,
) -> Result<Response> {
    state.auth.check(&headers)?;
    let (ids, since) = parse_query(pairs)?;
    let history = state.service.history(&ids, since).await?;
    let body = json!({
        "from": history.from.rfc3339(),
        "to": history.to.rfc3339(),
        "ids": history.ids.iter().map(|(id, hours)| json!({
            "id": id,
            "hours": hours.iter().map(|h| h.rfc3339()).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
    });
    Ok((
        [(header::CACHE_CONTROL, "private, no-store")],
        axum::Json(body),
    )
        .into_response())
}

/// The repeated `id` parameters and the optional `since`, as axum's `Query` decodes
/// them (`application/x-www-form-urlencoded`: `+` is a space, `%XX` a byte).
fn parse_query(pairs: Vec<(String, String)>) -> Result<(Vec<String>, Option<Hour>)> {
    let mut ids = Vec::new();
    let mut since = None;
    for (name, value) in pairs {
        match name.as_str() {
            "id" => {
                check_id(&value).map_err(|e| ApiError::BadRequest(format!("id {value:?} {e}")))?;
                ids.push(value);
            }
            "since" => {
                let hour = Hour::parse_flexible(&value)
                    .map_err(|e| ApiError::BadRequest(format!("since {value:?}: {e}")))?;
                since = Some(hour);
            }
            other => {
                return Err(ApiError::BadRequest(format!(
                    "unknown parameter {other:?}: expected id (repeatable) and since"
                )))
            }
        }
    }
    if ids.is_empty() {
        return Err(ApiError::BadRequest(
            "no IDs: pass one or more id= parameters".into(),
        ));
    }
    if ids.len() > MAX_HISTORY_IDS {
        return Err(ApiError::BadRequest(format!(
            "{} IDs in one request; the limit is {MAX_HISTORY_IDS}",
            ids.len()
        )));
    }
    Ok((ids, since))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(query: &str) -> Result<(Vec<String>, Option<Hour>)> {
        let uri: axum::http::Uri = format!("/history?{query}").parse().unwrap();
        parse_query(Query::try_from_uri(&uri).unwrap().0)
    }

    #[test]
    fn repeated_ids_are_percent_decoded_in_order() {
        let (ids, since) = parse("id=user%3A1&id=caf%C3%A9&id=a+b").unwrap();
        assert_eq!(ids, ["user:1", "café", "a b"]);
        let (ids, _) = parse("id=user%3a1").unwrap();
        assert_eq!(ids, ["user:1"], "either case of hex digit");
        assert_eq!(since, None);
        let (_, since) = parse("id=x&since=2008-09-03T13").unwrap();
        assert_eq!(since, Some(crate::hour::hour_of(2008, 9, 3, 13).unwrap()));
    }

    #[test]
    fn no_ids_and_unknown_parameters_are_refused() {
        for bad in ["", "since=2008-09-03T13", "id=x&who=y", "id=x&since=later"] {
            assert!(matches!(parse(bad), Err(ApiError::BadRequest(_))), "{bad}");
        }
    }
}
