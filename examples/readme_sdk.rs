//! The README's Rust SDK example, "which of my IDs may have changed in the last 3 hours",
//! compiled as it is written there: the lines between the `README` markers are the
//! README's block, and `tests/readme.rs` checks that they are and runs them against a
//! server started within the hour (younger than the window).
//!
//! ```text
//! BLOOMCAST_SERVER=http://127.0.0.1:8080 cargo run --example readme_sdk -- user:1 user:2
//! ```

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let server = std::env::var("BLOOMCAST_SERVER")?;
    let followed_ids: Vec<String> = std::env::args().skip(1).collect();
    changed_in_the_last_hours(&server, &followed_ids).await
}

/// The README's block, on `server` and `followed_ids`.
///
/// # Errors
/// Any error of the SDK.
pub async fn changed_in_the_last_hours(
    server: &str,
    followed_ids: &[String],
) -> Result<(), Box<dyn std::error::Error>> {
    // README begin
    use bloomcast::client::Client;

    // `server`: e.g. "http://127.0.0.1:8080".
    let client = Client::new(server)?;
    // The last 3 hours, or from the server's first hour if it is younger (as `check` does).
    let window = client.index().await?.window(3)?;
    if window.clamped {
        eprintln!("note: the server has hours from {} on", window.since);
    }
    for change in client.changed_since(followed_ids, window.since).await? {
        // change.from ..= change.to: the hours; change.ids: fetch these feeds.
        let (from, to, ids) = (change.from, change.to, change.ids.join(" "));
        println!("{from} ..= {to}: {ids}");
    }
    // README end
    Ok(())
}
