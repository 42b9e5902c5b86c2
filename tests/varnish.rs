//! Two cluster nodes behind a real Varnish, configured as `deploy/varnish/` has it: what
//! pollers get through the cache, and what still reaches the nodes (counted in their
//! own `/metrics`). Needs PostgreSQL and `varnishd` (ignored with the reason where one
//! is missing; `.ci/run` installs Varnish).

mod common;

use base64::Engine as _;
use bloomcast::chain::{PublicKey, SignatureField, Signer};
use bloomcast::clock::ManualClock;
use bloomcast::hour::{hour_of, Hour};
use bloomcast::wire::Document;
use chrono::Duration;
use common::needs::{self, Need};
use common::nodes::{drop_schema, node, node_settings, try_node, unique_schema, Node};
use common::{post_ids, TOKEN};
use reqwest::header::HeaderMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Instant;

fn main() {
    let needs = [Need::Postgres, Need::Varnish];
    needs::run(vec![
        needs::trial(
            "closed_hours_reach_the_origin_once_per_form_and_encoding",
            &needs,
            || needs::block_on(closed_hours_reach_the_origin_once_per_form_and_encoding()),
        ),
        needs::trial(
            "the_open_hour_is_never_older_than_its_max_age",
            &needs,
            || needs::block_on(the_open_hour_is_never_older_than_its_max_age()),
        ),
        needs::trial("variants_never_mix", &needs, || {
            needs::block_on(variants_never_mix())
        }),
        needs::trial(
            "linked_dictionaries_reach_the_node_that_kept_them",
            &needs,
            || needs::block_on(linked_dictionaries_reach_the_node_that_kept_them()),
        ),
        needs::trial("verify_and_check_succeed_through_the_cache", &needs, || {
            needs::block_on(verify_and_check_succeed_through_the_cache())
        }),
        needs::trial("private_routes_are_never_cached", &needs, || {
            needs::block_on(private_routes_are_never_cached())
        }),
        needs::trial("a_rotated_key_breaks_no_cached_hour", &needs, || {
            needs::block_on(a_rotated_key_breaks_no_cached_hour())
        }),
        needs::trial("events_stream_through_the_cache", &needs, || {
            needs::block_on(events_stream_through_the_cache())
        }),
        needs::trial("pages_are_cut_by_the_cache_from_one_fetch", &needs, || {
            needs::block_on(pages_are_cut_by_the_cache_from_one_fetch())
        }),
    ]);
}

/// The hour the tests publish into; the clock starts ten minutes into it.
fn first_hour() -> Hour {
    hour_of(2008, 9, 3, 13).unwrap()
}

const SEED: [u8; 32] = [0x5a; 32];

/// PostgreSQL, two nodes on one schema sharing a signing key, Varnish in front.
struct Stack {
    nodes: Vec<Node>,
    /// Each node's settings, its port as it was given.
    settings: Vec<bloomcast::config::Settings>,
    key_file: PathBuf,
    cache: String,
    clock: ManualClock,
    http: reqwest::Client,
    url: String,
    schema: String,
    varnish: Child,
    dir: tempfile::TempDir,
}

impl Stack {
    async fn start(open_max_age: u64) -> Stack {
        let url = Need::Postgres.found();
        let schema = unique_schema();
        let dir = tempfile::tempdir().unwrap();
        let key_file = dir.path().join("signing-key");
        std::fs::write(&key_file, format!("{}\n", "5a".repeat(32))).unwrap();
        let clock = ManualClock::at(first_hour(), Duration::minutes(10));
        let (mut nodes, mut kept) = (Vec::new(), Vec::new());
        for i in 0..2 {
            let mut settings = node_settings(&url, &schema, dir.path().join(format!("node{i}")));
            settings.signing_key_file = key_file.clone();
            settings.open_max_age = open_max_age;
            // Every new version of the open hour is kept as a dictionary (for dcz).
            settings.delta_ids = 1;
            let node = node(settings.clone(), &clock).await;
            settings.listen = node.base.trim_start_matches("http://").parse().unwrap();
            nodes.push(node);
            kept.push(settings);
        }
        let (varnish, cache) = start_varnish(dir.path(), &nodes);
        Stack {
            nodes,
            settings: kept,
            key_file,
            cache,
            clock,
            http: reqwest::Client::new(),
            url,
            schema,
            varnish,
            dir,
        }
    }

    /// Publishes `ids` through node `i` (publishers go to the nodes, not the cache).
    async fn publish(&self, i: usize, ids: &[String]) {
        post_ids(&self.http, &self.nodes[i].base, ids)
            .await
            .expect("ingest acknowledged");
    }

    /// Closes the open hour: the clock moves on and both nodes run their housekeeping.
    async fn seal_open_hour(&self) {
        self.clock.advance(Duration::hours(1));
        for node in &self.nodes {
            node.service.tick().await.unwrap();
        }
    }

    /// Stops both nodes and starts them again on their ports with the key of `seed` in
    /// their key file: a rotation, as `bloomcast rotate-key` and a restart make it.
    async fn restart_with_key(&mut self, seed: &[u8; 32]) {
        self.nodes.clear();
        let old = std::fs::read_to_string(&self.key_file)
            .ok()
            .and_then(|text| bloomcast::chain::parse_hex::<32>(text.trim()))
            .map(|seed| Signer::from_seed(&seed));
        std::fs::write(&self.key_file, format!("{}\n", bloomcast::chain::hex(seed))).unwrap();
        // What `rotate-key` does beside the file in a cluster: the key becomes the
        // cluster's current one (a node on a key the cluster has not recorded refuses),
        // its succession signed both ways (the key it replaces vouches for it), so a
        // client trusting the first key trusts it too.
        let store = bloomcast::startup::open_store(&self.settings[0], &self.clock)
            .await
            .expect("open the cluster's PostgreSQL store");
        let genesis = store.genesis().await.unwrap();
        bloomcast::service::register_key(
            store.as_ref(),
            genesis,
            &Signer::from_seed(seed),
            old.as_ref(),
            true,
        )
        .await
        .expect("record the new key in PostgreSQL");
        drop(store);
        for settings in &self.settings {
            // The stopped node may still hold its port for a moment.
            let what = format!("the node restarts on {}", settings.listen);
            let clock = &self.clock;
            let node = common::wait::until(what, || async move {
                try_node(settings.clone(), clock)
                    .await
                    .inspect_err(|e| tracing::debug!(error = %e, "node restart"))
                    .ok()
            })
            .await;
            self.nodes.push(node);
        }
    }

    /// Requests of `route` (every route but `/metrics` when `None`) the nodes have
    /// answered, by their own `/metrics`.
    async fn origin_requests(&self, route: impl Into<Option<&str>>) -> u64 {
        let route = route.into();
        let mut total = 0;
        for node in &self.nodes {
            let text = common::metrics_text(&self.http, &node.base).await;
            let prefix = match route {
                Some(route) => format!("bloomcast_http_requests_total{{route=\"{route}\","),
                None => "bloomcast_http_requests_total{".to_owned(),
            };
            total += text
                .lines()
                .filter(|l| l.starts_with(&prefix) && !l.contains("route=\"/metrics\""))
                .map(|l| l.rsplit(' ').next().unwrap().parse::<u64>().unwrap())
                .sum::<u64>();
        }
        total
    }

    /// A GET through the cache with `headers`: status, headers and the bytes as sent.
    async fn get(&self, path: &str, headers: &[(&str, &str)]) -> (u16, HeaderMap, Vec<u8>) {
        self.get_from(&self.cache, path, headers).await
    }

    /// As [`get`](Self::get), from `base`.
    async fn get_from(
        &self,
        base: &str,
        path: &str,
        headers: &[(&str, &str)],
    ) -> (u16, HeaderMap, Vec<u8>) {
        let mut request = self.http.get(format!("{base}{path}"));
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let reply = match request.send().await {
            Ok(reply) => reply,
            // Through the cache, what Varnish logged says whether its child died.
            Err(e) => panic!(
                "GET {base}{path}: {e}\nvarnish.log: {}",
                varnish_log(self.dir.path())
            ),
        };
        let status = reply.status().as_u16();
        let headers = reply.headers().clone();
        (status, headers, reply.bytes().await.unwrap().to_vec())
    }

    async fn stop(mut self) {
        let _ = self.varnish.kill();
        let _ = self.varnish.wait();
        self.nodes.clear();
        drop_schema(&self.url, &self.schema).await;
    }
}

impl Drop for Stack {
    fn drop(&mut self) {
        let _ = self.varnish.kill();
        let _ = self.varnish.wait();
    }
}

/// varnishd in the foreground on a free loopback port, with the main VCL that
/// `deploy/varnish/backends.sh` prints for the nodes, as docs/DEPLOY.md runs it.
fn start_varnish(dir: &Path, nodes: &[Node]) -> (Child, String) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let backends: Vec<String> = nodes
        .iter()
        .map(|n| n.base.trim_start_matches("http://").to_owned())
        .collect();
    let vcl = Command::new("bash")
        .arg(root.join("deploy/varnish/backends.sh"))
        .args(&backends)
        .output()
        .unwrap();
    assert!(
        vcl.status.success(),
        "{}",
        String::from_utf8_lossy(&vcl.stderr)
    );
    let main_vcl = dir.join("main.vcl");
    std::fs::write(&main_vcl, vcl.stdout).unwrap();
    let work = dir.join("varnish");
    std::fs::create_dir_all(&work).unwrap();
    let log = std::fs::File::create(dir.join("varnish.log")).unwrap();
    // Varnish binds a port of the kernel's choosing and holds it from then on: a port
    // picked here and let go before varnishd bound it could be taken in between by
    // another test's node, and the cache's address would then reach that node.
    let mut child = Command::new(Need::Varnish.found())
        .args(["-F", "-j", "none", "-n"])
        .arg(&work)
        .args(["-a", "127.0.0.1:0", "-f"])
        .arg(&main_vcl)
        .args(["-p", "http_gzip_support=off", "-s", "malloc,64m"])
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .stdin(Stdio::null())
        .spawn()
        .expect("varnishd starts");
    let mut port = None;
    common::wait::eventually_blocking("varnishd listens", || {
        if let Ok(Some(status)) = child.try_wait() {
            panic!("varnishd exited ({status}): {}", varnish_log(dir));
        }
        port = port.or_else(|| listen_port(&work));
        port.is_some_and(|port| std::net::TcpStream::connect(("127.0.0.1", port)).is_ok())
    });
    (child, format!("http://127.0.0.1:{}", port.unwrap()))
}

/// The port Varnish in `work` listens on, once its manager answers (`varnishadm
/// debug.listen_address`: `a0 127.0.0.1 PORT`).
fn listen_port(work: &Path) -> Option<u16> {
    let out = Command::new("varnishadm")
        .arg("-n")
        .arg(work)
        .arg("debug.listen_address")
        .stderr(Stdio::null())
        .output()
        .ok()
        .filter(|out| out.status.success())?;
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|line| line.split_whitespace().nth(2)?.parse().ok())
}

/// What Varnish in `dir` has logged: its child's starts, deaths and panics.
fn varnish_log(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("varnish.log")).unwrap_or_default()
}

/// `bloomcast verify --pubkey KEY --since <the first hour>` against `base`, asserted to pass.
fn verify_through(base: &str, key: &PublicKey, what: &str) {
    let verify = Command::new(env!("CARGO_BIN_EXE_bloomcast"))
        .args([
            "verify",
            "--pubkey",
            &key.to_string(),
            "--since",
            "2008-09-03T13",
            // Hours of 2008: stale on purpose.
            "--accept-stale",
        ])
        .args(["--url", base])
        .output()
        .unwrap();
    assert!(
        verify.status.success(),
        "verify {what}: {}",
        String::from_utf8_lossy(&verify.stderr)
    );
}

/// `bloomcast check --pubkey KEY --since <the first hour> IDS` against `base`, asserted
/// to pass: what it printed.
fn check_through(base: &str, key: &PublicKey, ids: &[&str]) -> String {
    let check = Command::new(env!("CARGO_BIN_EXE_bloomcast"))
        .args(["check", "--server", base, "--pubkey", &key.to_string()])
        .args(["--since", "2008-09-03T13"])
        // Hours of 2008, far behind this machine's clock (stale), the open hour's
        // versions made then: on purpose.
        .args(["--accept-stale", "--freshness", "600000000"])
        .args(ids)
        .output()
        .unwrap();
    assert!(
        check.status.success(),
        "check: {}",
        String::from_utf8_lossy(&check.stderr)
    );
    String::from_utf8_lossy(&check.stdout).into_owned()
}

fn header<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h str> {
    headers.get(name).map(|v| v.to_str().unwrap())
}

/// The body's `Repr-Digest` names these very bytes.
fn assert_repr_digest(headers: &HeaderMap, body: &[u8], what: &str) {
    let digest = base64::engine::general_purpose::STANDARD.encode(bloomcast::dcz::sha256(body));
    assert_eq!(
        header(headers, "repr-digest"),
        Some(format!("sha-256=:{digest}:").as_str()),
        "{what}: Repr-Digest of the bytes received"
    );
}

fn gunzip(body: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(body), &mut out).unwrap();
    out
}

fn ids(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}{i}")).collect()
}

/// A request's extra headers.
type Headers<'a> = &'a [(&'a str, &'a str)];

const HOUR_ROUTE: &str = "/{y}/{mo}/{d}/{h}";

async fn closed_hours_reach_the_origin_once_per_form_and_encoding() {
    let stack = Stack::start(30).await;
    stack.publish(0, &ids("a", 50)).await;
    stack.publish(1, &ids("b", 50)).await;
    stack.seal_open_hour().await;
    let path = first_hour().path();
    let forms: [(String, Option<&str>); 4] = [
        (path.clone(), None),
        (format!("{path}.hex"), None),
        (format!("{path}.bin"), None),
        (path.clone(), Some("application/vnd.bloomcast.ribbon")),
    ];
    let codings = [None, Some("gzip")];
    let variant_headers = |accept: Option<&'static str>, coding: Option<&'static str>| {
        let mut h = Vec::new();
        if let Some(a) = accept {
            h.push(("accept", a));
        }
        if let Some(c) = coding {
            h.push(("accept-encoding", c));
        }
        h
    };

    // What a node itself answers to each form and encoding (its coding and bytes).
    let mut expected = Vec::new();
    for (path, accept) in &forms {
        for coding in codings {
            let (status, headers, body) = stack
                .get_from(
                    &stack.nodes[0].base,
                    path,
                    &variant_headers(*accept, coding),
                )
                .await;
            assert_eq!(status, 200, "{path} {accept:?} {coding:?}");
            let sent = header(&headers, "content-encoding").map(str::to_owned);
            assert!(
                coding.is_some() || sent.is_none(),
                "{path}: no gzip unasked"
            );
            expected.push((sent, body));
        }
    }
    let expected = &expected;

    // The first fetch of each form and encoding goes to a node.
    let before = stack.origin_requests(HOUR_ROUTE).await;
    let mut etags = Vec::new();
    for (i, (path, accept)) in forms.iter().enumerate() {
        for (j, coding) in codings.into_iter().enumerate() {
            let (status, headers, body) = stack.get(path, &variant_headers(*accept, coding)).await;
            assert_eq!(status, 200, "{path} {accept:?} {coding:?}");
            let (sent, bytes) = &expected[i * 2 + j];
            assert_eq!(
                header(&headers, "content-encoding"),
                sent.as_deref(),
                "{path} {coding:?}"
            );
            assert!(
                body == *bytes,
                "{path} {accept:?} {coding:?}: the node's bytes"
            );
            assert!(header(&headers, "cache-control")
                .unwrap()
                .contains("immutable"));
            if accept.is_none() {
                assert!(
                    header(&headers, "bloom-signature").is_some(),
                    "{path}: signed"
                );
            }
            assert_repr_digest(&headers, &body, path);
            etags.push((
                path.clone(),
                *accept,
                coding,
                header(&headers, "etag").unwrap().to_owned(),
            ));
        }
    }
    let first = stack.origin_requests(HOUR_ROUTE).await - before;
    assert_eq!(first, 8, "one origin request per form and encoding");

    // Then any number of pollers, all at once: none reaches a node.
    let mut polls = Vec::new();
    for round in 0..25 {
        for (i, (path, accept)) in forms.iter().enumerate() {
            for (j, coding) in codings.into_iter().enumerate() {
                let (stack, path) = (&stack, path.clone());
                let mut headers = variant_headers(*accept, coding);
                // Browser pollers on any web page share the cache's objects.
                match round % 3 {
                    1 => headers.push(("origin", "https://a.example")),
                    2 => headers.push(("origin", "https://b.example")),
                    _ => {}
                }
                polls.push(async move {
                    let (status, h, body) = stack.get(&path, &headers).await;
                    assert_eq!(status, 200, "poll {round} {path}");
                    let (sent, bytes) = &expected[i * 2 + j];
                    assert_eq!(
                        header(&h, "content-encoding"),
                        sent.as_deref(),
                        "poll {round} {path}"
                    );
                    assert!(
                        body == *bytes,
                        "poll {round} {path} {coding:?}: the node's bytes"
                    );
                    assert_repr_digest(&h, &body, &path);
                });
            }
        }
    }
    futures_util::future::join_all(polls).await;
    // Revalidation against the cache: 304 from the cache, for every variant.
    for (path, accept, coding, etag) in &etags {
        let mut headers = variant_headers(*accept, *coding);
        headers.push(("if-none-match", etag));
        let (status, h, body) = stack.get(path, &headers).await;
        assert_eq!(status, 304, "{path} {accept:?} {coding:?} revalidated");
        assert!(body.is_empty());
        assert_eq!(header(&h, "etag"), Some(etag.as_str()));
    }
    assert_eq!(
        stack.origin_requests(HOUR_ROUTE).await - before,
        first,
        "200 polls and 8 revalidations after the first fetches reached no node"
    );
    stack.stop().await;
}

async fn the_open_hour_is_never_older_than_its_max_age() {
    const MAX_AGE: u64 = 2;
    let stack = Stack::start(MAX_AGE).await;
    let path = first_hour().path();
    let start = Instant::now();
    let mut acked: Vec<(String, Instant)> = Vec::new();
    let (mut polls, mut hits) = (0, 0);
    let mut n = 0;
    while start.elapsed().as_secs() < 8 {
        // A publisher adds an ID every 100 ms, through either node.
        let id = format!("open{n}");
        stack.publish(n % 2, std::slice::from_ref(&id)).await;
        acked.push((id, Instant::now()));
        n += 1;
        let asked = Instant::now();
        let (status, headers, body) = stack.get(&path, &[]).await;
        assert_eq!(status, 200);
        let cache_control = header(&headers, "cache-control").unwrap();
        assert_eq!(cache_control, format!("max-age={MAX_AGE}"));
        let age: u64 = header(&headers, "age").unwrap().parse().unwrap();
        assert!(age <= MAX_AGE, "Age {age} past max-age {MAX_AGE}");
        hits += u64::from(age > 0);
        polls += 1;
        // Every ID acknowledged before the body left a node is in it: Age counts whole
        // seconds, so anything acknowledged a second more before is surely in.
        let (_, filter) = Document::parse(&body).unwrap();
        let made_by = asked - std::time::Duration::from_secs(age + 1);
        for (id, at) in &acked {
            if *at < made_by {
                assert!(
                    filter.contains(id),
                    "{id}, acknowledged before a body {age} s old, is missing"
                );
            }
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let origin = stack.origin_requests(HOUR_ROUTE).await;
    let windows = start.elapsed().as_secs() / MAX_AGE + 1;
    assert!(hits > 0, "some polls were answered by the cache");
    assert!(
        origin <= windows + 2,
        "{origin} origin requests for {polls} polls over {windows} max-age windows: \
         at most one per window"
    );
    stack.stop().await;
}

async fn variants_never_mix() {
    let stack = Stack::start(1).await;
    stack.publish(0, &ids("v", 100)).await;
    let path = first_hour().path();

    // A version of the open hour, kept as a dictionary by the node that made it.
    let (status, headers, first) = stack.get(&path, &[("accept-encoding", "gzip")]).await;
    assert_eq!(status, 200);
    assert_eq!(header(&headers, "content-encoding"), Some("gzip"));
    assert_repr_digest(&headers, &first, "first version");
    assert!(
        header(&headers, "use-as-dictionary").is_some(),
        "the open hour's version is offered as a dictionary"
    );
    let dictionary = gunzip(&first);
    let offered = format!(
        ":{}:",
        base64::engine::general_purpose::STANDARD.encode(bloomcast::dcz::sha256(&dictionary))
    );
    let other = format!(
        ":{}:",
        base64::engine::general_purpose::STANDARD.encode(bloomcast::dcz::sha256(b"not a version"))
    );

    // A newer version, once the cached one is past its max-age.
    stack.publish(1, &ids("w", 100)).await;
    tokio::time::sleep(std::time::Duration::from_millis(2100)).await;

    for round in 0..2 {
        // Offered the very dictionary: a dcz delta against it, which decodes to the new
        // version (the second round is served by the cache).
        let (status, h, body) = stack
            .get(
                &path,
                &[
                    ("accept-encoding", "dcz, gzip"),
                    ("available-dictionary", &offered),
                ],
            )
            .await;
        assert_eq!(status, 200);
        assert_eq!(header(&h, "content-encoding"), Some("dcz"), "round {round}");
        assert_repr_digest(&h, &body, "dcz");
        let (_, filter) =
            Document::parse(&bloomcast::dcz::decode(&dictionary, &body).unwrap()).unwrap();
        assert!(
            filter.contains("w99") && filter.contains("v0"),
            "round {round}"
        );

        // Another dictionary, none, or dcz without gzip: never that delta.
        let cases: [(Headers, Option<&str>); 6] = [
            (
                &[
                    ("accept-encoding", "dcz, gzip"),
                    ("available-dictionary", &other),
                ],
                Some("gzip"),
            ),
            (&[("accept-encoding", "dcz, gzip")], Some("gzip")),
            (&[("accept-encoding", "gzip")], Some("gzip")),
            (&[("accept-encoding", "gzip;q=0, deflate")], None),
            (&[("available-dictionary", &offered)], None),
            (&[], None),
        ];
        for (headers, coding) in cases {
            let (status, h, body) = stack.get(&path, headers).await;
            assert_eq!(status, 200, "{headers:?}");
            assert_eq!(
                header(&h, "content-encoding"),
                coding,
                "round {round} {headers:?}"
            );
            assert_repr_digest(&h, &body, &format!("{headers:?}"));
            let json = if coding == Some("gzip") {
                gunzip(&body)
            } else {
                body
            };
            let (_, filter) = Document::parse(&json).unwrap();
            assert!(
                filter.contains("w99"),
                "round {round} {headers:?}: the new version"
            );
        }
    }

    // A closed hour: gzip for whoever takes it (`*` included), identity for the rest.
    stack.seal_open_hour().await;
    for (accept_encoding, coding) in [
        ("gzip", Some("gzip")),
        ("br, *", Some("gzip")),
        ("identity", None),
        ("dcz", None),
        ("gzip;q=0", None),
        ("x-gzip;q=0.5", Some("gzip")),
    ] {
        for _ in 0..2 {
            let (status, h, body) = stack
                .get(
                    &format!("{path}.bin"),
                    &[("accept-encoding", accept_encoding)],
                )
                .await;
            assert_eq!(status, 200);
            assert_eq!(header(&h, "content-encoding"), coding, "{accept_encoding}");
            assert_repr_digest(&h, &body, accept_encoding);
        }
    }
    stack.stop().await;
}

/// Each node keeps its own versions of the open hour: a dictionary URL must reach the
/// node its hour path goes to (backends.sh hashes `/dictionaries/<path>/<id>` by
/// `<path>`). Four representations' URLs, each on either of two nodes by its own hash,
/// would all land right by chance once in sixteen.
async fn linked_dictionaries_reach_the_node_that_kept_them() {
    let stack = Stack::start(2).await;
    stack.publish(0, &ids("d", 100)).await;
    let hour = first_hour().path();
    for path in [
        format!("{hour}.bin"),
        format!("{hour}.json"),
        format!("{hour}.hex"),
        hour.clone(),
    ] {
        let (status, headers, body) = stack.get(&path, &[("accept-encoding", "gzip")]).await;
        assert_eq!(status, 200, "{path}");
        let link = header(&headers, "link").unwrap_or_default().to_owned();
        let url = link
            .split(", ")
            .find_map(|l| {
                l.strip_suffix(">; rel=\"compression-dictionary\"")?
                    .strip_prefix('<')
            })
            .unwrap_or_else(|| panic!("{path} links a dictionary: {link:?}"));
        for round in 0..2 {
            let (status, h, dictionary) = stack.get(url, &[]).await;
            assert_eq!(
                status, 200,
                "{url} reaches the node that kept it (round {round})"
            );
            assert_eq!(dictionary, gunzip(&body), "{url}");
            assert!(header(&h, "use-as-dictionary").is_some(), "{url}");
        }
    }
    stack.stop().await;
}

async fn verify_and_check_succeed_through_the_cache() {
    let stack = Stack::start(30).await;
    for round in 0..3 {
        stack
            .publish(round % 2, &ids(&format!("r{round}-"), 20))
            .await;
        stack.seal_open_hour().await;
    }
    let key: PublicKey = Signer::from_seed(&SEED).public_key();
    verify_through(&stack.cache, &key, "through the cache");
    let mut reached = Vec::new();
    for _ in 0..2 {
        let before = stack.origin_requests(None).await - stack.origin_requests("/").await;
        let out = check_through(&stack.cache, &key, &["r0-3", "r2-19", "nobody"]);
        assert!(out.contains("r0-3") && out.contains("r2-19"), "{out}");
        assert!(!out.contains("nobody"), "{out}");
        reached.push(stack.origin_requests(None).await - stack.origin_requests("/").await - before);
    }
    // The second check read everything (the open hour within its max-age) from the cache
    // but the index (`GET /`), which is `no-cache`: revalidated each time (a 304).
    assert!(
        reached[0] >= 1,
        "the first check reached the nodes: {reached:?}"
    );
    assert_eq!(
        reached[1], 0,
        "the second check was answered by the cache alone"
    );
    stack.stop().await;
}

async fn private_routes_are_never_cached() {
    let stack = Stack::start(30).await;
    let client = &stack.http;
    for route in ["/updates", "/history", "/stats", "/healthz", "/metrics"] {
        let before = stack.origin_requests(route).await;
        for _ in 0..3 {
            let request = match route {
                "/updates" => client
                    .post(format!("{}{route}", stack.cache))
                    .bearer_auth(TOKEN)
                    .json(&serde_json::json!({ "ids": ["p1"] })),
                "/history" => client
                    .get(format!("{}/history?id=p1", stack.cache))
                    .bearer_auth(TOKEN),
                _ => client.get(format!("{}{route}", stack.cache)),
            };
            let reply = request.send().await.unwrap();
            assert_eq!(reply.status(), 200, "{route}");
            // Varnish names one transaction on a miss or a pass, two on a hit.
            let xid = header(reply.headers(), "x-varnish").unwrap();
            assert_eq!(
                xid.split(' ').count(),
                1,
                "{route}: not a cache hit ({xid})"
            );
            let cache_control = header(reply.headers(), "cache-control")
                .unwrap_or("")
                .to_owned();
            assert!(
                cache_control.contains("no-store") || cache_control.contains("private"),
                "{route}: Cache-Control {cache_control:?}"
            );
        }
        if route != "/metrics" {
            // (/metrics counts the reads of this count too; the X-Varnish check holds.)
            assert_eq!(
                stack.origin_requests(route).await - before,
                3,
                "{route}: every request reached a node"
            );
        }
    }
    // Without the token, /history is refused each time by a node, never by a cache.
    for _ in 0..2 {
        let (status, h, _) = stack.get("/history?id=p1", &[]).await;
        assert_eq!(status, 401);
        assert_eq!(header(&h, "cache-control"), Some("no-store"));
    }
    stack.stop().await;
}

async fn a_rotated_key_breaks_no_cached_hour() {
    let mut stack = Stack::start(30).await;
    let path = format!("{}.bin", first_hour().path());
    stack.publish(0, &ids("k1-", 10)).await;
    stack.seal_open_hour().await;
    let (status, before, body) = stack.get(&path, &[]).await;
    assert_eq!(status, 200);
    let k1 = Signer::from_seed(&SEED).public_key();
    let signed =
        |h: &HeaderMap| SignatureField::parse(header(h, "bloom-signature").unwrap()).unwrap();
    assert_eq!(signed(&before).key_id, Some(k1.id()));

    // Two rotations, an hour sealed under each new key.
    for (n, seed) in [(1, [0x61u8; 32]), (2, [0x62; 32])] {
        stack.restart_with_key(&seed).await;
        stack
            .publish(n % 2, &ids(&format!("k{}-", n + 1), 10))
            .await;
        stack.seal_open_hour().await;
        let newest = Hour::from_index(first_hour().index() + n as i64);
        let (status, h, _) = stack.get(&format!("{}.bin", newest.path()), &[]).await;
        assert_eq!(status, 200);
        assert_eq!(
            signed(&h).key_id,
            Some(Signer::from_seed(&seed).public_key().id())
        );
    }

    // The hour cached before the rotations is still served from the cache, as it was,
    // and still verifies: its signature never changed.
    let (status, after, cached) = stack.get(&path, &[]).await;
    assert_eq!(status, 200);
    assert_eq!(
        header(&after, "x-varnish").unwrap().split(' ').count(),
        2,
        "a cache hit"
    );
    assert_eq!(cached, body);
    assert_eq!(
        header(&after, "bloom-signature"),
        header(&before, "bloom-signature")
    );
    let wk: serde_json::Value =
        serde_json::from_slice(&stack.get("/.well-known/bloomcast.json", &[]).await.2).unwrap();
    assert_eq!(wk["keys"].as_array().unwrap().len(), 3, "{wk}");
    // Rotated as `rotate-key` rotates (each succession signed both ways): the first key
    // trusts the later ones through their vouches, the newest the earlier ones through
    // its acknowledgements.
    let k3 = Signer::from_seed(&[0x62; 32]).public_key();
    verify_through(
        &stack.cache,
        &k1,
        "from the first key across both rotations",
    );
    verify_through(
        &stack.cache,
        &k3,
        "from the newest key back across both rotations",
    );
    let out = check_through(&stack.cache, &k1, &["k1-3", "k3-9", "nobody"]);
    assert!(
        out.contains("k1-3") && out.contains("k3-9") && !out.contains("nobody"),
        "{out}"
    );
    stack.stop().await;
}

async fn next_event(stream: &mut bloomcast::client::EventStream) -> bloomcast::client::ServerEvent {
    tokio::time::timeout(common::wait::HANG, stream.next())
        .await
        .expect("an event within a minute")
        .unwrap()
        .expect("the stream goes on")
}

/// `GET /events` through Varnish: passed to a node and streamed, each event as it comes,
/// for IDs acknowledged by either node; never a cached stream.
async fn events_stream_through_the_cache() {
    let stack = Stack::start(30).await;
    let client = bloomcast::client::Client::new(&stack.cache).unwrap();
    let mut stream = client
        .events(None)
        .await
        .unwrap()
        .expect("a stream through the cache");
    assert_eq!(next_event(&mut stream).await.kind, "version");
    for (i, n) in [(0, 20), (1, 40)] {
        stack.publish(i, &ids(&format!("e{i}-"), 20)).await;
        loop {
            let event = next_event(&mut stream).await;
            if event.kind == "version" && event.json().unwrap()["count"] == n {
                break;
            }
        }
    }
    // Following the event through the cache. The open hour's copy the cache holds
    // (fetched before the next batch) is the version a subscriber has; the fetch that
    // follows the event (`Cache-Control: no-cache`, naming that version) is sent on to a
    // node, once, and its answer kept for everyone.
    let path = format!("{}.bin", first_hour().path());
    let (status, h, _) = stack.get(&path, &[("accept-encoding", "gzip")]).await;
    assert_eq!((status, header(&h, "bloom-count")), (200, Some("40")));
    let held = header(&h, "etag").unwrap().to_owned();
    stack.publish(0, &ids("e2-", 5)).await;
    loop {
        let event = next_event(&mut stream).await;
        if event.kind == "version" && event.json().unwrap()["count"] == 45 {
            break;
        }
    }
    let revalidate = [
        ("accept-encoding", "gzip"),
        ("if-none-match", held.as_str()),
    ];
    let (status, _, _) = stack.get(&path, &revalidate).await;
    assert_eq!(
        status, 304,
        "a poll is answered from the cache's copy until it expires"
    );
    let origin = stack.origin_requests(None).await;
    let fresh = [
        ("accept-encoding", "gzip"),
        ("if-none-match", held.as_str()),
        ("cache-control", "no-cache"),
    ];
    let (status, h, _) = stack.get(&path, &fresh).await;
    assert_eq!(
        (status, header(&h, "bloom-count")),
        (200, Some("45")),
        "the fetch after the event"
    );
    assert_eq!(
        stack.origin_requests(None).await - origin,
        1,
        "one fetch from a node"
    );
    let (status, h, _) = stack.get(&path, &fresh).await;
    assert_eq!(
        (status, header(&h, "bloom-count")),
        (200, Some("45")),
        "another subscriber"
    );
    let (status, _, _) = stack.get(&path, &revalidate).await;
    assert_eq!(status, 200, "kept for every poller");
    assert_eq!(
        stack.origin_requests(None).await - origin,
        1,
        "the subscribers following one event share that fetch"
    );

    // A second subscriber gets the current version, not a cached first one.
    let mut again = client.events(None).await.unwrap().expect("a second stream");
    let first = next_event(&mut again).await;
    assert_eq!(first.json().unwrap()["count"], 45, "{first:?}");
    drop((stream, again));
    stack.stop().await;
}

/// An hour's paged form through deploy/'s Varnish: the cache fetches the body once and
/// cuts every range a reader asks from its copy, each 206 without the headers a page's
/// reader never reads (deploy/varnish/bloomcast.vcl); the CLI reads the hour by the page
/// through it, every page verified.
async fn pages_are_cut_by_the_cache_from_one_fetch() {
    let stack = Stack::start(30).await;
    stack.publish(0, &ids("p", 3_000)).await;
    stack.seal_open_hour().await;
    let path = format!("{}.pages", first_hour().path());
    let (status, _, whole) = stack.get_from(&stack.nodes[0].base, &path, &[]).await;
    assert_eq!(status, 200);
    let before = stack.origin_requests(None).await;

    let (status, headers, head) = stack.get(&path, &[("range", "bytes=0-71")]).await;
    assert_eq!(status, 206);
    let range = format!("bytes 0-71/{}", whole.len());
    assert_eq!(header(&headers, "content-range"), Some(range.as_str()));
    assert_eq!(head, whole[..72]);
    for dropped in ["access-control-expose-headers", "repr-digest", "x-varnish"] {
        assert!(
            header(&headers, dropped).is_none(),
            "{dropped} on a page's 206"
        );
    }
    assert_eq!(header(&headers, "access-control-allow-origin"), Some("*"));
    let pages = bloomcast::bloom::PagesHeader::parse(&head).unwrap();
    for p in [0, pages.pages / 2, pages.pages - 1] {
        let slot = pages.slot_range(p);
        let asked = format!("bytes={}-{}", slot.start, slot.end - 1);
        let (status, _, got) = stack.get(&path, &[("range", asked.as_str())]).await;
        assert_eq!(status, 206);
        assert_eq!(
            got,
            whole[slot.start as usize..slot.end as usize],
            "page {p}"
        );
    }
    let reached = stack.origin_requests(None).await - before;
    assert!(reached <= 1, "the origin sent the body {reached} times");

    let key: PublicKey = Signer::from_seed(&SEED).public_key();
    let check = Command::new(env!("CARGO_BIN_EXE_bloomcast"))
        .args([
            "check",
            "--server",
            &stack.cache,
            "--pubkey",
            &key.to_string(),
        ])
        .args(["--since", "2008-09-03T13", "--strategy", "pages", "--json"])
        .args(["--accept-stale", "--freshness", "600000000"])
        .args(["p7", "p2999", "nobody"])
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&check.stdout);
    assert!(
        check.status.success(),
        "check: {}",
        String::from_utf8_lossy(&check.stderr)
    );
    assert!(out.contains("\"p7\"") && out.contains("\"p2999\""), "{out}");
    assert!(out.contains("\"pages\":"), "read by the page: {out}");
    stack.stop().await;
}
