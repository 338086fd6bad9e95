//! Which znode is a user's program's lock, found in the ensemble's
//! committed transactions when the scenario does not name it exactly: the
//! parent of the ephemeral znodes the workers' sessions create (the lock
//! recipe's sequential children, a semaphore's lease, a single ephemeral
//! znode) — the one whose children pass from one worker to another
//! ([`Candidates::choose`]). A program that locks with fencesim's path is
//! found there too; a named path (`lock_key`, `--lock-key`) is taken as it
//! is, a prefix or a glob chooses among the parents it matches (or whose
//! ephemeral znode it matches).

use std::collections::BTreeMap;

use super::lock::Sessions;
use super::txnlog::{Op, Txn};
use crate::live::common::keys::{Candidates, KeyChoice};

/// The parent of `path` (`/` for a top-level znode).
fn parent(path: &str) -> &str {
    match path.rsplit_once('/') {
        Some(("", _)) | None => "/",
        Some((p, _)) => p,
    }
}

/// Every ephemeral create in `op` (a multi's too), by path.
fn ephemeral_creates<'a>(op: &'a Op, out: &mut Vec<&'a str>) {
    match op {
        Op::Create {
            path,
            ephemeral: true,
            ..
        } => out.push(path),
        Op::Multi(ops) => ops.iter().for_each(|o| ephemeral_creates(o, out)),
        _ => {}
    }
}

/// The lock's znode among the ephemeral znodes the workers' sessions
/// created after zxid `start`: Ok(None) none matching `choice` was
/// created, Err the candidates when the choice is not clear. `told` is
/// the path fencesim gave the programs.
pub fn lock_dir(
    txns: &[&Txn],
    start: i64,
    sessions: &Sessions,
    choice: &KeyChoice,
    told: &str,
) -> Result<Option<String>, String> {
    if let Some(exact) = choice.exact() {
        return Ok(Some(exact.to_string()));
    }
    let mut candidates = Candidates::default();
    let (mut first, mut stranger): (Option<&str>, Option<&str>) = (None, None);
    for t in txns.iter().filter(|t| t.zxid > start) {
        let mut paths = Vec::new();
        ephemeral_creates(&t.op, &mut paths);
        for path in paths {
            let dir = parent(path);
            if !(choice.matches(dir.as_bytes()) || choice.matches(path.as_bytes())) {
                continue;
            }
            match sessions.worker_of.get(&t.session) {
                Some(&worker) => {
                    candidates.created(dir.as_bytes(), worker);
                    first.get_or_insert(dir);
                }
                // No worker's session: the lock only when no worker made
                // one (the fold then says whose it cannot be).
                None => {
                    stranger.get_or_insert(dir);
                }
            }
        }
    }
    let first = first.or(stranger);
    // The path fencesim told is a recipe's parent, or a single znode's own
    // (then its parent is the candidate).
    let told = [told.as_bytes(), parent(told).as_bytes()];
    let chosen = candidates.choose(first.map(str::as_bytes), &told)?;
    Ok(chosen.map(|d| String::from_utf8_lossy(&d).into_owned()))
}

/// The ephemeral znodes alive after `txns` (a trial whose lock is to be
/// found waits for those of earlier trials to go).
pub fn ephemerals_left(txns: &[&Txn]) -> Vec<String> {
    let mut alive: BTreeMap<String, i64> = BTreeMap::new();
    fn apply(op: &Op, session: i64, alive: &mut BTreeMap<String, i64>) {
        match op {
            Op::Create {
                path,
                ephemeral: true,
                ..
            } => {
                alive.insert(path.clone(), session);
            }
            Op::Delete { path } => {
                alive.remove(path);
            }
            Op::CloseSession => alive.retain(|_, s| *s != session),
            Op::Multi(ops) => ops.iter().for_each(|o| apply(o, session, alive)),
            _ => {}
        }
    }
    for t in txns {
        apply(&t.op, t.session, &mut alive);
    }
    alive.into_keys().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn create(session: i64, zxid: i64, path: &str, sequential: bool) -> Txn {
        Txn {
            session,
            cxid: 1,
            zxid,
            time_ms: 0,
            op: Op::Create {
                path: path.into(),
                ephemeral: true,
                sequential,
            },
        }
    }

    fn sessions() -> Sessions {
        Sessions {
            worker_of: [(10, 0), (11, 1)].into_iter().collect(),
            close_sent: Default::default(),
        }
    }

    #[test]
    fn the_lock_is_the_parent_whose_ephemeral_children_passed_between_workers() {
        let txns = [
            create(10, 5, "/app/locks/invoice/_c_x-lock-0000000000", true),
            create(10, 6, "/app/other/a", false),
            create(11, 7, "/app/locks/invoice/_c_y-lock-0000000001", true),
        ];
        let refs: Vec<&Txn> = txns.iter().collect();
        let any = KeyChoice::any();
        let dir = lock_dir(&refs, 0, &sessions(), &any, "/fencesim/lock-doc");
        assert_eq!(dir, Ok(Some("/app/locks/invoice".to_string())));
        // Before the trial: not a candidate.
        assert_eq!(lock_dir(&refs, 7, &sessions(), &any, "/f"), Ok(None));
        // No worker's session's: the lock only when no worker made one.
        let stranger = [create(99, 8, "/s/x", false), txns[0].clone()];
        let refs: Vec<&Txn> = stranger.iter().collect();
        let dir = lock_dir(&refs, 0, &sessions(), &any, "/f");
        assert_eq!(dir, Ok(Some("/app/locks/invoice".to_string())));
        let dir = lock_dir(&refs[..1], 0, &sessions(), &any, "/f");
        assert_eq!(dir, Ok(Some("/s".to_string())));
        // Two parents passed: named, or the one fencesim told.
        let mut more = txns.to_vec();
        more.push(create(11, 8, "/app/other/b", false));
        let refs: Vec<&Txn> = more.iter().collect();
        let why = lock_dir(&refs, 0, &sessions(), &any, "/f").unwrap_err();
        assert!(why.contains("/app/other (by worker 0, worker 1)"), "{why}");
        let told = lock_dir(&refs, 0, &sessions(), &any, "/app/other/b");
        assert_eq!(told, Ok(Some("/app/other".to_string())));
        let glob = KeyChoice::parse("/app/locks/*").unwrap();
        let named = lock_dir(&refs, 0, &sessions(), &glob, "/f");
        assert_eq!(named, Ok(Some("/app/locks/invoice".to_string())));
    }

    #[test]
    fn ephemerals_go_with_their_delete_or_their_session() {
        let close = Txn {
            op: Op::CloseSession,
            ..create(10, 9, "", false)
        };
        let del = Txn {
            op: Op::Delete { path: "/b".into() },
            ..create(11, 10, "", false)
        };
        let txns = [create(10, 5, "/a", false), create(11, 6, "/b", false)];
        let refs: Vec<&Txn> = txns.iter().collect();
        assert_eq!(ephemerals_left(&refs), vec!["/a", "/b"]);
        let all = [txns[0].clone(), txns[1].clone(), close, del];
        let refs: Vec<&Txn> = all.iter().collect();
        assert!(ephemerals_left(&refs).is_empty());
    }
}
