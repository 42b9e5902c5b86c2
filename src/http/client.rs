//! Who a request is for: its connection's peer address, the client its builds are
//! queued as ([`BuildClient`], docs/PROTOCOL.md section 12, "Fair builds"). The
//! application ([`super::App`]) runs every request as its client's.

use crate::service::BuildClient;
use axum::extract::{ConnectInfo, Request};
use std::net::SocketAddr;

/// The client `request`'s builds are queued as: its peer's address, when known.
pub fn of(request: &Request) -> BuildClient {
    request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map_or(BuildClient::Unknown, |ConnectInfo(peer)| {
            BuildClient::Peer(peer.ip())
        })
}
