//! A lock's facts as its server's own account tells them — grants, renewals,
//! releases, expiries and the tokens its holders drew — in one vocabulary
//! for every lock server, so one history of a user's program
//! ([`crate::live::client`]) is built from any of them.

use std::collections::BTreeMap;

/// A fact of the lock as its server told it, on CLOCK_MONOTONIC ns:
/// Redis's feed (one master's, or a Redlock majority's), etcd's watch or
/// ZooKeeper's committed transactions. Grants are numbered 1, 2, … in the
/// order they were made.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LockFact {
    Granted {
        grant: u64,
        worker: usize,
        t_ns: u64,
    },
    Renewed {
        grant: u64,
        worker: usize,
        t_ns: u64,
        slack_ns: Option<u64>,
    },
    /// `by` deleted the key that took `grant` below a majority.
    Released {
        grant: u64,
        by: usize,
        t_ns: u64,
    },
    Expired {
        grant: u64,
        t_ns: u64,
    },
    Token {
        worker: usize,
        value: i64,
        t_ns: u64,
    },
    /// The server's own order stood at `value` (an etcd revision, a
    /// ZooKeeper zxid) when the fact after it happened: told just before a
    /// release or an expiry, it is where the holder's ownership ended.
    Position {
        value: i64,
        t_ns: u64,
    },
}

/// The grants of `worker`, in the order they were made.
pub fn grants_of_worker(facts: &[LockFact], worker: usize) -> Vec<u64> {
    facts
        .iter()
        .filter_map(|f| match f {
            LockFact::Granted {
                grant, worker: w, ..
            } if *w == worker => Some(*grant),
            _ => None,
        })
        .collect()
}

/// The grant each worker held at each of its token facts, and the token
/// each grant carries: the first token its worker counted at or after the
/// grant and before the grant ended or the worker was granted again.
pub fn tokens_of_grants(facts: &[LockFact]) -> BTreeMap<u64, i64> {
    let mut open: BTreeMap<usize, u64> = BTreeMap::new();
    let mut tokens = BTreeMap::new();
    for f in facts {
        match f {
            LockFact::Granted { grant, worker, .. } => {
                open.insert(*worker, *grant);
            }
            LockFact::Released { grant, .. } | LockFact::Expired { grant, .. } => {
                open.retain(|_, g| g != grant);
            }
            LockFact::Token { worker, value, .. } => {
                if let Some(g) = open.get(worker) {
                    tokens.entry(*g).or_insert(*value);
                }
            }
            LockFact::Renewed { .. } | LockFact::Position { .. } => {}
        }
    }
    tokens
}

/// Where the server's own order stood at each grant's end (its release or
/// expiry): the highest token counted or position told before it — a token
/// counter's value, an etcd revision, a zxid. A grant ended before any is
/// absent.
///
/// `document_of` gives each worker's document: a token counter is its
/// document's own (`fence:invoice:1` counts nothing of invoice 2's lock),
/// so a grant's end takes only the counts of its own document's workers,
/// while a position (etcd's revision, ZooKeeper's zxid) is the server's one
/// order and stands for every document.
pub fn end_positions(facts: &[LockFact], document_of: &dyn Fn(usize) -> u32) -> BTreeMap<u64, i64> {
    let mut counted: BTreeMap<u32, i64> = BTreeMap::new();
    let mut told: Option<i64> = None;
    let mut holder: BTreeMap<u64, u32> = BTreeMap::new();
    let mut ends = BTreeMap::new();
    for f in facts {
        match f {
            LockFact::Token { worker, value, .. } => {
                let at = counted.entry(document_of(*worker)).or_insert(*value);
                *at = (*at).max(*value);
            }
            LockFact::Position { value, .. } => told = Some(told.map_or(*value, |a| a.max(*value))),
            LockFact::Granted { grant, worker, .. } => {
                holder.insert(*grant, document_of(*worker));
            }
            LockFact::Released { grant, .. } | LockFact::Expired { grant, .. } => {
                let doc = holder.get(grant).copied();
                let count = doc.and_then(|d| counted.get(&d).copied());
                let at = match (count, told) {
                    (Some(c), Some(t)) => Some(c.max(t)),
                    (c, t) => c.or(t),
                };
                if let Some(a) = at {
                    ends.entry(*grant).or_insert(a);
                }
            }
            LockFact::Renewed { .. } => {}
        }
    }
    ends
}

/// Why `facts` break the order every account promises, if they do: grants
/// numbered 1, 2, … in the order they were made (grants grow) and facts in
/// time order (they arrive in order). Asserted where an account makes its
/// facts, checked again where a trial takes them.
pub fn disorder(facts: &[LockFact]) -> Option<String> {
    let mut grants = 0;
    let mut last_ns = 0;
    for f in facts {
        let (t_ns, granted) = match f {
            LockFact::Granted { grant, t_ns, .. } => (*t_ns, Some(*grant)),
            LockFact::Renewed { t_ns, .. }
            | LockFact::Released { t_ns, .. }
            | LockFact::Expired { t_ns, .. }
            | LockFact::Token { t_ns, .. }
            | LockFact::Position { t_ns, .. } => (*t_ns, None),
        };
        if t_ns < last_ns {
            return Some(format!(
                "{f:?} comes before the fact ahead of it ({last_ns} ns)"
            ));
        }
        last_ns = t_ns;
        if let Some(g) = granted {
            if g != grants + 1 {
                return Some(format!("grant {g} follows grant {grants}"));
            }
            grants = g;
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn granted(grant: u64, worker: usize, t_ns: u64) -> LockFact {
        LockFact::Granted {
            grant,
            worker,
            t_ns,
        }
    }

    fn token(worker: usize, value: i64, t_ns: u64) -> LockFact {
        LockFact::Token {
            worker,
            value,
            t_ns,
        }
    }

    #[test]
    fn grants_out_of_turn_and_facts_out_of_time_are_disorder() {
        assert_eq!(disorder(&[granted(1, 0, 5), granted(2, 0, 5)]), None);
        assert!(disorder(&[granted(2, 0, 5)]).is_some());
        let expired = LockFact::Expired { grant: 1, t_ns: 4 };
        assert!(disorder(&[granted(1, 0, 5), expired]).is_some());
    }

    #[test]
    fn a_grant_ends_where_the_servers_order_stood_then() {
        // Redis: A counts 1; its lease runs out; B counts 2 and 3, releases.
        let counter = [
            granted(1, 0, 1),
            token(0, 1, 2),
            LockFact::Expired { grant: 1, t_ns: 3 },
            granted(2, 1, 4),
            token(1, 2, 5),
            token(1, 3, 6),
            LockFact::Released {
                grant: 2,
                by: 1,
                t_ns: 7,
            },
        ];
        let one = |_| 1;
        let ends = end_positions(&counter, &one);
        assert_eq!(ends.get(&1), Some(&1));
        assert_eq!(ends.get(&2), Some(&3));
        // etcd: the deletion's revision, told before the end.
        let etcd = [
            granted(1, 0, 1),
            token(0, 5, 1),
            LockFact::Position { value: 7, t_ns: 3 },
            LockFact::Expired { grant: 1, t_ns: 3 },
        ];
        assert_eq!(end_positions(&etcd, &one).get(&1), Some(&7));
        // Ended before anything counted: no position.
        let none = [granted(1, 0, 1), LockFact::Expired { grant: 1, t_ns: 3 }];
        assert!(end_positions(&none, &one).is_empty());
    }

    #[test]
    fn a_grant_ends_at_its_own_documents_counter_not_another_documents() {
        // Worker 0 on document 1 counts 1; worker 1 on document 2 counts
        // its own counter up to 7; worker 0's lease then runs out.
        let facts = [
            granted(1, 0, 1),
            token(0, 1, 2),
            granted(2, 1, 3),
            token(1, 7, 4),
            LockFact::Expired { grant: 1, t_ns: 5 },
            LockFact::Released {
                grant: 2,
                by: 1,
                t_ns: 6,
            },
        ];
        let by_worker = |w: usize| w as u32 + 1;
        let ends = end_positions(&facts, &by_worker);
        assert_eq!(ends.get(&1), Some(&1));
        assert_eq!(ends.get(&2), Some(&7));
        // Judged as one document, the other's count would stretch grant 1.
        assert_eq!(end_positions(&facts, &|_| 1).get(&1), Some(&7));
    }
}
