//! What `fencesim list` prints: the catalogue of protocols (from the
//! protocol table), the `[protocol]` options, the fault kinds and knobs, the
//! checkers and the history kinds — one place, so the list a user reads
//! and the names the scenario parser accepts come from the same data.

use crate::{check, history};

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

pub fn render() -> String {
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

/// `list`'s last section: the bundled scenarios for `validate`, those with a
/// clean built-in reference first (an implementation can fail them on every
/// kind), then the rest with the kinds each cannot judge (its own: the
/// built-in reference shows them or may). Empty without bundled scenarios.
pub fn validate_scenarios(scenarios: &[(String, Vec<&'static str>)]) -> String {
    use std::fmt::Write as _;
    if scenarios.is_empty() {
        return String::new();
    }
    let mut s = String::from(
        "scenarios for `validate` with a clean built-in reference (an implementation can fail them on every kind):\n",
    );
    for (path, _) in scenarios.iter().filter(|(_, k)| k.is_empty()) {
        let _ = writeln!(s, "  {path}");
    }
    s.push_str(
        "scenarios whose built-in reference shows (or may show) a violation: validate cannot judge these kinds there:\n",
    );
    for (path, kinds) in scenarios.iter().filter(|(_, k)| !k.is_empty()) {
        let _ = writeln!(s, "  {path:<64} {}", kinds.join(", "));
    }
    s
}
