//! A user's own, unchanged worker program under real faults, judged from
//! the servers' side (`fencesim live --worker-cmd CMD`).
//!
//! The program is started once per worker (`sh -c CMD`, its own process
//! group) with its connection settings in the environment — Redis and
//! PostgreSQL URLs that point at proxies inside fencesim, one pair per
//! worker so every connection is attributable — and it reports nothing.
//! The proxies decode what it says ([`super::decode`]): a `SET … NX` and
//! its `OK` are an acquisition and a grant, `INCR`'s reply its token, a
//! `SELECT` of the document and its row a read, an `UPDATE` and its
//! `UPDATE n` a write that applied (n ≥ 1) or was refused by its condition
//! (n = 0), a `DEL` or a one-key script a release, which deleted the lock
//! when it answers 1 (`release_applied`). A grant's lease runs from the
//! moment its `OK` passed the proxy for the PX/EX ttl the `SET` asked
//! (`lease_expired`, on the one monotonic clock, as for the built-in
//! workers: Redis set the ttl before it replied). What committed comes
//! from PostgreSQL itself: a trigger records, in the writing transaction,
//! the backend pid (which the proxy saw in that connection's
//! BackendKeyData), body and token of every applied write. The history is
//! merged by the same code as the built-in workers' ([`super::trial`]) and
//! judged by the same checker.
//!
//! Faults are anchored to what the proxy sees, and applied in the proxy's
//! thread *before* the bytes go on: a pause after the grant stops the
//! program (SIGSTOP to its group, confirmed) before it learns it holds the
//! lock, one after a read before it sees the row, and a pause or delay "at
//! the write" holds the UPDATE it just sent. A crash is a SIGKILL of the
//! program's process group, at an anchor or `at_ms` after the trial
//! started (the first lock request let through), optionally followed by a
//! restart of the same command with the same environment; at the write it
//! takes the UPDATE with it (never forwarded). `drop` loses the UPDATE's
//! request and resets its connection `duration_ms` later (what a TCP user
//! timeout does to data that is never acknowledged); `cut` closes the
//! connection instead of forwarding it. Workers' first acquisitions are let
//! through in their start order, `start_ms` apart, because program start-up
//! times vary more than the offsets a scenario needs.
//!
//! A program that exits non-zero, dies of a signal fencesim did not send,
//! or outlives the trial's timeout is reported as such ([`ClientFailed`]),
//! never as a protocol verdict — also when it exits because a fault cut its
//! connection (the message lists the trial's faults); one fencesim killed
//! is not a failure. Every process it started is ended by the validate
//! mode's reaper.

use std::collections::{BTreeMap, VecDeque};
use std::io::Read;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use serde_json::{json, Value};

use super::decode::{pgwire, resp};
use super::proxy::{Flow, Observer, Proxy, ProxyMode};
use super::scenario::{CrashTarget, LiveScenario, Trigger};
use super::servers::{die_with_parent, kill, Servers};
use super::trial::{build_history, proc_state, HarnessNode, HarnessRecord, TrialResult};
use super::{monotonic_ns, LockKind, DOC_ID};
use crate::check;
use crate::history::Kind;
use crate::validate::reaper;

/// Statements sent and not yet answered, with the token each carried.
type Pending = VecDeque<(pgwire::Statement, Option<i64>)>;

/// The user's program misbehaved (exit code, signal, hang): exit 3, no verdict.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ClientFailed(pub String);

/// Where in the program's conversation a fault strikes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Anchor {
    /// Its `SET … NX` was answered OK (before the program sees the answer).
    Granted,
    /// Its read of the document returned (before the program sees the row).
    Read,
    /// Its UPDATE reached the proxy (before it is forwarded).
    Write,
}

impl Anchor {
    /// The scenario's protocol point names (the built-in worker's, plus `lock_granted`).
    pub fn from_point(point: &str) -> Option<Anchor> {
        match point {
            "lock_granted" => Some(Anchor::Granted),
            "read_ok" => Some(Anchor::Read),
            "fence_checked" => Some(Anchor::Write),
            _ => None,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Action {
    /// SIGSTOP for the duration (the bytes wait with the program).
    Pause,
    /// Hold the bytes, program running.
    Delay,
    /// Lose the UPDATE's request; reset its connection `duration_ms` later.
    Drop,
    /// Close the connection instead of forwarding the UPDATE.
    Cut,
    /// SIGKILL of the program's process group; the same command, with the
    /// same environment, is started again this long after (None: it stays down).
    Crash { restart_after_ms: Option<u64> },
}

/// When a fault strikes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum When {
    At(Anchor),
    /// Ms after the trial started (its first lock request let through).
    AtMs(u64),
}

#[derive(Clone, Debug)]
struct Fault {
    worker: usize,
    when: When,
    action: Action,
    duration_ms: u64,
}

/// What the proxies saw one worker do, in the order they saw it.
#[derive(Clone, Debug)]
enum Seen {
    AcquireSent,
    /// Its `SET … NX` was answered OK, with the PX/EX ttl it asked for.
    Granted(Option<u64>),
    Token(i64),
    ReleaseSent,
    /// A release's reply: keys deleted (`DEL`, or the script's 1/0); None:
    /// an error (a script not loaded yet, resent as `EVAL`).
    ReleaseDone(Option<i64>),
    ReadSent,
    ReadOk(Option<i64>),
    WriteSent(Vec<i64>),
    /// Rows updated (None: the statement failed).
    WriteDone(Option<u64>),
    /// The UPDATE never reached the server (a fault lost it), and why.
    WriteLost(String),
}

struct Shared {
    names: Vec<String>,
    start_ms: Vec<u64>,
    seen: Mutex<Vec<(usize, u64, Seen)>>,
    /// Process group of each worker (0 until spawned).
    pgids: Mutex<Vec<u32>>,
    faults: Vec<Fault>,
    fired: Mutex<Vec<bool>>,
    log: Mutex<Vec<String>>,
    /// Pauses, resumes, crashes and restarts, for the history.
    harness: Mutex<Vec<HarnessRecord>>,
    /// Whether each worker's current process was killed by a crash fault.
    killed: Mutex<Vec<bool>>,
    /// Restarts due: (worker, when).
    restarts: Mutex<Vec<(usize, Instant)>>,
    /// The trial's start: the first acquisition let through.
    started: Mutex<Option<(Instant, u64)>>,
    /// When each worker's first acquisition was let through.
    first_acquire: Mutex<Vec<Option<Instant>>>,
    /// Which programs have asked for the lock (their first acquisition waits).
    arrived: Mutex<Vec<bool>>,
    backend_pids: Mutex<BTreeMap<i32, usize>>,
    ended: std::sync::atomic::AtomicBool,
}

fn locked<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Shared {
    fn record(&self, worker: usize, what: Seen) {
        locked(&self.seen).push((worker, monotonic_ns(), what));
    }

    /// Ms since the trial started (0 before).
    fn since_start_ms(&self) -> f64 {
        locked(&self.started).map_or(0.0, |(_, ns)| {
            monotonic_ns().saturating_sub(ns) as f64 / 1e6
        })
    }

    fn ended(&self) -> bool {
        self.ended.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Applies the worker's faults at `anchor`, each once, in the proxy
    /// thread. Some(ms): the bytes are lost and the connection is to be
    /// closed `ms` later.
    fn strike(&self, worker: usize, anchor: Anchor) -> Option<u64> {
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
            if let Some(ms) = self.fire(f, &format!("at {anchor:?}")) {
                lost = Some(ms);
            }
        }
        lost
    }

    /// Applies one fault now; Some(ms) as for [`Shared::strike`].
    fn fire(&self, f: &Fault, at: &str) -> Option<u64> {
        let worker = f.worker;
        let at_ms = self.since_start_ms();
        let name = &self.names[worker];
        match f.action {
            Action::Delay => {
                locked(&self.log).push(format!(
                    "proxy held worker/{name}'s bytes {at} for {} ms at {at_ms:.1} ms",
                    f.duration_ms
                ));
                std::thread::sleep(Duration::from_millis(f.duration_ms));
                None
            }
            Action::Drop => {
                locked(&self.log).push(format!(
                    "proxy dropped worker/{name}'s UPDATE at {at_ms:.1} ms, connection reset {} ms later",
                    f.duration_ms
                ));
                Some(f.duration_ms)
            }
            Action::Cut => {
                locked(&self.log).push(format!(
                    "proxy cut worker/{name}'s connection at its UPDATE at {at_ms:.1} ms"
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
                let start = Instant::now();
                kill_group(pgid, libc::SIGSTOP);
                while start.elapsed() < Duration::from_secs(2)
                    && !matches!(proc_state(pgid), Some('T') | Some('t'))
                {
                    std::thread::yield_now();
                }
                self.harness_record(
                    worker,
                    Kind::Pause,
                    format!("SIGSTOP for {} ms", f.duration_ms),
                );
                locked(&self.log).push(format!(
                    "pause worker/{name} {at} for {} ms at {at_ms:.1} ms (stop confirmed in {} us)",
                    f.duration_ms,
                    start.elapsed().as_micros()
                ));
                std::thread::sleep(Duration::from_millis(f.duration_ms));
                // Not if a crash killed it meanwhile (its group id may be reused).
                let same = locked(&self.pgids)[worker] == pgid && !locked(&self.killed)[worker];
                if same && !self.ended() {
                    self.harness_record(worker, Kind::Resume, "SIGCONT".into());
                    kill_group(pgid, libc::SIGCONT);
                }
                None
            }
        }
    }

    fn harness_record(&self, worker: usize, kind: Kind, detail: String) {
        locked(&self.harness).push(HarnessRecord {
            node: HarnessNode::Worker(worker),
            kind,
            t_ns: monotonic_ns(),
            detail,
        });
    }

    /// SIGKILL of the worker's process group (stopped or not), recorded as
    /// a crash, its restart scheduled.
    fn crash(&self, worker: usize, at: &str, restart_after_ms: Option<u64>) {
        let pgid = locked(&self.pgids)[worker];
        if pgid == 0 || self.ended() || locked(&self.killed)[worker] {
            return;
        }
        locked(&self.killed)[worker] = true;
        self.harness_record(
            worker,
            Kind::Crash,
            "SIGKILL of the program's process group".into(),
        );
        kill_group(pgid, libc::SIGKILL);
        let restart = match restart_after_ms {
            Some(ms) => {
                locked(&self.restarts).push((worker, Instant::now() + Duration::from_millis(ms)));
                format!("restart after {ms} ms")
            }
            None => "no restart".into(),
        };
        locked(&self.log).push(format!(
            "crash (SIGKILL) worker/{} {at}, {restart}, at {:.1} ms",
            self.names[worker],
            self.since_start_ms()
        ));
    }

    /// Lets a worker's first acquisition through only once every program
    /// is up and asking (start-up times vary by hundreds of ms), and after
    /// every worker that starts before it had its first one through,
    /// `start_ms` earlier.
    fn in_start_order(&self, worker: usize) {
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
        locked(&self.started).get_or_insert((now, monotonic_ns()));
    }
}

fn kill_group(pgid: u32, sig: i32) {
    kill(0u32.wrapping_sub(pgid), sig);
}

/// Observers for one Redis connection of `worker`.
fn redis_observers(shared: Arc<Shared>, worker: usize) -> (Observer, Observer) {
    let pending: Arc<Mutex<VecDeque<resp::Command>>> = Arc::default();
    let (s2, p2) = (shared.clone(), pending.clone());
    let mut up = resp::FrameBuffer::default();
    let mut down = resp::FrameBuffer::default();
    let to_server: Observer = Box::new(move |chunk| {
        for frame in up.push(chunk) {
            let cmd = resp::command_args(&frame)
                .map(|a| resp::interpret(&a))
                .unwrap_or(resp::Command::Other(String::new()));
            match &cmd {
                resp::Command::Acquire { .. } => {
                    shared.in_start_order(worker);
                    shared.record(worker, Seen::AcquireSent);
                }
                resp::Command::Release { .. } => shared.record(worker, Seen::ReleaseSent),
                _ => {}
            }
            locked(&pending).push_back(cmd);
        }
        Flow::Pass
    });
    let to_client: Observer = Box::new(move |chunk| {
        for frame in down.push(chunk) {
            let Some(cmd) = locked(&p2).pop_front() else {
                continue;
            };
            match (cmd, resp::reply(&frame)) {
                (resp::Command::Acquire { ttl_ms, .. }, resp::Reply::Ok) => {
                    s2.record(worker, Seen::Granted(ttl_ms));
                    // The program is stopped or killed; the reply goes on.
                    s2.strike(worker, Anchor::Granted);
                }
                (resp::Command::Incr { .. }, resp::Reply::Int(n)) => {
                    s2.record(worker, Seen::Token(n))
                }
                (resp::Command::Release { .. }, resp::Reply::Int(n)) => {
                    s2.record(worker, Seen::ReleaseDone(Some(n)))
                }
                (resp::Command::Release { .. }, _) => s2.record(worker, Seen::ReleaseDone(None)),
                _ => {}
            }
        }
        Flow::Pass
    });
    (to_server, to_client)
}

/// Observers for one PostgreSQL connection of `worker`.
fn pg_observers(shared: Arc<Shared>, worker: usize) -> (Observer, Observer) {
    let pending: Arc<Mutex<Pending>> = Arc::default();
    let (s2, p2) = (shared.clone(), pending.clone());
    let mut up = pgwire::Frontend::default();
    let mut down = pgwire::Backend::default();
    // Stream offset of the chunk being observed.
    let mut stream_at = 0u64;
    let to_server: Observer = Box::new(move |chunk| {
        let chunk_at = stream_at;
        stream_at += chunk.len() as u64;
        for st in up.push(chunk) {
            if st.is_select_of("documents") {
                shared.record(worker, Seen::ReadSent);
            } else if st.is_update_of("documents") {
                shared.record(worker, Seen::WriteSent(st.integers()));
                if let Some(after_ms) = shared.strike(worker, Anchor::Write) {
                    shared.record(
                        worker,
                        Seen::WriteLost(
                            "the UPDATE never reached the server (a fault lost it)".into(),
                        ),
                    );
                    // Its request is lost from its first byte; what came before goes on.
                    let forward = st
                        .request_at
                        .saturating_sub(chunk_at)
                        .min(chunk.len() as u64);
                    return Flow::Cut {
                        forward: forward as usize,
                        after_ms,
                    };
                }
            }
            locked(&pending).push_back((st, None));
        }
        Flow::Pass
    });
    let to_client: Observer = Box::new(move |chunk| {
        for reply in down.push(chunk) {
            match reply {
                pgwire::Reply::BackendPid(pid) => {
                    locked(&s2.backend_pids).insert(pid, worker);
                }
                pgwire::Reply::Row(col) => {
                    if let Some((st, value)) = locked(&p2).front_mut() {
                        *value = col.and_then(|b| pgwire::integer(&b, st.binary_results));
                    }
                }
                pgwire::Reply::Complete(tag) => {
                    let Some((st, value)) = locked(&p2).pop_front() else {
                        continue;
                    };
                    if st.is_select_of("documents") {
                        s2.record(worker, Seen::ReadOk(value));
                        s2.strike(worker, Anchor::Read);
                    } else if st.is_update_of("documents") {
                        let rows = tag.rsplit(' ').next().and_then(|n| n.parse().ok());
                        s2.record(worker, Seen::WriteDone(rows));
                    }
                }
                pgwire::Reply::Error(_) => {
                    if let Some((st, _)) = locked(&p2).pop_front() {
                        if st.is_update_of("documents") {
                            s2.record(worker, Seen::WriteDone(None));
                        }
                    }
                }
                pgwire::Reply::Ready => locked(&p2).clear(),
            }
        }
        Flow::Pass
    });
    (to_server, to_client)
}

/// The trigger that records, in the writing transaction, which connection
/// committed which body and token (the audit of [`super::servers`] has no
/// connection; it is left as it is for the built-in workers).
const CLIENT_AUDIT_SQL: &str = "
DROP TABLE IF EXISTS client_audit;
DROP SEQUENCE IF EXISTS client_commit_seq;
CREATE SEQUENCE client_commit_seq;
CREATE TABLE client_audit (commit_seq bigint NOT NULL, backend_pid int NOT NULL, body bigint NOT NULL, token bigint NOT NULL);
CREATE OR REPLACE FUNCTION client_audit_write() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO client_audit VALUES (nextval('client_commit_seq'), pg_backend_pid(), NEW.body, NEW.fencing_token);
  RETURN NEW;
END $$;
CREATE TRIGGER client_audit_write AFTER UPDATE ON documents FOR EACH ROW EXECUTE FUNCTION client_audit_write();
";

/// The scenario's faults as client faults; those a user's program cannot
/// be given (a failover, or a crash of the harness's Redis, which the
/// built-in worker's gate times) are refused.
fn faults_of(s: &LiveScenario) -> Result<Vec<Fault>> {
    let index = |name: &str| s.workers.iter().position(|w| w.name == name).unwrap_or(0);
    let anchor = |point: &str| {
        Anchor::from_point(point)
            .with_context(|| format!("protocol point {point:?} has no client anchor"))
    };
    if !s.failovers.is_empty() {
        bail!("{}: failover faults need the built-in worker; they are not supported with --worker-cmd", s.path.display());
    }
    let mut faults = Vec::new();
    for p in &s.pauses {
        faults.push(Fault {
            worker: index(&p.worker),
            when: When::At(anchor(&p.after)?),
            action: Action::Pause,
            duration_ms: p.duration_ms,
        });
    }
    for h in &s.net {
        let (action, duration_ms) = match h.mode {
            ProxyMode::Hold { ms } => (Action::Delay, ms),
            ProxyMode::Drop { ms } => (Action::Drop, ms),
            ProxyMode::Cut => (Action::Cut, 0),
        };
        faults.push(Fault {
            worker: index(&h.worker),
            when: When::At(Anchor::Write),
            action,
            duration_ms,
        });
    }
    for c in &s.crashes {
        let CrashTarget::Worker(w) = &c.target else {
            bail!(
                "{}: a crash of coord/0 needs the built-in worker; with --worker-cmd a worker can be crashed",
                s.path.display()
            );
        };
        let (worker, when) = match &c.trigger {
            // `after = "worker/B:read_ok"` crashes this worker when B reaches it.
            Trigger::After { worker, point } => (index(worker), When::At(anchor(point)?)),
            Trigger::AtMs(ms) => (index(w), When::AtMs(*ms)),
        };
        if index(w) != worker {
            bail!(
                "{}: with --worker-cmd a crash follows the crashed worker's own step (after = \"{}\")",
                s.path.display(),
                match &c.trigger {
                    Trigger::After { point, .. } => point.as_str(),
                    Trigger::AtMs(_) => "",
                }
            );
        }
        faults.push(Fault {
            worker,
            when,
            action: Action::Crash {
                restart_after_ms: c.restart_after_ms,
            },
            duration_ms: 0,
        });
    }
    Ok(faults)
}

/// A running user program: its group is ended (reaper) on drop.
struct UserProc {
    name: String,
    child: Child,
    tag: String,
    output: Arc<Mutex<Vec<u8>>>,
    done: Option<std::process::ExitStatus>,
}

impl Drop for UserProc {
    fn drop(&mut self) {
        if self.done.is_none() {
            kill_group(self.child.id(), libc::SIGCONT);
            kill_group(self.child.id(), libc::SIGKILL);
        }
        reaper::end_node(self.child.id(), &self.tag);
        let _ = self.child.wait();
    }
}

impl UserProc {
    fn tail(&self) -> String {
        let out = locked(&self.output);
        let text = String::from_utf8_lossy(&out);
        let lines: Vec<&str> = text.lines().collect();
        let from = lines.len().saturating_sub(12);
        if lines.is_empty() {
            "(no output)".into()
        } else {
            lines[from..].join("\n    ")
        }
    }
}

/// Starts worker `i`'s program (`sh -c CMD`, its own process group) with
/// its environment; its output is kept for a failure's report.
fn spawn(cmd: &str, name: &str, env: &[(&'static str, String)]) -> Result<UserProc> {
    let tag = reaper::new_tag();
    let mut c = Command::new("sh");
    c.arg("-c")
        .arg(cmd)
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .env(reaper::TAG_VAR, &tag)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    std::os::unix::process::CommandExt::process_group(&mut c, 0);
    die_with_parent(&mut c);
    let mut child = c
        .spawn()
        .with_context(|| format!("starting worker {name} as `sh -c {cmd}`"))?;
    let output: Arc<Mutex<Vec<u8>>> = Arc::default();
    for stream in [
        child
            .stdout
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>),
        child
            .stderr
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>),
    ]
    .into_iter()
    .flatten()
    {
        let out = output.clone();
        std::thread::spawn(move || {
            let mut stream = stream;
            let mut buf = [0u8; 4096];
            while let Ok(k) = stream.read(&mut buf) {
                if k == 0 {
                    break;
                }
                let mut o = locked(&out);
                o.extend_from_slice(&buf[..k]);
                let excess = o.len().saturating_sub(64 * 1024);
                o.drain(..excess);
            }
        });
    }
    Ok(UserProc {
        name: name.to_string(),
        child,
        tag,
        output,
        done: None,
    })
}

/// Runs one trial of `cmd` as every worker of `s`. Call from the main thread
/// (the programs' parent-death signal is tied to the spawning thread).
pub fn run(
    s: &LiveScenario,
    cmd: &str,
    servers: &mut Servers,
    timeout: Duration,
) -> Result<TrialResult> {
    let (Some(redis), Some(_)) = (servers.redis.as_ref(), servers.postgres.as_ref()) else {
        bail!("--worker-cmd runs against the harness's own servers, not --redis/--postgres URLs");
    };
    let redis_upstream = format!("127.0.0.1:{}", redis.port);
    let pg_upstream = servers
        .pg
        .tcp
        .clone()
        .context("the harness's PostgreSQL listens on TCP")?;
    let faults = faults_of(s)?;
    servers.reset()?;
    // The run's schema: the program's unqualified `documents` resolves to it
    // through the search_path its URL carries.
    let mut pg = servers.pg_client()?;
    pg.batch_execute(CLIENT_AUDIT_SQL)
        .context("creating the client audit trigger")?;
    let n = s.workers.len();
    let t0 = Instant::now();
    let shared = Arc::new(Shared {
        names: s.workers.iter().map(|w| w.name.clone()).collect(),
        start_ms: s.workers.iter().map(|w| w.start_ms).collect(),
        seen: Mutex::default(),
        pgids: Mutex::new(vec![0; n]),
        fired: Mutex::new(vec![false; faults.len()]),
        faults,
        log: Mutex::default(),
        harness: Mutex::default(),
        killed: Mutex::new(vec![false; n]),
        restarts: Mutex::default(),
        started: Mutex::default(),
        first_acquire: Mutex::new(vec![None; n]),
        arrived: Mutex::new(vec![false; n]),
        backend_pids: Mutex::default(),
        ended: Default::default(),
    });
    let [lock_key, token_key] = servers.redis_keys();
    let mut proxies = Vec::new();
    let mut envs = Vec::new();
    let mut procs: Vec<UserProc> = Vec::new();
    for (i, w) in s.workers.iter().enumerate() {
        let sh = shared.clone();
        let redis_proxy =
            Proxy::start_observed(&redis_upstream, move || redis_observers(sh.clone(), i))?;
        let sh = shared.clone();
        let pg_proxy = Proxy::start_observed(&pg_upstream, move || pg_observers(sh.clone(), i))?;
        let env = vec![
            (
                "FENCESIM_REDIS_URL",
                format!("redis://127.0.0.1:{}/", redis_proxy.port),
            ),
            (
                "FENCESIM_POSTGRES_URL",
                format!(
                    "postgresql://postgres@127.0.0.1:{}/postgres?sslmode=disable&options=-csearch_path%3D{}",
                    pg_proxy.port, servers.schema
                ),
            ),
            ("FENCESIM_WORKER_ID", w.name.clone()),
            ("FENCESIM_LOCK_KEY", lock_key.clone()),
            ("FENCESIM_TOKEN_KEY", token_key.clone()),
            ("FENCESIM_DOC_ID", DOC_ID.to_string()),
            ("FENCESIM_OPS", "1".to_string()),
            ("FENCESIM_TTL_MS", s.ttl_ms.to_string()),
            ("FENCESIM_WORK_MS", s.work_ms.to_string()),
        ];
        let p = spawn(cmd, &w.name, &env)?;
        locked(&shared.pgids)[i] = p.child.id();
        procs.push(p);
        envs.push(env);
        proxies.push((redis_proxy, pg_proxy));
    }
    let deadline = t0 + timeout;
    let timed: Vec<usize> = (0..shared.faults.len())
        .filter(|&k| matches!(shared.faults[k].when, When::AtMs(_)))
        .collect();
    let end = |shared: &Shared| {
        shared
            .ended
            .store(true, std::sync::atomic::Ordering::SeqCst)
    };
    while procs.iter().any(|p| p.done.is_none()) || !locked(&shared.restarts).is_empty() {
        if super::interrupted() {
            end(&shared);
            bail!("interrupted");
        }
        let now = Instant::now();
        if now > deadline {
            end(&shared);
            let hung: Vec<String> = procs
                .iter()
                .filter(|p| p.done.is_none())
                .map(|p| {
                    format!(
                        "worker {} (`{cmd}`), last output:\n    {}",
                        p.name,
                        p.tail()
                    )
                })
                .collect();
            return Err(ClientFailed(format!(
                "the worker program did not finish within {} ms (a hang, not a protocol verdict): {}",
                timeout.as_millis(),
                hung.join("; ")
            ))
            .into());
        }
        // Time-based faults, from the trial's start.
        let started = *locked(&shared.started);
        for &k in &timed {
            let f = &shared.faults[k];
            let (When::AtMs(ms), Some((start, _))) = (f.when, started) else {
                continue;
            };
            if now < start + Duration::from_millis(ms) || locked(&shared.fired)[k] {
                continue;
            }
            locked(&shared.fired)[k] = true;
            if procs[f.worker].done.is_some() {
                locked(&shared.log).push(format!(
                    "worker/{} had already exited at {ms} ms (its fault did not strike)",
                    shared.names[f.worker]
                ));
                continue;
            }
            shared.fire(f, &format!("at_ms {ms}"));
        }
        // Restarts due: the same command and environment, a new process group.
        let due: Vec<usize> = {
            let mut r = locked(&shared.restarts);
            let due = r
                .iter()
                .filter(|(_, at)| *at <= now)
                .map(|(w, _)| *w)
                .collect();
            r.retain(|(_, at)| *at > now);
            due
        };
        for i in due {
            let p = spawn(cmd, &s.workers[i].name, &envs[i])?;
            locked(&shared.pgids)[i] = p.child.id();
            locked(&shared.killed)[i] = false;
            shared.harness_record(
                i,
                Kind::Restart,
                "the program started again with the same environment".into(),
            );
            locked(&shared.log).push(format!(
                "worker/{} restarted at {:.1} ms",
                s.workers[i].name,
                shared.since_start_ms()
            ));
            procs[i] = p;
        }
        for p in &mut procs {
            if p.done.is_none() {
                p.done = p.child.try_wait()?;
            }
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    end(&shared);
    let killed = locked(&shared.killed).clone();
    for (i, p) in procs.iter().enumerate() {
        let status = p.done.context("worker status")?;
        if !status.success() && !killed[i] {
            let faults = locked(&shared.log).clone();
            let note = if faults.is_empty() {
                String::new()
            } else {
                format!(" (faults this trial: {})", faults.join("; "))
            };
            return Err(ClientFailed(format!(
                "worker {} (`{cmd}`) {} — the program failed, not the protocol{note}; its last output:\n    {}",
                p.name,
                describe(status),
                p.tail()
            ))
            .into());
        }
    }
    let finished_ns: Vec<Option<u64>> = killed.iter().map(|k| (!k).then(monotonic_ns)).collect();
    drop(procs);
    drop(proxies);

    let audit: Vec<(i64, i32, i64, i64)> = pg
        .query(
            "SELECT commit_seq, backend_pid, body, token FROM client_audit ORDER BY commit_seq",
            &[],
        )?
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2), r.get(3)))
        .collect();
    let seen = locked(&shared.seen).clone();
    let pids = locked(&shared.backend_pids).clone();
    let (records, audit) = to_records(n, &seen, &pids, &audit, &finished_ns)?;
    let harness = locked(&shared.harness).clone();
    let history = build_history(
        &shared.names,
        LockKind::RedisSetNxCad,
        &records,
        &harness,
        &audit,
    )?;
    let report = check::check(&history);
    let faults = locked(&shared.log).clone();
    Ok(TrialResult {
        report,
        history,
        faults,
    })
}

fn describe(status: std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(c), _) => format!("exited with code {c}"),
        (_, Some(sig)) => format!("was killed by signal {sig}"),
        _ => format!("ended: {status}"),
    }
}

/// The op id of each decoded event (0 where none): worker i's n-th
/// operation is `(i+1)*1000 + n`. An operation is a read and the write
/// after it; a new one begins at a read after a read or a write, at a write
/// after an unanswered write (its program was restarted), and after a
/// write's answer or loss.
fn op_ids(n: usize, seen: &[(usize, u64, Seen)]) -> Vec<u64> {
    let op_of = |w: usize, k: u64| (w as u64 + 1) * 1000 + k + 1;
    let (mut count, mut used, mut writing) = (vec![0u64; n], vec![false; n], vec![false; n]);
    seen.iter()
        .map(|(w, _, what)| {
            let w = *w;
            match what {
                Seen::ReadSent => {
                    if used[w] {
                        count[w] += 1;
                        writing[w] = false;
                    }
                    used[w] = true;
                }
                Seen::WriteSent(_) => {
                    if writing[w] {
                        count[w] += 1;
                    }
                    used[w] = true;
                    writing[w] = true;
                }
                Seen::WriteDone(_) | Seen::WriteLost(_) => {
                    let op = op_of(w, count[w]);
                    count[w] += 1;
                    used[w] = false;
                    writing[w] = false;
                    return op;
                }
                _ => {}
            }
            op_of(w, count[w])
        })
        .collect()
}

/// The decoded conversation as the built-in workers' records, and the
/// audit rows as (commit_seq, op id, token) for [`build_history`].
/// `finished_ns`: when each worker's program ended (None: a crash fault
/// killed it and it stayed down, so it never finished its workload).
#[allow(clippy::type_complexity)]
fn to_records(
    n: usize,
    seen: &[(usize, u64, Seen)],
    pids: &BTreeMap<i32, usize>,
    audit: &[(i64, i32, i64, i64)],
    finished_ns: &[Option<u64>],
) -> Result<(Vec<(usize, Value)>, Vec<(i64, i64, i64)>)> {
    let ops = op_ids(n, seen);
    // Each worker's writes that applied, in its own order, with their body.
    let mut applied: Vec<VecDeque<(u64, u64, Vec<i64>)>> = vec![VecDeque::new(); n];
    let mut last_ints: Vec<Vec<i64>> = vec![Vec::new(); n];
    for (k, (w, t, what)) in seen.iter().enumerate() {
        match what {
            Seen::WriteSent(ints) => last_ints[*w] = ints.clone(),
            Seen::WriteDone(Some(rows)) if *rows > 0 => {
                applied[*w].push_back((ops[k], *t, last_ints[*w].clone()));
            }
            _ => {}
        }
    }
    // Commits in commit order, each matched to its writer's op; a read's
    // value (a body) names the latest commit of that body before it.
    let mut commits: Vec<(i64, i64, i64, u64)> = Vec::new();
    for (seq, pid, body, token) in audit {
        let Some(&w) = pids.get(pid) else {
            bail!("audit row {seq}: a write committed by backend {pid}, which no worker's connection opened");
        };
        let pos = applied[w]
            .iter()
            .position(|(_, _, ints)| ints.is_empty() || ints.contains(body))
            .with_context(|| {
                format!("audit row {seq}: worker {w} has no applied UPDATE of body {body}")
            })?;
        let (op, t, _) = applied[w].remove(pos).context("applied write")?;
        commits.push((*seq, op as i64, *token, t));
    }
    let bodies: Vec<(i64, u64, u64)> = audit
        .iter()
        .zip(&commits)
        .map(|((_, _, body, _), (_, op, _, t))| (*body, *op as u64, *t))
        .collect();
    let mut records = Vec::new();
    let mut token: Vec<Option<i64>> = vec![None; n];
    for (k, (w, t, what)) in seen.iter().enumerate() {
        let (w, t, op) = (*w, *t, ops[k]);
        let v = match what {
            Seen::AcquireSent => {
                token[w] = None;
                json!({"kind": "acquire_sent", "t_ns": t})
            }
            Seen::Granted(ttl_ms) => {
                // The token is the INCR answered next on this worker's
                // connection, before it asks for the lock again or lets go.
                let next = seen[k + 1..]
                    .iter()
                    .filter(|(x, _, _)| *x == w)
                    .take_while(|(_, _, s)| !matches!(s, Seen::AcquireSent | Seen::ReleaseSent))
                    .find_map(|(_, _, s)| match s {
                        Seen::Token(n) => Some(*n),
                        _ => None,
                    });
                token[w] = next;
                // The SET's reply passed the proxy at t: the lease runs
                // from there (build_history places its lease_expired).
                let mut v = json!({"kind": "grant_received", "t_ns": t, "set_ns": t});
                if let Some(tok) = next {
                    v["token"] = json!(tok);
                }
                if let Some(ttl) = ttl_ms {
                    v["ttl_ms"] = json!(ttl);
                }
                v
            }
            Seen::ReleaseSent => {
                // A release the server refused (NOSCRIPT: the client sends
                // the script itself next) released nothing.
                let refused = seen[k + 1..]
                    .iter()
                    .filter(|(x, _, _)| *x == w)
                    .find_map(|(_, _, s)| match s {
                        Seen::ReleaseDone(r) => Some(r.is_none()),
                        _ => None,
                    })
                    .unwrap_or(false);
                if refused {
                    continue;
                }
                json!({"kind": "release_sent", "t_ns": t})
            }
            // 1: the key was deleted (build_history's release_applied).
            Seen::ReleaseDone(Some(n)) => json!({"kind": "release_done", "t_ns": t, "value": n}),
            Seen::ReleaseDone(None) => continue,
            Seen::ReadSent => json!({"kind": "read_sent", "t_ns": t, "op": op}),
            Seen::ReadOk(body) => {
                let value = body.and_then(|b| {
                    bodies
                        .iter()
                        .filter(|(x, _, at)| *x == b && *at <= t)
                        .map(|(_, op, _)| *op)
                        .next_back()
                        .or((b == 0).then_some(0))
                });
                match value {
                    Some(v) => json!({"kind": "read_ok", "t_ns": t, "op": op, "value": v}),
                    None => json!({"kind": "read_ok", "t_ns": t, "op": op}),
                }
            }
            Seen::WriteSent(ints) => match token[w].filter(|tok| ints.contains(tok)) {
                Some(tok) => json!({"kind": "write_sent", "t_ns": t, "op": op, "token": tok}),
                None => json!({"kind": "write_sent", "t_ns": t, "op": op}),
            },
            Seen::WriteDone(rows) => match rows {
                Some(0) => {
                    json!({"kind": "write_acked", "t_ns": t, "op": op, "outcome": "rejected"})
                }
                Some(_) => json!({"kind": "write_acked", "t_ns": t, "op": op, "outcome": "ok"}),
                None => {
                    json!({"kind": "op_abandoned", "t_ns": t, "op": op, "detail": "the UPDATE failed"})
                }
            },
            Seen::WriteLost(why) => {
                json!({"kind": "op_abandoned", "t_ns": t, "op": op, "detail": why})
            }
            Seen::Token(_) => continue,
        };
        records.push((w, v));
    }
    for (w, t) in finished_ns.iter().enumerate() {
        if let Some(t) = t {
            records.push((w, json!({"kind": "workload_done", "t_ns": t})));
        }
    }
    let audit = commits
        .into_iter()
        .map(|(seq, op, token, _)| (seq, op, token))
        .collect();
    Ok((records, audit))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario(faults: &str) -> LiveScenario {
        let src = format!(
            "schema_version = 1\nname = \"t\"\ntwin = \"../scenarios/article/gc-pause-stale-write.toml\"\n\
             lock = \"redis-set-nx-cad\"\nwrite = \"plain\"\nttl_ms = 300\nworker_cmd = \"true\"\n\
             [[worker]]\nname = \"A\"\n[[worker]]\nname = \"B\"\n{faults}\n[expect]\n"
        );
        super::super::scenario::parse(&src, std::path::Path::new("live/t.toml")).unwrap()
    }

    #[test]
    fn crashes_drops_and_cuts_of_a_program_are_faults_and_a_redis_crash_is_refused() {
        let s = scenario(
            "[[fault]]\nkind = \"crash\"\nnode = \"worker/A\"\nafter = \"lock_granted\"\nrestart_after_ms = 5\n\
             [[fault]]\nkind = \"crash\"\nnode = \"worker/B\"\nat_ms = 40\n\
             [[fault]]\nkind = \"drop\"\nnode = \"worker/A\"\nmessage = \"update\"\nduration_ms = 9\n\
             [[fault]]\nkind = \"cut\"\nnode = \"worker/B\"\nmessage = \"update\"\n",
        );
        let f = faults_of(&s).unwrap();
        let got: Vec<(usize, When, Action)> =
            f.iter().map(|f| (f.worker, f.when, f.action)).collect();
        assert_eq!(
            got,
            vec![
                (0, When::At(Anchor::Write), Action::Drop),
                (1, When::At(Anchor::Write), Action::Cut),
                (
                    0,
                    When::At(Anchor::Granted),
                    Action::Crash {
                        restart_after_ms: Some(5)
                    }
                ),
                (
                    1,
                    When::AtMs(40),
                    Action::Crash {
                        restart_after_ms: None
                    }
                ),
            ]
        );
        let redis = scenario("[[fault]]\nkind = \"crash\"\nnode = \"coord/0\"\nat_ms = 40\n");
        let err = faults_of(&redis).unwrap_err().to_string();
        assert!(err.contains("coord/0 needs the built-in worker"), "{err}");
    }

    #[test]
    fn a_lost_write_ends_its_operation_and_a_restarted_program_reads_for_a_new_one() {
        let seen = vec![
            (0, 1, Seen::ReadSent),
            (0, 2, Seen::ReadOk(Some(0))),
            (0, 3, Seen::WriteSent(vec![1])),
            (0, 4, Seen::WriteLost("cut".into())),
            (0, 5, Seen::ReadSent),
            (0, 6, Seen::WriteSent(vec![1])),
            // Killed before the answer; the restarted program reads again.
            (0, 7, Seen::ReadSent),
            (0, 8, Seen::WriteSent(vec![1])),
            (0, 9, Seen::WriteDone(Some(1))),
            (1, 10, Seen::ReadSent),
        ];
        assert_eq!(
            op_ids(2, &seen),
            vec![1001, 1001, 1001, 1001, 1002, 1002, 1003, 1003, 1003, 2001]
        );
    }
}
