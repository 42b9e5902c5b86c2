//! Cluster mode: several nodes on one real PostgreSQL.
//!
//! Needs PostgreSQL at `BLOOMCAST_TEST_DATABASE_URL` (default
//! `postgres://postgres@127.0.0.1:5432/test`), and for the fault tests PostgreSQL's server
//! programs. Without them the tests are reported ignored with the reason (see
//! `tests/common/needs.rs`), unless `CI` is set, where they fail. Each test works in its
//! own schema; the tests that stop PostgreSQL or cut its link start a private cluster of
//! their own (`common::pg`). The fault tests (`cluster/outages.rs`, `standby.rs`,
//! `link_cut.rs`, `mid_seal.rs`) print `FAULTS` lines, one per fault and one per hour
//! (acknowledged and found), for `benches/harness/cluster_faults.sh`.

#![cfg(unix)]

mod common;

use bloomcast::clock::ManualClock;
use bloomcast::hour::hour_of;
use chrono::Duration;
use common::needs::{self, Need};
use common::nodes::{drop_schema, node, node_settings, unique_schema};
use common::pg::PrivateCluster;
use common::{fetch, kill9, path_of, post_ids, start};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

fn main() {
    needs::run(vec![
        needs::trial(
            "three_nodes_lose_nothing_across_an_hour_boundary",
            &[Need::Postgres],
            || needs::block_on(three_nodes_lose_nothing_across_an_hour_boundary()),
        ),
        needs::trial(
            "a_node_killed_mid_ingest_loses_nothing_and_the_others_carry_on",
            &[Need::Postgres],
            || needs::block_on(a_node_killed_mid_ingest_loses_nothing_and_the_others_carry_on()),
        ),
        needs::trial(
            "two_nodes_whose_clocks_disagree_by_an_hour_lose_nothing",
            &[Need::Postgres],
            || needs::block_on(two_nodes_whose_clocks_disagree_by_an_hour_lose_nothing()),
        ),
        needs::trial(
            "a_node_whose_clock_jumps_a_month_ahead_prunes_nothing_in_postgres",
            &[Need::Postgres],
            || needs::block_on(a_node_whose_clock_jumps_a_month_ahead_prunes_nothing_in_postgres()),
        ),
        needs::trial(
            "a_node_whose_clock_is_25_hours_ahead_for_an_hour_prunes_nothing_in_postgres",
            &[Need::Postgres],
            || {
                needs::block_on(
                    a_node_whose_clock_is_25_hours_ahead_for_an_hour_prunes_nothing_in_postgres(),
                )
            },
        ),
        needs::trial(
            "a_node_restarted_with_its_clock_a_year_past_the_clusters_record_is_held_and_prunes_nothing_in_postgres",
            &[Need::Postgres],
            || {
                needs::block_on_one_thread(
                    a_node_restarted_with_its_clock_a_year_past_the_clusters_record_is_held_and_prunes_nothing_in_postgres(),
                )
            },
        ),
        needs::trial(
            "a_node_started_with_its_clock_a_year_ahead_neither_moves_nor_prunes_the_clusters_hours_and_says_so",
            &[Need::Postgres],
            || {
                needs::block_on(
                    a_node_started_with_its_clock_a_year_ahead_neither_moves_nor_prunes_the_clusters_hours_and_says_so(),
                )
            },
        ),
        needs::trial(
            "the_clock_record_reads_back_whole_from_postgres_and_its_clock_is_now",
            &[Need::Postgres],
            || needs::block_on(the_clock_record_reads_back_whole_from_postgres_and_its_clock_is_now()),
        ),
        needs::trial(
            "deleted_and_moved_rows_in_postgres_are_corrupt_never_fewer_ids",
            &[Need::Postgres],
            || {
                needs::block_on(
                    checksums::deleted_and_moved_rows_in_postgres_are_corrupt_never_fewer_ids(),
                )
            },
        ),
        needs::trial(
            "flipped_bits_in_postgres_rows_are_corrupt_never_data",
            &[Need::Postgres],
            || needs::block_on(checksums::flipped_bits_in_postgres_rows_are_corrupt_never_data()),
        ),
        needs::trial(
            "a_cursor_past_the_servers_transaction_counter_reads_the_hour_from_its_start",
            &[Need::Postgres],
            || {
                needs::block_on(
                    checksums::a_cursor_past_the_servers_transaction_counter_reads_the_hour_from_its_start(),
                )
            },
        ),
        needs::trial(
            "rows_written_before_migration_2_are_read_unverified_and_new_ones_verified",
            &[Need::Postgres],
            || {
                needs::block_on(
                    checksums::rows_written_before_migration_2_are_read_unverified_and_new_ones_verified(),
                )
            },
        ),
        needs::trial(
            "a_schema_that_is_not_bloomcasts_is_refused_untouched",
            &[Need::Postgres],
            || needs::block_on(checksums::a_schema_that_is_not_bloomcasts_is_refused_untouched()),
        ),
        needs::trial(
            "the_rules_first_hour_in_postgres_is_fixed_once_after_every_hour_closed_before",
            &[Need::Postgres],
            || {
                needs::block_on(
                    sizing::the_rules_first_hour_in_postgres_is_fixed_once_after_every_hour_closed_before(),
                )
            },
        ),
        needs::trial(
            "postgres_seal_and_put_link_say_whether_theirs_is_the_stored_row",
            &[Need::Postgres],
            || {
                needs::block_on(
                    checksums::postgres_seal_and_put_link_say_whether_theirs_is_the_stored_row(),
                )
            },
        ),
        needs::trial(
            "nodes_sealing_at_once_publish_one_identical_signed_chain",
            &[Need::Postgres],
            || needs::block_on(chain::nodes_sealing_at_once_publish_one_identical_signed_chain()),
        ),
        needs::trial(
            "a_node_on_a_new_key_signs_new_hours_and_the_old_key_signs_none_of_them",
            &[Need::Postgres],
            || {
                needs::block_on(
                    rotation::a_node_on_a_new_key_signs_new_hours_and_the_old_key_signs_none_of_them(),
                )
            },
        ),
        needs::trial(
            "a_node_whose_key_the_cluster_has_not_recorded_refuses_to_start_naming_both_key_ids",
            &[Need::Postgres],
            || {
                needs::block_on(
                    fleet::a_node_whose_key_the_cluster_has_not_recorded_refuses_to_start_naming_both_key_ids(),
                )
            },
        ),
        needs::trial(
            "a_keyed_node_is_refused_by_a_cluster_that_sealed_unsigned_hours_until_a_key_is_recorded",
            &[Need::Postgres],
            || {
                needs::block_on(
                    fleet::a_keyed_node_is_refused_by_a_cluster_that_sealed_unsigned_hours_until_a_key_is_recorded(),
                )
            },
        ),
        needs::trial(
            "a_node_that_loses_the_race_to_record_the_first_key_never_retires_it",
            &[Need::Postgres],
            || {
                needs::block_on(
                    fleet::a_node_that_loses_the_race_to_record_the_first_key_never_retires_it(),
                )
            },
        ),
        needs::trial(
            "a_node_with_another_target_fpp_follows_the_clusters_says_so_and_a_change_reaches_every_node",
            &[Need::Postgres],
            || {
                needs::block_on(
                    fleet::a_node_with_another_target_fpp_follows_the_clusters_says_so_and_a_change_reaches_every_node(),
                )
            },
        ),
        needs::trial(
            "a_cluster_without_a_key_file_publishes_unsigned",
            &[Need::Postgres],
            || needs::block_on(chain::a_cluster_without_a_key_file_publishes_unsigned()),
        ),
        needs::trial(
            "postgres_going_away_gives_503_and_the_node_recovers",
            &[Need::Postgres, Need::PostgresServer],
            || needs::block_on(postgres_going_away_gives_503_and_the_node_recovers()),
        ),
        needs::trial(
            "postgres_restarted_fast_under_load_loses_nothing_acknowledged",
            &[Need::PostgresServer],
            || {
                needs::block_on(
                    outages::postgres_restarted_fast_under_load_loses_nothing_acknowledged(),
                )
            },
        ),
        needs::trial(
            "postgres_restarted_immediate_under_load_loses_nothing_acknowledged",
            &[Need::PostgresServer],
            || {
                needs::block_on(
                    outages::postgres_restarted_immediate_under_load_loses_nothing_acknowledged(),
                )
            },
        ),
        needs::trial(
            "failover_to_a_synchronous_standby_under_load_loses_nothing_acknowledged",
            &[Need::PostgresServer],
            || {
                needs::block_on(
                    failover::failover_to_a_synchronous_standby_under_load_loses_nothing_acknowledged(),
                )
            },
        ),
        needs::trial(
            "sealed_hours_are_read_from_a_replica_that_has_replayed_them_else_from_the_primary",
            &[Need::PostgresServer],
            || {
                needs::block_on(
                    failover::sealed_hours_are_read_from_a_replica_that_has_replayed_them_else_from_the_primary(),
                )
            },
        ),
        needs::trial(
            "ids_the_store_lost_after_acknowledging_them_are_reported_at_the_seal",
            &[Need::Postgres],
            || {
                let database = Need::Postgres.found();
                needs::block_on(
                    failover::ids_the_store_lost_after_acknowledging_them_are_reported_at_the_seal(&database),
                )
            },
        ),
        needs::trial(
            "two_nodes_through_pgbouncer_in_transaction_mode_lose_nothing_and_hear_each_other",
            &[Need::Postgres, Need::PgBouncer],
            || {
                let (database, pgbouncer) = (Need::Postgres.found(), Need::PgBouncer.found());
                needs::block_on(
                    failover::two_nodes_through_pgbouncer_in_transaction_mode_lose_nothing_and_hear_each_other(
                        &database, &pgbouncer,
                    ),
                )
            },
        ),
        needs::trial(
            "a_node_started_before_postgres_waits_in_standby_and_serves_once_it_is_up",
            &[Need::PostgresServer],
            || {
                needs::block_on(
                    standby::a_node_started_before_postgres_waits_in_standby_and_serves_once_it_is_up(),
                )
            },
        ),
        needs::trial(
            "a_link_that_stops_answering_fails_ingest_in_time_and_its_connections_are_replaced",
            &[Need::PostgresServer],
            || {
                needs::block_on(
                    link_cut::a_link_that_stops_answering_fails_ingest_in_time_and_its_connections_are_replaced(),
                )
            },
        ),
        needs::trial(
            "every_node_serves_the_same_exact_bytes_over_the_clusters_universe",
            &[Need::Postgres],
            || needs::block_on(exact::every_node_serves_the_same_exact_bytes_over_the_clusters_universe()),
        ),
        needs::trial(
            "a_node_that_served_no_exact_body_lists_the_stored_ones_sizes",
            &[Need::Postgres],
            || needs::block_on(exact::a_node_that_served_no_exact_body_lists_the_stored_ones_sizes()),
        ),
        needs::trial(
            "damage_in_postgres_is_corrupt_on_every_node_that_meets_it",
            &[Need::Postgres],
            || needs::block_on(damage::damage_in_postgres_is_corrupt_on_every_node_that_meets_it()),
        ),
        needs::trial(
            "swapped_keys_in_postgres_build_no_form_and_the_scrub_finds_them_first",
            &[Need::Postgres],
            || {
                needs::block_on(
                    damage::swapped_keys_in_postgres_build_no_form_and_the_scrub_finds_them_first(),
                )
            },
        ),
        needs::trial(
            "a_subscriber_of_one_node_hears_of_ids_another_node_acknowledged",
            &[Need::Postgres],
            || needs::block_on(events::a_subscriber_of_one_node_hears_of_ids_another_node_acknowledged()),
        ),
        needs::trial(
            "a_subscription_is_the_fleets_and_each_seal_is_delivered_once",
            &[Need::Postgres],
            || needs::block_on(websub::a_subscription_is_the_fleets_and_each_seal_is_delivered_once()),
        ),
        needs::trial(
            "migration_10_records_what_a_schema_written_before_it_holds",
            &[Need::Postgres],
            || needs::block_on(damage::migration_10_records_what_a_schema_written_before_it_holds()),
        ),
        needs::trial(
            "a_node_killed_mid_seal_leaves_the_seal_to_another_with_the_same_bytes_and_link",
            &[Need::Postgres],
            || {
                needs::block_on(
                    mid_seal::a_node_killed_mid_seal_leaves_the_seal_to_another_with_the_same_bytes_and_link(),
                )
            },
        ),
    ]);
}

async fn three_nodes_lose_nothing_across_an_hour_boundary() {
    let url = Need::Postgres.found();
    let schema = unique_schema();
    let dir = tempfile::tempdir().unwrap();
    let h = hour_of(2008, 9, 3, 13).unwrap();
    let clock = ManualClock::at(h, Duration::minutes(59));
    let mut nodes = Vec::new();
    for _ in 0..3 {
        nodes.push(node(node_settings(&url, &schema, dir.path().to_owned()), &clock).await);
    }
    let http = reqwest::Client::new();
    let acked: Arc<Mutex<HashMap<String, Vec<String>>>> = Arc::default();
    let advanced = Arc::new(AtomicBool::new(false));
    let mut writers = Vec::new();
    for w in 0..6 {
        let (http, base, acked, advanced) = (
            http.clone(),
            nodes[w % 3].base.clone(),
            acked.clone(),
            advanced.clone(),
        );
        writers.push(tokio::spawn(async move {
            // Keep writing until this writer has had batches acknowledged after the
            // clock moved, so ingest straddles the boundary however fast the machine is.
            let mut after = 0;
            let mut batch = 0;
            while after < 8 {
                let late = advanced.load(Ordering::SeqCst);
                let ids: Vec<String> = (0..50).map(|i| format!("w{w}-b{batch}-{i}")).collect();
                let hour = post_ids(&http, &base, &ids).await.expect("ingest succeeds");
                acked.lock().unwrap().entry(hour).or_default().extend(ids);
                batch += 1;
                if late {
                    after += 1;
                }
            }
        }));
    }
    // Cross the boundary once every writer is under way, and let every node's
    // housekeeping race to seal while ingest continues.
    common::wait::eventually("every writer has acknowledged batches", || {
        acked.lock().unwrap().values().map(Vec::len).sum::<usize>() >= 6 * 5 * 50
    })
    .await;
    clock.advance(Duration::minutes(1));
    advanced.store(true, Ordering::SeqCst);
    let ticks: Vec<_> = nodes
        .iter()
        .map(|n| {
            let s = n.service.clone();
            tokio::spawn(async move { s.tick().await })
        })
        .collect();
    for t in ticks {
        t.await.unwrap().unwrap();
    }
    for w in writers {
        w.await.unwrap();
    }
    let acked = acked.lock().unwrap().clone();
    assert!(
        acked.contains_key("2008-09-03T13:00:00Z") && acked.contains_key("2008-09-03T14:00:00Z"),
        "ingest should straddle the boundary: {:?}",
        acked.keys().collect::<Vec<_>>()
    );
    let mut closed_tags = Vec::new();
    for node in &nodes {
        for (hour, ids) in &acked {
            let (meta, filter) = fetch(&http, &node.base, &path_of(hour)).await;
            let lost = ids.iter().filter(|id| !filter.contains(id)).count();
            assert_eq!(
                lost, 0,
                "{lost} acknowledged IDs missing from {hour} on {}",
                node.base
            );
            assert_eq!(meta.count, ids.len() as u64, "{hour} on {}", node.base);
        }
        let closed = http
            .get(format!("{}/2008/09/03/13", node.base))
            .send()
            .await
            .unwrap();
        closed_tags.push(closed.headers()["etag"].to_str().unwrap().to_owned());
        let body = closed.bytes().await.unwrap();
        assert!(bloomcast::wire::Document::parse(&body).unwrap().0.complete);
    }
    assert!(
        closed_tags.windows(2).all(|w| w[0] == w[1]),
        "closed hour differs across nodes: {closed_tags:?}"
    );
    drop(nodes);
    drop_schema(&url, &schema).await;
}

async fn a_node_killed_mid_ingest_loses_nothing_and_the_others_carry_on() {
    let url = Need::Postgres.found();
    let schema = unique_schema();
    let env = [
        ("BLOOMCAST_DATABASE_URL", url.as_str()),
        ("BLOOMCAST_DATABASE_SCHEMA", schema.as_str()),
        ("BLOOMCAST_REFRESH_MS", "0"),
    ];
    let (dir_a, dir_b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let mut a = start(dir_a.path(), &env);
    let b = start(dir_b.path(), &env);
    let http = reqwest::Client::new();
    let acked: Arc<Mutex<HashMap<String, Vec<String>>>> = Arc::default();
    // Node B's writer goes on for as many batches after A is killed.
    let killed = Arc::new(AtomicBool::new(false));
    let mut writers = Vec::new();
    for (w, base) in [a.base.clone(), a.base.clone(), b.base.clone()]
        .into_iter()
        .enumerate()
    {
        let (http, acked, killed) = (http.clone(), acked.clone(), killed.clone());
        writers.push(tokio::spawn(async move {
            let mut after_kill = 0;
            for batch in 0..400 {
                let ids: Vec<String> = (0..100).map(|i| format!("w{w}-b{batch}-{i}")).collect();
                match post_ids(&http, &base, &ids).await {
                    Ok(hour) => acked.lock().unwrap().entry(hour).or_default().extend(ids),
                    Err(_) if w < 2 => return, // node A was killed
                    Err(status) => panic!("the surviving node failed with {status}"),
                }
                if w == 2 && killed.load(Ordering::SeqCst) {
                    after_kill += 1;
                    if after_kill == 20 {
                        return;
                    }
                }
            }
        }));
    }
    // Mid ingest: once every writer has had batches acknowledged, and none is done.
    common::wait::eventually("every writer has acknowledged 10 batches", || {
        acked.lock().unwrap().values().map(Vec::len).sum::<usize>() >= 3 * 10 * 100
    })
    .await;
    kill9(&mut a);
    killed.store(true, Ordering::SeqCst);
    for w in writers {
        w.await.unwrap();
    }
    let acked = acked.lock().unwrap().clone();
    for (hour, ids) in &acked {
        let (_, filter) = fetch(&http, &b.base, &path_of(hour)).await;
        let lost = ids.iter().filter(|id| !filter.contains(id)).count();
        assert_eq!(
            lost,
            0,
            "{lost} of {} acknowledged IDs lost in {hour}",
            ids.len()
        );
    }
    drop(b);
    drop_schema(&url, &schema).await;
}

async fn postgres_going_away_gives_503_and_the_node_recovers() {
    let cluster = PrivateCluster::create()
        .unwrap_or_else(|why| panic!("initdb and pg_ctl start a private cluster: {why}"));
    let dir = tempfile::tempdir().unwrap();
    let h = hour_of(2008, 9, 3, 13).unwrap();
    let clock = ManualClock::at(h, Duration::minutes(10));
    let node = node(
        node_settings(&cluster.url(), "bloomcast", dir.path().to_owned()),
        &clock,
    )
    .await;
    let http = reqwest::Client::new();
    let first: Vec<String> = (0..100).map(|i| format!("closed-{i}")).collect();
    post_ids(&http, &node.base, &first)
        .await
        .expect("ingest with PostgreSQL up");
    clock.advance(Duration::hours(1));
    node.service.tick().await.unwrap();
    let (meta, _) = fetch(&http, &node.base, "/2008/09/03/13").await; // now held in memory
    assert!(meta.complete);

    // Load throughout: every answer is 200 or 503, and every 200 is kept.
    let acked: Arc<Mutex<Vec<String>>> = Arc::default();
    let statuses: Arc<Mutex<HashMap<u16, usize>>> = Arc::default();
    let stop_load = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let load = {
        let (http, base, acked, statuses, stop) = (
            http.clone(),
            node.base.clone(),
            acked.clone(),
            statuses.clone(),
            stop_load.clone(),
        );
        tokio::spawn(async move {
            for batch in 0.. {
                if stop.load(std::sync::atomic::Ordering::SeqCst) {
                    return;
                }
                let ids: Vec<String> = (0..20).map(|i| format!("load-{batch}-{i}")).collect();
                let status = match post_ids(&http, &base, &ids).await {
                    Ok(_) => {
                        acked.lock().unwrap().extend(ids);
                        200
                    }
                    Err(s) => s,
                };
                *statuses.lock().unwrap().entry(status).or_default() += 1;
                tokio::time::sleep(std::time::Duration::from_millis(5)).await;
            }
        })
    };
    let acked_count = || acked.lock().unwrap().len();
    common::wait::eventually("the load is acknowledged with PostgreSQL up", || {
        acked_count() >= 5 * 20
    })
    .await;
    cluster.stop().expect("stop the private cluster");

    load::assert_ingest_unavailable(&http, &node.base, "while-down").await;
    assert_eq!(
        http.get(format!("{}/healthz", node.base))
            .send()
            .await
            .unwrap()
            .status(),
        503
    );
    let (meta, filter) = fetch(&http, &node.base, "/2008/09/03/13").await;
    assert!(
        meta.complete && first.iter().all(|id| filter.contains(id)),
        "closed hour still served"
    );

    let refused = || statuses.lock().unwrap().get(&503).copied().unwrap_or(0);
    common::wait::eventually("the load is refused while PostgreSQL is down", || {
        refused() >= 5
    })
    .await;
    cluster.start().expect("restart the private cluster");
    let (client, base) = (&http, &node.base);
    common::wait::until("the node recovers", || async move {
        post_ids(client, base, &["after-recovery".to_owned()])
            .await
            .ok()
    })
    .await;
    let recovered = acked_count();
    common::wait::eventually("the load is acknowledged again", || {
        acked_count() >= recovered + 5 * 20
    })
    .await;
    stop_load.store(true, std::sync::atomic::Ordering::SeqCst);
    load.await.unwrap();

    let statuses = statuses.lock().unwrap().clone();
    assert!(
        statuses.keys().all(|s| *s == 200 || *s == 503),
        "only 200 or 503 under failure: {statuses:?}"
    );
    assert!(
        statuses.get(&503).copied().unwrap_or(0) > 0,
        "the outage was seen: {statuses:?}"
    );
    let (_, filter) = fetch(&http, &node.base, "/2008/09/03/14").await;
    let acked = acked.lock().unwrap().clone();
    let lost = acked.iter().filter(|id| !filter.contains(id)).count();
    assert_eq!(
        lost,
        0,
        "{lost} of {} acknowledged IDs lost across the outage",
        acked.len()
    );
    assert!(filter.contains("after-recovery"));
}

async fn two_nodes_whose_clocks_disagree_by_an_hour_lose_nothing() {
    let url = Need::Postgres.found();
    let schema = unique_schema();
    let dir = tempfile::tempdir().unwrap();
    let h = hour_of(2008, 9, 3, 13).unwrap();
    let ahead_clock = ManualClock::at(h.next(), Duration::minutes(10));
    let behind_clock = ManualClock::at(h, Duration::minutes(10));
    let ahead = node(
        node_settings(&url, &schema, dir.path().to_owned()),
        &ahead_clock,
    )
    .await;
    let behind = node(
        node_settings(&url, &schema, dir.path().to_owned()),
        &behind_clock,
    )
    .await;
    let http = reqwest::Client::new();
    let mut acked: HashMap<String, Vec<String>> = HashMap::new();
    for round in 0..6 {
        for (name, base) in [("ahead", &ahead.base), ("behind", &behind.base)] {
            let ids: Vec<String> = (0..50).map(|i| format!("{name}-{round}-{i}")).collect();
            let hour = post_ids(&http, base, &ids).await.unwrap();
            acked.entry(hour).or_default().extend(ids);
        }
        if round == 2 {
            // The node ahead closes the hour the other one still calls current.
            ahead.service.tick().await.unwrap();
        }
    }

    for base in [&ahead.base, &behind.base] {
        for (hour, ids) in &acked {
            let (_, filter) = fetch(&http, base, &path_of(hour)).await;
            let lost = ids.iter().filter(|id| !filter.contains(id)).count();
            assert_eq!(lost, 0, "{base}: {lost} of {} lost in {hour}", ids.len());
        }
    }
    // Once the node behind learns the marks it serves the newest hour as current too.
    behind.service.tick().await.unwrap();
    assert_eq!(behind.service.current_hour(), h.next());
    drop_schema(&url, &schema).await;
}

#[path = "cluster/clock_jumps.rs"]
mod clock_jumps;
use clock_jumps::{
    a_node_restarted_with_its_clock_a_year_past_the_clusters_record_is_held_and_prunes_nothing_in_postgres,
    a_node_started_with_its_clock_a_year_ahead_neither_moves_nor_prunes_the_clusters_hours_and_says_so,
    a_node_whose_clock_is_25_hours_ahead_for_an_hour_prunes_nothing_in_postgres,
    a_node_whose_clock_jumps_a_month_ahead_prunes_nothing_in_postgres,
    the_clock_record_reads_back_whole_from_postgres_and_its_clock_is_now,
};

#[path = "cluster/checksums.rs"]
mod checksums;

#[path = "cluster/sizing.rs"]
mod sizing;

#[path = "cluster/chain.rs"]
mod chain;

#[path = "cluster/rotation.rs"]
mod rotation;

#[path = "cluster/fleet.rs"]
mod fleet;

#[path = "cluster/load.rs"]
mod load;

#[path = "cluster/outages.rs"]
mod outages;

#[path = "cluster/failover.rs"]
mod failover;

#[path = "cluster/standby.rs"]
mod standby;

#[path = "cluster/proxy.rs"]
mod proxy;

#[path = "cluster/link_cut.rs"]
mod link_cut;

#[path = "cluster/mid_seal.rs"]
mod mid_seal;

#[path = "cluster/exact.rs"]
mod exact;

#[path = "cluster/damage.rs"]
mod damage;

#[path = "cluster/events.rs"]
mod events;

#[path = "cluster/websub.rs"]
mod websub;
