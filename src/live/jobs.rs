//! A live run's trials, `--jobs` at a time, handed back in the run's order.
//!
//! A live trial mostly waits — for a paused worker's resume, a partition's
//! heal, a lease to run out in real time — so a run of many trials on two
//! cores is limited by its waits, not its CPU (docs/live.md, "Where a live
//! trial's time goes"). N jobs, each on its own set of servers (its own
//! Redis, PostgreSQL and etcd/ZooKeeper clusters: no trial ever shares a
//! server with another), run N trials at once. A job takes the longest
//! trial left first (by the caller's estimate), so the run does not end
//! with one job alone on a long scenario. The consumer takes the results
//! in the run's order — scenario by scenario, trial by trial — whatever
//! order they finished in, so what it prints and reports reads as a one-job
//! run's would. With one set of servers nothing runs ahead: a trial runs
//! when the consumer asks for it, exactly the sequential run.
//!
//! Once the consumer has stopped (its servers did not start, or a result
//! could not be written) or Ctrl-C came, the jobs take no new trial: what
//! they had started finishes, the rest is handed back as [`Slot::NotRun`].
//! A trial that could not be judged does not stop a run (the caller
//! retries it once, [`super::run`]), nor does a job's home cluster that
//! did not start (its trials start it, or find it cannot start, each).

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Condvar, Mutex};

use anyhow::Result;

use super::servers::{Servers, ServersInfo};

/// What one trial gave, or that it was never run.
pub enum Slot<T> {
    Ran(T),
    /// The run stopped (or was interrupted) before a job took it.
    NotRun,
}

/// Where a run's trials come from: run here when asked, or taken from the
/// jobs that run them ahead.
pub enum Trials<'a, U, T> {
    Inline {
        servers: &'a mut Servers,
        units: &'a [U],
        run: &'a (dyn Fn(&U, &mut Servers) -> T + Sync),
    },
    Board(&'a Board<T>),
}

impl<U, T> Trials<'_, U, T> {
    /// Trial `i` of the run (in the run's order), waiting for its job.
    pub fn take(&mut self, i: usize) -> Slot<T> {
        match self {
            Trials::Inline {
                servers,
                units,
                run,
            } => {
                if super::interrupted() {
                    return Slot::NotRun;
                }
                Slot::Ran(run(&units[i], servers))
            }
            Trials::Board(board) => board.take(i),
        }
    }
}

/// The trials' results as the jobs fill them in.
pub struct Board<T> {
    slots: Mutex<Vec<Option<Slot<T>>>>,
    filled: Condvar,
    /// The trials in the order the jobs prefer them (indices into the
    /// run's order), and which have been taken.
    order: Vec<usize>,
    taken: Mutex<Vec<bool>>,
    /// Each trial's group: the cluster kind it needs (0: none).
    groups: Vec<u8>,
    /// Each job's home group: the cluster kind it starts first.
    homes: Vec<u8>,
    stopped: AtomicBool,
}

impl<T> Board<T> {
    /// A board for `weights.len()` trials, taken heaviest first (ties in
    /// the run's order) by `jobs` jobs. A trial of group `g > 0` needs a
    /// cluster of kind `g`: each kind is homed on a share of the jobs
    /// about its share of the weight (at least one), and a job takes its
    /// home's trials first, then those needing no cluster, and only then
    /// another kind's — so a run starts each kind on few jobs, not on all.
    fn new(weights: &[u64], groups: &[u8], jobs: usize) -> Board<T> {
        assert_eq!(weights.len(), groups.len());
        let mut order: Vec<usize> = (0..weights.len()).collect();
        order.sort_by_key(|&i| std::cmp::Reverse(weights[i]));
        Board {
            slots: Mutex::new((0..weights.len()).map(|_| None).collect()),
            filled: Condvar::new(),
            taken: Mutex::new(vec![false; weights.len()]),
            order,
            groups: groups.to_vec(),
            homes: homes(weights, groups, jobs),
            stopped: AtomicBool::new(false),
        }
    }

    /// The next trial job `j` takes, given the groups it has started.
    fn next(&self, j: usize, has: &mut Vec<u8>) -> Option<usize> {
        let mut taken = super::locked(&self.taken);
        let free = || self.order.iter().copied().filter(|&i| !taken[i]);
        let home = self.homes.get(j).copied().unwrap_or(0);
        let pick = free()
            .find(|&i| self.groups[i] == home)
            .or_else(|| free().find(|&i| self.groups[i] == 0 || has.contains(&self.groups[i])))
            .or_else(|| free().next())?;
        taken[pick] = true;
        if !has.contains(&self.groups[pick]) {
            has.push(self.groups[pick]);
        }
        Some(pick)
    }

    /// No trial is started from now on.
    fn stop(&self) {
        self.stopped.store(true, Ordering::SeqCst);
    }

    /// One job: trials until none is left, each on `servers`; a panic in
    /// a trial is that trial's result (`panicked`), never a hung consumer.
    fn job<U>(
        &self,
        j: usize,
        servers: &mut Servers,
        units: &[U],
        run: &(dyn Fn(&U, &mut Servers) -> T + Sync),
        panicked: &(dyn Fn() -> T + Sync),
    ) {
        let mut has = Vec::new();
        while let Some(i) = self.next(j, &mut has) {
            let slot = if self.stopped.load(Ordering::SeqCst) || super::interrupted() {
                Slot::NotRun
            } else {
                match catch_unwind(AssertUnwindSafe(|| run(&units[i], servers))) {
                    Ok(t) => Slot::Ran(t),
                    Err(_) => Slot::Ran(panicked()),
                }
            };
            let mut slots = super::locked(&self.slots);
            debug_assert!(slots[i].is_none(), "trial {i} handed out twice");
            slots[i] = Some(slot);
            self.filled.notify_all();
        }
    }

    /// Trial `i`'s result, once its job has put it.
    fn take(&self, i: usize) -> Slot<T> {
        let mut slots = super::locked(&self.slots);
        loop {
            if let Some(slot) = slots[i].take() {
                return slot;
            }
            slots = self
                .filled
                .wait(slots)
                .unwrap_or_else(|poisoned| poisoned.into_inner());
        }
    }
}

/// Each job's home group: the cluster kinds (groups > 0) get jobs in
/// proportion to their weight, each kind at least one while jobs last,
/// heaviest kind first; jobs left over are homed on no kind (0).
fn homes(weights: &[u64], groups: &[u8], jobs: usize) -> Vec<u8> {
    let mut per_group: std::collections::BTreeMap<u8, u64> = Default::default();
    for (w, g) in weights.iter().zip(groups) {
        if *g > 0 {
            *per_group.entry(*g).or_default() += w.max(&1);
        }
    }
    let total: u64 = per_group.values().sum::<u64>()
        + weights
            .iter()
            .zip(groups)
            .filter(|(_, g)| **g == 0)
            .map(|(w, _)| *w)
            .sum::<u64>();
    let mut kinds: Vec<(u8, u64)> = per_group.into_iter().collect();
    kinds.sort_by_key(|&(g, w)| (std::cmp::Reverse(w), g));
    // Largest remainder: each kind's quota of the jobs, at least one.
    let mut share: Vec<(u8, usize, u64)> = kinds
        .iter()
        .map(|&(g, w)| {
            let exact = w as u128 * jobs as u128;
            let total = total.max(1) as u128;
            (g, ((exact / total) as usize).max(1), (exact % total) as u64)
        })
        .collect();
    while share.iter().map(|s| s.1).sum::<usize>() > jobs {
        // More kinds than jobs, or rounding up: the lightest give way.
        match share.iter_mut().rev().find(|s| s.1 > 0) {
            Some(s) => s.1 -= 1,
            None => break,
        }
    }
    let mut spare = jobs.saturating_sub(share.iter().map(|s| s.1).sum());
    let mut by_remainder: Vec<usize> = (0..share.len()).collect();
    by_remainder.sort_by_key(|&i| std::cmp::Reverse(share[i].2));
    for i in by_remainder {
        if spare == 0 {
            break;
        }
        share[i].1 += 1;
        spare -= 1;
    }
    let mut out: Vec<u8> = share
        .iter()
        .flat_map(|&(g, n, _)| std::iter::repeat_n(g, n))
        .collect();
    out.resize(jobs, 0);
    out
}

/// How a job gets its servers, and whom to tell where they are.
pub struct Rigging<'a> {
    /// Starts a job's servers, and the cluster of its home group (0: none)
    /// with them: the CPU-heavy start-ups all happen before the first
    /// trial, not under one (a ZooKeeper election starved by other jobs'
    /// JVMs starting left a partitioned leader's majority leaderless).
    pub start: &'a (dyn Fn(u8) -> Result<Servers> + Sync),
    /// Told, on the calling thread and in job order, where each job's
    /// servers are (with the job's number and the count, when more than one).
    pub announce: &'a Announce<'a>,
}

/// Told where a job's servers are: the job's number and the count (when
/// more than one), and the servers.
pub type Announce<'a> = dyn Fn(Option<(usize, usize)>, &ServersInfo) + Sync + 'a;

/// A run's trials and how to run one.
pub struct Work<'a, U, T> {
    /// The trials, in the run's order.
    pub units: &'a [U],
    /// How long each is expected to take (any unit): the jobs' order only.
    pub weights: &'a [u64],
    /// The cluster kind each needs (0: none), for homing ([`Board::new`]).
    pub groups: &'a [u8],
    pub run: &'a (dyn Fn(&U, &mut Servers) -> T + Sync),
    /// A trial whose run panicked.
    pub panicked: &'a (dyn Fn() -> T + Sync),
}

/// Runs `consume` over the run's trials with `jobs` jobs, each on servers
/// of its own. Each job starts its servers in its own thread, which lives
/// as long as they do (PR_SET_PDEATHSIG kills a child when the thread that
/// spawned it ends, [`super::process`]); where they are is announced in
/// job order before the first trial, and the servers are cleaned up when
/// the job ends.
pub fn with_jobs<U: Sync, T: Send, R>(
    jobs: usize,
    rig: Rigging,
    work: Work<U, T>,
    consume: impl FnOnce(&mut Trials<U, T>) -> Result<R>,
) -> Result<R> {
    let Work {
        units,
        weights,
        groups,
        run,
        panicked,
    } = work;
    assert_eq!(units.len(), weights.len());
    if jobs <= 1 {
        // One job: each cluster starts when its first trial needs it.
        let mut servers = (rig.start)(0)?;
        (rig.announce)(None, &servers.info());
        let out = consume(&mut Trials::Inline {
            servers: &mut servers,
            units,
            run,
        })?;
        servers.clean_up()?;
        return Ok(out);
    }
    let board = Board::new(weights, groups, jobs);
    let (tx, rx) = mpsc::channel::<(usize, Result<ServersInfo>)>();
    let ended: Mutex<Vec<Result<()>>> = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for j in 0..jobs {
            let (board, tx, ended, rig) = (&board, tx.clone(), &ended, &rig);
            scope.spawn(move || {
                let home = board.homes.get(j).copied().unwrap_or(0);
                let mut servers = match (rig.start)(home) {
                    Ok(s) => s,
                    Err(e) => {
                        let _ = tx.send((j, Err(e)));
                        return;
                    }
                };
                let _ = tx.send((j, Ok(servers.info())));
                drop(tx);
                board.job(j, &mut servers, units, run, panicked);
                super::locked(ended).push(servers.clean_up());
            });
        }
        drop(tx);
        let mut infos: Vec<(usize, Result<ServersInfo>)> = rx.iter().take(jobs).collect();
        infos.sort_by_key(|(j, _)| *j);
        let mut started = Ok(());
        for (j, info) in infos {
            match info {
                Ok(info) => (rig.announce)(Some((j + 1, jobs)), &info),
                Err(e) => started = started.and(Err(e)),
            }
        }
        let out = match started {
            Ok(()) => consume(&mut Trials::Board(&board)),
            Err(e) => Err(e),
        };
        // The consumer is done (all taken, it stopped early, or a job's
        // servers did not start): the jobs start nothing more; the scope
        // waits for the trials they are in.
        board.stop();
        out
    })
    .and_then(|out| {
        for r in super::locked(&ended).drain(..) {
            r?;
        }
        Ok(out)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_jobs_take_the_heaviest_trial_first_and_ties_in_the_runs_order() {
        let board: Board<()> = Board::new(&[5, 9, 5, 1, 9], &[0; 5], 2);
        let mut has = Vec::new();
        let took: Vec<usize> = std::iter::from_fn(|| board.next(0, &mut has)).collect();
        assert_eq!(took, vec![1, 4, 0, 2, 3]);
    }

    #[test]
    fn each_cluster_kind_is_homed_on_jobs_in_proportion_to_its_weight() {
        // Kind 2 weighs 60, kind 1 30, no cluster 10: of 4 jobs 2.4 and 1.2,
        // the spare one to the larger remainder.
        let (w, g) = (
            vec![20, 20, 20, 10, 10, 10, 5, 5],
            vec![2, 2, 2, 1, 1, 1, 0, 0],
        );
        assert_eq!(homes(&w, &g, 4), vec![2, 2, 2, 1]);
        assert_eq!(homes(&w, &g, 6), vec![2, 2, 2, 2, 1, 1]);
        // Fewer jobs than kinds: the heaviest kind is homed.
        assert_eq!(homes(&w, &g, 1), vec![2]);
        assert_eq!(homes(&w, &g, 2), vec![2, 1]);
    }

    #[test]
    fn a_job_takes_its_homes_trials_then_clusterless_ones_then_steals() {
        let board: Board<()> = Board::new(&[9, 8, 7, 6], &[1, 2, 2, 0], 2);
        assert_eq!(board.homes, vec![2, 1]);
        let (mut has0, mut has1) = (Vec::new(), Vec::new());
        assert_eq!(
            board.next(0, &mut has0),
            Some(1),
            "job 0 is homed on kind 2"
        );
        assert_eq!(board.next(1, &mut has1), Some(0), "job 1 on kind 1");
        assert_eq!(
            board.next(1, &mut has1),
            Some(3),
            "no kind-1 trial left: one needing no cluster"
        );
        assert_eq!(board.next(1, &mut has1), Some(2), "then it steals kind 2's");
        assert_eq!(board.next(0, &mut has0), None);
        assert_eq!(has1, vec![1, 0, 2]);
    }
}
