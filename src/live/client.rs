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
//! (n = 0), a `DEL` or a one-key script a release. What committed comes
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
//! the write" holds the UPDATE it just sent. Workers' first acquisitions
//! are let through in their start order, `start_ms` apart, because program
//! start-up times vary more than the offsets a scenario needs.
//!
//! A program that exits non-zero, dies of a signal fencesim did not send,
//! or outlives the trial's timeout is reported as such ([`ClientFailed`]),
//! never as a protocol verdict; every process it started is ended by the
//! validate mode's reaper.

use std::collections::{BTreeMap, VecDeque};
use std::io::Read;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use serde_json::{json, Value};

use super::decode::{pgwire, resp};
use super::proxy::ProxyMode;
use super::proxy::{Observer, Proxy};
use super::scenario::LiveScenario;
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
}

#[derive(Clone, Debug)]
struct Fault {
    worker: usize,
    anchor: Anchor,
    action: Action,
    duration_ms: u64,
}

/// What the proxies saw one worker do, in the order they saw it.
#[derive(Clone, Debug)]
enum Seen {
    AcquireSent,
    Granted,
    Token(i64),
    ReleaseSent,
    ReadSent,
    ReadOk(Option<i64>),
    WriteSent(Vec<i64>),
    /// Rows updated (None: the statement failed).
    WriteDone(Option<u64>),
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
    pauses: Mutex<Vec<(usize, &'static str, u64, String)>>,
    /// When each worker's first acquisition was let through.
    first_acquire: Mutex<Vec<Option<Instant>>>,
    /// Which programs have asked for the lock (their first acquisition waits).
    arrived: Mutex<Vec<bool>>,
    backend_pids: Mutex<BTreeMap<i32, usize>>,
    t0_ns: u64,
    ended: std::sync::atomic::AtomicBool,
}

fn locked<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Shared {
    fn record(&self, worker: usize, what: Seen) {
        locked(&self.seen).push((worker, monotonic_ns(), what));
    }

    /// Applies the worker's fault at `anchor`, once, in the proxy thread.
    fn strike(&self, worker: usize, anchor: Anchor) {
        let Some(k) = self
            .faults
            .iter()
            .position(|f| f.worker == worker && f.anchor == anchor)
        else {
            return;
        };
        {
            let mut fired = locked(&self.fired);
            if fired[k] {
                return;
            }
            fired[k] = true;
        }
        let f = &self.faults[k];
        let at_ms = monotonic_ns().saturating_sub(self.t0_ns) as f64 / 1e6;
        let name = &self.names[worker];
        match f.action {
            Action::Delay => {
                locked(&self.log).push(format!(
                    "proxy held worker/{name}'s bytes at {anchor:?} for {} ms at {at_ms:.1} ms",
                    f.duration_ms
                ));
                std::thread::sleep(Duration::from_millis(f.duration_ms));
            }
            Action::Pause => {
                let pgid = locked(&self.pgids)[worker];
                if pgid == 0 || self.ended.load(std::sync::atomic::Ordering::SeqCst) {
                    return;
                }
                let start = Instant::now();
                kill_group(pgid, libc::SIGSTOP);
                while start.elapsed() < Duration::from_secs(2)
                    && !matches!(proc_state(pgid), Some('T') | Some('t'))
                {
                    std::thread::yield_now();
                }
                let stopped_ns = monotonic_ns();
                locked(&self.pauses).push((
                    worker,
                    "pause",
                    stopped_ns,
                    format!("SIGSTOP for {} ms", f.duration_ms),
                ));
                locked(&self.log).push(format!(
                    "pause worker/{name} at {anchor:?} for {} ms at {at_ms:.1} ms (stop confirmed in {} us)",
                    f.duration_ms,
                    start.elapsed().as_micros()
                ));
                std::thread::sleep(Duration::from_millis(f.duration_ms));
                if !self.ended.load(std::sync::atomic::Ordering::SeqCst) {
                    locked(&self.pauses).push((worker, "resume", monotonic_ns(), "SIGCONT".into()));
                    kill_group(pgid, libc::SIGCONT);
                }
            }
        }
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
        locked(&self.first_acquire)[worker].get_or_insert(Instant::now());
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
    });
    let to_client: Observer = Box::new(move |chunk| {
        for frame in down.push(chunk) {
            let Some(cmd) = locked(&p2).pop_front() else {
                continue;
            };
            match (cmd, resp::reply(&frame)) {
                (resp::Command::Acquire { .. }, resp::Reply::Ok) => {
                    s2.record(worker, Seen::Granted);
                    s2.strike(worker, Anchor::Granted);
                }
                (resp::Command::Incr { .. }, resp::Reply::Int(n)) => {
                    s2.record(worker, Seen::Token(n))
                }
                _ => {}
            }
        }
    });
    (to_server, to_client)
}

/// Observers for one PostgreSQL connection of `worker`.
fn pg_observers(shared: Arc<Shared>, worker: usize) -> (Observer, Observer) {
    let pending: Arc<Mutex<Pending>> = Arc::default();
    let (s2, p2) = (shared.clone(), pending.clone());
    let mut up = pgwire::Frontend::default();
    let mut down = pgwire::Backend::default();
    let to_server: Observer = Box::new(move |chunk| {
        for st in up.push(chunk) {
            if st.is_select_of("documents") {
                shared.record(worker, Seen::ReadSent);
            } else if st.is_update_of("documents") {
                shared.record(worker, Seen::WriteSent(st.integers()));
                shared.strike(worker, Anchor::Write);
            }
            locked(&pending).push_back((st, None));
        }
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

/// The scenario's faults as anchored client faults; those a user's program
/// cannot be given (a failover of the built-in worker's gate) are refused.
fn faults_of(s: &LiveScenario) -> Result<Vec<Fault>> {
    let index = |name: &str| s.workers.iter().position(|w| w.name == name).unwrap_or(0);
    if !s.failovers.is_empty() {
        bail!("{}: failover faults need the built-in worker; they are not supported with --worker-cmd", s.path.display());
    }
    let mut faults = Vec::new();
    for p in &s.pauses {
        let anchor = Anchor::from_point(&p.after)
            .with_context(|| format!("protocol point {:?} has no client anchor", p.after))?;
        faults.push(Fault {
            worker: index(&p.worker),
            anchor,
            action: Action::Pause,
            duration_ms: p.duration_ms,
        });
    }
    for h in &s.net {
        let ProxyMode::Hold { ms } = h.mode else {
            bail!(
                "{}: drop and cut faults need the built-in worker; with --worker-cmd a write can be held (kind = \"delay\")",
                s.path.display()
            );
        };
        faults.push(Fault {
            worker: index(&h.worker),
            anchor: Anchor::Write,
            action: Action::Delay,
            duration_ms: ms,
        });
    }
    if !s.crashes.is_empty() {
        bail!(
            "{}: crash faults need the built-in worker; they are not supported with --worker-cmd",
            s.path.display()
        );
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
        fired: Mutex::new(vec![false; s.pauses.len() + s.net.len()]),
        faults: faults_of(s)?,
        log: Mutex::default(),
        pauses: Mutex::default(),
        first_acquire: Mutex::new(vec![None; n]),
        arrived: Mutex::new(vec![false; n]),
        backend_pids: Mutex::default(),
        t0_ns: monotonic_ns(),
        ended: Default::default(),
    });
    let [lock_key, token_key] = servers.redis_keys();
    let mut proxies = Vec::new();
    let mut procs: Vec<UserProc> = Vec::new();
    for (i, w) in s.workers.iter().enumerate() {
        let sh = shared.clone();
        let redis_proxy =
            Proxy::start_observed(&redis_upstream, move || redis_observers(sh.clone(), i))?;
        let sh = shared.clone();
        let pg_proxy = Proxy::start_observed(&pg_upstream, move || pg_observers(sh.clone(), i))?;
        let tag = reaper::new_tag();
        let mut c = Command::new("sh");
        c.arg("-c")
            .arg(cmd)
            .env(
                "FENCESIM_REDIS_URL",
                format!("redis://127.0.0.1:{}/", redis_proxy.port),
            )
            .env(
                "FENCESIM_POSTGRES_URL",
                format!(
                    "postgresql://postgres@127.0.0.1:{}/postgres?sslmode=disable&options=-csearch_path%3D{}",
                    pg_proxy.port, servers.schema
                ),
            )
            .env("FENCESIM_WORKER_ID", &w.name)
            .env("FENCESIM_LOCK_KEY", &lock_key)
            .env("FENCESIM_TOKEN_KEY", &token_key)
            .env("FENCESIM_DOC_ID", DOC_ID.to_string())
            .env("FENCESIM_OPS", "1")
            .env("FENCESIM_TTL_MS", s.ttl_ms.to_string())
            .env("FENCESIM_WORK_MS", s.work_ms.to_string())
            .env(reaper::TAG_VAR, &tag)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        std::os::unix::process::CommandExt::process_group(&mut c, 0);
        die_with_parent(&mut c);
        let mut child = c
            .spawn()
            .with_context(|| format!("starting worker {} as `sh -c {cmd}`", w.name))?;
        locked(&shared.pgids)[i] = child.id();
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
        procs.push(UserProc {
            name: w.name.clone(),
            child,
            tag,
            output,
            done: None,
        });
        proxies.push((redis_proxy, pg_proxy));
    }
    let deadline = t0 + timeout;
    while procs.iter().any(|p| p.done.is_none()) {
        if super::interrupted() {
            shared
                .ended
                .store(true, std::sync::atomic::Ordering::SeqCst);
            bail!("interrupted");
        }
        if Instant::now() > deadline {
            shared
                .ended
                .store(true, std::sync::atomic::Ordering::SeqCst);
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
        for p in &mut procs {
            if p.done.is_none() {
                p.done = p.child.try_wait()?;
            }
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    shared
        .ended
        .store(true, std::sync::atomic::Ordering::SeqCst);
    for p in &procs {
        let status = p.done.context("worker status")?;
        if !status.success() {
            return Err(ClientFailed(format!(
                "worker {} (`{cmd}`) {} — the program failed, not the protocol; its last output:\n    {}",
                p.name,
                describe(status),
                p.tail()
            ))
            .into());
        }
    }
    let finished_ns: Vec<u64> = vec![monotonic_ns(); n];
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
    let pauses: Vec<HarnessRecord> = locked(&shared.pauses)
        .iter()
        .map(|(worker, what, t_ns, detail)| HarnessRecord {
            node: HarnessNode::Worker(*worker),
            kind: if *what == "pause" {
                Kind::Pause
            } else {
                Kind::Resume
            },
            t_ns: *t_ns,
            detail: detail.clone(),
        })
        .collect();
    let history = build_history(
        &shared.names,
        LockKind::RedisSetNxCad,
        &records,
        &pauses,
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

/// The decoded conversation as the built-in workers' records (one op id per
/// UPDATE a worker sends: worker i's n-th is `(i+1)*1000 + n`), and the
/// audit rows as (commit_seq, op id, token) for [`build_history`].
#[allow(clippy::type_complexity)]
fn to_records(
    n: usize,
    seen: &[(usize, u64, Seen)],
    pids: &BTreeMap<i32, usize>,
    audit: &[(i64, i32, i64, i64)],
    finished_ns: &[u64],
) -> Result<(Vec<(usize, Value)>, Vec<(i64, i64, i64)>)> {
    let op_of = |w: usize, k: u64| (w as u64 + 1) * 1000 + k + 1;
    // Each worker's writes that applied, in its own order, with their body.
    let mut applied: Vec<VecDeque<(u64, u64, Vec<i64>)>> = vec![VecDeque::new(); n];
    let mut ops = vec![0u64; n];
    let mut last_ints: Vec<Vec<i64>> = vec![Vec::new(); n];
    for (w, t, what) in seen {
        match what {
            Seen::WriteSent(ints) => last_ints[*w] = ints.clone(),
            Seen::WriteDone(rows) => {
                if rows.is_some_and(|r| r > 0) {
                    applied[*w].push_back((op_of(*w, ops[*w]), *t, last_ints[*w].clone()));
                }
                ops[*w] += 1;
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
    let mut ops = vec![0u64; n];
    let mut token: Vec<Option<i64>> = vec![None; n];
    for (k, (w, t, what)) in seen.iter().enumerate() {
        let (w, t) = (*w, *t);
        let op = op_of(w, ops[w]);
        let v = match what {
            Seen::AcquireSent => {
                token[w] = None;
                json!({"kind": "acquire_sent", "t_ns": t})
            }
            Seen::Granted => {
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
                match next {
                    Some(tok) => json!({"kind": "grant_received", "t_ns": t, "token": tok}),
                    None => json!({"kind": "grant_received", "t_ns": t}),
                }
            }
            Seen::ReleaseSent => json!({"kind": "release_sent", "t_ns": t}),
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
            Seen::WriteDone(rows) => {
                ops[w] += 1;
                match rows {
                    Some(0) => {
                        json!({"kind": "write_acked", "t_ns": t, "op": op, "outcome": "rejected"})
                    }
                    Some(_) => json!({"kind": "write_acked", "t_ns": t, "op": op, "outcome": "ok"}),
                    None => {
                        json!({"kind": "op_abandoned", "t_ns": t, "op": op, "detail": "the UPDATE failed"})
                    }
                }
            }
            Seen::Token(_) => continue,
        };
        records.push((w, v));
    }
    for (w, t) in finished_ns.iter().enumerate() {
        records.push((w, json!({"kind": "workload_done", "t_ns": t})));
    }
    let audit = commits
        .into_iter()
        .map(|(seq, op, token, _)| (seq, op, token))
        .collect();
    Ok((records, audit))
}
