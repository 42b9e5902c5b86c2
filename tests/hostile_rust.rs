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
use bloomcast::client::{Changed, Client, ClientError};
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
    origin: Arc<Mutex<String>>,
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
        let origin = Arc::new(Mutex::new(origin.to_owned()));
        let app = axum::Router::new().fallback({
            let (origin, rewrite) = (origin.clone(), rewrite.clone());
            move |request: Request| forward(request, origin.clone(), rewrite.clone())
        });
        runtime.spawn(async move { axum::serve(listener, app).await.unwrap() });
        Hostile {
            base,
            origin,
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

async fn forward(
    request: Request,
    origin: Arc<Mutex<String>>,
    rewrite: Arc<Mutex<Arc<Rewrite>>>,
) -> Response {
    let origin = origin.lock().unwrap().clone();
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

/// A publisher signing with a key the test holds (seed 11), hours 05, 06 and 07 sealed
/// with `mirror::ids(0..3)`, 08 open with `open:0..10`, behind a [`Hostile`] proxy; the
/// publisher's clock is of 2008, so everything it serves is far behind this machine's
/// clock (stale) and its own open-hour versions were made then.
struct Signed {
    hostile: Hostile,
    signer: Signer,
    origin: String,
    _server: common::inproc::InProcess,
    _key: tempfile::TempDir,
}

impl Signed {
    fn start() -> Signed {
        let key = tempfile::tempdir().unwrap();
        let key_file = key.path().join("signing-key");
        std::fs::write(&key_file, chain::hex(&[11; 32])).unwrap();
        // The proxy first (its runtime serves the publisher too), pointed at it after.
        let hostile = Hostile::start("");
        let server = hostile._runtime.block_on(async {
            let server = common::inproc::serve(
                "127.0.0.1:0".parse().unwrap(),
                mirror::TOKEN,
                mirror::first_hour(),
                move |s| s.signing_key_file = key_file,
            )
            .await;
            let http = reqwest::Client::new();
            for n in 0..4 {
                let ids = match n {
                    3 => (0..10).map(|i| format!("open:{i}")).collect(),
                    n => mirror::ids(n),
                };
                let reply = http
                    .post(format!("{}/updates", server.base))
                    .bearer_auth(mirror::TOKEN)
                    .json(&serde_json::json!({ "ids": ids }))
                    .send()
                    .await
                    .unwrap();
                assert!(reply.status().is_success());
                if n < 3 {
                    server.clock.advance(chrono::Duration::hours(1));
                }
            }
            let sealed = http
                .get(format!("{}{}.bin", server.base, hour(2).path()))
                .send()
                .await
                .unwrap();
            assert_eq!(sealed.headers()["bloom-complete"], "true");
            server
        });
        let origin = server.base.clone();
        *hostile.origin.lock().unwrap() = origin.clone();
        Signed {
            hostile,
            signer: Signer::from_seed(&[11; 32]),
            origin,
            _server: server,
            _key: key,
        }
    }

    fn pubkey(&self) -> String {
        self.signer.public_key().to_string()
    }

    fn block_on<F: std::future::Future>(&self, f: F) -> F::Output {
        self.hostile._runtime.block_on(f)
    }

    /// The hour's chain header, as the publisher lists it.
    fn header(&self, n: i64) -> chain::Hash {
        let page = get_json(&self.origin, &format!("/chain{}?limit=1", hour(n).path()));
        chain::parse_hex::<32>(page[0]["header"].as_str().unwrap()).unwrap()
    }

    /// A checkpoint of hour `n` made at `made`, signed by the publisher's key.
    fn checkpoint(&self, n: i64, made: i64) -> String {
        let header = self.header(n);
        serde_json::json!({
            "hour": hour(n).rfc3339(), "header": chain::hex(&header), "made": made,
            "signature": chain::hex(&self.signer.checkpoint(made, hour(n), &header)),
            "key_id": self.signer.public_key().id().to_string(),
        })
        .to_string()
    }

    /// The open hour (08) re-signed as made `age` seconds ago by the publisher's key
    /// (`None`: served without its signature), and `/checkpoint` as `checkpoint`
    /// (`None`: as the publisher serves it), the index withholding hour 07 when
    /// `withhold`.
    fn serve(&self, open_age: Option<i64>, checkpoint: Option<String>, withhold: bool) {
        let signer = Signer::from_seed(&[11; 32]);
        let open = format!("{}.bin", hour(3).path());
        self.hostile.set(move |asked, status, headers, body| {
            let path = asked.split('?').next().unwrap_or(asked);
            if path == open {
                headers.remove("etag");
                headers.remove("bloom-open-signature");
                if let Some(age) = open_age {
                    let made = now() - age;
                    let sig = signer.sign_open(hour(3), made, &chain::digest(body));
                    let value = format!(
                        "{}; keyid=\"{}\"; made={made}",
                        chain::hex(&sig),
                        signer.public_key().id()
                    );
                    headers.insert(
                        "bloom-open-signature",
                        HeaderValue::from_str(&value).unwrap(),
                    );
                }
            } else if path == "/checkpoint" {
                if let Some(doc) = &checkpoint {
                    *status = StatusCode::OK;
                    *body = doc.clone().into_bytes();
                }
            } else if path == "/" && withhold {
                let mut doc: serde_json::Value = serde_json::from_slice(body).unwrap();
                let hours = doc["hours"].as_array_mut().unwrap();
                hours.retain(|h| h["hour"] != hour(3).rfc3339());
                let newest = hours
                    .iter()
                    .find(|h| h["hour"] == hour(2).rfc3339())
                    .unwrap()
                    .clone();
                doc["current"] = newest;
                *body = serde_json::to_vec(&doc).unwrap();
            }
        });
    }
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
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

/// `bloomcast check --server <proxy> --since 05 <args>` on a thread of its own.
fn check(fx: &Signed, args: &[&str]) -> Output {
    let mut all = vec![
        "check",
        "--server",
        &fx.hostile.base,
        "--since",
        "2008-09-03T05",
    ];
    all.extend(args);
    cli(&all)
}

fn json_of(out: &Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
}

#[test]
fn a_stale_source_exits_3_naming_its_newest_hour_and_the_answer_is_printed_anyway() {
    let fx = Signed::start();
    fx.serve(Some(0), None, false);
    let newest = hour(3).rfc3339();

    let out = check(&fx, &["h1:0", "nobody"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(err.contains("is stale") && err.contains(&newest), "{err}");
    assert!(
        err.contains(&format!("read {} through {newest}", hour(0).rfc3339())),
        "{err}"
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "h1:0");

    let out = check(&fx, &["--accept-stale", "--json", "h1:0"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("(accepted: --accept-stale)"), "{err}");
    let doc = json_of(&out);
    assert_eq!(doc["changed"], serde_json::json!(["h1:0"]));
    assert_eq!(doc["from"], hour(0).rfc3339());
    assert_eq!(doc["to"], newest);
    assert_eq!(doc["unverified"], serde_json::Value::Null, "no key: {doc}");
    let stale = doc["stale"].as_array().unwrap();
    assert!(
        stale.iter().any(|r| r.as_str().unwrap().contains(&newest)),
        "{doc}"
    );
}

#[test]
fn a_withholding_mirror_is_told_by_a_fresh_checkpoint_naming_a_newer_hour() {
    let fx = Signed::start();
    let key = fx.pubkey();
    let args = ["--pubkey", &key, "--accept-stale", "--json", "h2:0"];
    // The index hides sealed hour 07 (shows it as the open one); the publisher's fresh
    // checkpoint names it sealed.
    fx.serve(Some(0), Some(fx.checkpoint(2, now() - 60)), true);
    let out = check(&fx, &args);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let doc = json_of(&out);
    let withheld: Vec<&str> = doc["stale"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r.as_str().filter(|r| r.contains("withholds")))
        .collect();
    assert_eq!(withheld.len(), 1, "{doc}");
    assert!(
        withheld[0].contains(&hour(2).rfc3339()) && withheld[0].contains(&hour(1).rfc3339()),
        "{doc}"
    );
    let out = check(
        &fx,
        &args[..2]
            .iter()
            .chain(&["h2:0"])
            .copied()
            .collect::<Vec<_>>(),
    );
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(stderr(&out).contains("withholds"), "{}", stderr(&out));

    // Not withheld: the same fresh checkpoint names no hour the source does not offer.
    fx.serve(Some(0), Some(fx.checkpoint(2, now() - 60)), false);
    let doc = json_of(&check(&fx, &args));
    assert!(!doc["stale"].to_string().contains("withholds"), "{doc}");
    // A checkpoint signed by another key is refused, naming its hour.
    let forged = {
        let mut doc: serde_json::Value = serde_json::from_str(&fx.checkpoint(2, now())).unwrap();
        doc["made"] = (now() - 1).into();
        doc.to_string()
    };
    fx.serve(Some(0), Some(forged), false);
    let out = check(&fx, &args);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(&format!("{} (checkpoint)", hour(2).rfc3339())),
        "{}",
        stderr(&out)
    );
}

#[test]
fn an_open_hour_version_replayed_past_the_freshness_bound_is_refused() {
    let fx = Signed::start();
    let key = fx.pubkey();
    fx.serve(Some(3600), None, false);
    let out = check(&fx, &["--pubkey", &key, "--accept-stale", "open:1"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!("{} (open)", hour(3).rfc3339()))
            && err.contains("past the freshness bound of 600 s"),
        "{err}"
    );
    assert!(out.stdout.is_empty(), "no answer");
    // Within a wider bound, or fresh, it is read and verified.
    let out = check(
        &fx,
        &[
            "--pubkey",
            &key,
            "--accept-stale",
            "--freshness",
            "7200",
            "open:1",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "open:1");
    fx.serve(Some(5), None, false);
    let out = check(
        &fx,
        &["--pubkey", &key, "--accept-stale", "--json", "open:1"],
    );
    assert_eq!(json_of(&out)["unverified"], serde_json::json!([]));
}

#[test]
fn an_unsigned_open_hour_is_used_and_listed_unverified() {
    let fx = Signed::start();
    let key = fx.pubkey();
    fx.serve(None, None, false);
    let out = check(
        &fx,
        &["--pubkey", &key, "--accept-stale", "--json", "open:1"],
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let doc = json_of(&out);
    assert_eq!(doc["changed"], serde_json::json!(["open:1"]));
    assert_eq!(doc["unverified"], serde_json::json!([hour(3).rfc3339()]));
    assert!(
        err.contains(&format!(
            "unverified (no signature to check): {}",
            hour(3).rfc3339()
        )),
        "{err}"
    );
}

#[test]
fn the_sdk_says_what_an_answer_covers_and_refuses_a_stale_one_unless_accepted() {
    let fx = Signed::start();
    let key: chain::PublicKey = fx.pubkey().parse().unwrap();
    let builder = || Client::builder(&fx.hostile.base).pubkey(key);
    let ids = ["h1:0", "open:1"];
    fx.serve(None, Some(fx.checkpoint(2, now() - 60)), true);

    let refused = fx.block_on(builder().build().unwrap().changed_since(&ids, hour(0)));
    let Err(ClientError::Stale(answer)) = refused else {
        panic!("expected Stale, got {refused:?}");
    };
    assert!(
        answer
            .coverage
            .stale
            .iter()
            .any(|r| r.contains("withholds")),
        "{answer:?}"
    );
    assert_eq!(answer.changes.len(), 1, "the answer is carried: {answer:?}");

    let client = builder().accept_stale(true).build().unwrap();
    let answer = fx
        .block_on(client.changed_since_covering(
            &ids,
            hour(0),
            bloomcast::client::Strategy::Auto,
            bloomcast::client::Forms::Auto,
        ))
        .unwrap();
    let coverage = answer.coverage;
    assert_eq!(
        (coverage.first, coverage.last),
        (Some(hour(0)), Some(hour(2)))
    );
    assert_eq!(coverage.unverified, Some(vec![]), "07 is sealed, signed");
    assert!(!coverage.stale.is_empty());

    // The open hour unsigned (the index honest): used, listed unverified.
    fx.serve(None, None, false);
    let answer = fx
        .block_on(client.changed_since_covering(
            &ids,
            hour(0),
            bloomcast::client::Strategy::Auto,
            bloomcast::client::Forms::Auto,
        ))
        .unwrap();
    assert_eq!(answer.coverage.unverified, Some(vec![hour(3)]));
    assert!(answer.changes.iter().any(|c| c.from == hour(3)));
    // Replayed: refused, naming the hour; within a wider bound, verified.
    fx.serve(Some(3600), None, false);
    let replayed = builder().accept_stale(true).build().unwrap();
    let err = fx.block_on(replayed.hour(hour(3))).unwrap_err();
    assert!(
        matches!(err, ClientError::Unverified(_)) && err.to_string().contains("freshness bound"),
        "{err}"
    );
    let wide = builder()
        .freshness(std::time::Duration::from_secs(7200))
        .build()
        .unwrap();
    assert!(fx.block_on(wide.hour(hour(3))).is_ok());
}

/// How the proxy treats hour 06's ribbons (`.ribbon`, `.ribbon2`).
#[derive(Clone, Copy, Debug)]
enum Forms {
    /// Flips a bit of the body's last byte (it still decodes).
    Flip,
    /// Drops its `Bloom-Signature`.
    Strip,
}

impl Signed {
    fn serve_forms(&self, how: Forms) {
        let stem = hour(1).path();
        self.hostile.set(move |asked, _, headers, body| {
            let path = asked.split('?').next().unwrap_or(asked);
            let ribbon = path == format!("{stem}.ribbon") || path == format!("{stem}.ribbon2");
            if !ribbon || body.is_empty() {
                return;
            }
            headers.remove("etag");
            headers.remove("repr-digest");
            match how {
                Forms::Flip => *body.last_mut().unwrap() ^= 1,
                Forms::Strip => {
                    headers.remove("bloom-signature");
                }
            }
        });
    }
}

/// Many IDs checked at a dear fetch: closed hours are cheapest as ribbons.
fn many_ids() -> Vec<String> {
    (0..2000)
        .map(|i| format!("nobody:{i}"))
        .chain(["h1:3".to_owned()])
        .collect()
}

#[test]
fn a_tampered_ribbon_is_refused_naming_its_hour_and_an_unsigned_one_not_used() {
    let fx = Signed::start();
    let key: chain::PublicKey = fx.pubkey().parse().unwrap();
    let client = || {
        Client::builder(&fx.hostile.base)
            .pubkey(key)
            .accept_stale(true)
            .freshness(std::time::Duration::from_secs(600_000_000))
            .build()
            .unwrap()
    };
    // Honest: both versions verify, and a check with many IDs reads ribbons.
    assert!(fx.block_on(client().ribbon(hour(1), None)).is_ok());
    assert!(fx.block_on(client().ribbon2(hour(1), None)).is_ok());
    let honest = client();
    let changes = fx
        .block_on(honest.changed_since(&many_ids(), hour(0)))
        .unwrap();
    assert!(changes.iter().any(|c| c.ids.contains(&"h1:3".to_owned())));
    assert!(honest.stats().ribbons > 0, "{:?}", honest.stats());

    fx.serve_forms(Forms::Flip);
    for result in [
        fx.block_on(client().ribbon(hour(1), None)).map(|_| ()),
        fx.block_on(client().ribbon2(hour(1), None)).map(|_| ()),
        fx.block_on(client().changed_since(&many_ids(), hour(0)))
            .map(|_| ()),
    ] {
        let err = result.unwrap_err();
        assert!(
            matches!(err, ClientError::Unverified(_))
                && err.to_string().contains(&hour(1).rfc3339()),
            "{err}"
        );
    }
    // Without a key the flipped ribbon is taken as served (what --pubkey is for).
    assert!(fx
        .block_on(
            Client::new(&fx.hostile.base)
                .unwrap()
                .ribbon2(hour(1), None)
        )
        .is_ok());

    fx.serve_forms(Forms::Strip);
    let err = fx.block_on(client().ribbon2(hour(1), None)).unwrap_err();
    assert!(matches!(err, ClientError::Unsigned { .. }), "{err}");
    // Not used: the hour's v1 filter answers instead.
    let fallback = client();
    let changes = fx
        .block_on(fallback.changed_since(&many_ids(), hour(0)))
        .unwrap();
    let found: Vec<&Changed> = changes.iter().filter(|c| c.from == hour(1)).collect();
    assert!(found[0].ids.contains(&"h1:3".to_owned()), "{changes:?}");
    assert_eq!(
        fallback.stats().ribbons,
        honest.stats().ribbons - 1,
        "hour 06's unsigned ribbon is not used, the others are"
    );
}

#[test]
fn check_refuses_a_tampered_ribbon_naming_its_hour() {
    let fx = Signed::start();
    let key = fx.pubkey();
    let ids = many_ids();
    let mut args = vec![
        "--pubkey",
        &key,
        "--accept-stale",
        "--freshness",
        "600000000",
        "--json",
    ];
    args.extend(ids.iter().map(String::as_str));
    let out = check(&fx, &args);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(json_of(&out)["ribbons"].as_u64().unwrap() > 0);

    fx.serve_forms(Forms::Flip);
    let out = check(&fx, &args);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&hour(1).rfc3339()) && err.contains("ribbon"),
        "{err}"
    );
    assert_eq!(json_of(&out)["error"], "unverified");
}

#[test]
fn watch_with_a_key_verifies_each_open_version_and_says_which_came_unsigned() {
    use bloomcast::cli::{Event, Watcher};
    let fx = Signed::start();
    let key: chain::PublicKey = fx.pubkey().parse().unwrap();
    let watcher = || {
        let client = Client::builder(&fx.hostile.base)
            .pubkey(key)
            .build()
            .unwrap();
        Watcher::start_at(client, vec!["open:1".into()], hour(3))
    };
    let unverified_of = |events: &[Event]| -> Vec<bool> {
        events
            .iter()
            .filter_map(|e| match e {
                Event::Version { unverified, .. } => Some(*unverified),
                Event::Changed { .. } => None,
            })
            .collect()
    };

    fx.serve(Some(0), None, false);
    let events = fx.block_on(watcher().poll()).unwrap();
    assert_eq!(unverified_of(&events), [false], "{events:?}");
    assert!(events
        .iter()
        .any(|e| matches!(e, Event::Changed { id, .. } if id == "open:1")));

    fx.serve(None, None, false);
    let events = fx.block_on(watcher().poll()).unwrap();
    assert_eq!(unverified_of(&events), [true], "{events:?}");
    assert!(events[0].to_json()["unverified"] == true);

    fx.serve(Some(3600), None, false);
    let err = fx.block_on(watcher().poll()).unwrap_err();
    assert!(
        matches!(err, ClientError::Unverified(_))
            && err
                .to_string()
                .contains(&format!("{} (open)", hour(3).rfc3339())),
        "{err}"
    );
}

#[test]
fn a_sealed_hour_passed_off_as_open_is_refused_naming_it() {
    let fx = Signed::start();
    let key = fx.pubkey();
    // Hour 06 (sealed) served as if open: no chain link, no signature, complete false;
    // its other forms withheld (404), so the v1 filter is what is read.
    let stem = hour(1).path();
    fx.hostile.set(move |asked, status, headers, body| {
        let path = asked.split('?').next().unwrap_or(asked);
        if path == format!("{stem}.bin") {
            headers.insert("bloom-complete", HeaderValue::from_static("false"));
            headers.remove("bloom-signature");
            headers.remove("bloom-prev-header");
            headers.remove("etag");
        } else if path.starts_with(&format!("{stem}.")) {
            *status = StatusCode::NOT_FOUND;
            body.clear();
        }
    });
    let client = Client::builder(&fx.hostile.base)
        .pubkey(key.parse().unwrap())
        .build()
        .unwrap();
    fx.block_on(client.index()).unwrap();
    let err = fx.block_on(client.hour(hour(1))).unwrap_err();
    assert!(
        matches!(err, ClientError::Unverified(_)) && err.to_string().contains("served as open"),
        "{err}"
    );
    let out = check(
        &fx,
        &[
            "--pubkey",
            &key,
            "--accept-stale",
            "--freshness",
            "600000000",
            "h1:1",
        ],
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&hour(1).rfc3339()) && err.contains("served as open"),
        "{err}"
    );
}
