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

/// `writers` tasks register a key each as the first signing key, from `hour`: exactly one
/// hears it registered, and the registry holds that key alone, current. A registration
/// naming another current key does nothing; one naming the right one retires it at the
/// hour before. A signature is stored only by the key registered for its hour, once.
pub async fn one_key_registration_wins_and_only_a_registered_key_signs<S: Store>(
    store: Arc<S>,
    hour: Hour,
    writers: u8,
) {
    use bloomcast::chain::Signer;
    use bloomcast::store::HourSignature;
    let key = |seed: u8| Signer::from_seed(&[seed; 32]).public_key();
    let tasks: Vec<_> = (1..=writers)
        .map(|seed| {
            let store = store.clone();
            tokio::spawn(async move {
                store
                    .register_key(&key(seed), hour, None, &Default::default())
                    .await
                    .unwrap()
            })
        })
        .collect();
    let mut won = Vec::new();
    for (seed, task) in (1..=writers).zip(tasks) {
        if task.await.unwrap() {
            won.push(seed);
        }
    }
    assert_eq!(won.len(), 1, "exactly one first key: {won:?}");
    let first = key(won[0]);
    let registry = store.signing_keys().await.unwrap();
    assert_eq!(registry.len(), 1);
    assert_eq!(
        (registry[0].public_key, registry[0].first_hour),
        (first, hour)
    );
    assert_eq!(registry[0].last_hour, None);

    let next = key(100);
    let later = Hour::from_index(hour.index() + 2);
    let wrong = key(101);
    assert!(!store
        .register_key(&next, later, Some(&wrong), &Default::default())
        .await
        .unwrap());
    assert_eq!(store.signing_keys().await.unwrap().len(), 1, "nothing done");
    assert!(store
        .register_key(&next, later, Some(&first), &Default::default())
        .await
        .unwrap());
    let registry = store.signing_keys().await.unwrap();
    assert_eq!(
        registry[0].last_hour,
        Some(Hour::from_index(hour.index() + 1))
    );
    assert_eq!(
        (registry[1].public_key, registry[1].last_hour),
        (next, None)
    );

    let signed = |seed: u8, byte: u8| HourSignature {
        hour,
        key_id: key(seed).id(),
        signature: [byte; 64],
    };
    let by_next = signed(100, 1);
    assert!(
        !store.put_signature(&by_next, &next).await.unwrap(),
        "not its hour"
    );
    let by_first = signed(won[0], 2);
    assert!(store.put_signature(&by_first, &first).await.unwrap());
    let again = signed(won[0], 3);
    assert!(
        !store.put_signature(&again, &first).await.unwrap(),
        "first write wins"
    );
    let stored = store.signatures(hour, later).await.unwrap();
    assert_eq!(stored, [by_first]);
}
