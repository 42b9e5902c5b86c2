//! Sustained ingest for the fault tests: writers posting small batches to each node
//! without pause, every answer kept (status, error code, `Retry-After`, how long it
//! took, the hour its receipt named), and the checks every fault test makes of them:
//! only 200 or 503 `store_unavailable`, and every acknowledged ID in its hour's filter
//! on every node. How long things took is measured for the report, never asserted.

use crate::common::{fetch, path_of, TOKEN};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// One ingest request and how it was answered.
#[derive(Debug, Clone)]
pub struct Answer {
    /// Index of the node (in the bases given to [`Load::start`]).
    pub node: usize,
    pub sent: Instant,
    pub elapsed: Duration,
    /// 0: no HTTP answer at all (connection refused or reset, or the client's own timeout).
    pub status: u16,
    /// The JSON body's `error`, when it had one with a `message` beside it.
    pub error: Option<String>,
    pub retry_after: bool,
    /// The receipt's hour, for a 200.
    pub hour: Option<String>,
    pub ids: Vec<String>,
}

/// Writers posting to every node until [`Load::finish`].
pub struct Load {
    answers: Arc<Mutex<Vec<Answer>>>,
    stop: Arc<AtomicBool>,
    writers: Vec<tokio::task::JoinHandle<()>>,
}

impl Load {
    /// `per_node` writers for each of `bases`, batches of 20 IDs named after `prefix`.
    pub fn start(bases: &[String], per_node: usize, prefix: &str) -> Load {
        let answers: Arc<Mutex<Vec<Answer>>> = Arc::default();
        let stop = Arc::new(AtomicBool::new(false));
        // Far beyond any bound a test asserts: a request the server never answers shows
        // as status 0 after this, and fails the checks, instead of hanging the test.
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(60))
            .build()
            .unwrap();
        let mut writers = Vec::new();
        for (node, base) in bases.iter().enumerate() {
            for w in 0..per_node {
                let (http, base, answers, stop) =
                    (http.clone(), base.clone(), answers.clone(), stop.clone());
                let prefix = format!("{prefix}-n{node}-w{w}");
                writers.push(tokio::spawn(async move {
                    let mut batch = 0u64;
                    while !stop.load(Ordering::SeqCst) {
                        let ids: Vec<String> =
                            (0..20).map(|i| format!("{prefix}-b{batch}-{i}")).collect();
                        batch += 1;
                        let answer = post(&http, node, &base, ids).await;
                        answers.lock().unwrap().push(answer);
                        tokio::time::sleep(Duration::from_millis(5)).await;
                    }
                }));
            }
        }
        Load {
            answers,
            stop,
            writers,
        }
    }

    /// The answers so far.
    pub fn answers(&self) -> Vec<Answer> {
        self.answers.lock().unwrap().clone()
    }

    /// Waits until every node has acknowledged a batch sent at or after `since`;
    /// returns how long after `since` each node's first such acknowledgement came (for
    /// the report).
    pub async fn wait_acked_since(&self, nodes: usize, since: Instant) -> Vec<Duration> {
        let what = format!("every one of {nodes} nodes acknowledges ingest");
        crate::common::wait::until(what, || {
            let answers = self.answers();
            let firsts: Option<Vec<Duration>> = (0..nodes)
                .map(|n| {
                    answers
                        .iter()
                        .filter(|a| a.node == n && a.status == 200 && a.sent >= since)
                        .map(|a| a.sent + a.elapsed - since)
                        .min()
                })
                .collect();
            std::future::ready(firsts)
        })
        .await
    }

    /// Waits until each of `nodes` has answered `count` batches sent at or after `since`
    /// with `status`: the load has run through that much of a phase.
    pub async fn wait_answered_since(
        &self,
        nodes: &[usize],
        since: Instant,
        status: u16,
        count: usize,
    ) {
        let what = format!("nodes {nodes:?} each answer {count} batches {status}");
        crate::common::wait::eventually(what, || {
            let answers = self.answers();
            nodes.iter().all(|n| {
                answers
                    .iter()
                    .filter(|a| a.node == *n && a.status == status && a.sent >= since)
                    .count()
                    >= count
            })
        })
        .await;
    }

    /// Stops the writers (each finishes its request in flight) and returns every answer.
    pub async fn finish(self) -> Vec<Answer> {
        self.stop.store(true, Ordering::SeqCst);
        for w in self.writers {
            w.await.unwrap();
        }
        let mut answers = self.answers.lock().unwrap();
        std::mem::take(&mut *answers)
    }
}

async fn post(http: &reqwest::Client, node: usize, base: &str, ids: Vec<String>) -> Answer {
    let sent = Instant::now();
    let mut answer = Answer {
        node,
        sent,
        elapsed: Duration::ZERO,
        status: 0,
        error: None,
        retry_after: false,
        hour: None,
        ids,
    };
    let reply = http
        .post(format!("{base}/updates"))
        .bearer_auth(TOKEN)
        .json(&serde_json::json!({ "ids": answer.ids }))
        .send()
        .await;
    if let Ok(reply) = reply {
        answer.status = reply.status().as_u16();
        answer.retry_after = reply.headers().contains_key("retry-after");
        let body: serde_json::Value = reply.json().await.unwrap_or_default();
        if answer.status == 200 {
            answer.hour = body["hour"].as_str().map(str::to_owned);
        } else if body["message"].is_string() {
            answer.error = body["error"].as_str().map(str::to_owned);
        }
    }
    answer.elapsed = sent.elapsed();
    answer
}

/// Every answer is a 200 with a receipt, or a 503 `store_unavailable` with a JSON
/// `{"error", "message"}` body and `Retry-After`. That is what bounds how long one
/// waits, by what happened rather than by the wall clock: an ingest held past the
/// node's database timeout, or its request timeout, is answered otherwise (the request
/// timeout's own error), and one never answered shows as status 0.
pub fn assert_ok_or_unavailable(answers: &[Answer]) {
    for a in answers {
        let fine = match a.status {
            200 => a.hour.is_some(),
            503 => a.error.as_deref() == Some("store_unavailable") && a.retry_after,
            _ => false,
        };
        assert!(
            fine,
            "an ingest answered neither 200 nor 503 store_unavailable with Retry-After: {a:?}"
        );
    }
}

/// 503s among `answers`, by node.
pub fn unavailable_by_node(answers: &[Answer], nodes: usize) -> Vec<usize> {
    (0..nodes)
        .map(|n| {
            answers
                .iter()
                .filter(|a| a.node == n && a.status == 503)
                .count()
        })
        .collect()
}

/// The acknowledged IDs by the hour their receipt named.
pub fn acked_by_hour(answers: &[Answer]) -> BTreeMap<String, Vec<String>> {
    let mut acked: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for a in answers.iter().filter(|a| a.status == 200) {
        let hour = a.hour.clone().expect("a receipt names its hour");
        acked.entry(hour).or_default().extend(a.ids.iter().cloned());
    }
    acked
}

/// Every acknowledged ID is in its hour's filter on every node; prints one line per hour
/// (acknowledged and found, per node) for `benches/harness/cluster_faults.sh`.
pub async fn assert_all_found(test: &str, bases: &[String], acked: &BTreeMap<String, Vec<String>>) {
    let http = reqwest::Client::new();
    for (hour, ids) in acked {
        let mut found = Vec::new();
        for base in bases {
            let (_, filter) = fetch(&http, base, &path_of(hour)).await;
            found.push(ids.iter().filter(|id| filter.contains(id)).count());
        }
        let found_text: Vec<String> = found.iter().map(ToString::to_string).collect();
        eprintln!(
            "FAULTS-HOUR test={test} hour={hour} acked={} found={}",
            ids.len(),
            found_text.join("/")
        );
        for (base, found) in bases.iter().zip(&found) {
            assert_eq!(
                *found,
                ids.len(),
                "{base}: {} of {} acknowledged IDs lost in {hour}",
                ids.len() - found,
                ids.len()
            );
        }
    }
}

/// Status and body of a GET.
pub async fn get(http: &reqwest::Client, url: &str) -> (u16, bytes::Bytes) {
    let reply = http.get(url).send().await.unwrap();
    let status = reply.status().as_u16();
    (status, reply.bytes().await.unwrap())
}

/// Waits until `url` answers `status`.
pub async fn wait_status(http: &reqwest::Client, url: &str, status: u16) {
    crate::common::wait::until(format!("{url} answers {status}"), || async move {
        (get(http, url).await.0 == status).then_some(())
    })
    .await;
}

/// Prints the line `benches/harness/cluster_faults.sh` reads for one fault: its outage,
/// the 503s each of the two nodes answered, and each node's time to its first 200 after.
pub fn report_fault(test: &str, outage: Duration, answers: &[Answer], recovery: &[Duration]) {
    let joined = |parts: Vec<String>| parts.join("/");
    eprintln!(
        "FAULTS test={test} outage_ms={} unavailable={} recovery_ms={}",
        outage.as_millis(),
        joined(
            unavailable_by_node(answers, 2)
                .iter()
                .map(ToString::to_string)
                .collect()
        ),
        joined(recovery.iter().map(|d| d.as_millis().to_string()).collect()),
    );
}

/// Posts one ID to `base` and asserts the answer is 503 `store_unavailable` with
/// `Retry-After` and a JSON error body.
pub async fn assert_ingest_unavailable(http: &reqwest::Client, base: &str, id: &str) {
    let refused = http
        .post(format!("{base}/updates"))
        .bearer_auth(crate::common::TOKEN)
        .json(&serde_json::json!({ "ids": [id] }))
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 503);
    assert!(refused.headers().contains_key("retry-after"));
    let body: serde_json::Value = refused.json().await.unwrap();
    assert_eq!(body["error"], "store_unavailable", "{body}");
    assert!(body["message"].is_string(), "{body}");
}
