//! A publisher with sealed, signed hours behind a small tampering proxy (a mirror that
//! may lie), both on real sockets in a thread of their own, so the SDK, the CLI binary
//! and the Python client can all be pointed at it.
//!
//! The publisher's clock starts at 2008-09-03T05:10Z; IDs `h{n}:{i}` (10 per hour) go
//! into hours 05, 06 and 07, which are sealed; 08 is open.

use axum::body::Body;
use axum::extract::Request;

use axum::response::Response;
use bloomcast::hour::{hour_of, Hour};
use chrono::Duration;
use std::sync::{Arc, Mutex};

pub const TOKEN: &str = "mirror-test-token";

/// How the mirror lies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Tamper {
    /// Serves what the publisher serves.
    None,
    /// Flips one bit of the filter in responses whose path starts with this: the lowest
    /// bit of the first byte of a raw body, of the first hex digit of a JSON document's
    /// `filter` (so the document still parses).
    FlipBit(String),
    /// Answers requests for the first hour's path (any form of it) with the publisher's
    /// response for the second hour's.
    Swap(String, String),
    /// Leaves the second entry out of every `/chain/...` listing.
    DropFromChain,
    /// Flips the lowest bit of the last byte of the body at exactly this path (query
    /// ignored): of a raw body, of the last digit of a hex body, of the last hex digit
    /// of a JSON document's `filter` (its `digest` made to match); and sends the
    /// `Repr-Digest` of the bytes sent, as a proxy covering its tracks would.
    FlipLast(String),
    /// Answers the path with an all-zero filter of the same size (a hex body of `0`s, a
    /// binary body of zero bytes), its `Repr-Digest` recomputed.
    Zero(String),
    /// Serves a key list in which the publisher's key retired after the first hour and
    /// a key of the mirror's own ([`forger`]) follows it, vouched for by itself.
    ForgeKeys,
}

/// The key of [`Tamper::ForgeKeys`].
pub fn forger() -> bloomcast::chain::Signer {
    bloomcast::chain::Signer::from_seed(&[0x24; 32])
}

/// The publisher's well-known document with the forged list of [`Tamper::ForgeKeys`].
fn forge_keys(body: &[u8]) -> Vec<u8> {
    let mut doc: serde_json::Value = serde_json::from_slice(body).unwrap();
    let forger = forger();
    let key = forger.public_key();
    let second = Hour::from_index(first_hour().index() + 1);
    let mut first = doc["keys"][0].clone();
    first["last_hour"] = first_hour().rfc3339().into();
    let trusted: bloomcast::chain::PublicKey =
        first["public_key"].as_str().unwrap().parse().unwrap();
    doc["keys"] = serde_json::json!([first, {
        "id": key.id().to_string(),
        "public_key": key.to_string(),
        "first_hour": second.rfc3339(),
        "last_hour": null,
        "vouch": bloomcast::chain::hex(&forger.vouch(&key, second)),
        "ack": bloomcast::chain::hex(&forger.acknowledge(&trusted, second)),
    }]);
    doc["public_key"] = key.to_string().into();
    serde_json::to_vec(&doc).unwrap()
}

pub struct Mirror {
    /// The publisher itself.
    pub origin: String,
    /// The mirror in front of it.
    pub base: String,
    pub pubkey: String,
    pub tamper: Arc<Mutex<Tamper>>,
    _stop: std::sync::mpsc::Sender<()>,
}

impl Mirror {
    pub fn set(&self, tamper: Tamper) {
        *self.tamper.lock().unwrap() = tamper;
    }
}

/// The first sealed hour.
pub fn first_hour() -> Hour {
    hour_of(2008, 9, 3, 5).unwrap()
}

/// The IDs ingested into hour `n` (0, 1, 2 for 05, 06, 07).
pub fn ids(n: usize) -> Vec<String> {
    (0..10).map(|i| format!("h{n}:{i}")).collect()
}

/// Starts the publisher and the mirror; both stop when the [`Mirror`] is dropped.
pub fn start() -> Mirror {
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let (stop_tx, stop_rx) = std::sync::mpsc::channel::<()>();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let server =
                super::inproc::serve("127.0.0.1:0".parse().unwrap(), TOKEN, first_hour(), |_| {})
                    .await;
            let http = reqwest::Client::new();
            for n in 0..3 {
                let reply = http
                    .post(format!("{}/updates", server.base))
                    .bearer_auth(TOKEN)
                    .json(&serde_json::json!({ "ids": ids(n) }))
                    .send()
                    .await
                    .unwrap();
                assert!(reply.status().is_success());
                server.clock.advance(Duration::hours(1));
            }
            // Sealing (in order, each linked to the one before).
            let last = Hour::from_index(first_hour().index() + 2);
            let sealed = http
                .get(format!("{}{}.bin", server.base, last.path()))
                .send()
                .await
                .unwrap();
            assert_eq!(sealed.headers()["bloom-complete"], "true");
            let pubkey = http
                .get(format!("{}/.well-known/bloomcast.json", server.base))
                .send()
                .await
                .unwrap()
                .json::<serde_json::Value>()
                .await
                .unwrap()["public_key"]
                .as_str()
                .unwrap()
                .to_owned();
            let tamper = Arc::new(Mutex::new(Tamper::None));
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let base = format!("http://{}", listener.local_addr().unwrap());
            let origin = server.base.clone();
            let app = axum::Router::new().fallback({
                let (tamper, origin) = (tamper.clone(), origin.clone());
                move |request: Request| proxy(request, origin.clone(), tamper.clone())
            });
            tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
            ready_tx.send((origin, base, pubkey, tamper)).unwrap();
            // Keep the publisher (and the runtime) until the mirror is dropped.
            let _server = server;
            tokio::task::spawn_blocking(move || {
                let _ = stop_rx.recv();
            })
            .await
            .unwrap();
        });
    });
    let (origin, base, pubkey, tamper) = ready_rx.recv().expect("the mirror starts");
    Mirror {
        origin,
        base,
        pubkey,
        tamper,
        _stop: stop_tx,
    }
}

async fn proxy(request: Request, origin: String, tamper: Arc<Mutex<Tamper>>) -> Response {
    let asked = request
        .uri()
        .path_and_query()
        .map_or("/".to_owned(), |p| p.as_str().to_owned());
    let tamper = tamper.lock().unwrap().clone();
    let fetch = match &tamper {
        // Every form of the hour (`.bin`, `.ribbon2?fpp=...`) swapped for the other's.
        Tamper::Swap(from, to) if asked.starts_with(from.as_str()) => {
            format!("{to}{}", &asked[from.len()..])
        }
        _ => asked.clone(),
    };
    // Identity encoding from the origin, so the bytes tampered with are the filter's.
    let (status, mut headers, mut body) = super::upstream(&origin, &fetch).await;
    match &tamper {
        Tamper::FlipBit(prefix) if asked.starts_with(prefix.as_str()) && !body.is_empty() => {
            let json = headers
                .get("content-type")
                .is_some_and(|v| v.as_bytes().starts_with(b"application/json"));
            if json {
                let mut doc: serde_json::Value = serde_json::from_slice(&body).unwrap();
                let hex = doc["filter"].as_str().unwrap().to_owned();
                let first = u8::from_str_radix(&hex[..1], 16).unwrap() ^ 1;
                doc["filter"] = format!("{first:x}{}", &hex[1..]).into();
                body = serde_json::to_vec(&doc).unwrap();
            } else {
                body[0] ^= 1;
            }
        }
        Tamper::FlipLast(path) if asked.split('?').next() == Some(path) && !body.is_empty() => {
            if body.starts_with(b"{") {
                let mut doc: serde_json::Value = serde_json::from_slice(&body).unwrap();
                let mut hex = doc["filter"].as_str().unwrap().to_owned();
                let last = hex.pop().unwrap().to_digit(16).unwrap() ^ 1;
                doc["filter"] = format!("{hex}{last:x}").into();
                if doc.get("digest").is_some() {
                    // The digest of the filter's (or the ribbon's) bytes, made to match.
                    let bytes = bloomcast::bloom::from_hex(doc["filter"].as_str().unwrap());
                    doc["digest"] =
                        bloomcast::chain::hex(&bloomcast::chain::digest(&bytes.unwrap())).into();
                }
                body = serde_json::to_vec(&doc).unwrap();
            } else if path.ends_with(".hex") {
                let text = String::from_utf8(body).unwrap();
                let mut hex = text.trim_end().to_owned();
                let last = hex.pop().unwrap().to_digit(16).unwrap() ^ 1;
                body = format!("{hex}{last:x}").into_bytes();
            } else {
                *body.last_mut().unwrap() ^= 1;
            }
            headers.insert(
                "repr-digest",
                bloomcast::chain::repr_digest(&body).parse().unwrap(),
            );
        }
        Tamper::Zero(path) if asked.split('?').next() == Some(path) => {
            body = if path.ends_with(".hex") {
                "0".repeat(String::from_utf8_lossy(&body).trim_end().len())
                    .into_bytes()
            } else {
                vec![0; body.len()]
            };
            headers.insert(
                "repr-digest",
                bloomcast::chain::repr_digest(&body).parse().unwrap(),
            );
        }
        Tamper::ForgeKeys if asked == "/.well-known/bloomcast.json" => {
            body = forge_keys(&body);
            headers.remove("repr-digest");
        }
        Tamper::DropFromChain if asked.starts_with("/chain/") => {
            let mut list: Vec<serde_json::Value> = serde_json::from_slice(&body).unwrap();
            if list.len() > 1 {
                list.remove(1);
            }
            body = serde_json::to_vec(&list).unwrap();
        }
        _ => {}
    }
    let mut response = Response::new(Body::from(body));
    *response.status_mut() = status;
    *response.headers_mut() = headers;
    response
}
