//! `GET /openapi.json`: the OpenAPI description served is `docs/openapi.json`, and it
//! and the router describe the same routes and methods, so neither can drift alone.

use crate::helpers::*;
use std::collections::{BTreeMap, BTreeSet};

const DOCUMENT: &str = include_str!("../../docs/openapi.json");
const ROUTER_SOURCE: &str = include_str!("../../src/http.rs");

/// Suffixes a filter path's last segment may carry: the description gives each form an
/// operation of its own, the router one route for all.
const SUFFIXES: [&str; 8] = [
    ".ribbon.json",
    ".ribbon2",
    ".pages",
    ".ribbon",
    ".json",
    ".hex",
    ".bin",
    ".exact",
];

/// A path with every `{parameter}` named `{}` and a form's suffix after the last one
/// taken off: `/{year}/{month}/{day}/{hour}.hex` and `/{y}/{mo}/{d}/{h}` are both
/// `/{}/{}/{}/{}`.
fn shape(path: &str) -> String {
    let mut out = String::new();
    let mut in_param = false;
    for c in path.chars() {
        match c {
            '{' => {
                in_param = true;
                out.push('{');
            }
            '}' => {
                in_param = false;
                out.push('}');
            }
            _ if in_param => {}
            _ => out.push(c),
        }
    }
    for suffix in SUFFIXES {
        if let Some(stem) = out.strip_suffix(suffix) {
            if stem.ends_with("{}") {
                return stem.to_owned();
            }
        }
    }
    out
}

/// The routes of `http::routes` as its source declares them: path → methods (`get` also
/// answers `head`).
fn router_routes() -> BTreeMap<String, BTreeSet<String>> {
    let body = ROUTER_SOURCE
        .split("fn routes(")
        .nth(1)
        .expect("src/http.rs has fn routes");
    let mut routes = BTreeMap::new();
    for declaration in body.split(".route(").skip(1) {
        let declaration = declaration.split(".fallback(").next().unwrap();
        let path = declaration
            .split('"')
            .nth(1)
            .expect("a route's path is a string literal");
        let mut methods = BTreeSet::new();
        for (method, call) in [("get", "get("), ("post", "post(")] {
            if declaration.contains(call) {
                methods.insert(method.to_owned());
            }
        }
        if methods.contains("get") {
            methods.insert("head".to_owned());
        }
        assert!(!methods.is_empty(), "no method found for {path}");
        routes.insert(path.to_owned(), methods);
    }
    routes
}

/// The description's paths by shape → methods.
fn described() -> BTreeMap<String, BTreeSet<String>> {
    let doc: serde_json::Value = serde_json::from_str(DOCUMENT).unwrap();
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        let methods = out.entry(shape(path)).or_default();
        for method in item.as_object().unwrap().keys() {
            if ["get", "head", "post", "put", "delete", "patch", "options"]
                .contains(&method.as_str())
            {
                methods.insert(method.clone());
            }
        }
    }
    out
}

#[tokio::test]
async fn the_served_description_is_the_one_in_the_repository() {
    let app = TestApp::spawn().await;

    let reply = app.get("/openapi.json").await;

    assert_eq!(reply.status, 200);
    assert_eq!(reply.header("content-type"), Some("application/json"));
    assert_eq!(reply.body, DOCUMENT.as_bytes());
    let doc = reply.json();
    assert!(
        doc["openapi"].as_str().unwrap().starts_with("3.1."),
        "{}",
        doc["openapi"]
    );
    assert_eq!(doc["info"]["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(
        app.get("/").await.json()["urls"]["openapi"],
        "/openapi.json"
    );
}

#[tokio::test]
async fn every_route_of_the_router_is_described_with_its_methods_and_nothing_else() {
    let routes: BTreeMap<String, BTreeSet<String>> = router_routes()
        .into_iter()
        .map(|(path, methods)| (shape(&path), methods))
        .collect();
    let described = described();

    assert!(routes.len() >= 20, "too few routes parsed: {routes:?}");
    for (path, methods) in &routes {
        assert_eq!(
            described.get(path),
            Some(methods),
            "route {path}: the description's methods differ from the router's"
        );
    }
    for path in described.keys() {
        assert!(
            routes.contains_key(path),
            "{path} is described but not routed"
        );
    }
}

#[test]
fn shapes_name_every_form_of_a_filter_path_alike() {
    assert_eq!(shape("/{y}/{mo}/{d}/{h}"), "/{}/{}/{}/{}");
    assert_eq!(
        shape("/{year}/{month}/{day}/{hour}.ribbon.json"),
        "/{}/{}/{}/{}"
    );
    assert_eq!(
        shape("/since/{year}/{month}/{day}/{hour}.exact"),
        "/since/{}/{}/{}/{}"
    );
    assert_eq!(shape("/openapi.json"), "/openapi.json");
    assert_eq!(shape("/dashboard/app.js"), "/dashboard/app.js");
}

/// Every client error the description lists is the shared JSON error body with
/// `no-store`, and every read lists 400 (a query parameter the route does not read).
#[test]
fn every_operation_documents_its_errors_with_the_error_body() {
    let doc: serde_json::Value = serde_json::from_str(DOCUMENT).unwrap();
    let responses = &doc["components"]["responses"];
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, operation) in item.as_object().unwrap() {
            let statuses = operation["responses"].as_object().unwrap();
            if method == "get" || method == "head" {
                assert!(statuses.contains_key("400"), "{method} {path} lists no 400");
            }
            for (status, response) in statuses {
                // `/healthz` answers 503 with its own report, not an error body.
                let is_error = status.starts_with('4') || status.starts_with('5');
                if !is_error || (status.starts_with('5') && response.get("$ref").is_none()) {
                    continue;
                }
                let name = response["$ref"]
                    .as_str()
                    .and_then(|r| r.strip_prefix("#/components/responses/"))
                    .unwrap_or_else(|| panic!("{method} {path} {status} is not a shared error"));
                let shared = &responses[name];
                assert!(shared["headers"]["Cache-Control"].is_object(), "{name}");
                if method != "head" {
                    assert_eq!(
                        shared["content"]["application/json"]["schema"]["$ref"],
                        "#/components/schemas/Error",
                        "{name}"
                    );
                }
            }
        }
    }
}
