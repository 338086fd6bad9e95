//! What the proxies saw a user's program do ([`Seen`]), and how that
//! conversation, with the lock server's own account of the lock
//! ([`super::lock_history`]), becomes the same records the built-in workers
//! write, so that one history builder ([`crate::live::history`]) serves
//! both modes: op ids assigned from the order of reads and writes, each
//! write tied to the grant its worker last received, each commit in
//! PostgreSQL's audit matched to the connection and write that made it.

use std::collections::{BTreeMap, VecDeque};

use anyhow::{bail, Context, Result};

use super::lock_history::LockHistory;
use super::seen::Seen;
use crate::live::common::ops::{op_id, worker_of};
use crate::live::record::{Record, Stamped, WriteOutcome};

/// The op id of each decoded event ([`op_id`]: worker i's n-th operation
/// is `(i+1)*1000 + n`). An operation is a read and the write
/// after it; a new one begins at a read after a read or a write, at a write
/// after an unanswered write (its program was restarted), and after a
/// write's answer or loss.
pub(super) fn op_ids(n: usize, seen: &[(usize, u64, Seen)]) -> Vec<u64> {
    let op_of = |w: usize, k: u64| op_id(w, k + 1);
    let (mut count, mut used, mut writing) = (vec![0u64; n], vec![false; n], vec![false; n]);
    seen.iter()
        .map(|(w, _, what)| {
            let w = *w;
            match what {
                Seen::ReadSent => {
                    if used[w] {
                        count[w] += 1;
                        writing[w] = false;
                    }
                    used[w] = true;
                }
                Seen::WriteSent(_) => {
                    if writing[w] {
                        count[w] += 1;
                    }
                    used[w] = true;
                    writing[w] = true;
                }
                Seen::WriteDone(_) | Seen::WriteLost(_) | Seen::WriteUnanswered(..) => {
                    let op = op_of(w, count[w]);
                    count[w] += 1;
                    used[w] = false;
                    writing[w] = false;
                    return op;
                }
                _ => {}
            }
            op_of(w, count[w])
        })
        .collect()
}

/// PostgreSQL's commits, in commit order, each matched to the write of its
/// worker that made it: (commit_seq, op id, token, when the write's answer
/// passed). A write whose UPDATE ran may still never commit (its program
/// killed, or its connection lost, before its transaction's `COMMIT`), so a
/// commit is matched by the body *and* the token its UPDATE carried when
/// one matches both — a restarted program that writes the same body again
/// under a newer token is not taken for its dead predecessor — else by the
/// body alone (a program whose UPDATE sets no token).
fn match_commits(
    n: usize,
    seen: &[(usize, u64, Seen)],
    ops: &[u64],
    pids: &BTreeMap<i32, usize>,
    audit: &[(i64, i32, i64, i64)],
) -> Result<Vec<(i64, i64, i64, u64)>> {
    // Each worker's writes that ran, in its own order, with their integers.
    let mut applied: Vec<VecDeque<(u64, u64, Vec<i64>)>> = vec![VecDeque::new(); n];
    let mut last_ints: Vec<Vec<i64>> = vec![Vec::new(); n];
    for (k, (w, t, what)) in seen.iter().enumerate() {
        match what {
            Seen::WriteSent(ints) => last_ints[*w] = ints.clone(),
            Seen::WriteDone(Some(rows)) | Seen::WriteUnanswered(Some(rows), _) if *rows > 0 => {
                applied[*w].push_back((ops[k], *t, last_ints[*w].clone()));
            }
            _ => {}
        }
    }
    let mut commits: Vec<(i64, i64, i64, u64)> = Vec::new();
    for (seq, pid, body, token) in audit {
        let Some(&w) = pids.get(pid) else {
            bail!("audit row {seq}: a write committed by backend {pid}, which no worker's connection opened");
        };
        let writes = &applied[w];
        let both = writes
            .iter()
            .position(|(_, _, ints)| ints.contains(body) && ints.contains(token));
        let pos = both
            .or_else(|| {
                writes
                    .iter()
                    .position(|(_, _, ints)| ints.is_empty() || ints.contains(body))
            })
            .with_context(|| {
                format!("audit row {seq}: worker {w} has no applied UPDATE of body {body}")
            })?;
        let (op, t, _) = applied[w].remove(pos).context("applied write")?;
        commits.push((*seq, op as i64, *token, t));
    }
    Ok(commits)
}

/// The decoded conversation as the built-in workers' records, and the
/// audit rows as (commit_seq, op id, token) for
/// [`crate::live::history::build_history`].
/// `docs`: each worker's document (the row `FENCESIM_DOC_ID` names, whose
/// key its operations carry in the history). `finished_ns`: when each
/// worker's program ended (None: a crash fault killed it and it stayed
/// down, so it never finished its workload).
#[allow(clippy::type_complexity)]
pub(super) fn to_records(
    docs: &[u32],
    seen: &[(usize, u64, Seen)],
    pids: &BTreeMap<i32, usize>,
    audit: &[(i64, i32, i64, i64)],
    finished_ns: &[Option<u64>],
    lock: &LockHistory,
) -> Result<(Vec<(usize, Stamped)>, Vec<(i64, i64, i64)>)> {
    // The proxies stamp what they see under one lock: in time order.
    debug_assert!(
        seen.windows(2).all(|w| w[0].1 <= w[1].1),
        "seen out of order"
    );
    let n = docs.len();
    let ops = op_ids(n, seen);
    let commits = match_commits(n, seen, &ops, pids, audit)?;
    // Each commit's document is its worker's: documents start at the same
    // body (0), so one body is on several documents at once.
    let bodies: Vec<(i64, u64, u64, u32)> = audit
        .iter()
        .zip(&commits)
        .map(|((_, _, body, _), (_, op, _, t))| {
            let op = *op as u64;
            (*body, op, *t, docs[worker_of(op)])
        })
        .collect();
    let mut records = lock.records();
    for (k, (w, t, what)) in seen.iter().enumerate() {
        let (w, t_ns, op) = (*w, *t, ops[k]);
        let Some(record) = record_of(what, (w, t_ns, op), (&bodies, docs[w]), lock) else {
            continue;
        };
        records.push((w, Stamped { t_ns, record }));
    }
    for (w, t) in finished_ns.iter().enumerate() {
        if let Some(t_ns) = *t {
            let record = Record::WorkloadDone;
            records.push((w, Stamped { t_ns, record }));
        }
    }
    let audit = commits
        .into_iter()
        .map(|(seq, op, token, _)| (seq, op, token))
        .collect();
    Ok((records, audit))
}

/// What worker `w` was seen doing at `t_ns` in op `op`, as its record
/// (None: the lock's records say it, [`LockHistory`]). `bodies`: each
/// commit's (body, op, when its answer passed, document), so a read names
/// the write whose body it saw on the worker's document `doc` (another
/// document's commit of the same body is not it).
fn record_of(
    what: &Seen,
    (w, t_ns, op): (usize, u64, u64),
    (bodies, doc): (&[(i64, u64, u64, u32)], u32),
    lock: &LockHistory,
) -> Option<Record> {
    Some(match what {
        Seen::LockSent | Seen::LockReplied | Seen::GrantLearned(_) => return None,
        Seen::ReadSent => Record::ReadSent { op, token: None },
        Seen::ReadOk(body) => {
            let value = body.and_then(|b| {
                bodies
                    .iter()
                    .filter(|(x, _, at, d)| *x == b && *at <= t_ns && *d == doc)
                    .map(|(_, op, _, _)| *op)
                    .next_back()
                    .or((b == 0).then_some(0))
            });
            Record::ReadOk { op, value }
        }
        Seen::WriteSent(ints) => {
            // The grant it acts on: the last it learned it holds.
            let held = lock.held_by(w, t_ns);
            let token = held
                .and_then(|(_, token)| token.filter(|tok| ints.contains(tok)))
                .and_then(|tok| u64::try_from(tok).ok());
            Record::WriteSent {
                op,
                token,
                value: None,
                grant: held.map(|(grant, _)| grant),
            }
        }
        Seen::WriteDone(rows) => match rows {
            Some(rows) => Record::WriteAcked {
                op,
                token: None,
                outcome: match rows {
                    0 => WriteOutcome::Rejected,
                    _ => WriteOutcome::Ok,
                },
            },
            None => Record::OpAbandoned {
                op: Some(op),
                detail: Some("the UPDATE failed".into()),
            },
        },
        Seen::WriteLost(why) | Seen::WriteUnanswered(_, why) => Record::OpAbandoned {
            op: Some(op),
            detail: Some(why.clone()),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_commit_is_the_write_with_its_body_and_token_not_a_killed_predecessors() {
        // B's first UPDATE (body 2, token 2) ran, then B was killed before
        // its COMMIT; restarted, it wrote body 2 again under token 3, which
        // committed (found by the live search: an `unissued_token` false
        // alarm when commits were matched by body alone).
        let seen = vec![
            (0, 1, Seen::ReadSent),
            (0, 2, Seen::ReadOk(Some(1))),
            (0, 3, Seen::WriteSent(vec![2, 2, 1, 2])),
            (0, 4, Seen::WriteDone(Some(1))),
            (0, 5, Seen::ReadSent),
            (0, 6, Seen::ReadOk(Some(1))),
            (0, 7, Seen::WriteSent(vec![2, 3, 1, 3])),
            (0, 8, Seen::WriteDone(Some(1))),
        ];
        let ops = op_ids(1, &seen);
        let pids = BTreeMap::from([(77, 0)]);
        let commits = match_commits(1, &seen, &ops, &pids, &[(3, 77, 2, 3)]).unwrap();
        assert_eq!(commits, vec![(3, 1002, 3, 8)]);
        // A program whose UPDATE sets no token is matched by its body.
        let plain = vec![
            (0, 1, Seen::WriteSent(vec![5, 1])),
            (0, 2, Seen::WriteDone(Some(1))),
        ];
        let ops = op_ids(1, &plain);
        let commits = match_commits(1, &plain, &ops, &pids, &[(1, 77, 5, 0)]).unwrap();
        assert_eq!(commits, vec![(1, 1001, 0, 2)]);
    }

    #[test]
    fn a_read_names_the_write_on_its_own_document_when_another_document_has_the_same_body() {
        // Both documents start at body 0, so each one's first write sets
        // body 1. D (document 2) reads body 1 after B's commit on
        // document 1: the write it saw is C's on document 2. Matched by the
        // body alone it was B's, and the checker found a lost update that
        // never happened (a live matrix row, seen in CI).
        let seen = vec![
            (2, 10, Seen::ReadSent),
            (2, 13, Seen::ReadOk(Some(0))),
            (2, 14, Seen::WriteSent(vec![1, 1, 2, 1])),
            (2, 16, Seen::WriteDone(Some(1))),
            (3, 240, Seen::ReadSent),
            (1, 346, Seen::ReadSent),
            (1, 347, Seen::ReadOk(Some(0))),
            (1, 349, Seen::WriteSent(vec![1, 2, 1, 2])),
            (1, 353, Seen::WriteDone(Some(1))),
            (3, 375, Seen::ReadOk(Some(1))),
        ];
        let docs = [1, 1, 2, 2];
        let lock = LockHistory::new(4, &seen, &[], &docs);
        let pids = BTreeMap::from([(301, 1), (302, 2)]);
        let audit = [(1, 302, 1, 1), (2, 301, 1, 2)];
        let (records, _) = to_records(&docs, &seen, &pids, &audit, &[None; 4], &lock).unwrap();
        let read_of_d = records.iter().find_map(|(w, s)| match s.record {
            Record::ReadOk { op, value } if *w == 3 => Some((op, value)),
            _ => None,
        });
        assert_eq!(read_of_d, Some((4001, Some(3001))));
    }

    #[test]
    fn a_lost_write_ends_its_operation_and_a_restarted_program_reads_for_a_new_one() {
        let seen = vec![
            (0, 1, Seen::ReadSent),
            (0, 2, Seen::ReadOk(Some(0))),
            (0, 3, Seen::WriteSent(vec![1])),
            (0, 4, Seen::WriteLost("cut".into())),
            (0, 5, Seen::ReadSent),
            (0, 6, Seen::WriteSent(vec![1])),
            // Killed before the answer; the restarted program reads again.
            (0, 7, Seen::ReadSent),
            (0, 8, Seen::WriteSent(vec![1])),
            (0, 9, Seen::WriteDone(Some(1))),
            (1, 10, Seen::ReadSent),
        ];
        assert_eq!(
            op_ids(2, &seen),
            vec![1001, 1001, 1001, 1001, 1002, 1002, 1003, 1003, 1003, 2001]
        );
    }
}
