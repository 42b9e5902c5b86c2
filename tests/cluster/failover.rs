//! PostgreSQL as teams run it: a primary with a synchronous standby, nodes given both
//! hosts (`target_session_attrs=read-write`), read replicas and PgBouncer in transaction
//! pooling mode.
//!
//! - The primary killed with SIGKILL under ingest into two nodes, then the standby
//!   promoted: every ingest between is answered 503 `store_unavailable` with
//!   `Retry-After`, both nodes write to the new primary within 5 s of the promotion with
//!   no restart, every acknowledged ID is in its hour's filter on both, and the chain
//!   goes on without a fork (prints `FAULTS` lines for `benches/harness/cluster_faults.sh`).
//! - Sealed hours read from a replica (`database_read_url`): served from it while the
//!   primary is down; from the primary while the replica has not replayed the seal.
//! - Through PgBouncer (`pool_mode = transaction`, fewer server connections than the
//!   nodes' pools): ingest, seals and other nodes' notices all work.

use super::load::{
    acked_by_hour, assert_all_found, assert_ok_or_unavailable, get, report_fault,
    unavailable_by_node, Load,
};
use crate::common::nodes::{
    connect, drop_schema, keyed_node_settings, node, node_settings, unique_schema, Node,
};
use crate::common::pg::{free_port, is_root, PrivateCluster};
use crate::common::{metric, post_ids};
use bloomcast::clock::ManualClock;
use bloomcast::config::Settings;
use bloomcast::hour::hour_of;
use chrono::Duration;
use std::process::{Child, Command};
use std::time::{Duration as Wait, Instant};

/// The nodes' request timeout here: an ingest held this long is answered with the
/// request timeout's error, which fails the checks (a hang, not a 503).
const REQUEST_TIMEOUT: Wait = Wait::from_secs(5);

/// How long after the promotion each node may take to write again.
const WRITES_AGAIN_WITHIN: Wait = Wait::from_secs(5);

/// The time the primary stays dead before the standby is promoted.
const DEAD_FOR: Wait = Wait::from_secs(2);

/// A primary with a standby `standby1` that it waits for at each commit.
fn primary_and_synchronous_standby() -> (PrivateCluster, PrivateCluster) {
    let primary = PrivateCluster::create()
        .unwrap_or_else(|why| panic!("initdb and pg_ctl start a private cluster: {why}"));
    let standby = PrivateCluster::standby_of(&primary, "standby1")
        .unwrap_or_else(|why| panic!("pg_basebackup makes a standby: {why}"));
    // Set after the base backup, so the standby, once promoted, waits for no standby.
    primary
        .configure("synchronous_standby_names = 'standby1'\nsynchronous_commit = on")
        .and_then(|()| primary.reload())
        .expect("make the standby synchronous");
    (primary, standby)
}

/// Waits until the primary at `url` counts `standby1` as its synchronous standby.
async fn wait_synchronous(url: &str) {
    let client = connect(url).await;
    let client = &client;
    crate::common::wait::until("the standby streams synchronously", || async move {
        let row = client
            .query_opt(
                "SELECT 1 FROM pg_stat_replication WHERE application_name = 'standby1' \
                 AND sync_state = 'sync' AND state = 'streaming'",
                &[],
            )
            .await
            .unwrap();
        row.map(|_| ())
    })
    .await;
}

fn both_hosts(primary: &PrivateCluster, standby: &PrivateCluster) -> String {
    format!(
        "postgresql://postgres@127.0.0.1:{},127.0.0.1:{}/postgres?target_session_attrs=read-write",
        primary.port(),
        standby.port()
    )
}

async fn nodes_on(url: &str, clock: &ManualClock, dirs: &[tempfile::TempDir]) -> Vec<Node> {
    let mut nodes = Vec::new();
    for dir in dirs {
        let mut settings = node_settings(url, "bloomcast", dir.path().to_owned());
        settings.request_timeout_seconds = REQUEST_TIMEOUT.as_secs();
        nodes.push(node(settings, clock).await);
    }
    nodes
}

async fn tick_until_ok(nodes: &[Node]) {
    for n in nodes {
        let what = "housekeeping succeeds";
        crate::common::wait::until(what, || async move { n.service.tick().await.ok() }).await;
    }
}

pub async fn failover_to_a_synchronous_standby_under_load_loses_nothing_acknowledged() {
    let test = "failover";
    let (primary, standby) = primary_and_synchronous_standby();
    wait_synchronous(&primary.url()).await;
    let url = both_hosts(&primary, &standby);
    let clock = ManualClock::at(hour_of(2008, 9, 3, 13).unwrap(), Duration::minutes(10));
    let dirs = [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()];
    let nodes = nodes_on(&url, &clock, &dirs).await;
    let bases: Vec<String> = nodes.iter().map(|n| n.base.clone()).collect();
    let http = reqwest::Client::new();

    // 13:00 gets IDs and is sealed on the primary before it dies.
    let first: Vec<String> = (0..200).map(|i| format!("{test}-sealed-{i}")).collect();
    let first_hour = post_ids(&http, &bases[0], &first).await.unwrap();
    clock.advance(Duration::hours(1));
    tick_until_ok(&nodes).await;
    let (status, sealed_before) = get(&http, &format!("{}/2008/09/03/13", bases[1])).await;
    assert_eq!(status, 200);
    let (_, chain_before) = get(&http, &format!("{}/chain/2008/09/03/13", bases[0])).await;

    let load = Load::start(&bases, 2, test);
    load.wait_answered_since(&[0, 1], Instant::now(), 200, 10)
        .await;
    primary.kill9().expect("kill -9 the primary");
    let killed = Instant::now();
    eprintln!("{test}: primary killed");
    // Both nodes refuse ingest while no server takes writes: the standby is read-only.
    load.wait_answered_since(&[0, 1], killed, 503, 3).await;
    tokio::time::sleep(DEAD_FOR.saturating_sub(killed.elapsed())).await;
    standby.promote().expect("pg_ctl promote the standby");
    let promoted = Instant::now();
    eprintln!(
        "{test}: standby promoted {} ms after the kill",
        (promoted - killed).as_millis()
    );
    let recovery = load.wait_acked_since(2, promoted).await;
    for (node, after) in recovery.iter().enumerate() {
        assert!(
            *after <= WRITES_AGAIN_WITHIN,
            "node {node} wrote again {} ms after the promotion (bound {} ms)",
            after.as_millis(),
            WRITES_AGAIN_WITHIN.as_millis()
        );
    }
    load.wait_answered_since(&[0, 1], Instant::now(), 200, 10)
        .await;
    let answers = load.finish().await;
    assert_ok_or_unavailable(&answers);
    let refused = unavailable_by_node(&answers, 2);
    assert!(
        refused.iter().all(|n| *n > 0),
        "every node answered 503 while no server took writes: {refused:?}"
    );

    // 14:00, written across the failover, is sealed on the new primary; 13:00 stays
    // what it was.
    clock.advance(Duration::hours(1));
    tick_until_ok(&nodes).await;
    let fresh_dir = tempfile::tempdir().unwrap();
    let fresh = nodes_on(&url, &clock, std::slice::from_ref(&fresh_dir)).await;
    let (status, sealed_after) = get(&http, &format!("{}/2008/09/03/13", fresh[0].base)).await;
    assert_eq!(status, 200);
    assert_eq!(
        sealed_after, sealed_before,
        "13:00 read from the new primary is the hour sealed before the failover"
    );
    let mut chains = Vec::new();
    for base in bases.iter().chain([&fresh[0].base]) {
        let (status, chain) = get(&http, &format!("{base}/chain/2008/09/03/13")).await;
        assert_eq!(status, 200, "{base}/chain");
        chains.push(chain);
    }
    assert!(
        chains.windows(2).all(|w| w[0] == w[1]),
        "one chain on every node"
    );
    let links: Vec<serde_json::Value> = serde_json::from_slice(&chains[0]).unwrap();
    let before: Vec<serde_json::Value> = serde_json::from_slice(&chain_before).unwrap();
    assert_eq!(links.len(), 2, "13:00 and 14:00 linked: {links:#?}");
    assert_eq!(
        links[0], before[0],
        "the chain goes on from the link made before the failover"
    );
    assert_eq!(links[1]["prev"], before[0]["header"], "14:00 follows 13:00");

    let mut acked = acked_by_hour(&answers);
    acked.entry(first_hour).or_default().extend(first);
    report_fault(test, promoted - killed, &answers, &recovery);
    assert_all_found(test, &bases, &acked).await;
}

pub async fn sealed_hours_are_read_from_a_replica_that_has_replayed_them_else_from_the_primary() {
    let test = "replica";
    let primary = PrivateCluster::create()
        .unwrap_or_else(|why| panic!("initdb and pg_ctl start a private cluster: {why}"));
    let replica = PrivateCluster::standby_of(&primary, "replica1")
        .unwrap_or_else(|why| panic!("pg_basebackup makes a replica: {why}"));
    let clock = ManualClock::at(hour_of(2008, 9, 3, 13).unwrap(), Duration::minutes(10));
    // Signed, as the chain's reads (link, signature) are then all on replicas too.
    let replicated = |dir: &tempfile::TempDir| Settings {
        database_read_url: replica.url().into(),
        ..keyed_node_settings(&primary.url(), "bloomcast", dir.path(), 7)
    };
    let dirs = [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()];
    let writer = node(replicated(&dirs[0]), &clock).await;
    let http = reqwest::Client::new();
    let ids: Vec<String> = (0..300).map(|i| format!("{test}-{i}")).collect();
    post_ids(&http, &writer.base, &ids[..150]).await.unwrap();

    // 13:00 sealed while the replica does not replay: a node that never saw it reads
    // it from the primary, whole.
    let paused = connect(&replica.url()).await;
    paused
        .batch_execute("SELECT pg_wal_replay_pause()")
        .await
        .unwrap();
    clock.advance(Duration::hours(1));
    writer.service.tick().await.unwrap();
    let (status, from_writer) = get(&http, &format!("{}/2008/09/03/13", writer.base)).await;
    assert_eq!(status, 200);
    let reader = node(replicated(&dirs[1]), &clock).await;
    let (status, body) = get(&http, &format!("{}/2008/09/03/13", reader.base)).await;
    assert_eq!(
        status, 200,
        "a seal the replica has not replayed comes from the primary"
    );
    assert_eq!(body, from_writer);

    // 14:00 sealed and replayed, then the primary stops: a node that never read 14:00
    // serves it from the replica.
    paused
        .batch_execute("SELECT pg_wal_replay_resume()")
        .await
        .unwrap();
    post_ids(&http, &writer.base, &ids[150..]).await.unwrap();
    clock.advance(Duration::hours(1));
    writer.service.tick().await.unwrap();
    let (_, from_writer) = get(&http, &format!("{}/2008/09/03/14", writer.base)).await;
    let primary_lsn: String = connect(&primary.url())
        .await
        .query_one("SELECT pg_current_wal_lsn()::text", &[])
        .await
        .unwrap()
        .get(0);
    let (replica_ref, lsn) = (&paused, &primary_lsn);
    crate::common::wait::until("the replica replays the seal of 14:00", || async move {
        let row = replica_ref
            .query_one(
                "SELECT pg_last_wal_replay_lsn() >= $1::text::pg_lsn",
                &[&lsn.as_str()],
            )
            .await
            .unwrap();
        row.get::<_, bool>(0).then_some(())
    })
    .await;
    primary.stop_with("fast").expect("stop the primary");
    let (status, body) = get(&http, &format!("{}/2008/09/03/14", reader.base)).await;
    assert_eq!(
        status,
        200,
        "a sealed hour is served from the replica while the primary is down: {}",
        String::from_utf8_lossy(&body)
    );
    assert_eq!(body, from_writer);
    // The open hour comes from the primary only: with it down, 503 (once any refresh
    // that read it before the stop has answered; one from the replica would answer 200
    // for good).
    let (http_ref, open) = (&http, format!("{}/2008/09/03/15", reader.base));
    let open = &open;
    crate::common::wait::until(
        "the open hour answers 503 with the primary down",
        || async move { (get(http_ref, open).await.0 == 503).then_some(()) },
    )
    .await;
    let count = |outcome: &'static str| {
        let series = format!("bloomcast_replica_reads_total{{outcome=\"{outcome}\"}}");
        let (http, base) = (&http, &reader.base);
        async move { metric(http, base, &series).await.parse::<u64>().unwrap() }
    };
    assert!(count("served").await > 0, "the replica served reads");
    assert!(
        count("behind").await > 0,
        "a seal not replayed was read from the primary"
    );
}

/// PgBouncer in transaction pooling mode in front of `database`, its files in `dir`.
struct Bouncer {
    child: Child,
    port: u16,
    dir: std::path::PathBuf,
}

impl Bouncer {
    fn start(program: &str, dir: &std::path::Path, database: &str) -> Bouncer {
        let port = free_port().unwrap();
        let url = url::Url::parse(database).unwrap();
        let config = format!(
            "[databases]\n\
             {db} = host={host} port={pg_port} dbname={db}\n\
             [pgbouncer]\n\
             listen_addr = 127.0.0.1\n\
             listen_port = {port}\n\
             auth_type = trust\n\
             auth_file = {dir}/users.txt\n\
             pool_mode = transaction\n\
             default_pool_size = 3\n\
             max_client_conn = 200\n\
             ignore_startup_parameters = extra_float_digits,options\n\
             unix_socket_dir =\n\
             logfile = {dir}/pgbouncer.log\n\
             pidfile = {dir}/pgbouncer.pid\n",
            db = url.path().trim_start_matches('/'),
            host = url.host_str().unwrap(),
            pg_port = url.port().unwrap_or(5432),
            dir = dir.display(),
        );
        std::fs::write(dir.join("pgbouncer.ini"), config).unwrap();
        std::fs::write(
            dir.join("users.txt"),
            format!("\"{}\" \"\"\n", url.username()),
        )
        .unwrap();
        let ini = dir.join("pgbouncer.ini").display().to_string();
        let mut cmd = if is_root() {
            Command::new("chown")
                .args(["-R", "postgres"])
                .arg(dir)
                .status()
                .unwrap();
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--", program]);
            c
        } else {
            Command::new(program)
        };
        let child = cmd.arg(&ini).spawn().expect("start pgbouncer");
        Bouncer {
            child,
            port,
            dir: dir.to_owned(),
        }
    }
}

impl Drop for Bouncer {
    fn drop(&mut self) {
        // As root the child is runuser, which does not pass a SIGKILL on.
        if let Ok(pid) = std::fs::read_to_string(self.dir.join("pgbouncer.pid")) {
            let _ = Command::new("kill").arg(pid.trim()).status();
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub async fn two_nodes_through_pgbouncer_in_transaction_mode_lose_nothing_and_hear_each_other(
    database: &str,
    pgbouncer: &str,
) {
    let test = "pgbouncer";
    let schema = unique_schema();
    let work = tempfile::tempdir().unwrap();
    let bouncer = Bouncer::start(pgbouncer, work.path(), database);
    let mut pooled = url::Url::parse(database).unwrap();
    pooled.set_port(Some(bouncer.port)).unwrap();
    let pooled = pooled.to_string();
    let pooled_ref = &pooled;
    crate::common::wait::until("pgbouncer answers", || async move {
        tokio_postgres::connect(pooled_ref, tokio_postgres::NoTls)
            .await
            .ok()
            .map(|_| ())
    })
    .await;
    let clock = ManualClock::at(hour_of(2008, 9, 3, 13).unwrap(), Duration::minutes(10));
    let dirs = [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()];
    let mut nodes = Vec::new();
    for dir in &dirs {
        // Statements through the pooler; LISTEN straight to PostgreSQL.
        let settings = Settings {
            database_listen_url: database.into(),
            refresh_ms: 60_000,
            ..node_settings(&pooled, &schema, dir.path().to_owned())
        };
        nodes.push(node(settings, &clock).await);
    }
    let bases: Vec<String> = nodes.iter().map(|n| n.base.clone()).collect();
    let http = reqwest::Client::new();

    // Each node's view of the open hour is read first, so only another node's notice
    // can make it read the store again (refresh_ms is a minute).
    for base in &bases {
        assert_eq!(get(&http, &format!("{base}/2008/09/03/13")).await.0, 200);
    }
    let load = Load::start(&bases, 4, test);
    load.wait_answered_since(&[0, 1], Instant::now(), 200, 40)
        .await;
    let answers = load.finish().await;
    let errors: Vec<_> = answers.iter().filter(|a| a.status != 200).collect();
    assert!(
        errors.is_empty(),
        "every batch through PgBouncer is acknowledged: {} of {} not",
        errors.len(),
        answers.len()
    );
    let acked = acked_by_hour(&answers);
    // Found on both nodes while 13:00 is open: each heard the other's writes.
    assert_all_found(test, &bases, &acked).await;
    clock.advance(Duration::hours(1));
    tick_until_ok(&nodes).await;
    assert_all_found(test, &bases, &acked).await;
    let (_, a) = get(&http, &format!("{}/chain/2008/09/03/13", bases[0])).await;
    let (_, b) = get(&http, &format!("{}/chain/2008/09/03/13", bases[1])).await;
    assert_eq!(a, b, "one chain");
    drop(nodes);
    drop(bouncer);
    drop_schema(database, &schema).await;
}

/// What a failover to an asynchronous standby does: the last commits the old primary
/// acknowledged never reached it. Here the newest batch's row and its count are taken
/// out of PostgreSQL, as if never received; the node that acknowledged it still holds
/// its IDs, finds them missing from the hour's seal, and reports them.
pub async fn ids_the_store_lost_after_acknowledging_them_are_reported_at_the_seal(database: &str) {
    let schema = unique_schema();
    let clock = ManualClock::at(hour_of(2008, 9, 3, 13).unwrap(), Duration::minutes(10));
    let dir = tempfile::tempdir().unwrap();
    let n = node(
        node_settings(database, &schema, dir.path().to_owned()),
        &clock,
    )
    .await;
    let http = reqwest::Client::new();
    let kept: Vec<String> = (0..10).map(|i| format!("kept-{i}")).collect();
    let lost: Vec<String> = (0..7).map(|i| format!("lost-{i}")).collect();
    post_ids(&http, &n.base, &kept).await.unwrap();
    post_ids(&http, &n.base, &lost).await.unwrap();
    connect(database)
        .await
        .batch_execute(&format!(
            "DELETE FROM {schema}.batches WHERE seq = (SELECT max(seq) FROM {schema}.batches);
             UPDATE {schema}.batch_counts SET batches = batches - 1
              WHERE (hour, slot) = (SELECT hour, slot FROM {schema}.batch_counts
                                     WHERE batches > 0 ORDER BY slot LIMIT 1);"
        ))
        .await
        .unwrap();
    clock.advance(Duration::hours(1));
    n.service.tick().await.unwrap();
    assert_eq!(
        metric(&http, &n.base, "bloomcast_store_lost_ids_total").await,
        lost.len().to_string(),
        "the lost IDs are counted"
    );
    drop(n);
    drop_schema(database, &schema).await;
}
