//! Who a request is for: its connection's peer address, the client its builds are
//! queued as ([`BuildClient`], docs/PROTOCOL.md section 12, "Fair builds"). A layer of
//! the router.

use crate::service::{BuildClient, BUILD_CLIENT};
use axum::extract::{ConnectInfo, Request};
use axum::middleware::Next;
use axum::response::Response;
use std::net::SocketAddr;

/// Runs the rest of the request as its peer's.
pub async fn scope_client(request: Request, next: Next) -> Response {
    let client = request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map_or(BuildClient::Unknown, |ConnectInfo(peer)| {
            BuildClient::Peer(peer.ip())
        });
    BUILD_CLIENT.scope(client, next.run(request)).await
}
