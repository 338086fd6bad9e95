//! One live trial: reset the servers, start the workers as processes, apply
//! the pauses at their protocol points, collect every worker's records and
//! PostgreSQL's audit rows, and merge them into one history for the checker.
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
use super::scenario::LiveScenario;
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
/// SIGTERM) and reaped on drop.
struct WorkerProc {
    name: String,
    child: Child,
    stdin: ChildStdin,
}

impl Drop for WorkerProc {
    fn drop(&mut self) {
        kill(self.child.id(), libc::SIGCONT);
        kill(self.child.id(), libc::SIGKILL);
        let _ = self.child.wait();
    }
}

impl WorkerProc {
    fn send(&mut self, line: &str) -> Result<()> {
        writeln!(self.stdin, "{line}").with_context(|| format!("writing to worker {}", self.name))
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

/// Marks a failover record in the fault list (its node is the promoted replica).
const FAILOVER: usize = usize::MAX;

/// Makes the replica follow the primary through a proxy, waits until it has
/// synced (so it starts the trial with the primary's flushed state), then
/// cuts the link: whatever the primary does next never reaches the replica.
fn replicate_then_cut(servers: &mut Servers) -> Result<()> {
    let link = Proxy::start(servers.redis.port, None)?;
    let mut replica = servers.replica.connection()?;
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

/// Runs one trial. Must be called from the main thread (children's parent-death signal).
pub fn run(
    s: &LiveScenario,
    servers: &mut Servers,
    exe: &Path,
    timeout: Duration,
) -> Result<TrialResult> {
    servers.reset()?;
    let mut redis_urls = servers.redis.url();
    if !s.failovers.is_empty() {
        replicate_then_cut(servers)?;
        redis_urls = format!("{},{}", servers.redis.url(), servers.replica.url());
    }
    let (tx, rx) = mpsc::channel::<Msg>();
    let mut procs = Vec::new();
    let mut proxies = Vec::new();
    for (i, w) in s.workers.iter().enumerate() {
        let mut conn = servers.postgres.conn_string();
        if let Some(h) = s.holds.iter().find(|h| h.worker == w.name) {
            let proxy = Proxy::start(
                servers.postgres.port,
                Some(("UPDATE documents", h.duration_ms)),
            )?;
            conn = format!(
                "host=127.0.0.1 port={} user=postgres dbname=postgres sslmode=disable",
                proxy.port
            );
            proxies.push((w.name.clone(), proxy));
        }
        let mut cmd = Command::new(exe);
        cmd.arg("live-worker")
            .args(["--name", &w.name])
            .args(["--redis", &redis_urls])
            .args(["--postgres", &conn])
            .args(["--lock", s.lock.name(), "--write", s.write.name()])
            .args([
                "--ttl-ms",
                &s.ttl_ms.to_string(),
                "--retry-ms",
                &s.retry_ms.to_string(),
            ])
            .args(["--work-ms", &s.work_ms.to_string()])
            .args(["--index", &(i + 1).to_string()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        let gate = s.pauses.iter().map(|p| (&p.worker, &p.after));
        let gate = gate.chain(s.failovers.iter().map(|f| (&f.worker, &f.after)));
        if let Some((_, after)) = gate.into_iter().find(|(worker, _)| **worker == w.name) {
            cmd.args(["--gate", after]);
        }
        die_with_parent(&mut cmd);
        let mut child = cmd
            .spawn()
            .with_context(|| format!("starting worker {}", w.name))?;
        let stdout = child.stdout.take().context("worker stdout")?;
        let stdin = child.stdin.take().context("worker stdin")?;
        let tx = tx.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(Msg::Line(i, line)).is_err() {
                    return;
                }
            }
            let _ = tx.send(Msg::Eof(i));
        });
        procs.push(WorkerProc {
            name: w.name.clone(),
            child,
            stdin,
        });
    }
    drop(tx);

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
    let mut to_start: Vec<(u64, usize)> = s
        .workers
        .iter()
        .enumerate()
        .map(|(i, w)| (w.start_ms, i))
        .collect();
    to_start.sort();
    let mut to_start = to_start.into_iter().peekable();
    // (when, worker index) of pending SIGCONTs.
    let mut resumes: Vec<(Instant, usize)> = Vec::new();
    let mut faults = Vec::new();
    let mut pause_records: Vec<(usize, &'static str, u64, String)> = Vec::new();
    let mut open = procs.len();
    while open > 0 || !resumes.is_empty() {
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
        if let Some(pos) = resumes.iter().position(|(at, _)| *at <= now) {
            let (_, i) = resumes.remove(pos);
            // Stamped before the signal: the worker may run (and record) at once.
            pause_records.push((i, "resume", monotonic_ns(), "SIGCONT".into()));
            kill(procs[i].child.id(), libc::SIGCONT);
            continue;
        }
        // Wake at least every 50 ms to notice Ctrl-C.
        let mut next = deadline.min(now + Duration::from_millis(50));
        if let Some(&(ms, _)) = to_start.peek() {
            next = next.min(t0 + Duration::from_millis(ms));
        }
        for (at, _) in &resumes {
            next = next.min(*at);
        }
        match rx.recv_timeout(next.saturating_duration_since(now)) {
            Ok(Msg::Line(i, line)) => {
                let v: Value = serde_json::from_str(&line)
                    .with_context(|| format!("worker {} wrote {line:?}", procs[i].name))?;
                if let Some(step) = v.get("gate").and_then(Value::as_str) {
                    let name = &procs[i].name;
                    if s.failovers
                        .iter()
                        .any(|f| f.worker == *name && f.after == step)
                    {
                        let at = monotonic_ns();
                        servers.redis.stop();
                        let mut con = servers.replica.connection()?;
                        redis::cmd("REPLICAOF")
                            .arg("NO")
                            .arg("ONE")
                            .query::<()>(&mut con)?;
                        faults.push(format!(
                            "failover after worker/{name}'s {step} at {:.1} ms: primary SIGKILLed, replica promoted",
                            t0.elapsed().as_secs_f64() * 1e3
                        ));
                        pause_records.push((
                            FAILOVER,
                            "failover",
                            at,
                            "primary SIGKILLed; REPLICAOF NO ONE".into(),
                        ));
                    }
                    if let Some(p) = s
                        .pauses
                        .iter()
                        .find(|p| p.worker == *name && p.after == step)
                    {
                        let pid = procs[i].child.id();
                        let confirm = stop_confirmed(pid)?;
                        let at = monotonic_ns();
                        let detail = format!("SIGSTOP for {} ms", p.duration_ms);
                        faults.push(format!(
                            "pause worker/{} after {step} for {} ms at {:.1} ms (stop confirmed in {} us)",
                            p.worker,
                            p.duration_ms,
                            t0.elapsed().as_secs_f64() * 1e3,
                            confirm.as_micros()
                        ));
                        pause_records.push((i, "pause", at, detail));
                        resumes.push((Instant::now() + Duration::from_millis(p.duration_ms), i));
                    }
                    // Answered while stopped: the worker reads it when it runs again.
                    procs[i].send("go")?;
                } else {
                    records.push((i, v));
                }
            }
            Ok(Msg::Eof(_)) => open -= 1,
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => open = 0,
        }
    }
    for p in &mut procs {
        let status = p.child.wait()?;
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
        for (at, ms) in &log.held {
            faults.push(format!(
                "proxy held worker/{name}'s UPDATE for {ms} ms at {:.1} ms",
                (at.saturating_sub(t0_ns)) as f64 / 1e6
            ));
        }
    }

    let mut pg = postgres::Client::connect(&servers.postgres.conn_string(), postgres::NoTls)?;
    let audit: Vec<(i64, i64, i64)> = pg
        .query(
            "SELECT commit_seq, op_id, token FROM audit ORDER BY commit_seq",
            &[],
        )?
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2)))
        .collect();
    let names: Vec<String> = s.workers.iter().map(|w| w.name.clone()).collect();
    let history = build_history(&names, s.lock, &records, &pause_records, &audit)?;
    let report = check::check(&history);
    Ok(TrialResult {
        report,
        history,
        faults,
    })
}

/// A record before it has its place in the merged order.
struct Pending {
    t_ns: u64,
    /// Tie-break at equal times: issue before receipt, worker records in their own order.
    rank: (u8, u64),
    event: Event,
}

fn field(v: &Value, name: &str) -> Option<u64> {
    v.get(name).and_then(Value::as_u64)
}

/// Merges worker records, pause/resume and audit rows into one history.
/// `audit` is (commit_seq, op_id, token) in commit order.
pub fn build_history(
    workers: &[String],
    lock: LockKind,
    records: &[(usize, Value)],
    pauses: &[(usize, &'static str, u64, String)],
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
        e.kind = match kind_name {
            "acquire_sent" => Kind::AcquireSent,
            "grant_received" => {
                grant_id += 1;
                held.insert(*i, grant_id);
                // The server that answered the SET: 0 = primary, 1 = the promoted replica.
                let server = field(v, "server").unwrap_or(0) as u16;
                let mut issued = Event::new(0, t_ns, coord + server.min(1), Kind::GrantIssued);
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
                e.grant_id = held.get(i).copied();
                e.op_id = None;
                Kind::ReleaseSent
            }
            "workload_done" => Kind::WorkloadDone,
            "op_abandoned" => Kind::OpAbandoned,
            // fence_checked, release_done: shown in the worker's own log only.
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
    for (i, kind, t_ns, detail) in pauses {
        let (node, kind) = match *kind {
            "pause" => (*i as u16, Kind::Pause),
            "resume" => (*i as u16, Kind::Resume),
            _ => (coord + 1, Kind::Failover),
        };
        let mut e = Event::new(0, *t_ns, node, kind);
        e.detail = Some(detail.clone());
        out.push(Pending {
            t_ns: *t_ns,
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
