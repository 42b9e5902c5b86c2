//! Checks every store backend must pass alike, run against SQLite and PostgreSQL.

use bloomcast::chain::GENESIS;
use bloomcast::hour::Hour;
use bloomcast::store::{ChainLink, Linking, SealedHour, Sealing, Store};
use std::sync::Arc;

/// `writers` tasks seal `hour` at once, each with bytes of its own, and link what is
/// stored: exactly one seal and one link hear they are the stored one, and those are what
/// the store holds.
/// Spawned together, so most land in one write group: the answer must come from each
/// insert, not from whether the hour was sealed before the group.
pub async fn exactly_one_seal_and_link_is_stored<S: Store>(store: Arc<S>, hour: Hour, writers: u8) {
    let tasks: Vec<_> = (0..writers)
        .map(|i| {
            let store = store.clone();
            tokio::spawn(async move {
                let sealed = SealedHour {
                    hour,
                    count: 0,
                    m: 8,
                    k: 1,
                    filter: vec![i],
                };
                let sealing = store.seal(&sealed, &[]).await.unwrap();
                // As the service does: the link covers the seal stored, whoever's it is
                // (a link of other bytes makes the hour corrupt).
                let stored = store.sealed(hour).await.unwrap().unwrap();
                let link = ChainLink::new(hour, &stored.filter, GENESIS);
                let linking = store.put_link(&link).await.unwrap();
                (sealed, sealing, link, linking)
            })
        })
        .collect();
    let mut outcomes = Vec::new();
    for t in tasks {
        outcomes.push(t.await.unwrap());
    }
    let stored: Vec<_> = outcomes.iter().filter(|o| o.1 == Sealing::Stored).collect();
    assert_eq!(stored.len(), 1, "exactly one seal is the stored one");
    assert_eq!(
        store.sealed(hour).await.unwrap().as_ref(),
        Some(&stored[0].0)
    );
    let linked: Vec<_> = outcomes.iter().filter(|o| o.3 == Linking::Stored).collect();
    assert_eq!(linked.len(), 1, "exactly one link is the stored one");
    assert_eq!(
        store.last_link(hour.next()).await.unwrap(),
        Some(linked[0].2)
    );
}
