//! The command-line front end: parse, call the library, map verdicts to
//! exit codes. Exit codes: 0 every expectation met (or history clean),
//! 1 an expectation failed (or violations found), 2 bad input,
//! 3 implementation error (a run panicked, or `--check-determinism` found
//! a seed that ran differently twice, or an implementation under
//! `validate` broke the wire protocol).

pub mod args;
pub mod flags;
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
pub use flags::{default_jobs, jobs, JOBS_MAX};

pub use crate::suite::exit::{
    Verdict, EXIT_BAD_INPUT, EXIT_FAILED, EXIT_INTERNAL, EXIT_INTERRUPTED, EXIT_OK,
};

/// Errors that are the user's input, not a failed expectation.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct BadInput(pub String);

/// Parses nothing and decides nothing: hands each subcommand its flags.
pub fn run(cli: args::Cli) -> Result<ExitCode> {
    match cli.command {
        Command::Run(a) => run::cmd(a),
        Command::Shrink(a) => shrink::cmd(a),
        Command::Merge(a) => merge::cmd(a),
        Command::Replay(a) => replay::cmd(a),
        Command::CheckHistory(a) => check_history::cmd(a),
        Command::Tradeoff(a) => tradeoff::cmd(a),
        Command::Validate(a) => validate::cmd(a),
        Command::Check(a) => check_models::cmd(a),
        Command::Search(a) => search::cmd(a),
        Command::Explore(a) => explore::cmd(a),
        Command::Live(a) => live::cmd_live(a),
        Command::LiveWorker(a) => live::cmd_worker(a),
        Command::List => {
            print!("{}", catalogue());
            Ok(Verdict::Met.into())
        }
    }
}

pub(crate) fn load(path: &std::path::Path) -> Result<scenario::Scenario> {
    scenario::load(path).map_err(|e| BadInput(e.to_string()).into())
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
