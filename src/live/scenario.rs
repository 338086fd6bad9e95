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
    /// A user's own worker program (`fencesim live --worker-cmd` sets or overrides it).
    worker_cmd: Option<String>,
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

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawWorker {
    name: String,
    #[serde(default)]
    start_ms: u64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFault {
    kind: Spanned<String>,
    node: Spanned<String>,
    /// pause: the protocol point after which the worker is stopped.
    after: Option<Spanned<String>>,
    /// delay: which of the worker's messages the proxy holds ("update").
    message: Option<Spanned<String>>,
    #[serde(default)]
    duration_ms: u64,
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

/// The TCP proxy between `worker` and PostgreSQL holds its UPDATE for `duration_ms`.
#[derive(Clone, Debug)]
pub struct LiveHold {
    pub worker: String,
    pub duration_ms: u64,
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
    pub worker_cmd: Option<String>,
    pub workers: Vec<LiveWorker>,
    pub pauses: Vec<LivePause>,
    pub holds: Vec<LiveHold>,
    pub failovers: Vec<LiveFailover>,
    /// Empty: every trial must be clean.
    pub find: Vec<ViolationKind>,
    pub min_fence_rejected: u64,
}

/// Protocol points a worker can be paused after.
pub const PAUSE_POINTS: [&str; 2] = ["read_ok", "fence_checked"];
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
    let workers: Vec<LiveWorker> = raw
        .worker
        .into_iter()
        .map(|w| LiveWorker {
            name: w.name,
            start_ms: w.start_ms,
        })
        .collect();
    let mut pauses = Vec::new();
    let mut holds = Vec::new();
    let mut failovers = Vec::new();
    #[derive(Clone, Copy, PartialEq)]
    enum K {
        Pause,
        Delay,
        Failover,
    }
    for f in &raw.fault {
        let kind = one_of(
            &file,
            src,
            &f.kind,
            "fault kind",
            &[
                ("pause", K::Pause),
                ("delay", K::Delay),
                ("failover", K::Failover),
            ],
        )?;
        let node = f.node.get_ref();
        let worker = node
            .strip_prefix("worker/")
            .filter(|w| workers.iter().any(|x| x.name == *w))
            .ok_or_else(|| {
                ScenarioError::at(
                    &file,
                    src,
                    f.node.span(),
                    format!("unknown node {node:?}; expected worker/<name> of a [[worker]]"),
                )
            })?
            .to_string();
        let missing = |what: &str| {
            ScenarioError::at(
                &file,
                src,
                f.kind.span(),
                format!("this fault needs `{what}`"),
            )
        };
        if kind != K::Delay {
            let after = f.after.as_ref().ok_or_else(|| missing("after"))?;
            let client = raw.worker_cmd.is_some().then_some(CLIENT_POINTS.iter());
            let points: Vec<(&str, &str)> = PAUSE_POINTS
                .iter()
                .chain(client.into_iter().flatten())
                .map(|p| (*p, *p))
                .collect();
            let after = one_of(&file, src, after, "protocol point", &points)?.to_string();
            if let Some(other) = pauses
                .iter()
                .map(|p: &LivePause| (&p.worker, &p.after))
                .chain(
                    failovers
                        .iter()
                        .map(|p: &LiveFailover| (&p.worker, &p.after)),
                )
                .find(|(w, a)| **w == worker && **a != after)
            {
                return Err(ScenarioError::at(
                    &file,
                    src,
                    f.kind.span(),
                    format!(
                        "worker/{worker} already stops at {:?}; one protocol point per worker",
                        other.1
                    ),
                ));
            }
            if kind == K::Pause {
                pauses.push(LivePause {
                    worker,
                    after,
                    duration_ms: f.duration_ms,
                });
            } else {
                if lock == LockKind::None {
                    return Err(ScenarioError::at(
                        &file,
                        src,
                        f.kind.span(),
                        "a failover needs a Redis lock",
                    ));
                }
                failovers.push(LiveFailover { worker, after });
            }
        } else {
            let message = f.message.as_ref().ok_or_else(|| missing("message"))?;
            one_of(&file, src, message, "held message", &[("update", ())])?;
            holds.push(LiveHold {
                worker,
                duration_ms: f.duration_ms,
            });
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
        worker_cmd: raw.worker_cmd,
        workers,
        pauses,
        holds,
        failovers,
        find,
        min_fence_rejected: raw.expect.min_fence_rejected,
    })
}

pub fn load(path: &Path) -> anyhow::Result<LiveScenario> {
    let src =
        std::fs::read_to_string(path).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    Ok(parse(&src, path)?)
}
