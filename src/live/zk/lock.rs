//! A ZooKeeper lock as the ensemble's committed transactions say it went:
//! the recipe every common client implements (kazoo's `Lock`, Curator's
//! `InterProcessMutex`, the zookeeper.apache.org recipe) — each contender
//! creates an ephemeral sequential child of the lock's znode, and the live
//! child with the lowest sequence suffix holds the lock.
//!
//! Folding the committed transactions ([`super::txnlog`]) in zxid order:
//! each time the lowest child becomes a new znode, the lock is granted to
//! the worker whose session created it, with the znode's czxid (the zxid
//! of its create) as the token. When the holder's znode goes, it was
//! released by the worker whose session deleted it or closed itself, or
//! it expired when the server closed the session (a closeSession the
//! server issues on expiry carries xid 0, one a client asks for its own
//! xid; the proxies also saw which sessions asked). Times are the leader's
//! wall clock (ms) on CLOCK_MONOTONIC.
//!
//! A second recipe is judged the same way: **a single ephemeral znode at
//! the lock's path itself** (the hand-rolled lock: create it ephemeral,
//! retry while it exists). It is the one contender there can be (an
//! ephemeral znode has no children), kept as sequence [`SINGLE`]: its
//! creation is a grant to its session's worker with its czxid as the token,
//! its deletion or its session's close the end, as for a child.
//!
//! What cannot be judged is said, never guessed: a child no worker's
//! session created (the harness saw that session open on no worker's
//! connection), a child that is not ephemeral and sequential, a holder's
//! znode deleted by an unknown session, a closeSession whose origin the
//! server and the proxies disagree on, a transaction type whose effect on
//! the lock is unknown.

use std::collections::{BTreeMap, BTreeSet};

use super::txnlog::{Op, Txn};
use crate::live::common::fact::LockFact;

/// The sessions the proxies saw: which worker's connection opened each,
/// and which asked to close.
#[derive(Clone, Debug, Default)]
pub struct Sessions {
    pub worker_of: BTreeMap<i64, usize>,
    pub close_sent: BTreeSet<i64>,
}

/// A child of the lock's znode.
#[derive(Clone, Debug)]
struct Child {
    name: String,
    owner: i64,
    czxid: i64,
}

/// The fold's state.
struct Fold<'a> {
    dir: String,
    sessions: &'a Sessions,
    /// Live children by sequence number.
    children: BTreeMap<u64, Child>,
    /// The holder: its sequence number and grant.
    holder: Option<(u64, u64)>,
    grants: u64,
    /// The zxid of the transaction being applied: where the ensemble's
    /// order stands when a holder's ownership ends.
    zxid: i64,
    facts: Vec<LockFact>,
    problems: Vec<String>,
}

/// Where the single ephemeral znode at the lock's path is kept among the
/// children: below every sequential child's number (it has none).
const SINGLE: u64 = 0;

/// The sequence number of a child named by the recipe (`…<10 digits>`).
fn sequence(name: &str) -> Option<u64> {
    let digits = name.get(name.len().checked_sub(10)?..)?;
    if digits.bytes().all(|b| b.is_ascii_digit()) {
        digits.parse().ok()
    } else {
        None
    }
}

/// How the holder's znode went.
enum Gone {
    DeletedBy(i64),
    SessionClosed { session: i64, cxid: i32 },
}

impl Fold<'_> {
    /// The child's name, when `path` is a child of the lock's znode.
    fn child_of<'p>(&self, path: &'p str) -> Option<&'p str> {
        path.strip_prefix(self.dir.as_str())?
            .strip_prefix('/')
            .filter(|n| !n.is_empty() && !n.contains('/'))
    }

    /// A lock node must be created by a session a worker's connection
    /// opened: one nobody's connection opened cannot be attributed.
    fn check_creator(&mut self, t: &Txn, path: &str, live: bool) {
        if live && !self.sessions.worker_of.contains_key(&t.session) {
            self.problems.push(format!(
                "{path} (zxid {:#x}) was created by session {:#x}, which no worker's connection opened",
                t.zxid, t.session
            ));
        }
    }

    fn apply(&mut self, t: &Txn, op: &Op, live: bool, t_ns: u64) {
        self.zxid = t.zxid;
        match op {
            Op::Create {
                path,
                ephemeral: true,
                ..
            } if *path == self.dir => self.single(t, (path, path), live, t_ns),
            Op::Delete { path } if *path == self.dir => {
                let single = self.children.get(&SINGLE).is_some_and(|c| c.name == *path);
                if single && self.children.remove(&SINGLE).is_some() {
                    self.settle(live, t_ns, Some(Gone::DeletedBy(t.session)));
                }
            }
            Op::Create {
                path,
                ephemeral,
                sequential,
            } => {
                let Some(name) = self.child_of(path) else {
                    return;
                };
                let Some(seq) = sequential.then(|| sequence(name)).flatten() else {
                    self.lease(t, (path, name, *ephemeral), live, t_ns);
                    return;
                };
                if live && !ephemeral {
                    self.problems.push(format!(
                        "{path} (zxid {:#x}) is not ephemeral: its holder's session cannot end it",
                        t.zxid
                    ));
                }
                self.check_creator(t, path, live);
                self.children.insert(
                    seq,
                    Child {
                        name: name.to_string(),
                        owner: t.session,
                        czxid: t.zxid,
                    },
                );
                self.settle(live, t_ns, None);
            }
            Op::Delete { path } => {
                let Some(name) = self.child_of(path) else {
                    return;
                };
                let lease = self.children.get(&SINGLE).is_some_and(|c| c.name == name);
                let seq = if lease { Some(SINGLE) } else { sequence(name) };
                let Some(seq) = seq else {
                    return;
                };
                if self.children.remove(&seq).is_some() {
                    self.settle(live, t_ns, Some(Gone::DeletedBy(t.session)));
                }
            }
            Op::CloseSession => {
                let before = self.children.len();
                self.children.retain(|_, c| c.owner != t.session);
                if self.children.len() != before {
                    let gone = Gone::SessionClosed {
                        session: t.session,
                        cxid: t.cxid,
                    };
                    self.settle(live, t_ns, Some(gone));
                }
            }
            Op::Multi(ops) => {
                for o in ops {
                    self.apply(t, o, live, t_ns);
                }
            }
            Op::Touch { .. } | Op::CreateSession | Op::Error => {}
            Op::Other(kind) => {
                if live {
                    self.problems.push(format!(
                        "a transaction of type {kind} (zxid {:#x}): fencesim cannot tell what it did to the lock",
                        t.zxid
                    ));
                }
            }
        }
    }

    /// The one contender, kept as [`SINGLE`]: the single ephemeral znode
    /// at the lock's path (`name` is `path`), or a semaphore's one lease.
    fn single(&mut self, t: &Txn, (path, name): (&str, &str), live: bool, t_ns: u64) {
        self.check_creator(t, path, live);
        let single = Child {
            name: name.to_string(),
            owner: t.session,
            czxid: t.zxid,
        };
        self.children.insert(SINGLE, single);
        self.settle(live, t_ns, None);
    }

    /// A child that is not sequential: a semaphore's lease (kazoo's
    /// `Semaphore`, Curator's `InterProcessSemaphoreV2`: an ephemeral
    /// child named by its holder, made while the recipe's own lock beside
    /// the path is held). With one lease it is a lock: the one contender,
    /// kept as [`SINGLE`] like the znode at the path. Anything else — a
    /// persistent child, a second lease while one is held (more than one
    /// lease is no lock), a lease beside sequential children — is said.
    fn lease(
        &mut self,
        t: &Txn,
        (path, name, ephemeral): (&str, &str, bool),
        live: bool,
        t_ns: u64,
    ) {
        let why = if !ephemeral {
            Some("is neither sequential nor ephemeral: not a lock recipe fencesim judges")
        } else if self.children.contains_key(&SINGLE) {
            Some("is a second lease while one is held: a semaphore of more than one lease is no lock")
        } else if !self.children.is_empty() {
            Some("is a lease beside sequential children: two recipes on one path")
        } else {
            None
        };
        if let Some(why) = why {
            if live {
                self.problems
                    .push(format!("{path} (zxid {:#x}) {why}", t.zxid));
            }
            return;
        }
        self.single(t, (path, name), live, t_ns);
    }

    /// After a change: the holder's end and the new holder's grant, if the lowest child changed.
    fn settle(&mut self, live: bool, t_ns: u64, gone: Option<Gone>) {
        let lowest = self.children.keys().next().copied();
        if lowest == self.holder.map(|(s, _)| s) {
            return;
        }
        if let Some((seq, grant)) = self.holder.take() {
            if live && grant > 0 {
                if self.children.contains_key(&seq) {
                    self.problems.push(format!(
                        "a child below the holder's (sequence {seq}) appeared: not the lock recipe fencesim judges"
                    ));
                } else {
                    self.ended(grant, t_ns, gone);
                }
            }
        }
        if let Some(seq) = lowest {
            self.grants += 1;
            self.holder = Some((seq, self.grants));
            if !live {
                return;
            }
            let c = &self.children[&seq];
            // A child of an unknown session was reported when it was created.
            if let Some(&worker) = self.sessions.worker_of.get(&c.owner) {
                self.facts.push(LockFact::Granted {
                    grant: self.grants,
                    worker,
                    t_ns,
                });
                self.facts.push(LockFact::Token {
                    worker,
                    value: c.czxid,
                    t_ns,
                });
            }
        }
    }

    fn ended(&mut self, grant: u64, t_ns: u64, gone: Option<Gone>) {
        let value = self.zxid;
        self.facts.push(LockFact::Position { value, t_ns });
        match gone {
            Some(Gone::DeletedBy(session)) => match self.sessions.worker_of.get(&session) {
                Some(&by) => self.facts.push(LockFact::Released { grant, by, t_ns }),
                None => self.problems.push(format!(
                    "the holder's znode was deleted by session {session:#x}, which no worker's connection opened"
                )),
            },
            Some(Gone::SessionClosed { session, cxid }) => {
                let asked = self.sessions.close_sent.contains(&session);
                match (self.sessions.worker_of.get(&session), cxid == 0, asked) {
                    (Some(_), true, false) => self.facts.push(LockFact::Expired { grant, t_ns }),
                    (Some(&by), false, true) => {
                        self.facts.push(LockFact::Released { grant, by, t_ns })
                    }
                    (Some(_), _, _) => self.problems.push(format!(
                        "session {session:#x} was closed by {} but its worker {} to close it: \
                         cannot tell an expiry from a release",
                        if cxid == 0 { "the server (xid 0)" } else { "a client's request" },
                        if asked { "asked" } else { "never asked" }
                    )),
                    (None, _, _) => {}
                }
            }
            None => {}
        }
    }
}

/// The lock's facts from `txns` (committed, in zxid order) under the
/// znode `dir`: those after zxid `start` (the trial's), with the state
/// before it rebuilt silently; `mono_ns` maps the leader's ms to
/// CLOCK_MONOTONIC ns. Also why the facts cannot be trusted (empty: they can).
pub fn lock_facts(
    txns: &[&Txn],
    start: i64,
    dir: &str,
    sessions: &Sessions,
    mono_ns: impl Fn(i64) -> u64,
) -> (Vec<LockFact>, Vec<String>) {
    let mut f = Fold {
        dir: dir.trim_end_matches('/').to_string(),
        sessions,
        children: BTreeMap::new(),
        holder: None,
        grants: 0,
        zxid: 0,
        facts: Vec::new(),
        problems: Vec::new(),
    };
    let mut started = false;
    for t in txns {
        let live = t.zxid > start;
        if live && !started {
            started = true;
            f.grants = 0;
            // A holder from before the trial is grant 0: its end is no fact of the trial.
            f.holder = f.holder.map(|(seq, _)| (seq, 0));
            if !f.children.is_empty() {
                let names: Vec<&str> = f.children.values().map(|c| c.name.as_str()).collect();
                f.problems.push(format!(
                    "{} had children when the trial started ({}): a session from before it still held or waited for the lock",
                    f.dir,
                    names.join(", ")
                ));
            }
        }
        f.apply(t, &t.op, live, mono_ns(t.time_ms));
    }
    (f.facts, f.problems)
}

/// Whether the lock's znode has children after `txns` (the trial may not start yet).
pub fn children_left(txns: &[&Txn], dir: &str) -> Vec<String> {
    let sessions = Sessions::default();
    let mut f = Fold {
        dir: dir.trim_end_matches('/').to_string(),
        sessions: &sessions,
        children: BTreeMap::new(),
        holder: None,
        grants: 0,
        zxid: 0,
        facts: Vec::new(),
        problems: Vec::new(),
    };
    for t in txns {
        f.apply(t, &t.op, false, 0);
    }
    f.children.into_values().map(|c| c.name).collect()
}

#[cfg(test)]
mod tests {
    use super::super::txnlog::tests::capture;
    use super::*;

    const A: i64 = 0x100000d87e10000;
    const B: i64 = 0x100000d87e10001;
    const C: i64 = 0x100000d87e10002;
    const D: i64 = 0x100000d87e10003;
    const E: i64 = 0x100000d87e10004;

    fn sessions(close_sent: &[i64]) -> Sessions {
        Sessions {
            worker_of: [(A, 0), (B, 1), (C, 2), (D, 3), (E, 4)]
                .into_iter()
                .collect(),
            close_sent: close_sent.iter().copied().collect(),
        }
    }

    fn ms(t: i64) -> u64 {
        (t - 1796323611000) as u64
    }

    #[test]
    fn the_captured_kazoo_locks_are_granted_released_and_expired_as_the_server_did() {
        let txns = capture();
        let refs: Vec<&Txn> = txns.iter().collect();
        // D and E asked to close their sessions; C's expired.
        let (facts, problems) = lock_facts(&refs, 0, "/fencesim/lock-doc", &sessions(&[D, E]), ms);
        assert_eq!(problems, Vec::<String>::new());
        let want = vec![
            LockFact::Granted {
                grant: 1,
                worker: 0,
                t_ns: 126,
            },
            LockFact::Token {
                worker: 0,
                value: 5,
                t_ns: 126,
            },
            LockFact::Released {
                grant: 1,
                by: 0,
                t_ns: 434,
            },
            LockFact::Granted {
                grant: 2,
                worker: 1,
                t_ns: 434,
            },
            LockFact::Token {
                worker: 1,
                value: 6,
                t_ns: 434,
            },
            LockFact::Released {
                grant: 2,
                by: 1,
                t_ns: 440,
            },
            LockFact::Granted {
                grant: 3,
                worker: 2,
                t_ns: 460,
            },
            LockFact::Token {
                worker: 2,
                value: 10,
                t_ns: 460,
            },
            LockFact::Expired {
                grant: 3,
                t_ns: 1062,
            },
            LockFact::Granted {
                grant: 4,
                worker: 3,
                t_ns: 1062,
            },
            LockFact::Token {
                worker: 3,
                value: 12,
                t_ns: 1062,
            },
            LockFact::Released {
                grant: 4,
                by: 3,
                t_ns: 1071,
            },
            LockFact::Granted {
                grant: 5,
                worker: 4,
                t_ns: 65749,
            },
            LockFact::Token {
                worker: 4,
                value: 18,
                t_ns: 65749,
            },
            LockFact::Released {
                grant: 5,
                by: 4,
                t_ns: 65753,
            },
        ];
        let (ends, facts): (Vec<LockFact>, Vec<LockFact>) = facts
            .into_iter()
            .partition(|f| matches!(f, LockFact::Position { .. }));
        assert_eq!(facts, want);
        // Each ownership ends at its end's zxid: after its own czxid, in order.
        let ends: Vec<i64> = ends
            .iter()
            .map(|f| match f {
                LockFact::Position { value, .. } => *value,
                _ => unreachable!(),
            })
            .collect();
        assert_eq!(ends.len(), 5, "{ends:?}");
        let tokens = [5, 6, 10, 12, 18];
        assert!(ends.iter().zip(tokens).all(|(e, t)| *e > t), "{ends:?}");
        assert!(ends.windows(2).all(|w| w[0] < w[1]), "{ends:?}");
    }

    #[test]
    fn what_cannot_be_told_is_a_problem_not_a_guess() {
        let txns = capture();
        let refs: Vec<&Txn> = txns.iter().collect();
        // C's worker was seen asking to close, yet the server closed it (xid 0).
        let (_, problems) = lock_facts(&refs, 0, "/fencesim/lock-doc", &sessions(&[C, D, E]), ms);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(problems[0].contains("cannot tell an expiry from a release"));
        // B's session belongs to no worker.
        let mut s = sessions(&[D, E]);
        s.worker_of.remove(&B);
        let (facts, problems) = lock_facts(&refs, 0, "/fencesim/lock-doc", &s, ms);
        assert!(
            problems
                .iter()
                .any(|p| p.contains("which no worker's connection opened")),
            "{problems:?}"
        );
        assert!(!facts
            .iter()
            .any(|f| matches!(f, LockFact::Granted { worker: 1, .. })));
    }

    #[test]
    fn a_semaphores_one_lease_is_the_lock_and_a_second_lease_is_said() {
        let txn = |session, zxid, op| Txn {
            session,
            cxid: 1,
            zxid,
            time_ms: 1796323611000 + zxid,
            op,
        };
        let lease = |name: &str| Op::Create {
            path: format!("/fencesim/lock-doc/{name}"),
            ephemeral: true,
            sequential: false,
        };
        let dir = "/fencesim/lock-doc";
        // kazoo's Semaphore: A's lease (a hex id, ten digits at its end
        // by chance), deleted; B's lease; B's session expires.
        let a = "9f0c1e2d3b4a5c6d7e8f901234567890";
        let txns = [
            txn(A, 10, lease(a)),
            txn(
                A,
                11,
                Op::Delete {
                    path: format!("{dir}/{a}"),
                },
            ),
            txn(B, 12, lease("b1")),
            Txn {
                cxid: 0,
                ..txn(B, 13, Op::CloseSession)
            },
        ];
        let refs: Vec<&Txn> = txns.iter().collect();
        let (facts, problems) = lock_facts(&refs, 0, dir, &sessions(&[]), ms);
        assert_eq!(problems, Vec::<String>::new());
        let shape: Vec<(&str, u64)> = facts
            .iter()
            .filter_map(|f| match f {
                LockFact::Granted { grant, .. } => Some(("granted", *grant)),
                LockFact::Released { grant, .. } => Some(("released", *grant)),
                LockFact::Expired { grant, .. } => Some(("expired", *grant)),
                _ => None,
            })
            .collect();
        assert_eq!(
            shape,
            [
                ("granted", 1),
                ("released", 1),
                ("granted", 2),
                ("expired", 2)
            ]
        );
        assert!(facts.contains(&LockFact::Token {
            worker: 1,
            value: 12,
            t_ns: ms(1796323611012),
        }));
        // Two leases at once: a semaphore of more than one lease is no lock.
        let two = [txn(A, 10, lease("a")), txn(B, 11, lease("b"))];
        let refs: Vec<&Txn> = two.iter().collect();
        let (_, problems) = lock_facts(&refs, 0, dir, &sessions(&[]), ms);
        assert!(
            problems.iter().any(|p| p.contains("more than one lease")),
            "{problems:?}"
        );
    }

    #[test]
    fn a_single_ephemeral_znode_at_the_lock_path_is_granted_ended_and_granted_again() {
        let txn = |session, cxid, zxid, op| Txn {
            session,
            cxid,
            zxid,
            time_ms: 1796323611000 + zxid,
            op,
        };
        let create = |path: &str, ephemeral| Op::Create {
            path: path.into(),
            ephemeral,
            sequential: false,
        };
        let dir = "/fencesim/lock-doc";
        let txns = [
            txn(A, 1, 10, create("/fencesim", false)),
            txn(A, 2, 11, create(dir, true)),
            // B's attempts while A holds fail (error transactions).
            txn(B, 1, 12, Op::Error),
            // A's session expires (the server closes it, xid 0): B creates it.
            txn(A, 0, 20, Op::CloseSession),
            txn(B, 2, 21, create(dir, true)),
            txn(B, 3, 25, Op::Delete { path: dir.into() }),
        ];
        let refs: Vec<&Txn> = txns.iter().collect();
        let (facts, problems) = lock_facts(&refs, 0, dir, &sessions(&[]), ms);
        assert_eq!(problems, Vec::<String>::new());
        let want = vec![
            LockFact::Granted {
                grant: 1,
                worker: 0,
                t_ns: 11,
            },
            LockFact::Token {
                worker: 0,
                value: 11,
                t_ns: 11,
            },
            LockFact::Position {
                value: 20,
                t_ns: 20,
            },
            LockFact::Expired { grant: 1, t_ns: 20 },
            LockFact::Granted {
                grant: 2,
                worker: 1,
                t_ns: 21,
            },
            LockFact::Token {
                worker: 1,
                value: 21,
                t_ns: 21,
            },
            LockFact::Position {
                value: 25,
                t_ns: 25,
            },
            LockFact::Released {
                grant: 2,
                by: 1,
                t_ns: 25,
            },
        ];
        assert_eq!(facts, want);
        assert_eq!(children_left(&refs[..2], dir), vec![dir.to_string()]);
        assert!(children_left(&refs, dir).is_empty());
        // A persistent znode at the path is no lock: kazoo's Lock's parent.
        let parent = [txn(A, 1, 10, create(dir, false))];
        let refs: Vec<&Txn> = parent.iter().collect();
        let (facts, problems) = lock_facts(&refs, 0, dir, &sessions(&[]), ms);
        assert!(facts.is_empty() && problems.is_empty());
    }

    #[test]
    fn the_state_before_the_start_is_rebuilt_and_a_left_child_is_a_problem() {
        let txns = capture();
        let refs: Vec<&Txn> = txns.iter().collect();
        // Start after zxid 5: A holds (its child is left from before).
        let (facts, problems) = lock_facts(&refs, 5, "/fencesim/lock-doc", &sessions(&[D, E]), ms);
        assert!(
            problems[0].contains("had children when the trial started"),
            "{problems:?}"
        );
        assert_eq!(
            facts.first(),
            Some(&LockFact::Granted {
                grant: 1,
                worker: 1,
                t_ns: 434
            })
        );
        assert_eq!(children_left(&refs[..5], "/fencesim/lock-doc").len(), 1);
        assert!(children_left(&refs, "/fencesim/lock-doc").is_empty());
    }
}
