//! The replay held against Redis itself: real `MONITOR` captures of the
//! lock libraries of the matrix (tests/data/monitor/, recorded on
//! redis-server 7.0.15) are fed to a ledger, and the keyspace notifications
//! the replay predicts for the lock key must be the ones Redis sent in the
//! same capture (`keyspace/NAME.txt`). Each capture's actors announce
//! themselves with `ECHO actor:<name>`, so attribution comes from the
//! capture, not from the test.

use std::path::{Path, PathBuf};

use super::ledger::{Fact, Ledger};
use super::majority::combine;
use super::monitor::{parse, Caller};
use crate::live::common::fact::LockFact;

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/monitor")
        .join(name)
}

const ACTORS: [&str; 3] = ["A", "B", "C"];

/// The capture's ledger (actors A, B, C = workers 0, 1, 2) and the time
/// its keyspace capture ran until: a minute past the last line is well
/// within it (each was stopped seconds after its program ended), so a
/// lease left to run out did so in the capture too.
fn replay(name: &str) -> (Ledger, u64) {
    let text = std::fs::read_to_string(data(name)).unwrap();
    let mut ledger = Ledger::new(b"lock:doc", b"fence:doc", 0);
    let mut last = 0;
    for line in text.lines().filter(|l| *l != "OK" && !l.is_empty()) {
        let l = parse(line).unwrap_or_else(|e| panic!("{name}: {e}: {line}"));
        if let (Caller::Client(addr), Some(actor)) = (&l.caller, l.args.get(1)) {
            if l.name() == "echo" {
                let actor = String::from_utf8_lossy(actor);
                if let Some(w) = ACTORS
                    .iter()
                    .position(|a| Some(*a) == actor.strip_prefix("actor:"))
                {
                    ledger.register(addr.clone(), w);
                }
            }
        }
        last = l.ts_us;
        ledger.feed(&l);
    }
    (ledger, last + 60_000_000)
}

/// The lock key's notifications in a keyspace capture, in order, with the
/// token key's counts among them as `token` (the replay's prediction).
fn notified(name: &str) -> Vec<String> {
    let text = std::fs::read_to_string(data(&format!("keyspace/{name}"))).unwrap();
    text.lines()
        .filter_map(|l| {
            if let Some(ev) =
                l.strip_prefix(r#""pmessage","__key*@0__:*","__keyspace@0__:lock:doc",""#)
            {
                return Some(ev.trim_end_matches('"').to_string());
            }
            let ev = l.strip_prefix(r#""pmessage","__key*@0__:*","__keyspace@0__:fence:doc",""#)?;
            matches!(ev.trim_end_matches('"'), "incrby" | "decrby")
                .then(|| super::ledger::TOKEN_COUNTED.to_string())
        })
        .collect()
}

/// Facts as short words: `granted A`, `token A 1`, `deleted 1 by B`, `expired 2`.
fn words(facts: &[Fact]) -> Vec<String> {
    facts
        .iter()
        .map(|f| match f {
            Fact::Granted { grant, worker, .. } => format!("granted {grant} {}", ACTORS[*worker]),
            Fact::Renewed { grant, worker, .. } => {
                format!("renewed {grant} by {}", ACTORS[*worker])
            }
            Fact::Deleted { grant, worker, .. } => {
                format!("deleted {grant} by {}", ACTORS[*worker])
            }
            Fact::Expired { grant, .. } => format!("expired {grant}"),
            Fact::Token { worker, value, .. } => format!("token {} {value}", ACTORS[*worker]),
        })
        .collect()
}

fn check(name: &str, expected: &[&str]) {
    let (mut ledger, last) = replay(&format!("{name}.txt"));
    ledger.finish(last);
    assert!(
        ledger.problems().is_empty(),
        "{name}: {:?}",
        ledger.problems()
    );
    assert_eq!(words(ledger.facts()), expected, "{name}");
    let predicted: Vec<String> = ledger.notified().iter().map(|s| s.to_string()).collect();
    assert_eq!(
        predicted,
        notified(&format!("{name}.txt")),
        "{name}: keyspace notifications"
    );
}

#[test]
fn redis_py_lock_takes_renews_and_releases_and_a_release_after_expiry_deletes_nothing() {
    check(
        "redis-py-lock",
        &[
            "granted 1 A",
            "token A 1",
            "renewed 1 by A",
            "deleted 1 by A",
            "granted 2 B",
            "expired 2",
            "granted 3 C",
            "deleted 3 by C",
        ],
    );
}

#[test]
fn python_redis_lock_releases_with_its_two_key_script() {
    check(
        "python-redis-lock",
        &[
            "granted 1 A",
            "renewed 1 by A",
            "deleted 1 by A",
            "granted 2 B",
            "expired 2",
            "granted 3 C",
            "deleted 3 by C",
        ],
    );
}

#[test]
fn node_redlock_on_one_master_and_its_failed_attempts_clean_up_nothing() {
    check(
        "node-redlock",
        &[
            "granted 1 A",
            "renewed 1 by A",
            "deleted 1 by A",
            "granted 2 B",
            "expired 2",
            "granted 3 C",
            "deleted 3 by C",
        ],
    );
}

#[test]
fn hand_rolled_ioredis_set_nx_and_script_release() {
    check(
        "ioredis-set-nx",
        &[
            "granted 1 A",
            "token A 1",
            "deleted 1 by A",
            "granted 2 B",
            "expired 2",
            "granted 3 C",
            "deleted 3 by C",
        ],
    );
}

#[test]
fn node_redlock_over_five_masters_is_one_lock_by_majority() {
    let masters: Vec<Vec<(u64, Fact)>> = (0..5)
        .map(|m| {
            let name = format!("node-redlock-5masters.m{m}");
            let (mut ledger, last) = replay(&format!("{name}.txt"));
            ledger.finish(last);
            assert!(
                ledger.problems().is_empty(),
                "{name}: {:?}",
                ledger.problems()
            );
            let predicted: Vec<String> = ledger.notified().iter().map(|s| s.to_string()).collect();
            assert_eq!(predicted, notified(&format!("{name}.txt")), "{name}");
            // Each master's stamps are its own wall clock, all this machine's.
            ledger
                .facts()
                .iter()
                .map(|f| (f.ts_us() * 1000, f.clone()))
                .collect()
        })
        .collect();
    let lock: Vec<String> = combine(&masters)
        .iter()
        .map(|f| match f {
            LockFact::Granted { grant, worker, .. } => {
                format!("granted {grant} {}", ACTORS[*worker])
            }
            LockFact::Renewed { grant, .. } => format!("renewed {grant}"),
            LockFact::Released { grant, by, .. } => format!("released {grant} by {}", ACTORS[*by]),
            LockFact::Expired { grant, .. } => format!("expired {grant}"),
            LockFact::Token { worker, value, .. } => format!("token {} {value}", ACTORS[*worker]),
            LockFact::Position { value, .. } => format!("at {value}"),
        })
        .collect();
    assert_eq!(
        lock,
        // One extend renews the key on each of the five masters.
        [
            "granted 1 A",
            "renewed 1",
            "renewed 1",
            "renewed 1",
            "renewed 1",
            "renewed 1",
            "released 1 by A",
            "granted 2 B",
            "expired 2",
            "granted 3 C",
            "released 3 by C"
        ]
    );
}

#[test]
fn transactions_scripts_functions_and_set_variants_replay_as_redis_ran_them() {
    let (mut ledger, last) = replay("shapes.txt");
    ledger.finish(last);
    let predicted: Vec<String> = ledger.notified().iter().map(|s| s.to_string()).collect();
    assert_eq!(predicted, notified("shapes.txt"));
    // The one command the replay refuses to guess at: a script's INCR of
    // the lock key itself (Redis answered an error and changed nothing).
    assert_eq!(ledger.problems(), ["cannot replay INCR on the lock key"]);
    assert_eq!(
        words(ledger.facts()),
        [
            "granted 1 A",
            "token A 1", // pipeline MULTI/EXEC
            "token A 2",
            "deleted 1 by A", // again, held: SET NX refused, INCRBY still ran
            "granted 2 A",
            "token A 3",
            "deleted 2 by A", // pipeline without MULTI
            "granted 3 A",
            "token A 4",
            "deleted 3 by A", // EVAL lock+token; B's refused; read-only EVAL
            "granted 4 A",
            "token A 5",
            "deleted 4 by A", // EVALSHA
            "granted 5 A",
            "renewed 5 by A",
            "deleted 5 by A", // SETNX + PEXPIRE; SETNX again (held)
            "granted 6 A",    // SET NX PXAT
            "deleted 6 by A",
            "granted 7 A",
            "deleted 7 by A", // SET XX KEEPTTL GET: a new value
            "granted 8 A",
            "token A 6",
            "expired 8", // FCALL; B's refused; FCALL_RO; expiry
            "granted 9 A",
            "deleted 9 by A", // a script failing after its set
            "granted 10 A",
            "token A 7",
            "expired 10", // MULTI queued slowly
        ]
    );
}
