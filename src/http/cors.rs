//! CORS: every response is readable from any origin, with its validators and `Bloom-*`
//! headers exposed to scripts.
//!
//! `tower_http::cors` decides the headers; this layer only precomputes them. For our
//! configuration (any origin, no credentials, no private network) the headers of an
//! actual (non-preflight) request do not depend on the request, yet `Cors` rebuilds them
//! per request (a header map, the joined `Vary` list) and its configuration is cloned
//! with every request's service. Here they are computed once, by running `Cors` itself
//! on a probe request, and appended as `Cors` would; preflights (`OPTIONS`) still go
//! through `Cors`.

use axum::extract::Request;
use axum::http::{header, HeaderMap, HeaderName, HeaderValue, Method};
use axum::response::Response;
use std::collections::BTreeSet;
use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use tower::util::BoxCloneSyncService;
use tower::{Layer, Service, ServiceExt};
use tower_http::cors::CorsLayer;

/// The headers `Cors` adds to an actual request's response, in its order.
pub struct CorsHeaders {
    vary: Option<HeaderValue>,
    others: Vec<(HeaderName, HeaderValue)>,
}

/// [`CorsLayer`] with the actual-request headers computed once.
#[derive(Clone)]
pub struct FastCorsLayer {
    /// For preflights; behind an `Arc` because axum clones a route's whole service stack
    /// per request, and a `CorsLayer` clone allocates.
    cors: Arc<CorsLayer>,
    /// Leaked once per application: a request's future holds a `'static` reference,
    /// so no reference count that every core shares is written per request.
    headers: &'static CorsHeaders,
}

impl FastCorsLayer {
    /// # Panics
    /// If `cors` makes its headers depend on the request (credentials, a list of
    /// origins, a predicate): this layer is only for request-independent configurations.
    pub fn new(cors: CorsLayer) -> FastCorsLayer {
        let probe = |origin: Option<&'static str>| {
            let echo = tower::service_fn(|_req: Request| async {
                Ok::<_, Infallible>(Response::new(axum::body::Body::empty()))
            });
            let mut request = Request::new(axum::body::Body::empty());
            if let Some(origin) = origin {
                request
                    .headers_mut()
                    .insert(header::ORIGIN, HeaderValue::from_static(origin));
            }
            let response = cors.clone().layer(echo).oneshot(request);
            let response = futures_now(response).expect("the probe answers at once");
            response.expect("infallible").into_parts().0.headers
        };
        let with_origin = probe(Some("https://example.org"));
        assert_eq!(
            with_origin,
            probe(None),
            "FastCorsLayer needs request-independent CORS headers"
        );
        FastCorsLayer {
            headers: Box::leak(Box::new(CorsHeaders::from(with_origin))),
            cors: Arc::new(cors),
        }
    }
}

impl FastCorsLayer {
    /// The headers added to every actual request's response: the fast lane applies
    /// them when it prepares a response, once per rendering, instead of per request.
    pub fn headers(&self) -> &'static CorsHeaders {
        self.headers
    }
}

impl CorsHeaders {
    /// Adds the headers to a response's, as `Cors` does: `Vary` appended to the
    /// handler's, the others replaced.
    pub fn apply(&self, out: &mut HeaderMap) {
        if let Some(vary) = &self.vary {
            out.append(header::VARY, vary.clone());
        }
        for (name, value) in &self.others {
            out.insert(name.clone(), value.clone());
        }
    }
}

impl From<HeaderMap> for CorsHeaders {
    fn from(map: HeaderMap) -> CorsHeaders {
        // In the map's order, which is the order `Cors` leaves them in.
        let others = map
            .iter()
            .filter(|(name, _)| *name != header::VARY)
            .map(|(name, value)| (name.clone(), interned(value)))
            .collect();
        CorsHeaders {
            vary: map.get(header::VARY).map(interned),
            others,
        }
    }
}

/// A static copy of a header value: cloning a `HeaderValue` built at run time bumps a
/// reference count that every core shares, cloning a static one writes nothing. Each
/// distinct value is leaked once for the life of the process (two here).
fn interned(value: &HeaderValue) -> HeaderValue {
    static VALUES: Mutex<BTreeSet<&'static str>> = Mutex::new(BTreeSet::new());
    let text = value.to_str().expect("CORS header values are ASCII");
    let mut values = crate::sync::lock(&VALUES);
    let text = match values.get(text) {
        Some(text) => text,
        None => {
            let leaked: &'static str = Box::leak(text.to_owned().into_boxed_str());
            values.insert(leaked);
            leaked
        }
    };
    HeaderValue::from_static(text)
}

/// Polls a future that is ready without waiting (the probe's is).
fn futures_now<F: Future>(future: F) -> Option<F::Output> {
    let mut future = std::pin::pin!(future);
    let mut cx = Context::from_waker(std::task::Waker::noop());
    match future.as_mut().poll(&mut cx) {
        Poll::Ready(v) => Some(v),
        Poll::Pending => None,
    }
}

impl<S> Layer<S> for FastCorsLayer {
    type Service = FastCors<S>;

    fn layer(&self, inner: S) -> FastCors<S> {
        FastCors {
            inner,
            layer: self.clone(),
        }
    }
}

/// The service of [`FastCorsLayer`].
#[derive(Clone)]
pub struct FastCors<S> {
    inner: S,
    layer: FastCorsLayer,
}

type BoxedResponse = Pin<Box<dyn Future<Output = Result<Response, Infallible>> + Send>>;

impl<S> Service<Request> for FastCors<S>
where
    S: Service<Request, Response = Response, Error = Infallible> + Clone + Send + Sync + 'static,
    S::Future: Send + 'static,
{
    type Response = Response;
    type Error = Infallible;
    type Future = CorsFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request) -> Self::Future {
        if request.method() == Method::OPTIONS {
            let inner = BoxCloneSyncService::new(self.inner.clone());
            let preflight = self.layer.cors.layer(inner).oneshot(request);
            return CorsFuture::Preflight {
                future: Box::pin(preflight),
            };
        }
        CorsFuture::Actual {
            future: self.inner.call(request),
            headers: self.layer.headers,
        }
    }
}

pin_project_lite::pin_project! {
    /// The response future of [`FastCors`].
    #[project = CorsProj]
    pub enum CorsFuture<F> {
        Actual { #[pin] future: F, headers: &'static CorsHeaders },
        Preflight { future: BoxedResponse },
    }
}

impl<F> Future for CorsFuture<F>
where
    F: Future<Output = Result<Response, Infallible>>,
{
    type Output = Result<Response, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project() {
            CorsProj::Actual { future, headers } => {
                let mut response = std::task::ready!(future.poll(cx))?;
                headers.apply(response.headers_mut());
                Poll::Ready(Ok(response))
            }
            CorsProj::Preflight { future } => future.as_mut().poll(cx),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::routing::get;
    use axum::Router;

    fn cors() -> CorsLayer {
        CorsLayer::new()
            .allow_origin(tower_http::cors::Any)
            .allow_methods([Method::GET, Method::HEAD])
            .allow_headers([header::ACCEPT, header::IF_NONE_MATCH])
            .expose_headers([header::ETAG, header::LINK])
    }

    fn app(fast: bool) -> Router {
        let app = Router::new().route("/", get(|| async { ([(header::VARY, "Accept")], "hi") }));
        if fast {
            app.layer(FastCorsLayer::new(cors()))
        } else {
            app.layer(cors())
        }
    }

    async fn headers(app: Router, request: Request) -> Vec<(String, String)> {
        let response = app.oneshot(request).await.unwrap();
        response
            .headers()
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_str().unwrap().to_owned()))
            .collect()
    }

    fn request(method: Method, origin: Option<&str>) -> Request {
        let mut builder = Request::builder().method(method).uri("/");
        if let Some(origin) = origin {
            builder = builder
                .header(header::ORIGIN, origin)
                .header(header::ACCESS_CONTROL_REQUEST_METHOD, "GET");
        }
        builder.body(axum::body::Body::empty()).unwrap()
    }

    #[tokio::test]
    async fn adds_exactly_the_headers_cors_adds() {
        for method in [Method::GET, Method::HEAD, Method::POST, Method::OPTIONS] {
            for origin in [None, Some("https://example.org")] {
                let ours = headers(app(true), request(method.clone(), origin)).await;
                let theirs = headers(app(false), request(method.clone(), origin)).await;
                assert_eq!(ours, theirs, "{method} {origin:?}");
                assert!(ours.iter().any(|(n, _)| n == "access-control-allow-origin"));
            }
        }
    }
}
