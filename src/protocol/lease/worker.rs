//! A worker running the article's read-modify-write loop under a lease:
//!
//! ```text
//! acquire(key) -> read(doc) -> work -> write(doc) -> release(key)
//! ```
//!
//! Each operation has a unique op id, and the value it writes *is* that op
//! id, so the history shows exactly which write every read saw. Requests
//! that get no answer are retransmitted unchanged (same request id, same op
//! id) up to `max_retries` times; a retry is never a new operation.
//!
//! The worker's own view of its lease (a TTL measured on its monotonic
//! clock) is only used where a protocol variant says so; the default worker
//! — like the article's code — never looks at it before saving. The owner
//! nonce stands for Redis's random value: what matters is that it is unique
//! per acquisition, so it is built from the node id and an attempt counter
//! that is persisted (synced) before it is used.
//!
//! Where the lock comes from is the one thing that differs between
//! protocols: a coordinator's grant (the default), or a [`LockClient`] that
//! decides it holds the lock (ZooKeeper's recipe, Redlock, …). The
//! workload around it is this one loop for every protocol.
//!
//! Multi-lock operations (`more_locks`, coordinator grants only): an
//! operation that needs several locks — a transfer between two accounts —
//! takes them one at a time in the configured order, holding (and renewing)
//! the ones it has while it waits and retries for the next. Each lock
//! guards its own row (the resource row of the same key), so under all its
//! locks the operation reads every row, works once, and writes every row,
//! each write fenced by that row's own lock's token; then it releases in
//! reverse order. In the history each row's read-modify-write is one op
//! (op ids `first, first + 1, …`), so every op touches exactly one key and
//! the per-key checkers judge it unchanged. Rows are not updated atomically
//! together: a rejected write stops the operation, rows already written stay
//! written. Two workers that take the same locks in opposite orders can each
//! hold one and wait for the other forever (with renewal on) — a deadlock
//! the liveness checker reports; a consistent global order cannot.

use crate::protocol::client::{ClientBase, LockClient, LockEvent, LockKind, CLIENT_TIMER_BASE};
use crate::protocol::effects::EffectCall;
use crate::protocol::msg::{first_req, next_req, Key, Msg, OpId, ReqId, Token};
use crate::protocol::node::{
    Clocks, Durability, Effect, Input, Nanos, Node, NodeId, Observation, Record, TimerId,
};

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct WorkerConfig {
    /// This worker's own address (part of its owner nonces).
    pub id: NodeId,
    /// 1-based worker index: op ids are `index * 1000 + n`.
    pub index: u16,
    pub key: Key,
    pub coordinator: NodeId,
    pub resource: NodeId,
    pub start_ns: Nanos,
    pub ops: u32,
    /// Time between the read result and the write ("the update").
    pub work_ns: Nanos,
    /// Pause between operations.
    pub think_ns: Nanos,
    /// Wait before asking again after `acquire_busy`.
    pub retry_ns: Nanos,
    pub request_timeout_ns: Nanos,
    pub max_retries: u32,
    /// Send the lease's token with writes (fenced protocols).
    pub send_token: bool,
    /// Send the lease's token with reads too (`fence_reads`).
    pub token_on_reads: bool,
    /// Re-check the lease on the local monotonic clock right before sending
    /// the write, and give the op up if it ran out (check-before-write).
    pub check_lease_before_write: bool,
    /// Heartbeat period while holding a lease (`None`: never renew).
    pub renew_every_ns: Option<Nanos>,
    /// Send, as the write's token, the object generation the read returned
    /// (an If-Match conditional write, object-store-cas).
    pub write_if_match: bool,
    /// Who decides that the worker holds the lock.
    pub lock: LockKind,
    /// After the write is acknowledged, call an effect sink (still holding
    /// the lease) before releasing — see [`crate::protocol::effects`].
    pub effect: Option<EffectCall>,
    /// Locks an operation takes after `key`, in the order taken (none: the
    /// single-lock worker). Coordinator grants only.
    pub more_locks: MoreLocks,
}

impl WorkerConfig {
    /// Every lock an operation takes, in the order it takes them.
    pub fn locks(&self) -> impl Iterator<Item = Key> + '_ {
        std::iter::once(self.key).chain(self.more_locks.as_slice().iter().copied())
    }

    /// How many locks (and rows, and history ops) one operation takes.
    pub fn lock_count(&self) -> usize {
        1 + self.more_locks.as_slice().len()
    }
}

/// Most locks one operation may take (`key` plus `more_locks`).
pub const MAX_LOCKS: usize = 4;

/// The locks an operation takes after its first, as a fixed-size value so
/// [`WorkerConfig`] stays `Copy`.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct MoreLocks {
    keys: [Key; MAX_LOCKS - 1],
    len: u8,
}

impl MoreLocks {
    pub const NONE: MoreLocks = MoreLocks {
        keys: [Key(0); MAX_LOCKS - 1],
        len: 0,
    };

    /// `keys` in order; at most `MAX_LOCKS - 1` of them.
    pub fn new(keys: &[Key]) -> MoreLocks {
        assert!(keys.len() < MAX_LOCKS, "at most {MAX_LOCKS} locks per op");
        let mut out = MoreLocks::NONE;
        out.keys[..keys.len()].copy_from_slice(keys);
        out.len = keys.len() as u8;
        out
    }

    pub fn as_slice(&self) -> &[Key] {
        &self.keys[..self.len as usize]
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// Op ids per worker: `index * OPS_PER_WORKER_MAX + n`, n in 1..=999.
pub const OPS_PER_WORKER_MAX: u32 = 999;

const STEP: TimerId = TimerId(0);
const REQUEST_TIMEOUT: TimerId = TimerId(1);
const RENEW: TimerId = TimerId(2);

/// Renew requests use their own id space (high bit set) so their answers
/// never match the one outstanding read/write/acquire request.
const RENEW_REQ_BIT: ReqId = 1 << 31;

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
enum Phase {
    /// Waiting for the STEP timer to start the next operation.
    Idle,
    /// Waiting for the STEP timer to ask for the lease again.
    Backoff,
    Acquiring,
    Reading,
    /// Holding the read value; STEP fires when the update is computed.
    Working,
    Writing,
    /// Waiting for the effect sink to answer (`effect` protocols).
    Effecting,
    Releasing,
    Done,
}

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
struct Grant {
    token: Option<Token>,
    /// When the lease runs out by our own monotonic clock.
    deadline_mono_ns: Nanos,
}

#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct Worker {
    cfg: WorkerConfig,
    phase: Phase,
    /// Operations started so far (persisted, so op ids never repeat).
    ops_started: u32,
    /// Acquisition attempts so far (persisted, so owner nonces never repeat).
    attempts: u32,
    /// Boots so far minus one (persisted): request ids carry it, see
    /// [`first_req`].
    incarnation: u32,
    next_req: ReqId,
    /// The request we are waiting on and how often it was retransmitted.
    outstanding: Option<(Msg, u32)>,
    /// The op id of row 0 of the current operation (row `i`: `op + i`).
    op: OpId,
    /// The operation's locks in the order taken (`n_locks` of them).
    locks: [Key; MAX_LOCKS],
    n_locks: usize,
    /// The lock being acquired or released, or the row being read or written.
    cur: usize,
    /// Per lock: the owner nonce of its latest acquisition, its grant while
    /// held, and the value its row's read returned.
    owners: [u64; MAX_LOCKS],
    grants: [Option<Grant>; MAX_LOCKS],
    read_values: [Option<OpId>; MAX_LOCKS],
    next_renew_req: ReqId,
    /// The lock client of a client-decided protocol (`None`: coordinator grants).
    client: Option<LockClient>,
}

impl Worker {
    pub fn new(cfg: WorkerConfig) -> Self {
        assert!(cfg.index >= 1, "worker index is 1-based");
        let n_locks = cfg.lock_count();
        assert!(cfg.ops as usize * n_locks <= OPS_PER_WORKER_MAX as usize);
        assert!(
            n_locks == 1 || (cfg.lock == LockKind::Lease && cfg.effect.is_none()),
            "multi-lock operations take coordinator grants and call no effect sink"
        );
        let mut locks = [cfg.key; MAX_LOCKS];
        for (slot, key) in locks.iter_mut().zip(cfg.locks()) {
            *slot = key;
        }
        Worker {
            cfg,
            phase: Phase::Idle,
            ops_started: 0,
            attempts: 0,
            incarnation: 0,
            next_req: first_req(0),
            outstanding: None,
            op: OpId::INITIAL,
            locks,
            n_locks,
            cur: 0,
            owners: [0; MAX_LOCKS],
            grants: [None; MAX_LOCKS],
            read_values: [None; MAX_LOCKS],
            next_renew_req: RENEW_REQ_BIT,
            client: Self::lock_client(&cfg, 0),
        }
    }

    /// The lock client of a client-decided protocol (None: coordinator
    /// grants), as the refinement check reads it.
    pub fn client(&self) -> Option<&LockClient> {
        self.client.as_ref()
    }

    fn lock_client(cfg: &WorkerConfig, incarnation: u32) -> Option<LockClient> {
        LockClient::new(
            cfg.lock,
            ClientBase {
                key: cfg.key,
                request_timeout_ns: cfg.request_timeout_ns,
                max_retries: cfg.max_retries,
                incarnation,
            },
        )
    }

    /// Boot number `incarnation`: every request id from here on carries it.
    fn begin_incarnation(&mut self, incarnation: u32) {
        self.incarnation = incarnation;
        self.next_req = first_req(incarnation);
        self.next_renew_req = RENEW_REQ_BIT | (first_req(incarnation) - 1);
        self.client = Self::lock_client(&self.cfg, incarnation);
    }

    fn persist(&self, fx: &mut Vec<Effect>) {
        // Laid out in a whole inline buffer and cut to length, rather than
        // grown field by field (a call per field, on every acquire retry).
        let mut buf = [0u8; 32];
        buf[0..4].copy_from_slice(&self.ops_started.to_le_bytes());
        buf[4..8].copy_from_slice(&self.attempts.to_le_bytes());
        buf[8..12].copy_from_slice(&self.incarnation.to_le_bytes());
        // The first incarnation writes the 8-byte record it always wrote
        // (runs without a worker restart keep their trace hashes).
        let len = if self.incarnation > 0 { 12 } else { 8 };
        let record = Record::from_buf_and_len(buf, len);
        fx.push(Effect::Persist {
            durability: Durability::Synced,
            record,
        });
    }

    fn request(&mut self, to: NodeId, msg: Msg, fx: &mut Vec<Effect>) {
        self.outstanding = Some((msg, 0));
        fx.push(Effect::Send { to, msg });
        fx.push(Effect::SetTimer {
            timer: REQUEST_TIMEOUT,
            after_ns: self.cfg.request_timeout_ns,
        });
    }

    fn take_req(&mut self) -> ReqId {
        let req = self.next_req;
        self.next_req = next_req(req);
        req
    }

    /// Is `req` the answer we are waiting for?
    fn answers(&self, req: ReqId) -> bool {
        matches!(self.outstanding, Some((m, _)) if req_of(&m) == req)
    }

    fn settle(&mut self, fx: &mut Vec<Effect>) {
        self.outstanding = None;
        fx.push(Effect::CancelTimer {
            timer: REQUEST_TIMEOUT,
        });
    }

    fn start_op(&mut self, clocks: Clocks, fx: &mut Vec<Effect>) {
        if self.ops_started >= self.cfg.ops {
            self.phase = Phase::Done;
            fx.push(Effect::Observe(Observation::WorkloadDone));
            return;
        }
        self.ops_started += 1;
        // One history op per row: a single-lock worker's ops are index*1000 + n.
        let rows = self.n_locks as u64;
        self.op = OpId(self.cfg.index as u64 * 1000 + (self.ops_started as u64 - 1) * rows + 1);
        self.read_values = [None; MAX_LOCKS];
        self.cur = 0;
        self.acquire(clocks, fx);
    }

    /// The history op of row `row` of the current operation.
    fn op_of(&self, row: usize) -> OpId {
        OpId(self.op.0 + row as u64)
    }

    /// Asks for lock `cur` (the locks before it are held).
    fn acquire(&mut self, clocks: Clocks, fx: &mut Vec<Effect>) {
        self.attempts += 1;
        let owner = ((self.cfg.id.0 as u64) << 32) | self.attempts as u64;
        self.owners[self.cur] = owner;
        self.persist(fx);
        self.phase = Phase::Acquiring;
        if let Some(client) = self.client.as_mut() {
            client.acquire(clocks, owner, fx);
            return;
        }
        let req = self.take_req();
        let msg = Msg::Acquire {
            req,
            key: self.locks[self.cur],
            owner,
        };
        self.request(self.cfg.coordinator, msg, fx);
    }

    /// Reads row `cur` under its lock.
    fn read(&mut self, fx: &mut Vec<Effect>) {
        self.phase = Phase::Reading;
        let token = if self.cfg.token_on_reads {
            self.token(self.cur)
        } else {
            None
        };
        let req = self.take_req();
        let msg = Msg::Read {
            req,
            key: self.locks[self.cur],
            op: self.op_of(self.cur),
            token,
        };
        self.request(self.cfg.resource, msg, fx);
    }

    /// Writes row `cur` — unless the worker re-checks its leases first
    /// (check-before-write) and one ran out, then the op is given up.
    fn write_or_give_up(&mut self, clocks: Clocks, fx: &mut Vec<Effect>) {
        let expired = self.grants[..self.n_locks]
            .iter()
            .flatten()
            .any(|g| clocks.mono_ns >= g.deadline_mono_ns);
        if self.cfg.check_lease_before_write && expired {
            self.abandon(clocks, fx);
        } else {
            self.write(fx);
        }
    }

    fn write(&mut self, fx: &mut Vec<Effect>) {
        self.phase = Phase::Writing;
        let token = if self.cfg.write_if_match {
            self.read_values[self.cur].map(|v| Token(v.0))
        } else if self.cfg.send_token {
            self.token(self.cur)
        } else {
            None
        };
        let req = self.take_req();
        let op = self.op_of(self.cur);
        let msg = Msg::Write {
            req,
            key: self.locks[self.cur],
            op,
            token,
            value: op,
        };
        self.request(self.cfg.resource, msg, fx);
    }

    /// Releases the last-taken lock still held (reverse order), or — none
    /// left — thinks before the next op.
    fn release(&mut self, clocks: Clocks, fx: &mut Vec<Effect>) {
        let Some(i) = (0..self.n_locks).rev().find(|&i| self.grants[i].is_some()) else {
            self.next_op_after_think(fx);
            return;
        };
        self.phase = Phase::Releasing;
        self.cur = i;
        self.grants[i] = None;
        if let Some(client) = self.client.as_mut() {
            client.release(clocks, fx);
            return;
        }
        let req = self.take_req();
        let msg = Msg::Release {
            req,
            key: self.locks[i],
            owner: self.owners[i],
        };
        self.request(self.cfg.coordinator, msg, fx);
    }

    fn token(&self, lock: usize) -> Option<Token> {
        self.grants[lock].and_then(|g| g.token)
    }

    /// The held lock acquired under `owner`, if any.
    fn held_by(&self, owner: u64) -> Option<usize> {
        (0..self.n_locks).find(|&i| self.owners[i] == owner && self.grants[i].is_some())
    }

    /// The op ends (done or abandoned): release the locks we hold, then think.
    fn finish_op(&mut self, clocks: Clocks, fx: &mut Vec<Effect>) {
        self.release(clocks, fx);
    }

    fn next_op_after_think(&mut self, fx: &mut Vec<Effect>) {
        self.grants = [None; MAX_LOCKS];
        self.phase = Phase::Idle;
        fx.push(Effect::SetTimer {
            timer: STEP,
            after_ns: self.cfg.think_ns,
        });
    }

    fn abandon(&mut self, clocks: Clocks, fx: &mut Vec<Effect>) {
        fx.push(Effect::Observe(Observation::OpAbandoned { op: self.op }));
        self.finish_op(clocks, fx);
    }

    /// Lock `lock`'s lease is gone: stop (DynamoDB's client reports the lock
    /// lost) and release the others. The write may already be in flight —
    /// only a fence can stop that one.
    fn lose_lease(&mut self, clocks: Clocks, lock: usize, fx: &mut Vec<Effect>) {
        fx.push(Effect::Observe(Observation::LeaseLost {
            key: self.locks[lock],
            owner: self.owners[lock],
        }));
        fx.push(Effect::CancelTimer { timer: STEP });
        self.grants[lock] = None;
        if self.outstanding.is_some() {
            self.settle(fx);
        }
        self.abandon(clocks, fx);
    }

    /// Lock `cur` is ours: take the next one, or read the first row.
    fn granted(&mut self, clocks: Clocks, grant: Grant, fx: &mut Vec<Effect>) {
        self.grants[self.cur] = Some(grant);
        if self.cur + 1 < self.n_locks {
            self.cur += 1;
            self.acquire(clocks, fx);
        } else {
            self.cur = 0;
            self.read(fx);
        }
    }

    /// What the lock client of a client-decided protocol concluded.
    fn on_lock_event(&mut self, clocks: Clocks, event: LockEvent, fx: &mut Vec<Effect>) {
        match (self.phase, event) {
            (Phase::Acquiring, LockEvent::Acquired { token, valid_ns }) => {
                fx.push(Effect::Observe(Observation::Acquired {
                    key: self.cfg.key,
                    owner: self.owners[0],
                    token,
                }));
                let grant = Grant {
                    token,
                    deadline_mono_ns: clocks.mono_ns.saturating_add(valid_ns),
                };
                self.granted(clocks, grant, fx);
            }
            (Phase::Acquiring, LockEvent::Busy) => {
                self.phase = Phase::Backoff;
                fx.push(Effect::SetTimer {
                    timer: STEP,
                    after_ns: self.cfg.retry_ns,
                });
            }
            (Phase::Reading | Phase::Working | Phase::Writing, LockEvent::Lost)
                if self.grants[0].is_some() =>
            {
                self.lose_lease(clocks, 0, fx)
            }
            (Phase::Releasing, LockEvent::Released) => self.next_op_after_think(fx),
            _ => {}
        }
    }

    fn on_message(&mut self, clocks: Clocks, msg: Msg, fx: &mut Vec<Effect>) {
        if let Some(client) = self.client.as_mut() {
            let from_resource = matches!(
                msg,
                Msg::ReadOk { .. }
                    | Msg::ReadRejected { .. }
                    | Msg::WriteOk { .. }
                    | Msg::WriteRejected { .. }
            );
            if !from_resource {
                let event = client.on_message(clocks, msg, fx);
                self.on_lock_event(clocks, event, fx);
                return;
            }
        }
        match (self.phase, msg) {
            (
                Phase::Acquiring,
                Msg::Granted {
                    req,
                    owner,
                    token,
                    ttl_ns,
                    ..
                },
            ) if self.answers(req) && owner == self.owners[self.cur] => {
                self.lock_granted(clocks, token, ttl_ns, fx)
            }
            (_, Msg::Renewed { owner, ttl_ns, .. }) if self.held_by(owner).is_some() => {
                if let Some(g) = self.held_by(owner).and_then(|i| self.grants[i].as_mut()) {
                    g.deadline_mono_ns = clocks.mono_ns.saturating_add(ttl_ns);
                }
            }
            // Holding locks while waiting for the next counts: a lost lease
            // ends the operation there too.
            (
                Phase::Acquiring
                | Phase::Backoff
                | Phase::Reading
                | Phase::Working
                | Phase::Writing,
                Msg::RenewFailed { owner, key, .. },
            ) if self.held_by(owner).is_some_and(|i| self.locks[i] == key) => {
                let lock = self.held_by(owner).unwrap_or(0);
                self.lose_lease(clocks, lock, fx)
            }
            // A newer grant for an acquisition we hold (a retransmitted acquire
            // answered after our lease lapsed): adopt it, never an older one —
            // and only before this op has read under the grant it holds. A
            // write under the newer grant on a read made under the older one
            // would pass its fence on a value someone else may have replaced
            // in between (single-db: a new transaction writing on the old
            // one's SELECT); keeping the old token lets the fence refuse it.
            (
                Phase::Acquiring | Phase::Backoff,
                Msg::Granted {
                    owner,
                    token: Some(t),
                    ..
                },
            ) if self.held_by(owner).is_some() => self.adopt_newer_token(owner, t),
            (Phase::Acquiring, Msg::Busy { req, .. }) if self.answers(req) => {
                self.settle(fx);
                self.phase = Phase::Backoff;
                fx.push(Effect::SetTimer {
                    timer: STEP,
                    after_ns: self.cfg.retry_ns,
                });
            }
            (Phase::Reading, Msg::ReadOk { req, value, .. }) if self.answers(req) => {
                self.read_answered(msg, value, fx)
            }
            (Phase::Reading, Msg::ReadRejected { req, .. }) if self.answers(req) => {
                self.settle(fx);
                fx.push(Effect::Observe(Observation::ReplyUsed { reply: msg }));
                self.abandon(clocks, fx);
            }
            (Phase::Writing, Msg::WriteOk { req, .. }) if self.answers(req) => {
                self.write_accepted(clocks, msg, fx)
            }
            (Phase::Effecting, Msg::EffectOk { req, .. }) if self.answers(req) => {
                self.settle(fx);
                self.finish_op(clocks, fx);
            }
            (Phase::Writing, Msg::WriteRejected { req, .. }) if self.answers(req) => {
                self.settle(fx);
                fx.push(Effect::Observe(Observation::ReplyUsed { reply: msg }));
                self.abandon(clocks, fx);
            }
            (Phase::Releasing, Msg::Released { req, .. }) if self.answers(req) => {
                self.settle(fx);
                self.release(clocks, fx);
            }
            // Late or duplicate replies to requests we no longer wait for.
            _ => {}
        }
    }

    /// The grant of the lock being acquired arrived: hold it until
    /// `ttl_ns` from now on the worker's monotonic clock.
    fn lock_granted(
        &mut self,
        clocks: Clocks,
        token: Option<Token>,
        ttl_ns: Nanos,
        fx: &mut Vec<Effect>,
    ) {
        self.settle(fx);
        let grant = Grant {
            token,
            deadline_mono_ns: clocks.mono_ns.saturating_add(ttl_ns),
        };
        // One heartbeat timer renews every held lock; it starts with the first.
        if let (0, Some(every)) = (self.cur, self.cfg.renew_every_ns) {
            fx.push(Effect::SetTimer {
                timer: RENEW,
                after_ns: every,
            });
        }
        self.granted(clocks, grant, fx);
    }

    /// A newer grant for an acquisition held: its token replaces the held
    /// one if it is higher (never an older one).
    fn adopt_newer_token(&mut self, owner: u64, t: Token) {
        if let Some(g) = self.held_by(owner).and_then(|i| self.grants[i].as_mut()) {
            if g.token.is_some_and(|held| t > held) {
                g.token = Some(t);
            }
        }
    }

    /// The read under the current lock answered `value`: read under the
    /// next lock, or work once every lock's document is read.
    fn read_answered(&mut self, reply: Msg, value: OpId, fx: &mut Vec<Effect>) {
        self.settle(fx);
        fx.push(Effect::Observe(Observation::ReplyUsed { reply }));
        self.read_values[self.cur] = Some(value);
        if self.cur + 1 < self.n_locks {
            self.cur += 1;
            self.read(fx);
        } else {
            self.cur = 0;
            self.phase = Phase::Working;
            fx.push(Effect::SetTimer {
                timer: STEP,
                after_ns: self.cfg.work_ns,
            });
        }
    }

    /// The write under the current lock was accepted: write under the
    /// next lock, else perform the effect (if any) or finish the op.
    fn write_accepted(&mut self, clocks: Clocks, reply: Msg, fx: &mut Vec<Effect>) {
        self.settle(fx);
        fx.push(Effect::Observe(Observation::ReplyUsed { reply }));
        if self.cur + 1 < self.n_locks {
            self.cur += 1;
            self.write_or_give_up(clocks, fx);
            return;
        }
        match self.cfg.effect {
            Some(call) => {
                self.phase = Phase::Effecting;
                let msg = call.request(self.take_req(), self.cfg.key, self.op);
                self.request(call.sink, msg, fx);
            }
            None => self.finish_op(clocks, fx),
        }
    }

    fn on_request_timeout(&mut self, clocks: Clocks, fx: &mut Vec<Effect>) {
        let Some((msg, retries)) = self.outstanding else {
            return;
        };
        if retries < self.cfg.max_retries {
            let to = match (msg, self.cfg.effect) {
                (Msg::Acquire { .. } | Msg::Release { .. }, _) => self.cfg.coordinator,
                (Msg::Effect { .. }, Some(call)) => call.sink,
                _ => self.cfg.resource,
            };
            self.outstanding = Some((msg, retries + 1));
            fx.push(Effect::Send { to, msg });
            fx.push(Effect::SetTimer {
                timer: REQUEST_TIMEOUT,
                after_ns: self.cfg.request_timeout_ns,
            });
            return;
        }
        self.outstanding = None;
        match self.phase {
            Phase::Acquiring => {
                self.phase = Phase::Backoff;
                fx.push(Effect::SetTimer {
                    timer: STEP,
                    after_ns: self.cfg.retry_ns,
                });
            }
            Phase::Reading | Phase::Writing | Phase::Effecting => self.abandon(clocks, fx),
            // Give this lock up for lost and release the next one.
            Phase::Releasing => self.release(clocks, fx),
            Phase::Idle | Phase::Backoff | Phase::Working | Phase::Done => {
                unreachable!("request outstanding in phase {:?}", self.phase)
            }
        }
    }

    /// One heartbeat renews every lock held, including while waiting for
    /// the next one (that is what keeps a deadlock alive).
    fn on_renew_timer(&mut self, fx: &mut Vec<Effect>) {
        let Some(every) = self.cfg.renew_every_ns else {
            return;
        };
        if self.grants.iter().all(Option::is_none) {
            return;
        }
        if matches!(self.phase, Phase::Releasing | Phase::Idle | Phase::Done) {
            return;
        }
        for i in 0..self.n_locks {
            if self.grants[i].is_none() {
                continue;
            }
            let req = self.next_renew_req;
            self.next_renew_req = RENEW_REQ_BIT | next_req(self.next_renew_req & !RENEW_REQ_BIT);
            fx.push(Effect::Send {
                to: self.cfg.coordinator,
                msg: Msg::Renew {
                    req,
                    key: self.locks[i],
                    owner: self.owners[i],
                },
            });
        }
        fx.push(Effect::SetTimer {
            timer: RENEW,
            after_ns: every,
        });
    }

    fn on_step(&mut self, clocks: Clocks, fx: &mut Vec<Effect>) {
        match self.phase {
            Phase::Idle => self.start_op(clocks, fx),
            Phase::Backoff => self.acquire(clocks, fx),
            Phase::Working => self.write_or_give_up(clocks, fx),
            Phase::Acquiring
            | Phase::Reading
            | Phase::Writing
            | Phase::Effecting
            | Phase::Releasing
            | Phase::Done => {}
        }
    }
}

fn req_of(msg: &Msg) -> ReqId {
    msg.words()[0] as ReqId
}

impl Node for Worker {
    fn handle(&mut self, clocks: Clocks, input: Input<'_>, fx: &mut Vec<Effect>) {
        match input {
            Input::Start { recovered } => {
                let first_boot = recovered.is_none();
                if let Some(bytes) = recovered {
                    assert!(
                        bytes.len() == 8 || bytes.len() == 12,
                        "worker record is 8 or 12 bytes"
                    );
                    let word = |i: usize| {
                        u32::from_le_bytes([bytes[i], bytes[i + 1], bytes[i + 2], bytes[i + 3]])
                    };
                    self.ops_started = word(0);
                    self.attempts = word(4);
                    let before = if bytes.len() == 12 { word(8) } else { 0 };
                    self.begin_incarnation(before.wrapping_add(1));
                    // Remembered before any request of this incarnation is sent.
                    self.persist(fx);
                }
                self.phase = Phase::Idle;
                let delay_ns = if first_boot { self.cfg.start_ns } else { 0 };
                fx.push(Effect::SetTimer {
                    timer: STEP,
                    after_ns: delay_ns,
                });
            }
            Input::Message { msg, .. } => self.on_message(clocks, msg, fx),
            Input::Timer { timer: STEP } => self.on_step(clocks, fx),
            Input::Timer { timer: RENEW } => self.on_renew_timer(fx),
            Input::Timer {
                timer: REQUEST_TIMEOUT,
            } => self.on_request_timeout(clocks, fx),
            Input::Timer { timer } if timer.0 >= CLIENT_TIMER_BASE => {
                if let Some(client) = self.client.as_mut() {
                    let event = client.on_timer(clocks, timer, fx);
                    self.on_lock_event(clocks, event, fx);
                }
            }
            Input::Timer { .. } => {}
        }
    }

    fn records_own_replies(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::msg::REQ_INCARNATION_SHIFT;

    fn cfg() -> WorkerConfig {
        WorkerConfig {
            id: NodeId(0),
            index: 1,
            key: Key(0),
            coordinator: NodeId::COORD_GROUP,
            resource: NodeId(2),
            start_ns: 0,
            ops: 1,
            work_ns: 10,
            think_ns: 10,
            retry_ns: 10,
            request_timeout_ns: 100,
            max_retries: 2,
            send_token: true,
            token_on_reads: false,
            check_lease_before_write: false,
            renew_every_ns: None,
            write_if_match: false,
            lock: LockKind::Lease,
            effect: None,
            more_locks: MoreLocks::NONE,
        }
    }

    const NOW: Clocks = Clocks {
        wall_ns: 0,
        mono_ns: 0,
    };

    #[test]
    fn stale_grant_reply_is_never_adopted_over_a_newer_one() {
        let mut w = Worker::new(cfg());
        let mut fx = Vec::new();
        w.handle(NOW, Input::Start { recovered: None }, &mut fx);
        w.handle(NOW, Input::Timer { timer: STEP }, &mut fx);
        let owner = w.owners[0];
        let granted = |token| Msg::Granted {
            req: 1,
            key: Key(0),
            owner,
            token: Some(Token(token)),
            ttl_ns: 1,
        };
        w.handle(
            NOW,
            Input::Message {
                from: NodeId(1),
                msg: granted(3),
            },
            &mut fx,
        );
        assert_eq!(w.token(0), Some(Token(3)));
        w.handle(
            NOW,
            Input::Message {
                from: NodeId(1),
                msg: granted(1),
            },
            &mut fx,
        );
        assert_eq!(
            w.token(0),
            Some(Token(3)),
            "an older grant must not replace a newer one"
        );
    }

    #[test]
    fn unanswered_request_is_retransmitted_unchanged_then_abandoned() {
        let mut w = Worker::new(cfg());
        let mut fx = Vec::new();
        w.handle(NOW, Input::Start { recovered: None }, &mut fx);
        w.handle(NOW, Input::Timer { timer: STEP }, &mut fx);
        fx.clear();
        w.handle(
            NOW,
            Input::Timer {
                timer: REQUEST_TIMEOUT,
            },
            &mut fx,
        );
        let sent: Vec<Msg> = fx
            .iter()
            .filter_map(|e| {
                if let Effect::Send { msg, .. } = e {
                    Some(*msg)
                } else {
                    None
                }
            })
            .collect();
        assert_eq!(sent.len(), 1);
        assert!(
            matches!(sent[0], Msg::Acquire { req: 1, .. }),
            "retransmission reuses the request id"
        );
        w.handle(
            NOW,
            Input::Timer {
                timer: REQUEST_TIMEOUT,
            },
            &mut fx,
        );
        w.handle(
            NOW,
            Input::Timer {
                timer: REQUEST_TIMEOUT,
            },
            &mut fx,
        );
        assert_eq!(
            w.phase,
            Phase::Backoff,
            "after max_retries the acquire backs off"
        );
    }

    /// Drives one worker by hand and answers its requests.
    struct Drive {
        w: Worker,
        fx: Vec<Effect>,
    }

    impl Drive {
        /// One lock, booted from `recovered` (None: first boot).
        fn one_lock(recovered: Option<&[u8]>) -> Drive {
            let mut c = cfg();
            c.ops = 2;
            let mut d = Drive {
                w: Worker::new(c),
                fx: Vec::new(),
            };
            d.input(Input::Start { recovered });
            d
        }

        /// The last record the worker persisted in its latest step.
        fn persisted(&self) -> Option<Vec<u8>> {
            self.fx.iter().rev().find_map(|e| match e {
                Effect::Persist { record, .. } => Some(record.to_vec()),
                _ => None,
            })
        }

        fn two_locks(renew_every_ns: Option<Nanos>) -> Drive {
            let mut c = cfg();
            c.more_locks = MoreLocks::new(&[Key(1)]);
            c.renew_every_ns = renew_every_ns;
            let mut d = Drive {
                w: Worker::new(c),
                fx: Vec::new(),
            };
            d.input(Input::Start { recovered: None });
            d
        }

        /// Feeds one input; returns the messages the worker sent.
        fn input(&mut self, input: Input<'_>) -> Vec<Msg> {
            self.fx.clear();
            self.w.handle(NOW, input, &mut self.fx);
            self.fx
                .iter()
                .filter_map(|e| match e {
                    Effect::Send { msg, .. } => Some(*msg),
                    _ => None,
                })
                .collect()
        }

        fn step(&mut self) -> Vec<Msg> {
            self.input(Input::Timer { timer: STEP })
        }

        fn reply(&mut self, msg: Msg) -> Vec<Msg> {
            self.input(Input::Message {
                from: NodeId(1),
                msg,
            })
        }

        fn observed(&self) -> Vec<Observation> {
            self.fx
                .iter()
                .filter_map(|e| match e {
                    Effect::Observe(o) => Some(*o),
                    _ => None,
                })
                .collect()
        }
    }

    fn grant(request: Msg, token: u64) -> Msg {
        let Msg::Acquire { req, key, owner } = request else {
            panic!("expected an acquire, got {request:?}");
        };
        Msg::Granted {
            req,
            key,
            owner,
            token: Some(Token(token)),
            ttl_ns: 1_000,
        }
    }

    fn read_ok(request: Msg) -> Msg {
        let Msg::Read { req, key, op, .. } = request else {
            panic!("expected a read, got {request:?}");
        };
        Msg::ReadOk {
            req,
            key,
            op,
            value: OpId::INITIAL,
        }
    }

    fn write_ok(request: Msg) -> Msg {
        let Msg::Write { req, key, op, .. } = request else {
            panic!("expected a write, got {request:?}");
        };
        Msg::WriteOk { req, key, op }
    }

    fn released(request: Msg) -> Msg {
        let Msg::Release { req, key, owner } = request else {
            panic!("expected a release, got {request:?}");
        };
        Msg::Released {
            req,
            key,
            removed: Some(owner),
        }
    }

    /// Takes both locks (a with token 5, b with token 6) and reads both rows.
    fn hold_both_and_read(d: &mut Drive) {
        let acquire_a = d.step()[0];
        let acquire_b = d.reply(grant(acquire_a, 5))[0];
        let read_a = d.reply(grant(acquire_b, 6))[0];
        let read_b = d.reply(read_ok(read_a))[0];
        assert!(
            d.reply(read_ok(read_b)).is_empty(),
            "then the update is computed"
        );
    }

    #[test]
    fn a_two_lock_op_holds_the_first_lock_while_it_retries_the_second() {
        let mut d = Drive::two_locks(None);
        let acquire_a = d.step();
        assert!(matches!(acquire_a[..], [Msg::Acquire { key: Key(0), .. }]));
        let acquire_b = d.reply(grant(acquire_a[0], 5));
        let [Msg::Acquire {
            req,
            key: Key(1),
            owner: first_try,
        }] = acquire_b[..]
        else {
            panic!("the second lock is asked for next, nothing read yet: {acquire_b:?}");
        };
        assert!(d.reply(Msg::Busy { req, key: Key(1) }).is_empty());
        assert_eq!(d.w.phase, Phase::Backoff);
        assert!(
            d.w.grants[0].is_some(),
            "the first lock stays held while backing off"
        );
        let retry = d.step();
        let [Msg::Acquire {
            key: Key(1), owner, ..
        }] = retry[..]
        else {
            panic!("the retry asks for the second lock again: {retry:?}");
        };
        assert_ne!(
            owner, first_try,
            "every acquisition has a fresh owner nonce"
        );
        let read_a = d.reply(grant(retry[0], 6));
        assert!(matches!(
            read_a[..],
            [Msg::Read {
                key: Key(0),
                op: OpId(1001),
                ..
            }]
        ));
    }

    #[test]
    fn a_two_lock_op_reads_and_writes_each_row_under_its_own_token_and_releases_in_reverse() {
        let mut d = Drive::two_locks(None);
        let acquire_a = d.step()[0];
        let acquire_b = d.reply(grant(acquire_a, 5))[0];
        let read_a = d.reply(grant(acquire_b, 6))[0];
        let read_b = d.reply(read_ok(read_a))[0];
        assert!(matches!(
            read_b,
            Msg::Read {
                key: Key(1),
                op: OpId(1002),
                ..
            }
        ));
        assert!(d.reply(read_ok(read_b)).is_empty());
        let write_a = d.step()[0];
        assert!(matches!(
            write_a,
            Msg::Write {
                key: Key(0),
                op: OpId(1001),
                token: Some(Token(5)),
                value: OpId(1001),
                ..
            }
        ));
        let write_b = d.reply(write_ok(write_a))[0];
        assert!(matches!(
            write_b,
            Msg::Write {
                key: Key(1),
                op: OpId(1002),
                token: Some(Token(6)),
                ..
            }
        ));
        let release_b = d.reply(write_ok(write_b))[0];
        assert!(matches!(release_b, Msg::Release { key: Key(1), .. }));
        let release_a = d.reply(released(release_b))[0];
        assert!(matches!(release_a, Msg::Release { key: Key(0), .. }));
        assert!(d.reply(released(release_a)).is_empty());
        assert_eq!(d.w.phase, Phase::Idle);
        d.step();
        assert_eq!(d.observed(), [Observation::WorkloadDone]);
    }

    #[test]
    fn the_first_lock_is_renewed_while_waiting_for_the_second_and_its_loss_ends_the_op() {
        let mut d = Drive::two_locks(Some(50));
        let acquire_a = d.step()[0];
        let Msg::Acquire { owner, .. } = acquire_a else {
            unreachable!()
        };
        let Msg::Acquire { req, .. } = d.reply(grant(acquire_a, 5))[0] else {
            panic!("the second lock is asked for next");
        };
        d.reply(Msg::Busy { req, key: Key(1) });
        let renew = d.input(Input::Timer { timer: RENEW });
        assert!(
            matches!(renew[..], [Msg::Renew { key: Key(0), owner: o, .. }] if o == owner),
            "the held lock is renewed during the backoff: {renew:?}"
        );
        let sent = d.reply(Msg::RenewFailed {
            req: RENEW_REQ_BIT,
            key: Key(0),
            owner,
        });
        assert!(
            sent.is_empty(),
            "nothing else is held, so nothing to release"
        );
        assert_eq!(
            d.observed(),
            [
                Observation::LeaseLost { key: Key(0), owner },
                Observation::OpAbandoned { op: OpId(1001) }
            ]
        );
        assert_eq!(d.w.phase, Phase::Idle);
    }

    #[test]
    fn a_rejected_write_gives_the_op_up_and_releases_every_held_lock_last_first() {
        let mut d = Drive::two_locks(None);
        hold_both_and_read(&mut d);
        let Msg::Write { req, op, .. } = d.step()[0] else {
            panic!("the first row is written first");
        };
        let release_b = d.reply(Msg::WriteRejected {
            req,
            key: Key(0),
            op,
            fence: Token(7),
        });
        assert_eq!(
            d.observed(),
            [
                Observation::ReplyUsed {
                    reply: Msg::WriteRejected {
                        req,
                        key: Key(0),
                        op,
                        fence: Token(7),
                    },
                },
                Observation::OpAbandoned { op: OpId(1001) }
            ]
        );
        assert!(matches!(release_b[..], [Msg::Release { key: Key(1), .. }]));
        let release_a = d.reply(released(release_b[0]));
        assert!(matches!(release_a[..], [Msg::Release { key: Key(0), .. }]));
    }

    fn used_replies(d: &Drive) -> Vec<Msg> {
        d.observed()
            .into_iter()
            .filter_map(|o| match o {
                Observation::ReplyUsed { reply } => Some(reply),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn a_restarted_worker_never_acts_on_a_reply_meant_for_its_previous_incarnation() {
        let mut first = Drive::one_lock(None);
        let acquire = first.step()[0];
        let record = first
            .persisted()
            .expect("the acquisition counter is synced");
        let old_read = first.reply(grant(acquire, 5))[0];
        // Crash here: the read's answer is still in flight.
        let mut second = Drive::one_lock(Some(&record));
        let record = second
            .persisted()
            .expect("the new incarnation is synced at boot");
        assert_eq!(record.len(), 12, "ops, attempts and the incarnation");
        let acquire = second.step()[0];
        let new_read = second.reply(grant(acquire, 6))[0];
        let (Msg::Read { req: old_req, .. }, Msg::Read { req: new_req, .. }) = (old_read, new_read)
        else {
            panic!("expected two reads, got {old_read:?} and {new_read:?}");
        };
        assert_ne!(
            old_req, new_req,
            "request ids never repeat across incarnations"
        );
        assert!(second.reply(read_ok(old_read)).is_empty());
        assert!(
            used_replies(&second).is_empty() && second.w.phase == Phase::Reading,
            "the predecessor's answer is not the answer to this read"
        );
        second.reply(read_ok(new_read));
        assert_eq!(
            used_replies(&second),
            vec![read_ok(new_read)],
            "the reply the worker acts on is the one it reports"
        );
        assert_eq!(second.w.phase, Phase::Working);
        // A third boot counts on from the second's record.
        let third = Drive::one_lock(Some(&record));
        assert_eq!(third.w.incarnation, 2);
        assert_eq!(third.w.next_req >> REQ_INCARNATION_SHIFT, 2);
    }

    #[test]
    fn a_newer_grant_arriving_after_the_read_is_not_adopted_for_the_write() {
        let mut d = Drive::one_lock(None);
        let acquire = d.step()[0];
        let read = d.reply(grant(acquire, 5))[0];
        d.reply(read_ok(read));
        assert_eq!(d.w.phase, Phase::Working);
        // The retransmitted acquire's answer: a new transaction / lease.
        d.reply(grant(acquire, 9));
        let write = d.step();
        assert!(
            matches!(
                write[..],
                [Msg::Write {
                    token: Some(Token(5)),
                    ..
                }]
            ),
            "the write carries the grant its read was made under, got {write:?}"
        );
    }

    #[test]
    fn a_newer_grant_for_a_held_lock_is_adopted_while_waiting_for_the_next_lock() {
        let mut d = Drive::two_locks(None);
        let acquire_a = d.step()[0];
        let acquire_b = d.reply(grant(acquire_a, 5))[0];
        d.reply(grant(acquire_a, 7));
        assert_eq!(d.w.token(0), Some(Token(7)), "nothing was read under 5 yet");
        let read_a = d.reply(grant(acquire_b, 6))[0];
        assert!(matches!(read_a, Msg::Read { key: Key(0), .. }));
    }
}
