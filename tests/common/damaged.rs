//! A server with one damaged hour between two good ones, for the clients' tests: hour
//! `start` sealed, hour `start + 1` closed with its batch record deleted (every batch
//! still there, so it can never be verified: `500 corrupt`, listed `corrupt` in the
//! index), and hour `start + 2` open.

use super::inproc::{self, InProcess};
use bloomcast::hour::Hour;
use chrono::Duration;

/// The server and the IDs ingested in each of the three hours.
pub async fn serve(token: &str, start: Hour) -> (InProcess, [Vec<String>; 3]) {
    let server = inproc::serve("127.0.0.1:0".parse().unwrap(), token, start, |_| {}).await;
    let http = reqwest::Client::new();
    let mut hours: [Vec<String>; 3] = Default::default();
    for (n, (prefix, ids)) in ["before", "damaged", "after"]
        .iter()
        .zip(&mut hours)
        .enumerate()
    {
        *ids = (0..50).map(|i| format!("{prefix}:{i}")).collect();
        let reply = http
            .post(format!("{}/updates", server.base))
            .bearer_auth(token)
            .json(&serde_json::json!({ "ids": ids }))
            .send()
            .await
            .unwrap();
        assert_eq!(reply.status(), 200);
        if n == 1 {
            let hour = Hour::from_index(start.index() + 1);
            server.tamper(&format!(
                "DELETE FROM batch_counts WHERE hour = {}",
                hour.index()
            ));
        }
        if n < 2 {
            server.clock.advance(Duration::hours(1));
        }
    }
    (server, hours)
}
