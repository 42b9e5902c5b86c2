//! The sizing rule's first hour in PostgreSQL, as in the embedded store: the genesis of
//! a new schema; for a schema of a version before the rule (no `probes_from` row), the
//! hour after the newest closed then; and fixed from then on, whatever closes later.

use super::{drop_schema, unique_schema};
use crate::common::needs::Need;
use bloomcast::bloom::Key;
use bloomcast::hour::{hour_of, Hour};
use bloomcast::store::{PgLink, PgStore, Store};

fn at(hours_after: i64) -> Hour {
    Hour::from_index(hour_of(2008, 9, 3, 13).unwrap().index() + hours_after)
}

pub async fn the_rules_first_hour_in_postgres_is_fixed_once_after_every_hour_closed_before() {
    let url = Need::Postgres.found();
    let schema = unique_schema();
    let connect = |now: Hour| {
        let link = PgLink::new(&url, std::path::Path::new("")).unwrap();
        PgStore::connect(link, &schema, now)
    };
    let store = connect(at(0)).await.unwrap();
    assert_eq!(
        store.probes_from().await.unwrap(),
        at(0),
        "a new schema: genesis"
    );
    store.append(at(0), &[Key::of("a")]).await.unwrap();
    store.close_through(at(2)).await.unwrap();
    drop(store);
    // As a schema of the version before the rule: no row.
    let (client, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(conn);
    let sql = format!("DELETE FROM \"{schema}\".meta WHERE name = 'probes_from'");
    assert_eq!(client.execute(&sql, &[]).await.unwrap(), 1);
    let store = connect(at(5)).await.unwrap();
    assert_eq!(
        store.probes_from().await.unwrap(),
        at(3),
        "after 15:00, closed"
    );
    store.close_through(at(5)).await.unwrap();
    drop(store);
    let store = connect(at(6)).await.unwrap();
    assert_eq!(store.probes_from().await.unwrap(), at(3), "fixed once");
    drop(store);
    drop_schema(&url, &schema).await;
}
