//! Who a request is for: its connection's peer address, the client its builds are
//! queued as ([`BuildClient`], docs/PROTOCOL.md section 12, "Fair builds"). The
//! application ([`super::App`]) runs every request as its client's.

use crate::service::BuildClient;
use axum::extract::{ConnectInfo, Request};
use std::net::SocketAddr;

/// The client the builds of a request from `peer` are queued as: the connection's peer
/// when the server knows it, else one a caller put on the request (`ConnectInfo`, as
/// in-process tests do).
pub fn of(peer: Option<ConnectInfo<SocketAddr>>, request: &Request) -> BuildClient {
    peer.or_else(|| request.extensions().get().copied())
        .map_or(BuildClient::Unknown, |ConnectInfo(peer)| {
            BuildClient::Peer(peer.ip())
        })
}
