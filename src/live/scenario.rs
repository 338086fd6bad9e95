//! Live scenario files (`live/*.toml`): which lock recipe and write the
//! workers use, the workers' start times, the faults in real milliseconds,
//! the simulated twin (a `scenarios/` file) and what a trial should show.
//!
//! A separate small format, not a `[live]` section in the simulator's
//! files: the simulator's schema refuses unknown sections, and keeping live
//! files out of `scenarios/` means `fencesim run scenarios/` never starts a
//! server. Errors name file:line:column like every scenario error.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use toml::Spanned;

use super::{LockKind, WriteKind};
use crate::check::ViolationKind;
use crate::scenario::ScenarioError;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    schema_version: Spanned<u32>,
    name: String,
    #[serde(default)]
    description: String,
    twin: Spanned<String>,
    #[serde(default = "default_trials")]
    trials: u32,
    lock: Spanned<String>,
    write: Spanned<String>,
    ttl_ms: u64,
    #[serde(default = "default_retry")]
    retry_ms: u64,
    #[serde(default)]
    work_ms: u64,
    /// A request unanswered this long is retransmitted by the worker's machine.
    #[serde(default = "default_request_timeout")]
    request_timeout_ms: u64,
    /// A user's own worker program (`fencesim live --worker-cmd` sets or overrides it).
    worker_cmd: Option<String>,
    /// zk-lock: what a waiter watches, `predecessor` (the recipe) or `herd`.
    zk_watch: Option<Spanned<String>>,
    worker: Vec<RawWorker>,
    #[serde(default)]
    fault: Vec<RawFault>,
    expect: RawExpect,
}

fn default_trials() -> u32 {
    10
}

fn default_retry() -> u64 {
    5
}

fn default_request_timeout() -> u64 {
    2_000
}

fn default_ops() -> u32 {
    1
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawWorker {
    name: String,
    #[serde(default)]
    start_ms: u64,
    #[serde(default = "default_ops")]
    ops: u32,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFault {
    kind: Spanned<String>,
    node: Spanned<String>,
    /// The protocol point the fault follows: `read_ok` (of the worker named
    /// by `node`) or `worker/A:read_ok`.
    after: Option<Spanned<String>>,
    /// crash: ms after the trial started (instead of `after`).
    at_ms: Option<u64>,
    /// crash: restart the node this long after it was killed (none: it stays down).
    restart_after_ms: Option<u64>,
    /// delay/drop/cut: which of the worker's messages the proxy acts on ("update").
    message: Option<Spanned<String>>,
    #[serde(default)]
    duration_ms: u64,
    /// delay of a member's links: by how many ms every message is held.
    by_ms: Option<u64>,
    /// delay of a member's links: for how long (ms).
    for_ms: Option<u64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawExpect {
    /// Violation kinds every trial is expected to show ("most trials" is judged by the caller).
    #[serde(default)]
    find: Vec<Spanned<String>>,
    /// At least this many fence rejections per trial.
    #[serde(default)]
    min_fence_rejected: u64,
}

#[derive(Clone, Debug)]
pub struct LiveWorker {
    pub name: String,
    pub start_ms: u64,
    pub ops: u32,
}

/// A SIGSTOP of `worker` right after `after` returned, for `duration_ms`.
#[derive(Clone, Debug)]
pub struct LivePause {
    pub worker: String,
    pub after: String,
    pub duration_ms: u64,
}

/// Right after `worker`'s `after` step: the Redis primary is SIGKILLed and
/// the replica, whose replication link was cut before the trial, promoted.
#[derive(Clone, Debug)]
pub struct LiveFailover {
    pub worker: String,
    pub after: String,
}

/// The TCP proxy between `worker` and PostgreSQL holds, drops or cuts its UPDATE.
#[derive(Clone, Debug)]
pub struct LiveNet {
    pub worker: String,
    pub mode: super::proxy::ProxyMode,
}

/// When a crash happens.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Trigger {
    /// Right after `worker`'s protocol point returned.
    After { worker: String, point: String },
    /// This many ms after the trial started.
    AtMs(u64),
}

/// What a crash kills (SIGKILL).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CrashTarget {
    Worker(String),
    /// The harness's own Redis primary (no persistence: it restarts empty).
    RedisPrimary,
    /// A member of the etcd / ZooKeeper cluster (its data survives a restart).
    Member(MemberSel),
}

/// Which cluster member a fault hits: `member/N` or `member/leader`
/// (whichever leads when the fault fires).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemberSel {
    Index(usize),
    Leader,
}

impl std::fmt::Display for MemberSel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MemberSel::Index(i) => write!(f, "member/{i}"),
            MemberSel::Leader => write!(f, "member/leader"),
        }
    }
}

/// Right after `worker`'s `after` step, `member` is cut off from the other
/// members (both ways; its clients stay connected) for `duration_ms`.
#[derive(Clone, Debug)]
pub struct LivePartition {
    pub member: MemberSel,
    pub worker: String,
    pub after: String,
    pub duration_ms: u64,
}

/// From `trigger` on, for `for_ms`, `member` is slowed: with `by_ms`, every
/// message between it and the other members (both ways) is held that long
/// by the links (its clients' traffic is not); with `by_ms = None` the
/// member is SIGSTOPped (a GC pause or a frozen VM of a server: peers and
/// clients hear nothing, and it wakes up believing what it believed).
#[derive(Clone, Debug)]
pub struct LiveMemberDelay {
    pub member: MemberSel,
    pub trigger: Trigger,
    pub by_ms: Option<u64>,
    pub for_ms: u64,
}

#[derive(Clone, Debug)]
pub struct LiveCrash {
    pub target: CrashTarget,
    pub trigger: Trigger,
    pub restart_after_ms: Option<u64>,
}

#[derive(Clone, Debug)]
pub struct LiveScenario {
    pub path: PathBuf,
    pub name: String,
    pub description: String,
    pub twin: PathBuf,
    pub trials: u32,
    pub lock: LockKind,
    pub write: WriteKind,
    pub ttl_ms: u64,
    pub retry_ms: u64,
    pub work_ms: u64,
    pub request_timeout_ms: u64,
    pub worker_cmd: Option<String>,
    pub workers: Vec<LiveWorker>,
    pub pauses: Vec<LivePause>,
    pub net: Vec<LiveNet>,
    pub failovers: Vec<LiveFailover>,
    pub crashes: Vec<LiveCrash>,
    pub partitions: Vec<LivePartition>,
    pub member_delays: Vec<LiveMemberDelay>,
    /// zk-lock: what a waiting worker watches.
    pub zk_watch: super::zk::WatchMode,
    /// Empty: every trial must be clean.
    pub find: Vec<ViolationKind>,
    pub min_fence_rejected: u64,
}

/// Protocol points a worker can be paused or crashed after.
pub const PAUSE_POINTS: [&str; 3] = ["read_ok", "fence_checked", "write_sent"];

impl LiveScenario {
    /// The one protocol point `worker` stops at for the harness, if any.
    pub fn gate_of(&self, worker: &str) -> Option<&str> {
        let triggers = self
            .crashes
            .iter()
            .map(|c| &c.trigger)
            .chain(self.member_delays.iter().map(|d| &d.trigger));
        let crash_points = triggers.filter_map(|t| match t {
            Trigger::After { worker, point } => Some((worker, point)),
            Trigger::AtMs(_) => None,
        });
        self.pauses
            .iter()
            .map(|p| (&p.worker, &p.after))
            .chain(self.failovers.iter().map(|f| (&f.worker, &f.after)))
            .chain(self.partitions.iter().map(|p| (&p.worker, &p.after)))
            .chain(crash_points)
            .find(|(w, _)| *w == worker)
            .map(|(_, p)| p.as_str())
    }

    /// A fault that needs the harness's own Redis (it kills or promotes it).
    pub fn server_fault(&self) -> Option<&'static str> {
        if !self.failovers.is_empty() {
            return Some("failover");
        }
        self.crashes
            .iter()
            .any(|c| c.target == CrashTarget::RedisPrimary)
            .then_some("crash of coord/0")
    }
}
/// Points only a user's program (`worker_cmd`) can be paused at, seen by the proxy.
pub const CLIENT_POINTS: [&str; 1] = ["lock_granted"];

fn one_of<T: Copy>(
    file: &str,
    src: &str,
    v: &Spanned<String>,
    what: &str,
    names: &[(&str, T)],
) -> Result<T, ScenarioError> {
    names
        .iter()
        .find(|(n, _)| *n == v.get_ref())
        .map(|(_, k)| *k)
        .ok_or_else(|| {
            let list: Vec<&str> = names.iter().map(|(n, _)| *n).collect();
            ScenarioError::at(
                file,
                src,
                v.span(),
                format!(
                    "unsupported {what} {:?}; the live mode supports: {}",
                    v.get_ref(),
                    list.join(", ")
                ),
            )
        })
}

pub fn parse(src: &str, path: &Path) -> Result<LiveScenario, ScenarioError> {
    let file = path.display().to_string();
    let raw: RawFile = toml::from_str(src).map_err(|e| {
        ScenarioError::at(
            &file,
            src,
            e.span().unwrap_or(0..0),
            e.message().trim_end().to_string(),
        )
    })?;
    if *raw.schema_version.get_ref() != 1 {
        return Err(ScenarioError::at(
            &file,
            src,
            raw.schema_version.span(),
            "schema_version must be 1",
        ));
    }
    let lock = one_of(&file, src, &raw.lock, "lock", &LockKind::NAMES)?;
    let write = one_of(&file, src, &raw.write, "write", &WriteKind::NAMES)?;
    if (lock == LockKind::None) != (write == WriteKind::SelectForUpdate) {
        return Err(ScenarioError::at(
            &file,
            src,
            raw.lock.span(),
            "lock = \"none\" goes with write = \"select-for-update\" (the database is the lock), and only with it",
        ));
    }
    if let (Some(_), Some(kind)) = (&raw.worker_cmd, lock.cluster()) {
        return Err(ScenarioError::at(
            &file,
            src,
            raw.lock.span(),
            format!(
                "worker_cmd runs a user's Redis client; a {} lock needs the built-in worker",
                kind.name()
            ),
        ));
    }
    let zk_watch = match &raw.zk_watch {
        None => super::zk::WatchMode::default(),
        Some(w) => {
            let mode = one_of(&file, src, w, "zk_watch", &super::zk::WatchMode::NAMES)?;
            if lock != LockKind::ZkLock {
                return Err(ScenarioError::at(
                    &file,
                    src,
                    w.span(),
                    format!(
                        "zk_watch chooses what a ZooKeeper waiter watches; this scenario's lock is {}",
                        lock.name()
                    ),
                ));
            }
            mode
        }
    };
    let workers: Vec<LiveWorker> = raw
        .worker
        .into_iter()
        .map(|w| LiveWorker {
            name: w.name,
            start_ms: w.start_ms,
            ops: w.ops,
        })
        .collect();
    let mut pauses = Vec::new();
    let mut net = Vec::new();
    let mut failovers = Vec::new();
    let mut crashes = Vec::new();
    let mut partitions = Vec::new();
    let mut member_delays = Vec::new();
    // (worker, point, span) of every gate, to keep one point per worker.
    let mut gates: Vec<(String, String, std::ops::Range<usize>)> = Vec::new();
    #[derive(Clone, Copy, PartialEq)]
    enum K {
        Pause,
        Delay,
        Drop,
        Cut,
        Failover,
        Crash,
        Partition,
    }
    let err = |span: std::ops::Range<usize>, msg: String| ScenarioError::at(&file, src, span, msg);
    let worker_named = |name: &str, span: std::ops::Range<usize>| {
        name.strip_prefix("worker/")
            .filter(|w| workers.iter().any(|x| x.name == *w))
            .map(str::to_string)
            .ok_or_else(|| {
                err(
                    span,
                    format!("unknown node {name:?}; expected worker/<name> of a [[worker]]"),
                )
            })
    };
    // `lock_granted` is seen by the proxy, so only a user's program
    // (`worker_cmd`) can be stopped there.
    let client = raw.worker_cmd.is_some().then_some(CLIENT_POINTS.iter());
    let points: Vec<(&str, &str)> = PAUSE_POINTS
        .iter()
        .chain(client.into_iter().flatten())
        .map(|p| (*p, *p))
        .collect();
    for f in &raw.fault {
        let kind = one_of(
            &file,
            src,
            &f.kind,
            "fault kind",
            &[
                ("pause", K::Pause),
                ("delay", K::Delay),
                ("drop", K::Drop),
                ("cut", K::Cut),
                ("failover", K::Failover),
                ("crash", K::Crash),
                ("partition", K::Partition),
            ],
        )?;
        let node = f.node.get_ref();
        let missing = |what: &str| err(f.kind.span(), format!("this fault needs `{what}`"));
        // The target: a worker, a cluster member (crash, partition, delay, pause), or (crash only) the Redis primary.
        let target = if let Some(m) = node.strip_prefix("member/") {
            if !matches!(kind, K::Crash | K::Partition | K::Delay | K::Pause) {
                return Err(err(
                    f.node.span(),
                    "a cluster member can be crashed, partitioned, delayed or paused; other faults act on a worker"
                        .into(),
                ));
            }
            if lock.cluster().is_none() {
                return Err(err(
                    f.node.span(),
                    format!(
                        "{node} is a member of an etcd or ZooKeeper cluster; this scenario's lock ({}) has none",
                        lock.name()
                    ),
                ));
            }
            let sel = match m {
                "leader" => MemberSel::Leader,
                n => match n.parse::<usize>() {
                    Ok(i) if i < super::cluster::MEMBERS => MemberSel::Index(i),
                    _ => {
                        return Err(err(
                            f.node.span(),
                            format!(
                                "unknown member {node:?}; expected member/0..member/{} or member/leader",
                                super::cluster::MEMBERS - 1
                            ),
                        ))
                    }
                },
            };
            CrashTarget::Member(sel)
        } else if kind == K::Partition {
            return Err(err(
                f.node.span(),
                "a partition cuts off a cluster member: node = \"member/0\" (or member/leader)"
                    .into(),
            ));
        } else if kind == K::Crash && node == "coord/0" {
            if lock.cluster().is_some() {
                return Err(err(
                    f.node.span(),
                    "coord/0 is the Redis lock server; this scenario's lock runs on a cluster: crash member/N or member/leader".into(),
                ));
            }
            if lock == LockKind::None {
                return Err(err(
                    f.node.span(),
                    "coord/0 is the Redis lock server; this scenario has none (lock = \"none\")"
                        .into(),
                ));
            }
            CrashTarget::RedisPrimary
        } else {
            CrashTarget::Worker(worker_named(node, f.node.span())?)
        };
        // The protocol point: `read_ok` (the node's own) or `worker/A:read_ok`.
        let after = match &f.after {
            None => None,
            Some(a) => {
                let (who, point) = match a.get_ref().split_once(':') {
                    Some((who, point)) => (worker_named(who, a.span())?, point),
                    None => match &target {
                        CrashTarget::Worker(w) => (w.clone(), a.get_ref().as_str()),
                        CrashTarget::RedisPrimary | CrashTarget::Member(_) => return Err(err(
                            a.span(),
                            "name the worker whose step it follows: after = \"worker/A:read_ok\""
                                .into(),
                        )),
                    },
                };
                let point = Spanned::new(a.span(), point.to_string());
                let point = one_of(&file, src, &point, "protocol point", &points)?.to_string();
                gates.push((who.clone(), point.clone(), a.span()));
                Some((who, point))
            }
        };
        let worker = match &target {
            CrashTarget::Worker(w) => w.clone(),
            CrashTarget::RedisPrimary | CrashTarget::Member(_) => String::new(),
        };
        let member_pause = kind == K::Pause && matches!(target, CrashTarget::Member(_));
        let member_delay = kind == K::Delay && matches!(target, CrashTarget::Member(_));
        if f.restart_after_ms.is_some() && kind != K::Crash
            || f.at_ms.is_some() && kind != K::Crash && !member_delay && !member_pause
        {
            return Err(err(
                f.kind.span(),
                "`at_ms` belongs to a crash or a member's delay or pause, `restart_after_ms` to a crash"
                    .into(),
            ));
        }
        if (f.by_ms.is_some() || f.for_ms.is_some()) && !member_delay {
            return Err(err(
                f.kind.span(),
                "`by_ms` and `for_ms` belong to a delay of a cluster member (node = \"member/N\")"
                    .into(),
            ));
        }
        // When a crash or a member delay happens: after a protocol point or at a time, one of them.
        let trigger = |after: Option<(String, String)>, what: &str| match (after, f.at_ms) {
            (Some((worker, point)), None) => Ok(Trigger::After { worker, point }),
            (None, Some(ms)) => Ok(Trigger::AtMs(ms)),
            (Some(_), Some(_)) => Err(err(
                f.kind.span(),
                format!("{what} has `after` or `at_ms`, not both"),
            )),
            (None, None) => Err(missing("after` or `at_ms")),
        };
        match kind {
            K::Pause if member_pause => {
                let CrashTarget::Member(member) = target else {
                    return Err(missing("node = \"member/N\""));
                };
                let trigger = trigger(after, "a member pause")?;
                if f.duration_ms == 0 {
                    return Err(missing("duration_ms"));
                }
                member_delays.push(LiveMemberDelay {
                    member,
                    trigger,
                    by_ms: None,
                    for_ms: f.duration_ms,
                });
            }
            K::Pause | K::Failover => {
                let (who, after) = after.ok_or_else(|| missing("after"))?;
                if kind == K::Pause {
                    pauses.push(LivePause {
                        worker: who,
                        after,
                        duration_ms: f.duration_ms,
                    });
                } else {
                    if lock == LockKind::None || lock.cluster().is_some() {
                        return Err(err(
                            f.kind.span(),
                            "a failover needs a Redis lock (on a cluster: crash member/leader)"
                                .into(),
                        ));
                    }
                    failovers.push(LiveFailover { worker: who, after });
                }
            }
            K::Crash => {
                let trigger = trigger(after, "a crash")?;
                crashes.push(LiveCrash {
                    target,
                    trigger,
                    restart_after_ms: f.restart_after_ms,
                });
            }
            K::Partition => {
                let (who, after) = after.ok_or_else(|| missing("after"))?;
                if f.duration_ms == 0 {
                    return Err(missing("duration_ms"));
                }
                let CrashTarget::Member(member) = target else {
                    return Err(missing("node = \"member/N\""));
                };
                partitions.push(LivePartition {
                    member,
                    worker: who,
                    after,
                    duration_ms: f.duration_ms,
                });
            }
            K::Delay if member_delay => {
                let CrashTarget::Member(member) = target else {
                    return Err(missing("node = \"member/N\""));
                };
                let trigger = trigger(after, "a member delay")?;
                let by_ms = f
                    .by_ms
                    .filter(|ms| *ms > 0)
                    .ok_or_else(|| missing("by_ms"))?;
                let for_ms = f
                    .for_ms
                    .filter(|ms| *ms > 0)
                    .ok_or_else(|| missing("for_ms"))?;
                if f.duration_ms != 0 || f.message.is_some() {
                    return Err(err(
                        f.kind.span(),
                        "a member delay holds every message between members: `by_ms` and `for_ms`, no `duration_ms` or `message`".into(),
                    ));
                }
                member_delays.push(LiveMemberDelay {
                    member,
                    trigger,
                    by_ms: Some(by_ms),
                    for_ms,
                });
            }
            K::Delay | K::Drop | K::Cut => {
                let message = f.message.as_ref().ok_or_else(|| missing("message"))?;
                one_of(&file, src, message, "message", &[("update", ())])?;
                if kind != K::Cut && f.duration_ms == 0 {
                    return Err(missing("duration_ms"));
                }
                if net.iter().any(|n: &LiveNet| n.worker == worker) {
                    return Err(err(
                        f.node.span(),
                        format!("worker/{worker} already has a network fault; one per worker"),
                    ));
                }
                use super::proxy::ProxyMode;
                let mode = match kind {
                    K::Delay => ProxyMode::Hold { ms: f.duration_ms },
                    K::Drop => ProxyMode::Drop { ms: f.duration_ms },
                    _ => ProxyMode::Cut,
                };
                net.push(LiveNet { worker, mode });
            }
        }
    }
    for (i, (w, p, span)) in gates.iter().enumerate() {
        if let Some((_, other, _)) = gates[..i].iter().find(|(w2, p2, _)| w2 == w && p2 != p) {
            return Err(err(
                span.clone(),
                format!("worker/{w} already stops at {other:?}; one protocol point per worker"),
            ));
        }
    }
    let kinds: Vec<(&str, ViolationKind)> =
        ViolationKind::ALL.iter().map(|k| (k.name(), *k)).collect();
    let find = raw
        .expect
        .find
        .iter()
        .map(|k| one_of(&file, src, k, "violation kind", &kinds))
        .collect::<Result<Vec<_>, _>>()?;
    let base = path.parent().unwrap_or(Path::new("."));
    let twin = base.join(raw.twin.get_ref());
    if !twin.is_file() {
        return Err(ScenarioError::at(
            &file,
            src,
            raw.twin.span(),
            format!("twin {} is not a file", twin.display()),
        ));
    }
    Ok(LiveScenario {
        path: path.to_path_buf(),
        name: raw.name,
        description: raw.description,
        twin,
        trials: raw.trials,
        lock,
        write,
        ttl_ms: raw.ttl_ms,
        retry_ms: raw.retry_ms,
        work_ms: raw.work_ms,
        request_timeout_ms: raw.request_timeout_ms,
        worker_cmd: raw.worker_cmd,
        workers,
        pauses,
        net,
        failovers,
        crashes,
        partitions,
        member_delays,
        zk_watch,
        find,
        min_fence_rejected: raw.expect.min_fence_rejected,
    })
}

pub fn load(path: &Path) -> anyhow::Result<LiveScenario> {
    let src =
        std::fs::read_to_string(path).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    Ok(parse(&src, path)?)
}
