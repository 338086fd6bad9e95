//! A user's program on several documents (`document = N`), each locked by
//! a key of its own (`lock:invoice:1`, `lock:invoice:2`): one server
//! account per document, each following only its document's workers, told
//! as one account of every document's lock.
//!
//! Why one account per document and not one account of every key: the
//! account finds a document's lock as the key its workers create
//! conditionally and pass between them ([`super::keys::Candidates`]); with
//! every worker in one account, two documents' keys both pass between
//! workers and the choice is not clear. Each document's account sees its
//! own workers only, so each finds its own key, and the ambiguity rule
//! still holds within a document.
//!
//! The facts come back as one list in time order with the grants numbered
//! 1, 2, … across documents in the order they were made (the promise of
//! [`super::fact::disorder`]); each grant keeps its worker, whose document
//! the history keys it by.

use std::collections::BTreeMap;
use std::sync::Arc;

use anyhow::Result;

use super::fact::LockFact;
use super::server::{Finished, ServerAccount};

/// Every document's account, each worker's at its document's.
pub(crate) struct DocumentAccounts {
    /// (document, its account), by document.
    accounts: Vec<(u32, Arc<dyn ServerAccount>)>,
    /// Each worker's index into `accounts`.
    of_worker: Vec<usize>,
}

impl DocumentAccounts {
    /// `accounts` one per document; `documents` each worker's document,
    /// every one of which has an account.
    pub(crate) fn new(
        accounts: Vec<(u32, Arc<dyn ServerAccount>)>,
        documents: &[u32],
    ) -> DocumentAccounts {
        let of_worker = documents
            .iter()
            .map(|d| accounts.iter().position(|(x, _)| x == d).unwrap_or(0))
            .collect();
        DocumentAccounts {
            accounts,
            of_worker,
        }
    }
}

impl ServerAccount for DocumentAccounts {
    /// The worker's document's grants (numbered within that document: they
    /// grow, which is all the proxies ask of them).
    fn grants_of(&self, upstream: usize, worker: usize) -> Result<Vec<u64>> {
        let k = self.of_worker.get(worker).copied().unwrap_or(0);
        self.accounts[k].1.grants_of(upstream, worker)
    }

    fn finish(&self) -> Finished {
        let parts = self
            .accounts
            .iter()
            .map(|(d, a)| (*d, a.finish()))
            .collect();
        merge(parts)
    }
}

/// Each document's finished account as one: facts merged in time order
/// (each document's own order kept at equal times) with grants numbered
/// anew in that order; problems and notes prefixed with their document.
pub(crate) fn merge(parts: Vec<(u32, Finished)>) -> Finished {
    let mut tagged: Vec<(u64, usize, LockFact)> = Vec::new();
    let (mut problems, mut notes, mut this_trial) = (Vec::new(), Vec::new(), Vec::new());
    for (k, (doc, f)) in parts.into_iter().enumerate() {
        tagged.extend(f.facts.into_iter().map(|x| (t_ns(&x), k, x)));
        problems.extend(f.problems.iter().map(|p| format!("document {doc}: {p}")));
        notes.extend(f.notes.iter().map(|n| format!("document {doc}: {n}")));
        this_trial.extend(f.this_trial.iter().map(|n| format!("document {doc}: {n}")));
    }
    tagged.sort_by_key(|(t, _, _)| *t);
    let mut renumbered: BTreeMap<(usize, u64), u64> = BTreeMap::new();
    let mut facts = Vec::with_capacity(tagged.len());
    for (_, k, mut f) in tagged {
        let next = renumbered.len() as u64 + 1;
        match &mut f {
            LockFact::Granted { grant, .. } => {
                *grant = *renumbered.entry((k, *grant)).or_insert(next);
            }
            LockFact::Renewed { grant, .. }
            | LockFact::Released { grant, .. }
            | LockFact::Expired { grant, .. } => match renumbered.get(&(k, *grant)) {
                Some(g) => *grant = *g,
                None => {
                    problems.push(format!("{f:?} of a grant its account never made"));
                    continue;
                }
            },
            LockFact::Token { .. } | LockFact::Position { .. } => {}
        }
        facts.push(f);
    }
    Finished {
        facts,
        problems,
        notes,
        this_trial,
    }
}

fn t_ns(f: &LockFact) -> u64 {
    match f {
        LockFact::Granted { t_ns, .. }
        | LockFact::Renewed { t_ns, .. }
        | LockFact::Released { t_ns, .. }
        | LockFact::Expired { t_ns, .. }
        | LockFact::Token { t_ns, .. }
        | LockFact::Position { t_ns, .. } => *t_ns,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::live::common::fact::disorder;

    fn finished(facts: Vec<LockFact>, note: &str) -> Finished {
        Finished {
            facts,
            problems: Vec::new(),
            notes: vec![note.to_string()],
            this_trial: Vec::new(),
        }
    }

    #[test]
    fn two_documents_grants_are_numbered_in_the_order_they_were_made() {
        let granted = |grant, worker, t_ns| LockFact::Granted {
            grant,
            worker,
            t_ns,
        };
        // Document 1: A (0) granted at 10, expired at 40, B (1) at 50.
        // Document 2: C (2) granted at 20, released at 30.
        let one = vec![
            granted(1, 0, 10),
            LockFact::Expired { grant: 1, t_ns: 40 },
            granted(2, 1, 50),
        ];
        let two = vec![
            granted(1, 2, 20),
            LockFact::Released {
                grant: 1,
                by: 2,
                t_ns: 30,
            },
        ];
        let f = merge(vec![
            (1, finished(one, "lock key lock:invoice:1")),
            (2, finished(two, "lock key lock:invoice:2")),
        ]);
        assert_eq!(disorder(&f.facts), None);
        assert_eq!(
            f.facts,
            vec![
                granted(1, 0, 10),
                granted(2, 2, 20),
                LockFact::Released {
                    grant: 2,
                    by: 2,
                    t_ns: 30
                },
                LockFact::Expired { grant: 1, t_ns: 40 },
                granted(3, 1, 50),
            ]
        );
        assert_eq!(
            f.notes,
            [
                "document 1: lock key lock:invoice:1",
                "document 2: lock key lock:invoice:2"
            ]
        );
        assert!(f.problems.is_empty());
    }
}
