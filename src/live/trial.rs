//! One live trial: reset the servers, start the workers as processes, apply
//! the faults (pauses, crashes with restarts, a failover) at their protocol
//! points or times, collect every worker's records and PostgreSQL's audit
//! rows, and merge them into one history for the checker.
//!
//! How the history is made honest: invocations and completions come from
//! the workers (CLOCK_MONOTONIC, one clock for all processes); what landed
//! comes from the database (the audit trigger's rows in commit order), not
//! from a worker's belief. A `write_accepted` is placed at the latest of its
//! own `write_sent` and the previous commit's placement: the real commit
//! happened between its send and its answer, after the previous commit, so
//! this placement never runs ahead of reality and keeps commit order.
//! Redis does not report its grants, so `grant_issued` is recorded when the
//! worker's `SET … NX` came back OK (grants numbered in that order), just
//! before that worker's `grant_received`.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use serde_json::Value;

use super::proxy::Proxy;
use super::scenario::{CrashTarget, LiveCrash, LiveMemberDelay, LiveScenario, MemberSel, Trigger};
use super::servers::{die_with_parent, kill, Servers};
use super::{monotonic_ns, LockKind};
use crate::check::{self, Report};
use crate::history::{Event, History, Kind, Outcome};

/// What one trial did and what the checker made of it.
pub struct TrialResult {
    pub report: Report,
    pub history: History,
    /// One line per applied fault: what, when, how long the stop took to confirm.
    pub faults: Vec<String>,
}

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
    fn send(&mut self, line: &str) -> Result<()> {
        writeln!(self.stdin, "{line}").with_context(|| format!("writing to worker {}", self.name))
    }

    /// SIGKILL (a crash) and reap.
    fn crash(&mut self) {
        kill(self.child.id(), libc::SIGCONT);
        kill(self.child.id(), libc::SIGKILL);
        let _ = self.child.wait();
        self.reaped = true;
    }
}

/// Process state letter from /proc/<pid>/stat (`T` = stopped).
pub fn proc_state(pid: u32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The state follows the parenthesised command name, which may hold spaces.
    stat.rsplit_once(')')?.1.trim_start().chars().next()
}

/// SIGSTOP, then wait until the kernel reports the process stopped.
fn stop_confirmed(pid: u32) -> Result<Duration> {
    let start = Instant::now();
    kill(pid, libc::SIGSTOP);
    while start.elapsed() < Duration::from_secs(2) {
        if matches!(proc_state(pid), Some('T') | Some('t')) {
            return Ok(start.elapsed());
        }
        std::thread::yield_now();
    }
    bail!("worker {pid} not stopped 2 s after SIGSTOP")
}

/// Where a harness record belongs: a worker (by index) or a Redis server
/// (0 = the primary, 1 = the replica).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HarnessNode {
    Worker(usize),
    Coord(u16),
}

/// Something the harness did or saw (pause, resume, crash, restart,
/// failover), with its CLOCK_MONOTONIC time.
#[derive(Clone, Debug)]
pub struct HarnessRecord {
    pub node: HarnessNode,
    pub kind: Kind,
    pub t_ns: u64,
    pub detail: String,
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
    /// A time-triggered crash (index into the scenario's crashes).
    Crash(usize),
    /// A time-triggered member delay starts (index into the scenario's member delays).
    Delay(usize),
    /// Member delays end.
    Undelay,
    /// A SIGSTOPped member continues.
    ResumeMember(usize),
}

/// Makes the replica follow the primary through a proxy, waits until it has
/// synced (so it starts the trial with the primary's flushed state), then
/// cuts the link: whatever the primary does next never reaches the replica.
fn replicate_then_cut(servers: &mut Servers) -> Result<()> {
    let (Some(primary), Some(replica)) = (servers.redis.as_ref(), servers.replica.as_ref()) else {
        bail!("a failover needs the harness's own Redis primary and replica");
    };
    let link = Proxy::start(&format!("127.0.0.1:{}", primary.port), None)?;
    let mut replica = replica.connection()?;
    redis::cmd("REPLICAOF")
        .arg("127.0.0.1")
        .arg(link.port)
        .query::<()>(&mut replica)?;
    let start = Instant::now();
    loop {
        let info: String = redis::cmd("INFO").arg("replication").query(&mut replica)?;
        if info.contains("master_link_status:up") && info.contains("master_sync_in_progress:0") {
            break;
        }
        if start.elapsed() > Duration::from_secs(10) {
            bail!("replica did not sync with the primary within 10 s:\n{info}");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    link.cut();
    Ok(())
}

enum Msg {
    Line(usize, String),
    Eof(usize),
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
    tx: mpsc::Sender<Msg>,
}

impl Spawner<'_> {
    fn state_file(&self, i: usize) -> PathBuf {
        self.state_dir.join(format!("worker-{i}.state"))
    }

    /// Starts worker `i`; must run on the main thread (parent-death signal).
    fn spawn(&self, i: usize) -> Result<WorkerProc> {
        let (s, w) = (self.s, &self.s.workers[i]);
        let mut cmd = Command::new(self.exe);
        cmd.arg("live-worker")
            .args(["--name", &w.name])
            .args(["--redis", &self.redis_urls])
            .args(["--postgres", &self.conns[i]])
            .args(["--lock", s.lock.name(), "--write", s.write.name()])
            .args(["--ttl-ms", &s.ttl_ms.to_string()])
            .args(["--retry-ms", &s.retry_ms.to_string()])
            .args(["--work-ms", &s.work_ms.to_string()])
            .args(["--request-timeout-ms", &s.request_timeout_ms.to_string()])
            .args(["--index", &(i + 1).to_string()])
            .args(["--ops", &w.ops.to_string()])
            .args(["--schema", &self.schema])
            .args(["--key-prefix", &self.key_prefix])
            .arg("--state-file")
            .arg(self.state_file(i))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        if let Some(point) = s.gate_of(&w.name) {
            cmd.args(["--gate", point]);
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
        die_with_parent(&mut cmd);
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
pub fn run(
    s: &LiveScenario,
    servers: &mut Servers,
    exe: &Path,
    timeout: Duration,
) -> Result<TrialResult> {
    servers.reset()?;
    let cluster = match s.lock.cluster() {
        Some(kind) => servers.ensure_cluster(kind)?.endpoints(),
        None => Vec::new(),
    };
    let mut redis_urls = servers.redis_url.clone();
    if !s.failovers.is_empty() {
        replicate_then_cut(servers)?;
        if let Some(r) = servers.replica.as_ref() {
            redis_urls = format!("{redis_urls},{}", r.url());
        }
    }
    let (tx, rx) = mpsc::channel::<Msg>();
    let mut proxies = Vec::new();
    let mut conns = Vec::new();
    for w in &s.workers {
        let mut conn = servers.pg.conn_string(None);
        if let Some(n) = s.net.iter().find(|n| n.worker == w.name) {
            let upstream = servers.pg.tcp.clone().context(
                "a network fault needs PostgreSQL over TCP (the URL names only a Unix socket)",
            )?;
            let proxy = Proxy::start(&upstream, Some(("UPDATE documents", n.mode)))?;
            conn = servers.pg.conn_string(Some(proxy.port));
            proxies.push((w.name.clone(), proxy));
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
        pinned: !s.partitions.is_empty(),
        tx,
    };
    let mut procs = Vec::new();
    for i in 0..s.workers.len() {
        // A new trial's workers boot fresh: no record from the last trial's crash.
        let _ = std::fs::remove_file(spawner.state_file(i));
        procs.push(spawner.spawn(i)?);
    }

    let deadline = Instant::now() + timeout;
    let mut records: Vec<(usize, Value)> = Vec::new();
    let mut ready = 0;
    // Connection set-up is not part of the trial: start only when all are connected.
    while ready < procs.len() {
        match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok(Msg::Line(_, l)) if l.contains("\"ready\"") => ready += 1,
            Ok(Msg::Line(i, l)) => bail!("worker {} before ready: {l}", procs[i].name),
            Ok(Msg::Eof(i)) => bail!("worker {} exited before it was ready", procs[i].name),
            Err(_) => bail!("workers not ready within {} ms", timeout.as_millis()),
        }
    }
    let t0 = Instant::now();
    let t0_ns = monotonic_ns();
    let since_t0 = || t0.elapsed().as_secs_f64() * 1e3;
    let mut later: Vec<(Instant, Later)> = s
        .crashes
        .iter()
        .enumerate()
        .filter_map(|(k, c)| match c.trigger {
            Trigger::AtMs(ms) => Some((t0 + Duration::from_millis(ms), Later::Crash(k))),
            Trigger::After { .. } => None,
        })
        .chain(
            s.member_delays
                .iter()
                .enumerate()
                .filter_map(|(k, d)| match d.trigger {
                    Trigger::AtMs(ms) => Some((t0 + Duration::from_millis(ms), Later::Delay(k))),
                    Trigger::After { .. } => None,
                }),
        )
        .collect();
    let mut to_start: Vec<(u64, usize)> = s
        .workers
        .iter()
        .enumerate()
        .map(|(i, w)| (w.start_ms, i))
        .collect();
    to_start.sort();
    let mut to_start = to_start.into_iter().peekable();
    let mut faults = Vec::new();
    let mut harness: Vec<HarnessRecord> = Vec::new();
    // Faults at a protocol point fire once (a restarted worker passes it again).
    let (mut paused, mut failed_over, mut crashed, mut parted) = (
        vec![false; s.pauses.len()],
        vec![false; s.failovers.len()],
        vec![false; s.crashes.len()],
        vec![false; s.partitions.len()],
    );
    let mut delayed = vec![false; s.member_delays.len()];
    let mut open = procs.len();
    while open > 0 || !later.is_empty() {
        let now = Instant::now();
        if now > deadline {
            bail!("trial did not finish within {} ms", timeout.as_millis());
        }
        if super::interrupted() {
            bail!("interrupted");
        }
        while let Some(&(ms, i)) = to_start.peek() {
            if t0 + Duration::from_millis(ms) > now {
                break;
            }
            procs[i].send("start")?;
            to_start.next();
        }
        if let Some(pos) = later.iter().position(|(at, _)| *at <= now) {
            let (_, what) = later.remove(pos);
            match what {
                Later::Resume(i) => {
                    // Stamped before the signal: the worker may run (and record) at once.
                    harness.push(HarnessRecord {
                        node: HarnessNode::Worker(i),
                        kind: Kind::Resume,
                        t_ns: monotonic_ns(),
                        detail: "SIGCONT".into(),
                    });
                    kill(procs[i].child.id(), libc::SIGCONT);
                }
                Later::RestartWorker(i) => {
                    procs[i] = spawner.spawn(i)?;
                    open += 1;
                    faults.push(format!(
                        "worker/{} restarted at {:.1} ms",
                        procs[i].name,
                        since_t0()
                    ));
                }
                Later::RestartRedis => {
                    if let Some(r) = servers.redis.as_mut() {
                        r.ensure_running()?;
                    }
                    harness.push(HarnessRecord {
                        node: HarnessNode::Coord(0),
                        kind: Kind::Restart,
                        t_ns: monotonic_ns(),
                        detail: "redis-server restarted empty (no persistence)".into(),
                    });
                    faults.push(format!("coord/0 restarted at {:.1} ms", since_t0()));
                }
                Later::RestartMember(m) => {
                    if let Some(c) = servers.cluster.as_mut() {
                        c.restart(m)?;
                    }
                    harness.push(HarnessRecord {
                        node: HarnessNode::Coord(0),
                        kind: Kind::Restart,
                        t_ns: monotonic_ns(),
                        detail: format!("member/{m} restarted from its data directory"),
                    });
                    faults.push(format!("member/{m} restarted at {:.1} ms", since_t0()));
                }
                Later::Heal => {
                    if let Some(c) = servers.cluster.as_mut() {
                        c.heal();
                    }
                    harness.push(HarnessRecord {
                        node: HarnessNode::Coord(0),
                        kind: Kind::Heal,
                        t_ns: monotonic_ns(),
                        detail: "partition healed".into(),
                    });
                    faults.push(format!("healed at {:.1} ms", since_t0()));
                }
                Later::Delay(k) => {
                    delayed[k] = true;
                    let line = delay_members(&s.member_delays[k], servers, &mut later)?;
                    faults.push(format!("{line} at {:.1} ms", since_t0()));
                }
                Later::ResumeMember(m) => {
                    if let Some(c) = servers.cluster.as_mut() {
                        c.resume(m);
                    }
                    faults.push(format!(
                        "member/{m} continued (SIGCONT) at {:.1} ms",
                        since_t0()
                    ));
                }
                Later::Undelay => {
                    if let Some(c) = servers.cluster.as_mut() {
                        c.undelay();
                    }
                    faults.push(format!("member delay ended at {:.1} ms", since_t0()));
                }
                Later::Crash(k) => {
                    crashed[k] = true;
                    let c = &s.crashes[k];
                    crash(c, servers, &mut procs, &mut harness, &mut later)?;
                    faults.push(format!("{} at {:.1} ms", crash_line(c), since_t0()));
                }
            }
            continue;
        }
        // Wake at least every 50 ms to notice Ctrl-C.
        let mut next = deadline.min(now + Duration::from_millis(50));
        if let Some(&(ms, _)) = to_start.peek() {
            next = next.min(t0 + Duration::from_millis(ms));
        }
        for (at, _) in &later {
            next = next.min(*at);
        }
        match rx.recv_timeout(next.saturating_duration_since(now)) {
            // A restarted worker connected: it starts at once.
            Ok(Msg::Line(i, line)) if line.contains("\"ready\"") => {
                harness.push(HarnessRecord {
                    node: HarnessNode::Worker(i),
                    kind: Kind::Restart,
                    t_ns: monotonic_ns(),
                    detail: "process restarted from its state file".into(),
                });
                procs[i].send("start")?;
            }
            Ok(Msg::Line(i, line)) => {
                let v: Value = serde_json::from_str(&line)
                    .with_context(|| format!("worker {} wrote {line:?}", procs[i].name))?;
                let Some(step) = v.get("gate").and_then(Value::as_str) else {
                    if std::env::var_os("FENCESIM_LIVE_DEBUG").is_some() {
                        eprintln!("[{:.1} ms] worker {}: {line}", since_t0(), procs[i].name);
                    }
                    records.push((i, v));
                    continue;
                };
                let name = procs[i].name.clone();
                for (k, f) in s.failovers.iter().enumerate() {
                    if failed_over[k] || f.worker != name || f.after != step {
                        continue;
                    }
                    failed_over[k] = true;
                    let at = monotonic_ns();
                    let (Some(primary), Some(replica)) =
                        (servers.redis.as_mut(), servers.replica.as_ref())
                    else {
                        bail!("a failover needs the harness's own Redis");
                    };
                    primary.stop();
                    let mut con = replica.connection()?;
                    redis::cmd("REPLICAOF")
                        .arg("NO")
                        .arg("ONE")
                        .query::<()>(&mut con)?;
                    faults.push(format!(
                        "failover after worker/{name}'s {step} at {:.1} ms: primary SIGKILLed, replica promoted",
                        since_t0()
                    ));
                    harness.push(HarnessRecord {
                        node: HarnessNode::Coord(1),
                        kind: Kind::Failover,
                        t_ns: at,
                        detail: "primary SIGKILLed; REPLICAOF NO ONE".into(),
                    });
                }
                for (k, p) in s.partitions.iter().enumerate() {
                    if parted[k] || p.worker != name || p.after != step {
                        continue;
                    }
                    parted[k] = true;
                    let c = servers
                        .cluster
                        .as_mut()
                        .context("a partition needs the etcd or ZooKeeper cluster")?;
                    let m = resolve_member(c, p.member)?;
                    let at = monotonic_ns();
                    c.partition(m);
                    faults.push(format!(
                        "{} (member/{m}) cut off from the others after worker/{name}'s {step} for {} ms at {:.1} ms",
                        p.member,
                        p.duration_ms,
                        since_t0()
                    ));
                    harness.push(HarnessRecord {
                        node: HarnessNode::Coord(0),
                        kind: Kind::Partition,
                        t_ns: at,
                        detail: format!("member/{m} | the other members"),
                    });
                    later.push((
                        Instant::now() + Duration::from_millis(p.duration_ms),
                        Later::Heal,
                    ));
                }
                for (k, d) in s.member_delays.iter().enumerate() {
                    let here = matches!(&d.trigger, Trigger::After { worker, point } if *worker == name && point == step);
                    if delayed[k] || !here {
                        continue;
                    }
                    delayed[k] = true;
                    let line = delay_members(d, servers, &mut later)?;
                    faults.push(format!(
                        "{line} after worker/{name}'s {step} at {:.1} ms",
                        since_t0()
                    ));
                }
                let mut killed = false;
                for (k, c) in s.crashes.iter().enumerate() {
                    let here = matches!(&c.trigger, Trigger::After { worker, point } if *worker == name && point == step);
                    if crashed[k] || !here {
                        continue;
                    }
                    crashed[k] = true;
                    killed |= c.target == CrashTarget::Worker(name.clone());
                    crash(c, servers, &mut procs, &mut harness, &mut later)?;
                    faults.push(format!(
                        "{} after worker/{name}'s {step} at {:.1} ms",
                        crash_line(c),
                        since_t0()
                    ));
                }
                if killed {
                    continue;
                }
                for (k, p) in s.pauses.iter().enumerate() {
                    if paused[k] || p.worker != name || p.after != step {
                        continue;
                    }
                    paused[k] = true;
                    let pid = procs[i].child.id();
                    let confirm = stop_confirmed(pid)?;
                    let at = monotonic_ns();
                    faults.push(format!(
                        "pause worker/{} after {step} for {} ms at {:.1} ms (stop confirmed in {} us)",
                        p.worker,
                        p.duration_ms,
                        since_t0(),
                        confirm.as_micros()
                    ));
                    harness.push(HarnessRecord {
                        node: HarnessNode::Worker(i),
                        kind: Kind::Pause,
                        t_ns: at,
                        detail: format!("SIGSTOP for {} ms", p.duration_ms),
                    });
                    later.push((
                        Instant::now() + Duration::from_millis(p.duration_ms),
                        Later::Resume(i),
                    ));
                }
                // Answered while stopped: the worker reads it when it runs again.
                procs[i].send("go")?;
            }
            Ok(Msg::Eof(_)) => open -= 1,
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => open = 0,
        }
    }
    for p in &mut procs {
        if p.reaped {
            continue;
        }
        let status = p.child.wait()?;
        p.reaped = true;
        if !status.success() {
            bail!("worker {} failed: {status}", p.name);
        }
    }
    drop(procs);
    for (name, proxy) in &proxies {
        let log = proxy
            .log
            .lock()
            .map_err(|_| anyhow::anyhow!("proxy log poisoned"))?;
        for (at, what) in &log.events {
            faults.push(format!(
                "proxy: worker/{name}'s UPDATE {what} at {:.1} ms",
                (at.saturating_sub(t0_ns)) as f64 / 1e6
            ));
        }
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
    let history = build_history(&names, s.lock, &records, &harness, &audit)?;
    let report = check::check(&history);
    Ok(TrialResult {
        report,
        history,
        faults,
    })
}

fn crash_line(c: &LiveCrash) -> String {
    let what = match &c.target {
        CrashTarget::Worker(w) => format!("crash (SIGKILL) worker/{w}"),
        CrashTarget::RedisPrimary => "crash (SIGKILL) coord/0 (redis-server)".to_string(),
        CrashTarget::Member(m) => format!("crash (SIGKILL) {m}"),
    };
    match c.restart_after_ms {
        Some(ms) => format!("{what}, restart after {ms} ms,"),
        None => format!("{what}, no restart,"),
    }
}

/// Starts a member delay and schedules its end; the fault's line.
fn delay_members(
    d: &LiveMemberDelay,
    servers: &mut Servers,
    later: &mut Vec<(Instant, Later)>,
) -> Result<String> {
    let c = servers
        .cluster
        .as_mut()
        .context("a member delay needs the etcd or ZooKeeper cluster")?;
    let m = resolve_member(c, d.member)?;
    let end = Instant::now() + Duration::from_millis(d.for_ms);
    Ok(match d.by_ms {
        Some(by_ms) => {
            c.delay(m, by_ms);
            later.push((end, Later::Undelay));
            format!(
                "{} (member/{m})'s messages to and from the others held {by_ms} ms for {} ms",
                d.member, d.for_ms
            )
        }
        None => {
            c.pause(m);
            later.push((end, Later::ResumeMember(m)));
            format!("{} (member/{m}) SIGSTOPped for {} ms", d.member, d.for_ms)
        }
    })
}

/// SIGKILLs the crash's target, records it, and schedules its restart.
fn crash(
    c: &LiveCrash,
    servers: &mut Servers,
    procs: &mut [WorkerProc],
    harness: &mut Vec<HarnessRecord>,
    later: &mut Vec<(Instant, Later)>,
) -> Result<()> {
    let restart_at = c
        .restart_after_ms
        .map(|ms| Instant::now() + Duration::from_millis(ms));
    match &c.target {
        CrashTarget::Worker(w) => {
            let i = procs
                .iter()
                .position(|p| p.name == *w)
                .context("crash of an unknown worker")?;
            let at = monotonic_ns();
            procs[i].crash();
            harness.push(HarnessRecord {
                node: HarnessNode::Worker(i),
                kind: Kind::Crash,
                t_ns: at,
                detail: "SIGKILL".into(),
            });
            if let Some(t) = restart_at {
                later.push((t, Later::RestartWorker(i)));
            }
        }
        CrashTarget::RedisPrimary => {
            let r = servers
                .redis
                .as_mut()
                .context("a crash of coord/0 needs the harness's own Redis")?;
            let at = monotonic_ns();
            r.stop();
            harness.push(HarnessRecord {
                node: HarnessNode::Coord(0),
                kind: Kind::Crash,
                t_ns: at,
                detail: "SIGKILL (no persistence: the lock and the counter are gone)".into(),
            });
            if let Some(t) = restart_at {
                later.push((t, Later::RestartRedis));
            }
        }
        CrashTarget::Member(sel) => {
            let cluster = servers
                .cluster
                .as_mut()
                .context("a crash of a member needs the etcd or ZooKeeper cluster")?;
            let m = resolve_member(cluster, *sel)?;
            let at = monotonic_ns();
            cluster.kill(m);
            harness.push(HarnessRecord {
                node: HarnessNode::Coord(0),
                kind: Kind::Crash,
                t_ns: at,
                detail: format!("{sel}: member/{m} SIGKILLed (its data directory stays)"),
            });
            if let Some(t) = restart_at {
                later.push((t, Later::RestartMember(m)));
            }
        }
    }
    Ok(())
}

/// The member index a fault names (the leader: whichever leads now).
fn resolve_member(c: &super::cluster::Cluster, sel: MemberSel) -> Result<usize> {
    match sel {
        MemberSel::Index(i) => Ok(i),
        MemberSel::Leader => c
            .leader()
            .context("no member of the cluster reports a leader"),
    }
}

/// A record before it has its place in the merged order.
struct Pending {
    t_ns: u64,
    /// Tie-break at equal times: issue before receipt, worker records in their own order.
    rank: (u8, u64),
    event: Event,
}

/// The lease a delete on `server`, sent at `asked_ns` and answered at
/// `reply_ns`, removed, and the instant to place that removal at.
///
/// A lease set by its `SET … NX` request at `a` lives at least until
/// `a + ttl` (Redis started its TTL no earlier than the request). If such a
/// lease was alive when the delete was sent and not yet removed, no other
/// `SET … NX` could succeed until the delete ran, so a grant set while the
/// delete was in flight is later than the delete: the delete removed the
/// older lease, just before the newer grant. Without that certainty the
/// newest lease set before the reply is the one removed.
fn deleted_lease(
    leases: &[(u64, u16, u64, u64, u64)],
    removals: &[(u64, u16, u64)],
    lost_between: &dyn Fn(u16, u64, u64) -> bool,
    server: u16,
    asked_ns: u64,
    reply_ns: u64,
) -> Option<(u64, u64)> {
    let on_server = || leases.iter().filter(move |l| l.1 == server);
    let first_in_flight = on_server()
        .filter(|l| l.2 > asked_ns && l.2 <= reply_ns)
        .min_by_key(|l| l.2);
    let certainly_alive = on_server()
        .filter(|l| l.2 <= asked_ns)
        .max_by_key(|l| l.2)
        .filter(|l| {
            let ttl_ns = l.3 - l.2;
            let removed = removals.iter().any(|r| r.1 == server && r.2 == l.0);
            first_in_flight.is_some_and(|next| {
                !removed && !lost_between(server, l.2, next.2) && l.4 + ttl_ns >= next.2
            })
        });
    if let (Some(old), Some(next)) = (certainly_alive, first_in_flight) {
        return Some((old.0, next.2));
    }
    on_server()
        .filter(|l| l.2 <= reply_ns)
        .max_by_key(|l| l.2)
        .map(|l| (l.0, reply_ns))
}

fn field(v: &Value, name: &str) -> Option<u64> {
    v.get(name).and_then(Value::as_u64)
}

/// Merges worker records, the harness's records and audit rows into one
/// history. `audit` is (commit_seq, op_id, token) in commit order.
///
/// What the harness adds because Redis does not report it:
/// - `grant_issued` when a worker's `SET … NX` came back OK;
/// - `release_applied` when a release deleted the key (`DEL`/compare-and-
///   delete returned 1). The delete ran somewhere between its request and
///   its reply, and the proxy sees replies on different connections in an
///   order Redis need not have run them in. So the lease it removed is the
///   one it must have met: a lease still certainly alive when the delete was
///   sent blocked every `SET … NX` until the delete removed it, so a grant
///   set while the delete was in flight came after the delete (the delete is
///   placed just before that grant). Otherwise it is the newest grant set on
///   that server before the reply (only a successful `SET … NX` creates the
///   key);
/// - `lease_expired` at `set_ns + ttl` (the `SET`'s reply time plus the PX
///   TTL, on the one monotonic clock): Redis set the TTL before it replied,
///   so the key is certainly gone by then — unless a release deleted it, or
///   the server that held it crashed or was failed over, first (then it was
///   lost, not expired), or the run ended before that instant.
pub fn build_history(
    workers: &[String],
    lock: LockKind,
    records: &[(usize, Value)],
    harness: &[HarnessRecord],
    audit: &[(i64, i64, i64)],
) -> Result<History> {
    let resource = workers.len() as u16;
    let coord = resource + 1;
    let mut nodes: Vec<String> = workers.iter().map(|w| format!("worker/{w}")).collect();
    nodes.push("resource/0".into());
    nodes.push(if lock == LockKind::None {
        "resource/0-locks".into()
    } else {
        "coord/0".into()
    });
    // The replica, promoted in a failover scenario.
    nodes.push("coord/1".into());
    let mut out: Vec<Pending> = Vec::new();
    let mut grant_id = 0u64;
    // op id -> (write_sent t, write_acked t) to place the database's commits.
    let mut sent_at = std::collections::BTreeMap::new();
    let mut acked_at = std::collections::BTreeMap::new();
    // grant held by each worker, for release records.
    let mut held = std::collections::BTreeMap::new();
    // (grant, server, SET reply ns, expiry ns, SET request ns) of every Redis grant.
    let mut leases: Vec<(u64, u16, u64, u64, u64)> = Vec::new();
    // (reply ns, request ns, record index, releasing grant, server) of every release that deleted a lease.
    let mut deletions: Vec<(u64, u64, usize, Option<u64>, u16)> = Vec::new();
    // Each worker's latest acquire and release request.
    let mut asked_at = std::collections::BTreeMap::new();
    let mut release_asked_at = std::collections::BTreeMap::new();
    let last_ns = records
        .iter()
        .filter_map(|(_, v)| field(v, "t_ns"))
        .chain(harness.iter().map(|h| h.t_ns))
        .max()
        .unwrap_or(0);
    for (n, (i, v)) in records.iter().enumerate() {
        let Some(kind_name) = v.get("kind").and_then(Value::as_str) else {
            continue;
        };
        let t_ns = field(v, "t_ns").context("record without t_ns")?;
        let node = *i as u16;
        let mut e = Event::new(0, t_ns, node, Kind::AcquireSent);
        e.key = Some(0);
        e.op_id = field(v, "op");
        e.token = field(v, "token");
        e.value = field(v, "value");
        e.detail = v.get("detail").and_then(Value::as_str).map(str::to_string);
        // The server that answered: 0 = primary, 1 = the promoted replica.
        let server = (field(v, "server").unwrap_or(0) as u16).min(1);
        e.kind = match kind_name {
            "acquire_sent" => {
                asked_at.insert(*i, t_ns);
                Kind::AcquireSent
            }
            "grant_received" => {
                grant_id += 1;
                held.insert(*i, (grant_id, server));
                if let (Some(set), Some(ttl)) = (field(v, "set_ns"), field(v, "ttl_ms")) {
                    let asked = asked_at.get(i).copied().unwrap_or(set).min(set);
                    leases.push((grant_id, server, set, set + ttl * 1_000_000, asked));
                }
                let mut issued = Event::new(0, t_ns, coord + server, Kind::GrantIssued);
                issued.key = Some(0);
                issued.grant_id = Some(grant_id);
                issued.token = e.token;
                out.push(Pending {
                    t_ns,
                    rank: (0, n as u64),
                    event: issued,
                });
                e.op_id = None;
                e.grant_id = Some(grant_id);
                Kind::GrantReceived
            }
            "read_sent" => Kind::ReadSent,
            "read_ok" => Kind::ReadOk,
            "write_sent" => {
                if let Some(op) = e.op_id {
                    sent_at.entry(op).or_insert(t_ns);
                }
                Kind::WriteSent
            }
            "write_acked" => {
                let rejected = v.get("outcome").and_then(Value::as_str) == Some("rejected");
                e.outcome = Some(if rejected {
                    Outcome::Rejected
                } else {
                    Outcome::Ok
                });
                if let Some(op) = e.op_id {
                    acked_at.insert(op, t_ns);
                    if rejected {
                        // The database's answer: zero rows updated, no trigger fired.
                        let mut r = Event::new(0, t_ns, resource, Kind::WriteRejected);
                        r.key = Some(0);
                        r.op_id = Some(op);
                        r.token = e.token;
                        r.detail = Some("0 rows updated".into());
                        out.push(Pending {
                            t_ns,
                            rank: (1, n as u64),
                            event: r,
                        });
                    }
                }
                Kind::WriteAcked
            }
            "release_sent" => {
                release_asked_at.insert(*i, t_ns);
                e.grant_id = held.get(i).map(|(g, _)| *g);
                e.op_id = None;
                Kind::ReleaseSent
            }
            "release_done" if field(v, "value").unwrap_or(0) > 0 && lock != LockKind::None => {
                let mine = held.get(i).map(|(g, _)| *g);
                let server = held.get(i).map_or(0, |(_, s)| *s);
                let asked = release_asked_at.get(i).copied().unwrap_or(t_ns).min(t_ns);
                deletions.push((t_ns, asked, n, mine, server));
                continue;
            }
            "workload_done" => Kind::WorkloadDone,
            // A ZooKeeper watch fired and woke this worker: the server's notification.
            "watch_notified" => {
                let mut w = Event::new(0, t_ns, coord, Kind::WatchNotified);
                w.key = Some(0);
                w.detail = e.detail.take();
                out.push(Pending {
                    t_ns,
                    rank: (1, n as u64),
                    event: w,
                });
                continue;
            }
            "op_abandoned" => Kind::OpAbandoned,
            // fence_checked, release_done, moved, io_error, restarted: the worker's own log only.
            _ => continue,
        };
        if matches!(e.kind, Kind::WorkloadDone) {
            e.key = None;
        }
        out.push(Pending {
            t_ns,
            rank: (2, n as u64),
            event: e,
        });
    }
    // A server crash or failover loses its leases; it does not expire them.
    let lost_between = |server: u16, from: u64, to: u64| -> bool {
        harness.iter().any(|h| {
            let hits = match (h.kind, h.node) {
                (Kind::Crash, HarnessNode::Coord(s)) => s == server,
                // A failover kills the primary.
                (Kind::Failover, _) => server == 0,
                _ => false,
            };
            hits && h.t_ns > from && h.t_ns < to
        })
    };
    // The key each deletion removed, and when (see the doc comment).
    let mut removals: Vec<(u64, u16, u64)> = Vec::new();
    for (t_ns, asked, n, mine, server) in deletions {
        let (removed, at_ns, rank) =
            deleted_lease(&leases, &removals, &lost_between, server, asked, t_ns)
                .map_or((None, t_ns, 1), |(g, at)| {
                    (Some(g), at, if at < t_ns { 0 } else { 1 })
                });
        let mut r = Event::new(0, at_ns, coord + server, Kind::ReleaseApplied);
        r.key = Some(0);
        r.grant_id = mine;
        r.removed_grant_id = removed;
        if let Some(g) = removed {
            removals.push((at_ns, server, g));
        }
        out.push(Pending {
            t_ns: at_ns,
            rank: (rank, n as u64),
            event: r,
        });
    }
    for (n, &(grant, server, set, expiry, _)) in leases.iter().enumerate() {
        let removed_first = removals
            .iter()
            .any(|(t, s, g)| *g == grant && *s == server && *t < expiry);
        if removed_first || lost_between(server, set, expiry) || expiry > last_ns {
            continue;
        }
        let mut e = Event::new(0, expiry, coord + server, Kind::LeaseExpired);
        e.key = Some(0);
        e.grant_id = Some(grant);
        e.detail = Some("PX TTL elapsed since the SET's reply".into());
        out.push(Pending {
            t_ns: expiry,
            rank: (1, n as u64),
            event: e,
        });
    }
    for h in harness {
        let node = match h.node {
            HarnessNode::Worker(i) => i as u16,
            HarnessNode::Coord(s) => coord + s.min(1),
        };
        let mut e = Event::new(0, h.t_ns, node, h.kind);
        e.detail = Some(h.detail.clone());
        out.push(Pending {
            t_ns: h.t_ns,
            rank: (2, u64::MAX),
            event: e,
        });
    }
    let mut placed = 0u64;
    for (n, (commit_seq, op, token)) in audit.iter().enumerate() {
        let op = *op as u64;
        let Some(&sent) = sent_at.get(&op) else {
            bail!("audit row {commit_seq}: op {op} was never sent by a worker");
        };
        placed = placed.max(sent);
        if let Some(&acked) = acked_at.get(&op) {
            debug_assert!(placed <= acked, "commit placed after its answer");
        }
        let mut e = Event::new(0, placed, resource, Kind::WriteAccepted);
        e.key = Some(0);
        e.op_id = Some(op);
        e.value = Some(op);
        e.token = (*token != 0).then_some(*token as u64);
        e.detail = Some(format!("audit commit_seq {commit_seq}"));
        out.push(Pending {
            t_ns: placed,
            rank: (3, n as u64),
            event: e,
        });
    }
    out.sort_by_key(|p| (p.t_ns, p.rank));
    let base = out.first().map_or(0, |p| p.t_ns);
    let events = out
        .into_iter()
        .enumerate()
        .map(|(seq, mut p)| {
            p.event.seq = seq as u64 + 1;
            p.event.t_true_ns = p.t_ns - base;
            p.event
        })
        .collect();
    Ok(History {
        nodes,
        keys: vec!["doc".into()],
        events,
    })
}

/// Writes a history as JSON lines (docs/history.md).
pub fn write_history(h: &History, path: &PathBuf) -> Result<()> {
    let mut f = std::io::BufWriter::new(
        std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?,
    );
    crate::history::jsonl::write(h, &mut f)?;
    f.flush()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const MS: u64 = 1_000_000;

    fn rec(worker: usize, kind: &str, t_ms: u64) -> (usize, Value) {
        (worker, json!({"kind": kind, "t_ns": t_ms * MS}))
    }

    fn granted(worker: usize, t_ms: u64, token: u64) -> (usize, Value) {
        let t_ns = t_ms * MS;
        (
            worker,
            json!({"kind": "grant_received", "t_ns": t_ns, "set_ns": t_ns, "ttl_ms": 300, "token": token}),
        )
    }

    fn deleted(worker: usize, t_ms: u64) -> (usize, Value) {
        (
            worker,
            json!({"kind": "release_done", "t_ns": t_ms * MS, "value": 1}),
        )
    }

    fn unsafe_releases(lock: LockKind, records: &[(usize, Value)]) -> usize {
        let workers = ["A".to_string(), "B".to_string()];
        let h = build_history(&workers, lock, records, &[], &[]).expect("history");
        check::check(&h)
            .violations
            .iter()
            .filter(|v| v.kind == check::ViolationKind::UnsafeRelease)
            .count()
    }

    /// Seen on real Redis: B's compare-and-delete ran before A's `SET NX`
    /// (which could only succeed once B's key was gone), but its reply
    /// reached the proxy after A's grant.
    #[test]
    fn a_delete_whose_reply_overtakes_the_next_grant_removed_its_own_lease() {
        let records = [
            rec(1, "acquire_sent", 100),
            granted(1, 101, 1),
            rec(1, "release_sent", 200),
            rec(0, "acquire_sent", 200),
            granted(0, 201, 2),
            deleted(1, 202),
            rec(0, "release_sent", 300),
            deleted(0, 301),
        ];
        assert_eq!(unsafe_releases(LockKind::RedisSetNxCad, &records), 0);
    }

    /// The unsafe twin: B's lease expired, A took the lock, and only then
    /// did B's plain `DEL` go out: it deleted A's lock.
    #[test]
    fn a_delete_sent_after_its_lease_expired_and_the_next_grant_removed_that_grant() {
        let records = [
            rec(1, "acquire_sent", 100),
            granted(1, 101, 1),
            rec(0, "acquire_sent", 402),
            granted(0, 403, 2),
            rec(1, "release_sent", 410),
            deleted(1, 411),
        ];
        assert_eq!(unsafe_releases(LockKind::RedisSetNxDel, &records), 1);
    }
}
