//! The fault executor: the one place where a live fault is *done* — a
//! worker or program stopped (SIGSTOP, confirmed in /proc) and continued, a
//! worker's process or a program's process group killed, a restart noted,
//! the harness's Redis killed, restarted or failed over, a cluster member
//! killed, restarted, cut off, delayed or frozen — each with its harness
//! record for the history and its line for the trial's output.
//!
//! Both modes call it: the built-in workers' trial ([`crate::live::trial`]), which
//! decides *when* from the workers' gates and a timetable, and a user's
//! program's trial ([`crate::live::client`]), which decides when from what its
//! proxies decode. Keeping the doing here means a pause is the same pause,
//! with the same record at the same instant, whichever mode asked for it.
//! Usable from several threads at once (the client's proxies fire faults).

use std::sync::Mutex;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use super::{Action, Fault, Fired, MemberSel, Target};
use crate::history::Kind;
use crate::live::cluster::Cluster;
use crate::live::history::{HarnessNode, HarnessRecord};
use crate::live::process::{stop_confirmed, Victim};
use crate::live::proxy::Proxy;
use crate::live::servers::Servers;
use crate::live::{locked, monotonic_ns};

/// What a member delay or pause leaves to undo when its time is up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemberSlowdown {
    /// Member links delay every message: undelay them.
    Delayed,
    /// The member was SIGSTOPped: continue it.
    Stopped(usize),
}

/// Fires faults and keeps what they leave: the harness records (for the
/// history) and the fault lines (for the trial's output), in firing order,
/// and the one record of which of the scenario's faults struck.
pub struct FaultExecutor {
    /// CLOCK_MONOTONIC ns of the trial's start (the fault lines' zero).
    started_ns: Mutex<Option<u64>>,
    harness: Mutex<Vec<HarnessRecord>>,
    lines: Mutex<Vec<String>>,
    /// Which faults the trial claimed ([`FaultExecutor::claim`]) and which
    /// of them were done: a fault is done once, and only once claimed.
    fired: Mutex<Fired>,
    done: Mutex<Fired>,
}

impl FaultExecutor {
    /// The executor of a trial of `faults` faults.
    pub fn new(faults: usize) -> FaultExecutor {
        FaultExecutor {
            started_ns: Mutex::default(),
            harness: Mutex::default(),
            lines: Mutex::default(),
            fired: Mutex::new(Fired::new(faults)),
            done: Mutex::new(Fired::new(faults)),
        }
    }

    /// Fault `k` strikes now: true the first time it is claimed, false
    /// ever after (a restarted worker passes its point again, a proxy sees
    /// a retransmission). Atomic: the proxies' threads claim too.
    pub fn claim(&self, k: usize) -> bool {
        locked(&self.fired).claim(k)
    }

    /// How many faults have struck (been claimed).
    pub fn struck(&self) -> usize {
        locked(&self.fired).count()
    }

    /// Which faults have struck.
    pub fn fired(&self) -> Fired {
        locked(&self.fired).clone()
    }

    /// Fault `k` is being done: the caller claimed it, and it is done once
    /// (the pair of [`FaultExecutor::claim`]).
    pub fn strikes(&self, k: usize) {
        assert!(
            locked(&self.fired).has(k),
            "fault {k} done without being claimed"
        );
        assert!(locked(&self.done).claim(k), "fault {k} done twice");
    }

    /// The trial starts now (only the first call counts).
    pub fn start(&self) {
        locked(&self.started_ns).get_or_insert(monotonic_ns());
    }

    pub fn started_ns(&self) -> Option<u64> {
        *locked(&self.started_ns)
    }

    /// Ms since the trial started (0 before).
    pub fn since_start_ms(&self) -> f64 {
        self.started_ns()
            .map_or(0.0, |ns| monotonic_ns().saturating_sub(ns) as f64 / 1e6)
    }

    /// A fault line for the trial's output.
    pub fn note(&self, line: String) {
        locked(&self.lines).push(line);
    }

    /// A harness record at `t_ns`.
    pub fn record_at(&self, node: HarnessNode, kind: Kind, t_ns: u64, detail: String) {
        locked(&self.harness).push(HarnessRecord {
            node,
            kind,
            t_ns,
            detail,
        });
    }

    /// A harness record stamped now.
    pub fn record(&self, node: HarnessNode, kind: Kind, detail: String) {
        self.record_at(node, kind, monotonic_ns(), detail);
    }

    pub fn lines(&self) -> Vec<String> {
        locked(&self.lines).clone()
    }

    pub fn harness(&self) -> Vec<HarnessRecord> {
        locked(&self.harness).clone()
    }

    /// Stops worker `worker` (`name`) with SIGSTOP and waits until /proc
    /// shows it stopped, so the pause is in force before anyone can observe
    /// anything; the `pause` record is stamped once it is. `at` says where
    /// it struck ("after read_ok"). Err when it never showed as stopped.
    pub fn pause_worker(
        &self,
        k: usize,
        worker: usize,
        name: &str,
        victim: Victim,
        at: &str,
        duration_ms: u64,
    ) -> Result<()> {
        self.strikes(k);
        let stopped = stop_confirmed(victim);
        self.record(
            HarnessNode::Worker(worker),
            Kind::Pause,
            format!("SIGSTOP for {duration_ms} ms"),
        );
        let (Ok(took) | Err(took)) = stopped;
        self.note(format!(
            "pause worker/{name} {at} for {duration_ms} ms at {:.1} ms (stop confirmed in {} us)",
            self.since_start_ms(),
            took.as_micros()
        ));
        if stopped.is_err() {
            bail!("worker {name} not stopped 2 s after SIGSTOP");
        }
        Ok(())
    }

    /// SIGCONT, its `resume` record stamped before the signal: the worker
    /// may run (and record) at once.
    pub fn resume_worker(&self, worker: usize, victim: Victim) {
        self.record(HarnessNode::Worker(worker), Kind::Resume, "SIGCONT".into());
        victim.signal(libc::SIGCONT);
    }

    /// SIGKILL of a worker's process (after a SIGCONT, as the built-in
    /// worker's crash always did) or of a program's whole process group
    /// (stopped or not: SIGKILL ends a stopped process too, and the group
    /// must not run again first), its `crash` record stamped before. The
    /// caller reaps it and schedules its restart.
    pub fn crash_worker(&self, k: usize, worker: usize, victim: Victim) {
        self.strikes(k);
        let detail = match victim {
            Victim::Process(_) => "SIGKILL",
            Victim::Group(_) => "SIGKILL of the program's process group",
        };
        self.record(HarnessNode::Worker(worker), Kind::Crash, detail.into());
        if let Victim::Process(_) = victim {
            victim.signal(libc::SIGCONT);
        }
        victim.signal(libc::SIGKILL);
    }

    /// A crashed worker is started again: its fault line.
    pub fn restart_noted(&self, name: &str) {
        self.note(format!(
            "worker/{name} restarted at {:.1} ms",
            self.since_start_ms()
        ));
    }

    /// A crashed worker runs again (`detail`: from what): its `restart`
    /// record, stamped when it does (a built-in worker once it is
    /// connected again, a program when it is started).
    pub fn restart_recorded(&self, worker: usize, detail: &str) {
        self.record(HarnessNode::Worker(worker), Kind::Restart, detail.into());
    }

    /// SIGKILL of the harness's Redis primary (no persistence: the lock and
    /// the counter are gone with it).
    pub fn crash_redis(&self, k: usize, servers: &mut Servers) -> Result<()> {
        self.strikes(k);
        let r = servers
            .redis
            .as_mut()
            .context("a crash of coord/0 needs the harness's own Redis")?;
        let at = monotonic_ns();
        r.stop();
        self.record_at(
            HarnessNode::Coord(0),
            Kind::Crash,
            at,
            "SIGKILL (no persistence: the lock and the counter are gone)".into(),
        );
        Ok(())
    }

    /// The Redis primary starts again, empty, on its port.
    pub fn restart_redis(&self, servers: &mut Servers) -> Result<()> {
        if let Some(r) = servers.redis.as_mut() {
            r.ensure_running()?;
        }
        self.record(
            HarnessNode::Coord(0),
            Kind::Restart,
            "redis-server restarted empty (no persistence)".into(),
        );
        self.note(format!(
            "coord/0 restarted at {:.1} ms",
            self.since_start_ms()
        ));
        Ok(())
    }

    /// The failover: the primary SIGKILLed and the replica (whose link was
    /// cut before the trial) promoted. `at`: after which worker's step.
    pub fn failover(&self, k: usize, servers: &mut Servers, at: &str) -> Result<()> {
        self.strikes(k);
        let t_ns = monotonic_ns();
        let (Some(primary), Some(replica)) = (servers.redis.as_mut(), servers.replica.as_ref())
        else {
            bail!("a failover needs the harness's own Redis");
        };
        primary.stop();
        let mut con = replica.connection()?;
        redis::cmd("REPLICAOF")
            .arg("NO")
            .arg("ONE")
            .query::<()>(&mut con)?;
        self.note(format!(
            "failover {at} at {:.1} ms: primary SIGKILLed, replica promoted",
            self.since_start_ms()
        ));
        self.record_at(
            HarnessNode::Coord(1),
            Kind::Failover,
            t_ns,
            "primary SIGKILLed; REPLICAOF NO ONE".into(),
        );
        Ok(())
    }

    /// SIGKILL of a cluster member (its data directory stays); the member's index.
    pub fn crash_member(&self, k: usize, servers: &mut Servers, sel: MemberSel) -> Result<usize> {
        self.strikes(k);
        let cluster = servers
            .cluster
            .as_mut()
            .context("a crash of a member needs the etcd or ZooKeeper cluster")?;
        let m = resolve_member(cluster, sel)?;
        let at = monotonic_ns();
        cluster.kill(m);
        self.record_at(
            HarnessNode::Coord(0),
            Kind::Crash,
            at,
            format!("{sel}: member/{m} SIGKILLed (its data directory stays)"),
        );
        Ok(m)
    }

    /// A killed member starts again from its data directory.
    pub fn restart_member(&self, servers: &mut Servers, m: usize) -> Result<()> {
        if let Some(c) = servers.cluster.as_mut() {
            c.restart(m)?;
        }
        self.record(
            HarnessNode::Coord(0),
            Kind::Restart,
            format!("member/{m} restarted from its data directory"),
        );
        self.note(format!(
            "member/{m} restarted at {:.1} ms",
            self.since_start_ms()
        ));
        Ok(())
    }

    /// Cuts `member` off from the others (both ways; its clients stay
    /// connected) for `duration_ms`. `at`: after which worker's step. The
    /// caller heals it.
    pub fn partition(
        &self,
        k: usize,
        servers: &mut Servers,
        (member, duration_ms): (MemberSel, u64),
        at: &str,
    ) -> Result<()> {
        self.strikes(k);
        let c = servers
            .cluster
            .as_mut()
            .context("a partition needs the etcd or ZooKeeper cluster")?;
        let m = resolve_member(c, member)?;
        let t_ns = monotonic_ns();
        c.partition(m);
        self.note(format!(
            "{member} (member/{m}) cut off from the others {at} for {duration_ms} ms at {:.1} ms",
            self.since_start_ms()
        ));
        self.record_at(
            HarnessNode::Coord(0),
            Kind::Partition,
            t_ns,
            format!("member/{m} | the other members"),
        );
        Ok(())
    }

    /// Cuts worker `worker`'s (`name`, process `pid`) connections to the
    /// cluster's members and has those members refuse it for `refuse_ms`.
    /// `at`: after which of its steps.
    pub fn cut_lock(
        &self,
        k: usize,
        servers: &mut Servers,
        (worker, name, pid): (usize, &str, u32),
        refuse_ms: u64,
        at: &str,
    ) -> Result<()> {
        let c = servers
            .cluster
            .as_mut()
            .context("a cut of the lock's connection needs the etcd or ZooKeeper cluster")?;
        self.strikes(k);
        let t_ns = monotonic_ns();
        let members = c.cut_client(pid, refuse_ms);
        let on: Vec<String> = members.iter().map(|m| format!("member/{m}")).collect();
        self.note(format!(
            "worker/{name}'s connection to {} cut {at}, refused there for {refuse_ms} ms, at {:.1} ms",
            if on.is_empty() { "no member (none open)".to_string() } else { on.join(", ") },
            self.since_start_ms()
        ));
        self.record_at(
            HarnessNode::Worker(worker),
            Kind::Partition,
            t_ns,
            format!(
                "worker/{name} | {} (its client connection cut)",
                on.join(", ")
            ),
        );
        Ok(())
    }

    pub fn heal(&self, servers: &mut Servers) {
        if let Some(c) = servers.cluster.as_mut() {
            c.heal();
        }
        self.record(HarnessNode::Coord(0), Kind::Heal, "partition healed".into());
        self.note(format!("healed at {:.1} ms", self.since_start_ms()));
    }

    /// Starts fault `k`, a member delay (its links hold every message
    /// `by_ms`) or, without `by_ms`, a member pause (SIGSTOP). `at`: " after
    /// worker/A's read_ok" or "". What to undo when `for_ms` is up.
    pub fn slow_member(
        &self,
        (k, fault): (usize, &Fault),
        servers: &mut Servers,
        at: &str,
    ) -> Result<MemberSlowdown> {
        let Action::SlowMember {
            member,
            by_ms,
            for_ms,
        } = fault.action
        else {
            bail!("fault {k} slows no member");
        };
        self.strikes(k);
        let c = servers
            .cluster
            .as_mut()
            .context("a member delay needs the etcd or ZooKeeper cluster")?;
        let m = resolve_member(c, member)?;
        let (line, undo) = match by_ms {
            Some(by_ms) => {
                c.delay(m, by_ms);
                (
                    format!(
                        "{member} (member/{m})'s messages to and from the others held {by_ms} ms for {for_ms} ms"
                    ),
                    MemberSlowdown::Delayed,
                )
            }
            None => {
                c.pause(m);
                (
                    format!("{member} (member/{m}) SIGSTOPped for {for_ms} ms"),
                    MemberSlowdown::Stopped(m),
                )
            }
        };
        self.note(format!("{line}{at} at {:.1} ms", self.since_start_ms()));
        Ok(undo)
    }

    /// Ends a member delay or pause.
    pub fn unslow_member(&self, servers: &mut Servers, undo: MemberSlowdown) {
        let Some(c) = servers.cluster.as_mut() else {
            return;
        };
        match undo {
            MemberSlowdown::Delayed => {
                c.undelay();
                self.note(format!(
                    "member delay ended at {:.1} ms",
                    self.since_start_ms()
                ));
            }
            MemberSlowdown::Stopped(m) => {
                c.resume(m);
                self.note(format!(
                    "member/{m} continued (SIGCONT) at {:.1} ms",
                    self.since_start_ms()
                ));
            }
        }
    }
}

/// Arms a failover before the trial: makes the replica follow the primary
/// through a proxy, waits until it has synced (so it starts the trial with
/// the primary's flushed state), then cuts the link: whatever the primary
/// does next never reaches the replica.
pub fn replicate_then_cut(servers: &mut Servers) -> Result<()> {
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

/// A crash's fault line, up to where it struck (`node`: the worker's
/// name as the scenario gives it).
pub fn crash_line(target: Target, node: &str, restart_after_ms: Option<u64>) -> String {
    let what = match target {
        Target::Worker(_) => format!("crash (SIGKILL) {node}"),
        Target::RedisPrimary => "crash (SIGKILL) coord/0 (redis-server)".to_string(),
        Target::Member(m) => format!("crash (SIGKILL) {m}"),
    };
    match restart_after_ms {
        Some(ms) => format!("{what}, restart after {ms} ms,"),
        None => format!("{what}, no restart,"),
    }
}

/// The member index a fault names (the leader: whichever leads now).
fn resolve_member(c: &Cluster, sel: MemberSel) -> Result<usize> {
    match sel {
        MemberSel::Index(i) => Ok(i),
        MemberSel::Leader => c
            .leader()
            .context("no member of the cluster reports a leader"),
    }
}
