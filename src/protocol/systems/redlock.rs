//! Redlock: one lock over N independent Redis masters, decided by the
//! client. Sources: redis.io "Distributed Locks with Redis" (the Redlock
//! algorithm and its reference implementation, redlock-rb / redlock-py);
//! Martin Kleppmann, "How to do distributed locking" (2016), whose critique
//! names the two failures modelled here — a master's clock jumping forward,
//! and a master restarting without having fsync'ed the key; Salvatore
//! Sanfilippo (antirez), "Is Redlock safe?" (2016), whose answer to the
//! second is the delayed restart.
//!
//! The algorithm, as the client runs it ([`RedlockClient`]):
//!
//! 1. Take the current time on the client's monotonic clock.
//! 2. `SET key <random value> NX PX <ttl>` on every master, with a request
//!    timeout small against the TTL; a master that does not answer in time
//!    counts as a refusal (no retransmission inside an attempt).
//! 3. The lock is held iff a majority (`N/2 + 1`) said OK and the validity
//!    `ttl − elapsed − drift` is still positive, with
//!    `drift = ttl × 0.01 + 2 ms` as in the reference implementation.
//! 4. Otherwise unlock on *every* master (even those that seemed to refuse —
//!    their OK may just be late) and retry after a back-off.
//! 5. Release is the compare-and-delete script on every master.
//!
//! The client honours the validity: when it runs out before the work is
//! done it reports the lock lost and the worker gives the operation up —
//! the most careful use the algorithm allows. The value is the worker's
//! acquisition nonce (Redis's "random value"); it identifies, it does not
//! order. Redlock returns no fencing token, so the resource trusts the lock.
//!
//! The master ([`RedisMaster`]) judges expiry on its own *wall* clock, as
//! Redis does (a key's expiry is an absolute Unix time, checked lazily when
//! the key is touched), so a forward step of a master's clock (NTP, an
//! operator) expires a key early — Kleppmann's first failure. Persistence is
//! `fsync = "always"` (every write synced before the reply, Redis
//! `appendfsync always`) or `"never"` (the default: writes reach the page
//! cache only, the worst case of Redis' default `appendfsync everysec`, which
//! loses up to a second of writes); a master restarted without the key lets
//! a second client take a majority — Kleppmann's second failure.
//! `restart_delay_ms` is antirez's fix: a restarted master answers nothing
//! for that long (it must be at least the TTL), so every key it forgot has
//! expired everywhere else by the time it serves again. To tell a restart
//! from a first boot without fsync'ed keys, a master writes a synced empty
//! record at first boot (its data directory exists).
//!
//! Requests carry `round << 4 | master index` as request id: replies come
//! from N masters at once and the client hears no sender, so the id says
//! which master answered (hence at most [`MASTERS_MAX`] masters) and the
//! round drops late answers to an earlier attempt.

use std::collections::BTreeMap;

use crate::protocol::catalogue::ProtocolConfig;
use crate::protocol::msg::{first_req, Key, Msg, ReqId};
use crate::protocol::node::{Clocks, Durability, Effect, Input, Nanos, Node, NodeId, TimerId};
use crate::protocol::systems::base::{
    ClientBase, LockEvent, LockSystem, CLIENT_REQUEST, CLIENT_TIMER_A,
};
use crate::protocol::systems::SystemWire;

crate::protocol::msg::system_msgs! {
    /// Redlock: client <-> each independent Redis master (`Msg::Redis`).
    /// Tags from 60, so the golden trace hashes of older tags did not move.
    pub enum RedisMsg {
        /// `SET key <owner> NX PX <ttl>`.
        SetNx = (60, "redis_set_nx", Acquire) { req: ReqId => "req", key: Key => "", owner: u64 => "owner", ttl_ns: u64 => "ttl_ns" } => FannedAcquire(owner),
        /// `OK` (`ok`) or nil: the key exists and has not expired on the master's clock.
        SetNxResult = (61, "redis_set_nx_result", Acquire) { req: ReqId => "req", key: Key => "", ok: bool => "ok" },
        /// The compare-and-delete script: `DEL key` only if its value is `owner`.
        Cad = (62, "redis_cad", Release) { req: ReqId => "req", key: Key => "", owner: u64 => "owner" } => FannedRelease(owner),
        CadResult = (63, "redis_cad_result", Release) { req: ReqId => "req", key: Key => "", deleted: bool => "deleted" },
    }
}

/// Redlock in the registry (`Msg::Redis`): N masters, the Redlock client.
pub struct Redlock;

impl SystemWire for Redlock {
    type Msg = RedisMsg;
}

impl LockSystem for Redlock {
    type ServerConfig = RedisMasterConfig;
    type Server = RedisMaster;
    type ClientConfig = RedlockClientConfig;
    type Client = RedlockClient;

    fn server_config(p: &ProtocolConfig, _first: NodeId, _index: u8) -> RedisMasterConfig {
        RedisMasterConfig {
            fsync_always: p.fsync_always,
            restart_delay_ns: p.restart_delay_ns,
        }
    }

    fn server(cfg: RedisMasterConfig) -> RedisMaster {
        RedisMaster::new(cfg)
    }

    fn client_config(p: &ProtocolConfig, first: NodeId) -> RedlockClientConfig {
        RedlockClientConfig {
            first_master: first,
            masters: p.replicas,
            ttl_ns: p.lease_ttl_ns,
        }
    }

    fn client(cfg: RedlockClientConfig, base: ClientBase) -> RedlockClient {
        RedlockClient::new(cfg, base)
    }
}

/// Masters per lock: the master index travels in 4 bits of the request id.
pub const MASTERS_MAX: u8 = 15;

/// The reference implementation's clock-drift allowance: 1 % of the TTL…
pub const CLOCK_DRIFT_FACTOR_PERCENT: u64 = 1;
/// …plus 2 ms "for Redis expires precision".
pub const DRIFT_CONSTANT_NS: Nanos = 2_000_000;

/// How many OK answers hold the lock: a strict majority of `masters`.
pub fn quorum(masters: u8) -> u8 {
    masters / 2 + 1
}

/// The drift a client subtracts from a lock's validity.
pub fn drift_ns(ttl_ns: Nanos) -> Nanos {
    ttl_ns * CLOCK_DRIFT_FACTOR_PERCENT / 100 + DRIFT_CONSTANT_NS
}

/// When the validity runs out, counted from the acquisition's start (its
/// first `SET`): `ttl − drift`, whatever the acquisition took. The
/// scenario emitter places the client's validity timer with it: its 2 ms
/// do not scale with the TTL, so the timer is not the search's × K.
pub fn validity_from_start_ns(ttl_ns: Nanos) -> Nanos {
    ttl_ns.saturating_sub(drift_ns(ttl_ns))
}

/// The validity left after an acquisition that took `elapsed_ns`, or
/// `None` when nothing is left (`ttl − elapsed − drift ≤ 0`).
pub fn validity_ns(ttl_ns: Nanos, elapsed_ns: Nanos) -> Option<Nanos> {
    ttl_ns
        .checked_sub(elapsed_ns.saturating_add(drift_ns(ttl_ns)))
        .filter(|&v| v > 0)
}

/// The client's decision: `Some(validity)` iff a majority said OK and
/// validity remains.
pub fn decide(masters: u8, oks: u8, ttl_ns: Nanos, elapsed_ns: Nanos) -> Option<Nanos> {
    debug_assert!(oks <= masters);
    if oks < quorum(masters) {
        return None;
    }
    validity_ns(ttl_ns, elapsed_ns)
}

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct RedlockClientConfig {
    /// `coord/0`; master `i` is at `first_master + i`.
    pub first_master: NodeId,
    pub masters: u8,
    /// The `PX` of every `SET`.
    pub ttl_ns: Nanos,
}

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
enum Phase {
    Idle,
    Acquiring,
    Holding,
    Releasing,
}

/// The validity runs out (the client's monotonic clock).
pub const VALIDITY: TimerId = CLIENT_TIMER_A;

#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct RedlockClient {
    cfg: RedlockClientConfig,
    base: ClientBase,
    phase: Phase,
    owner: u64,
    /// Attempts and releases so far; the high bits of every request id.
    round: u32,
    start_mono_ns: Nanos,
    /// Bit i: master i answered / said OK in this round.
    answered: u16,
    oks: u16,
}

impl RedlockClient {
    pub fn new(cfg: RedlockClientConfig, base: ClientBase) -> Self {
        assert!(
            (1..=MASTERS_MAX).contains(&cfg.masters),
            "redlock takes 1..={MASTERS_MAX} masters"
        );
        RedlockClient {
            cfg,
            base,
            phase: Phase::Idle,
            owner: 0,
            // A restarted client's rounds start above its predecessor's.
            round: first_req(base.incarnation) >> 4,
            start_mono_ns: 0,
            answered: 0,
            oks: 0,
        }
    }

    /// While the client holds the lock: its acquisition's owner nonce and
    /// where its validity runs out on its monotonic clock (`ttl − drift`
    /// after the first `SET`, [`validity_from_start_ns`]) — Redlock's own
    /// "the lock is held": the refinement check's lease.
    pub fn holding(&self) -> Option<(u64, Nanos)> {
        (self.phase == Phase::Holding).then(|| {
            let until = validity_from_start_ns(self.cfg.ttl_ns);
            (self.owner, self.start_mono_ns.saturating_add(until))
        })
    }

    fn all(&self) -> u16 {
        (1u16 << self.cfg.masters) - 1
    }

    fn req(&self, master: u8) -> ReqId {
        (self.round << 4) | master as ReqId
    }

    /// Which master answers `req` in the current round, if it does.
    fn master_of(&self, req: ReqId) -> Option<u8> {
        let master = (req & 0xf) as u8;
        (req >> 4 == self.round && master < self.cfg.masters).then_some(master)
    }

    fn next_round(&mut self) {
        self.round = self.round.wrapping_add(1) & (ReqId::MAX >> 4);
        self.answered = 0;
        self.oks = 0;
    }

    fn to_all(&self, msg: impl Fn(ReqId) -> Msg, fx: &mut Vec<Effect>) {
        for i in 0..self.cfg.masters {
            fx.push(Effect::Send {
                to: NodeId(self.cfg.first_master.0 + i as u16),
                msg: msg(self.req(i)),
            });
        }
    }

    fn unlock_all(&mut self, fx: &mut Vec<Effect>) {
        self.next_round();
        let (key, owner) = (self.base.key, self.owner);
        self.to_all(|req| Msg::Redis(RedisMsg::Cad { req, key, owner }), fx);
    }

    pub fn acquire(&mut self, clocks: Clocks, owner: u64, fx: &mut Vec<Effect>) {
        self.owner = owner;
        self.phase = Phase::Acquiring;
        self.start_mono_ns = clocks.mono_ns;
        self.next_round();
        let (key, ttl_ns) = (self.base.key, self.cfg.ttl_ns);
        self.to_all(
            |req| {
                Msg::Redis(RedisMsg::SetNx {
                    req,
                    key,
                    owner,
                    ttl_ns,
                })
            },
            fx,
        );
        fx.push(Effect::SetTimer {
            timer: CLIENT_REQUEST,
            after_ns: self.base.request_timeout_ns,
        });
    }

    pub fn release(&mut self, _clocks: Clocks, fx: &mut Vec<Effect>) {
        fx.push(Effect::CancelTimer { timer: VALIDITY });
        self.phase = Phase::Releasing;
        self.unlock_all(fx);
        fx.push(Effect::SetTimer {
            timer: CLIENT_REQUEST,
            after_ns: self.base.request_timeout_ns,
        });
    }

    /// Every master answered, or the request timeout fired: count.
    fn conclude(&mut self, clocks: Clocks, fx: &mut Vec<Effect>) -> LockEvent {
        fx.push(Effect::CancelTimer {
            timer: CLIENT_REQUEST,
        });
        let elapsed_ns = clocks.mono_ns.saturating_sub(self.start_mono_ns);
        let oks = self.oks.count_ones() as u8;
        match decide(self.cfg.masters, oks, self.cfg.ttl_ns, elapsed_ns) {
            Some(valid_ns) => {
                self.phase = Phase::Holding;
                fx.push(Effect::SetTimer {
                    timer: VALIDITY,
                    after_ns: valid_ns,
                });
                LockEvent::Acquired {
                    token: None,
                    valid_ns,
                }
            }
            None => {
                self.phase = Phase::Idle;
                self.unlock_all(fx);
                LockEvent::Busy
            }
        }
    }

    fn released(&mut self, fx: &mut Vec<Effect>) -> LockEvent {
        fx.push(Effect::CancelTimer {
            timer: CLIENT_REQUEST,
        });
        self.phase = Phase::Idle;
        LockEvent::Released
    }

    pub fn on_message(&mut self, clocks: Clocks, msg: Msg, fx: &mut Vec<Effect>) -> LockEvent {
        let (req, ok) = match msg {
            Msg::Redis(RedisMsg::SetNxResult { req, ok, .. }) if self.phase == Phase::Acquiring => {
                (req, ok)
            }
            Msg::Redis(RedisMsg::CadResult { req, .. }) if self.phase == Phase::Releasing => {
                (req, false)
            }
            _ => return LockEvent::Pending,
        };
        let Some(master) = self.master_of(req) else {
            return LockEvent::Pending;
        };
        let bit = 1u16 << master;
        if self.answered & bit != 0 {
            return LockEvent::Pending; // a duplicated reply
        }
        self.answered |= bit;
        if ok {
            self.oks |= bit;
        }
        if self.answered != self.all() {
            return LockEvent::Pending;
        }
        match self.phase {
            Phase::Acquiring => self.conclude(clocks, fx),
            _ => self.released(fx),
        }
    }

    pub fn on_timer(&mut self, clocks: Clocks, timer: TimerId, fx: &mut Vec<Effect>) -> LockEvent {
        match (timer, self.phase) {
            // Masters that did not answer in time count as refusals.
            (CLIENT_REQUEST, Phase::Acquiring) => self.conclude(clocks, fx),
            // Unanswered unlocks: the keys expire on their own.
            (CLIENT_REQUEST, Phase::Releasing) => self.released(fx),
            (VALIDITY, Phase::Holding) => {
                self.phase = Phase::Idle;
                LockEvent::Lost
            }
            _ => LockEvent::Pending,
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct RedisMasterConfig {
    /// `appendfsync always`: every write is synced before the reply.
    pub fsync_always: bool,
    /// After a restart, answer nothing for this long (antirez's fix).
    pub restart_delay_ns: Nanos,
}

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
struct Entry {
    owner: u64,
    /// Absolute expiry on this master's wall clock (`PEXPIREAT`).
    expires_wall_ns: i64,
}

/// Record: a marker byte, then (key u16, owner u64, expiry i64) per key.
const RECORD_MARKER: u8 = 0xd1;
const ENTRY_BYTES: usize = 2 + 8 + 8;

/// One independent Redis master: `SET NX PX` and the compare-and-delete
/// script, expiry on its own wall clock, optional fsync and delayed restart.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct RedisMaster {
    cfg: RedisMasterConfig,
    keys: BTreeMap<Key, Entry>,
    /// Silent until this monotonic reading (a delayed restart).
    silent_until_mono_ns: Nanos,
}

impl RedisMaster {
    pub fn new(cfg: RedisMasterConfig) -> Self {
        RedisMaster {
            cfg,
            keys: BTreeMap::new(),
            silent_until_mono_ns: 0,
        }
    }

    fn record(&self) -> Vec<u8> {
        let mut r = Vec::with_capacity(1 + self.keys.len() * ENTRY_BYTES);
        r.push(RECORD_MARKER);
        for (key, e) in &self.keys {
            r.extend_from_slice(&key.0.to_le_bytes());
            r.extend_from_slice(&e.owner.to_le_bytes());
            r.extend_from_slice(&e.expires_wall_ns.to_le_bytes());
        }
        r
    }

    fn recover(&mut self, record: &[u8]) {
        assert!(
            record.first() == Some(&RECORD_MARKER) && (record.len() - 1) % ENTRY_BYTES == 0,
            "a Redis master record is a marker and whole entries"
        );
        for e in record[1..].chunks_exact(ENTRY_BYTES) {
            let word = |at: usize| {
                let mut b = [0u8; 8];
                b.copy_from_slice(&e[at..at + 8]);
                b
            };
            self.keys.insert(
                Key(u16::from_le_bytes([e[0], e[1]])),
                Entry {
                    owner: u64::from_le_bytes(word(2)),
                    expires_wall_ns: i64::from_le_bytes(word(10)),
                },
            );
        }
    }

    fn persist(&self, fx: &mut Vec<Effect>) {
        let durability = if self.cfg.fsync_always {
            Durability::Synced
        } else {
            Durability::Buffered
        };
        fx.push(Effect::Persist {
            durability,
            record: self.record().into(),
        });
    }

    /// The key's holder, if its expiry has not passed on our wall clock.
    pub fn live(&self, key: Key, wall_ns: i64) -> Option<u64> {
        self.keys
            .get(&key)
            .filter(|e| e.expires_wall_ns > wall_ns)
            .map(|e| e.owner)
    }

    fn on_request(&mut self, clocks: Clocks, msg: Msg, fx: &mut Vec<Effect>) -> Option<Msg> {
        Some(match msg {
            Msg::Redis(RedisMsg::SetNx {
                req,
                key,
                owner,
                ttl_ns,
            }) => {
                let ok = self.live(key, clocks.wall_ns).is_none();
                if ok {
                    let expires_wall_ns = clocks.wall_ns.saturating_add(ttl_ns as i64);
                    self.keys.insert(
                        key,
                        Entry {
                            owner,
                            expires_wall_ns,
                        },
                    );
                    self.persist(fx);
                }
                Msg::Redis(RedisMsg::SetNxResult { req, key, ok })
            }
            Msg::Redis(RedisMsg::Cad { req, key, owner }) => {
                let deleted = self.live(key, clocks.wall_ns) == Some(owner);
                if deleted {
                    self.keys.remove(&key);
                    self.persist(fx);
                }
                Msg::Redis(RedisMsg::CadResult { req, key, deleted })
            }
            _ => return None,
        })
    }
}

impl Node for RedisMaster {
    fn handle(&mut self, clocks: Clocks, input: Input<'_>, fx: &mut Vec<Effect>) {
        match input {
            Input::Start { recovered: None } => {
                // First boot: the data directory now exists, so a later
                // boot knows it is a restart even if no key was synced.
                fx.push(Effect::Persist {
                    durability: Durability::Synced,
                    record: self.record().into(),
                });
            }
            Input::Start {
                recovered: Some(record),
            } => {
                self.recover(record);
                self.silent_until_mono_ns =
                    clocks.mono_ns.saturating_add(self.cfg.restart_delay_ns);
            }
            Input::Message { from, msg } => {
                if clocks.mono_ns < self.silent_until_mono_ns {
                    return;
                }
                if let Some(reply) = self.on_request(clocks, msg, fx) {
                    fx.push(Effect::Send {
                        to: from,
                        msg: reply,
                    });
                }
            }
            Input::Timer { .. } => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::testkit::{self, sent};

    const MS: Nanos = 1_000_000;

    #[test]
    fn a_majority_is_more_than_half_of_the_masters() {
        assert_eq!(quorum(1), 1);
        assert_eq!(quorum(2), 2);
        assert_eq!(quorum(3), 2);
        assert_eq!(quorum(4), 3);
        assert_eq!(quorum(5), 3);
        assert_eq!(decide(5, 2, 10_000 * MS, 0), None, "two of five is no lock");
        assert!(decide(5, 3, 10_000 * MS, 0).is_some());
    }

    #[test]
    fn validity_is_the_ttl_minus_elapsed_minus_one_percent_and_two_milliseconds() {
        assert_eq!(drift_ns(10_000 * MS), 102 * MS);
        assert_eq!(validity_ns(10_000 * MS, 50 * MS), Some(9_848 * MS));
        assert_eq!(decide(5, 5, 10_000 * MS, 50 * MS), Some(9_848 * MS));
    }

    #[test]
    fn an_acquisition_that_took_the_whole_ttl_leaves_no_validity() {
        assert_eq!(
            validity_ns(10_000 * MS, 9_898 * MS),
            None,
            "exactly zero left"
        );
        assert_eq!(validity_ns(10_000 * MS, 9_897 * MS), Some(MS));
        assert_eq!(validity_ns(10_000 * MS, 20_000 * MS), None);
        assert_eq!(
            decide(5, 5, MS, 0),
            None,
            "a TTL below the drift never holds"
        );
    }

    fn base() -> ClientBase {
        ClientBase {
            key: Key(0),
            request_timeout_ns: 50 * MS,
            max_retries: 0,
            incarnation: 0,
        }
    }

    fn client() -> RedlockClient {
        RedlockClient::new(
            RedlockClientConfig {
                first_master: NodeId(10),
                masters: 5,
                ttl_ns: 10_000 * MS,
            },
            base(),
        )
    }

    fn at(ms: u64) -> Clocks {
        testkit::at(ms * MS)
    }

    fn answer(c: &mut RedlockClient, req: ReqId, ok: bool, now: Clocks) -> LockEvent {
        let mut fx = Vec::new();
        c.on_message(
            now,
            Msg::Redis(RedisMsg::SetNxResult {
                req,
                key: Key(0),
                ok,
            }),
            &mut fx,
        )
    }

    #[test]
    fn three_oks_of_five_hold_the_lock_with_validity_measured_from_the_first_send() {
        let mut c = client();
        let mut fx = Vec::new();
        c.acquire(at(100), 7, &mut fx);
        let reqs: Vec<ReqId> = sent(&fx)
            .iter()
            .map(|(to, m)| {
                assert!((10..15).contains(&to.0), "one SET per master");
                m.words()[0] as ReqId
            })
            .collect();
        assert_eq!(reqs.len(), 5);
        assert_eq!(answer(&mut c, reqs[0], true, at(101)), LockEvent::Pending);
        assert_eq!(answer(&mut c, reqs[0], true, at(101)), LockEvent::Pending);
        assert_eq!(answer(&mut c, reqs[1], true, at(102)), LockEvent::Pending);
        assert_eq!(answer(&mut c, reqs[2], true, at(103)), LockEvent::Pending);
        let mut fx = Vec::new();
        let event = c.on_timer(at(150), CLIENT_REQUEST, &mut fx);
        assert_eq!(
            event,
            LockEvent::Acquired {
                token: None,
                valid_ns: 9_848 * MS
            },
            "a duplicated OK counts once; silent masters are refusals"
        );
    }

    #[test]
    fn a_minority_is_busy_and_unlocks_every_master() {
        let mut c = client();
        let mut fx = Vec::new();
        c.acquire(at(0), 7, &mut fx);
        let reqs: Vec<ReqId> = sent(&fx)
            .iter()
            .map(|(_, m)| m.words()[0] as ReqId)
            .collect();
        for (i, &req) in reqs.iter().enumerate() {
            let event = answer(&mut c, req, i < 2, at(5));
            if i < 4 {
                assert_eq!(event, LockEvent::Pending);
            } else {
                assert_eq!(event, LockEvent::Busy, "all answered, two OKs");
            }
        }
        let mut fx = Vec::new();
        c.acquire(at(10), 8, &mut fx);
        assert_eq!(
            answer(&mut c, reqs[0], true, at(11)),
            LockEvent::Pending,
            "an answer to the previous attempt is not counted"
        );
    }

    #[test]
    fn the_client_reports_the_lock_lost_when_its_validity_runs_out() {
        let mut c = client();
        let mut fx = Vec::new();
        c.acquire(at(0), 7, &mut fx);
        for req in 16..21 {
            answer(&mut c, req, true, at(1));
        }
        assert_eq!(c.phase, Phase::Holding);
        let mut fx = Vec::new();
        assert_eq!(c.on_timer(at(9_000), VALIDITY, &mut fx), LockEvent::Lost);
        assert_eq!(
            c.on_timer(at(9_001), VALIDITY, &mut fx),
            LockEvent::Pending,
            "lost once"
        );
    }

    fn set(req: ReqId, owner: u64) -> Msg {
        Msg::Redis(RedisMsg::SetNx {
            req,
            key: Key(0),
            owner,
            ttl_ns: 10_000 * MS,
        })
    }

    fn ask(m: &mut RedisMaster, now: Clocks, msg: Msg) -> (Option<Msg>, Vec<Effect>) {
        let mut fx = Vec::new();
        m.handle(
            now,
            Input::Message {
                from: NodeId(0),
                msg,
            },
            &mut fx,
        );
        let reply = sent(&fx).first().map(|(_, m)| *m);
        (reply, fx)
    }

    fn ok(reply: Option<Msg>) -> bool {
        match reply {
            Some(Msg::Redis(RedisMsg::SetNxResult { ok, .. })) => ok,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_master_expires_keys_by_its_wall_clock_so_a_forward_jump_frees_the_key() {
        let mut m = RedisMaster::new(RedisMasterConfig {
            fsync_always: false,
            restart_delay_ns: 0,
        });
        assert!(ok(ask(&mut m, at(0), set(1, 7)).0));
        assert!(!ok(ask(&mut m, at(5_000), set(2, 8)).0), "held for 10 s");
        let jumped = Clocks {
            wall_ns: (20_000 * MS) as i64,
            mono_ns: 5_000 * MS,
        };
        assert!(
            ok(ask(&mut m, jumped, set(3, 8)).0),
            "the wall clock says expired"
        );
    }

    #[test]
    fn only_the_holder_value_deletes_the_key() {
        let mut m = RedisMaster::new(RedisMasterConfig {
            fsync_always: false,
            restart_delay_ns: 0,
        });
        ask(&mut m, at(0), set(1, 7));
        let cad = |owner| {
            Msg::Redis(RedisMsg::Cad {
                req: 2,
                key: Key(0),
                owner,
            })
        };
        let deleted = |r: Option<Msg>| {
            matches!(
                r,
                Some(Msg::Redis(RedisMsg::CadResult { deleted: true, .. }))
            )
        };
        assert!(!deleted(ask(&mut m, at(1), cad(8)).0));
        assert!(deleted(ask(&mut m, at(1), cad(7)).0));
    }

    fn restart(fsync_always: bool, restart_delay_ns: Nanos) -> RedisMaster {
        let cfg = RedisMasterConfig {
            fsync_always,
            restart_delay_ns,
        };
        let mut m = RedisMaster::new(cfg);
        let mut synced = None;
        let mut keep = |fx: &[Effect]| {
            for e in fx {
                if let Effect::Persist {
                    durability: Durability::Synced,
                    record,
                } = e
                {
                    synced = Some(record.clone());
                }
            }
        };
        let mut fx = Vec::new();
        m.handle(at(0), Input::Start { recovered: None }, &mut fx);
        keep(&fx);
        keep(&ask(&mut m, at(1), set(1, 7)).1);
        let mut fresh = RedisMaster::new(cfg);
        let record = synced.expect("first boot writes a synced record");
        fresh.handle(
            at(1_000),
            Input::Start {
                recovered: Some(&record),
            },
            &mut Vec::new(),
        );
        fresh
    }

    #[test]
    fn a_restart_without_fsync_forgets_the_key_and_with_fsync_keeps_it() {
        assert!(ok(ask(&mut restart(false, 0), at(1_001), set(2, 8)).0));
        assert!(!ok(ask(&mut restart(true, 0), at(1_001), set(2, 8)).0));
    }

    #[test]
    fn a_delayed_restart_answers_nothing_until_the_delay_has_passed() {
        let mut m = restart(false, 10_000 * MS);
        assert_eq!(ask(&mut m, at(10_999), set(2, 8)).0, None);
        assert!(ok(ask(&mut m, at(11_000), set(3, 8)).0));
    }
}
