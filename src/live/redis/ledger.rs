//! The server's own account of one Redis lock: who was granted the lock
//! key, renewed it, deleted it, when it ran out, and which token each
//! client counted — built from the `MONITOR` feed, not from the shapes of
//! the commands clients send.
//!
//! Every executed command is attributed to the connection that caused it:
//! a client line to its address, a script's `[0 lua]` lines to the client
//! line just before them (a script runs atomically, right after its
//! `EVAL`/`EVALSHA`/`FCALL` line), the body of a `MULTI`/`EXEC` block to
//! its own client (Redis feeds the body when `EXEC` runs it, before the
//! `EXEC` line). Connections are mapped to workers by the harness (each
//! worker reaches Redis through its own proxy, whose upstream addresses
//! it registers). The replay ([`super::keyspace`]) says what each command
//! did. A change to the lock key by a connection no worker owns, a
//! command the replay does not model, or a feed line it cannot read is a
//! reason not to judge ([`Ledger::problems`]): the trial then ends as
//! "cannot judge", never with a verdict built on a guess.
//!
//! **Which key is the lock** when the scenario names none exactly
//! ([`KeyChoice`]): the first key a worker creates conditionally
//! ([`keyspace::created_conditionally`]) among those the choice matches;
//! the token counter, when not named, the first key a worker counts. Every
//! conditional creation is kept ([`Candidates`]): a lock passes from one
//! worker to another, and when another key did that and the chosen one did
//! not, or several did, the account says so rather than judge the wrong key.

use std::collections::BTreeMap;

use super::keyspace::{self, Held, LockEffect, TokenEffect};
use super::monitor::{Caller, MonitorLine};
use crate::live::common::keys::{Candidates, KeyChoice};

/// A grant's number: 1 for the first lock-key creation of the trial.
pub type GrantNo = u64;

/// One thing the server did to the lock, in feed order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fact {
    /// `worker` created the lock key (or overwrote another holder's value).
    Granted {
        grant: GrantNo,
        worker: usize,
        ts_us: u64,
        expire_at_ms: Option<u64>,
    },
    /// `worker` changed the live key's expiry keeping its value.
    Renewed {
        grant: GrantNo,
        worker: usize,
        ts_us: u64,
        expire_at_ms: Option<u64>,
        /// Ms the lease had left before the renewal (None: it had no expiry).
        slack_ms: Option<u64>,
    },
    /// `worker` deleted (or overwrote) the key holding `grant`.
    Deleted {
        grant: GrantNo,
        worker: usize,
        ts_us: u64,
    },
    /// The key holding `grant` ran out at `at_ms` (server clock).
    Expired { grant: GrantNo, at_ms: u64 },
    /// `worker` counted the token key up to `value` (an `INCR`'s reply).
    Token {
        worker: usize,
        value: i64,
        ts_us: u64,
    },
}

impl Fact {
    /// What happened, to whom and in what order, without when: two
    /// accounts of a feed that differ only in the instants of the same
    /// facts (a retried `SET NX` granted in the expiry's millisecond or on
    /// its next try 5 ms later) tell the same story.
    pub fn shape(&self) -> Fact {
        let mut f = self.clone();
        match &mut f {
            Fact::Granted {
                ts_us,
                expire_at_ms,
                ..
            } => (*ts_us, *expire_at_ms) = (0, None),
            Fact::Renewed {
                ts_us,
                expire_at_ms,
                slack_ms,
                ..
            } => (*ts_us, *expire_at_ms, *slack_ms) = (0, None, None),
            Fact::Deleted { ts_us, .. } | Fact::Token { ts_us, .. } => *ts_us = 0,
            Fact::Expired { at_ms, .. } => *at_ms = 0,
        }
        f
    }

    /// When it happened on Redis's clock, µs (an expiry at its instant).
    pub fn ts_us(&self) -> u64 {
        match self {
            Fact::Granted { ts_us, .. }
            | Fact::Renewed { ts_us, .. }
            | Fact::Deleted { ts_us, .. }
            | Fact::Token { ts_us, .. } => *ts_us,
            Fact::Expired { at_ms, .. } => at_ms * 1000,
        }
    }
}

/// The live lock key in the replay, with the grant it holds.
#[derive(Clone, Debug)]
struct Live {
    held: Held,
    grant: GrantNo,
}

/// The account of one trial on one Redis server.
#[derive(Debug)]
pub struct Ledger {
    /// The lock's key (empty: not found yet) and how it is named.
    lock_key: Vec<u8>,
    choice: KeyChoice,
    /// The token counter's key (empty: not found yet, or none).
    token_key: Vec<u8>,
    /// Keys workers created conditionally, and who.
    candidates: Candidates,
    db: u32,
    /// Redis client address → worker.
    clients: BTreeMap<String, usize>,
    /// The client of the last client line (a script's lines are its).
    last_client: Option<String>,
    /// Time reference of the command being run: a script's start, a
    /// `MULTI` body's first line (Redis checks expiry against it).
    script_ref_us: u64,
    /// Clients inside `MULTI`, with their body's time reference once it runs.
    in_multi: BTreeMap<String, Option<u64>>,
    lock: Option<Live>,
    token: Option<i64>,
    grants: GrantNo,
    facts: Vec<Fact>,
    problems: Vec<String>,
    /// Commands that ran in the same millisecond as the key's expiry.
    borderline: u64,
    /// The decisions at those commands that go against the millisecond
    /// rule (by their order): set when Redis's own notifications say the
    /// key's fate there was the other one ([`Ledger::flipping`]).
    flips: Vec<bool>,
    /// Grants per worker, for the proxies' "has it been granted yet".
    granted_to: BTreeMap<usize, Vec<GrantNo>>,
    /// The keyspace notifications the replay says Redis sent for the lock
    /// key (`set`, `expire`, `del`, `expired`, `persist`) and, as
    /// [`TOKEN_COUNTED`], each count of the token key, in order: what
    /// `notify-keyspace-events` must show if the replay is right.
    notified: Vec<&'static str>,
    /// Per client, what Redis answered each of its `SET NX` (taken or
    /// not), as its proxy saw the replies; empty while the trial runs.
    replies: BTreeMap<String, Vec<Option<bool>>>,
    /// Per client, how many of those the replay has met.
    replies_met: BTreeMap<String, usize>,
    /// `SET NX`s the replay decided otherwise than Redis answered.
    contradictions: u32,
}

/// A count of the token key (`INCR` and its kin) among the lock key's
/// notifications: where it falls against the lock's `expired` says whether
/// the token was drawn while the lease lived.
pub const TOKEN_COUNTED: &str = "token";

impl Ledger {
    pub fn new(lock_key: &[u8], token_key: &[u8], db: u32) -> Ledger {
        let choice = KeyChoice::Exact(String::from_utf8_lossy(lock_key).into_owned());
        Ledger::finding(choice, token_key, db)
    }

    /// A ledger whose lock key is `choice`'s: the key itself when exact,
    /// else the first a worker creates conditionally that matches; the
    /// token key `token_key`, or (empty) the first a worker counts.
    pub fn finding(choice: KeyChoice, token_key: &[u8], db: u32) -> Ledger {
        Ledger {
            lock_key: choice.exact().unwrap_or_default().as_bytes().to_vec(),
            choice,
            token_key: token_key.to_vec(),
            candidates: Candidates::default(),
            db,
            clients: BTreeMap::new(),
            last_client: None,
            script_ref_us: 0,
            in_multi: BTreeMap::new(),
            lock: None,
            token: None,
            grants: 0,
            facts: Vec::new(),
            problems: Vec::new(),
            borderline: 0,
            flips: Vec::new(),
            granted_to: BTreeMap::new(),
            notified: Vec::new(),
            replies: BTreeMap::new(),
            replies_met: BTreeMap::new(),
            contradictions: 0,
        }
    }

    /// The same replay, deciding the `k`-th borderline command's "is the
    /// key still alive?" against the millisecond rule where `flips[k]`.
    pub fn flipping(mut self, flips: Vec<bool>) -> Ledger {
        self.flips = flips;
        self
    }

    /// A replay held to Redis's replies: each client's `SET NX` answers
    /// (taken or not), in the order its proxy saw them.
    pub fn with_replies(mut self, replies: BTreeMap<String, Vec<Option<bool>>>) -> Ledger {
        self.replies = replies;
        self
    }

    /// `SET NX`s this replay decided otherwise than Redis answered: a
    /// reading of an expiry's millisecond that Redis's replies rule out.
    pub fn contradictions(&self) -> u32 {
        self.contradictions
    }

    /// The lock key's keyspace notifications as the replay predicts them.
    pub fn notified(&self) -> &[&'static str] {
        &self.notified
    }

    /// Registers a worker's connection by the address Redis sees for it.
    pub fn register(&mut self, addr: String, worker: usize) {
        self.clients.insert(addr, worker);
    }

    pub fn facts(&self) -> &[Fact] {
        &self.facts
    }

    /// Reasons this account cannot be trusted (empty: it can).
    pub fn problems(&self) -> &[String] {
        &self.problems
    }

    /// Commands that touched the key in the millisecond it expired: their
    /// outcome rests on sub-millisecond timing the feed does not carry.
    pub fn borderline(&self) -> u64 {
        self.borderline
    }

    /// The grants `worker` has been given so far, in order.
    pub fn grants_of(&self, worker: usize) -> &[GrantNo] {
        self.granted_to.get(&worker).map_or(&[], Vec::as_slice)
    }

    fn problem(&mut self, p: String) {
        if !self.problems.contains(&p) {
            self.problems.push(p);
        }
    }

    /// Feeds one executed command, in feed order.
    pub fn feed(&mut self, line: &MonitorLine) {
        let client = match &line.caller {
            Caller::Client(addr) => {
                self.last_client = Some(addr.clone());
                addr.clone()
            }
            Caller::Lua => match &self.last_client {
                Some(c) => c.clone(),
                None => {
                    self.problem("a script's command with no client line before it".into());
                    return;
                }
            },
        };
        let name = line.name();
        // The clock Redis checks expiry against for this command.
        let ref_us = match (&line.caller, name.as_str()) {
            (Caller::Lua, _) => self.script_ref_us,
            (_, "multi") => {
                self.in_multi.insert(client.clone(), None);
                return;
            }
            (_, "exec" | "discard") => {
                self.in_multi.remove(&client);
                return;
            }
            _ => match self.in_multi.get_mut(&client) {
                Some(body) => *body.get_or_insert(line.ts_us),
                None => line.ts_us,
            },
        };
        if matches!(line.caller, Caller::Client(_)) && keyspace::is_script(&name) {
            self.script_ref_us = line.ts_us;
        }
        if line.db != self.db && !matches!(name.as_str(), "flushall") {
            return;
        }
        let worker = self.clients.get(&client).copied();
        if let Some(w) = worker {
            self.find_keys(line, &client, w);
        }
        let names = |key: &[u8]| !key.is_empty() && keyspace::names_key(&line.args, key);
        let touches_lock = names(&self.lock_key) || matches!(name.as_str(), "flushall" | "flushdb");
        let touches_token =
            names(&self.token_key) || matches!(name.as_str(), "flushall" | "flushdb");
        if touches_lock {
            self.lock_command(line, worker, &client, ref_us);
        }
        if touches_token {
            match keyspace::apply_token(&line.args, self.token) {
                Ok(TokenEffect::None) => {}
                Ok(TokenEffect::Counted(v)) => {
                    self.token = Some(v);
                    self.notified.push(TOKEN_COUNTED);
                    match worker {
                        Some(worker) => self.facts.push(Fact::Token {
                            worker,
                            value: v,
                            ts_us: line.ts_us,
                        }),
                        None => self.problem(format!(
                            "the token key was counted by {client}, a connection of no worker"
                        )),
                    }
                }
                Ok(TokenEffect::Changed(v)) => self.token = v,
                Err(e) => self.problem(format!("cannot replay {}", e.0)),
            }
        }
    }

    /// Keeps a conditional creation by worker `w` as a candidate, and takes
    /// the lock and token keys when they are still to be found (module doc).
    fn find_keys(&mut self, line: &MonitorLine, client: &str, w: usize) {
        let scripted = line.caller == Caller::Lua || self.in_multi.contains_key(client);
        let created = keyspace::created_conditionally(&line.args, scripted);
        if let Some(key) = created.filter(|k| self.choice.matches(k)) {
            self.candidates.created(key, w);
            if self.lock_key.is_empty() {
                self.lock_key = key.to_vec();
            }
        }
        if let Some(key) = keyspace::counted(&line.args) {
            if self.token_key.is_empty() && key != self.lock_key.as_slice() {
                self.token_key = key.to_vec();
            }
        }
    }

    /// How the lock's key is named.
    pub fn choice(&self) -> &KeyChoice {
        &self.choice
    }

    /// The lock's key as named or found (None: not found).
    pub fn lock_key(&self) -> Option<&[u8]> {
        Some(self.lock_key.as_slice()).filter(|k| !k.is_empty())
    }

    /// The token counter's key as named or found (None: none).
    pub fn token_key(&self) -> Option<&[u8]> {
        Some(self.token_key.as_slice()).filter(|k| !k.is_empty())
    }

    /// Why the found lock key may not be the lock ([`Candidates::ambiguity`]);
    /// a key named exactly is the lock.
    pub fn key_ambiguity(&self) -> Option<String> {
        match (&self.choice, self.lock_key()) {
            (KeyChoice::Glob(_), Some(k)) => self.candidates.ambiguity(k),
            _ => None,
        }
    }

    fn lock_command(
        &mut self,
        line: &MonitorLine,
        worker: Option<usize>,
        client: &str,
        ref_us: u64,
    ) {
        self.expire_lazily(line, ref_us / 1000);
        // A SET's expiry counts from the time it ran, which the feed
        // stamps just after.
        let at_ms = line.ts_us / 1000;
        let effect =
            match keyspace::apply_lock(&line.args, self.lock.as_ref().map(|l| &l.held), at_ms) {
                Ok(e) => e,
                Err(e) => {
                    self.problem(format!("cannot replay {}", e.0));
                    return;
                }
            };
        self.hold_to_reply(line, client, &effect);
        if !self.notify(line, &effect) {
            return;
        }
        let Some(worker) = worker else {
            self.problem(format!(
                "the lock key was changed by {client} ({}), a connection of no worker",
                line.name().to_uppercase()
            ));
            return;
        };
        self.apply(effect, worker, line.ts_us, at_ms);
    }

    /// Lazy expiry: the key is gone for a command after its time (at
    /// `now_ms`). A script's own line looks nothing up (its commands do,
    /// each on its line), nor does WATCH: neither expires the key.
    fn expire_lazily(&mut self, line: &MonitorLine, now_ms: u64) {
        let name = line.name();
        let looks_up = !keyspace::is_script(&name) && name != "watch";
        let Some(live) = self.lock.as_ref().filter(|_| looks_up) else {
            return;
        };
        let mut alive = keyspace::alive(&live.held, now_ms);
        if let Some(when) = live.held.expire_at_ms {
            if now_ms == when || now_ms == when + 1 {
                if self.flips.get(self.borderline as usize) == Some(&true) {
                    alive = !alive;
                }
                self.borderline += 1;
            }
        }
        if !alive {
            let at_ms = live.held.expire_at_ms.unwrap_or(now_ms);
            self.facts.push(Fact::Expired {
                grant: live.grant,
                at_ms,
            });
            self.notified.push("expired");
            self.lock = None;
        }
    }

    /// A client's `SET NX` of the lock key, outside a transaction: the
    /// replay's effect held to what Redis answered it (a contradiction
    /// counted when they differ).
    fn hold_to_reply(&mut self, line: &MonitorLine, client: &str, effect: &LockEffect) {
        if !(matches!(line.caller, Caller::Client(_))
            && !self.in_multi.contains_key(client)
            && keyspace::takes_if_free(&line.args))
        {
            return;
        }
        let k = self.replies_met.entry(client.to_string()).or_default();
        let answered = self
            .replies
            .get(client)
            .and_then(|r| r.get(*k))
            .copied()
            .flatten();
        *k += 1;
        if answered.is_some_and(|took| took != matches!(effect, LockEffect::Set(_))) {
            self.contradictions += 1;
        }
    }

    /// The keyspace notifications the effect makes Redis send; false when
    /// it changed nothing.
    fn notify(&mut self, line: &MonitorLine, effect: &LockEffect) -> bool {
        match effect {
            LockEffect::None => return false,
            LockEffect::Set(h) => {
                self.notified.push("set");
                if h.expire_at_ms.is_some() && !keeps_ttl(&line.args) {
                    self.notified.push("expire");
                }
            }
            LockEffect::Expiry(Some(_)) => self.notified.push("expire"),
            LockEffect::Expiry(None) => self.notified.push("persist"),
            LockEffect::Deleted => self.notified.push("del"),
        }
        true
    }

    /// Worker `worker`'s command's effect on the lock at `ts_us` (server
    /// clock; `at_ms` its millisecond): a grant (or a renewal by the
    /// holder, or an overwrite of another's key), a new expiry, a deletion.
    fn apply(&mut self, effect: LockEffect, worker: usize, ts_us: u64, at_ms: u64) {
        match effect {
            LockEffect::None => {}
            LockEffect::Set(held) => self.set(held, worker, ts_us, at_ms),
            LockEffect::Expiry(expire_at_ms) => {
                if let Some(live) = &mut self.lock {
                    let slack_ms = live.held.expire_at_ms.map(|w| w.saturating_sub(at_ms));
                    live.held.expire_at_ms = expire_at_ms;
                    self.facts.push(Fact::Renewed {
                        grant: live.grant,
                        worker,
                        ts_us,
                        expire_at_ms,
                        slack_ms,
                    });
                }
            }
            LockEffect::Deleted => {
                if let Some(live) = self.lock.take() {
                    self.facts.push(Fact::Deleted {
                        grant: live.grant,
                        worker,
                        ts_us,
                    });
                }
            }
        }
    }

    /// A `SET` of the lock key by `worker`: with the holder's own value a
    /// renewal, else a new grant (after the overwritten holder's deletion).
    fn set(&mut self, held: Held, worker: usize, ts_us: u64, at_ms: u64) {
        if let Some(live) = &mut self.lock {
            if live.held.value == held.value {
                // Same value: the holder renewed (SET … XX, or SET again).
                let slack_ms = live.held.expire_at_ms.map(|w| w.saturating_sub(at_ms));
                live.held = held.clone();
                self.facts.push(Fact::Renewed {
                    grant: live.grant,
                    worker,
                    ts_us,
                    expire_at_ms: held.expire_at_ms,
                    slack_ms,
                });
                return;
            }
            // Overwritten: the old holder's key is gone.
            self.facts.push(Fact::Deleted {
                grant: live.grant,
                worker,
                ts_us,
            });
        }
        self.grants += 1;
        let grant = self.grants;
        self.granted_to.entry(worker).or_default().push(grant);
        self.facts.push(Fact::Granted {
            grant,
            worker,
            ts_us,
            expire_at_ms: held.expire_at_ms,
        });
        self.lock = Some(Live { held, grant });
    }

    /// Ends the account at `end_us` (server clock): a key whose expiry
    /// came before then ran out.
    pub fn finish(&mut self, end_us: u64) {
        if let Some(live) = &self.lock {
            if let Some(when) = live.held.expire_at_ms {
                if when < end_us / 1000 {
                    self.facts.push(Fact::Expired {
                        grant: live.grant,
                        at_ms: when,
                    });
                    self.notified.push("expired");
                    self.lock = None;
                }
            }
        }
    }
}

/// `SET … KEEPTTL` keeps the expiry without notifying `expire`.
fn keeps_ttl(args: &[Vec<u8>]) -> bool {
    args.iter().any(|a| a.eq_ignore_ascii_case(b"keepttl"))
}

#[cfg(test)]
mod tests {
    use super::super::monitor::parse;
    use super::*;

    fn ledger(feed: &str) -> Ledger {
        let mut l = Ledger::new(b"lock:doc", b"fence:doc", 0);
        l.register("127.0.0.1:1001".into(), 0);
        l.register("127.0.0.1:1002".into(), 1);
        for line in feed.lines().map(str::trim).filter(|s| !s.is_empty()) {
            l.feed(&parse(line).unwrap());
        }
        l
    }

    fn finding(choice: &str, feed: &str) -> Ledger {
        let choice = KeyChoice::parse(choice).unwrap();
        let mut l = Ledger::finding(choice, b"", 0);
        l.register("127.0.0.1:1001".into(), 0);
        l.register("127.0.0.1:1002".into(), 1);
        for line in feed.lines().map(str::trim).filter(|s| !s.is_empty()) {
            l.feed(&parse(line).unwrap());
        }
        l
    }

    #[test]
    fn the_lock_is_found_as_the_first_key_a_worker_creates_conditionally() {
        // A's plain SET of a cache key and a GET are not the lock; A's SET NX
        // of its own key is, and B's script sets it too; the counter A draws
        // from is the token key.
        let feed = r#"
            1000.000000 [0 127.0.0.1:1001] "SET" "cache:x" "1"
            1000.000100 [0 127.0.0.1:1001] "GET" "lock:invoice:42"
            1000.000200 [0 127.0.0.1:1001] "SET" "lock:invoice:42" "a" "NX" "PX" "100"
            1000.000300 [0 127.0.0.1:1001] "INCR" "fence:invoice:42"
            1000.200000 [0 127.0.0.1:1002] "EVALSHA" "abc" "1" "lock:invoice:42" "b" "100"
            1000.200040 [0 lua] "exists" "lock:invoice:42"
            1000.200050 [0 lua] "set" "lock:invoice:42" "b" "PX" "100"
            1000.200060 [0 127.0.0.1:1002] "INCR" "fence:invoice:42"
        "#;
        let l = finding("*", feed);
        assert_eq!(l.lock_key(), Some(&b"lock:invoice:42"[..]));
        assert_eq!(l.token_key(), Some(&b"fence:invoice:42"[..]));
        assert_eq!(l.key_ambiguity(), None);
        let granted: Vec<usize> = (l.facts().iter())
            .filter_map(|f| match f {
                Fact::Granted { worker, .. } => Some(*worker),
                _ => None,
            })
            .collect();
        assert_eq!(granted, vec![0, 1]);
        // Named by a prefix that does not match: nothing is the lock.
        let none = finding("lock:order:*", feed);
        assert_eq!(none.lock_key(), None);
        assert!(none.facts().iter().all(|f| matches!(f, Fact::Token { .. })));
    }

    #[test]
    fn two_keys_passing_between_workers_make_the_lock_unclear_and_are_named() {
        let l = finding(
            "*",
            r#"
            1000.000000 [0 127.0.0.1:1001] "SET" "a:doc" "a" "NX" "PX" "10"
            1000.001000 [0 127.0.0.1:1002] "SET" "a:doc" "b" "NX" "PX" "10"
            1000.002000 [0 127.0.0.1:1001] "SET" "b:doc" "a" "NX" "PX" "100"
            1000.003000 [0 127.0.0.1:1002] "SET" "b:doc" "b" "NX" "PX" "100"
            "#,
        );
        assert_eq!(l.lock_key(), Some(&b"a:doc"[..]));
        let why = l.key_ambiguity().unwrap();
        assert!(
            why.contains("a:doc (by worker 0, worker 1); b:doc (by worker 0, worker 1)"),
            "{why}"
        );
        // Named exactly, it is the lock.
        let mut named = Ledger::new(b"b:doc", b"", 0);
        named.register("127.0.0.1:1001".into(), 0);
        assert_eq!(named.key_ambiguity(), None);
    }

    #[test]
    fn a_script_that_takes_lock_and_token_together_is_a_grant_with_its_token() {
        let l = ledger(
            r#"
            1000.000000 [0 127.0.0.1:1001] "EVALSHA" "abc" "2" "lock:doc" "fence:doc" "a" "100"
            1000.000040 [0 lua] "set" "lock:doc" "a" "NX" "PX" "100"
            1000.000050 [0 lua] "incr" "fence:doc"
            1000.010000 [0 127.0.0.1:1002] "EVALSHA" "abc" "2" "lock:doc" "fence:doc" "b" "100"
            1000.010040 [0 lua] "set" "lock:doc" "b" "NX" "PX" "100"
            "#,
        );
        assert_eq!(
            l.facts(),
            &[
                Fact::Granted {
                    grant: 1,
                    worker: 0,
                    ts_us: 1_000_000_040,
                    expire_at_ms: Some(1_000_100)
                },
                Fact::Token {
                    worker: 0,
                    value: 1,
                    ts_us: 1_000_000_050
                },
            ]
        );
        assert!(l.problems().is_empty());
        assert_eq!(l.grants_of(0), &[1]);
        assert!(l.grants_of(1).is_empty());
    }

    #[test]
    fn a_transaction_body_is_its_clients_and_a_failed_set_grants_nothing() {
        let l = ledger(
            r#"
            1000.000000 [0 127.0.0.1:1001] "SET" "lock:doc" "a" "NX" "PX" "50"
            1000.001000 [0 127.0.0.1:1002] "MULTI"
            1000.002000 [0 127.0.0.1:1002] "SET" "lock:doc" "b" "NX" "PX" "50"
            1000.002010 [0 127.0.0.1:1002] "INCR" "fence:doc"
            1000.002020 [0 127.0.0.1:1002] "EXEC"
            1000.100000 [0 127.0.0.1:1002] "MULTI"
            1000.100500 [0 127.0.0.1:1002] "SET" "lock:doc" "b" "NX" "PX" "50"
            1000.100510 [0 127.0.0.1:1002] "EXEC"
            "#,
        );
        assert_eq!(
            l.facts(),
            &[
                Fact::Granted {
                    grant: 1,
                    worker: 0,
                    ts_us: 1_000_000_000,
                    expire_at_ms: Some(1_000_050)
                },
                Fact::Token {
                    worker: 1,
                    value: 1,
                    ts_us: 1_000_002_010
                },
                Fact::Expired {
                    grant: 1,
                    at_ms: 1_000_050
                },
                Fact::Granted {
                    grant: 2,
                    worker: 1,
                    ts_us: 1_000_100_500,
                    expire_at_ms: Some(1_000_150)
                },
            ]
        );
    }

    #[test]
    fn a_compare_and_delete_deletes_only_when_its_del_ran_and_a_read_only_script_is_nothing() {
        let l = ledger(
            r#"
            1000.000000 [0 127.0.0.1:1001] "SET" "lock:doc" "a" "NX" "PX" "1000"
            1000.001000 [0 127.0.0.1:1002] "EVAL" "return redis.call('pttl',KEYS[1])" "1" "lock:doc"
            1000.001010 [0 lua] "pttl" "lock:doc"
            1000.002000 [0 127.0.0.1:1002] "EVALSHA" "cad" "1" "lock:doc" "b"
            1000.002010 [0 lua] "get" "lock:doc"
            1000.003000 [0 127.0.0.1:1001] "EVALSHA" "cad" "1" "lock:doc" "a"
            1000.003010 [0 lua] "get" "lock:doc"
            1000.003020 [0 lua] "del" "lock:doc"
            "#,
        );
        assert_eq!(
            l.facts()[1..],
            [Fact::Deleted {
                grant: 1,
                worker: 0,
                ts_us: 1_000_003_020
            }]
        );
    }

    #[test]
    fn renewal_extends_the_lease_and_a_plain_del_of_anothers_lock_is_that_lock_deleted() {
        let mut l = ledger(
            r#"
            1000.000000 [0 127.0.0.1:1001] "SET" "lock:doc" "a" "NX" "PX" "100"
            1000.080000 [0 127.0.0.1:1001] "PEXPIRE" "lock:doc" "100"
            1000.150000 [0 127.0.0.1:1002] "SET" "lock:doc" "b" "NX" "PX" "100"
            1000.300000 [0 127.0.0.1:1002] "SET" "lock:doc" "b" "NX" "PX" "100"
            1000.310000 [0 127.0.0.1:1001] "DEL" "lock:doc"
            "#,
        );
        l.finish(1_000_900_000);
        assert_eq!(
            l.facts()[1..],
            [
                Fact::Renewed {
                    grant: 1,
                    worker: 0,
                    ts_us: 1_000_080_000,
                    expire_at_ms: Some(1_000_180),
                    slack_ms: Some(20)
                },
                Fact::Expired {
                    grant: 1,
                    at_ms: 1_000_180
                },
                Fact::Granted {
                    grant: 2,
                    worker: 1,
                    ts_us: 1_000_300_000,
                    expire_at_ms: Some(1_000_400)
                },
                Fact::Deleted {
                    grant: 2,
                    worker: 0,
                    ts_us: 1_000_310_000
                },
            ]
        );
    }

    #[test]
    fn changes_by_unknown_connections_and_unmodelled_commands_are_problems() {
        let l = ledger(
            r#"
            1000.000000 [0 127.0.0.1:9999] "SET" "lock:doc" "x" "NX" "PX" "100"
            1000.001000 [0 127.0.0.1:1001] "APPEND" "lock:doc" "y"
            1000.002000 [0 127.0.0.1:1001] "GET" "lock:doc"
            "#,
        );
        assert_eq!(l.problems().len(), 2, "{:?}", l.problems());
        assert!(l.facts().is_empty());
    }

    #[test]
    fn a_flipped_borderline_decision_takes_the_other_fate() {
        let feed = r#"
            1000.000000 [0 127.0.0.1:1001] "SET" "lock:doc" "a" "NX" "PX" "100"
            1000.100400 [0 127.0.0.1:1002] "SET" "lock:doc" "b" "NX" "PX" "100"
            "#;
        let mut l = Ledger::new(b"lock:doc", b"fence:doc", 0).flipping(vec![true]);
        l.register("127.0.0.1:1001".into(), 0);
        l.register("127.0.0.1:1002".into(), 1);
        for line in feed.lines().map(str::trim).filter(|s| !s.is_empty()) {
            l.feed(&parse(line).unwrap());
        }
        assert_eq!(l.notified(), ["set", "expire", "expired", "set", "expire"]);
        assert_eq!(l.grants_of(1), &[2]);
    }

    #[test]
    fn an_access_in_the_expiry_millisecond_is_borderline() {
        let l = ledger(
            r#"
            1000.000000 [0 127.0.0.1:1001] "SET" "lock:doc" "a" "NX" "PX" "100"
            1000.100400 [0 127.0.0.1:1002] "SET" "lock:doc" "b" "NX" "PX" "100"
            "#,
        );
        assert_eq!(l.borderline(), 1);
        assert_eq!(l.facts().len(), 1, "now == when: still alive");
    }
}
