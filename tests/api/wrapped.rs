//! Stores wrapped for fault tests: one that holds chosen calls at a gate until the test
//! lets them go (to drive interleavings deterministically), and one that panics once;
//! it also counts reads of sealed filters and links, and can play another node whose
//! seal or link lands just before this node's.

use async_trait::async_trait;
use bloomcast::bloom::Key;
use bloomcast::chain::{ListedKey, PublicKey, Succession};
use bloomcast::clock::ClockRecord;
use bloomcast::hour::Hour;
use bloomcast::store::{
    ChainLink, FormName, FormRecord, HourSignature, KeyPieces, Linking, Marks, Result, SealedHour,
    Sealing, Store, StoreError, UniverseAdded, UniverseInfo,
};
use chrono::{DateTime, Utc};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::{Notify, Semaphore};

/// A gate: once armed, the next call waits at it until released; the test can wait for
/// that call to arrive.
pub struct Gate {
    armed: AtomicBool,
    arrived: Notify,
    release: Semaphore,
}

impl Default for Gate {
    fn default() -> Self {
        Gate {
            armed: AtomicBool::new(false),
            arrived: Notify::new(),
            release: Semaphore::new(0),
        }
    }
}

impl Gate {
    pub fn arm(&self) {
        self.armed.store(true, Ordering::SeqCst);
    }

    /// Resolves once a call is waiting at the gate.
    pub async fn arrived(&self) {
        self.arrived.notified().await;
    }

    /// Lets the waiting call through.
    pub fn release(&self) {
        self.armed.store(false, Ordering::SeqCst);
        self.release.add_permits(1);
    }

    /// The first call after `arm` waits here until `release`; every other call passes.
    async fn pass(&self) {
        if self.armed.swap(false, Ordering::SeqCst) {
            self.arrived.notify_one();
            let _ = self.release.acquire().await.map(|p| p.forget());
        }
    }
}

/// Delegates to an inner store; `send_keys_after` (the open hour's refresh and load) waits at
/// `refresh_gate` and counts the keys it returns, `keys` (sealing, unions) waits at
/// `keys_gate`, and `sealed` panics once when `panic_on_sealed` is set. `sealed` and
/// `last_link` calls are counted; `seal_first` and `link_first` play another node that
/// wins the race: the next `seal` (`put_link`) stores theirs first. While `fail_appends`
/// is set, appends fail as a full disk would (the heartbeat still succeeds: it squeezes
/// in), and while `fail_seals` is set, so do seals; while `fail_form_reads` is set, reads
/// of form records fail (counted); heartbeats are counted.
pub struct Wrapped {
    pub inner: Arc<dyn Store>,
    pub refresh_gate: Gate,
    pub keys_gate: Gate,
    pub panic_on_sealed: AtomicBool,
    /// Keys `send_keys_after` has sent (what refreshes read back from the store).
    pub keys_read_back: AtomicUsize,
    /// Calls of `sealed` (reads of a sealed filter).
    pub sealed_reads: AtomicUsize,
    /// Calls of `last_link`.
    pub link_reads: AtomicUsize,
    /// Sealed into the inner store just before the next `seal` call goes through.
    pub seal_first: Mutex<Option<(SealedHour, Vec<Key>)>>,
    /// Stored in the inner store just before the next `put_link` call goes through.
    pub link_first: Mutex<Option<ChainLink>>,
    pub fail_appends: AtomicBool,
    pub fail_seals: AtomicBool,
    pub fail_form_reads: AtomicBool,
    /// Reads of form records failed while `fail_form_reads` was set.
    pub form_reads_failed: AtomicUsize,
    /// Calls of `ping` and `heartbeat` (heartbeats).
    pub pings: AtomicUsize,
}

impl Wrapped {
    pub fn new(inner: Arc<dyn Store>) -> Arc<Wrapped> {
        Arc::new(Wrapped {
            inner,
            refresh_gate: Gate::default(),
            keys_gate: Gate::default(),
            panic_on_sealed: AtomicBool::new(false),
            keys_read_back: AtomicUsize::new(0),
            sealed_reads: AtomicUsize::new(0),
            link_reads: AtomicUsize::new(0),
            seal_first: Mutex::new(None),
            link_first: Mutex::new(None),
            fail_appends: AtomicBool::new(false),
            fail_seals: AtomicBool::new(false),
            fail_form_reads: AtomicBool::new(false),
            form_reads_failed: AtomicUsize::new(0),
            pings: AtomicUsize::new(0),
        })
    }
}

impl Wrapped {
    fn append_fault(&self) -> Result<()> {
        if self.fail_appends.load(Ordering::SeqCst) {
            let full = std::io::Error::other("injected: no space left on device");
            return Err(StoreError::unavailable("appending a batch", full));
        }
        Ok(())
    }
}

#[async_trait]
impl Store for Wrapped {
    async fn genesis(&self) -> Result<Hour> {
        self.inner.genesis().await
    }
    async fn probes_from(&self) -> Result<Hour> {
        self.inner.probes_from().await
    }
    async fn marks(&self) -> Result<Marks> {
        self.inner.marks().await
    }
    async fn append(&self, hour: Hour, keys: &[Key]) -> Result<Hour> {
        self.append_fault()?;
        self.inner.append(hour, keys).await
    }
    async fn append_at(&self, hour: Hour, keys: &[Key]) -> Result<(Hour, Option<i64>)> {
        self.append_fault()?;
        self.inner.append_at(hour, keys).await
    }
    async fn close_through(&self, hour: Hour) -> Result<()> {
        self.inner.close_through(hour).await
    }
    async fn send_keys_after(&self, hour: Hour, cursor: i64, pieces: KeyPieces) -> Result<i64> {
        self.refresh_gate.pass().await;
        let page = self.inner.keys_after(hour, cursor).await?;
        self.keys_read_back
            .fetch_add(page.keys.len(), Ordering::SeqCst);
        if !page.keys.is_empty() {
            pieces
                .send(page.keys)
                .await
                .map_err(|_| StoreError::bug("receiver gone"))?;
        }
        Ok(page.cursor)
    }
    async fn keys(&self, hour: Hour) -> Result<Vec<Key>> {
        self.keys_gate.pass().await;
        self.inner.keys(hour).await
    }
    async fn seal(&self, sealed: &SealedHour, keys: &[Key]) -> Result<Sealing> {
        if self.fail_seals.load(Ordering::SeqCst) {
            let full = std::io::Error::other("injected: no space left on device");
            return Err(StoreError::unavailable("sealing an hour", full));
        }
        let first = self.seal_first.lock().unwrap().take();
        if let Some((theirs, their_keys)) = first {
            assert_eq!(
                self.inner.seal(&theirs, &their_keys).await?,
                Sealing::Stored
            );
        }
        self.inner.seal(sealed, keys).await
    }
    async fn sealed(&self, hour: Hour) -> Result<Option<SealedHour>> {
        self.sealed_reads.fetch_add(1, Ordering::SeqCst);
        if self.panic_on_sealed.swap(false, Ordering::SeqCst) {
            panic!("injected panic in Store::sealed");
        }
        self.inner.sealed(hour).await
    }
    async fn last_sealed(&self) -> Result<Option<Hour>> {
        self.inner.last_sealed().await
    }
    async fn sealed_counts(&self, from: Hour, to: Hour) -> Result<Vec<(Hour, u64)>> {
        self.inner.sealed_counts(from, to).await
    }
    async fn put_link(&self, link: &ChainLink) -> Result<Linking> {
        let first = self.link_first.lock().unwrap().take();
        if let Some(theirs) = first {
            assert_eq!(self.inner.put_link(&theirs).await?, Linking::Stored);
        }
        self.inner.put_link(link).await
    }
    async fn links(&self, from: Hour, limit: usize) -> Result<Vec<ChainLink>> {
        self.inner.links(from, limit).await
    }
    async fn last_link(&self, before: Hour) -> Result<Option<ChainLink>> {
        self.link_reads.fetch_add(1, Ordering::SeqCst);
        self.inner.last_link(before).await
    }
    async fn signing_keys(&self) -> Result<Vec<ListedKey>> {
        self.inner.signing_keys().await
    }
    async fn register_key(
        &self,
        key: &PublicKey,
        first: Hour,
        current: Option<&PublicKey>,
        succession: &Succession,
    ) -> Result<bool> {
        self.inner
            .register_key(key, first, current, succession)
            .await
    }
    async fn put_key_ack(&self, key: &PublicKey, ack: &[u8; 64]) -> Result<bool> {
        self.inner.put_key_ack(key, ack).await
    }
    async fn put_signature(&self, signature: &HourSignature, key: &PublicKey) -> Result<bool> {
        self.inner.put_signature(signature, key).await
    }
    async fn signatures(&self, from: Hour, to: Hour) -> Result<Vec<HourSignature>> {
        self.inner.signatures(from, to).await
    }
    async fn prune_before(&self, hour: Hour) -> Result<u64> {
        self.inner.prune_before(hour).await
    }
    async fn ping(&self) -> Result<()> {
        self.pings.fetch_add(1, Ordering::SeqCst);
        self.inner.ping().await
    }
    async fn universe(&self) -> Result<Option<UniverseInfo>> {
        self.inner.universe().await
    }
    async fn add_to_universe(&self, keys: &[Key], open: Hour, max: u64) -> Result<UniverseAdded> {
        self.inner.add_to_universe(keys, open, max).await
    }
    async fn universe_keys(&self, through: Hour) -> Result<Vec<Key>> {
        self.inner.universe_keys(through).await
    }
    async fn put_exact(&self, hour: Hour, body: &[u8]) -> Result<Vec<u8>> {
        self.inner.put_exact(hour, body).await
    }
    async fn exact(&self, hour: Hour) -> Result<Option<Vec<u8>>> {
        self.inner.exact(hour).await
    }
    async fn subscriptions(&self) -> Result<Vec<bloomcast::store::Subscription>> {
        self.inner.subscriptions().await
    }
    async fn put_subscription(&self, s: &bloomcast::store::Subscription) -> Result<()> {
        self.inner.put_subscription(s).await
    }
    async fn remove_subscription(&self, callback: &str, topic: &str) -> Result<bool> {
        self.inner.remove_subscription(callback, topic).await
    }
    async fn claim_delivery(&self, hour: Hour) -> Result<bool> {
        self.inner.claim_delivery(hour).await
    }
    async fn record_form(&self, record: &FormRecord) -> Result<[u8; 32]> {
        self.inner.record_form(record).await
    }
    async fn form_digest(&self, from: Hour, to: Hour, form: FormName) -> Result<Option<[u8; 32]>> {
        if self.fail_form_reads.load(Ordering::SeqCst) {
            self.form_reads_failed.fetch_add(1, Ordering::SeqCst);
            let down = std::io::Error::other("injected: connection refused");
            return Err(StoreError::unavailable("reading a form record", down));
        }
        self.inner.form_digest(from, to, form).await
    }
    async fn time(&self) -> Result<Option<DateTime<Utc>>> {
        self.inner.time().await
    }
    async fn clock_record(&self) -> Result<Option<ClockRecord>> {
        self.inner.clock_record().await
    }
    async fn heartbeat(&self, record: &ClockRecord) -> Result<()> {
        self.pings.fetch_add(1, Ordering::SeqCst);
        self.inner.heartbeat(record).await
    }
}
