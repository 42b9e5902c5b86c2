//! `GET /stats` and `GET /dashboard`: the operator's figures and page.

use crate::helpers::*;

#[tokio::test]
async fn stats_lists_each_hour_with_size_fill_and_fpp() {
    let app = TestApp::spawn().await;
    app.ingest(&["a", "b", "c"]).await;
    app.next_hour().await;
    app.ingest(&["d"]).await;
    let (_, filter) = app.filter("/2008/09/03/13").await;
    let reply = app.get("/stats").await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.header("cache-control"), Some("no-store"));
    let stats = reply.json();
    let hours = stats["hours"].as_array().unwrap();
    assert_eq!(hours.len(), 2, "{stats}");
    assert_eq!(hours[0]["hour"], "2008-09-03T13:00:00Z");
    assert_eq!(hours[0]["count"], 3);
    assert_eq!(hours[0]["complete"], true);
    assert_eq!(hours[1]["count"], 1);
    assert_eq!(hours[1]["complete"], false);
    // The figures are the served filter's own.
    assert_eq!(hours[0]["m"], filter.m());
    assert_eq!(hours[0]["k"], filter.k());
    assert_eq!(hours[0]["ones"], filter.ones());
    assert!((hours[0]["fpp"].as_f64().unwrap() - filter.fpp()).abs() < 1e-12);
    assert!(hours[0]["fpp"].as_f64().unwrap() <= stats["target_fpp"].as_f64().unwrap());
    assert_eq!(stats["totals"]["ids_ingested"], 4);
    assert!(stats["totals"]["reads"].as_u64().unwrap() >= 1);
    assert!(stats["cache"]["budget_bytes"].as_u64().unwrap() > 0);
    assert_eq!(stats["rates"]["window_seconds"], 3600);
}

#[tokio::test]
async fn stats_takes_a_number_of_hours_and_rejects_garbage() {
    let app = TestApp::spawn().await;
    for _ in 0..3 {
        app.next_hour().await;
    }
    assert_eq!(
        app.get("/stats?hours=2").await.json()["hours"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    assert_eq!(
        app.get("/stats").await.json()["hours"]
            .as_array()
            .unwrap()
            .len(),
        4
    );
    app.get("/stats?hours=many")
        .await
        .assert_error(400, "bad_request");
}

#[tokio::test]
async fn the_dashboard_is_served_with_its_assets_and_listed_in_the_index() {
    let app = TestApp::spawn().await;
    let page = app.get("/dashboard").await;
    assert_eq!(page.status, 200);
    assert!(page
        .header("content-type")
        .unwrap()
        .starts_with("text/html"));
    let html = String::from_utf8(page.body).unwrap();
    for asset in ["/dashboard/app.js", "/dashboard/style.css"] {
        assert!(html.contains(asset), "{asset}");
        assert_eq!(app.get(asset).await.status, 200, "{asset}");
    }
    assert!(
        !html.contains("http://") && !html.contains("https://"),
        "nothing from elsewhere"
    );
    let client = app.get("/dashboard/bloomcast.js").await;
    assert_eq!(
        client.header("content-type"),
        Some("text/javascript; charset=utf-8")
    );
    let file = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/clients/js/bloomcast.js"
    ))
    .unwrap();
    assert_eq!(
        client.body, file,
        "the page's client is the package's module"
    );
    let urls = &app.get("/").await.json()["urls"];
    assert_eq!(urls["dashboard"], "/dashboard");
    assert_eq!(urls["stats"], "/stats");
    assert!(urls["compact"].as_str().unwrap().contains(".ribbon"));
}

#[tokio::test]
async fn stats_count_union_work_by_step() {
    let app = TestApp::spawn().await;
    app.ingest(&["a", "b"]).await;
    app.next_hour().await;
    app.ingest(&["c"]).await;
    let before = app.get("/stats").await.json()["unions"].clone();
    for step in ["builds", "advances", "renders"] {
        assert_eq!(before[step]["runs"], 0, "{before}");
        assert_eq!(before[step]["cpu_seconds"], 0.0, "{before}");
    }
    // Built once from the store; after an ingest, carried forward and rendered again, and
    // its other form rendered from the same filter.
    assert_eq!(app.get("/since/2008/09/03/13.bin").await.status, 200);
    app.ingest(&["d"]).await;
    assert_eq!(app.get("/since/2008/09/03/13.bin").await.status, 200);
    assert_eq!(app.get("/since/2008/09/03/13.json").await.status, 200);
    let work = app.get("/stats").await.json()["unions"].clone();
    assert_eq!(work["builds"]["runs"], 1, "{work}");
    assert_eq!(work["advances"]["runs"], 1, "{work}");
    assert_eq!(work["renders"]["runs"], 2, "{work}");
    assert!(
        work["builds"]["cpu_seconds"].as_f64().unwrap() > 0.0,
        "{work}"
    );
    // The same counters for Prometheus.
    let metrics = String::from_utf8(app.get("/metrics").await.body).unwrap();
    for (step, runs) in [("build", 1), ("advance", 1), ("render", 2)] {
        let wanted = format!("bloomcast_union_work_runs_total{{step=\"{step}\"}} {runs}");
        assert!(
            metrics.lines().any(|l| l == wanted),
            "{wanted} in\n{metrics}"
        );
        let seconds = format!("bloomcast_union_work_seconds_total{{step=\"{step}\"}} ");
        assert!(
            metrics.lines().any(|l| l.starts_with(&seconds)),
            "{seconds}"
        );
    }
}
