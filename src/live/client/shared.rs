//! What a user's program's trial shares between the main thread and the
//! proxies' threads: what each worker was seen doing, its process group,
//! which faults fired — and the firing itself at the anchors the proxies
//! report (through the fault executor, [`crate::live::faults`]), and the
//! start gate that lets the programs' first acquisitions through in their
//! start order.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::seen::Seen;
use crate::live::common::server::ServerAccount;
use crate::live::fault::executor::FaultExecutor;
use crate::live::fault::{Action, Fault, NetMessage, PauseEnd, Point, Trigger, WorkerId};
use crate::live::process::Victim;
use crate::live::proxy::ProxyMode;
use crate::live::scenario::LiveScenario;
use crate::live::{locked, monotonic_ns};

/// The trial's state, shared with every proxy thread.
pub(super) struct Shared {
    pub(super) names: Vec<String>,
    pub(super) start_ms: Vec<u64>,
    /// Each worker's document (`document = N`).
    pub(super) documents: Vec<u32>,
    /// The worker whose grant each worker's first acquisition waits for
    /// (`start_after = "worker/A:lock_granted"`).
    pub(super) start_after: Vec<Option<usize>>,
    pub(super) seen: Mutex<Vec<(usize, u64, Seen)>>,
    /// Process group of each worker (0 until spawned).
    pub(super) pgids: Mutex<Vec<u32>>,
    /// The scenario's faults, and the order they strike in at one point
    /// ([`super::plan::strike_order`]: indices into `faults`).
    pub(super) faults: Vec<Fault>,
    pub(super) order: Vec<usize>,
    /// Does the faults, keeps their harness records and fault lines, and
    /// which of them struck.
    pub(super) exec: FaultExecutor,
    /// Whether each worker's current process was killed by a crash fault.
    pub(super) killed: Mutex<Vec<bool>>,
    /// Whether each worker's program has exited on its own, successfully:
    /// its workload is done (what ends a pause `until = "other_op_done"`).
    pub(super) finished: Mutex<Vec<bool>>,
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
        order: Vec<usize>,
        account: Arc<dyn ServerAccount>,
        keys: [String; 2],
    ) -> Shared {
        let n = s.workers.len();
        Shared {
            names: s.workers.iter().map(|w| w.name.clone()).collect(),
            start_ms: s.workers.iter().map(|w| w.start_ms).collect(),
            documents: s.workers.iter().map(|w| w.document).collect(),
            start_after: s.workers.iter().map(|w| w.start_after_grant_of).collect(),
            seen: Mutex::default(),
            pgids: Mutex::new(vec![0; n]),
            faults: s.faults.clone(),
            order,
            exec: FaultExecutor::new(s.faults.len()),
            killed: Mutex::new(vec![false; n]),
            finished: Mutex::new(vec![false; n]),
            restarts: Mutex::default(),
            started: Mutex::default(),
            first_acquire: Mutex::new(vec![None; n]),
            arrived: Mutex::new(vec![false; n]),
            backend_pids: Mutex::default(),
            ended: Default::default(),
            account,
            lock_key: keys[0].as_bytes().to_vec(),
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

    /// The faults of `worker` that strike at `point` of its conversation,
    /// in strike order.
    fn at_point(&self, worker: usize, point: Point) -> impl Iterator<Item = usize> + '_ {
        self.order.iter().copied().filter(move |&k| {
            let f = &self.faults[k];
            f.worker() == Some(WorkerId(worker)) && f.program_point() == Some(point)
        })
    }

    /// Applies the worker's faults at `point`, each once, in the proxy
    /// thread. Some(ms): the bytes are lost and the connection is to be
    /// closed `ms` later.
    pub(super) fn strike(&self, worker: usize, point: Point) -> Option<u64> {
        let mut lost = None;
        for k in self.at_point(worker, point).collect::<Vec<_>>() {
            if !self.exec.claim(k) {
                continue;
            }
            if let Some(ms) = self.fire(k, &point.when_text()) {
                lost = Some(ms);
            }
        }
        lost
    }

    /// Will [`Shared::strike`] at `point` lose the worker's bytes (a drop
    /// or cut there that has not struck yet)? Asked before the observer
    /// notes what the bytes carried, so an answer the program never gets
    /// is not noted as received.
    pub(super) fn loses_at(&self, worker: usize, point: Point) -> bool {
        let fired = self.exec.fired();
        self.at_point(worker, point).any(|k| {
            let loses = matches!(
                self.faults[k].action,
                Action::Net {
                    mode: ProxyMode::Drop { .. } | ProxyMode::Cut,
                    ..
                }
            );
            loses && !fired.has(k)
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
        for &k in &self.order {
            let f = &self.faults[k];
            let (
                Trigger::AtMs(at_ms),
                Action::Net {
                    worker: w,
                    message: m,
                    ..
                },
            ) = (f.trigger, f.action)
            else {
                continue;
            };
            let length_ms = f.length_ms(0);
            let from = start + Duration::from_millis(at_ms);
            let until = from + Duration::from_millis(length_ms);
            let now = Instant::now();
            if w.0 != worker || m != message || now < from || now >= until || self.ended() {
                continue;
            }
            if self.exec.claim(k) {
                self.exec.strikes(k);
                self.exec.note(format!(
                    "proxy held worker/{}'s {} at {:.1} ms until its link's stall (at_ms {at_ms} for {length_ms} ms) ended",
                    self.names[worker],
                    m.label(),
                    self.since_start_ms(),
                ));
            }
            std::thread::sleep(until - now);
        }
    }

    /// Applies fault `k` (claimed) now; Some(ms) as for [`Shared::strike`].
    pub(super) fn fire(&self, k: usize, at: &str) -> Option<u64> {
        let f = self.faults[k];
        let WorkerId(worker) = f.worker()?;
        let at_ms = self.since_start_ms();
        let name = &self.names[worker];
        match f.action {
            // A stalled link holds what passes in its window (Shared::stall).
            Action::Net { .. } if f.is_stall() => None,
            Action::Net {
                message,
                mode,
                until,
                ..
            } => {
                self.exec.strikes(k);
                let m = message.label();
                match mode {
                    ProxyMode::Hold { ms } => {
                        self.exec.note(format!(
                            "proxy held worker/{name}'s {m} for {}{ms} ms at {at_ms:.1} ms",
                            if until == PauseEnd::OtherOpDone {
                                "at most "
                            } else {
                                ""
                            }
                        ));
                        self.hold(worker, ms, until);
                        None
                    }
                    ProxyMode::Drop { ms } => {
                        self.exec.note(format!(
                            "proxy dropped worker/{name}'s {m} at {at_ms:.1} ms, connection reset {ms} ms later"
                        ));
                        Some(ms)
                    }
                    ProxyMode::Cut => {
                        self.exec.note(format!(
                            "proxy cut worker/{name}'s connection at its {m} at {at_ms:.1} ms"
                        ));
                        Some(0)
                    }
                }
            }
            Action::Crash {
                restart_after_ms, ..
            } => {
                self.crash(k, worker, at, restart_after_ms);
                // At the write it takes the UPDATE with it.
                let at_write = f.program_point() == Some(Point::FenceChecked);
                at_write.then_some(0)
            }
            Action::Pause {
                duration_ms, until, ..
            } => {
                self.pause(k, worker, at, duration_ms, until);
                None
            }
            // Refused for a program (plan::strike_order).
            Action::Failover
            | Action::Partition { .. }
            | Action::SlowMember { .. }
            | Action::CutLock { .. } => None,
        }
    }

    /// Holds worker `worker`'s message (the proxy's thread waits here) for
    /// `ms` — less with `until = "other_op_done"`: until another worker's
    /// program has finished, as a pause is anchored.
    fn hold(&self, worker: usize, ms: u64, until: PauseEnd) {
        if let Some(other) = self.wait_unless_other_finished(worker, ms, until) {
            self.exec.note(format!(
                "proxy let worker/{}'s held message through at {:.1} ms: worker/{}'s program finished",
                self.names[worker],
                self.since_start_ms(),
                self.names[other]
            ));
        }
    }

    /// Waits `ms`, or until the trial ends, or — with `until =
    /// "other_op_done"` — until another worker's program on `worker`'s
    /// document has finished: that worker, if the wait ended so.
    fn wait_unless_other_finished(&self, worker: usize, ms: u64, until: PauseEnd) -> Option<usize> {
        let end = Instant::now() + Duration::from_millis(ms);
        loop {
            let now = Instant::now();
            if now >= end || self.ended() {
                return None;
            }
            if until == PauseEnd::OtherOpDone {
                if let Some(other) = self.other_finished(worker) {
                    return Some(other);
                }
            }
            std::thread::sleep((end - now).min(Duration::from_millis(2)));
        }
    }

    /// SIGSTOP of the worker's process group for `duration_ms`, then
    /// SIGCONT — sooner with `until = "other_op_done"`, as soon as another
    /// worker's program has finished its workload (exited on its own,
    /// successfully). A program's single operations are not seen ending as
    /// they happen; its exit is, and comes after its release.
    fn pause(&self, k: usize, worker: usize, at: &str, duration_ms: u64, until: PauseEnd) {
        let pgid = locked(&self.pgids)[worker];
        if pgid == 0 || self.ended() {
            return;
        }
        let name = &self.names[worker];
        // A group that never shows as stopped is paused all the
        // same: the pause is recorded and its time runs.
        let _ = self
            .exec
            .pause_worker(k, worker, name, Victim::Group(pgid), at, duration_ms);
        if let Some(other) = self.wait_unless_other_finished(worker, duration_ms, until) {
            self.exec.note(format!(
                "worker/{name}'s pause ends at {:.1} ms: worker/{}'s program finished",
                self.since_start_ms(),
                self.names[other]
            ));
        }
        // Not if a crash killed it meanwhile (its group id may be reused).
        let same = locked(&self.pgids)[worker] == pgid && !locked(&self.killed)[worker];
        if same && !self.ended() {
            self.exec.resume_worker(worker, Victim::Group(pgid));
        }
    }

    /// Whether the worker `worker` starts after (if any) has been seen to
    /// learn of a grant, or its program has finished or was killed.
    fn start_after_granted(&self, worker: usize) -> bool {
        let Some(j) = self.start_after[worker] else {
            return true;
        };
        locked(&self.grants_learned)[j] > 0 || locked(&self.finished)[j] || locked(&self.killed)[j]
    }

    /// Another worker than `worker`, on its document, whose program has
    /// finished, if any (a worker on another document takes another lock).
    fn other_finished(&self, worker: usize) -> Option<usize> {
        let finished = locked(&self.finished);
        let doc = self.documents[worker];
        (0..finished.len()).find(|&i| i != worker && finished[i] && self.documents[i] == doc)
    }

    /// SIGKILL of the worker's process group (stopped or not), recorded as
    /// a crash, its restart scheduled.
    fn crash(&self, k: usize, worker: usize, at: &str, restart_after_ms: Option<u64>) {
        let pgid = locked(&self.pgids)[worker];
        if pgid == 0 || self.ended() || locked(&self.killed)[worker] {
            return;
        }
        locked(&self.killed)[worker] = true;
        self.exec.crash_worker(k, worker, Victim::Group(pgid));
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
        // A worker's grants, in the order they were made: they grow.
        debug_assert!(grants.windows(2).all(|w| w[0] < w[1]), "{grants:?}");
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
        self.strike(worker, Point::LockGranted)
    }

    /// Lets a worker's first acquisition through only once every program
    /// is up and asking (start-up times vary by hundreds of ms), and after
    /// every worker that starts before it had its first one through,
    /// `start_ms` earlier — and, with `start_after`, once the account shows
    /// that worker a grant (or its program is gone): over five Redlock
    /// masters a first request let through first is not granted first.
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
            let ready = ready && self.start_after_granted(worker);
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
