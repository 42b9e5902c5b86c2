//! Misconfiguration across a fleet: a node started with a signing key the cluster has not
//! recorded refuses to start, naming both key ids (one with no key at all, naming the
//! cluster's), until the key is made the cluster's
//! with `bloomcast rotate-key` (here its library half, `startup::record_key`); a node
//! whose hour-shaping settings differ from the cluster's follows the cluster's and says
//! so, and `bloomcast cluster-settings set` (`startup::set_cluster`) changes them for
//! every node from its next start.

use super::{drop_schema, node, node_settings, unique_schema};
use crate::common::needs::Need;
use crate::common::nodes::{keyed_node_settings, try_node, Node};
use crate::common::{post_ids, start};
use bloomcast::chain::{self, Signer};
use bloomcast::clock::{Clock, ManualClock};
use bloomcast::hour::{hour_of, Hour};
use bloomcast::service::register_key;
use bloomcast::startup::{record_key, set_cluster};
use bloomcast::store::{PgLink, PgStore, Store};
use chrono::Duration;

pub async fn a_node_whose_key_the_cluster_has_not_recorded_refuses_to_start_naming_both_key_ids() {
    let url = Need::Postgres.found();
    let schema = unique_schema();
    let dir = tempfile::tempdir().unwrap();
    let settings = |seed: u8| keyed_node_settings(&url, &schema, dir.path(), seed);
    let id = |seed: u8| Signer::from_seed(&[seed; 32]).public_key().id().to_string();
    let h: Hour = hour_of(2008, 9, 3, 13).unwrap();
    let clock = ManualClock::at(h, Duration::minutes(10));
    let http = reqwest::Client::new();
    let first = node(settings(1), &clock).await;

    let refused = try_node(settings(3), &clock).await.err().expect("refused");
    assert!(refused.contains(&id(3)), "names this node's key: {refused}");
    assert!(
        refused.contains(&id(1)),
        "names the cluster's key: {refused}"
    );
    assert!(
        refused.contains("rotate-key"),
        "says how to fix it: {refused}"
    );
    let keys = |base: String| {
        let http = http.clone();
        async move {
            let wk = crate::common::well_known(&http, &base).await;
            wk["keys"].as_array().unwrap().clone()
        }
    };
    // A node with no key file at all, once the cluster has a key: refused, naming the
    // cluster's key and the setting, rather than publishing unsigned hours beside it.
    let unsigned = node_settings(&url, &schema, dir.path().to_owned());
    let refused = try_node(unsigned, &clock).await.err().expect("refused");
    assert!(
        refused.contains(&id(1)),
        "names the cluster's key: {refused}"
    );
    assert!(
        refused.contains("signing_key_file") && refused.contains("BLOOMCAST_SIGNING_KEY_FILE"),
        "says how to fix it: {refused}"
    );
    let before = keys(first.base.clone()).await;
    assert_eq!(
        before.len(),
        1,
        "the refused key is not recorded: {before:?}"
    );

    // Made the cluster's key deliberately, the same file starts.
    let recorded = record_key(&settings(3), &clock).await.unwrap();
    assert_eq!(recorded.id().to_string(), id(3));
    assert_eq!(recorded.last_hour, None);
    let third = node(settings(3), &clock).await;
    let after = keys(third.base.clone()).await;
    assert_eq!(after.len(), 2, "{after:?}");
    assert!(
        after[0]["last_hour"].is_string(),
        "key 1 retired: {after:?}"
    );
    // A node on the retired key is recorded: it starts, and signs no new hour.
    let retired = node(settings(1), &clock).await;

    // `bloomcast rotate-key` in cluster mode: a new key in the file, recorded as the
    // cluster's current one, with which a node starts.
    let rotated = dir.path().join("rotated");
    let out = bloomcast(&[
        ("BLOOMCAST_DATABASE_URL", url.as_str()),
        ("BLOOMCAST_DATABASE_SCHEMA", schema.as_str()),
        ("BLOOMCAST_SIGNING_KEY_FILE", rotated.to_str().unwrap()),
    ])
    .arg("rotate-key")
    .output()
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("recorded in PostgreSQL as the current key from hour"),
        "{stdout}"
    );
    // The file held no key of the cluster's: nothing vouches for the new key, and it says so.
    assert!(
        stdout.contains("NOT vouched for by the key it retires"),
        "{stdout}"
    );
    let mut on_rotated = node_settings(&url, &schema, dir.path().to_owned());
    on_rotated.signing_key_file = rotated;
    let fourth = node(on_rotated, &clock).await;
    let listed = keys(fourth.base.clone()).await;
    assert_eq!(listed.len(), 3, "{listed:?}");
    assert!(
        listed[1]["last_hour"].is_string(),
        "key 3 retired: {listed:?}"
    );
    drop((first, third, retired, fourth));
    drop_schema(&url, &schema).await;
}

pub async fn a_keyed_node_is_refused_by_a_cluster_that_sealed_unsigned_hours_until_a_key_is_recorded(
) {
    let url = Need::Postgres.found();
    let schema = unique_schema();
    let dir = tempfile::tempdir().unwrap();
    let clock = clock();
    let unsigned = node(node_settings(&url, &schema, dir.path().to_owned()), &clock).await;
    let ids: Vec<String> = (0..10).map(|n| format!("id-{n}")).collect();
    sealed_on(&unsigned, &clock, &ids, 0).await;
    let keyed = keyed_node_settings(&url, &schema, dir.path(), 7);
    let id7 = Signer::from_seed(&[7; 32]).public_key().id().to_string();

    let refused = try_node(keyed.clone(), &clock)
        .await
        .err()
        .expect("refused");

    assert!(refused.contains("unsigned hours"), "{refused}");
    assert!(refused.contains("2008-09-03T13:00:00Z"), "{refused}");
    assert!(refused.contains(&id7), "names this node's key: {refused}");
    assert!(refused.contains("rotate-key"), "says how: {refused}");
    // Made the cluster's on purpose (what `rotate-key` records), the keyed node starts.
    record_key(&keyed, &clock).await.unwrap();
    let signed = node(keyed, &clock).await;
    drop((unsigned, signed));
    drop_schema(&url, &schema).await;
}

pub async fn a_node_that_loses_the_race_to_record_the_first_key_never_retires_it() {
    let url = Need::Postgres.found();
    let schema = unique_schema();
    let dir = tempfile::tempdir().unwrap();
    let mut settings = node_settings(&url, &schema, dir.path().to_owned());
    settings.signing_key_file = dir.path().join("key-6");
    std::fs::write(&settings.signing_key_file, chain::hex(&[6; 32])).unwrap();
    let (k5, k6) = (
        Signer::from_seed(&[5; 32]).public_key(),
        Signer::from_seed(&[6; 32]).public_key(),
    );
    let clock = clock();
    let link = PgLink::new(&url, std::path::Path::new("")).unwrap();
    let store = PgStore::connect(link, &schema, clock.current_hour())
        .await
        .unwrap();
    let genesis = store.genesis().await.unwrap();
    // Two nodes found the registry empty; key 5's recorded first, then key 6's tries.
    let (s5, s6) = (Signer::from_seed(&[5; 32]), Signer::from_seed(&[6; 32]));
    register_key(&store, genesis, &s5, None, false)
        .await
        .unwrap();
    let after = register_key(&store, genesis, &s6, None, false)
        .await
        .unwrap();
    assert_eq!(after.keys().len(), 1, "{after:?}");
    assert_eq!(after.keys()[0].public_key, k5);
    assert_eq!(after.keys()[0].last_hour, None, "key 5 never retired");
    let refused = try_node(settings, &clock).await.err().expect("refused");
    assert!(refused.contains(&k5.id().to_string()), "{refused}");
    assert!(refused.contains(&k6.id().to_string()), "{refused}");
    drop(store);
    drop_schema(&url, &schema).await;
}

pub async fn a_node_with_another_target_fpp_follows_the_clusters_says_so_and_a_change_reaches_every_node(
) {
    let url = Need::Postgres.found();
    let schema = unique_schema();
    let dir = tempfile::tempdir().unwrap();
    let ids: Vec<String> = (0..500).map(|n| format!("id-{n}")).collect();
    let first = node(
        node_settings(&url, &schema, dir.path().to_owned()),
        &clock(),
    )
    .await;
    let mut odd = node_settings(&url, &schema, dir.path().to_owned());
    (odd.target_fpp, odd.capacity) = (0.2, 100);
    let clock_b = clock();
    let follower = node(odd.clone(), &clock_b).await;
    assert_eq!(follower.service.tuning().target_fpp, 0.01);
    assert_eq!(follower.service.tuning().capacity, 3000);
    let followed = sealed_on(&follower, &clock_b, &ids, 0).await;
    assert_eq!(
        followed,
        sealed_alone(&url, 0.01, &ids).await,
        "sealed as the cluster's target_fpp seals"
    );
    assert_ne!(
        followed,
        sealed_alone(&url, 0.2, &ids).await,
        "the node's own target_fpp would have sealed other bytes"
    );

    // The real binary says so on stderr, naming the setting and both values (in a schema
    // of its own: its wall clock, years after these hours, would prune them here).
    let logged = unique_schema();
    let recorded = node_settings(&url, &logged, dir.path().to_owned());
    let shape = set_cluster(&recorded, &clock(), &[]).await.unwrap();
    assert_eq!(shape.before, shape.after, "no change asked, none made");
    let shown = bloomcast(&[
        ("BLOOMCAST_DATABASE_URL", url.as_str()),
        ("BLOOMCAST_DATABASE_SCHEMA", logged.as_str()),
        ("BLOOMCAST_TARGET_FPP", "0.2"),
    ])
    .arg("cluster-settings")
    .output()
    .unwrap();
    let stdout = String::from_utf8_lossy(&shown.stdout);
    // The database settings are all it needs: no ingest token.
    assert!(
        shown.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&shown.stderr)
    );
    assert!(
        stdout.contains("target_fpp 0.01\n"),
        "the cluster's, not its own: {stdout}"
    );
    assert!(
        !stdout.contains("pending from"),
        "nothing pending: {stdout}"
    );
    // A change for the next hour is shown as pending beside the values in effect, by
    // `set` and by a later `cluster-settings`.
    let db = [
        ("BLOOMCAST_DATABASE_URL", url.as_str()),
        ("BLOOMCAST_DATABASE_SCHEMA", logged.as_str()),
    ];
    let set = bloomcast(&db)
        .args(["cluster-settings", "set", "target_fpp=0.005"])
        .output()
        .unwrap();
    let after_set = String::from_utf8_lossy(&set.stdout).into_owned();
    assert!(set.status.success(), "{after_set}");
    let shown_later = bloomcast(&db).arg("cluster-settings").output().unwrap();
    let later = String::from_utf8_lossy(&shown_later.stdout).into_owned();
    for shown in [&after_set, &later] {
        assert!(shown.contains("target_fpp 0.01\n"), "in effect: {shown}");
        let pending = shown
            .lines()
            .find(|l| l.starts_with("pending from "))
            .unwrap_or_else(|| panic!("the pending change: {shown}"));
        assert!(
            pending.ends_with(": capacity 3000 target_fpp 0.005"),
            "{pending}"
        );
    }
    // Set back before it applies: nothing pending any more.
    let undone = bloomcast(&db)
        .args(["cluster-settings", "set", "target_fpp=0.01"])
        .output()
        .unwrap();
    let undone = String::from_utf8_lossy(&undone.stdout).into_owned();
    assert!(!undone.contains("pending from"), "{undone}");
    assert!(undone.contains("no change pending"), "{undone}");
    let env = [
        ("BLOOMCAST_DATABASE_URL", url.as_str()),
        ("BLOOMCAST_DATABASE_SCHEMA", logged.as_str()),
        ("BLOOMCAST_TARGET_FPP", "0.2"),
    ];
    let own = tempfile::tempdir().unwrap();
    let server = start(own.path(), &env);
    let warned: Vec<String> = server
        .log
        .lock()
        .unwrap()
        .iter()
        .filter(|l| l.contains("WARN") && l.contains("target_fpp"))
        .cloned()
        .collect();
    assert_eq!(warned.len(), 1, "{warned:?}");
    assert!(warned[0].contains("local=0.2"), "{}", warned[0]);
    assert!(warned[0].contains("cluster=0.01"), "{}", warned[0]);
    drop(server);
    drop_schema(&url, &logged).await;

    // Changed for the whole cluster from the next hour on (the open hour, 14, keeps
    // 0.01): the follower, started before the change, seals 15 with it too.
    let changed = set_cluster(&odd, &clock_b, &[("target_fpp".into(), "0.2".into())])
        .await
        .unwrap();
    assert_eq!(changed.before.target_fpp, 0.01);
    assert_eq!(changed.after.target_fpp, 0.2);
    assert_eq!(changed.after.capacity, 3000, "capacity left as it was");
    assert_eq!(changed.from, hour_of(2008, 9, 3, 15).unwrap());
    let at_14 = sealed_on(&follower, &clock_b, &ids, 1).await;
    let at_15 = sealed_on(&follower, &clock_b, &ids, 2).await;
    assert_eq!(
        at_14, followed,
        "the open hour keeps the values it opened with"
    );
    assert_eq!(
        at_15,
        sealed_alone(&url, 0.2, &ids).await,
        "the new value from 15 on"
    );
    let restarted_at_15 = ManualClock::at(changed.from, Duration::minutes(10));
    let default = node_settings(&url, &schema, dir.path().to_owned());
    let restarted = node(default, &restarted_at_15).await;
    assert_eq!(restarted.service.tuning().target_fpp, 0.2);
    assert_eq!(restarted.service.tuning().capacity, 3000);
    let refused = set_cluster(&odd, &clock(), &[("retention_hours".into(), "1".into())]).await;
    assert!(
        refused.is_err(),
        "only the hour-shaping settings are cluster-wide"
    );
    drop((first, follower, restarted));
    drop_schema(&url, &schema).await;
}

/// Seals one hour of `ids` on a node of its own schema with `target_fpp`; the hour's
/// bytes.
async fn sealed_alone(url: &str, target_fpp: f64, ids: &[String]) -> Vec<u8> {
    let schema = unique_schema();
    let dir = tempfile::tempdir().unwrap();
    let mut settings = node_settings(url, &schema, dir.path().to_owned());
    settings.target_fpp = target_fpp;
    let clock = clock();
    let bytes = sealed_on(&node(settings, &clock).await, &clock, ids, 0).await;
    drop_schema(url, &schema).await;
    bytes
}

fn clock() -> ManualClock {
    ManualClock::at(hour_of(2008, 9, 3, 13).unwrap(), Duration::minutes(10))
}

/// Posts `ids` to `node` (its clock 10 minutes into hour 13 + `n`), seals that hour an
/// hour on; its bytes.
async fn sealed_on(node: &Node, clock: &ManualClock, ids: &[String], n: i64) -> Vec<u8> {
    let http = reqwest::Client::new();
    post_ids(&http, &node.base, ids).await.unwrap();
    clock.advance(Duration::hours(1));
    node.service.tick().await.unwrap();
    let h = Hour::from_index(hour_of(2008, 9, 3, 13).unwrap().index() + n);
    let reply = http
        .get(format!("{}{}.bin", node.base, h.path()))
        .send()
        .await
        .unwrap();
    assert_eq!(reply.status(), 200);
    reply.bytes().await.unwrap().to_vec()
}

/// The real binary, run in a directory of its own with `env`.
fn bloomcast(env: &[(&str, &str)]) -> std::process::Command {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_bloomcast"));
    cmd.current_dir(std::env::temp_dir());
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd
}
