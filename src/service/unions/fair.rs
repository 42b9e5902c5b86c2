//! The build queue: the bounded slots that union, compact and exact builds run in,
//! handed out fairly across clients (docs/PROTOCOL.md section 12, "Fair builds").
//!
//! A compact or exact build that finds no free slot waits in its client's queue (a
//! client is the connection's peer address, [`BuildClient`]); a slot set free goes to
//! the waiting client, of those with none running, served longest ago (round robin), so that one client
//! asking for many builds holds at most one slot while others wait and cannot starve
//! them. A client's queue is bounded ([`WAITING_PER_CLIENT`], and all queues together
//! [`WAITING_AT_MOST`]): past it the build is refused at once (`TooManyWaiting`). Background work
//! (warming the grades of a sealed hour) is one more client, taking its turn. A v1
//! union build never waits: it takes a slot at once or is refused, as before.
//!
//! [`Schedule`] is the decision alone, without time or tasks (unit-tested as such);
//! [`BuildQueue`] wakes the waiters it picks.

use crate::sync::lock;
use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use tokio::sync::oneshot;

/// Builds one client may have waiting.
pub const WAITING_PER_CLIENT: usize = 8;
/// Builds that may wait in all.
pub const WAITING_AT_MOST: usize = 4096;

/// Who a build is for: the peer of the request that asked for it, or the server itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BuildClient {
    /// A request from this address.
    Peer(IpAddr),
    /// A request whose peer is not known (in-process callers).
    Unknown,
    /// The server's own background work (warming grades): one client among the others,
    /// so it neither starves them nor is starved.
    Background,
}

tokio::task_local! {
    /// The client the current task builds for (set by the HTTP layer per request, and
    /// by background work for itself); [`BuildClient::Unknown`] where unset.
    pub static BUILD_CLIENT: BuildClient;
}

/// The client of the current task.
pub fn current_client() -> BuildClient {
    BUILD_CLIENT
        .try_with(|client| *client)
        .unwrap_or(BuildClient::Unknown)
}

/// What a build arriving gets.
#[derive(Debug, PartialEq, Eq)]
pub enum Arrival {
    /// A slot, now.
    Run,
    /// A place in its client's queue, by ticket.
    Wait(u64),
    /// Nothing: its client's queue (or all queues) is full.
    Full,
}

/// Figures of the queue, for `/stats` (`build_queue`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct QueueStats {
    /// Slots in all (setting `union_builds`).
    pub slots: usize,
    /// Builds running now.
    pub running: usize,
    /// Builds waiting for a slot now.
    pub waiting: usize,
    /// Clients with a build running or waiting now.
    pub clients: usize,
    /// Builds that waited before they ran, since start.
    pub queued: u64,
    /// Builds refused because their client's queue was full, since start.
    pub refused: u64,
}

/// The queue's decisions: who runs, who waits, who is next.
#[derive(Debug)]
pub struct Schedule {
    slots: usize,
    running: usize,
    running_by: HashMap<BuildClient, usize>,
    waiting: HashMap<BuildClient, VecDeque<u64>>,
    /// When each client with builds running or waiting last started one (a serial):
    /// the turn goes to the waiting client served longest ago (never: first).
    served: HashMap<BuildClient, u64>,
    serial: u64,
    waiting_total: usize,
    next_ticket: u64,
    queued: u64,
    refused: u64,
}

impl Schedule {
    /// `slots` builds at once (at least one).
    pub fn new(slots: usize) -> Schedule {
        Schedule {
            slots: slots.max(1),
            running: 0,
            running_by: HashMap::new(),
            waiting: HashMap::new(),
            served: HashMap::new(),
            serial: 0,
            waiting_total: 0,
            next_ticket: 0,
            queued: 0,
            refused: 0,
        }
    }

    fn running_of(&self, client: BuildClient) -> usize {
        self.running_by.get(&client).copied().unwrap_or(0)
    }

    fn waiting_of(&self, client: BuildClient) -> usize {
        self.waiting.get(&client).map_or(0, VecDeque::len)
    }

    fn start(&mut self, client: BuildClient) {
        self.running += 1;
        *self.running_by.entry(client).or_insert(0) += 1;
        self.serial += 1;
        self.served.insert(client, self.serial);
    }

    /// Forgets when `client` was served once it has nothing running or waiting.
    fn forget_if_idle(&mut self, client: BuildClient) {
        if self.running_of(client) == 0 && self.waiting_of(client) == 0 {
            self.served.remove(&client);
        }
    }

    /// A build for `client` arrives: it runs now if a slot is free, its client runs
    /// nothing and nobody waits before it; else it waits, if its queue has room.
    pub fn arrive(&mut self, client: BuildClient) -> Arrival {
        // A free slot is never left while a client that could take it waits (every
        // change that frees one dispatches), so only its own queue is ahead of a client.
        let ahead = self.waiting_of(client) > 0;
        if self.running < self.slots && self.running_of(client) == 0 && !ahead {
            self.start(client);
            return Arrival::Run;
        }
        if self.waiting_of(client) >= WAITING_PER_CLIENT || self.waiting_total >= WAITING_AT_MOST {
            self.refused += 1;
            return Arrival::Full;
        }
        let ticket = self.next_ticket;
        self.next_ticket += 1;
        self.waiting.entry(client).or_default().push_back(ticket);
        self.waiting_total += 1;
        self.queued += 1;
        Arrival::Wait(ticket)
    }

    /// A build of `client` ended: its slot goes to the next waiting, if any. Returns the
    /// builds started, by client and ticket.
    pub fn finish(&mut self, client: BuildClient) -> Vec<(BuildClient, u64)> {
        self.running = self.running.saturating_sub(1);
        if let Some(n) = self.running_by.get_mut(&client) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                self.running_by.remove(&client);
            }
        }
        self.forget_if_idle(client);
        self.dispatch()
    }

    /// The waiting build `ticket` of `client` is no longer wanted. Returns whether it
    /// was still waiting (else it was started: its slot is the caller's to finish).
    pub fn cancel(&mut self, client: BuildClient, ticket: u64) -> bool {
        let Some(queue) = self.waiting.get_mut(&client) else {
            return false;
        };
        let Some(at) = queue.iter().position(|t| *t == ticket) else {
            return false;
        };
        queue.remove(at);
        self.waiting_total -= 1;
        if queue.is_empty() {
            self.waiting.remove(&client);
            self.forget_if_idle(client);
        }
        true
    }

    /// Starts waiting builds while slots are free: of the clients with none running,
    /// the one served longest ago (then the one waiting longest).
    fn dispatch(&mut self) -> Vec<(BuildClient, u64)> {
        let mut started = Vec::new();
        while self.running < self.slots {
            let turn = self
                .waiting
                .iter()
                .filter(|(c, _)| self.running_of(**c) == 0)
                .map(|(c, queue)| {
                    let served = self.served.get(c).copied().unwrap_or(0);
                    ((served, queue.front().copied().unwrap_or(u64::MAX)), *c)
                })
                .min_by_key(|(order, _)| *order)
                .map(|(_, c)| c);
            let Some(client) = turn else {
                break;
            };
            let queue = self.waiting.get_mut(&client).expect("a waiting client");
            let ticket = queue.pop_front().expect("a waiting build");
            if queue.is_empty() {
                self.waiting.remove(&client);
            }
            self.waiting_total -= 1;
            self.start(client);
            started.push((client, ticket));
        }
        started
    }

    /// Its figures now.
    pub fn stats(&self) -> QueueStats {
        let mut clients: Vec<&BuildClient> = self.running_by.keys().collect();
        clients.extend(
            self.waiting
                .keys()
                .filter(|c| !self.running_by.contains_key(c)),
        );
        QueueStats {
            slots: self.slots,
            running: self.running,
            waiting: self.waiting_total,
            clients: clients.len(),
            queued: self.queued,
            refused: self.refused,
        }
    }
}

/// The queue: [`Schedule`] and the waiters it wakes.
pub struct BuildQueue {
    inner: Mutex<Inner>,
}

struct Inner {
    schedule: Schedule,
    wakers: HashMap<u64, oneshot::Sender<()>>,
}

/// A build's slot: the next waiting build starts when it is dropped.
pub struct BuildSlot {
    queue: Arc<BuildQueue>,
    client: BuildClient,
}

impl Drop for BuildSlot {
    fn drop(&mut self) {
        self.queue.finish(self.client);
    }
}

/// The queue is full for this client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueueFull;

impl BuildQueue {
    /// `slots` builds at once.
    pub fn new(slots: usize) -> Arc<BuildQueue> {
        Arc::new(BuildQueue {
            inner: Mutex::new(Inner {
                schedule: Schedule::new(slots),
                wakers: HashMap::new(),
            }),
        })
    }

    /// A slot for a build of `client`, once its turn comes; `QueueFull` at once when its
    /// queue has no room. Dropping the future gives up its place (or its slot).
    pub async fn acquire(
        self: &Arc<Self>,
        client: BuildClient,
    ) -> std::result::Result<BuildSlot, QueueFull> {
        let (ticket, woken) = {
            let mut inner = lock(&self.inner);
            match inner.schedule.arrive(client) {
                Arrival::Run => return Ok(self.slot(client)),
                Arrival::Full => return Err(QueueFull),
                Arrival::Wait(ticket) => {
                    let (tx, rx) = oneshot::channel();
                    inner.wakers.insert(ticket, tx);
                    (ticket, rx)
                }
            }
        };
        let mut place = Place {
            queue: self,
            client,
            ticket,
            held: true,
        };
        // The sender is only dropped after it sent (the ticket started).
        let _ = woken.await;
        place.held = false;
        Ok(self.slot(client))
    }

    fn slot(self: &Arc<Self>, client: BuildClient) -> BuildSlot {
        BuildSlot {
            queue: self.clone(),
            client,
        }
    }

    fn finish(&self, client: BuildClient) {
        let mut inner = lock(&self.inner);
        let mut ended = vec![client];
        while let Some(client) = ended.pop() {
            for (started, ticket) in inner.schedule.finish(client) {
                let sent = inner
                    .wakers
                    .remove(&ticket)
                    .is_some_and(|tx| tx.send(()).is_ok());
                if !sent {
                    // Its waiter has gone: the slot is free again.
                    ended.push(started);
                }
            }
        }
    }

    /// Its figures now.
    pub fn stats(&self) -> QueueStats {
        lock(&self.inner).schedule.stats()
    }
}

/// A build's place in the queue while it waits: given up if the waiter goes.
struct Place<'a> {
    queue: &'a Arc<BuildQueue>,
    client: BuildClient,
    ticket: u64,
    held: bool,
}

impl Drop for Place<'_> {
    fn drop(&mut self) {
        if !self.held {
            return;
        }
        let was_waiting = {
            let mut inner = lock(&self.queue.inner);
            inner.wakers.remove(&self.ticket);
            inner.schedule.cancel(self.client, self.ticket)
        };
        if !was_waiting {
            // Started but never taken: free its slot.
            self.queue.finish(self.client);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn peer(n: u8) -> BuildClient {
        BuildClient::Peer(IpAddr::from([10, 0, 0, n]))
    }

    #[test]
    fn one_flooding_client_holds_one_slot_and_others_take_turns() {
        let mut s = Schedule::new(2);
        let (a, b, c) = (peer(1), peer(2), peer(3));
        assert_eq!(s.arrive(a), Arrival::Run);
        // A second build of a: a slot is free, but a runs one already.
        let Arrival::Wait(a2) = s.arrive(a) else {
            panic!("a waits")
        };
        let Arrival::Wait(a3) = s.arrive(a) else {
            panic!("a waits")
        };
        // b, arriving after a's waiting builds, runs at once in the free slot.
        assert_eq!(s.arrive(b), Arrival::Run);
        let Arrival::Wait(b2) = s.arrive(b) else {
            panic!("b waits")
        };
        let Arrival::Wait(c1) = s.arrive(c) else {
            panic!("c waits: no slot")
        };
        assert_eq!(
            s.stats(),
            QueueStats {
                slots: 2,
                running: 2,
                waiting: 4,
                clients: 3,
                queued: 4,
                refused: 0
            }
        );
        // a's build ends: b runs one, so the turn goes to c, then a.
        assert_eq!(s.finish(a), vec![(c, c1)]);
        assert_eq!(s.finish(b), vec![(a, a2)]);
        assert_eq!(s.finish(c), vec![(b, b2)]);
        assert_eq!(s.finish(a), vec![(a, a3)]);
        assert_eq!(s.finish(b), vec![]);
        assert_eq!(s.finish(a), vec![]);
        assert_eq!(s.stats().running, 0);
        assert_eq!(s.stats().clients, 0);
    }

    #[test]
    fn a_clients_queue_is_bounded_and_cancelled_places_free_it() {
        let mut s = Schedule::new(1);
        let (a, b) = (peer(1), peer(2));
        assert_eq!(s.arrive(a), Arrival::Run);
        let tickets: Vec<u64> = (0..WAITING_PER_CLIENT)
            .map(|_| match s.arrive(a) {
                Arrival::Wait(t) => t,
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(s.arrive(a), Arrival::Full);
        assert_eq!(s.stats().refused, 1);
        // Another client still gets its place, and its turn before a's next.
        let Arrival::Wait(b1) = s.arrive(b) else {
            panic!("b waits")
        };
        assert!(s.cancel(a, tickets[0]));
        assert!(!s.cancel(a, tickets[0]), "once");
        assert_eq!(s.finish(a), vec![(b, b1)]);
        assert_eq!(s.finish(b), vec![(a, tickets[1])]);
    }

    #[test]
    fn the_background_takes_its_turn_as_one_client() {
        let mut s = Schedule::new(1);
        let (a, b, bg) = (peer(1), peer(2), BuildClient::Background);
        assert_eq!(s.arrive(bg), Arrival::Run);
        let Arrival::Wait(g2) = s.arrive(bg) else {
            panic!("the background waits")
        };
        let Arrival::Wait(a1) = s.arrive(a) else {
            panic!("a waits")
        };
        let Arrival::Wait(a2) = s.arrive(a) else {
            panic!("a waits")
        };
        let Arrival::Wait(b1) = s.arrive(b) else {
            panic!("b waits")
        };
        // The clients never served go first, then the background before a's second.
        assert_eq!(s.finish(bg), vec![(a, a1)]);
        assert_eq!(s.finish(a), vec![(b, b1)]);
        assert_eq!(s.finish(b), vec![(bg, g2)]);
        assert_eq!(s.finish(bg), vec![(a, a2)]);
        assert_eq!(s.finish(a), vec![]);
    }

    #[tokio::test]
    async fn a_waiter_that_goes_away_gives_its_turn_to_the_next() {
        let queue = BuildQueue::new(1);
        let (a, b) = (peer(1), peer(2));
        let first = queue.acquire(a).await.unwrap();
        let gone = {
            let queue = queue.clone();
            tokio::spawn(async move { queue.acquire(b).await.map(drop) })
        };
        let next = {
            let queue = queue.clone();
            tokio::spawn(async move { queue.acquire(peer(3)).await.map(drop) })
        };
        while queue.stats().waiting < 2 {
            tokio::task::yield_now().await;
        }
        gone.abort();
        let _ = gone.await;
        assert_eq!(queue.stats().waiting, 1);
        drop(first);
        next.await.unwrap().unwrap();
        assert_eq!(queue.stats().running, 0);
        assert_eq!(queue.stats().waiting, 0);
    }
}
