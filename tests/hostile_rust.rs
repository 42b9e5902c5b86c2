//! The Rust SDK and CLI against a hostile mirror (PROTOCOL.md section 11, "Trust"): a
//! proxy in front of an honest publisher (tests/common/mirror.rs) that rewrites what it
//! passes on as a mirror holding a key of its own could, each rewrite made consistent
//! (digests, headers, chain entries and signatures recomputed), so that only the trust
//! rules can refuse it.

mod common;

use axum::body::Body;
use axum::extract::Request;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::Response;
use bloomcast::chain::{self, Signer};
use bloomcast::client::{Client, ClientError};
use bloomcast::hour::Hour;
use common::mirror;
use std::collections::HashMap;
use std::process::{Command, Output};
use std::sync::{Arc, Mutex};

fn hour(n: i64) -> Hour {
    Hour::from_index(mirror::first_hour().index() + n)
}

/// What the proxy does to one response: the path asked, the origin's status, headers and
/// body, changed in place.
type Rewrite = dyn Fn(&str, &mut StatusCode, &mut HeaderMap, &mut Vec<u8>) + Send + Sync;

/// A proxy in front of `origin` applying `rewrite` to every response.
struct Hostile {
    base: String,
    rewrite: Arc<Mutex<Arc<Rewrite>>>,
    _runtime: tokio::runtime::Runtime,
}

impl Hostile {
    fn start(origin: &str) -> Hostile {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let rewrite: Arc<Mutex<Arc<Rewrite>>> = Arc::new(Mutex::new(Arc::new(|_, _, _, _| {})));
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let app = axum::Router::new().fallback({
            let (origin, rewrite) = (origin.to_owned(), rewrite.clone());
            move |request: Request| forward(request, origin.clone(), rewrite.clone())
        });
        runtime.spawn(async move { axum::serve(listener, app).await.unwrap() });
        Hostile {
            base,
            rewrite,
            _runtime: runtime,
        }
    }

    fn set(
        &self,
        rewrite: impl Fn(&str, &mut StatusCode, &mut HeaderMap, &mut Vec<u8>) + Send + Sync + 'static,
    ) {
        *self.rewrite.lock().unwrap() = Arc::new(rewrite);
    }
}

async fn forward(request: Request, origin: String, rewrite: Arc<Mutex<Arc<Rewrite>>>) -> Response {
    let asked = request
        .uri()
        .path_and_query()
        .map_or("/".to_owned(), |p| p.as_str().to_owned());
    let (mut status, mut headers, mut body) = common::upstream(&origin, &asked).await;
    let rewrite = rewrite.lock().unwrap().clone();
    rewrite(&asked, &mut status, &mut headers, &mut body);
    let mut response = Response::new(Body::from(body));
    *response.status_mut() = status;
    *response.headers_mut() = headers;
    response
}

/// A blocking GET of the origin, parsed as JSON.
fn get_json(base: &str, path: &str) -> serde_json::Value {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        reqwest::get(format!("{base}{path}"))
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    })
}

fn get_bytes(base: &str, path: &str) -> Vec<u8> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        reqwest::get(format!("{base}{path}"))
            .await
            .unwrap()
            .bytes()
            .await
            .unwrap()
            .to_vec()
    })
}

fn cli(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_bloomcast"))
        .args(args)
        .output()
        .unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The forged mirror of item 1: the publisher's key K listed as retired after hour 0, a
/// key of the mirror's own (seed 66) from hour 1, "vouched" for by itself and
/// acknowledging K, and hours 1 and 2 served as all-zero filters (every ID unchanged)
/// signed by it, their digests, headers, links and chain entries recomputed.
fn forge_key_list(m: &mirror::Mirror, hostile: &Hostile) -> Signer {
    let forger = Signer::from_seed(&[66; 32]);
    let own = forger.public_key();
    let k: chain::PublicKey = m.pubkey.parse().unwrap();
    let mut doc = get_json(&m.origin, "/.well-known/bloomcast.json");
    let first = doc["keys"][0]["first_hour"].clone();
    doc["public_key"] = own.to_string().into();
    doc["keys"] = serde_json::json!([
        {"id": k.id().to_string(), "public_key": k.to_string(), "first_hour": first,
         "last_hour": hour(0).rfc3339(), "vouch": null, "ack": null},
        {"id": own.id().to_string(), "public_key": own.to_string(),
         "first_hour": hour(1).rfc3339(), "last_hour": null,
         "vouch": chain::hex(&forger.vouch(&own, hour(1))),
         "ack": chain::hex(&forger.acknowledge(&k, hour(1)))},
    ]);
    let chain_page = get_json(&m.origin, &format!("/chain{}?limit=10", hour(0).path()));
    let mut prev = chain::parse_hex::<32>(chain_page[0]["header"].as_str().unwrap()).unwrap();
    // Per forged hour: (path of its .bin, zero body, prev, header, signature).
    let mut forged = HashMap::new();
    let mut entries = HashMap::new();
    for n in 1..=2 {
        let bin = get_bytes(&m.origin, &format!("{}.bin", hour(n).path()));
        let zero = vec![0u8; bin.len()];
        let digest = chain::digest(&zero);
        let header = chain::header(&digest, &prev);
        let signature = forger.sign(hour(n).index(), &header);
        entries.insert(
            hour(n).rfc3339(),
            serde_json::json!({"hour": hour(n).rfc3339(), "digest": chain::hex(&digest),
                "prev": chain::hex(&prev), "header": chain::hex(&header),
                "signature": chain::hex(&signature), "key_id": own.id().to_string()}),
        );
        forged.insert(
            format!("{}.bin", hour(n).path()),
            (
                zero,
                prev,
                format!("{}; keyid=\"{}\"", chain::hex(&signature), own.id()),
            ),
        );
        prev = header;
    }
    let doc = doc.to_string();
    hostile.set(move |asked, _, headers, body| {
        let path = asked.split('?').next().unwrap_or(asked);
        if path == "/.well-known/bloomcast.json" {
            *body = doc.clone().into_bytes();
        } else if let Some((zero, prev, signature)) = forged.get(path) {
            *body = zero.clone();
            headers.insert(
                "bloom-prev-header",
                HeaderValue::from_str(&chain::hex(prev)).unwrap(),
            );
            headers.insert("bloom-signature", HeaderValue::from_str(signature).unwrap());
            headers.remove("repr-digest");
            headers.remove("etag");
        } else if path.starts_with("/chain/") {
            let mut list: Vec<serde_json::Value> = serde_json::from_slice(body).unwrap();
            for e in &mut list {
                if let Some(f) = entries.get(e["hour"].as_str().unwrap()) {
                    *e = f.clone();
                }
            }
            *body = serde_json::to_vec(&list).unwrap();
        }
    });
    forger
}

#[test]
fn a_forged_key_list_is_refused_by_the_cli_naming_the_mirrors_key() {
    let m = mirror::start();
    let hostile = Hostile::start(&m.origin);
    let forger = forge_key_list(&m, &hostile);
    let own_id = forger.public_key().id().to_string();
    let ids: Vec<String> = mirror::ids(1);
    let mut args = vec![
        "check",
        "--server",
        &hostile.base,
        "--since",
        "2008-09-03T05",
        "--json",
    ];
    args.extend(ids.iter().map(String::as_str));

    args.extend(["--pubkey", &m.pubkey]);
    let out = cli(&args);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains(&own_id), "the mirror's key is named: {err}");
    assert!(err.contains(&hour(1).rfc3339()), "{err}");
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["error"], "unverified", "{doc}");
    assert!(doc.get("changed").is_none(), "no answer: {doc}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_forged_key_list_is_refused_by_the_sdk_and_the_honest_one_accepted() {
    let m = mirror::start();
    let hostile = tokio::task::spawn_blocking({
        let origin = m.origin.clone();
        move || Hostile::start(&origin)
    })
    .await
    .unwrap();
    let key: chain::PublicKey = m.pubkey.parse().unwrap();
    let client = |base: &str| Client::builder(base).pubkey(key).build().unwrap();
    // Honest (nothing rewritten yet): hour 1 verifies through the proxy.
    assert!(client(&hostile.base).hour(hour(1)).await.is_ok());

    let forger = {
        let m = &m;
        let hostile = &hostile;
        tokio::task::block_in_place(|| forge_key_list(m, hostile))
    };
    let own_id = forger.public_key().id().to_string();
    // Without a key the forgery is read: hour 1's IDs look unchanged (what a key is for).
    let blind = Client::new(&hostile.base)
        .unwrap()
        .hour(hour(1))
        .await
        .unwrap();
    assert!(mirror::ids(1).iter().all(|id| !blind.filter.contains(id)));
    // Hour 0, K's own, still verifies; hour 1, under the mirror's key, is refused.
    let forged = client(&hostile.base);
    assert!(forged.hour(hour(0)).await.is_ok());
    let refused = forged.hour(hour(1)).await.unwrap_err();
    assert!(matches!(refused, ClientError::Unverified(_)), "{refused:?}");
    let text = refused.to_string();
    assert!(
        text.contains(&own_id) && text.contains(&hour(1).rfc3339()),
        "{text}"
    );
    let refused = client(&hostile.base)
        .changed_since(&mirror::ids(1), hour(0))
        .await
        .unwrap_err();
    assert!(refused.to_string().contains(&own_id), "{refused}");
    // A list that does not name the key given at all is refused too.
    let stranger = Signer::from_seed(&[67; 32]).public_key();
    let err = Client::builder(&hostile.base)
        .pubkey(stranger)
        .build()
        .unwrap()
        .hour(hour(0))
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("does not list the key you trust"),
        "{err}"
    );
    tokio::task::block_in_place(move || drop(hostile));
}
