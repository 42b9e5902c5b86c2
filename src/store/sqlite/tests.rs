//! The embedded store's behaviour: appends, closing, sealing, paging and pruning.
use super::*;
use crate::hour::hour_of;
use crate::store::{distinct, PIECE_KEYS};
use rusqlite::params;

fn keys(ids: &[&str]) -> Vec<Key> {
    ids.iter().map(|id| Key::of(id)).collect()
}

#[tokio::test]
async fn appends_survive_reopening() {
    let dir = tempfile::tempdir().unwrap();
    let h = hour_of(2008, 9, 3, 13).unwrap();
    {
        let store = SqliteStore::open(dir.path(), h).unwrap();
        assert_eq!(store.append(h, &keys(&["a", "b"])).await.unwrap(), h);
        assert_eq!(store.append(h, &keys(&["b", "c"])).await.unwrap(), h);
    }
    let store = SqliteStore::open(dir.path(), h.next()).unwrap();
    assert_eq!(
        store.genesis().await.unwrap(),
        h,
        "genesis is fixed at first open"
    );
    assert_eq!(
        store.keys(h).await.unwrap(),
        distinct(keys(&["a", "b", "c"]))
    );
}

#[tokio::test]
async fn appends_to_a_closed_hour_go_to_the_next_one() {
    let dir = tempfile::tempdir().unwrap();
    let h = hour_of(2008, 9, 3, 13).unwrap();
    let store = SqliteStore::open(dir.path(), h).unwrap();
    store.close_through(h).await.unwrap();
    assert_eq!(store.append(h, &keys(&["late"])).await.unwrap(), h.next());
    assert!(store.keys(h).await.unwrap().is_empty());
    assert_eq!(
        store.keys(h.next()).await.unwrap(),
        keys(&["late"]),
        "checksummed for the hour it went to"
    );
    drop(store);
    let store = SqliteStore::open(dir.path(), h).unwrap();
    assert_eq!(
        store.append(h, &keys(&["later"])).await.unwrap(),
        h.next(),
        "closing is durable"
    );
}

#[tokio::test]
async fn sealing_keeps_the_first_seal_and_compacts_batches() {
    let dir = tempfile::tempdir().unwrap();
    let h = hour_of(2008, 9, 3, 13).unwrap();
    let store = SqliteStore::open(dir.path(), h).unwrap();
    store.append(h, &keys(&["a"])).await.unwrap();
    let sealed = SealedHour {
        hour: h,
        count: 1,
        m: 8,
        k: 1,
        filter: vec![1],
    };
    assert_eq!(
        store.seal(&sealed, &keys(&["a"])).await.unwrap(),
        Sealing::Stored
    );
    let again = SealedHour {
        filter: vec![2],
        ..sealed.clone()
    };
    assert_eq!(
        store.seal(&again, &keys(&["a"])).await.unwrap(),
        Sealing::AlreadySealed,
        "the second seal of an hour is not the stored one"
    );
    assert_eq!(store.sealed(h).await.unwrap(), Some(sealed));
    assert_eq!(store.keys(h).await.unwrap(), keys(&["a"]));
    assert!(store.keys_after(h, 0).await.unwrap().keys.is_empty());
    assert_eq!(store.last_sealed().await.unwrap(), Some(h));
    assert_eq!(store.sealed_counts(h, h).await.unwrap(), vec![(h, 1)]);
}

#[tokio::test]
async fn keys_after_pages_by_cursor() {
    let dir = tempfile::tempdir().unwrap();
    let h = hour_of(2008, 9, 3, 13).unwrap();
    let store = SqliteStore::open(dir.path(), h).unwrap();
    store.append(h, &keys(&["a"])).await.unwrap();
    let first = store.keys_after(h, 0).await.unwrap();
    store.append(h, &keys(&["b"])).await.unwrap();
    let second = store.keys_after(h, first.cursor).await.unwrap();
    assert_eq!(first.keys, keys(&["a"]));
    assert_eq!(second.keys, keys(&["b"]));
}

#[tokio::test]
async fn an_open_hour_is_read_in_pieces_of_whole_batches() {
    let dir = tempfile::tempdir().unwrap();
    let h = hour_of(2008, 9, 3, 13).unwrap();
    let store = SqliteStore::open(dir.path(), h).unwrap();
    let batch = PIECE_KEYS / 2 + 1;
    let all: Vec<Key> = (0..3 * batch)
        .map(|i| Key::of(&format!("piece-{i}")))
        .collect();
    for part in all.chunks(batch) {
        store.append(h, part).await.unwrap();
    }
    let (pieces, mut received) = tokio::sync::mpsc::channel::<Vec<Key>>(1);
    let gather = async {
        let mut sizes = Vec::new();
        let mut keys = Vec::new();
        while let Some(piece) = received.recv().await {
            sizes.push(piece.len());
            keys.extend(piece);
        }
        (sizes, keys)
    };
    let (cursor, (sizes, keys)) = tokio::join!(store.send_keys_after(h, 0, pieces), gather);
    // A piece closes once it reaches PIECE_KEYS, at a batch's end: two batches, then one.
    assert_eq!(sizes, vec![2 * batch, batch]);
    assert_eq!(keys, all);
    assert_eq!(
        cursor.unwrap(),
        store.keys_after(h, 0).await.unwrap().cursor
    );
}

#[tokio::test]
async fn pruning_removes_old_hours() {
    let dir = tempfile::tempdir().unwrap();
    let h = hour_of(2008, 9, 3, 13).unwrap();
    let store = SqliteStore::open(dir.path(), h).unwrap();
    for hour in [h, h.next()] {
        let sealing = store
            .seal(
                &SealedHour {
                    hour,
                    count: 0,
                    m: 8,
                    k: 1,
                    filter: vec![0],
                },
                &[],
            )
            .await
            .unwrap();
        assert_eq!(sealing, Sealing::Stored);
    }
    assert_eq!(store.prune_before(h.next()).await.unwrap(), 1);
    assert_eq!(store.sealed(h).await.unwrap(), None);
    assert!(store.sealed(h.next()).await.unwrap().is_some());
}

#[tokio::test]
async fn concurrent_appends_share_commits_and_all_land() {
    let dir = tempfile::tempdir().unwrap();
    let h = hour_of(2008, 9, 3, 13).unwrap();
    let store = Arc::new(SqliteStore::open(dir.path(), h).unwrap());
    let tasks: Vec<_> = (0..64)
        .map(|i| {
            let store = store.clone();
            tokio::spawn(async move { store.append(h, &[Key::of(&i.to_string())]).await })
        })
        .collect();
    for t in tasks {
        t.await.unwrap().unwrap();
    }
    assert_eq!(store.keys(h).await.unwrap().len(), 64);
}

#[tokio::test]
async fn chain_links_keep_the_first_write_outlive_pruning_and_fail_when_rotted() {
    use crate::chain::GENESIS;
    let dir = tempfile::tempdir().unwrap();
    let h = hour_of(2008, 9, 3, 13).unwrap();
    let store = SqliteStore::open(dir.path(), h).unwrap();
    let first = ChainLink::new(h, b"one", GENESIS);
    let second = ChainLink::new(h.next(), b"two", first.header);
    assert_eq!(store.put_link(&first).await.unwrap(), Linking::Stored);
    assert_eq!(store.put_link(&second).await.unwrap(), Linking::Stored);
    assert_eq!(
        store
            .put_link(&ChainLink::new(h, b"other", GENESIS))
            .await
            .unwrap(),
        Linking::AlreadyLinked,
        "a second link of an hour is not the stored one"
    );
    assert_eq!(store.links(h, 10).await.unwrap(), vec![first, second]);
    assert_eq!(store.links(h.next(), 1).await.unwrap(), vec![second]);
    assert_eq!(store.last_link(h.next()).await.unwrap(), Some(first));
    assert_eq!(store.last_link(h).await.unwrap(), None);
    store.prune_before(h.next().next()).await.unwrap();
    assert_eq!(store.links(h, 10).await.unwrap().len(), 2, "links are kept");
    drop(store);

    let conn = Connection::open(dir.path().join(FILE_NAME)).unwrap();
    conn.execute(
        "UPDATE chain SET digest = ?1 WHERE hour = ?2",
        params![&[0u8; 32][..], h.index()],
    )
    .unwrap();
    drop(conn);
    let store = SqliteStore::open(dir.path(), h).unwrap();
    assert!(matches!(
        store.links(h, 10).await,
        Err(StoreError::Corrupt(_))
    ));
}
