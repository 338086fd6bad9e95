//! What a user's program's trial shares between the main thread and the
//! proxies' threads: what each worker was seen doing, its process group,
//! which faults fired — and the firing itself at the anchors the proxies
//! report (through the fault executor, [`crate::live::faults`]), and the
//! start gate that lets the programs' first acquisitions through in their
//! start order.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::plan::{Action, Anchor, Fault, When};
use super::seen::Seen;
use super::server_account::ServerAccount;
use crate::live::faults::FaultExecutor;
use crate::live::process::Victim;
use crate::live::scenario::{LiveScenario, NetMessage};
use crate::live::{locked, monotonic_ns};

/// The trial's state, shared with every proxy thread.
pub(super) struct Shared {
    pub(super) names: Vec<String>,
    pub(super) start_ms: Vec<u64>,
    pub(super) seen: Mutex<Vec<(usize, u64, Seen)>>,
    /// Process group of each worker (0 until spawned).
    pub(super) pgids: Mutex<Vec<u32>>,
    pub(super) faults: Vec<Fault>,
    pub(super) fired: Mutex<Vec<bool>>,
    /// Does the faults, keeps their harness records and fault lines.
    pub(super) exec: FaultExecutor,
    /// Whether each worker's current process was killed by a crash fault.
    pub(super) killed: Mutex<Vec<bool>>,
    /// Restarts due: (worker, when).
    pub(super) restarts: Mutex<Vec<(usize, Instant)>>,
    /// The trial's start: the first acquisition let through.
    pub(super) started: Mutex<Option<Instant>>,
    /// When each worker's first acquisition was let through.
    pub(super) first_acquire: Mutex<Vec<Option<Instant>>>,
    /// Which programs have asked for the lock (their first acquisition waits).
    pub(super) arrived: Mutex<Vec<bool>>,
    pub(super) backend_pids: Mutex<BTreeMap<i32, usize>>,
    pub(super) ended: std::sync::atomic::AtomicBool,
    /// The servers' account of the lock, and the names the observers look
    /// for (the lock's key, path or prefix; its token counter's key).
    pub(super) account: Arc<dyn ServerAccount>,
    pub(super) lock_key: Vec<u8>,
    pub(super) token_key: Vec<u8>,
    /// How many of its grants each worker has been seen to learn of.
    grants_learned: Mutex<Vec<usize>>,
    /// Why the account could not answer a proxy during the trial.
    pub(super) account_errors: Mutex<Vec<String>>,
    /// Faults that came due but did not strike, and why.
    pub(super) missed: Mutex<Vec<String>>,
}

impl Shared {
    pub(super) fn new(
        s: &LiveScenario,
        faults: Vec<Fault>,
        account: Arc<dyn ServerAccount>,
        keys: [String; 2],
    ) -> Shared {
        let n = s.workers.len();
        Shared {
            names: s.workers.iter().map(|w| w.name.clone()).collect(),
            start_ms: s.workers.iter().map(|w| w.start_ms).collect(),
            seen: Mutex::default(),
            pgids: Mutex::new(vec![0; n]),
            fired: Mutex::new(vec![false; faults.len()]),
            faults,
            exec: FaultExecutor::default(),
            killed: Mutex::new(vec![false; n]),
            restarts: Mutex::default(),
            started: Mutex::default(),
            first_acquire: Mutex::new(vec![None; n]),
            arrived: Mutex::new(vec![false; n]),
            backend_pids: Mutex::default(),
            ended: Default::default(),
            account,
            lock_key: keys[0].as_bytes().to_vec(),
            token_key: keys[1].as_bytes().to_vec(),
            grants_learned: Mutex::new(vec![0; n]),
            account_errors: Mutex::default(),
            missed: Mutex::default(),
        }
    }

    /// The trial is over: no fault strikes and no first acquisition waits any more.
    pub(super) fn end(&self) {
        self.ended.store(true, std::sync::atomic::Ordering::SeqCst);
    }

    pub(super) fn record(&self, worker: usize, what: Seen) {
        locked(&self.seen).push((worker, monotonic_ns(), what));
    }

    /// Ms since the trial started (0 before).
    pub(super) fn since_start_ms(&self) -> f64 {
        self.exec.since_start_ms()
    }

    pub(super) fn ended(&self) -> bool {
        self.ended.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Applies the worker's faults at `anchor`, each once, in the proxy
    /// thread. Some(ms): the bytes are lost and the connection is to be
    /// closed `ms` later.
    pub(super) fn strike(&self, worker: usize, anchor: Anchor) -> Option<u64> {
        let mut lost = None;
        for k in 0..self.faults.len() {
            let f = &self.faults[k];
            if f.worker != worker || f.when != When::At(anchor) {
                continue;
            }
            {
                let mut fired = locked(&self.fired);
                if fired[k] {
                    continue;
                }
                fired[k] = true;
            }
            if let Some(ms) = self.fire(f, &anchor.when_text()) {
                lost = Some(ms);
            }
        }
        lost
    }

    /// Will [`Shared::strike`] at `anchor` lose the worker's bytes (a drop
    /// or cut there that has not struck yet)? Asked before the observer
    /// notes what the bytes carried, so an answer the program never gets
    /// is not noted as received.
    pub(super) fn loses_at(&self, worker: usize, anchor: Anchor) -> bool {
        let fired = locked(&self.fired);
        self.faults.iter().enumerate().any(|(k, f)| {
            f.worker == worker
                && f.when == When::At(anchor)
                && matches!(f.action, Action::Drop | Action::Cut)
                && !fired[k]
        })
    }

    /// A stalled link (a delay at a time): a `message` of `worker` that
    /// reaches its proxy inside a stall's window waits, in the proxy's
    /// thread, until the window ends. The first message held is the
    /// fault's strike (a window nothing passed through never struck, and
    /// the trial cannot be judged on it).
    pub(super) fn stall(&self, worker: usize, message: NetMessage) {
        let Some(start) = *locked(&self.started) else {
            return;
        };
        for (k, f) in self.faults.iter().enumerate() {
            let (When::AtMs(at_ms), Action::Stall { message: m }) = (f.when, f.action) else {
                continue;
            };
            let from = start + Duration::from_millis(at_ms);
            let until = from + Duration::from_millis(f.duration_ms);
            let now = Instant::now();
            if f.worker != worker || m != message || now < from || now >= until || self.ended() {
                continue;
            }
            if !std::mem::replace(&mut locked(&self.fired)[k], true) {
                self.exec.note(format!(
                    "proxy held worker/{}'s {} at {:.1} ms until its link's stall (at_ms {at_ms} for {} ms) ended",
                    self.names[worker],
                    f.message(),
                    self.since_start_ms(),
                    f.duration_ms
                ));
            }
            std::thread::sleep(until - now);
        }
    }

    /// Applies one fault now; Some(ms) as for [`Shared::strike`].
    pub(super) fn fire(&self, f: &Fault, at: &str) -> Option<u64> {
        let worker = f.worker;
        let at_ms = self.since_start_ms();
        let name = &self.names[worker];
        match f.action {
            // A stalled link holds what passes in its window (Shared::stall).
            Action::Stall { .. } => None,
            Action::Delay => {
                self.exec.note(format!(
                    "proxy held worker/{name}'s {} for {} ms at {at_ms:.1} ms",
                    f.message(),
                    f.duration_ms
                ));
                std::thread::sleep(Duration::from_millis(f.duration_ms));
                None
            }
            Action::Drop => {
                self.exec.note(format!(
                    "proxy dropped worker/{name}'s {} at {at_ms:.1} ms, connection reset {} ms later",
                    f.message(),
                    f.duration_ms
                ));
                Some(f.duration_ms)
            }
            Action::Cut => {
                self.exec.note(format!(
                    "proxy cut worker/{name}'s connection at its {} at {at_ms:.1} ms",
                    f.message()
                ));
                Some(0)
            }
            Action::Crash { restart_after_ms } => {
                self.crash(worker, at, restart_after_ms);
                (f.when == When::At(Anchor::Write)).then_some(0)
            }
            Action::Pause => {
                let pgid = locked(&self.pgids)[worker];
                if pgid == 0 || self.ended() {
                    return None;
                }
                // A group that never shows as stopped is paused all the
                // same: the pause is recorded and its time runs.
                let _ =
                    self.exec
                        .pause_worker(worker, name, Victim::Group(pgid), at, f.duration_ms);
                std::thread::sleep(Duration::from_millis(f.duration_ms));
                // Not if a crash killed it meanwhile (its group id may be reused).
                let same = locked(&self.pgids)[worker] == pgid && !locked(&self.killed)[worker];
                if same && !self.ended() {
                    self.exec.resume_worker(worker, Victim::Group(pgid));
                }
                None
            }
        }
    }

    /// SIGKILL of the worker's process group (stopped or not), recorded as
    /// a crash, its restart scheduled.
    fn crash(&self, worker: usize, at: &str, restart_after_ms: Option<u64>) {
        let pgid = locked(&self.pgids)[worker];
        if pgid == 0 || self.ended() || locked(&self.killed)[worker] {
            return;
        }
        locked(&self.killed)[worker] = true;
        self.exec.crash_worker(worker, Victim::Group(pgid));
        let restart = match restart_after_ms {
            Some(ms) => {
                locked(&self.restarts).push((worker, Instant::now() + Duration::from_millis(ms)));
                format!("restart after {ms} ms")
            }
            None => "no restart".into(),
        };
        self.exec.note(format!(
            "crash (SIGKILL) worker/{} {at}, {restart}, at {:.1} ms",
            self.names[worker],
            self.since_start_ms()
        ));
    }

    /// After a reply from upstream `master` that may follow a grant: when
    /// the account shows `worker` a grant it had not learned of, the faults
    /// anchored at the grant strike, before the reply goes on. Some(ms): a
    /// fault on the lock reply loses it (the proxy forwards nothing of it
    /// and closes the connection `ms` later).
    pub(super) fn learn_grants(&self, master: usize, worker: usize) -> Option<u64> {
        self.stall(worker, NetMessage::LockReply);
        let grants = match self.account.grants_of(master, worker) {
            Ok(g) => g,
            Err(e) => {
                locked(&self.account_errors).push(format!("{e:#}"));
                return None;
            }
        };
        let new: Vec<u64> = {
            let mut learned = locked(&self.grants_learned);
            let new = grants.get(learned[worker]..).unwrap_or_default().to_vec();
            learned[worker] = learned[worker].max(grants.len());
            new
        };
        // The history takes grants from the finished account (where a
        // command in an expiry's millisecond is settled by Redis's
        // notifications); this online view only times the anchored faults.
        if new.is_empty() {
            return None;
        }
        // The program is stopped or killed, or its reply held or lost.
        self.strike(worker, Anchor::Granted)
    }

    /// Lets a worker's first acquisition through only once every program
    /// is up and asking (start-up times vary by hundreds of ms), and after
    /// every worker that starts before it had its first one through,
    /// `start_ms` earlier.
    pub(super) fn in_start_order(&self, worker: usize) {
        if locked(&self.first_acquire)[worker].is_some() {
            return;
        }
        locked(&self.arrived)[worker] = true;
        let give_up = Instant::now() + Duration::from_secs(10);
        loop {
            let now = Instant::now();
            let ready = locked(&self.arrived).iter().all(|a| *a) && {
                let firsts = locked(&self.first_acquire);
                (0..self.names.len())
                    .filter(|&j| (self.start_ms[j], j) < (self.start_ms[worker], worker))
                    .all(|j| {
                        firsts[j].is_some_and(|t| {
                            now >= t + Duration::from_millis(
                                self.start_ms[worker] - self.start_ms[j],
                            )
                        })
                    })
            };
            if ready || now > give_up || self.ended.load(std::sync::atomic::Ordering::SeqCst) {
                break;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        let now = Instant::now();
        locked(&self.first_acquire)[worker].get_or_insert(now);
        locked(&self.started).get_or_insert(now);
        self.exec.start();
    }
}
