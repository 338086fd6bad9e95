//! A user's program's lock as history records: what the server's account
//! says the lock did ([`LockFact`]: grants, renewals, releases, expiries,
//! on coord/0, exactly as told), and what the proxies saw the worker learn
//! and ask ([`Seen`]): a grant received when the reply that followed it
//! passed, an acquisition asked when it first named the lock key before
//! that, a release sent when the command that deleted its key went out.
//!
//! The server says *that* a command deleted the key, not whether the
//! program meant it as a release; so `release_sent` is recorded only for a
//! command that deleted the key (a compare-and-delete that found someone
//! else's value shows in the history as nothing, as it did on the server),
//! and `acquire_sent` for the first command naming the key after the
//! worker's last grant or release that is followed by a grant before the
//! worker reads or writes: the attempt that got the lock. A multi-operation
//! program's failed release just before its next acquisition counts as the
//! start of that acquisition (the acquisition-wait metric starts early).

use std::collections::BTreeMap;

use super::seen::Seen;
use crate::live::common::fact::{end_positions, tokens_of_grants, LockFact};
use crate::live::record::{Record, Stamped};

pub(super) struct LockHistory {
    /// Per worker: (received at ns, grant, token), in order.
    received: Vec<Vec<(u64, u64, Option<i64>)>>,
    records: Vec<(usize, Stamped)>,
}

/// `seen` with each grant's receipt in place: at its worker's first
/// `LockReplied` at or after the grant was issued.
fn learned(
    seen: &[(usize, u64, Seen)],
    issued: &BTreeMap<u64, (usize, u64)>,
) -> Vec<(usize, u64, Seen)> {
    let mut out: Vec<(usize, u64, Seen)> = seen.to_vec();
    for (&g, &(w, at)) in issued {
        let reply = seen
            .iter()
            .find(|(x, t, s)| *x == w && *t >= at && matches!(s, Seen::LockReplied));
        if let Some((_, t, _)) = reply {
            out.push((w, *t, Seen::GrantLearned(g)));
        }
    }
    // Stable: a receipt goes after the reply that carried it.
    out.sort_by_key(|(_, t, _)| *t);
    out
}

impl LockHistory {
    /// `n` workers; `seen` in the order the proxies saw it; `facts` the
    /// finished account. A grant is received at its worker's first lock
    /// reply at or after the server granted it (none: the worker never
    /// learned of it). `documents`: each worker's document (empty: all on
    /// one), whose own token counter ends its grants.
    pub(super) fn new(
        n: usize,
        seen: &[(usize, u64, Seen)],
        facts: &[LockFact],
        documents: &[u32],
    ) -> LockHistory {
        let tokens = tokens_of_grants(facts);
        let issued: BTreeMap<u64, (usize, u64)> = facts
            .iter()
            .filter_map(|f| match f {
                LockFact::Granted {
                    grant,
                    worker,
                    t_ns,
                } => Some((*grant, (*worker, *t_ns))),
                _ => None,
            })
            .collect();
        let mut h = LockHistory {
            received: vec![Vec::new(); n],
            records: Vec::new(),
        };
        let seen = learned(seen, &issued);
        for (w, t, what) in &seen {
            if let Seen::GrantLearned(g) = what {
                h.received[*w].push((*t, *g, tokens.get(g).copied()));
                let record = Record::GrantReceived {
                    op: None,
                    token: token(&tokens, *g),
                    grant: Some(*g),
                    server: 0,
                    lease: None,
                    holds: None,
                };
                h.records.push((*w, Stamped { t_ns: *t, record }));
            }
        }
        let document_of = |w: usize| documents.get(w).copied().unwrap_or(1);
        let ends = end_positions(facts, &document_of);
        h.server_records(&seen, facts, (&tokens, &ends));
        h.acquisitions(n, &seen);
        h
    }

    /// The facts of the lock, as the server told them, with each
    /// deletion's `release_sent` on the worker that sent it.
    fn server_records(
        &mut self,
        seen: &[(usize, u64, Seen)],
        facts: &[LockFact],
        (tokens, ends): (&BTreeMap<u64, i64>, &BTreeMap<u64, i64>),
    ) {
        let mut holder: BTreeMap<u64, usize> = BTreeMap::new();
        let order = |g: u64| ends.get(&g).and_then(|p| u64::try_from(*p).ok());
        let mut last_grant = 0;
        for f in facts {
            let (w, t_ns, record) = match *f {
                LockFact::Granted {
                    grant,
                    worker,
                    t_ns,
                } => {
                    // The account's promise (common/fact.rs, checked by the
                    // trial before it builds this): grants in turn.
                    debug_assert_eq!(grant, last_grant + 1, "grants grow one by one");
                    last_grant = grant;
                    holder.insert(grant, worker);
                    let token = token(tokens, grant);
                    (worker, t_ns, Record::GrantIssued { grant, token })
                }
                LockFact::Renewed {
                    grant,
                    worker,
                    t_ns,
                    slack_ns,
                } => (worker, t_ns, Record::RenewOk { grant, slack_ns }),
                LockFact::Released { grant, by, t_ns } => {
                    self.released(seen, (by, t_ns));
                    let record = Record::ReleaseApplied {
                        grant: self.held_by(by, t_ns).map(|(g, _)| g),
                        removed: grant,
                        order: order(grant),
                        detail: format!("the key deleted by worker {by}'s command"),
                    };
                    (by, t_ns, record)
                }
                LockFact::Expired { grant, t_ns } => {
                    let detail = "the lease ran out (the server's own account: Redis's feed replayed on its clock, or etcd's lessor)".to_string();
                    let w = holder.get(&grant).copied().unwrap_or(0);
                    let record = Record::LeaseExpired {
                        grant,
                        order: order(grant),
                        detail,
                    };
                    (w, t_ns, record)
                }
                LockFact::Token { .. } | LockFact::Position { .. } => continue,
            };
            self.records.push((w, Stamped { t_ns, record }));
        }
    }

    /// `release_sent` of the command that deleted the key: the last one
    /// naming the key its worker `by` sent before the deletion.
    fn released(&mut self, seen: &[(usize, u64, Seen)], (by, t_ns): (usize, u64)) {
        let mine = self.held_by(by, t_ns).map(|(g, _)| g);
        let sent = seen
            .iter()
            .filter(|(w, t, s)| *w == by && *t <= t_ns && matches!(s, Seen::LockSent))
            .map(|(_, t, _)| *t)
            .next_back()
            .unwrap_or(t_ns);
        let record = Record::ReleaseSent {
            op: None,
            grant: mine,
        };
        self.records.push((by, Stamped { t_ns: sent, record }));
    }

    /// `acquire_sent`: per worker, the first command naming the lock key
    /// after its last grant received or release, when a grant follows it
    /// before the worker's next read or write (module doc).
    fn acquisitions(&mut self, n: usize, seen: &[(usize, u64, Seen)]) {
        for w in 0..n {
            let mine: Vec<&(usize, u64, Seen)> = seen.iter().filter(|(x, _, _)| *x == w).collect();
            let released: Vec<u64> = self
                .records
                .iter()
                .filter(|(x, r)| *x == w && matches!(r.record, Record::ReleaseSent { .. }))
                .map(|(_, r)| r.t_ns)
                .collect();
            let mut open = true;
            for (k, (_, t, what)) in mine.iter().enumerate() {
                match what {
                    Seen::GrantLearned(_) => open = true,
                    Seen::LockSent if released.contains(t) => open = true,
                    Seen::LockSent if open => {
                        let answered = mine[k + 1..].iter().map(|(_, _, s)| s).find(|s| {
                            matches!(
                                s,
                                Seen::GrantLearned(_) | Seen::ReadSent | Seen::WriteSent(_)
                            )
                        });
                        if matches!(answered, Some(Seen::GrantLearned(_))) {
                            let record = Record::AcquireSent { op: None };
                            self.records.push((w, Stamped { t_ns: *t, record }));
                            open = false;
                        }
                    }
                    _ => {}
                }
            }
        }
    }

    /// The grant `worker` last learned it holds at `t_ns`, with its token.
    pub(super) fn held_by(&self, worker: usize, t_ns: u64) -> Option<(u64, Option<i64>)> {
        self.received[worker]
            .iter()
            .filter(|(t, _, _)| *t <= t_ns)
            .map(|(_, g, tok)| (*g, *tok))
            .next_back()
    }

    /// How many grants of the lock the server made.
    #[cfg(test)]
    pub(super) fn grants(&self) -> usize {
        let issued = |(_, r): &&(usize, Stamped)| matches!(r.record, Record::GrantIssued { .. });
        self.records.iter().filter(issued).count()
    }

    pub(super) fn records(&self) -> Vec<(usize, Stamped)> {
        self.records.clone()
    }
}

/// The token of grant `g`, as a record carries it.
fn token(tokens: &BTreeMap<u64, i64>, g: u64) -> Option<u64> {
    tokens.get(&g).and_then(|t| u64::try_from(*t).ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_paused_holders_late_release_is_nothing_and_b_s_deletion_is_its_release() {
        // A asks, is granted 1, reads; B asks (refused) until 1 expires, is
        // granted 2, writes, deletes its key; A wakes, writes, its
        // compare-and-delete finds nothing.
        let seen = vec![
            (0, 10, Seen::LockSent),
            (0, 12, Seen::LockReplied),
            (0, 13, Seen::ReadSent),
            (1, 14, Seen::LockSent),
            (1, 15, Seen::LockReplied),
            (1, 20, Seen::LockSent),
            (1, 21, Seen::LockReplied),
            (1, 61, Seen::LockSent),
            (1, 63, Seen::LockReplied),
            (1, 64, Seen::ReadSent),
            (1, 65, Seen::WriteSent(vec![2])),
            (1, 70, Seen::LockSent),
            (0, 90, Seen::WriteSent(vec![1])),
            (0, 95, Seen::LockSent),
        ];
        let facts = vec![
            LockFact::Granted {
                grant: 1,
                worker: 0,
                t_ns: 11,
            },
            LockFact::Token {
                worker: 0,
                value: 1,
                t_ns: 12,
            },
            LockFact::Expired { grant: 1, t_ns: 60 },
            LockFact::Granted {
                grant: 2,
                worker: 1,
                t_ns: 62,
            },
            LockFact::Token {
                worker: 1,
                value: 2,
                t_ns: 63,
            },
            LockFact::Released {
                grant: 2,
                by: 1,
                t_ns: 71,
            },
        ];
        let h = LockHistory::new(2, &seen, &facts, &[]);
        let mut kinds: Vec<(usize, String, u64)> = h
            .records()
            .iter()
            .map(|(w, r)| (*w, r.record.name().to_string(), r.t_ns))
            .collect();
        kinds.sort_by_key(|(w, k, t)| (*t, *w, k.clone()));
        let want: Vec<(usize, String, u64)> = [
            (0, "acquire_sent", 10),
            (0, "grant_issued", 11),
            (0, "grant_received", 12),
            (1, "acquire_sent", 14),
            (0, "lease_expired", 60),
            (1, "grant_issued", 62),
            (1, "grant_received", 63),
            (1, "release_sent", 70),
            (1, "release_applied", 71),
        ]
        .iter()
        .map(|(w, k, t)| (*w, k.to_string(), *t))
        .collect();
        assert_eq!(kinds, want);
        assert_eq!(h.held_by(0, 90), Some((1, Some(1))));
        assert_eq!(h.held_by(1, 64), Some((2, Some(2))));
        assert_eq!(h.grants(), 2);
    }

    #[test]
    fn a_grant_is_received_with_the_first_lock_reply_after_it_and_not_before() {
        // B's reply came before the server granted it (a refusal), then
        // nothing: B never learned of grant 1 (it was killed, say).
        let seen = vec![(1, 10, Seen::LockSent), (1, 11, Seen::LockReplied)];
        let facts = vec![LockFact::Granted {
            grant: 1,
            worker: 1,
            t_ns: 12,
        }];
        let h = LockHistory::new(2, &seen, &facts, &[]);
        assert_eq!(h.grants(), 1);
        assert_eq!(h.held_by(1, 100), None);
        assert!(!h
            .records()
            .iter()
            .any(|(_, r)| matches!(r.record, Record::GrantReceived { .. })));
    }
}
