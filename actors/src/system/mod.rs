//! The supervision tree: every long-lived actor runs on its own arbiter under an actix
//! `Supervisor` (restart on stop), and a watchdog respawns any actor whose mailbox closed
//! because a panic unwound its arbiter (actix 0.13 does not supervise panics).

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use actix::prelude::*;
use actix::ArbiterHandle;

type Probe = Box<dyn Fn() -> bool>;
type Respawn = Box<dyn Fn()>;

/// A supervised actor whose current address survives respawns.
pub struct Supervised<A: Actor<Context = Context<A>>> {
    addr: Arc<Mutex<Addr<A>>>,
}

impl<A: Actor<Context = Context<A>>> Clone for Supervised<A> {
    fn clone(&self) -> Self {
        Supervised {
            addr: self.addr.clone(),
        }
    }
}

impl<A: Actor<Context = Context<A>>> Supervised<A> {
    pub fn addr(&self) -> Addr<A> {
        self.addr.lock().expect("address lock").clone()
    }
}

/// Owns the watchdog. Create it inside a running actix `System`.
pub struct Supervision {
    // Lives on the System arbiter only: the watchdog task and `start` run there.
    entries: Rc<RefCell<Vec<(String, Probe, Respawn)>>>,
    /// The arbiter each named actor currently runs on.
    arbiters: Arc<Mutex<HashMap<String, ArbiterHandle>>>,
    stopping: Arc<AtomicBool>,
}

impl Supervision {
    pub fn new(check_every: Duration) -> Self {
        let supervision = Supervision {
            entries: Rc::new(RefCell::new(Vec::new())),
            arbiters: Arc::new(Mutex::new(HashMap::new())),
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
                let entries = entries.borrow();
                for (name, alive, respawn) in entries.iter() {
                    if !alive() {
                        tracing::error!(actor = %name, "actor died (panic); respawning it");
                        metrics::counter!("weaver_actor_restarts_total", "actor" => name.clone(), "reason" => "died").increment(1);
                        respawn();
                    }
                }
            }
        });
        supervision
    }

    /// Starts `factory()` on a fresh arbiter under a `Supervisor`, watched by the watchdog.
    pub fn start<A, F>(&self, name: &str, factory: F) -> Supervised<A>
    where
        A: Actor<Context = Context<A>> + actix::Supervised + Send,
        F: Fn() -> A + Send + Sync + Clone + 'static,
    {
        let arbiters = self.arbiters.clone();
        let key = name.to_string();
        let spawn = move || -> Addr<A> {
            let arbiter = Arbiter::new().handle();
            // The old arbiter's thread outlives the panic that killed its actor: end it.
            if let Some(old) = arbiters
                .lock()
                .expect("arbiter lock")
                .insert(key.clone(), arbiter.clone())
            {
                old.stop();
            }
            let make = factory.clone();
            actix::Supervisor::start_in_arbiter(&arbiter, move |_| make())
        };
        let handle = Supervised {
            addr: Arc::new(Mutex::new(spawn())),
        };
        let probe_handle = handle.clone();
        let respawn_handle = handle.clone();
        self.entries.borrow_mut().push((
            name.to_string(),
            Box::new(move || probe_handle.addr().connected()),
            Box::new(move || *respawn_handle.addr.lock().expect("address lock") = spawn()),
        ));
        handle
    }

    /// Stops the watchdog and every arbiter started by this supervision.
    pub fn stop(&self) {
        self.stopping.store(true, Ordering::SeqCst);
        for (_, arbiter) in self.arbiters.lock().expect("arbiter lock").drain() {
            arbiter.stop();
        }
    }
}
