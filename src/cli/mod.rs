//! The command-line front end: parse, call the library, map verdicts to
//! exit codes. Exit codes: 0 every expectation met (or history clean),
//! 1 an expectation failed (or violations found), 2 bad input,
//! 3 implementation error (a run panicked, or `--check-determinism` found
//! a seed that ran differently twice, or an implementation under
//! `validate` broke the wire protocol).

pub mod args;
// `fencesim check` (model checking); named apart from `crate::check`, the history checker.
mod check_history;
#[path = "check.rs"]
mod check_models;
mod explore;
pub mod live;
mod merge;
mod replay;
mod run;
mod search;
mod shrink;
mod tradeoff;
mod validate;

use std::process::ExitCode;

use anyhow::Result;

use crate::{check, history, scenario};
use args::Command;

pub use crate::suite::exit::{EXIT_BAD_INPUT, EXIT_FAILED, EXIT_INTERNAL, EXIT_OK};

/// Errors that are the user's input, not a failed expectation.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct BadInput(pub String);

pub fn run(cli: args::Cli) -> Result<ExitCode> {
    match cli.command {
        Command::Run {
            paths,
            seeds,
            seed_start,
            jobs,
            report,
            metrics,
            swarm,
            check_determinism,
            format,
            junit,
            shard,
        } => run::cmd_run(
            &paths,
            run::RunArgs {
                seeds,
                seed_start,
                jobs,
                cfg: crate::suite::SweepConfig {
                    swarm,
                    check_determinism,
                    shard,
                },
                format,
                junit,
                report,
                metrics,
            },
        ),
        Command::Shrink {
            path,
            seed,
            swarm,
            kind,
            out,
            max_runs,
        } => shrink::cmd_shrink(&path, seed, swarm, kind.as_deref(), out, max_runs),
        Command::Merge {
            files,
            format,
            junit,
            report,
            jobs: _,
        } => merge::cmd_merge(&files, format, junit, report),
        Command::Replay {
            path,
            seed,
            history,
            no_trace,
            emit_scenario,
            report,
            swarm,
            expect_version,
            expect_hash,
        } => {
            replay::warn_if_changed(&path, expect_version.as_deref(), expect_hash.as_deref())?;
            replay::cmd_replay(
                &path,
                seed,
                history,
                !no_trace,
                emit_scenario,
                swarm,
                report,
            )
        }
        Command::CheckHistory { path } => check_history::cmd_check_history(&path),
        Command::Tradeoff {
            path,
            ttls_ms,
            seeds,
            jobs,
            report,
        } => tradeoff::cmd_tradeoff(&path, &ttls_ms, seeds, jobs, report),
        Command::Validate {
            nodes,
            paths,
            seeds,
            seed_start,
            jobs,
            step_timeout_ms,
            shard,
            format,
        } => validate::cmd_validate(
            &nodes,
            &paths,
            validate::ValidateArgs {
                seeds,
                seed_start,
                jobs,
                step_timeout_ms,
                shard,
                format,
            },
        ),
        Command::Check {
            paths,
            threads,
            emit_scenario,
            format,
        } => check_models::cmd_check(&paths, threads, emit_scenario, format),
        Command::Search {
            path,
            faults,
            seed,
            jobs,
            nodes,
            step_timeout_ms,
            out,
            no_shrink,
            shard,
            json,
            merge,
        } => search::cmd_search(
            &path,
            search::SearchArgs {
                faults,
                seed,
                jobs,
                nodes,
                step_timeout_ms,
                out,
                no_shrink,
                shard,
                json,
                merge,
            },
        ),
        Command::Explore { path, port } => explore::cmd_explore(&path, port),
        Command::Live(a) => live::cmd_live(a),
        Command::LiveWorker(a) => live::cmd_worker(a),
        Command::List => {
            print!("{}", catalogue());
            Ok(ExitCode::from(EXIT_OK))
        }
    }
}

pub(crate) fn load(path: &std::path::Path) -> Result<scenario::Scenario> {
    scenario::load(path).map_err(|e| BadInput(e.to_string()).into())
}

pub fn default_jobs() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// More worker threads than this only costs memory and start-up time (each
/// seed is one thread's work); results never depend on the count.
pub const JOBS_MAX: usize = 256;

/// `--jobs` (default: all cores), at least 1 and capped at [`JOBS_MAX`],
/// saying so on stderr when capped.
pub fn jobs(requested: Option<usize>) -> usize {
    let jobs = requested.unwrap_or_else(default_jobs).max(1);
    if jobs > JOBS_MAX {
        eprintln!("note: --jobs {jobs} capped at {JOBS_MAX}");
    }
    jobs.min(JOBS_MAX)
}

/// The seeds to run for `s`: its own range, overridden by `--seed-start` and
/// `--seeds`. Zero seeds, or a range that would run past 2^64 (and so be
/// silently cut short), is bad input: a sweep of nothing must not pass.
pub(crate) fn seed_range(
    s: &scenario::Scenario,
    seed_start: Option<u64>,
    seeds: Option<u64>,
) -> Result<std::ops::Range<u64>, BadInput> {
    let start = seed_start.unwrap_or(s.seeds.start);
    let count = seeds.unwrap_or(s.seeds.end - s.seeds.start);
    let max = scenario::limits::SEEDS_MAX;
    if count == 0 || count > max {
        return Err(BadInput(format!(
            "--seeds {count}: expected from 1 to {max} seeds"
        )));
    }
    start.checked_add(count).map(|end| start..end).ok_or_else(|| {
        BadInput(format!(
            "{}: seeds {start}.. with {count} seeds pass 2^64 (only {} fit); expected a smaller --seed-start or --seeds",
            s.path.display(),
            u64::MAX - start
        ))
    })
}

/// Fails now, before a long sweep, if `file` cannot be written later.
/// Creates it (empty) if it does not exist; the sweep overwrites it.
pub(crate) fn check_writable_file(flag: &str, file: &std::path::Path) -> Result<(), BadInput> {
    std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(file)
        .map(drop)
        .map_err(|e| {
            BadInput(format!(
                "{flag} {}: {e}; expected a writable file path",
                file.display()
            ))
        })
}

/// As [`check_writable_file`] for a directory the report is written into.
pub(crate) fn check_writable_dir(flag: &str, dir: &std::path::Path) -> Result<(), BadInput> {
    let probe = dir.join(".fencesim-write-check");
    std::fs::create_dir_all(dir)
        .and_then(|()| std::fs::write(&probe, b""))
        .and_then(|()| std::fs::remove_file(&probe))
        .map_err(|e| {
            BadInput(format!(
                "{flag} {}: {e}; expected a writable directory",
                dir.display()
            ))
        })
}

const FAULTS: [(&str, &str); 13] = [
    (
        "pause",
        "process pause (GC, SIGSTOP, page fault): inputs and due timers wait until resume",
    ),
    (
        "crash",
        "crash, optional restart from synced storage; volatile state and buffered writes lost",
    ),
    (
        "partition",
        "full or one-way partition between two node groups; in-flight messages per knob",
    ),
    (
        "delay",
        "one message (nth on a link) held in a queue for extra time after it was sent",
    ),
    ("drop", "one message (nth on a link) lost"),
    (
        "duplicate",
        "one message (nth on a link) delivered twice, the copy later",
    ),
    (
        "failover",
        "coordinator primary crashes, the next replica is promoted (Sentinel, election)",
    ),
    (
        "clock_jump",
        "a node's wall clock steps by by_ms at a time or right after a protocol event (NTP step)",
    ),
    (
        "network.loss/delay/duplicate",
        "random per-message loss, delay spikes, duplication",
    ),
    (
        "network.partition_hits_in_flight",
        "whether a partition also drops messages already in flight",
    ),
    (
        "clock",
        "per-node wall offset, drift (ppm) and jumps; monotonic clocks drift only",
    ),
    (
        "protocol.volatile_fence",
        "the resource loses its fence (not its data) on restart",
    ),
    (
        "random",
        "per-seed random pauses, crashes, partitions, failovers, resolved into a script",
    ),
];

/// `[protocol]` options that compose with the protocols above.
const OPTIONS: [(&str, &str, &str); 12] = [
    (
        "strict",
        "fenced: one write per token (fence < $token, not <=)",
        "the article's UPDATE ... WHERE fencing_token < $2",
    ),
    (
        "fence_reads",
        "fenced: reads carry the token and raise the fence too",
        "the article's lost-update window between the new holder's read and write",
    ),
    (
        "fence",
        "native-token protocols and consensus-generation: whether the resource checks the token",
        "Chubby sequencers; ZooKeeper/etcd revisions as tokens",
    ),
    (
        "renew_every_ms",
        "heartbeat renewal while holding, on any lease protocol",
        "DynamoDB lock client heartbeats; Redisson watchdog",
    ),
    (
        "replicas / replication_lag_ms",
        "lease server replicas: async (INCR beside a lease) or quorum (consensus-generation)",
        "Redis replication; Chubby/Paxos",
    ),
    (
        "lock_delay_ms",
        "after a lease expires (no release), the key is refused this long",
        "Burrows, The Chubby lock service (OSDI 2006) 2.4: lock-delay",
    ),
    (
        "check_to_write_ms",
        "fenced-check-then-write: time between the fence check and the write",
        "the article's 'subtly broken' getFence-then-update",
    ),
    (
        "herd",
        "zk-sequential: every waiter watches the lock node (herd effect)",
        "ZooKeeper Recipes and Solutions: Locks (the herd effect)",
    ),
    (
        "masters",
        "redlock: how many independent Redis masters (coord/0..N-1, default 5)",
        "redis.io 'Distributed Locks with Redis' (N = 5 in its example)",
    ),
    (
        "fsync",
        "redlock: \"always\" syncs every write; \"never\" (default) forgets keys on a crash",
        "redis.io 'Distributed Locks with Redis': crash recovery and fsync; Kleppmann (2016)",
    ),
    (
        "restart_delay_ms",
        "redlock: a restarted master answers nothing this long (safe from one TTL up)",
        "antirez, 'Is Redlock safe?' (2016): delayed restarts",
    ),
    (
        "worker.locks / workload.lock_order",
        "multi-lock ops: each worker's lock order; \"sorted\" = one global order (no deadlock)",
        "Coffman et al. (1971): circular wait; lock ordering as the standard fix",
    ),
];

pub fn catalogue() -> String {
    use std::fmt::Write as _;
    let mut s =
        String::from("protocols (id, what it models, where the behaviour is documented):\n");
    for k in crate::protocol::ProtocolKind::ALL {
        let _ = writeln!(
            s,
            "  {:<26} {}\n  {:<26}   source: {}",
            k.id(),
            k.summary(),
            "",
            k.source()
        );
    }
    s.push_str("options ([protocol] keys unless named, composable where natural):\n");
    for (name, doc, source) in OPTIONS {
        let _ = writeln!(s, "  {name:<34} {doc}\n  {:<34}   source: {source}", "");
    }
    s.push_str("faults (scenario [[fault]] kinds, [network] and [random] knobs, [clock]):\n");
    for (name, doc) in FAULTS {
        let _ = writeln!(s, "  {name:<34} {doc}");
    }
    s.push_str("checkers:\n");
    for k in check::ViolationKind::ALL {
        let _ = writeln!(s, "  {:<28} {}", k.name(), k.doc());
    }
    s.push_str("history kinds:\n");
    for k in history::Kind::ALL {
        let _ = writeln!(s, "  {:<28} {}", k.name(), k.doc());
    }
    s
}
