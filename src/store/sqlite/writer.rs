//! The SQLite writer thread and its group commit: every write request waiting when the
//! thread wakes is folded into one transaction, so concurrent ingests share one commit
//! and one fsync. A failed group fails every request in it; none is acknowledged.

use super::sql_error;
use crate::bloom::Key;
use crate::bloom::SHA1_KM32;
use crate::chain::Hash;
use crate::chain::{PublicKey, Succession};
use crate::clock::ClockRecord;
use crate::hour::Hour;
use crate::store::{
    batch_checksum, ChainLink, FormRecord, HourSignature, Linking, Result, SealedHour, Sealing,
    StoreError, UniverseAdded,
};
use rusqlite::{params, Connection};
use std::sync::mpsc;
use tokio::sync::oneshot;

/// Most write commands folded into one transaction.
const MAX_GROUP: usize = 1024;

/// A write request for the writer thread, with where to send its answer.
pub(super) enum Command {
    Append {
        hour: Hour,
        blob: Vec<u8>,
        /// The batch's checksum for `hour`, computed by the caller.
        checksum: i64,
        /// The hour the keys went into, and the batch's `seq`.
        reply: oneshot::Sender<Result<(Hour, i64)>>,
    },
    Close {
        hour: Hour,
        reply: oneshot::Sender<Result<()>>,
    },
    Seal {
        sealed: SealedHour,
        keys: Vec<u8>,
        /// The filter row's and the keys' checksums.
        checksums: (i64, i64),
        /// Whether this seal's row is the one stored.
        reply: oneshot::Sender<Result<Sealing>>,
    },
    Link {
        link: ChainLink,
        /// Whether this link is the one stored.
        reply: oneshot::Sender<Result<Linking>>,
    },
    Prune {
        before: Hour,
        reply: oneshot::Sender<Result<u64>>,
    },
    /// Registers a signing key (see `Store::register_key`); whether it did.
    RegisterKey {
        key: PublicKey,
        first: Hour,
        current: Option<PublicKey>,
        /// Boxed: two signatures would make every command as large.
        succession: Box<Succession>,
        reply: oneshot::Sender<Result<bool>>,
    },
    /// Stores a key's acknowledgement of its predecessor unless it has one.
    PutAck {
        key: PublicKey,
        ack: [u8; 64],
        reply: oneshot::Sender<Result<bool>>,
    },
    /// Stores an hour's signature unless it has one; whether it did.
    Sign {
        signature: HourSignature,
        /// The key that made it: stored only if registered for the hour.
        key: PublicKey,
        reply: oneshot::Sender<Result<bool>>,
    },
    /// A heartbeat row that proves the thread and the disk take commits, with the
    /// service's clock record when given (its rows replaced whole, in the same commit).
    Heartbeat {
        record: Option<ClockRecord>,
        reply: oneshot::Sender<Result<()>>,
    },
    /// Adds keys to the universe (see `Store::add_to_universe`).
    AddToUniverse {
        keys: Vec<Key>,
        open: Hour,
        max: u64,
        reply: oneshot::Sender<Result<UniverseAdded>>,
    },
    /// Records a derived body's digest unless its range and form have one; the stored one.
    RecordForm {
        record: FormRecord,
        reply: oneshot::Sender<Result<Hash>>,
    },
    /// A change to the WebSub hub's rows; whether it changed anything.
    Hub {
        change: super::subscriptions::HubChange,
        reply: oneshot::Sender<Result<bool>>,
    },
    /// Stores an hour's exact body unless it has one; the stored body.
    PutExact {
        hour: Hour,
        body: Vec<u8>,
        reply: oneshot::Sender<Result<Vec<u8>>>,
    },
}

pub(super) fn writer_loop(
    mut conn: Connection,
    rx: mpsc::Receiver<Command>,
    mut closed_through: Option<Hour>,
) {
    while let Ok(first) = rx.recv() {
        let mut group = vec![first];
        while group.len() < MAX_GROUP {
            match rx.try_recv() {
                Ok(cmd) => group.push(cmd),
                Err(_) => break,
            }
        }
        let before = closed_through;
        // A panic fails the group (its transaction rolls back on unwind) but never the
        // thread: every later write would fail while health checks still passed.
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            apply_group(&mut conn, &group, &mut closed_through)
        }))
        .unwrap_or_else(|panic| {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            Err(StoreError::bug(format!(
                "the SQLite writer panicked: {what}"
            )))
        });
        if outcome.is_err() {
            closed_through = before;
        }
        reply_all(group, outcome);
    }
}

/// What each command of a committed group answers.
enum Answer {
    Appended(Hour, i64),
    Unit,
    Sealed(Sealing),
    Linked(Linking),
    Count(u64),
    Flag(bool),
    Universe(UniverseAdded),
    Body(Vec<u8>),
    Digest(Hash),
}

fn apply_group(
    conn: &mut Connection,
    group: &[Command],
    closed_through: &mut Option<Hour>,
) -> Result<Vec<Answer>> {
    // IMMEDIATE: the write lock is taken (waiting up to the busy timeout) before the
    // group reads anything. A deferred transaction that reads first and then writes gets
    // SQLITE_BUSY at once, with no wait, when another connection to the file (a second
    // store opened on it, as `rotate-key` opens one, or one still closing) wrote since
    // the read began.
    let tx = conn
        .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
        .map_err(sql_error)?;
    let mut answers = Vec::with_capacity(group.len());
    {
        let mut insert = tx
            .prepare_cached("INSERT INTO batches (hour, keys, checksum) VALUES (?1, ?2, ?3)")
            .map_err(sql_error)?;
        // Each hour's batch record, in the same transaction (see `HourRecord`): the
        // group's appends are counted per hour and written once, before any command
        // that reads or deletes the records and at the end.
        let mut count = tx
            .prepare_cached(
                "INSERT INTO batch_counts (hour, batches) VALUES (?1, ?2)
                 ON CONFLICT (hour) DO UPDATE SET batches = batches + excluded.batches",
            )
            .map_err(sql_error)?;
        let mut counted: Vec<(i64, i64)> = Vec::new();
        let mut write_counts = |counted: &mut Vec<(i64, i64)>| -> Result<()> {
            for (hour, n) in counted.drain(..) {
                count.execute([hour, n]).map_err(sql_error)?;
            }
            Ok(())
        };
        for cmd in group {
            if matches!(cmd, Command::Seal { .. } | Command::Prune { .. }) {
                write_counts(&mut counted)?;
            }
            let answer = match cmd {
                Command::Append {
                    hour,
                    blob,
                    checksum,
                    ..
                } => {
                    let (hour, checksum) = match *closed_through {
                        // The checksum covers the hour: recompute it for the hour it goes to.
                        Some(closed) if *hour <= closed => {
                            (closed.next(), batch_checksum(closed.next(), blob))
                        }
                        _ => (*hour, *checksum),
                    };
                    insert
                        .execute(params![hour.index(), blob, checksum])
                        .map_err(sql_error)?;
                    let seq = tx.last_insert_rowid();
                    match counted.iter_mut().find(|(h, _)| *h == hour.index()) {
                        Some((_, n)) => *n += 1,
                        None => counted.push((hour.index(), 1)),
                    }
                    Answer::Appended(hour, seq)
                }
                Command::Close { hour, .. } => {
                    if closed_through.is_none_or(|c| c < *hour) {
                        record_closed(&tx, closed_through.map(Hour::next), *hour)?;
                        *closed_through = Some(*hour);
                        tx.execute(
                            "INSERT INTO meta (name, value) VALUES ('closed_through', ?1)
                             ON CONFLICT (name) DO UPDATE SET value = excluded.value",
                            [hour.index()],
                        )
                        .map_err(sql_error)?;
                    }
                    Answer::Unit
                }
                Command::Seal {
                    sealed,
                    keys,
                    checksums,
                    ..
                } => {
                    // Only a conflict on the hour is ignored: no row inserted means the
                    // hour was sealed first (earlier, or earlier in this group).
                    let inserted = tx
                        .execute(
                            "INSERT INTO hours
                             (hour, count, m, k, hash, filter, keys, checksum, keys_checksum)
                         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)
                         ON CONFLICT (hour) DO NOTHING",
                            params![
                                sealed.hour.index(),
                                sealed.count as i64,
                                sealed.m,
                                sealed.k,
                                SHA1_KM32,
                                sealed.filter,
                                keys,
                                checksums.0,
                                checksums.1
                            ],
                        )
                        .map_err(sql_error)?;
                    if inserted == 1 {
                        super::universe::merge_sealed(&tx, sealed.hour, keys)?;
                    }
                    tx.execute("DELETE FROM batches WHERE hour = ?1", [sealed.hour.index()])
                        .map_err(sql_error)?;
                    tx.execute(
                        "DELETE FROM batch_counts WHERE hour = ?1",
                        [sealed.hour.index()],
                    )
                    .map_err(sql_error)?;
                    Answer::Sealed(Sealing::of_rows_inserted(inserted as u64))
                }
                Command::Link { link, .. } => Answer::Linked(super::chain::insert(&tx, link)?),
                Command::RecordForm { record, .. } => {
                    Answer::Digest(super::forms::record(&tx, record)?)
                }
                Command::RegisterKey {
                    key,
                    first,
                    current,
                    succession,
                    ..
                } => Answer::Flag(super::signing::register(
                    &tx,
                    key,
                    *first,
                    current.as_ref(),
                    succession,
                )?),
                Command::PutAck { key, ack, .. } => {
                    Answer::Flag(super::signing::put_ack(&tx, key, ack)?)
                }
                Command::Hub { change, .. } => {
                    Answer::Flag(super::subscriptions::apply(&tx, change)?)
                }
                Command::Sign { signature, key, .. } => {
                    Answer::Flag(super::signing::insert_signature(&tx, signature, key)?)
                }
                Command::Heartbeat { record, .. } => {
                    tx.execute(
                        "INSERT INTO meta (name, value) VALUES ('heartbeat', unixepoch())
                         ON CONFLICT (name) DO UPDATE SET value = excluded.value",
                        [],
                    )
                    .map_err(sql_error)?;
                    if let Some(record) = record {
                        let mut put = tx
                            .prepare_cached(
                                "INSERT INTO meta (name, value) VALUES (?1, ?2)
                                 ON CONFLICT (name) DO UPDATE SET value = excluded.value",
                            )
                            .map_err(sql_error)?;
                        for (name, value) in ClockRecord::ROWS.into_iter().zip(record.to_rows()) {
                            put.execute(params![name, value]).map_err(sql_error)?;
                        }
                    }
                    Answer::Unit
                }
                Command::AddToUniverse {
                    keys, open, max, ..
                } => Answer::Universe(super::universe::add(&tx, keys, *open, *max)?),
                Command::PutExact { hour, body, .. } => {
                    Answer::Body(super::universe::put_exact(&tx, *hour, body)?)
                }
                Command::Prune { before, .. } => {
                    let gone = tx
                        .execute("DELETE FROM hours WHERE hour < ?1", [before.index()])
                        .map_err(sql_error)?;
                    tx.execute("DELETE FROM batches WHERE hour < ?1", [before.index()])
                        .map_err(sql_error)?;
                    tx.execute("DELETE FROM batch_counts WHERE hour < ?1", [before.index()])
                        .map_err(sql_error)?;
                    tx.execute("DELETE FROM exact_hours WHERE hour < ?1", [before.index()])
                        .map_err(sql_error)?;
                    tx.execute(
                        "DELETE FROM hour_universe WHERE hour < ?1",
                        [before.index()],
                    )
                    .map_err(sql_error)?;
                    tx.execute("DELETE FROM forms WHERE from_hour < ?1", [before.index()])
                        .map_err(sql_error)?;
                    tx.execute(
                        "INSERT INTO meta (name, value) VALUES ('pruned_before', ?1)
                         ON CONFLICT (name) DO UPDATE SET value = max(value, excluded.value)",
                        [before.index()],
                    )
                    .map_err(sql_error)?;
                    Answer::Count(gone as u64)
                }
            };
            answers.push(answer);
        }
        write_counts(&mut counted)?;
    }
    tx.commit().map_err(sql_error)?;
    Ok(answers)
}

/// Gives each hour of `from..=to` that has no batch record a zero-batch one (`from`
/// `None`: from genesis), as it closes: every closed hour then has a record or, once
/// sealed, a sealed row (see [`crate::store::HourRecord`]).
fn record_closed(tx: &rusqlite::Transaction, from: Option<Hour>, to: Hour) -> Result<()> {
    let from = match from {
        Some(from) => from,
        None => match super::schema::meta(tx, "genesis")? {
            Some(genesis) => Hour::from_index(genesis),
            None => to,
        },
    };
    let mut insert = tx
        .prepare_cached(
            "INSERT INTO batch_counts (hour, batches) VALUES (?1, 0) ON CONFLICT (hour) DO NOTHING",
        )
        .map_err(sql_error)?;
    let mut hour = from;
    while hour <= to {
        insert.execute([hour.index()]).map_err(sql_error)?;
        hour = hour.next();
    }
    Ok(())
}

fn reply_all(group: Vec<Command>, outcome: Result<Vec<Answer>>) {
    match outcome {
        Ok(answers) => {
            for (cmd, answer) in group.into_iter().zip(answers) {
                // A dropped receiver means the request was abandoned; nothing to do.
                let _ = match (cmd, answer) {
                    (Command::Append { reply, .. }, Answer::Appended(h, seq)) => {
                        reply.send(Ok((h, seq))).map_err(drop)
                    }
                    (Command::Close { reply, .. }, Answer::Unit) => {
                        reply.send(Ok(())).map_err(drop)
                    }
                    (Command::Heartbeat { reply, .. }, Answer::Unit) => {
                        reply.send(Ok(())).map_err(drop)
                    }
                    (Command::Seal { reply, .. }, Answer::Sealed(s)) => {
                        reply.send(Ok(s)).map_err(drop)
                    }
                    (Command::Link { reply, .. }, Answer::Linked(l)) => {
                        reply.send(Ok(l)).map_err(drop)
                    }
                    (Command::Prune { reply, .. }, Answer::Count(n)) => {
                        reply.send(Ok(n)).map_err(drop)
                    }
                    (
                        Command::RegisterKey { reply, .. }
                        | Command::Sign { reply, .. }
                        | Command::PutAck { reply, .. }
                        | Command::Hub { reply, .. },
                        Answer::Flag(f),
                    ) => reply.send(Ok(f)).map_err(drop),
                    (Command::AddToUniverse { reply, .. }, Answer::Universe(u)) => {
                        reply.send(Ok(u)).map_err(drop)
                    }
                    (Command::PutExact { reply, .. }, Answer::Body(b)) => {
                        reply.send(Ok(b)).map_err(drop)
                    }
                    (Command::RecordForm { reply, .. }, Answer::Digest(d)) => {
                        reply.send(Ok(d)).map_err(drop)
                    }
                    _ => unreachable!("answers follow their commands"),
                };
            }
        }
        Err(e) => {
            tracing::error!(error = %e, cause = ?std::error::Error::source(&e), "SQLite write group failed");
            let err = || e.same_kind();
            for cmd in group {
                let _ = match cmd {
                    Command::Append { reply, .. } => reply.send(Err(err())).map_err(drop),
                    Command::Close { reply, .. } | Command::Heartbeat { reply, .. } => {
                        reply.send(Err(err())).map_err(drop)
                    }
                    Command::Seal { reply, .. } => reply.send(Err(err())).map_err(drop),
                    Command::Link { reply, .. } => reply.send(Err(err())).map_err(drop),
                    Command::Prune { reply, .. } => reply.send(Err(err())).map_err(drop),
                    Command::RegisterKey { reply, .. }
                    | Command::Sign { reply, .. }
                    | Command::PutAck { reply, .. }
                    | Command::Hub { reply, .. } => reply.send(Err(err())).map_err(drop),
                    Command::AddToUniverse { reply, .. } => reply.send(Err(err())).map_err(drop),
                    Command::PutExact { reply, .. } => reply.send(Err(err())).map_err(drop),
                    Command::RecordForm { reply, .. } => reply.send(Err(err())).map_err(drop),
                };
            }
        }
    }
}
