//! Measures how many rows a second `may_contain` tests inside one PostgreSQL query.
//!
//! Starts an in-process cluster node on a fresh schema (its start runs migration 3,
//! which installs the SQL functions), fills a table with 200,000 IDs, and times
//! `SELECT count(*) FROM ids WHERE may_contain(filter, m, k, id)` against a filter of
//! 100,000 IDs at p = 0.01 (k = 7), best of three. Drops the schema at the end.
//!
//! ```sh no-run
//! BLOOMCAST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/test \
//!     cargo run --release --example sql_rows
//! ```

use bloomcast::bloom::Filter;
use bloomcast::config::Settings;
use bloomcast::startup::Application;
use std::time::Instant;

const ROWS: i64 = 200_000;

#[tokio::main]
async fn main() {
    let url = std::env::var("BLOOMCAST_DATABASE_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".into());
    let mut suffix = [0u8; 6];
    getrandom::fill(&mut suffix).unwrap();
    let schema = format!("bc_sqlrows_{}", bloomcast::bloom::to_hex(&suffix));
    let dir = tempfile::tempdir().unwrap();
    let settings = Settings {
        listen: "127.0.0.1:0".parse().unwrap(),
        data_dir: dir.path().to_owned(),
        database_url: url.clone().into(),
        database_schema: schema.clone(),
        ..Settings::default()
    };
    // Building the application runs the migrations; the node itself is not needed.
    drop(Application::build(settings).await.expect("node starts"));

    let (db, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .expect("PostgreSQL reachable");
    tokio::spawn(conn);
    db.batch_execute(&format!(
        "CREATE TABLE \"{schema}\".ids AS
             SELECT 'user:' || i AS id FROM generate_series(1, {ROWS}) AS i;
         ANALYZE \"{schema}\".ids;"
    ))
    .await
    .unwrap();
    let mut filter = Filter::with_capacity(100_000, 0.01).unwrap();
    for i in (1..=ROWS).step_by(2) {
        filter.insert(&format!("user:{i}"));
    }
    let (m, k) = (filter.m() as i32, filter.k() as i32);
    let bytes = filter.to_bytes();
    let query = format!(
        "SELECT count(*) FROM \"{schema}\".ids WHERE \"{schema}\".may_contain($1, $2, $3, id)"
    );
    let mut best = f64::INFINITY;
    let mut hits = 0i64;
    for _ in 0..3 {
        let started = Instant::now();
        hits = db
            .query_one(&query, &[&bytes, &m, &k])
            .await
            .unwrap()
            .get(0);
        best = best.min(started.elapsed().as_secs_f64());
    }
    db.batch_execute(&format!("DROP SCHEMA \"{schema}\" CASCADE"))
        .await
        .unwrap();
    println!(
        "may_contain: {ROWS} rows in {:.1} ms ({:.0} rows/s), {hits} may be present (m = {m}, k = {k})",
        best * 1e3,
        ROWS as f64 / best
    );
}
