//! One lock over N independent Redis masters, as the Redlock algorithm
//! defines it: a client holds the lock while it holds the key on a
//! majority of the masters at once.
//!
//! Each master's [`Ledger`](super::ledger::Ledger) says who held its key
//! and when; this file folds them, on the one monotonic clock, into the
//! lock's own facts. The lock is granted to a worker at the instant its
//! keys reach a majority, and ends at the instant they drop below one —
//! expired if a lease running out did it, released (by whoever deleted
//! the key) if a deletion did. Whether the client *believes* it holds the
//! lock (Redlock's validity-time check) is the client's business; what
//! decides safety is what the servers held. With one master this is the
//! ledger's own account, grant for grant.

use super::ledger::Fact;
use crate::live::common::fact::{disorder, LockFact};

/// Folds each master's facts, stamped with their monotonic time, into the
/// lock's. `masters[m]` is master m's facts in its feed order.
pub fn combine(masters: &[Vec<(u64, Fact)>]) -> Vec<LockFact> {
    let quorum = masters.len() / 2 + 1;
    let mut all: Vec<(u64, usize, usize, &Fact)> = masters
        .iter()
        .enumerate()
        .flat_map(|(m, facts)| {
            facts
                .iter()
                .enumerate()
                .map(move |(k, (t, f))| (*t, m, k, f))
        })
        .collect();
    // Per master, feed order is the truth; across masters, time.
    all.sort_by_key(|&(t, m, k, _)| (t, m, k));
    let mut holder: Vec<Option<usize>> = vec![None; masters.len()];
    let mut lock: Option<(usize, u64)> = None;
    let mut grants = 0u64;
    let mut out = Vec::new();
    let count =
        |holder: &[Option<usize>], w: usize| holder.iter().filter(|h| **h == Some(w)).count();
    for (t_ns, m, _, fact) in all {
        match fact {
            Fact::Granted { worker, .. } => {
                holder[m] = Some(*worker);
                if lock.is_none() && count(&holder, *worker) >= quorum {
                    grants += 1;
                    lock = Some((*worker, grants));
                    out.push(LockFact::Granted {
                        grant: grants,
                        worker: *worker,
                        t_ns,
                    });
                }
            }
            Fact::Deleted { .. } | Fact::Expired { .. } => {
                holder[m] = None;
                if let Some((h, g)) = lock {
                    if count(&holder, h) < quorum {
                        lock = None;
                        out.push(match fact {
                            Fact::Deleted { worker: by, .. } => LockFact::Released {
                                grant: g,
                                by: *by,
                                t_ns,
                            },
                            _ => LockFact::Expired { grant: g, t_ns },
                        });
                    }
                }
            }
            Fact::Renewed {
                worker, slack_ms, ..
            } => {
                if let Some((h, g)) = lock {
                    if holder[m] == Some(h) {
                        out.push(LockFact::Renewed {
                            grant: g,
                            worker: *worker,
                            t_ns,
                            slack_ns: slack_ms.map(|s| s * 1_000_000),
                        });
                    }
                }
            }
            Fact::Token { worker, value, .. } => out.push(LockFact::Token {
                worker: *worker,
                value: *value,
                t_ns,
            }),
        }
    }
    debug_assert!(disorder(&out).is_none(), "{:?}", disorder(&out));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::live::common::fact::tokens_of_grants;
    use std::collections::BTreeMap;

    fn granted(worker: usize) -> Fact {
        Fact::Granted {
            grant: 0,
            worker,
            ts_us: 0,
            expire_at_ms: None,
        }
    }

    #[test]
    fn one_master_is_its_ledger_grant_for_grant() {
        let m = vec![
            (10, granted(0)),
            (
                11,
                Fact::Token {
                    worker: 0,
                    value: 7,
                    ts_us: 0,
                },
            ),
            (20, Fact::Expired { grant: 1, at_ms: 0 }),
            (30, granted(1)),
            (
                40,
                Fact::Deleted {
                    grant: 2,
                    worker: 0,
                    ts_us: 0,
                },
            ),
        ];
        let facts = combine(&[m]);
        assert_eq!(
            facts,
            vec![
                LockFact::Granted {
                    grant: 1,
                    worker: 0,
                    t_ns: 10
                },
                LockFact::Token {
                    worker: 0,
                    value: 7,
                    t_ns: 11
                },
                LockFact::Expired { grant: 1, t_ns: 20 },
                LockFact::Granted {
                    grant: 2,
                    worker: 1,
                    t_ns: 30
                },
                LockFact::Released {
                    grant: 2,
                    by: 0,
                    t_ns: 40
                },
            ]
        );
        assert_eq!(tokens_of_grants(&facts), BTreeMap::from([(1, 7)]));
    }

    #[test]
    fn three_of_five_masters_make_a_grant_and_losing_one_of_them_ends_it() {
        let mut masters: Vec<Vec<(u64, Fact)>> = vec![Vec::new(); 5];
        for (m, t) in [(0, 10), (1, 12), (2, 14)] {
            masters[m].push((t, granted(0)));
        }
        // Worker 1 takes the other two: no majority.
        masters[3].push((13, granted(1)));
        masters[4].push((15, granted(1)));
        masters[1].push((50, Fact::Expired { grant: 1, at_ms: 0 }));
        masters[1].push((60, granted(1)));
        let facts = combine(&masters);
        assert_eq!(
            facts,
            vec![
                LockFact::Granted {
                    grant: 1,
                    worker: 0,
                    t_ns: 14
                },
                LockFact::Expired { grant: 1, t_ns: 50 },
                LockFact::Granted {
                    grant: 2,
                    worker: 1,
                    t_ns: 60
                },
            ]
        );
    }
}
