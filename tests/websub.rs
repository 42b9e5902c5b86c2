//! The WebSub hub (`POST /websub`) with a real subscriber: a small HTTP server in the
//! test that answers the hub's verification of intent and records its deliveries. The
//! hub runs in the test's process on a real socket, on a clock the test moves.

mod common;

use bloomcast::clock::ManualClock;
use bloomcast::config::{ListenAddr, Settings};
use bloomcast::hour::{hour_of, Hour};
use bloomcast::startup::Application;
use chrono::Duration;
use common::websub::{Seen, Subscriber};
use std::sync::Arc;

use common::TOKEN;

fn start_hour() -> Hour {
    hour_of(2008, 9, 3, 13).unwrap()
}

/// The hub: a server in this process on `dir`, allowing callbacks to loopback.
struct Hub {
    base: String,
    _stop: tokio::sync::oneshot::Sender<()>,
}

async fn hub(dir: &std::path::Path, clock: &ManualClock, loopback_allowed: bool) -> Hub {
    let mut settings = Settings {
        listen: ListenAddr::from("127.0.0.1:0".parse::<std::net::SocketAddr>().unwrap()),
        data_dir: dir.to_owned(),
        ingest_tokens: vec![TOKEN.into()],
        ..Settings::default()
    };
    if loopback_allowed {
        settings.websub_callback_networks = vec!["127.0.0.0/8".parse().unwrap()];
    }
    let app = Application::build_with_clock(settings, Arc::new(clock.clone()))
        .await
        .unwrap();
    let base = format!("http://{}", app.local_addr());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(app.run_until(async {
        let _ = stopped.await;
    }));
    Hub { base, _stop: stop }
}

/// A hub on a fresh data dir, its clock ten minutes into [`start_hour`], and the URL of
/// its feed (the topic subscribed to).
struct Fixture {
    dir: tempfile::TempDir,
    clock: ManualClock,
    http: reqwest::Client,
    node: Hub,
    topic: String,
}

async fn fixture(loopback_allowed: bool) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::at(start_hour(), Duration::minutes(10));
    let node = hub(dir.path(), &clock, loopback_allowed).await;
    let topic = format!("{}/hours.atom", node.base);
    Fixture {
        dir,
        clock,
        http: reqwest::Client::new(),
        node,
        topic,
    }
}

async fn subscribe(http: &reqwest::Client, hub: &str, form: &[(&str, &str)]) -> reqwest::Response {
    http.post(format!("{hub}/websub"))
        .form(form)
        .send()
        .await
        .unwrap()
}

async fn stats(http: &reqwest::Client, hub: &str) -> serde_json::Value {
    common::get_json(http, &format!("{hub}/stats")).await["websub"].clone()
}

/// Seals the open hour: the clock moves on an hour and a read of the closed hour seals it.
async fn seal(http: &reqwest::Client, hub: &str, clock: &ManualClock, hour: Hour) {
    clock.advance(Duration::hours(1));
    let reply = http
        .get(format!("{hub}{}", hour.path()))
        .send()
        .await
        .unwrap();
    assert_eq!(reply.status(), 200);
}

#[tokio::test]
async fn a_verified_subscriber_gets_each_sealed_hour_signed_and_keeps_its_subscription_across_a_restart(
) {
    let Fixture {
        dir,
        clock,
        http,
        node,
        topic,
    } = fixture(true).await;
    let mut subscriber = Subscriber::start(true).await;

    let reply = subscribe(
        &http,
        &node.base,
        &[
            ("hub.mode", "subscribe"),
            ("hub.callback", &subscriber.url),
            ("hub.topic", &topic),
            ("hub.secret", "s3cret-of-the-subscriber"),
            ("hub.lease_seconds", "86400"),
        ],
    )
    .await;
    assert_eq!(reply.status(), 202);
    let Seen::Verify(query) = subscriber.next().await else {
        panic!("a verification of intent first");
    };
    assert_eq!(query["hub.mode"], "subscribe");
    assert_eq!(query["hub.topic"], topic);
    assert_eq!(query["hub.lease_seconds"], "86400");
    assert!(query["hub.challenge"].len() >= 16);
    common::stats_reach(&http, &node.base, "/websub/subscriptions", 1.into()).await;

    common::post_ids(&http, &node.base, &["user:7".to_owned()])
        .await
        .unwrap();
    let mut hour = start_hour();
    for round in 0..2 {
        seal(&http, &node.base, &clock, hour).await;
        let Seen::Delivery(headers, body) = subscriber.next().await else {
            panic!("a delivery after the seal (round {round})");
        };
        assert_eq!(headers["content-type"], "application/atom+xml");
        assert_eq!(
            headers["x-hub-signature"].to_str().unwrap(),
            bloomcast::http::websub_signature("s3cret-of-the-subscriber", body.as_bytes()),
            "signed with the subscriber's secret"
        );
        let link = headers["link"].to_str().unwrap();
        assert!(
            link.contains("rel=\"hub\"") && link.contains(&format!("<{topic}>; rel=\"self\"")),
            "{link}"
        );
        let stamp = hour.start().format("%Y-%m-%dT%H").to_string();
        assert!(
            body.contains(&format!(":hour/{stamp}</id>")),
            "the sealed hour's entry: {body}"
        );
        assert!(body.contains("<link rel=\"hub\""), "the feed names its hub");
        hour = hour.next();
        if round == 0 {
            // The hub restarts: the subscription is in its store.
            drop(node);
            let restarted = hub(dir.path(), &clock, true).await;
            assert_eq!(stats(&http, &restarted.base).await["subscriptions"], 1);
            // Deliveries go on from the new address; the topic stays the one subscribed.
            return finish_after_restart(http, restarted, subscriber, clock, hour, topic).await;
        }
    }
}

async fn finish_after_restart(
    http: reqwest::Client,
    node: Hub,
    mut subscriber: Subscriber,
    clock: ManualClock,
    hour: Hour,
    topic: String,
) {
    seal(&http, &node.base, &clock, hour).await;
    let Seen::Delivery(headers, body) = subscriber.next().await else {
        panic!("a delivery after the restart");
    };
    assert_eq!(
        headers["x-hub-signature"].to_str().unwrap(),
        bloomcast::http::websub_signature("s3cret-of-the-subscriber", body.as_bytes())
    );
    let stamp = hour.start().format("%Y-%m-%dT%H").to_string();
    assert!(body.contains(&format!(":hour/{stamp}</id>")), "{body}");
    // The topic's own host names the feed's links, whichever address the hub has now.
    let host = topic
        .trim_start_matches("http://")
        .trim_end_matches("/hours.atom");
    assert!(
        body.contains(&format!("href=\"http://{host}/hours.atom\"")),
        "{body}"
    );

    // Unsubscribing is verified too, then nothing is held.
    let reply = subscribe(
        &http,
        &node.base,
        &[
            ("hub.mode", "unsubscribe"),
            ("hub.callback", &subscriber.url),
            ("hub.topic", &topic),
        ],
    )
    .await;
    assert_eq!(reply.status(), 202);
    let Seen::Verify(query) = subscriber.next().await else {
        panic!("a verification of the unsubscription");
    };
    assert_eq!(query["hub.mode"], "unsubscribe");
    common::stats_reach(&http, &node.base, "/websub/subscriptions", 0.into()).await;
}

#[tokio::test]
async fn a_subscriber_that_does_not_echo_the_challenge_is_not_subscribed() {
    let Fixture {
        dir: _dir,
        clock: _clock,
        http,
        node,
        topic,
    } = fixture(true).await;
    let mut subscriber = Subscriber::start(false).await;
    let reply = subscribe(
        &http,
        &node.base,
        &[
            ("hub.mode", "subscribe"),
            ("hub.callback", &subscriber.url),
            ("hub.topic", &topic),
        ],
    )
    .await;
    assert_eq!(reply.status(), 202);
    let Seen::Verify(query) = subscriber.next().await else {
        panic!("a verification");
    };
    assert_eq!(
        query["hub.lease_seconds"], "864000",
        "the most, when none is asked"
    );
    common::stats_reach(&http, &node.base, "/websub/refused", 1.into()).await;
    assert_eq!(stats(&http, &node.base).await["subscriptions"], 0);
}

#[tokio::test]
async fn requests_that_are_not_subscriptions_or_call_into_private_networks_are_refused() {
    let Fixture {
        dir: _dir,
        clock: _clock,
        http,
        node,
        topic,
    } = fixture(false).await;
    let refused = |form: Vec<(&'static str, String)>, status: u16, needle: &'static str| {
        let http = http.clone();
        let base = node.base.clone();
        async move {
            let form: Vec<(&str, &str)> = form.iter().map(|(k, v)| (*k, v.as_str())).collect();
            let reply = subscribe(&http, &base, &form).await;
            assert_eq!(reply.status(), status, "{form:?}");
            let body: serde_json::Value = reply.json().await.unwrap();
            assert!(
                body["message"].as_str().unwrap().contains(needle),
                "{form:?}: {body}"
            );
        }
    };
    let cb = "http://127.0.0.1:9/cb".to_owned();
    refused(
        vec![("hub.callback", cb.clone()), ("hub.topic", topic.clone())],
        400,
        "hub.mode",
    )
    .await;
    refused(
        vec![
            ("hub.mode", "publish".into()),
            ("hub.callback", cb.clone()),
            ("hub.topic", topic.clone()),
        ],
        400,
        "subscribe or unsubscribe",
    )
    .await;
    refused(
        vec![
            ("hub.mode", "subscribe".into()),
            ("hub.callback", cb.clone()),
            ("hub.topic", format!("{}/2008/09/03/13", node.base)),
        ],
        400,
        "/hours.atom",
    )
    .await;
    refused(
        vec![
            ("hub.mode", "subscribe".into()),
            ("hub.callback", "ftp://example.org/cb".into()),
            ("hub.topic", topic.clone()),
        ],
        400,
        "http or https",
    )
    .await;
    refused(
        vec![
            ("hub.mode", "subscribe".into()),
            ("hub.callback", cb.clone()),
            ("hub.topic", topic.clone()),
            ("hub.lease_seconds", "soon".into()),
        ],
        400,
        "hub.lease_seconds",
    )
    .await;
    // Loopback is the server's own network: refused unless websub_callback_networks lists it.
    refused(
        vec![
            ("hub.mode", "subscribe".into()),
            ("hub.callback", cb.clone()),
            ("hub.topic", topic.clone()),
        ],
        400,
        "websub_callback_networks",
    )
    .await;
    let not_a_form = http
        .post(format!("{}/websub", node.base))
        .json(&serde_json::json!({"hub.mode": "subscribe"}))
        .send()
        .await
        .unwrap();
    assert_eq!(not_a_form.status(), 415);
}

#[tokio::test]
async fn a_lease_near_its_end_is_renewed_by_a_subscriber_that_confirms_and_dropped_and_counted_otherwise(
) {
    let Fixture {
        dir,
        clock,
        http,
        node,
        topic,
    } = fixture(true).await;
    let mut subscriber = Subscriber::start(true).await;
    let form = [
        ("hub.mode", "subscribe"),
        ("hub.callback", subscriber.url.as_str()),
        ("hub.topic", topic.as_str()),
        ("hub.lease_seconds", "300"),
    ];
    assert_eq!(subscribe(&http, &node.base, &form).await.status(), 202);
    assert!(matches!(subscriber.next().await, Seen::Verify(_)));
    common::stats_reach(&http, &node.base, "/websub/subscriptions", 1.into()).await;
    // Five minutes from its end the lease is within the renewal window: the hub looks at
    // leases as it starts, and asks.
    drop(node);
    let node = hub(dir.path(), &clock, true).await;
    let Seen::Verify(renewal) = subscriber.next().await else {
        panic!("a renewal");
    };
    assert_eq!(renewal["hub.mode"], "subscribe");
    assert_eq!(renewal["hub.lease_seconds"], "864000");
    common::stats_reach(&http, &node.base, "/websub/renewed", 1.into()).await;

    // A subscriber that no longer confirms: asked near the end, then dropped at the end,
    // and the drop counted.
    subscriber
        .confirm
        .store(false, std::sync::atomic::Ordering::SeqCst);
    clock.advance(Duration::seconds(864_000 - 120));
    drop(node);
    let node = hub(dir.path(), &clock, true).await;
    assert!(
        matches!(subscriber.next().await, Seen::Verify(_)),
        "asked to renew"
    );
    clock.advance(Duration::seconds(300));
    drop(node);
    let node = hub(dir.path(), &clock, true).await;
    common::stats_reach(&http, &node.base, "/websub/expired", 1.into()).await;
    common::stats_reach(&http, &node.base, "/websub/subscriptions", 0.into()).await;
}
