//! Live scenario files (`live/*.toml`): which lock recipe and write the
//! workers use, the workers' start times, the faults in real milliseconds,
//! the simulated twin (a `scenarios/` file) and what a trial should show.
//!
//! A separate small format, not a `[live]` section in the simulator's
//! files: the simulator's schema refuses unknown sections, and keeping live
//! files out of `scenarios/` means `fencesim run scenarios/` never starts a
//! server. Errors name file:line:column like every scenario error. The
//! `[[fault]]` tables are read in [`fault`].

use std::path::{Path, PathBuf};

use serde::Deserialize;
use toml::Spanned;

use super::zk::lane::WatchMode;
use super::{LockKind, WriteKind};
use crate::check::ViolationKind;
use crate::scenario::ScenarioError;

mod choice;
mod fault;
mod keys;

use super::fault::{Fault, Point, WorkerId};
use choice::one_of;

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
    /// Independent Redis masters a user's program gets (Redlock over N).
    redis_masters: Option<Spanned<u32>>,
    /// A user's program's lock key (exact, prefix `…*` or glob) and token
    /// key, when the server's account is not to find them.
    lock_key: Option<Spanned<String>>,
    token_key: Option<Spanned<String>>,
    worker: Vec<RawWorker>,
    #[serde(default)]
    fault: Vec<fault::RawFault>,
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
    /// The document row it locks and writes (1 unless named).
    document: Option<Spanned<u32>>,
    /// Start only once another worker holds the lock
    /// (`"worker/A:lock_granted"`), and not before `start_ms`.
    start_after: Option<Spanned<String>>,
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
    /// At most this many fence rejections per trial (0: the fence never had to act).
    max_fence_rejected: Option<Spanned<u64>>,
    /// zk-lock: at least this many watch notifications per trial.
    min_watch_notified: Option<Spanned<u64>>,
    /// zk-lock: at most this many watch notifications per trial.
    max_watch_notified: Option<Spanned<u64>>,
}

#[derive(Clone, Debug)]
pub struct LiveWorker {
    pub name: String,
    pub start_ms: u64,
    pub ops: u32,
    /// The document row it locks (its own lock key and token counter) and
    /// writes: 1..=[`super::DOCUMENTS_MAX`].
    pub document: u32,
    /// The worker (index) whose grant it waits for before it starts
    /// (`start_after = "worker/A:lock_granted"`): the order of the grants
    /// is then the scenario's, however slowly the first request is served.
    pub start_after_grant_of: Option<usize>,
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
    /// In the file's order ([`crate::live::fault`]).
    pub faults: Vec<Fault>,
    /// zk-lock: what a waiting worker watches.
    pub zk_watch: WatchMode,
    /// Independent Redis masters (1: the one Redis; N: a user's program
    /// gets N URLs and the lock is held on a majority of them).
    pub redis_masters: u32,
    /// A user's program's lock key as named (None: the server's account
    /// finds it), and its token key (None: likewise).
    pub lock_key: Option<super::common::keys::KeyChoice>,
    pub token_key: Option<String>,
    /// Empty: every trial must be clean.
    pub find: Vec<ViolationKind>,
    pub min_fence_rejected: u64,
    /// At most this many fence rejections in every trial (None: no bound).
    pub max_fence_rejected: Option<u64>,
    /// zk-lock: the watch notifications every trial must show, at least
    /// and at most (None: no bound).
    pub min_watch_notified: Option<u64>,
    pub max_watch_notified: Option<u64>,
}

impl LiveScenario {
    /// The one protocol point `worker` stops at for the harness, if any
    /// (the loader lets a worker stop at one).
    pub fn gate_of(&self, worker: WorkerId) -> Option<Point> {
        self.faults
            .iter()
            .filter_map(Fault::gate)
            .find(|(w, _)| *w == worker)
            .map(|(_, p)| p)
    }

    /// The workers' names, in order: what a fault's [`WorkerId`] indexes.
    pub fn worker_names(&self) -> Vec<String> {
        self.workers.iter().map(|w| w.name.clone()).collect()
    }

    /// About how long one trial takes (ms): its longest fault's end plus a
    /// lease. Only the order in which a `--jobs` run hands out trials
    /// (longest first) uses it, never a verdict.
    pub fn estimated_trial_ms(&self) -> u64 {
        let ends = self
            .faults
            .iter()
            .map(|f| f.at_ms().unwrap_or(0) + f.length_ms(self.ttl_ms));
        ends.max().unwrap_or(0) + self.ttl_ms
    }

    /// How long a trial may take before it is ended (and a built-in
    /// worker gives up): `asked` (--timeout-ms), or the scenario's own
    /// length plus 10 s when that is longer — a 20 s partition must not be
    /// cut short by a 15 s or 20 s default.
    pub fn trial_limit_ms(&self, asked_ms: u64) -> u64 {
        asked_ms.max(self.estimated_trial_ms() + 10_000)
    }

    /// A fault that needs the harness's own Redis (it kills or promotes it).
    pub fn server_fault(&self) -> Option<&'static str> {
        let failover = self
            .faults
            .iter()
            .find(|f| f.needs_own_redis() == Some("failover"));
        failover
            .or_else(|| self.faults.iter().find(|f| f.needs_own_redis().is_some()))
            .and_then(Fault::needs_own_redis)
    }
}

/// Worker `i`'s `start_after`: the index of the worker whose grant it
/// waits for — the built-in worker's `grant_received`, or for a user's
/// program the grant the servers' account shows it (its first acquisition
/// waits at the proxy until then).
fn start_after(
    file: &str,
    src: &str,
    raw: &RawFile,
    i: usize,
) -> Result<Option<usize>, ScenarioError> {
    let Some(after) = &raw.worker[i].start_after else {
        return Ok(None);
    };
    let err = |msg: String| ScenarioError::at(file, src, after.span(), msg);
    let other = after
        .get_ref()
        .strip_prefix("worker/")
        .and_then(|a| a.strip_suffix(":lock_granted"));
    let j = other.and_then(|name| raw.worker.iter().position(|w| w.name == name));
    match j {
        Some(j) if j != i => Ok(Some(j)),
        _ => Err(err(format!(
            "expected `start_after = \"worker/W:lock_granted\"` naming another worker of this file, got {:?}",
            after.get_ref()
        ))),
    }
}

/// Reads a live scenario file: its recipe, workers, faults ([`fault`]),
/// expectation and twin, every mistake located in the file.
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
    let (lock, write) = recipe(&file, src, &raw)?;
    let zk_watch = zk_watch(&file, src, &raw, lock)?;
    let redis_masters = redis_masters(&file, src, &raw, lock)?;
    let (lock_key, token_key) = keys::read(&file, src, (&raw.lock_key, &raw.token_key), lock)?;
    let workers: Vec<LiveWorker> = raw
        .worker
        .iter()
        .enumerate()
        .map(|(i, w)| {
            Ok(LiveWorker {
                name: w.name.clone(),
                start_ms: w.start_ms,
                ops: w.ops,
                document: w.document.as_ref().map_or(1, |d| *d.get_ref()),
                start_after_grant_of: start_after(&file, src, &raw, i)?,
            })
        })
        .collect::<Result<_, ScenarioError>>()?;
    documents(&file, src, &raw, lock)?;
    // `lock_granted` and `write_acked` are seen by the proxy, so only a
    // user's program (`worker_cmd`) can be stopped there.
    let client = raw.worker_cmd.is_some().then_some(Point::PROGRAM_ONLY);
    // The built-in worker checks the fence (`fence_checked`) only with
    // write = "check-then-update"; a program's UPDATE always reaches its proxy.
    let gates = Point::built_in(write == WriteKind::CheckThenUpdate || raw.worker_cmd.is_some());
    let points: Vec<Point> = (gates.iter().copied())
        .chain(client.into_iter().flatten())
        .collect();
    let cx = fault::Context {
        file: &file,
        src,
        lock,
        workers: workers.iter().map(|w| w.name.as_str()).collect(),
        points,
        client: raw.worker_cmd.is_some(),
    };
    let faults = fault::read(&cx, &raw.fault)?;
    let find = expected(&file, src, &raw.expect)?;
    counts(&file, src, &raw.expect, lock)?;
    let twin = twin(&file, src, path, &raw.twin)?;
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
        faults,
        zk_watch,
        redis_masters,
        lock_key,
        token_key,
        find,
        min_fence_rejected: raw.expect.min_fence_rejected,
        max_fence_rejected: raw.expect.max_fence_rejected.map(|m| *m.get_ref()),
        min_watch_notified: raw.expect.min_watch_notified.map(|m| *m.get_ref()),
        max_watch_notified: raw.expect.max_watch_notified.map(|m| *m.get_ref()),
    })
}

/// Workers spread over more than one document row (`document = N`): each
/// document its own row, Redis lock key and token counter. On a Redis lock
/// or on the database alone only (the etcd and ZooKeeper accounts watch
/// one lock); a user's program on several documents has each document's
/// keys found among its own workers', so they are not named exactly.
fn documents(file: &str, src: &str, raw: &RawFile, lock: LockKind) -> Result<(), ScenarioError> {
    let exact = |k: &Option<Spanned<String>>| {
        k.as_ref()
            .is_some_and(|k| !k.get_ref().contains(['*', '?', '[']))
    };
    for w in &raw.worker {
        let Some(doc) = &w.document else {
            continue;
        };
        let n = *doc.get_ref();
        let why = if !(1..=super::DOCUMENTS_MAX).contains(&n) {
            format!(
                "document is a row number from 1 to {}, not {n}",
                super::DOCUMENTS_MAX
            )
        } else if n == 1 {
            continue;
        } else if lock.cluster().is_some() {
            format!(
                "a worker on another document than 1 needs a Redis lock or lock = \"none\"; {} watches one lock",
                lock.name()
            )
        } else if raw.worker_cmd.is_some() && (exact(&raw.lock_key) || raw.token_key.is_some()) {
            "a user's program on several documents has each document's keys found: name the lock by a prefix or a glob (`lock:invoice:*`) and leave token_key out".to_string()
        } else {
            continue;
        };
        return Err(ScenarioError::at(file, src, doc.span(), why));
    }
    Ok(())
}

/// How many independent Redis masters: 1 to 9, a Redis lock's only, and
/// more than one only for a user's program (the built-in worker takes one
/// Redis lock; `--worker-cmd` on the command line is checked when it runs).
fn redis_masters(
    file: &str,
    src: &str,
    raw: &RawFile,
    lock: LockKind,
) -> Result<u32, ScenarioError> {
    let Some(n) = &raw.redis_masters else {
        return Ok(1);
    };
    let at = |msg: &str| ScenarioError::at(file, src, n.span(), msg.to_string());
    match *n.get_ref() {
        0 | 10.. => Err(at("redis_masters must be 1 to 9")),
        1 => Ok(1),
        _ if !matches!(lock, LockKind::RedisSetNxDel | LockKind::RedisSetNxCad) => {
            Err(at("redis_masters goes with a Redis lock (redis-set-nx-del or redis-set-nx-cad)"))
        }
        _ if raw.fault.iter().any(|f| f.names_coordinator()) => Err(at(
            "redis_masters > 1: a crash or failover of coord/0 names no one master; fault a worker instead",
        )),
        n => Ok(n),
    }
}

/// The schema version, and the lock recipe and write that go together.
fn recipe(file: &str, src: &str, raw: &RawFile) -> Result<(LockKind, WriteKind), ScenarioError> {
    if *raw.schema_version.get_ref() != 1 {
        return Err(ScenarioError::at(
            file,
            src,
            raw.schema_version.span(),
            "schema_version must be 1",
        ));
    }
    let lock = one_of(file, src, &raw.lock, "lock", &LockKind::NAMES)?;
    let write = one_of(file, src, &raw.write, "write", &WriteKind::NAMES)?;
    if (lock == LockKind::None) != (write == WriteKind::SelectForUpdate) {
        return Err(ScenarioError::at(
            file,
            src,
            raw.lock.span(),
            "lock = \"none\" goes with write = \"select-for-update\" (the database is the lock), and only with it",
        ));
    }
    // Whether a user's program (`worker_cmd`) can be judged on this lock's
    // server is the CLI's check (`client::supports`), before any server starts.
    Ok((lock, write))
}

/// What a ZooKeeper waiter watches (only a zk-lock scenario may say).
fn zk_watch(
    file: &str,
    src: &str,
    raw: &RawFile,
    lock: LockKind,
) -> Result<WatchMode, ScenarioError> {
    let Some(w) = &raw.zk_watch else {
        return Ok(WatchMode::default());
    };
    let mode = one_of(file, src, w, "zk_watch", &WatchMode::NAMES)?;
    if lock != LockKind::ZkLock {
        return Err(ScenarioError::at(
            file,
            src,
            w.span(),
            format!(
                "zk_watch chooses what a ZooKeeper waiter watches; this scenario's lock is {}",
                lock.name()
            ),
        ));
    }
    Ok(mode)
}

/// The violation kinds a trial is expected to show.
fn expected(
    file: &str,
    src: &str,
    expect: &RawExpect,
) -> Result<Vec<ViolationKind>, ScenarioError> {
    let kinds: Vec<(&str, ViolationKind)> =
        ViolationKind::ALL.iter().map(|k| (k.name(), *k)).collect();
    expect
        .find
        .iter()
        .map(|k| one_of(file, src, k, "violation kind", &kinds))
        .collect()
}

/// The per-trial counts `[expect]` bounds: watch notifications only on a
/// ZooKeeper lock (the only lane that counts them), and no maximum below
/// its minimum (a scenario no trial could meet).
fn counts(file: &str, src: &str, e: &RawExpect, lock: LockKind) -> Result<(), ScenarioError> {
    let at = |v: &Spanned<u64>, msg: String| ScenarioError::at(file, src, v.span(), msg);
    for w in [&e.min_watch_notified, &e.max_watch_notified]
        .into_iter()
        .flatten()
    {
        if lock != LockKind::ZkLock {
            return Err(at(
                w,
                format!(
                    "watch notifications are counted on a ZooKeeper lock (zk-lock); this scenario's lock is {}",
                    lock.name()
                ),
            ));
        }
    }
    let pairs = [
        (
            "watch_notified",
            e.min_watch_notified.as_ref().map(|m| *m.get_ref()),
            &e.max_watch_notified,
        ),
        (
            "fence_rejected",
            Some(e.min_fence_rejected),
            &e.max_fence_rejected,
        ),
    ];
    for (what, min, max) in pairs {
        if let (Some(min), Some(max)) = (min, max) {
            if *max.get_ref() < min {
                return Err(at(
                    max,
                    format!(
                        "max_{what} = {} is below min_{what} = {min}: no trial could meet it",
                        max.get_ref()
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// The simulated twin's file, relative to this one.
fn twin(
    file: &str,
    src: &str,
    path: &Path,
    twin: &Spanned<String>,
) -> Result<PathBuf, ScenarioError> {
    let base = path.parent().unwrap_or(Path::new("."));
    let twin_path = base.join(twin.get_ref());
    if !twin_path.is_file() {
        return Err(ScenarioError::at(
            file,
            src,
            twin.span(),
            format!("twin {} is not a file", twin_path.display()),
        ));
    }
    Ok(twin_path)
}

pub fn load(path: &Path) -> anyhow::Result<LiveScenario> {
    let src =
        std::fs::read_to_string(path).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    Ok(parse(&src, path)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(lock: &str, extra: &str, b_document: &str) -> String {
        let write = if lock == "none" {
            "select-for-update"
        } else {
            "plain"
        };
        format!(
            "schema_version = 1\nname = \"t\"\ntwin = \"../scenarios/article/gc-pause-stale-write.toml\"\n\
             lock = \"{lock}\"\nwrite = \"{write}\"\nttl_ms = 300\n{extra}\n\
             [[worker]]\nname = \"A\"\n[[worker]]\nname = \"B\"\ndocument = {b_document}\n[expect]\n"
        )
    }

    fn error(src: &str) -> String {
        parse(src, Path::new("live/t.toml"))
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn workers_on_two_documents_each_get_their_row_and_bad_ones_are_located() {
        let s = parse(&file("redis-set-nx-cad", "", "2"), Path::new("live/t.toml")).unwrap();
        let docs: Vec<u32> = s.workers.iter().map(|w| w.document).collect();
        assert_eq!(docs, [1, 2]);
        let none = parse(&file("none", "", "3"), Path::new("live/t.toml")).unwrap();
        assert_eq!(none.workers[1].document, 3);

        let e = error(&file("redis-set-nx-cad", "", "0"));
        assert!(e.contains("live/t.toml:12:12"), "{e}");
        assert!(e.contains("from 1 to 4, not 0"), "{e}");
        let e = error(&file("redis-set-nx-cad", "", "5"));
        assert!(e.contains("from 1 to 4, not 5"), "{e}");
        // A user's program on two documents: each document's keys found.
        let program = file("redis-set-nx-cad", "worker_cmd = \"true\"", "2");
        assert!(parse(&program, Path::new("live/t.toml")).is_ok());
        let prefix = "worker_cmd = \"true\"\nlock_key = \"lock:invoice:*\"";
        assert!(parse(
            &file("redis-set-nx-cad", prefix, "2"),
            Path::new("live/t.toml")
        )
        .is_ok());
        let exact = "worker_cmd = \"true\"\nlock_key = \"lock:invoice:1\"";
        let e = error(&file("redis-set-nx-cad", exact, "2"));
        assert!(e.contains("each document's keys found"), "{e}");
        let token = "worker_cmd = \"true\"\ntoken_key = \"fence:1\"";
        let e = error(&file("redis-set-nx-cad", token, "2"));
        assert!(e.contains("leave token_key out"), "{e}");
        let e = error(&file("etcd-lock", "", "2"));
        assert!(e.contains("etcd-lock watches one lock"), "{e}");
        // Document 1 named outright is every scenario's document.
        assert!(parse(&file("etcd-lock", "", "1"), Path::new("live/t.toml")).is_ok());
    }

    /// A Redis scenario of two workers on document 1 with `write` and one `[[fault]]` table.
    fn with_fault(write: &str, fault: &str) -> String {
        file("redis-set-nx-del", "", "1").replace("\"plain\"", &format!("\"{write}\""))
            + &format!("[[fault]]\n{fault}\n")
    }

    #[test]
    fn a_fault_at_fence_checked_is_refused_unless_the_built_in_worker_checks_the_fence_there() {
        let pause =
            "kind = \"pause\"\nnode = \"worker/A\"\nafter = \"fence_checked\"\nduration_ms = 100";
        let e = error(&with_fault("plain", pause));
        assert!(e.contains("live/t.toml:17:9"), "{e}");
        assert!(e.contains("only with write = \"check-then-update\""), "{e}");
        let s = parse(
            &with_fault("check-then-update", pause),
            Path::new("live/t.toml"),
        );
        assert!(s.is_ok(), "{:?}", s.err());
    }

    #[test]
    fn fields_a_fault_kind_would_ignore_are_refused_where_they_stand() {
        let cases = [
            (
                "kind = \"pause\"\nnode = \"worker/A\"\nafter = \"read_ok\"\nduration_ms = 100\nmessage = \"update\"",
                "live/t.toml:19:11",
                "`message` belongs to a delay, drop or cut",
            ),
            (
                "kind = \"crash\"\nnode = \"worker/A\"\nafter = \"read_ok\"\nmessage = \"update\"",
                "live/t.toml:18:11",
                "`message` belongs to a delay, drop or cut",
            ),
            (
                "kind = \"crash\"\nnode = \"worker/A\"\nafter = \"read_ok\"\nduration_ms = 100",
                "live/t.toml:18:15",
                "no `duration_ms`",
            ),
            (
                "kind = \"failover\"\nnode = \"worker/A\"\nafter = \"read_ok\"\nduration_ms = 5",
                "live/t.toml:18:15",
                "no `duration_ms`",
            ),
            (
                "kind = \"pause\"\nnode = \"worker/A\"\nafter = \"read_ok\"",
                "live/t.toml:15:8",
                "this fault needs `duration_ms`",
            ),
        ];
        for (fault, at, why) in cases {
            let e = error(&with_fault("plain", fault));
            assert!(e.contains(at) && e.contains(why), "{fault}: {e}");
        }
    }

    #[test]
    fn a_worker_may_start_after_another_is_granted_and_a_bad_start_after_is_located() {
        let src = |after: &str| {
            file("redis-set-nx-cad", "", "1").replace(
                "document = 1",
                &format!("document = 1\nstart_after = \"{after}\""),
            )
        };
        let s = parse(&src("worker/A:lock_granted"), Path::new("live/t.toml"));
        let gates = s.map(|s| {
            s.workers
                .iter()
                .map(|w| w.start_after_grant_of)
                .collect::<Vec<_>>()
        });
        assert_eq!(gates.ok(), Some(vec![None, Some(0)]));
        for bad in [
            "worker/B:lock_granted",
            "worker/C:lock_granted",
            "worker/A:read_ok",
        ] {
            let e = error(&src(bad));
            assert!(e.contains("live/t.toml:13:15"), "{bad}: {e}");
            assert!(
                e.contains("naming another worker of this file"),
                "{bad}: {e}"
            );
        }
        // A program's file reads it too (a bundled file runs with a program).
        let program = src("worker/A:lock_granted").replace(
            "schema_version = 1",
            "schema_version = 1\nworker_cmd = \"true\"",
        );
        assert!(parse(&program, Path::new("live/t.toml")).is_ok());
    }

    #[test]
    fn a_pause_until_another_workers_op_ends_is_read_and_misplaced_untils_are_refused() {
        let pause =
            "kind = \"pause\"\nnode = \"worker/A\"\nafter = \"read_ok\"\nduration_ms = 2000";
        let anchored = format!("{pause}\nuntil = \"other_op_done\"");
        let s = parse(&with_fault("plain", &anchored), Path::new("live/t.toml"));
        let until = s.map(|s| s.faults[0].action);
        assert!(
            matches!(
                until,
                Ok(crate::live::fault::Action::Pause {
                    duration_ms: 2000,
                    until: crate::live::fault::PauseEnd::OtherOpDone,
                    ..
                })
            ),
            "{until:?}"
        );
        let cases = [
            (
                format!("{pause}\nuntil = \"b_granted\""),
                "live/t.toml:19:9",
                "expected \"other_op_done\"",
            ),
            (
                "kind = \"crash\"\nnode = \"worker/A\"\nafter = \"read_ok\"\nuntil = \"other_op_done\"".to_string(),
                "live/t.toml:18:9",
                "`until` belongs to a worker's pause",
            ),
        ];
        for (fault, at, why) in cases {
            let e = error(&with_fault("plain", &fault));
            assert!(e.contains(at) && e.contains(why), "{fault}: {e}");
        }
        let program = with_fault("plain", &anchored).replace(
            "schema_version = 1",
            "schema_version = 1\nworker_cmd = \"true\"",
        );
        // A program's file reads it too: its pause lasts its `duration_ms`.
        assert!(parse(&program, Path::new("live/t.toml")).is_ok());
    }

    #[test]
    fn a_held_or_dropped_update_until_another_workers_op_ends_is_read_and_a_cut_one_is_refused() {
        let delay = "kind = \"delay\"\nnode = \"worker/A\"\nmessage = \"update\"\nduration_ms = 5000\nuntil = \"other_op_done\"";
        let s = parse(&with_fault("fenced", delay), Path::new("live/t.toml"));
        let action = s.map(|s| s.faults[0].action);
        assert!(
            matches!(
                action,
                Ok(crate::live::fault::Action::Net {
                    mode: crate::live::proxy::ProxyMode::Hold { ms: 5000 },
                    until: crate::live::fault::PauseEnd::OtherOpDone,
                    ..
                })
            ),
            "{action:?}"
        );
        let dropped = parse(
            &with_fault("fenced", &delay.replace("delay", "drop")),
            Path::new("live/t.toml"),
        );
        assert!(
            matches!(
                dropped.map(|s| s.faults[0].action),
                Ok(crate::live::fault::Action::Net {
                    mode: crate::live::proxy::ProxyMode::Drop { ms: 5000 },
                    until: crate::live::fault::PauseEnd::OtherOpDone,
                    ..
                })
            ),
            "a drop window may end when another worker's operation does"
        );
        let cut = delay
            .replace("delay", "cut")
            .replace("duration_ms = 5000\n", "");
        let e = error(&with_fault("fenced", &cut));
        assert!(
            e.contains("live/t.toml:18:9") && e.contains("the delay or drop of a worker's message"),
            "{e}"
        );
    }
}
