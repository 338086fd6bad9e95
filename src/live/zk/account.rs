//! ZooKeeper's own account of a user's program's lock: every member's
//! transaction log read as it grows ([`super::txnlog`]); a transaction
//! counts once it is in the logs of a majority of the members (a leader cut
//! off or killed may have logged proposals the ensemble never committed),
//! and the committed ones are folded into the lock's facts
//! ([`super::lock`]) on CLOCK_MONOTONIC, under the lock's znode as named
//! or found in them ([`super::found`]).

use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{bail, Result};

use super::found::{ephemerals_left, lock_dir};
use super::lock::{children_left, lock_facts, Sessions};
use super::txnlog::{committed, MemberLog};
use crate::live::common::fact::{grants_of_worker, LockFact};
use crate::live::common::keys::KeyChoice;
use crate::live::common::server::{Finished, ServerAccount};
use crate::live::{locked, monotonic_ns};

/// How long a proxy waits for the majority's logs to reach a reply's zxid
/// (a loaded machine's fsyncs can take seconds).
const SYNC_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a trial waits for a previous trial's lock children to go
/// (sessions of programs that did not close them expire).
const LEFTOVER_TIMEOUT: Duration = Duration::from_secs(25);

/// What the account knows while the trial runs.
struct State {
    members: Vec<MemberLog>,
    sessions: Sessions,
    /// Per member: the highest zxid a reply to a worker carried.
    replied_zxid: Vec<i64>,
    /// Why a member's log could not be read.
    unreadable: Vec<String>,
}

impl State {
    fn catch_up(&mut self) {
        for m in &mut self.members {
            if let Err(e) = m.catch_up() {
                let e = format!("{e:#}");
                if !self.unreadable.contains(&e) {
                    self.unreadable.push(e);
                }
            }
        }
    }

    fn committed_zxid(&self) -> i64 {
        committed(&self.members).last().map_or(0, |t| t.zxid)
    }
}

/// The ensemble's own account of the lock: its members' transaction logs.
pub(crate) struct ZkAccount {
    /// The lock's znode as named, or how to find it.
    choice: KeyChoice,
    /// The path fencesim gave the programs.
    told: String,
    /// The last zxid committed before the trial (its facts come after).
    start_zxid: i64,
    /// Realtime minus monotonic (ns), sampled once.
    wall_minus_mono_ns: i128,
    state: Mutex<State>,
    finished: Mutex<bool>,
}

impl ZkAccount {
    /// Reads the members' logs (`dataDir/version-2` each) up to now; waits
    /// for a previous trial's lock children (the lock to be found: its
    /// ephemeral znodes) to go first.
    pub(super) fn start(dirs: Vec<PathBuf>, choice: &KeyChoice, told: &str) -> Result<ZkAccount> {
        let wall_ns = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as i128);
        let wall_minus_mono_ns = wall_ns - monotonic_ns() as i128;
        let mut state = State {
            members: dirs.iter().map(|d| MemberLog::new(d)).collect(),
            sessions: Sessions::default(),
            replied_zxid: vec![0; dirs.len()],
            unreadable: Vec::new(),
        };
        let give_up = Instant::now() + LEFTOVER_TIMEOUT;
        loop {
            state.catch_up();
            if !state.unreadable.is_empty() {
                bail!(
                    "reading ZooKeeper's transaction logs: {}",
                    state.unreadable.join("; ")
                );
            }
            let txns = committed(&state.members);
            let left = match choice.exact() {
                Some(dir) => children_left(&txns, dir),
                None => ephemerals_left(&txns),
            };
            if left.is_empty() {
                break;
            }
            if Instant::now() > give_up {
                bail!(
                    "{} still has children {} s after the trial was to start: {}",
                    choice.exact().unwrap_or("the ensemble"),
                    LEFTOVER_TIMEOUT.as_secs(),
                    left.join(", ")
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(ZkAccount {
            choice: choice.clone(),
            told: told.to_string(),
            start_zxid: state.committed_zxid(),
            wall_minus_mono_ns,
            state: Mutex::new(state),
            finished: Mutex::new(false),
        })
    }

    /// The lock's znode as named or found so far (Err: not clear, why).
    fn dir(&self, state: &State) -> Result<Option<String>, String> {
        let txns = committed(&state.members);
        lock_dir(
            &txns,
            self.start_zxid,
            &state.sessions,
            &self.choice,
            &self.told,
        )
    }

    /// The lock's facts from the committed transactions so far.
    fn facts(&self, state: &State) -> (Vec<LockFact>, Vec<String>) {
        let offset = self.wall_minus_mono_ns;
        let dir = match self.dir(state) {
            Ok(Some(dir)) => dir,
            Ok(None) => return (Vec::new(), Vec::new()),
            Err(why) => return (Vec::new(), vec![why]),
        };
        lock_facts(
            &committed(&state.members),
            self.start_zxid,
            &dir,
            &state.sessions,
            |ms| (i128::from(ms) * 1_000_000 - offset).max(0) as u64,
        )
    }

    /// The lock's znode as one line: named, found, or not found.
    fn found(&self, state: &State) -> String {
        match (self.choice.exact(), self.dir(state)) {
            (Some(dir), _) => format!("lock znode {dir} (named)"),
            (None, Ok(Some(dir))) => format!(
                "lock znode {dir} (the parent of the ephemeral znodes the workers created, of {})",
                self.choice.describe()
            ),
            (None, Ok(None)) => format!(
                "no ephemeral znode matching the lock's name ({}) was created by a worker",
                self.choice.describe()
            ),
            (None, Err(_)) => "the lock's znode is not clear (below)".to_string(),
        }
    }

    /// Reads the logs until the majority's reach `zxid`; false when they did not in time.
    fn sync(&self, zxid: i64) -> bool {
        // A zxid whose counter is 0 names no transaction: it is a new
        // epoch's start, which a member that rejoined after an election
        // (a paused leader, say) carries in its replies until the epoch's
        // first transaction. It says the member had everything committed
        // before the epoch, and a quorum acknowledged that history to the
        // new leader on disk: the logs as read now have it all. Waiting for
        // a transaction that zxid does not name failed a trial whenever
        // the epoch had none yet when the lock was judged.
        let zxid = if zxid & 0xffff_ffff == 0 { 0 } else { zxid };
        let give_up = Instant::now() + SYNC_TIMEOUT;
        loop {
            let mut st = locked(&self.state);
            st.catch_up();
            if st.committed_zxid() >= zxid {
                return true;
            }
            drop(st);
            if Instant::now() > give_up {
                return false;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    pub(super) fn session_opened(&self, session: i64, worker: usize) {
        locked(&self.state)
            .sessions
            .worker_of
            .insert(session, worker);
    }

    pub(super) fn close_sent(&self, session: i64) {
        locked(&self.state).sessions.close_sent.insert(session);
    }

    pub(super) fn replied(&self, member: usize, zxid: i64) {
        let mut st = locked(&self.state);
        st.replied_zxid[member] = st.replied_zxid[member].max(zxid);
    }
}

impl ServerAccount for ZkAccount {
    fn grants_of(&self, member: usize, worker: usize) -> Result<Vec<u64>> {
        let zxid = locked(&self.state).replied_zxid[member];
        if !self.sync(zxid) {
            bail!(
                "ZooKeeper's transaction logs did not reach zxid {zxid:#x} (member {member}'s reply) \
                 on a majority of members within {} ms",
                SYNC_TIMEOUT.as_millis()
            );
        }
        let st = locked(&self.state);
        let (facts, _) = self.facts(&st);
        Ok(grants_of_worker(&facts, worker))
    }

    fn finish(&self) -> Finished {
        let mut problems = Vec::new();
        if std::mem::replace(&mut *locked(&self.finished), true) {
            problems.push("the ZooKeeper account was closed twice".to_string());
        }
        let last = locked(&self.state)
            .replied_zxid
            .iter()
            .copied()
            .max()
            .unwrap_or(0);
        if !self.sync(last) {
            problems.push(format!(
                "ZooKeeper's transaction logs never reached zxid {last:#x}, the last a worker was answered, on a majority of members"
            ));
        }
        let st = locked(&self.state);
        problems.extend(
            st.unreadable
                .iter()
                .map(|e| format!("ZooKeeper's transaction log: {e}")),
        );
        let (facts, more) = self.facts(&st);
        problems.extend(more.into_iter().map(|p| format!("ZooKeeper: {p}")));
        Finished {
            facts,
            problems,
            notes: vec![self.found(&st)],
            this_trial: Vec::new(),
        }
    }
}
