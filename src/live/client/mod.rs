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
//! merged by the same code as the built-in workers' ([`super::history`])
//! and judged by the same checker.
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
//!
//! The rooms of this mode: [`plan`] (the scenario's faults as anchors),
//! [`shared`] (the state the proxies' threads share, and the firing),
//! [`observe`] (the proxies' decoders), [`conversation`] (what was seen,
//! as worker records), [`program`] (the user's process); this file runs
//! the trial.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

mod conversation;
mod env;
mod lock_history;
mod members;
mod observe;
mod plan;
mod program;
mod seen;
mod shared;

pub use env::PROGRAM_ENV;

use conversation::to_records;
use lock_history::LockHistory;
use members::MemberFaults;
use observe::{lock_observers, pg_observers};
use plan::strike_order;
use program::{describe, spawn, UserProc};
use seen::Seen;
use shared::Shared;

use super::common::fact::{disorder, LockFact};
use super::common::server::Backend;
use super::history::{judge, TrialResult};
use super::phases::{Phase, Phases};
use super::proxy::Proxy;
use super::scenario::LiveScenario;
use super::servers::Servers;
use super::{etcd, locked, monotonic_ns, redis, zk, ClusterKind, LockKind};

/// The user's program misbehaved (exit code, signal, hang): exit 3, no verdict.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ClientFailed(pub String);

/// The trial ran, but what the servers saw is not enough to judge it (its
/// lock was invisible, its fault never struck, the account broke): exit 3,
/// no verdict — never a clean or partial one built on a guess.
#[derive(Debug, thiserror::Error)]
#[error("cannot judge: {0}")]
pub struct CannotJudge(pub String);

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

/// Runs one trial of `cmd` as every worker of `s`. Call from the main thread
/// (the programs' parent-death signal is tied to the spawning thread).
/// `phases` gets the trial's phase marks (docs/live.md has how they map
/// onto a user's program).
pub fn run(
    s: &LiveScenario,
    cmd: &str,
    servers: &mut Servers,
    timeout: Duration,
    trial: u32,
    phases: &mut Phases,
) -> Result<TrialResult> {
    if servers.redis.is_none() || servers.postgres.is_none() {
        bail!("--worker-cmd runs against the harness's own servers, not --redis/--postgres URLs");
    }
    if let Some(why) = refusal(s) {
        bail!("{why}");
    }
    let pg_upstream = servers
        .pg
        .tcp
        .clone()
        .context("the harness's PostgreSQL listens on TCP")?;
    let order = strike_order(s)?;
    phases.enter(Phase::Reset);
    servers.reset()?;
    // A cluster or extra Redis masters this trial starts are start-up.
    let starts = match s.lock.cluster() {
        Some(kind) => servers.cluster_starts(kind),
        None => servers.more_masters.len() + 1 < s.redis_masters as usize,
    };
    if starts {
        phases.enter(Phase::Start);
    }
    // The lock server's account starts before any program runs.
    let backend = backend(s, servers)?;
    phases.enter(Phase::Reset);
    // The run's schema: the program's unqualified `documents` resolves to it
    // through the search_path its URL carries.
    let mut pg = servers.pg_client()?;
    pg.batch_execute(CLIENT_AUDIT_SQL)
        .context("creating the client audit trigger")?;
    let deadline = Instant::now() + timeout;
    let shared = Arc::new(Shared::new(
        s,
        order,
        backend.account.clone(),
        backend.keys.clone(),
    ));
    phases.enter(Phase::Spawn);
    let mut programs = start_programs(s, cmd, servers, &shared, &backend, &pg_upstream, trial)?;
    // A member's faults are undone (restarted, continued, healed) however
    // the programs ended.
    let mut members = MemberFaults::new(&shared);
    let supervised = supervise(
        s,
        cmd,
        &shared,
        &mut programs,
        (deadline, timeout),
        (servers, &mut members),
    );
    let undone = members.finish(&shared, servers);
    supervised?;
    undone?;
    let audit_at = Instant::now();
    phases.mark(audit_at, Phase::Audit);
    client_phases(&shared, phases, audit_at);
    let finished_ns = check_exits(cmd, &shared, &programs.procs)?;
    drop(programs);
    let (lock, (notes, trial_notes)) = judgeable(&shared, &documents(s))?;
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
    let (records, audit) = to_records(&documents(s), &seen, &pids, &audit, &finished_ns, &lock)?;
    // A Redis lock's history has the compare-and-delete's vocabulary
    // whatever the program sent: the server's account says what each
    // command did.
    let kind = match s.lock.cluster() {
        None => LockKind::RedisSetNxCad,
        Some(_) => s.lock,
    };
    phases.enter(Phase::Check);
    // Each worker's document is its own key in the history.
    let mut result = judge(
        &shared.names,
        &documents(s),
        kind,
        &records,
        &shared.exec.harness(),
        &audit,
        shared.exec.lines(),
    )?;
    result.notes = notes;
    result.trial_notes = trial_notes;
    Ok(result)
}

/// A user's program's run, after the fact: spawn lasts until the first
/// lock request passed a proxy (the trial's start), the fault from the
/// first to the last record the executor kept (a pause to its resume, a
/// crash to its restart). Faults that leave no record (a proxy's delay,
/// drop or cut) count in run or settle.
fn client_phases(shared: &Shared, phases: &mut Phases, audit_at: Instant) {
    let Some(started) = *locked(&shared.started) else {
        return;
    };
    phases.mark(started, Phase::Run);
    let (now, now_ns) = (Instant::now(), monotonic_ns());
    let at = |ns: u64| now.checked_sub(Duration::from_nanos(now_ns.saturating_sub(ns)));
    let times: Vec<u64> = shared.exec.harness().iter().map(|r| r.t_ns).collect();
    let window = times
        .iter()
        .min()
        .and_then(|first| Some((at(*first)?, at(*times.iter().max()?)?)));
    phases.faults(window.into_iter().collect(), audit_at);
}

/// Each worker's document (`document = N`, 1 unless named).
fn documents(s: &LiveScenario) -> Vec<u32> {
    s.workers.iter().map(|w| w.document).collect()
}

/// Why a user's program cannot be run under `s` — workers on several
/// documents with one exact key named for all of them, or on a lock that
/// watches one key; a fault the client mode cannot apply (a failover, a
/// crash of the harness's Redis, a cluster member's fault after a
/// worker's step) — checked
/// before any server starts.
pub fn refusal(s: &LiveScenario) -> Option<String> {
    if s.lock == LockKind::None {
        return Some(format!(
            "{}: lock = \"none\" (the database is the lock) cannot judge a user's program: fencesim judges \
             a program from its lock server's account of the grants, and this recipe has no lock server; \
             run it with the built-in worker, or give the program a Redis, etcd or ZooKeeper lock",
            s.path.display()
        ));
    }
    if let Some(why) = several_documents(s) {
        return Some(format!("{}: {why}", s.path.display()));
    }
    strike_order(s).err().map(|e| format!("{e:#}"))
}

/// Why workers on more than one document cannot be judged as `s` names
/// their keys, if they cannot: each document's lock is found among its own
/// workers' keys, so one exact lock or token key cannot be every
/// document's, and the etcd and ZooKeeper accounts watch one lock.
fn several_documents(s: &LiveScenario) -> Option<String> {
    let w = s.workers.iter().find(|w| w.document != 1)?;
    let on = format!("worker {} is on document {}", w.name, w.document);
    if s.lock.cluster().is_some() {
        return Some(format!(
            "{on}: a user's program on several documents needs a Redis lock; {} watches one lock",
            s.lock.name()
        ));
    }
    if let Some(k) = s.lock_key.as_ref().and_then(|c| c.exact()) {
        return Some(format!(
            "{on}: the lock key {k} is named exactly, which is one document's; name the documents' keys \
             by a prefix or a glob (`lock:invoice:*`), or not at all, and each document's is found"
        ));
    }
    s.token_key.as_ref().map(|t| {
        format!(
            "{on}: the token key {t} is named, which is one document's; leave token_key out and each \
             document's counter is found"
        )
    })
}

/// The scenario's lock server, its account started (each in its room).
fn backend(s: &LiveScenario, servers: &mut Servers) -> Result<Backend> {
    match s.lock.cluster() {
        None => redis::backend(s, servers),
        Some(ClusterKind::Zk) => zk::backend(s, servers),
        Some(ClusterKind::Etcd) => etcd::backend(s, servers),
    }
}

/// What an account noted: once per run (the lock found), this trial's alone.
type Notes = (Vec<String>, Vec<String>);

/// The lock's history from the servers' account, or why the trial cannot
/// be judged: the account broke or disagrees with the server's keyspace
/// notifications, a fault never struck (its anchor was never reached, or
/// its program had exited), or the programs wrote while the server never
/// granted the lock key (their lock is one fencesim cannot see).
/// Its notes: the run's (the lock found), this trial's.
fn judgeable(shared: &Shared, documents: &[u32]) -> Result<(LockHistory, Notes)> {
    let finished = shared.account.finish();
    let mut why = finished.problems;
    // The account's promise, held at the boundary: grants in turn, facts in time order.
    if let Some(d) = disorder(&finished.facts) {
        why.push(format!("the lock server's account is out of order: {d}"));
    }
    why.extend(locked(&shared.account_errors).iter().cloned());
    why.extend(locked(&shared.missed).iter().cloned());
    let fired = shared.exec.fired();
    for &k in shared.order.iter().filter(|&&k| !fired.has(k)) {
        let f = &shared.faults[k];
        let worker = f.worker().map_or("?", |w| shared.names[w.0].as_str());
        why.push(format!(
            "the fault on worker/{worker} ({}) never struck: its point or time never came in the trial",
            f.in_program()
        ));
    }
    let seen = locked(&shared.seen).clone();
    let granted = (finished.facts.iter()).any(|f| matches!(f, LockFact::Granted { .. }));
    if !granted && seen.iter().any(|(_, _, s)| matches!(s, Seen::WriteSent(_))) {
        why.push(format!(
            "the programs wrote the document, but the server never granted a lock on {} \
             (a lock on another key or server is one fencesim cannot see)",
            String::from_utf8_lossy(&shared.lock_key)
        ));
    }
    if !why.is_empty() {
        return Err(CannotJudge(why.join("; ")).into());
    }
    let lock = LockHistory::new(shared.names.len(), &seen, &finished.facts, documents);
    Ok((lock, (finished.notes, finished.this_trial)))
}

/// The programs of one trial: each worker's process, the environment it
/// was started with (a restart gets the same) and its proxies.
struct Programs {
    procs: Vec<UserProc>,
    envs: Vec<Vec<(&'static str, String)>>,
    /// Each worker's lock-server proxies (one per upstream) and PostgreSQL proxy.
    proxies: Vec<(Vec<Proxy>, Proxy)>,
}

/// Starts, for each worker, a proxy to each of the lock server's upstreams
/// and one to PostgreSQL, all decoding what it says, and its program with
/// an environment pointing at them.
fn start_programs(
    s: &LiveScenario,
    cmd: &str,
    servers: &Servers,
    shared: &Arc<Shared>,
    backend: &Backend,
    pg_upstream: &str,
    trial: u32,
) -> Result<Programs> {
    let mut programs = Programs {
        procs: Vec::new(),
        envs: Vec::new(),
        proxies: Vec::new(),
    };
    for (i, w) in s.workers.iter().enumerate() {
        let mut lock_proxies = Vec::new();
        for (m, upstream) in backend.upstreams.iter().enumerate() {
            let (sh, wire, server) = (shared.clone(), backend.wire.clone(), backend.name);
            lock_proxies.push(Proxy::start_observed(upstream, move |seen_as| {
                lock_observers(sh.clone(), (server, i, m), wire(i, m, seen_as))
            })?);
        }
        let ports: Vec<u16> = lock_proxies.iter().map(|p| p.port).collect();
        let sh = shared.clone();
        let pg_proxy = Proxy::start_observed(pg_upstream, move |_| pg_observers(sh.clone(), i))?;
        let mut env = (backend.env)(i, &ports);
        env.extend([
            (
                "FENCESIM_POSTGRES_URL",
                format!(
                    "postgresql://postgres@127.0.0.1:{}/postgres?sslmode=disable&options=-csearch_path%3D{}",
                    pg_proxy.port, servers.schema
                ),
            ),
            ("FENCESIM_WORKER_ID", w.name.clone()),
            ("FENCESIM_DOC_ID", w.document.to_string()),
            ("FENCESIM_OPS", "1".to_string()),
            ("FENCESIM_TTL_MS", s.ttl_ms.to_string()),
            ("FENCESIM_WORK_MS", s.work_ms.to_string()),
            ("FENCESIM_TRIAL", trial.to_string()),
        ]);
        let p = spawn(cmd, &w.name, &env)?;
        locked(&shared.pgids)[i] = p.child.id();
        programs.procs.push(p);
        programs.envs.push(env);
        programs.proxies.push((lock_proxies, pg_proxy));
    }
    Ok(programs)
}

/// Until every program has exited and no restart is due: the
/// time-triggered faults fire (a member's through `members`) and crashed
/// programs are restarted here (the anchored faults fire in the proxies'
/// threads).
fn supervise(
    s: &LiveScenario,
    cmd: &str,
    shared: &Shared,
    programs: &mut Programs,
    (deadline, timeout): (Instant, Duration),
    (servers, members): (&mut Servers, &mut MemberFaults),
) -> Result<()> {
    // A stall's time is kept by the proxies its messages pass.
    let timed: Vec<usize> = (shared.order.iter().copied())
        .filter(|&k| {
            let f = &shared.faults[k];
            f.at_ms().is_some() && !f.is_stall() && !f.on_member()
        })
        .collect();
    while programs.procs.iter().any(|p| p.done.is_none()) || !locked(&shared.restarts).is_empty() {
        if super::interrupted() {
            shared.end();
            bail!("interrupted");
        }
        let now = Instant::now();
        if now > deadline {
            shared.end();
            let hung: Vec<String> = programs
                .procs
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
        fire_timed(shared, &timed, &programs.procs, now);
        members.tick(shared, servers, s.ttl_ms, now)?;
        restart_due(s, cmd, shared, programs, now)?;
        for (i, p) in programs.procs.iter_mut().enumerate() {
            if p.done.is_none() {
                p.done = p.child.try_wait()?;
                let ok = p.done.is_some_and(|st| st.success());
                if ok && !locked(&shared.killed)[i] {
                    locked(&shared.finished)[i] = true;
                }
            }
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    shared.end();
    Ok(())
}

/// Time-based faults (`timed`: their indices), from the trial's start.
fn fire_timed(shared: &Shared, timed: &[usize], procs: &[UserProc], now: Instant) {
    let started = *locked(&shared.started);
    for &k in timed {
        let f = &shared.faults[k];
        let (Some(ms), Some(start), Some(w)) = (f.at_ms(), started, f.worker()) else {
            continue;
        };
        if now < start + Duration::from_millis(ms) || !shared.exec.claim(k) {
            continue;
        }
        if procs[w.0].done.is_some() {
            let missed = format!(
                "worker/{} had already exited at {ms} ms (its fault did not strike)",
                shared.names[w.0]
            );
            shared.exec.note(missed.clone());
            locked(&shared.missed).push(missed);
            continue;
        }
        shared.fire(k, &format!("at_ms {ms}"));
    }
}

/// Restarts due: the same command and environment, a new process group.
fn restart_due(
    s: &LiveScenario,
    cmd: &str,
    shared: &Shared,
    programs: &mut Programs,
    now: Instant,
) -> Result<()> {
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
        let p = spawn(cmd, &s.workers[i].name, &programs.envs[i])?;
        locked(&shared.pgids)[i] = p.child.id();
        locked(&shared.killed)[i] = false;
        shared
            .exec
            .restart_recorded(i, "the program started again with the same environment");
        shared.exec.restart_noted(&s.workers[i].name);
        programs.procs[i] = p;
    }
    Ok(())
}

/// A program that failed on its own (not killed by a crash fault) ends the
/// trial without a verdict. Otherwise: when each one finished its workload
/// (None: a crash fault killed it and it stayed down).
fn check_exits(cmd: &str, shared: &Shared, procs: &[UserProc]) -> Result<Vec<Option<u64>>> {
    let killed = locked(&shared.killed).clone();
    for (i, p) in procs.iter().enumerate() {
        let status = p.done.context("worker status")?;
        if !status.success() && !killed[i] {
            let faults = shared.exec.lines();
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
    Ok(killed.iter().map(|k| (!k).then(monotonic_ns)).collect())
}
