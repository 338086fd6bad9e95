//! A ZooKeeper ensemble as a user-program trial's lock server: the
//! harness's three members, each behind one proxy per worker (so a
//! member's faults still apply and every connection is the worker's), and
//! the ensemble's own transaction logs as the account of the lock.
//!
//! The proxies decode ZooKeeper's framing (jute records behind a 4-byte
//! length). Server to client, a connection's first message is the
//! `ConnectResponse`, whose session id says which worker the session is
//! (a reconnect to another member shows the same id again); then each
//! reply's header (xid, zxid, error). Client to server, after the
//! `ConnectRequest`, each request's header (xid, type) and body: one whose
//! body names the lock's znode is [`Seen::LockSent`] (the first waits at
//! the start gate), its reply [`Seen::LockReplied`], after which the
//! account is asked — once the majority's logs reach the reply's zxid —
//! whether the worker now holds the lock; a worker's `closeSession`
//! request is noted, to tell its release from the server's expiry.
//!
//! The account ([`ZkAccount`]) reads every member's transaction log as it
//! grows ([`crate::live::account::zk_txnlog`]); a transaction counts once
//! it is in the logs of a majority of the members (a leader cut off or
//! killed may have logged proposals the ensemble never committed), and the
//! committed ones are folded into the lock's facts
//! ([`crate::live::account::zk_lock`]) on CLOCK_MONOTONIC.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{bail, Result};

use super::backend::{Backend, ObserverFactory};
use super::seen::Seen;
use super::server_account::{Finished, ServerAccount};
use super::shared::Shared;
use crate::live::account::majority::{grants_of_worker, LockFact};
use crate::live::account::zk_lock::{children_left, lock_facts, Sessions};
use crate::live::account::zk_txnlog::{committed, Jute, MemberLog};
use crate::live::cluster::{ClusterKind, MEMBERS};
use crate::live::proxy::{Flow, Observer};
use crate::live::scenario::LiveScenario;
use crate::live::servers::Servers;
use crate::live::{locked, monotonic_ns};

/// The lock's znode the programs are told to use (the cluster is the run's own).
pub(super) const ZK_LOCK_PATH: &str = "/fencesim/lock-doc";

/// How long a proxy waits for the majority's logs to reach a reply's zxid.
const SYNC_TIMEOUT: Duration = Duration::from_secs(2);
/// How long a trial waits for a previous trial's lock children to go
/// (sessions of programs that did not close them expire).
const LEFTOVER_TIMEOUT: Duration = Duration::from_secs(25);
/// The largest jute frame a proxy decodes (ZooKeeper's jute.maxbuffer is 1 MiB).
const MAX_FRAME_BYTES: usize = 16 << 20;

/// The harness's ZooKeeper ensemble for a user's program.
pub(super) fn zk_backend(_s: &LiveScenario, servers: &mut Servers) -> Result<Backend> {
    let upstreams = servers.ensure_cluster(ClusterKind::Zk)?.endpoints();
    // Where cluster.rs puts each member's dataDir (the run's directory).
    let dirs: Vec<PathBuf> = (0..MEMBERS)
        .map(|i| {
            servers
                .root
                .path
                .join("zookeeper")
                .join(format!("z{i}"))
                .join("version-2")
        })
        .collect();
    let account = Arc::new(ZkAccount::start(dirs, ZK_LOCK_PATH)?);
    Ok(Backend {
        upstreams,
        account: account.clone(),
        observers: zk_observers(account),
        env: |ports| {
            let hosts: Vec<String> = ports.iter().map(|p| format!("127.0.0.1:{p}")).collect();
            vec![
                ("FENCESIM_ZK_HOSTS", hosts.join(",")),
                ("FENCESIM_ZK_LOCK_PATH", ZK_LOCK_PATH.to_string()),
            ]
        },
        keys: [ZK_LOCK_PATH.to_string(), String::new()],
    })
}

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
pub(super) struct ZkAccount {
    dir: String,
    /// The last zxid committed before the trial (its facts come after).
    start_zxid: i64,
    /// Realtime minus monotonic (ns), sampled once.
    wall_minus_mono_ns: i128,
    state: Mutex<State>,
    finished: Mutex<bool>,
}

impl ZkAccount {
    /// Reads the members' logs (`dataDir/version-2` each) up to now; waits
    /// for a previous trial's lock children to go first.
    fn start(dirs: Vec<PathBuf>, dir: &str) -> Result<ZkAccount> {
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
            let left = children_left(&committed(&state.members), dir);
            if left.is_empty() {
                break;
            }
            if Instant::now() > give_up {
                bail!(
                    "{dir} still has children {} s after the trial was to start: {}",
                    LEFTOVER_TIMEOUT.as_secs(),
                    left.join(", ")
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(ZkAccount {
            dir: dir.to_string(),
            start_zxid: state.committed_zxid(),
            wall_minus_mono_ns,
            state: Mutex::new(state),
            finished: Mutex::new(false),
        })
    }

    /// The lock's facts from the committed transactions so far.
    fn facts(&self, state: &State) -> (Vec<LockFact>, Vec<String>) {
        let offset = self.wall_minus_mono_ns;
        lock_facts(
            &committed(&state.members),
            self.start_zxid,
            &self.dir,
            &state.sessions,
            |ms| (i128::from(ms) * 1_000_000 - offset).max(0) as u64,
        )
    }

    /// Reads the logs until the majority's reach `zxid`; false when they did not in time.
    fn sync(&self, zxid: i64) -> bool {
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

    fn session_opened(&self, session: i64, worker: usize) {
        locked(&self.state)
            .sessions
            .worker_of
            .insert(session, worker);
    }

    fn close_sent(&self, session: i64) {
        locked(&self.state).sessions.close_sent.insert(session);
    }

    fn replied(&self, member: usize, zxid: i64) {
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
        Finished { facts, problems }
    }
}

/// Splits a stream into jute frames (a 4-byte big-endian length, then the record).
#[derive(Default)]
struct Frames {
    buf: Vec<u8>,
    /// A length no ZooKeeper frame has: the stream is not decoded any more.
    lost: bool,
}

impl Frames {
    fn push(&mut self, chunk: &[u8]) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        if self.lost {
            return out;
        }
        self.buf.extend_from_slice(chunk);
        let mut at = 0;
        while let Some(head) = self.buf.get(at..at + 4) {
            let len = i32::from_be_bytes([head[0], head[1], head[2], head[3]]);
            let Ok(len) = usize::try_from(len) else {
                self.lost = true;
                break;
            };
            if len > MAX_FRAME_BYTES {
                self.lost = true;
                break;
            }
            let Some(frame) = self.buf.get(at + 4..at + 4 + len) else {
                break;
            };
            out.push(frame.to_vec());
            at += 4 + len;
        }
        self.buf.drain(..at.min(self.buf.len()));
        out
    }
}

/// Whether `needle` occurs in `hay`.
fn contains(hay: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && hay.windows(needle.len()).any(|w| w == needle)
}

/// Observers for each connection of a worker to a member (module doc).
fn zk_observers(account: Arc<ZkAccount>) -> ObserverFactory {
    Arc::new(move |shared, worker, member, _| {
        zk_connection(account.clone(), shared, worker, member)
    })
}

fn zk_connection(
    account: Arc<ZkAccount>,
    shared: Arc<Shared>,
    worker: usize,
    member: usize,
) -> (Observer, Observer) {
    // The connection's session (from its ConnectResponse) and, per request
    // xid not yet answered, whether it named the lock.
    let session: Arc<Mutex<Option<i64>>> = Arc::default();
    let pending: Arc<Mutex<BTreeMap<i32, bool>>> = Arc::default();
    let (acc2, sh2, sess2, pend2) = (
        account.clone(),
        shared.clone(),
        session.clone(),
        pending.clone(),
    );
    let mut up = Frames::default();
    let mut connected_up = false;
    let to_server: Observer = Box::new(move |chunk| {
        for frame in up.push(chunk) {
            // The ConnectRequest.
            if !std::mem::replace(&mut connected_up, true) {
                continue;
            }
            let mut j = Jute::new(&frame);
            let (Ok(xid), Ok(kind)) = (j.int(), j.int()) else {
                continue;
            };
            if kind == -11 {
                if let Some(s) = *locked(&session) {
                    account.close_sent(s);
                }
            }
            let names_lock = contains(frame.get(8..).unwrap_or_default(), &shared.lock_key);
            if names_lock {
                shared.in_start_order(worker);
                shared.record(worker, Seen::LockSent);
            }
            locked(&pending).insert(xid, names_lock);
        }
        Flow::Pass
    });
    let mut down = Frames::default();
    let mut connected_down = false;
    let to_client: Observer = Box::new(move |chunk| {
        for frame in down.push(chunk) {
            let mut j = Jute::new(&frame);
            if !std::mem::replace(&mut connected_down, true) {
                // ConnectResponse: protocolVersion, timeOut, sessionId (0: refused).
                if let (Ok(_), Ok(_), Ok(s)) = (j.int(), j.int(), j.long()) {
                    if s != 0 {
                        acc2.session_opened(s, worker);
                        *locked(&sess2) = Some(s);
                    }
                }
                continue;
            }
            let (Ok(xid), Ok(zxid)) = (j.int(), j.long()) else {
                continue;
            };
            if locked(&pend2).remove(&xid) == Some(true) {
                acc2.replied(member, zxid);
                sh2.record(worker, Seen::LockReplied);
                // A fault on the lock reply is refused for ZooKeeper
                // (plan.rs): the reply goes on.
                let _ = sh2.learn_grants(member, worker);
            }
        }
        Flow::Pass
    });
    (to_server, to_client)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_are_split_across_chunks_and_a_wild_length_stops_decoding() {
        let mut f = Frames::default();
        let mut bytes = Vec::new();
        for body in [&b"abc"[..], &b""[..], &b"hello"[..]] {
            bytes.extend((body.len() as i32).to_be_bytes());
            bytes.extend(body);
        }
        let mut got = Vec::new();
        for c in bytes.chunks(3) {
            got.extend(f.push(c));
        }
        assert_eq!(got, vec![b"abc".to_vec(), Vec::new(), b"hello".to_vec()]);
        assert!(f.push(&(-5i32).to_be_bytes()).is_empty());
        assert!(f.push(&3i32.to_be_bytes()).is_empty());
    }
}
