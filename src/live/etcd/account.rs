//! etcd's own account of a lock during one trial of a user's program: the
//! harness's watch on the lock's key prefix (every key, when the lock is
//! to be found: [`super::found`]) from the trial's start revision, folded
//! into the lock's facts ([`LockFact`]).
//!
//! etcd keeps every change as a numbered revision, and a watch from a past
//! revision replays each one (key, create and mod revision, lease), so what
//! happened to the lock is etcd's word, not the client's. One rule covers
//! the recipes: among the live keys under the prefix, the one with the
//! lowest create revision holds — the `etcd3` package's single key created
//! by `if create_revision(key) == 0 then put(key, lease)`, and etcd's Mutex
//! (`<prefix>/<lease hex>` keys, lowest first; the server-side v3lock API
//! too). A key's holder becomes `Granted` to the worker whose connection
//! was granted its lease (or, with no lease, whose write created it at
//! that revision), followed by its `Token`: the create revision.
//!
//! The holding key's deletion is `Released` by the one worker whose
//! connection carried a response of that very revision to a request that
//! could delete it (a revoke of its lease, a delete, a transaction, an
//! unlock) — every etcd response carries the store's revision in its
//! header — and `Expired` when none did and no such request was still
//! unanswered when etcd deleted the key (etcd's lessor revoked the lease).
//! A deletion that an unanswered request may have made (its response lost
//! to a cut connection) is a problem: the trial cannot be judged, rather
//! than a guess.
//!
//! Each event's time is its arrival on the live watch, on CLOCK_MONOTONIC
//! (after etcd applied it). At the end, a second watch replays the trial's
//! revisions from the start: it must equal what the live watch saw
//! (compaction never runs during a trial).

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use serde_json::{json, Value};

use super::found::{lock_key, under, Created};
use super::gateway::{int, Etcd};
use crate::live::common::bytes::{base64, unbase64};
use crate::live::common::fact::{disorder, grants_of_worker, LockFact};
use crate::live::common::keys::KeyChoice;
use crate::live::common::server::{Finished, ServerAccount};
use crate::live::{locked, monotonic_ns};

/// One change under the lock's prefix, as the watch reported it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyEvent {
    pub key: Vec<u8>,
    pub deleted: bool,
    /// The revision of the change (for a creation, also its create revision).
    pub mod_rev: u64,
    pub create_rev: u64,
    /// The key's lease (0: none), as the id's 64 bits.
    pub lease: u64,
    /// Arrival on the live watch, CLOCK_MONOTONIC ns.
    pub t_ns: u64,
}

/// What a request that may delete the lock's key was.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mutation {
    /// A revoke of this lease.
    Revoke(u64),
    /// A DeleteRange, Txn or Put naming the lock, an Unlock; `deletes`:
    /// it may delete a key (a DeleteRange, an Unlock, a Txn with a delete
    /// among its operations, or one that does not parse) — a Put, or a Txn
    /// of compares, puts and ranges, never deletes the lock's key.
    Write { deletes: bool },
}

/// A worker's request seen by its proxy, and what its response said.
#[derive(Clone, Debug)]
struct Sent {
    worker: usize,
    what: Mutation,
    sent_ns: u64,
    /// None: unanswered; Some(None): answered with an error or without
    /// changing anything; Some(Some(r)): it changed the store at revision r.
    outcome: Option<Option<u64>>,
}

/// What the proxies and the watch told the account.
#[derive(Default)]
struct State {
    events: Vec<KeyEvent>,
    /// The watch's last event revision.
    seen_rev: u64,
    broken: Option<String>,
    /// The watch's moves to another member, and the changes of the lock
    /// that happened while it had none (stamped late: they cannot be placed
    /// in time, so the trial cannot be judged).
    moves: Vec<String>,
    untimed: Vec<String>,
    /// Lease id ⇒ the worker whose connection was granted it.
    leases: BTreeMap<u64, usize>,
    sent: Vec<Sent>,
}

/// The account of one trial.
pub struct EtcdLockAccount {
    /// The prefix watched: the lock's as named, or empty (every key).
    prefix: Vec<u8>,
    /// The lock as named, or how to find it.
    choice: KeyChoice,
    /// The key fencesim gave the programs.
    told: Vec<u8>,
    /// Every member's endpoint; the watch starts on `endpoints[first]`.
    endpoints: Vec<String>,
    first: usize,
    start_rev: u64,
    state: Arc<Mutex<State>>,
    stop: Arc<AtomicBool>,
}

/// The watched range: `prefix` and every key after it, or (empty) every key.
fn range(prefix: &[u8]) -> (Vec<u8>, Vec<u8>) {
    if prefix.is_empty() {
        // etcd: key and range_end both \0 is every key.
        return (vec![0], vec![0]);
    }
    (prefix.to_vec(), range_end(prefix))
}

/// The smallest key after every key starting with `prefix`.
fn range_end(prefix: &[u8]) -> Vec<u8> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return end;
        }
    }
    vec![0]
}

/// A watch on the gateway (`POST /v3/watch`, HTTP/1.0 so the body is the
/// stream itself: one JSON object per line, as etcd flushes them).
struct Watch {
    stream: TcpStream,
    buf: Vec<u8>,
    body: bool,
}

impl Watch {
    fn open(endpoint: &str, prefix: &[u8], start_rev: u64) -> Result<Watch> {
        let host = endpoint.trim_start_matches("http://");
        let mut stream =
            TcpStream::connect(host).with_context(|| format!("the account's watch on {host}"))?;
        stream.set_read_timeout(Some(Duration::from_millis(100)))?;
        let (key, end) = range(prefix);
        let body = json!({"create_request": {
            "key": base64(&key), "range_end": base64(&end),
            "start_revision": start_rev.to_string()}})
        .to_string();
        write!(
            stream,
            "POST /v3/watch HTTP/1.0\r\nHost: {host}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )?;
        Ok(Watch {
            stream,
            buf: Vec::new(),
            body: false,
        })
    }

    /// The next whole message; Ok(None) when none came within the read timeout.
    fn next(&mut self) -> Result<Option<Value>> {
        loop {
            if !self.body {
                if let Some(end) = self.buf.windows(4).position(|w| w == b"\r\n\r\n") {
                    let head = String::from_utf8_lossy(&self.buf[..end]).into_owned();
                    if !head.starts_with("HTTP/1.") || !head[..head.len().min(12)].contains("200") {
                        bail!("the watch was refused: {head}");
                    }
                    self.buf.drain(..end + 4);
                    self.body = true;
                    continue;
                }
            } else if let Some(nl) = self.buf.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = self.buf.drain(..=nl).collect();
                if line.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                let v: Value = serde_json::from_slice(&line).context("a watch message")?;
                return Ok(Some(v));
            }
            let mut chunk = [0u8; 16 * 1024];
            match self.stream.read(&mut chunk) {
                Ok(0) => bail!("etcd closed the watch"),
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) =>
                {
                    return Ok(None)
                }
                Err(e) => return Err(e).context("reading the watch"),
            }
        }
    }
}

/// The key events of one watch message (an error message is an error).
fn key_events(v: &Value, t_ns: u64) -> Result<Vec<KeyEvent>> {
    let Some(result) = v.get("result") else {
        bail!("the watch answered {v}");
    };
    if result.get("canceled").and_then(Value::as_bool) == Some(true) {
        bail!("etcd cancelled the watch: {result}");
    }
    let events = result.get("events").and_then(Value::as_array);
    events
        .into_iter()
        .flatten()
        .map(|e| {
            let kv = e.get("kv").context("a watch event without kv")?;
            let key = kv
                .get("key")
                .and_then(Value::as_str)
                .context("a watch event without key")?;
            let key = unbase64(key, "a watch event's key")?;
            // The gateway writes int64 as strings; a lease id may use all 64 bits.
            let lease = match kv.get("lease") {
                Some(Value::String(s)) => s.parse::<i64>().map(|l| l as u64).unwrap_or(0),
                _ => 0,
            };
            Ok(KeyEvent {
                key,
                deleted: e.get("type").and_then(Value::as_str) == Some("DELETE"),
                mod_rev: int(kv, "mod_revision").context("a watch event without mod_revision")?,
                create_rev: int(kv, "create_revision").unwrap_or(0),
                lease,
                t_ns,
            })
        })
        .collect()
}

/// How long the watch looks for another member after its own broke.
const MOVE_WITHIN: Duration = Duration::from_secs(10);

/// The live watch's thread: reads the lock's changes and, when its member
/// dies (a member's fault), moves to another member from the revision after
/// the last one it saw. A change made while it had no member arrives late,
/// stamped when it arrives: it is found by the new member's current
/// revision (read before the new watch opens) and named, and the trial is
/// not judged. With no change in the gap the account is whole and timed.
struct Follow {
    endpoints: Vec<String>,
    on: usize,
    prefix: Vec<u8>,
    start_rev: u64,
    state: Arc<Mutex<State>>,
    stop: Arc<AtomicBool>,
}

impl Follow {
    fn run(mut self, mut watch: Watch) {
        // Changes up to this revision happened while the watch had no member.
        let mut gap: Option<(u64, u64, String)> = None;
        while !self.stop.load(Ordering::SeqCst) {
            let got = watch
                .next()
                .and_then(|m| m.map(|v| key_events(&v, monotonic_ns())).transpose());
            match got {
                Ok(None) => {}
                Ok(Some(events)) => {
                    let mut s = locked(&self.state);
                    if let Some(last) = events.last() {
                        s.seen_rev = last.mod_rev;
                    }
                    if let Some((from, until, why)) = &gap {
                        for e in events
                            .iter()
                            .filter(|e| e.mod_rev > *from && e.mod_rev <= *until)
                        {
                            s.untimed.push(format!(
                                "the change of {} at revision {} came while the account's watch had no member ({why}): it cannot be placed in time",
                                String::from_utf8_lossy(&e.key),
                                e.mod_rev
                            ));
                        }
                    }
                    s.events.extend(events);
                }
                Err(e) => {
                    let broke = format!("{e:#}");
                    let broke_ns = monotonic_ns();
                    match self.move_on() {
                        Ok((next, until)) => {
                            let from = locked(&self.state).seen_rev.max(self.start_rev - 1);
                            let why = format!(
                                "the account's watch on {} broke ({broke}); it moved to {} after {} ms",
                                self.endpoints[self.on],
                                self.endpoints[next.1],
                                (monotonic_ns() - broke_ns) / 1_000_000
                            );
                            locked(&self.state).moves.push(why.clone());
                            gap = Some((from, until, why));
                            self.on = next.1;
                            watch = next.0;
                        }
                        Err(e) => {
                            locked(&self.state).broken =
                                Some(format!("{broke}; no other member took the watch: {e:#}"));
                            return;
                        }
                    }
                }
            }
        }
    }

    /// A watch on another member from the revision after the last one seen,
    /// and that member's current revision before it opened.
    fn move_on(&self) -> Result<((Watch, usize), u64)> {
        let give_up = Instant::now() + MOVE_WITHIN;
        let mut last = None;
        while Instant::now() < give_up && !self.stop.load(Ordering::SeqCst) {
            for k in 1..=self.endpoints.len() {
                let i = (self.on + k) % self.endpoints.len();
                match self.open_on(i) {
                    Ok(got) => return Ok(got),
                    Err(e) => last = Some(e),
                }
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Err(last.unwrap_or_else(|| anyhow::anyhow!("the run ended first")))
    }

    fn open_on(&self, i: usize) -> Result<((Watch, usize), u64)> {
        let mut etcd = Etcd::new(vec![self.endpoints[i].clone()], Duration::from_secs(1))?;
        let (key, _) = range(&self.prefix);
        let v = etcd.call("/v3/kv/range", &json!({"key": base64(&key)}))?;
        let now = v
            .get("header")
            .and_then(|h| int(h, "revision"))
            .context("a range without its header's revision")?;
        let from = locked(&self.state).seen_rev.max(self.start_rev - 1) + 1;
        let watch = Watch::open(&self.endpoints[i], &self.prefix, from)?;
        Ok(((watch, i), now))
    }
}

impl EtcdLockAccount {
    /// Frees the lock (every key under its prefix deleted; to be found:
    /// every key of the run's cluster) and starts the live watch from the
    /// next revision, before any program runs. `told`: the key fencesim
    /// gives the programs.
    pub fn start(endpoints: &[String], choice: &KeyChoice, told: &str) -> Result<EtcdLockAccount> {
        let mut etcd = Etcd::new(endpoints.to_vec(), Duration::from_secs(5))?;
        let prefix = choice.exact().unwrap_or_default();
        let (key, end) = range(prefix.as_bytes());
        let all = json!({"key": base64(&key), "range_end": base64(&end)});
        etcd.call("/v3/kv/deleterange", &all)?;
        let v = etcd.call("/v3/kv/range", &json!({"key": base64(&key)}))?;
        let rev = v
            .get("header")
            .and_then(|h| int(h, "revision"))
            .context("a range without its header's revision")?;
        let account = EtcdLockAccount {
            prefix: prefix.as_bytes().to_vec(),
            choice: choice.clone(),
            told: told.as_bytes().to_vec(),
            endpoints: endpoints.to_vec(),
            first: etcd.current(),
            start_rev: rev + 1,
            state: Arc::default(),
            stop: Arc::default(),
        };
        let watch = Watch::open(
            &endpoints[account.first],
            &account.prefix,
            account.start_rev,
        )?;
        let follow = Follow {
            endpoints: account.endpoints.clone(),
            on: account.first,
            prefix: account.prefix.clone(),
            start_rev: account.start_rev,
            state: account.state.clone(),
            stop: account.stop.clone(),
        };
        std::thread::spawn(move || follow.run(watch));
        Ok(account)
    }

    /// The lock's key prefix when it is named exactly (None: to be found).
    pub fn named(&self) -> Option<&[u8]> {
        Some(self.prefix.as_slice()).filter(|p| !p.is_empty())
    }

    /// `worker`'s connection was granted lease `id`.
    pub fn lease_granted(&self, worker: usize, id: u64) {
        locked(&self.state).leases.insert(id, worker);
    }

    /// `worker` sent a request that may delete the lock's key; its handle.
    pub fn sent(&self, worker: usize, what: Mutation) -> usize {
        let mut s = locked(&self.state);
        s.sent.push(Sent {
            worker,
            what,
            sent_ns: monotonic_ns(),
            outcome: None,
        });
        s.sent.len() - 1
    }

    /// The response to request `handle`: Some(r) it changed the store at
    /// revision r, None it failed or changed nothing.
    pub fn answered(&self, handle: usize, changed_at: Option<u64>) {
        if let Some(s) = locked(&self.state).sent.get_mut(handle) {
            s.outcome.get_or_insert(changed_at);
        }
    }

    /// Waits until the watch has seen revision `rev` (a change under the
    /// prefix that a held response carries). Err: not within `timeout`.
    pub fn wait_for(&self, rev: u64, timeout: Duration) -> Result<()> {
        let give_up = Instant::now() + timeout;
        loop {
            {
                let s = locked(&self.state);
                if s.seen_rev >= rev {
                    return Ok(());
                }
                if let Some(b) = &s.broken {
                    bail!("etcd's watch broke: {b}");
                }
            }
            if Instant::now() > give_up {
                bail!(
                    "etcd's watch did not show revision {rev} within {} ms",
                    timeout.as_millis()
                );
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// The lock's facts from what the watch saw so far, and every reason
    /// not to trust them.
    pub fn facts(&self) -> (Vec<LockFact>, Vec<String>) {
        let s = locked(&self.state);
        let events = match self.lock(&s) {
            Ok(Some(lock)) if self.named().is_none() => (s.events.iter())
                .filter(|e| under(&lock, &e.key))
                .cloned()
                .collect(),
            Ok(Some(_)) => s.events.clone(),
            Ok(None) => return (Vec::new(), Vec::new()),
            Err(why) => return (Vec::new(), vec![why]),
        };
        let (facts, problems) = fold(&events, &s.leases, &s.sent);
        // The watch's events arrive in revision order, stamped as they do.
        debug_assert!(disorder(&facts).is_none(), "{:?}", disorder(&facts));
        (facts, problems)
    }

    /// The lock as named or found so far (Err: not clear, why).
    fn lock(&self, s: &State) -> std::result::Result<Option<Vec<u8>>, String> {
        let created = (s.events.iter())
            .filter(|e| !e.deleted && e.create_rev == e.mod_rev)
            .map(|e| Created {
                key: &e.key,
                lease: e.lease,
                owner: owner(e, &s.leases, &s.sent).ok(),
            });
        lock_key(created, &self.choice, &self.told)
    }

    /// What the lock is, as one line: named, found, or not found.
    fn found(&self) -> String {
        let lock = self.lock(&locked(&self.state));
        match (self.choice.exact(), lock) {
            (Some(k), _) => format!("lock key {k} (named; its keys under it too)"),
            (None, Ok(Some(k))) => format!(
                "lock key {} (the key, or the prefix of the keys, workers created with their leases, of {})",
                String::from_utf8_lossy(&k),
                self.choice.describe()
            ),
            (None, Ok(None)) => format!(
                "no key matching the lock's name ({}) was created by a worker",
                self.choice.describe()
            ),
            (None, Err(_)) => "the lock's key is not clear (below)".to_string(),
        }
    }

    /// Closes the account: replays the trial's revisions on a second watch
    /// and holds the live one to it; the lock's facts and every problem.
    pub fn finish(&self) -> (Vec<LockFact>, Vec<String>) {
        let mut problems = Vec::new();
        match self.replay() {
            Ok(replayed) => {
                let last = replayed.last().map_or(0, |e| e.mod_rev);
                if let Err(e) = self.wait_for(last, Duration::from_secs(2)) {
                    problems.push(format!("{e:#}"));
                }
                let key = |e: &KeyEvent| (e.key.clone(), e.deleted, e.mod_rev, e.create_rev);
                let live: Vec<_> = locked(&self.state).events.iter().map(key).collect();
                let again: Vec<_> = replayed.iter().map(key).collect();
                if live != again {
                    problems.push(format!(
                        "etcd's live watch saw {} changes of the lock, its replay from revision {} {}: the account is not whole",
                        live.len(),
                        self.start_rev,
                        again.len()
                    ));
                }
            }
            Err(e) => problems.push(format!("replaying the trial's revisions: {e:#}")),
        }
        self.stop.store(true, Ordering::SeqCst);
        {
            let s = locked(&self.state);
            if let Some(b) = &s.broken {
                problems.push(format!("etcd's watch broke: {b}"));
            }
            problems.extend(s.untimed.iter().cloned());
        }
        let (facts, more) = self.facts();
        problems.extend(more);
        (facts, problems)
    }

    /// Every change since the trial's start revision, on a fresh watch:
    /// read until it has been quiet for a while.
    fn replay(&self) -> Result<Vec<KeyEvent>> {
        // On the first member that answers, from the watch's first one.
        let n = self.endpoints.len();
        let mut opened = Err(anyhow::anyhow!("no etcd member"));
        for k in 0..n {
            opened = Watch::open(
                &self.endpoints[(self.first + k) % n],
                &self.prefix,
                self.start_rev,
            );
            if opened.is_ok() {
                break;
            }
        }
        let mut watch = opened?;
        let mut events = Vec::new();
        let mut quiet_since = Instant::now();
        let give_up = Instant::now() + Duration::from_secs(5);
        while quiet_since.elapsed() < Duration::from_millis(300) {
            if Instant::now() > give_up {
                bail!("the replay did not settle within 5 s");
            }
            if let Some(v) = watch.next()? {
                events.extend(key_events(&v, 0)?);
                quiet_since = Instant::now();
            }
        }
        Ok(events)
    }
}

impl Drop for EtcdLockAccount {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

/// The worker that created a key: its lease's, or (no lease) the one whose
/// write changed the store at its create revision.
fn owner(
    e: &KeyEvent,
    leases: &BTreeMap<u64, usize>,
    sent: &[Sent],
) -> std::result::Result<usize, String> {
    let key = String::from_utf8_lossy(&e.key);
    if e.lease != 0 {
        return leases.get(&e.lease).copied().ok_or_else(|| {
            format!(
                "the lock key {key} was created at revision {} with lease {:x}, which no worker's connection was granted (cannot say whose lock it is)",
                e.create_rev, e.lease
            )
        });
    }
    let by: Vec<usize> = sent
        .iter()
        .filter(|s| {
            matches!(s.what, Mutation::Write { .. }) && s.outcome == Some(Some(e.create_rev))
        })
        .map(|s| s.worker)
        .collect();
    match by.as_slice() {
        [w] => Ok(*w),
        _ => Err(format!(
            "the lock key {key} was created at revision {} without a lease, by no one worker's connection (cannot say whose lock it is)",
            e.create_rev
        )),
    }
}

/// Who deleted the holding key at revision `e.mod_rev` (`lease`: its
/// lease): Ok(Some(w)) a worker's request, Ok(None) its lease expired,
/// Err: it cannot be placed.
fn deleted_by(
    e: &KeyEvent,
    lease: u64,
    sent: &[Sent],
) -> std::result::Result<Option<usize>, String> {
    let could = |s: &&Sent| match s.what {
        Mutation::Revoke(l) => l == lease && lease != 0,
        Mutation::Write { deletes } => deletes,
    };
    let mut by: Vec<usize> = sent
        .iter()
        .filter(could)
        .filter(|s| s.outcome == Some(Some(e.mod_rev)))
        .map(|s| s.worker)
        .collect();
    by.dedup();
    let key = String::from_utf8_lossy(&e.key);
    match by.as_slice() {
        [w] => Ok(Some(*w)),
        [] => {
            let unanswered: Vec<(usize, Mutation)> = sent
                .iter()
                .filter(could)
                .filter(|s| s.outcome.is_none() && s.sent_ns < e.t_ns)
                .map(|s| (s.worker, s.what))
                .collect();
            if unanswered.is_empty() {
                Ok(None)
            } else {
                Err(format!(
                    "the lock key {key} was deleted at revision {} while worker(s) (index, request) {unanswered:?} had a request that may have deleted it unanswered (its response lost): released or expired cannot be told",
                    e.mod_rev
                ))
            }
        }
        _ => Err(format!(
            "the lock key {key}'s deletion at revision {} is claimed by the responses of workers {by:?}",
            e.mod_rev
        )),
    }
}

/// The lock's facts: the lowest create revision among the live keys holds.
fn fold(
    events: &[KeyEvent],
    leases: &BTreeMap<u64, usize>,
    sent: &[Sent],
) -> (Vec<LockFact>, Vec<String>) {
    // Live keys: key ⇒ (create revision, lease, owner).
    let mut live: BTreeMap<Vec<u8>, (u64, u64, Option<usize>)> = BTreeMap::new();
    let mut holder: Option<(Vec<u8>, Option<u64>)> = None;
    let mut grants = 0u64;
    let mut facts = Vec::new();
    let mut problems = Vec::new();
    for e in events {
        if e.deleted {
            let Some((_, lease, _)) = live.remove(&e.key) else {
                continue;
            };
            if holder.as_ref().is_some_and(|(k, _)| *k == e.key) {
                if let Some((_, Some(grant))) = holder.take() {
                    facts.push(LockFact::Position {
                        value: e.mod_rev as i64,
                        t_ns: e.t_ns,
                    });
                    match deleted_by(e, lease, sent) {
                        Ok(Some(by)) => facts.push(LockFact::Released {
                            grant,
                            by,
                            t_ns: e.t_ns,
                        }),
                        Ok(None) => facts.push(LockFact::Expired {
                            grant,
                            t_ns: e.t_ns,
                        }),
                        Err(p) => problems.push(p),
                    }
                }
            }
        } else if !live.contains_key(&e.key) {
            let who = owner(e, leases, sent).map_err(|p| problems.push(p)).ok();
            live.insert(e.key.clone(), (e.create_rev, e.lease, who));
        }
        if holder.is_none() {
            let first = live.iter().min_by_key(|(_, (rev, _, _))| *rev);
            if let Some((key, (rev, _, who))) = first {
                let grant = who.map(|worker| {
                    grants += 1;
                    facts.push(LockFact::Granted {
                        grant: grants,
                        worker,
                        t_ns: e.t_ns,
                    });
                    facts.push(LockFact::Token {
                        worker,
                        value: *rev as i64,
                        t_ns: e.t_ns,
                    });
                    grants
                });
                holder = Some((key.clone(), grant));
            }
        }
    }
    (facts, problems)
}

impl ServerAccount for EtcdLockAccount {
    /// The observers waited for the watch before asking ([`super::observer`]).
    fn grants_of(&self, _upstream: usize, worker: usize) -> Result<Vec<u64>> {
        Ok(grants_of_worker(&self.facts().0, worker))
    }

    fn finish(&self) -> Finished {
        let (facts, problems) = EtcdLockAccount::finish(self);
        Finished {
            facts,
            problems,
            notes: vec![self.found()],
            this_trial: locked(&self.state).moves.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn put(key: &str, rev: u64, lease: u64, t_ns: u64) -> KeyEvent {
        KeyEvent {
            key: key.as_bytes().to_vec(),
            deleted: false,
            mod_rev: rev,
            create_rev: rev,
            lease,
            t_ns,
        }
    }

    fn del(key: &str, rev: u64, t_ns: u64) -> KeyEvent {
        KeyEvent {
            key: key.as_bytes().to_vec(),
            deleted: true,
            mod_rev: rev,
            create_rev: 0,
            lease: 0,
            t_ns,
        }
    }

    /// (kind, worker — or the token, or an expired grant —, t_ns) per fact.
    fn brief(facts: &[LockFact]) -> Vec<(&'static str, u64, u64)> {
        facts
            .iter()
            .filter_map(|f| match *f {
                LockFact::Granted { worker, t_ns, .. } => Some(("granted", worker as u64, t_ns)),
                LockFact::Token { value, t_ns, .. } => Some(("token", value as u64, t_ns)),
                LockFact::Expired { grant, t_ns } => Some(("expired", grant, t_ns)),
                LockFact::Released { by, t_ns, .. } => Some(("released", by as u64, t_ns)),
                LockFact::Renewed { .. } | LockFact::Position { .. } => None,
            })
            .collect()
    }

    fn revoke(worker: usize, lease: u64, sent_ns: u64, outcome: Option<Option<u64>>) -> Sent {
        Sent {
            worker,
            what: Mutation::Revoke(lease),
            sent_ns,
            outcome,
        }
    }

    #[test]
    fn an_expiry_then_a_grant_then_a_revoke_that_released_it() {
        let leases = BTreeMap::from([(7, 0), (9, 1)]);
        let events = vec![
            put("l", 10, 7, 100),
            del("l", 11, 200),
            put("l", 12, 9, 210),
            del("l", 13, 300),
        ];
        // A's late revoke of its expired lease failed; B's revoke deleted at 13.
        let sent = vec![
            revoke(1, 9, 290, Some(Some(13))),
            revoke(0, 7, 400, Some(None)),
        ];
        let (facts, problems) = fold(&events, &leases, &sent);
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(
            brief(&facts),
            vec![
                ("granted", 0, 100),
                ("token", 10, 100),
                ("expired", 1, 200),
                ("granted", 1, 210),
                ("token", 12, 210),
                ("released", 1, 300),
            ]
        );
    }

    #[test]
    fn the_lowest_create_revision_holds_and_a_waiter_takes_over_at_the_deletion() {
        let leases = BTreeMap::from([(7, 0), (9, 1)]);
        let events = vec![
            put("l/7", 10, 7, 100),
            put("l/9", 11, 9, 110),
            del("l/7", 12, 200),
        ];
        let sent = vec![revoke(0, 7, 150, Some(Some(12)))];
        let (facts, problems) = fold(&events, &leases, &sent);
        assert!(problems.is_empty(), "{problems:?}");
        let kinds: Vec<(&str, u64)> = brief(&facts).iter().map(|(k, w, _)| (*k, *w)).collect();
        assert_eq!(
            kinds,
            vec![
                ("granted", 0),
                ("token", 10),
                ("released", 0),
                ("granted", 1),
                ("token", 11)
            ]
        );
    }

    #[test]
    fn a_key_no_worker_created_and_an_unplaceable_deletion_are_problems() {
        let (_, problems) = fold(&[put("l", 10, 5, 100)], &BTreeMap::new(), &[]);
        assert_eq!(problems.len(), 1);
        assert!(
            problems[0].contains("no worker's connection"),
            "{problems:?}"
        );
        let leases = BTreeMap::from([(7, 0)]);
        let events = vec![put("l", 10, 7, 100), del("l", 11, 200)];
        let (facts, problems) = fold(&events, &leases, &[revoke(0, 7, 150, None)]);
        assert_eq!(problems.len(), 1, "{facts:?}");
        assert!(problems[0].contains("cannot be told"));
        // Sent after etcd had deleted it: not a candidate, an expiry.
        let (facts, problems) = fold(&events, &leases, &[revoke(0, 7, 250, None)]);
        assert!(problems.is_empty());
        // Where etcd's order stood when the ownership ended: the deletion's revision.
        assert_eq!(
            facts[2],
            LockFact::Position {
                value: 11,
                t_ns: 200
            }
        );
        assert!(matches!(facts[3], LockFact::Expired { .. }));
    }
}
