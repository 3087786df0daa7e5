//! The supervision tree. Long-lived actors run under an actix `Supervisor` (restart on
//! stop), on a small shared pool of arbiters when their handlers never block, or on an
//! arbiter of their own when they do blocking store work (followers, the tracker hub); a
//! watchdog respawns any of them whose mailbox closed because a panic unwound it (actix 0.13
//! does not supervise panics). An actor retired on purpose leaves the watchdog. Hubs that own many
//! short-lived children spawn them on the same pool without a watchdog entry each: the hub
//! is the one supervised. The one retry/backoff policy ([`retry`]), the one
//! lock-poisoning rule ([`lock`]), the runtime node clients fetch on ([`node_io`]) and the
//! ingestion stages' CPU counters ([`stage_cpu`]) live here too.

pub(crate) mod lock;
pub(crate) mod node_io;
mod pool;
pub mod retry;
mod signal;
pub(crate) mod stage_cpu;

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use actix::prelude::*;

pub use lock::Recover;
pub use pool::ArbiterPool;
pub use retry::{Attempts, Backoff};
pub use signal::wait_for_signal;

struct Entry {
    name: String,
    alive: Box<dyn Fn() -> bool>,
    respawn: Box<dyn Fn()>,
    retired: Arc<AtomicBool>,
}

/// A supervised actor whose current address survives respawns.
pub struct Supervised<A: Actor<Context = Context<A>>> {
    addr: Arc<Mutex<Addr<A>>>,
    retired: Arc<AtomicBool>,
}

impl<A: Actor<Context = Context<A>>> Clone for Supervised<A> {
    fn clone(&self) -> Self {
        Supervised {
            addr: self.addr.clone(),
            retired: self.retired.clone(),
        }
    }
}

impl<A: Actor<Context = Context<A>>> Supervised<A> {
    pub fn addr(&self) -> Addr<A> {
        self.addr.lock().recover().clone()
    }

    /// The actor is stopping on purpose (its owner has told it to): the watchdog forgets it
    /// and will not respawn it.
    pub fn retire(&self) {
        self.retired.store(true, Ordering::SeqCst);
    }
}

/// Owns the watchdog and the arbiter pool. Create it inside a running actix `System`.
pub struct Supervision {
    // Lives on the System arbiter only: the watchdog task and `start` run there.
    entries: Rc<RefCell<BTreeMap<u64, Entry>>>,
    next_id: AtomicU64,
    pool: Arc<ArbiterPool>,
    /// One-arbiter pools of the actors that run on a thread of their own.
    own_threads: RefCell<Vec<Arc<ArbiterPool>>>,
    stopping: Arc<AtomicBool>,
}

impl Supervision {
    /// A watchdog checking every `check_every`, over a pool sized to the machine.
    pub fn new(check_every: Duration) -> Self {
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        Self::with_arbiters(check_every, cores.clamp(2, 8))
    }

    pub fn with_arbiters(check_every: Duration, arbiters: usize) -> Self {
        let supervision = Supervision {
            entries: Rc::new(RefCell::new(BTreeMap::new())),
            next_id: AtomicU64::new(0),
            pool: Arc::new(ArbiterPool::new(arbiters)),
            own_threads: RefCell::new(Vec::new()),
            stopping: Arc::new(AtomicBool::new(false)),
        };
        let entries = supervision.entries.clone();
        let stopping = supervision.stopping.clone();
        actix::spawn(async move {
            let mut tick = tokio::time::interval(check_every);
            loop {
                tick.tick().await;
                if stopping.load(Ordering::SeqCst) {
                    return;
                }
                let mut entries = entries.borrow_mut();
                entries.retain(|_, entry| {
                    if entry.retired.load(Ordering::SeqCst) {
                        tracing::info!(actor = %entry.name, "actor retired");
                        return false;
                    }
                    if !(entry.alive)() {
                        tracing::error!(actor = %entry.name, "actor died (panic); respawning it");
                        metrics::counter!("weaver_actor_restarts_total", "actor" => entry.name.clone(), "reason" => "died").increment(1);
                        (entry.respawn)();
                    }
                    true
                });
            }
        });
        supervision
    }

    /// The arbiters actors run on; hubs spawn their children here.
    pub fn pool(&self) -> &Arc<ArbiterPool> {
        &self.pool
    }

    /// Actors the watchdog currently watches.
    pub fn watched(&self) -> usize {
        self.entries.borrow().len()
    }

    /// Starts `factory()` on a pool arbiter under a `Supervisor`, watched by the watchdog.
    /// For actors whose handlers never block: the pool's threads are shared.
    pub fn start<A, F>(&self, name: &str, factory: F) -> Supervised<A>
    where
        A: Actor<Context = Context<A>> + actix::Supervised + Send,
        F: Fn() -> A + Send + Sync + Clone + 'static,
    {
        self.start_in(self.pool.clone(), name, factory)
    }

    /// Starts `factory()` under a `Supervisor` on an arbiter (thread) of its own, watched by
    /// the watchdog (a respawn after a panic reuses the thread, or replaces it if it ended).
    /// For actors that do blocking work in their handlers — a follower's index and commit,
    /// the tracker hub's resume — so that it stalls nothing else.
    pub fn start_on_own_thread<A, F>(&self, name: &str, factory: F) -> Supervised<A>
    where
        A: Actor<Context = Context<A>> + actix::Supervised + Send,
        F: Fn() -> A + Send + Sync + Clone + 'static,
    {
        let own = Arc::new(ArbiterPool::new(1));
        self.own_threads.borrow_mut().push(own.clone());
        self.start_in(own, name, factory)
    }

    fn start_in<A, F>(&self, pool: Arc<ArbiterPool>, name: &str, factory: F) -> Supervised<A>
    where
        A: Actor<Context = Context<A>> + actix::Supervised + Send,
        F: Fn() -> A + Send + Sync + Clone + 'static,
    {
        let spawn = move || -> Addr<A> {
            let make = factory.clone();
            actix::Supervisor::start_in_arbiter(&pool.pick(), move |_| make())
        };
        let handle = Supervised {
            addr: Arc::new(Mutex::new(spawn())),
            retired: Arc::new(AtomicBool::new(false)),
        };
        let probe = handle.clone();
        let target = handle.clone();
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        self.entries.borrow_mut().insert(
            id,
            Entry {
                name: name.to_string(),
                alive: Box::new(move || probe.addr().connected()),
                respawn: Box::new(move || *target.addr.lock().recover() = spawn()),
                retired: handle.retired.clone(),
            },
        );
        handle
    }

    /// Stops the watchdog and every arbiter of the pool, waiting for their threads.
    pub fn stop(&self) {
        self.stopping.store(true, Ordering::SeqCst);
        self.entries.borrow_mut().clear();
        for own in self.own_threads.borrow_mut().drain(..) {
            own.stop();
        }
        self.pool.stop();
    }
}

/// A boot that fails half-way must not leave actors running (and writing) behind it.
impl Drop for Supervision {
    fn drop(&mut self) {
        self.stop();
    }
}
