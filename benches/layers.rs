//! The router's request layers, typed (`http::Guard`: the response future an `Either`
//! nested in the one below it) against axum's `middleware::from_fn` (a boxed future and a
//! boxed copy of the service below, per layer and request), and the application called
//! in place on its connection (a hand-written hyper service holding the connection's own
//! copy, measured and not kept) against a clone of the boxed stack per request (what
//! hyper-util's `TowerToHyperService`, the server's, does).
//!
//! ```text
//! cargo bench --bench layers -- --warm-up-time 1 --measurement-time 2
//! ```
//!
//! Each request is a GET of an hour's path through four layers, each of which looks at
//! the request and marks it (as the query check and the deadline stamp do), into the
//! router's hour route and a handler that answers a fixed body.
//!
//! - `layers/typed`, `layers/from_fn`: the stack called in place, as a connection does.
//! - `call/in place`, `call/cloned`: the typed stack inside the application's outer
//!   layers (panics, CORS with the server's settings' shape), boxed as the application
//!   boxes it, called in place or cloned for each request.

use axum::body::Body;
use axum::extract::Request;
use axum::middleware::{from_fn, Next};
use axum::response::Response;
use axum::routing::get;
use axum::Router;
use bloomcast::http::Guard;
use criterion::{criterion_group, criterion_main, Criterion};
use std::convert::Infallible;
use tower::util::BoxCloneSyncService;
use tower::{Service, ServiceBuilder, ServiceExt};

#[derive(Clone, Copy)]
struct Mark(u8);

fn mark(n: u8) -> impl Fn(&mut Request) -> Option<Response> + Clone {
    move |request: &mut Request| {
        if request.uri().query().is_some_and(|q| q.contains("refuse")) {
            return Some(Response::new(Body::empty()));
        }
        request.extensions_mut().insert(Mark(n));
        None
    }
}

async fn marked(mut request: Request, next: Next, n: u8) -> Response {
    if let Some(answer) = mark(n)(&mut request) {
        return answer;
    }
    next.run(request).await
}

fn routes() -> Router {
    Router::new().route(
        "/{y}/{mo}/{d}/{h}",
        get(|request: Request| async move {
            let marked = request.extensions().get::<Mark>().map(|Mark(n)| *n);
            assert_eq!(marked, Some(3), "every layer ran, the last mark stays");
            "a filter"
        }),
    )
}

fn typed() -> Router {
    routes().layer(
        ServiceBuilder::new()
            .layer(Guard(mark(0)))
            .layer(Guard(mark(1)))
            .layer(Guard(mark(2)))
            .layer(Guard(mark(3))),
    )
}

fn boxed() -> Router {
    routes().layer(
        ServiceBuilder::new()
            .layer(from_fn(|r, n| marked(r, n, 0)))
            .layer(from_fn(|r, n| marked(r, n, 1)))
            .layer(from_fn(|r, n| marked(r, n, 2)))
            .layer(from_fn(|r, n| marked(r, n, 3))),
    )
}

/// The typed router inside the layers the application puts around every request.
fn application() -> BoxCloneSyncService<Request, Response, Infallible> {
    use axum::http::{header, HeaderName, Method};
    use tower_http::cors::{Any, CorsLayer};
    let cors = CorsLayer::new()
        .vary([] as [HeaderName; 0])
        .allow_origin(Any)
        .allow_methods([Method::GET, Method::HEAD])
        .allow_headers([header::ACCEPT, header::IF_NONE_MATCH])
        .expose_headers([header::ETAG, header::LINK, header::CONTENT_LOCATION]);
    BoxCloneSyncService::new(
        ServiceBuilder::new()
            .map_response(axum::response::IntoResponse::into_response)
            .layer(tower_http::catch_panic::CatchPanicLayer::new())
            .map_response(axum::response::IntoResponse::into_response)
            .layer(cors)
            .service(typed()),
    )
}

fn request() -> Request {
    Request::get("/2008/09/03/13").body(Body::empty()).unwrap()
}

async fn in_place<S>(stack: &mut S)
where
    S: Service<Request, Response = Response, Error = Infallible>,
{
    let response = stack.ready().await.unwrap().call(request()).await.unwrap();
    assert_eq!(response.status(), 200);
}

fn bench(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let mut group = c.benchmark_group("layers");
    let mut stack = typed();
    group.bench_function("typed", |b| {
        b.iter(|| runtime.block_on(in_place(&mut stack)))
    });
    let mut stack = boxed();
    group.bench_function("from_fn", |b| {
        b.iter(|| runtime.block_on(in_place(&mut stack)))
    });
    group.finish();

    let mut group = c.benchmark_group("call");
    let mut stack = BoxCloneSyncService::new(application());
    group.bench_function("in place", |b| {
        b.iter(|| runtime.block_on(in_place(&mut stack)))
    });
    group.bench_function("cloned", |b| {
        b.iter(|| {
            runtime.block_on(async {
                let response = stack.clone().oneshot(request()).await.unwrap();
                assert_eq!(response.status(), 200);
            })
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
