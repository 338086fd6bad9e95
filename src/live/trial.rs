//! One trial of the built-in workers: reset the servers, start the workers
//! as processes, and decide *when* each fault strikes — at a worker's
//! protocol point (its gate: the worker prints `{"gate": step}` and waits)
//! or on the trial's timetable — while the fault executor
//! ([`super::faults`]) does it. The workers' records, the harness's records
//! and PostgreSQL's audit rows then become one history
//! ([`super::history`]) for the checker.
//!
//! Why a gate: a worker stopped right after its step returned, before it
//! can do anything else, is paused (or crashed, or its server failed over)
//! at exactly the protocol point the scenario names, however the machine's
//! load shifts the timings.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use super::cluster::Cluster;
use super::fault::executor::{crash_line, replicate_then_cut, FaultExecutor, MemberSlowdown};
use super::fault::{
    Action, Fault, MemberSel, NetMessage, PauseEnd, Point, Target, Trigger, WorkerId,
};
use super::history::{judge, TrialResult};
use super::phases::{Phase, Phases};
use super::process::{self, kill, Victim};
use super::proxy::{HoldRelease, Proxy, ProxyMode};
use super::record::{Line, Record, Stamped};
use super::scenario::LiveScenario;
use super::servers::Servers;

/// A worker process, killed (after SIGCONT: a stopped process ignores
/// SIGTERM) and reaped on drop — unless a crash fault already reaped it
/// (its pid may be someone else's by then).
struct WorkerProc {
    name: String,
    child: Child,
    stdin: ChildStdin,
    reaped: bool,
}

impl Drop for WorkerProc {
    fn drop(&mut self) {
        if self.reaped {
            return;
        }
        kill(self.child.id(), libc::SIGCONT);
        kill(self.child.id(), libc::SIGKILL);
        let _ = self.child.wait();
    }
}

impl WorkerProc {
    /// Tells the worker `line`. A worker a crash fault killed hears
    /// nothing (its restart is told again when it says it is ready), and
    /// one that exited meanwhile is not an error here: its end is judged
    /// from its output and exit status, as any worker's.
    fn send(&mut self, line: &str) -> Result<()> {
        if self.reaped {
            return Ok(());
        }
        match writeln!(self.stdin, "{line}") {
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
            r => r.with_context(|| format!("writing to worker {}", self.name)),
        }
    }

    /// Its process, for the fault executor's signals.
    fn victim(&self) -> Victim {
        Victim::Process(self.child.id())
    }

    /// Reaps it after a crash fault killed it.
    fn reap(&mut self) {
        let _ = self.child.wait();
        self.reaped = true;
    }
}

/// What the trial loop has to do later.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Later {
    Resume(usize),
    RestartWorker(usize),
    RestartRedis,
    /// A killed cluster member starts again from its data directory.
    RestartMember(usize),
    /// A partition of a cluster member ends.
    Heal,
    /// A time-triggered crash, member delay or member pause (index into
    /// the scenario's faults) strikes.
    Strike(usize),
    /// A member delay or pause ends.
    Unslow(MemberSlowdown),
}

impl Later {
    /// It ends a fault (undoes it) rather than starting one or a worker.
    fn is_an_end(&self) -> bool {
        match self {
            Later::Resume(_)
            | Later::RestartRedis
            | Later::RestartMember(_)
            | Later::Heal
            | Later::Unslow(_) => true,
            Later::RestartWorker(_) | Later::Strike(_) => false,
        }
    }
}

/// What a worker's stdout gave: a line (read as a [`Line`] where it is
/// used), or its end.
enum Msg {
    Line(usize, String),
    Eof(usize),
}

/// A worker's line, read; Err names the worker and the line.
fn read_line(name: &str, line: &str) -> Result<Line> {
    serde_json::from_str(line).with_context(|| format!("worker {name} wrote {line:?}"))
}

/// Everything needed to (re)start worker `i` as a process.
struct Spawner<'a> {
    s: &'a LiveScenario,
    exe: &'a Path,
    redis_urls: String,
    /// Per worker: its PostgreSQL connection string (through its proxy, if any).
    conns: Vec<String>,
    state_dir: PathBuf,
    schema: String,
    key_prefix: String,
    /// etcd / ZooKeeper client endpoints (worker i prefers member i mod 3).
    cluster: Vec<String>,
    /// Worker i talks to member i mod 3 only: when a member is cut off, the
    /// harness must know whose member it is (the ZooKeeper client shuffles
    /// the list it is given, so it is given one).
    pinned: bool,
    /// Which worker was pinned to the leader, for the trial's fault lines.
    pinned_note: Option<String>,
    tx: mpsc::Sender<Msg>,
}

impl Spawner<'_> {
    fn state_file(&self, i: usize) -> PathBuf {
        self.state_dir.join(format!("worker-{i}.state"))
    }

    /// Starts worker `i`; must run on the main thread (parent-death signal).
    fn spawn(&self, i: usize) -> Result<WorkerProc> {
        let (s, w) = (self.s, &self.s.workers[i]);
        let mut cmd = process::command(self.exe);
        cmd.arg("live-worker")
            .args(["--name", &w.name])
            .args(["--redis", &self.redis_urls])
            .args(["--postgres", &self.conns[i]])
            .args(["--lock", s.lock.name(), "--write", s.write.name()])
            .args(["--ttl-ms", &s.ttl_ms.to_string()])
            .args(["--retry-ms", &s.retry_ms.to_string()])
            .args(["--work-ms", &s.work_ms.to_string()])
            .args(["--request-timeout-ms", &s.request_timeout_ms.to_string()])
            .args(["--give-up-ms", &s.trial_limit_ms(15_000).to_string()])
            .args(["--index", &(i + 1).to_string()])
            .args(["--ops", &w.ops.to_string()])
            .args(["--document", &w.document.to_string()])
            .args(["--schema", &self.schema])
            .args(["--key-prefix", &self.key_prefix])
            .arg("--state-file")
            .arg(self.state_file(i))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        if let Some(point) = s.gate_of(WorkerId(i)) {
            cmd.args(["--gate", point.name()]);
        }
        if !self.cluster.is_empty() {
            let n = self.cluster.len();
            let take = if self.pinned { 1 } else { n };
            let mine: Vec<&str> = (0..take)
                .map(|k| self.cluster[(i + k) % n].as_str())
                .collect();
            cmd.args(["--cluster", &mine.join(",")]);
        }
        if s.lock == super::LockKind::ZkLock {
            cmd.args(["--zk-watch", s.zk_watch.name()]);
        }
        let mut child = cmd
            .spawn()
            .with_context(|| format!("starting worker {}", w.name))?;
        let stdout = child.stdout.take().context("worker stdout")?;
        let stdin = child.stdin.take().context("worker stdin")?;
        let tx = self.tx.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(Msg::Line(i, line)).is_err() {
                    return;
                }
            }
            let _ = tx.send(Msg::Eof(i));
        });
        Ok(WorkerProc {
            name: w.name.clone(),
            child,
            stdin,
            reaped: false,
        })
    }
}

/// Runs one trial. Must be called from the main thread (children's parent-death signal).
/// `phases` gets the trial's phase marks (reset … check; the caller ends it).
pub fn run(
    s: &LiveScenario,
    servers: &mut Servers,
    exe: &Path,
    timeout: Duration,
    phases: &mut Phases,
) -> Result<TrialResult> {
    if s.redis_masters > 1 {
        bail!(
            "{}: redis_masters = {} needs a worker_cmd (the built-in worker takes one Redis lock)",
            s.path.display(),
            s.redis_masters
        );
    }
    let timeout = Duration::from_millis(s.trial_limit_ms(timeout.as_millis() as u64));
    let (tx, rx) = mpsc::channel::<Msg>();
    let (spawner, proxies) = wire(s, servers, exe, tx, phases)?;
    phases.enter(Phase::Spawn);
    let (procs, deadline) = start_workers(&spawner, &rx, timeout)?;
    let mut t = Trial::new(s, servers, spawner, procs, rx, deadline, timeout);
    t.holds_until_other_op_done = (proxies.iter())
        .filter(|p| p.until == PauseEnd::OtherOpDone)
        .map(|p| (p.worker, p.proxy.hold_release()))
        .collect();
    phases.mark(t.t0, Phase::Run);
    t.run_to_end()?;
    t.reap()?;
    let Trial {
        exec,
        records,
        procs,
        mut fault_windows,
        workers_done,
        ..
    } = t;
    drop(procs);
    servers.end_worker_backends()?;
    let audit_at = Instant::now();
    phases.mark(audit_at, Phase::Audit);
    fault_windows.extend(proxy_windows(&proxies));
    phases.faults(fault_windows, audit_at);
    if let Some(done) = workers_done {
        phases.workers_done(done);
    }
    if let Some(t0_ns) = exec.started_ns() {
        proxy_lines(&exec, &proxies, t0_ns)?;
    }
    let mut pg = servers.pg_client()?;
    let audit: Vec<(i64, i64, i64)> = pg
        .query(
            "SELECT commit_seq, op_id, token FROM audit ORDER BY commit_seq",
            &[],
        )?
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2)))
        .collect();
    let names: Vec<String> = s.workers.iter().map(|w| w.name.clone()).collect();
    let documents: Vec<u32> = s.workers.iter().map(|w| w.document).collect();
    phases.enter(Phase::Check);
    judge(
        &names,
        &documents,
        s.lock,
        &records,
        &exec.harness(),
        &audit,
        exec.lines(),
    )
}

/// The trial's wiring before any worker runs: servers reset, the
/// cluster's endpoints, the failover's cut replica, a proxy in front of
/// PostgreSQL for each worker with a network fault.
fn wire<'a>(
    s: &'a LiveScenario,
    servers: &mut Servers,
    exe: &'a Path,
    tx: mpsc::Sender<Msg>,
    phases: &mut Phases,
) -> Result<(Spawner<'a>, Vec<ProxyFault>)> {
    phases.enter(Phase::Reset);
    servers.reset()?;
    let (cluster, pinned_note) = match s.lock.cluster() {
        Some(kind) => {
            // A cluster this trial starts is start-up; a running one's
            // repair and key deletion is reset.
            let starts = servers.cluster_starts(kind);
            phases.enter(if starts { Phase::Start } else { Phase::Reset });
            let cluster = servers.ensure_cluster(kind)?;
            // The wait for a steady leader is the cluster's verification.
            phases.enter(Phase::Reset);
            pinned_endpoints(s, cluster)?
        }
        None => (Vec::new(), None),
    };
    let mut redis_urls = servers.redis_url.clone();
    if s.faults.iter().any(|f| f.action == Action::Failover) {
        replicate_then_cut(servers)?;
        if let Some(r) = servers.replica.as_ref() {
            redis_urls = format!("{redis_urls},{}", r.url());
        }
    }
    let mut proxies = Vec::new();
    let mut conns = Vec::new();
    for (i, w) in s.workers.iter().enumerate() {
        let mut conn = servers.pg.conn_string(None);
        if let Some((mode, until)) = update_fault(s, WorkerId(i)) {
            let upstream = servers.pg.tcp.clone().context(
                "a network fault needs PostgreSQL over TCP (the URL names only a Unix socket)",
            )?;
            let proxy = Proxy::start(&upstream, Some(("UPDATE documents", mode)))?;
            conn = servers.pg.conn_string(Some(proxy.port));
            proxies.push(ProxyFault {
                name: w.name.clone(),
                worker: i,
                mode,
                until,
                proxy,
            });
        }
        conns.push(conn);
    }
    let spawner = Spawner {
        s,
        exe,
        redis_urls,
        conns,
        state_dir: servers.root.path.clone(),
        schema: servers.schema.clone(),
        key_prefix: servers.key_prefix.clone(),
        cluster,
        pinned: s
            .faults
            .iter()
            .any(|f| matches!(f.action, Action::Partition { .. })),
        pinned_note,
        tx,
    };
    Ok((spawner, proxies))
}

/// The cluster's endpoints in the order the workers are pinned to them
/// (worker i → endpoint i mod 3), and the pinning's fault line. A
/// partition of `member/leader` after a worker's step is a partition of
/// *that worker's* member when it leads: the list is turned so the
/// worker's endpoint is the member that leads now. "Now" is a leader the
/// members have agreed on for a whole second, every member serving: right
/// after a member rejoined (the previous trial's partition healed), cutting
/// the leader off left the other two without a leader for up to 3.5 s
/// (their election waits out notification timeouts), past the 4.5 s the
/// scenario leaves for an election and a session expiry.
fn pinned_endpoints(s: &LiveScenario, cluster: &Cluster) -> Result<(Vec<String>, Option<String>)> {
    let mut endpoints = cluster.endpoints();
    let holder = s.faults.iter().find_map(|f| match (f.trigger, f.action) {
        (
            Trigger::After { worker, .. },
            Action::Partition {
                member: MemberSel::Leader,
                ..
            },
        ) => Some(worker.0),
        _ => None,
    });
    let Some(i) = holder else {
        return Ok((endpoints, None));
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut since: Option<(usize, Instant)> = None;
    let leader = loop {
        let now = cluster.leader().filter(|_| cluster.all_serving());
        since = match (now, since) {
            (Some(l), Some((m, t))) if l == m => Some((m, t)),
            (Some(l), _) => Some((l, Instant::now())),
            (None, _) => None,
        };
        match since {
            Some((l, t)) if t.elapsed() >= Duration::from_secs(1) => break Some(l),
            _ if Instant::now() > deadline => break None,
            _ => std::thread::sleep(Duration::from_millis(100)),
        }
    }
    .context("no member led steadily for 1 s: cannot pin the partitioned leader's worker to it")?;
    let n = endpoints.len();
    endpoints.rotate_left((leader + n - i % n) % n);
    let note = format!(
        "worker/{} pinned to member/{leader} (leading at the start)",
        s.workers[i].name
    );
    Ok((endpoints, Some(note)))
}

/// Starts every worker and waits until all are connected: connection
/// set-up is not part of the trial. The trial's deadline comes with them.
fn start_workers(
    spawner: &Spawner,
    rx: &mpsc::Receiver<Msg>,
    timeout: Duration,
) -> Result<(Vec<WorkerProc>, Instant)> {
    let mut procs = Vec::new();
    for i in 0..spawner.s.workers.len() {
        // A new trial's workers boot fresh: no record from the last trial's crash.
        let _ = std::fs::remove_file(spawner.state_file(i));
        procs.push(spawner.spawn(i)?);
    }
    let deadline = Instant::now() + timeout;
    let mut ready = 0;
    while ready < procs.len() {
        match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok(Msg::Line(i, l)) => match read_line(&procs[i].name, &l)? {
                Line::Ready => ready += 1,
                _ => bail!("worker {} before ready: {l}", procs[i].name),
            },
            Ok(Msg::Eof(i)) => bail!("worker {} exited before it was ready", procs[i].name),
            Err(_) => bail!("workers not ready within {} ms", timeout.as_millis()),
        }
    }
    Ok((procs, deadline))
}

/// The timed faults' strikes, from the trial's start `t0`: crashes, then
/// member delays and pauses (at equal times in that order). The built-in
/// worker's own faults follow its points (the loader sees to it).
fn timetable(faults: &[Fault], t0: Instant) -> Vec<(Instant, Later)> {
    let timed = |crashes: bool| {
        faults.iter().enumerate().filter_map(move |(k, f)| {
            let crash = matches!(f.action, Action::Crash { .. });
            let ms = f.at_ms().filter(|_| crash == crashes)?;
            debug_assert!(matches!(
                f.action,
                Action::Crash { .. } | Action::SlowMember { .. }
            ));
            Some((t0 + Duration::from_millis(ms), Later::Strike(k)))
        })
    };
    timed(true).chain(timed(false)).collect()
}

/// The built-in worker's network fault: on its UPDATE, the one message
/// its PostgreSQL proxy acts on (the loader lets a reply's fault through
/// only for a user's program, and one fault per message).
fn update_fault(s: &LiveScenario, worker: WorkerId) -> Option<(ProxyMode, PauseEnd)> {
    s.faults.iter().find_map(|f| match f.action {
        Action::Net {
            worker: w,
            message,
            mode,
            until,
        } if w == worker => {
            assert_eq!(
                message,
                NetMessage::Update,
                "a reply's fault needs a program"
            );
            Some((mode, until))
        }
        _ => None,
    })
}

/// A worker's PostgreSQL proxy and the fault it applies.
struct ProxyFault {
    name: String,
    worker: usize,
    mode: ProxyMode,
    until: PauseEnd,
    proxy: Proxy,
}

/// Each proxy's fault as a window: from the first UPDATE it acted on, for
/// its hold's or drop window's length (a cut is an instant).
fn proxy_windows(proxies: &[ProxyFault]) -> Vec<(Instant, Instant)> {
    let (now, now_ns) = (Instant::now(), super::monotonic_ns());
    let mut out = Vec::new();
    for ProxyFault { mode, proxy, .. } in proxies {
        let (first_ns, ended_ns) = {
            let log = super::locked(&proxy.log);
            match log.events.first() {
                Some((ns, _)) => (*ns, log.hold_ended_ns),
                None => continue,
            }
        };
        // Instant and CLOCK_MONOTONIC are one clock on Linux: `now` less the age.
        let Some(from) = now.checked_sub(Duration::from_nanos(now_ns.saturating_sub(first_ns)))
        else {
            continue;
        };
        let ns = match (*mode, ended_ns) {
            // A hold released early (or late: the proxy's thread starved).
            (ProxyMode::Hold { .. }, Some(end)) => end.saturating_sub(first_ns),
            (ProxyMode::Hold { ms } | ProxyMode::Drop { ms }, _) => ms * 1_000_000,
            (ProxyMode::Cut, _) => 0,
        };
        out.push((from, from + Duration::from_nanos(ns)));
    }
    out
}

/// What each proxy did to its worker's UPDATE, as fault lines.
fn proxy_lines(exec: &FaultExecutor, proxies: &[ProxyFault], t0_ns: u64) -> Result<()> {
    for ProxyFault {
        name, until, proxy, ..
    } in proxies
    {
        let log = proxy
            .log
            .lock()
            .map_err(|_| anyhow::anyhow!("proxy log poisoned"))?;
        for (at, what) in &log.events {
            let what = match until {
                PauseEnd::OtherOpDone => what.replacen("held for", "held for at most", 1),
                PauseEnd::Elapsed => what.clone(),
            };
            exec.note(format!(
                "proxy: worker/{name}'s UPDATE {what} at {:.1} ms",
                (at.saturating_sub(t0_ns)) as f64 / 1e6
            ));
        }
        if let (PauseEnd::OtherOpDone, Some(end)) = (until, log.hold_ended_ns) {
            exec.note(format!(
                "proxy: worker/{name}'s UPDATE let through at {:.1} ms",
                (end.saturating_sub(t0_ns)) as f64 / 1e6
            ));
        }
    }
    Ok(())
}

/// A running trial: its workers, its timetable and what it has seen.
struct Trial<'a> {
    s: &'a LiveScenario,
    servers: &'a mut Servers,
    spawner: Spawner<'a>,
    procs: Vec<WorkerProc>,
    rx: mpsc::Receiver<Msg>,
    exec: FaultExecutor,
    records: Vec<(usize, Stamped)>,
    later: Vec<(Instant, Later)>,
    /// (start_ms, worker) of the workers not yet told to start, in order.
    to_start: Vec<(u64, usize)>,
    /// Per worker: its lock was granted, or its output closed — what a
    /// worker with `start_after` waits for before it starts.
    granted_or_gone: Vec<bool>,
    /// When a fault was in force: each strike or undo for as long as the
    /// executor took, each durational fault until its scheduled end
    /// ([`Phases::faults`]; measurement only).
    fault_windows: Vec<(Instant, Instant)>,
    /// Paused workers whose pause ends when another worker's operation
    /// ends (`until = "other_op_done"`), not only at its `duration_ms`.
    until_other_op_done: Vec<usize>,
    /// Workers whose held UPDATE (their proxy's hold) ends when another
    /// worker's operation ends, not only at its `duration_ms`.
    holds_until_other_op_done: Vec<(usize, HoldRelease)>,
    /// Workers whose output is still open.
    open: usize,
    /// When the last open output closed (None while one is open).
    workers_done: Option<Instant>,
    t0: Instant,
    deadline: Instant,
    timeout: Duration,
}

impl<'a> Trial<'a> {
    /// The trial starts now: the timetable of time-triggered faults and
    /// of the workers' starts is set from here.
    fn new(
        s: &'a LiveScenario,
        servers: &'a mut Servers,
        spawner: Spawner<'a>,
        procs: Vec<WorkerProc>,
        rx: mpsc::Receiver<Msg>,
        deadline: Instant,
        timeout: Duration,
    ) -> Trial<'a> {
        let t0 = Instant::now();
        let exec = FaultExecutor::new(s.faults.len());
        exec.start();
        if let Some(note) = &spawner.pinned_note {
            exec.note(note.clone());
        }
        let later = timetable(&s.faults, t0);
        let mut to_start: Vec<(u64, usize)> = s
            .workers
            .iter()
            .enumerate()
            .map(|(i, w)| (w.start_ms, i))
            .collect();
        to_start.sort();
        Trial {
            s,
            servers,
            spawner,
            open: procs.len(),
            workers_done: None,
            procs,
            rx,
            exec,
            records: Vec::new(),
            later,
            to_start,
            granted_or_gone: vec![false; s.workers.len()],
            fault_windows: Vec::new(),
            until_other_op_done: Vec::new(),
            holds_until_other_op_done: Vec::new(),
            t0,
            deadline,
            timeout,
        }
    }

    /// Until every worker's output is closed and nothing is left to do.
    fn run_to_end(&mut self) -> Result<()> {
        while self.open > 0 || !self.later.is_empty() {
            let now = Instant::now();
            if now > self.deadline {
                bail!(
                    "trial did not finish within {} ms",
                    self.timeout.as_millis()
                );
            }
            if super::interrupted() {
                bail!("interrupted");
            }
            self.start_due(now)?;
            if let Some(pos) = self.later.iter().position(|(at, _)| *at <= now) {
                let (at, what) = self.later.remove(pos);
                let n = self.later.len();
                self.do_later(what)?;
                // A fault's end was due at `at`: it lasted until it was undone.
                self.fault_window(at.min(now), n);
                continue;
            }
            let wake = self.next_wake(now);
            match self.rx.recv_timeout(wake.saturating_duration_since(now)) {
                Ok(Msg::Line(i, line)) => self.on_line(i, &line)?,
                Ok(Msg::Eof(i)) => {
                    self.open -= 1;
                    self.granted_or_gone[i] = true;
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => self.open = 0,
            }
            if self.open == 0 {
                self.workers_done.get_or_insert_with(Instant::now);
                self.end_faults_early();
            }
        }
        Ok(())
    }

    /// Every worker has finished and none is due to start: nothing is left
    /// to observe, so the faults' scheduled ends (a heal, a member's
    /// restart or resume, a delay's end) are done now instead of waited
    /// for — the trial's tail was pure waiting (docs/live.md, "Where a live
    /// trial's time goes"). Only when every entry left is such an end: a
    /// worker's restart or a fault still to strike keeps the timetable.
    fn end_faults_early(&mut self) {
        if !self.to_start.is_empty() || !self.later.iter().all(|(_, w)| w.is_an_end()) {
            return;
        }
        let now = Instant::now();
        let mut moved = false;
        for (at, _) in self.later.iter_mut().filter(|(at, _)| *at > now) {
            *at = now;
            moved = true;
        }
        if moved {
            self.exec.note(format!(
                "every worker finished at {:.1} ms: the faults ended then",
                self.exec.since_start_ms()
            ));
        }
    }

    /// Tells the workers whose start time has come, and whose
    /// `start_after` worker holds the lock (or is gone), to start.
    fn start_due(&mut self, now: Instant) -> Result<()> {
        let (t0, s, gate) = (self.t0, self.s, &self.granted_or_gone);
        let ready = |&(ms, i): &(u64, usize)| {
            t0 + Duration::from_millis(ms) <= now
                && s.workers[i].start_after_grant_of.is_none_or(|j| gate[j])
        };
        let (due, waiting): (Vec<_>, Vec<_>) = self.to_start.iter().partition(|e| ready(e));
        self.to_start = waiting;
        for (_, i) in due {
            self.procs[i].send("start")?;
        }
        Ok(())
    }

    /// When to look again: the next start or timetable entry, at least
    /// every 50 ms to notice Ctrl-C. A start that waits for a grant is
    /// looked at again when a line arrives.
    fn next_wake(&mut self, now: Instant) -> Instant {
        let mut next = self.deadline.min(now + Duration::from_millis(50));
        if let Some(&(ms, _)) = self.to_start.first() {
            next = next.min(self.t0 + Duration::from_millis(ms));
        }
        for (at, _) in &self.later {
            next = next.min(*at);
        }
        next
    }

    fn do_later(&mut self, what: Later) -> Result<()> {
        match what {
            Later::Resume(i) => self.exec.resume_worker(i, self.procs[i].victim()),
            Later::RestartWorker(i) => {
                self.procs[i] = self.spawner.spawn(i)?;
                self.open += 1;
                self.workers_done = None;
                self.exec.restart_noted(&self.procs[i].name);
            }
            Later::RestartRedis => self.exec.restart_redis(self.servers)?,
            Later::RestartMember(m) => self.exec.restart_member(self.servers, m)?,
            Later::Heal => self.exec.heal(self.servers),
            Later::Strike(k) => {
                let claimed = self.exec.claim(k);
                debug_assert!(claimed, "a timed fault is on the timetable once");
                match self.s.faults[k].action {
                    Action::SlowMember { .. } => self.slow_member(k, "")?,
                    _ => self.crash(k, "")?,
                }
            }
            Later::Unslow(undo) => self.exec.unslow_member(self.servers, undo),
        }
        Ok(())
    }

    /// A fault struck (or was undone) from `from` until now; what the
    /// timetable got since it had `n` entries are the ends it scheduled.
    fn fault_window(&mut self, from: Instant, n: usize) {
        self.fault_windows.push((from, Instant::now()));
        let ends: Vec<Instant> = self.later[n.min(self.later.len())..]
            .iter()
            .map(|(at, _)| *at)
            .collect();
        self.fault_windows
            .extend(ends.into_iter().map(|at| (from, at)));
    }

    /// A worker's line: a record, its gate (it stopped at a protocol
    /// point), or a restarted worker connected (it starts at once).
    fn on_line(&mut self, i: usize, line: &str) -> Result<()> {
        let stamped = match read_line(&self.procs[i].name, line)? {
            Line::Ready => {
                self.exec
                    .restart_recorded(i, "process restarted from its state file");
                return self.procs[i].send("start");
            }
            Line::Gate { point } => return self.at_gate(i, point),
            Line::Record(stamped) => stamped,
        };
        if std::env::var_os("FENCESIM_LIVE_DEBUG").is_some() {
            eprintln!(
                "[{:.1} ms] worker {}: {line}",
                self.exec.since_start_ms(),
                self.procs[i].name
            );
        }
        // A failed request the worker retried (a lock request whose
        // member died under it) is in no history event: its fault
        // line says it happened.
        if let Record::IoError { detail, .. } = &stamped.record {
            self.exec.note(format!(
                "worker/{}: {detail} at {:.1} ms",
                self.procs[i].name,
                self.exec.since_start_ms()
            ));
        }
        if matches!(stamped.record, Record::GrantReceived { .. }) {
            self.granted_or_gone[i] = true;
        }
        if matches!(
            stamped.record,
            Record::ReleaseDone { .. } | Record::OpAbandoned { .. } | Record::WorkloadDone
        ) {
            self.end_pauses_at_op_end(i);
        }
        self.records.push((i, stamped));
        Ok(())
    }

    /// Worker `i`'s operation ended (its release answered, the op given
    /// up, its workload done): the pauses of other workers on its document
    /// that last until then end now — their `resume` moves up from the end of their
    /// `duration_ms`.
    fn end_pauses_at_op_end(&mut self, i: usize) {
        // A worker on another document takes another lock: its operation
        // ending says nothing about the paused worker's.
        let doc = self.s.workers[i].document;
        let (ending, waiting): (Vec<usize>, Vec<usize>) = (self.until_other_op_done.iter())
            .partition(|&&p| p != i && self.s.workers[p].document == doc);
        self.until_other_op_done = waiting;
        let workers = &self.s.workers;
        self.holds_until_other_op_done.retain(|(p, release)| {
            let ends = *p != i && workers[*p].document == doc;
            if ends {
                release.release();
            }
            !ends
        });
        let now = Instant::now();
        for p in ending {
            let Some(entry) = self.later.iter_mut().find(|(_, w)| *w == Later::Resume(p)) else {
                continue;
            };
            let scheduled = entry.0;
            entry.0 = scheduled.min(now);
            // The pause's fault window ends now too, not at its longest.
            for w in self.fault_windows.iter_mut().filter(|w| w.1 == scheduled) {
                w.1 = now;
            }
            self.exec.note(format!(
                "worker/{}'s pause ends at {:.1} ms: worker/{}'s operation ended",
                self.procs[p].name,
                self.exec.since_start_ms(),
                self.procs[i].name
            ));
        }
    }

    /// Worker `i` stopped right after `step`: its faults strike
    /// ([`Trial::strike_at_gate`]), timed as a fault window if any did.
    fn at_gate(&mut self, i: usize, step: Point) -> Result<()> {
        let (from, n, fired) = (Instant::now(), self.later.len(), self.exec.struck());
        let r = self.strike_at_gate(i, step);
        if self.exec.struck() > fired {
            self.fault_window(from, n);
        }
        r
    }

    /// Worker `i` stopped right after `step`: the faults that follow it
    /// strike now, in [`Fault::gate_order`] (the servers' faults, then
    /// crashes, then its pause), each once; the worker is told to go on
    /// (it reads that once it runs again).
    fn strike_at_gate(&mut self, i: usize, step: Point) -> Result<()> {
        let s = self.s;
        let name = self.procs[i].name.clone();
        let after = format!("after worker/{name}'s {}", step.name());
        let mut here: Vec<usize> = (0..s.faults.len())
            .filter(|&k| s.faults[k].gate() == Some((WorkerId(i), step)))
            .collect();
        here.sort_by_key(|&k| s.faults[k].gate_order());
        let mut killed = false;
        for k in here {
            let f = s.faults[k];
            // A worker a crash just killed is not paused.
            if killed && matches!(f.action, Action::Pause { .. }) || !self.exec.claim(k) {
                continue;
            }
            killed |= matches!(
                f.action,
                Action::Crash { target: Target::Worker(w), .. } if w == WorkerId(i)
            );
            self.strike(k, i, step, &after)?;
        }
        if killed {
            return Ok(());
        }
        // Answered while stopped: the worker reads it when it runs again.
        self.procs[i].send("go")
    }

    /// Fault `k`, claimed, strikes at worker `i`'s gate `step`.
    fn strike(&mut self, k: usize, i: usize, step: Point, after: &str) -> Result<()> {
        let f = self.s.faults[k];
        match f.action {
            Action::Failover => self.exec.failover(k, self.servers, after)?,
            Action::Partition {
                member,
                duration_ms,
            } => {
                self.exec
                    .partition(k, self.servers, (member, duration_ms), after)?;
                let end = Instant::now() + Duration::from_millis(duration_ms);
                self.later.push((end, Later::Heal));
            }
            Action::CutLock { refuse_ms, .. } => {
                let (name, pid) = (self.procs[i].name.clone(), self.procs[i].child.id());
                self.exec
                    .cut_lock(k, self.servers, (i, &name, pid), refuse_ms, after)?;
                // The member refuses the worker for `refuse_ms`: the fault's length.
                let now = Instant::now();
                let refused = now + Duration::from_millis(refuse_ms);
                self.fault_windows.push((now, refused));
            }
            Action::SlowMember { .. } => self.slow_member(k, &format!(" {after}"))?,
            Action::Crash { .. } => self.crash(k, &format!(" {after}"))?,
            Action::Pause {
                duration_ms, until, ..
            } => {
                let (name, victim) = (self.procs[i].name.clone(), self.procs[i].victim());
                let at = format!("after {}", step.name());
                self.exec
                    .pause_worker(k, i, &name, victim, &at, duration_ms)?;
                let end = Instant::now() + Duration::from_millis(duration_ms);
                self.later.push((end, Later::Resume(i)));
                if until == PauseEnd::OtherOpDone {
                    self.until_other_op_done.push(i);
                }
            }
            // The built-in worker's network faults are its proxy's.
            Action::Net { .. } => {}
        }
        Ok(())
    }

    /// Starts member delay or pause `k` (`at`: where it struck) and
    /// schedules its end.
    fn slow_member(&mut self, k: usize, at: &str) -> Result<()> {
        let f = &self.s.faults[k];
        let undo = self.exec.slow_member((k, f), self.servers, at)?;
        let end = Instant::now() + Duration::from_millis(f.length_ms(self.s.ttl_ms));
        self.later.push((end, Later::Unslow(undo)));
        Ok(())
    }

    /// Crash `k` (`at`: where it struck, "" at a time): the executor kills
    /// its target; the restart is scheduled here.
    fn crash(&mut self, k: usize, at: &str) -> Result<()> {
        let f = self.s.faults[k];
        let Action::Crash {
            target,
            restart_after_ms,
        } = f.action
        else {
            bail!("fault {k} crashes nothing");
        };
        let restart_at = restart_after_ms.map(|ms| Instant::now() + Duration::from_millis(ms));
        let node = match target {
            Target::Worker(w) => format!("worker/{}", self.s.workers[w.0].name),
            _ => String::new(),
        };
        let restart = match target {
            Target::Worker(w) => {
                let i = w.0;
                self.exec.crash_worker(k, i, self.procs[i].victim());
                self.procs[i].reap();
                Later::RestartWorker(i)
            }
            Target::RedisPrimary => {
                self.exec.crash_redis(k, self.servers)?;
                Later::RestartRedis
            }
            Target::Member(sel) => {
                Later::RestartMember(self.exec.crash_member(k, self.servers, sel)?)
            }
        };
        if let Some(t) = restart_at {
            self.later.push((t, restart));
        }
        self.exec.note(format!(
            "{}{at} at {:.1} ms",
            crash_line(target, &node, restart_after_ms),
            self.exec.since_start_ms()
        ));
        Ok(())
    }

    /// Every worker reaped; one that failed fails the trial.
    fn reap(&mut self) -> Result<()> {
        for p in &mut self.procs {
            if p.reaped {
                continue;
            }
            let status = p.child.wait()?;
            p.reaped = true;
            if !status.success() {
                bail!("worker {} failed: {status}", p.name);
            }
        }
        Ok(())
    }
}
