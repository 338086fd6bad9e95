//! An active/passive file-server pair with heartbeats and STONITH fencing:
//! GitHub's file servers in December 2012 (Mark Imbriaco, "Downtime last
//! Saturday", github.blog, 2012-12-26). Each pair shared its storage; the
//! active served it and sent heartbeats, and the passive, after missing
//! heartbeats, sent a fencing command (STONITH, "shoot the other node in
//! the head") to power its peer off and then took over. About 90 s of
//! blocked traffic between access switches dropped both the heartbeats and
//! the fencing commands, and several pairs ended up with both nodes active.
//!
//! The two `[[worker]]`s of a scenario are the pair's nodes (the first one
//! boots active with epoch 1); `resource/0` is the shared storage. Timings
//! reuse the lease vocabulary:
//!
//! | knob | meaning here |
//! |------|--------------|
//! | `renew_every_ms` | the active's heartbeat period |
//! | `[lease] ttl_ms` | dead time: the passive declares the active dead after this much silence |
//! | `request_timeout_ms` | the STONITH timeout, and the timeout of storage requests |
//! | `work_ms` / `think_ms` | read → write, and write → next read, of the active's write loop |
//!
//! A node's life: *passive* (dead timer reset by every heartbeat) → dead
//! timer fires: send `stonith` to the peer, *fencing* → the fencing timeout
//! passes with no heartbeat heard: *promote* under epoch = highest epoch
//! it knows + 1 → *active*: heartbeats, and a read-modify-write loop on
//! the storage (op ids `index * 1000 + n`, at most 999 per node). A heartbeat
//! heard while fencing cancels the takeover. A node that receives `stonith`
//! powers off for good (until the harness restarts it). An active that
//! hears a heartbeat with a newer epoch steps down (after the partition
//! heals, the older active yields).
//!
//! **Unsafe (GitHub's configuration)**, `fence = false`: the STONITH path
//! runs over the same network as the heartbeats, and the passive, once the
//! fencing timeout passes, *assumes* the command worked. The storage checks
//! nothing. During the partition both nodes write: the old active's writes
//! land after the new active's — stale writes and lost updates, the "lost
//! writes".
//!
//! **Safe twin**, `fence = true`: storage-level fencing in the style of
//! SCSI-3 persistent reservations (PREEMPT with a newer key, "Write
//! Exclusive": anyone may read, only the reservation holder may write). The
//! storage is reachable from both nodes (the partition is between the
//! pair's switches). Promotion first sends `reserve` with the new epoch to
//! the storage, which raises its fence only if the epoch is above it
//! (strictly: two promotions that picked the same epoch — a node restarted
//! with an old view, a peer cut off — cannot both win); the node becomes
//! active only once the storage granted it. A retry takes a fresh epoch.
//! Writes carry the node's epoch and the storage is the fenced store
//! (atomic, token ≥ fence). The old active's next write, still under its
//! old epoch, is rejected; it learns it was fenced from the rejection (and
//! the fence value, so a later promotion of its own goes above it) and
//! steps down. Reads carry no epoch and are never fenced. The reservation
//! is not a write, so it is not judged as one: the node's writes all come
//! after its `became_active`. A node stepped down by the storage stays
//! passive until it hears its peer again — a fenced node must rejoin before
//! it may take over (fence_scsi's "unfence on rejoin"); otherwise the two
//! would take the reservation from each other for as long as the partition
//! lasts.
//!
//! **The storage path is an ordered session** (both variants): a SAN's
//! iSCSI/FC session delivers one initiator's commands in order — iSCSI
//! numbers them (CmdSN, RFC 7143 §3.2.2.1) and the target discards a
//! duplicate or out-of-window one — and an initiator that times a command
//! out aborts it (SAM-5 task management, ABORT TASK) before it moves on, so
//! a timed-out write never executes after the node's next command. Here
//! the request id is the CmdSN: it grows strictly with every storage
//! command of a node, across its restarts too (the boot number is synced
//! in its high bits before any request goes out, like a session
//! reinstatement that ends the old session's tasks), and the storage
//! (`resource`, `ordered_sessions`) executes a command only if its id is
//! above the last one it executed from that node. The datagram network may
//! still lose, delay and duplicate storage I/O; what it can no longer do is
//! land the active's given-up write after its next read or write — an
//! effect the real path does not have. The unfenced pair's failure, two
//! *different* nodes writing, is untouched by this.
//!
//! Becoming active and stepping down are observations (`BecameActive`,
//! `SteppedDown`); the harness numbers promotions in true-time order. The
//! node never says "I am the second active" — the `two_actives` checker
//! finds that from the history.

use crate::protocol::msg::{first_req, next_req, Key, Msg, OpId, ReqId, Token};
use crate::protocol::node::{Clocks, Durability, Effect, Input, Nanos, Node, NodeId, Observation};
use crate::protocol::node::{StepDownCause, TimerId};

// Public so tests outside the crate can drive a node by hand.
/// Next step of the write loop (read → work → write → think).
pub const STEP: TimerId = TimerId(0);
/// A storage request timed out.
pub const REQUEST: TimerId = TimerId(1);
pub const HEARTBEAT: TimerId = TimerId(2);
/// Passive: no heartbeat for the dead time.
pub const DEAD: TimerId = TimerId(3);
/// Fencing: the STONITH timeout.
pub const FENCE: TimerId = TimerId(4);
/// First boot at `start_ns`.
pub const BOOT: TimerId = TimerId(5);

/// Ops per node (op ids `index * 1000 + n`, like workers').
pub const OPS_PER_NODE_MAX: u64 = 999;

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct PairConfig {
    pub peer: NodeId,
    pub storage: NodeId,
    pub key: Key,
    /// 1-based; op ids are `index * 1000 + n`.
    pub index: u16,
    /// Boots active (epoch 1) on its first boot.
    pub starts_active: bool,
    pub start_ns: Nanos,
    pub heartbeat_ns: Nanos,
    pub failover_after_ns: Nanos,
    pub fence_timeout_ns: Nanos,
    pub request_timeout_ns: Nanos,
    pub work_ns: Nanos,
    pub think_ns: Nanos,
    /// SCSI-3-style reservation: I/O carries the epoch, the storage checks it.
    pub storage_fence: bool,
}

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
enum State {
    Booting,
    /// `eligible`: may take over when the dead timer fires (false after the
    /// storage fenced it, until it hears its peer).
    Passive {
        eligible: bool,
    },
    /// STONITH sent; waiting out the fencing timeout.
    Fencing {
        epoch: u64,
    },
    /// Storage fencing: the reservation (`req`) is in flight.
    Reserving {
        epoch: u64,
        req: ReqId,
    },
    Active {
        epoch: u64,
    },
    /// Powered off by STONITH.
    Off,
}

/// Where the active's current read-modify-write op is.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
enum Stage {
    Idle,
    Reading { req: ReqId, op: OpId },
    Working { op: OpId },
    Writing { req: ReqId, op: OpId },
}

#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct PairNode {
    cfg: PairConfig,
    state: State,
    stage: Stage,
    /// Highest epoch heard of (heartbeats, STONITH, storage rejections, own).
    known_epoch: u64,
    ops_started: u64,
    /// Boot number (synced): the high bits of every request id.
    incarnation: u32,
    /// The next storage command's id, its CmdSN (see the module doc).
    next_req: ReqId,
}

impl PairNode {
    pub fn new(cfg: PairConfig) -> Self {
        assert!(cfg.heartbeat_ns > 0 && cfg.heartbeat_ns < cfg.failover_after_ns);
        assert!(cfg.fence_timeout_ns > 0 && cfg.request_timeout_ns > 0);
        assert!(cfg.index > 0 && cfg.peer != cfg.storage);
        PairNode {
            cfg,
            state: State::Booting,
            stage: Stage::Idle,
            known_epoch: 0,
            ops_started: 0,
            incarnation: 0,
            next_req: first_req(0),
        }
    }

    fn set(fx: &mut Vec<Effect>, timer: TimerId, after_ns: Nanos) {
        fx.push(Effect::SetTimer { timer, after_ns });
    }

    fn send(&self, fx: &mut Vec<Effect>, to: NodeId, msg: Msg) {
        fx.push(Effect::Send { to, msg });
    }

    fn token(&self, epoch: u64) -> Option<Token> {
        self.cfg.storage_fence.then_some(Token(epoch))
    }

    fn req(&mut self) -> ReqId {
        let req = self.next_req;
        self.next_req = next_req(req);
        req
    }

    fn next_op(&mut self) -> Option<OpId> {
        if self.ops_started >= OPS_PER_NODE_MAX {
            return None;
        }
        self.ops_started += 1;
        Some(OpId(self.cfg.index as u64 * 1000 + self.ops_started))
    }

    /// Learns of `epoch`. The highest known epoch is synced so a restarted
    /// node never promotes under an epoch it has already seen.
    fn learn(&mut self, epoch: u64, fx: &mut Vec<Effect>) {
        if epoch > self.known_epoch {
            self.known_epoch = epoch;
            self.persist(fx);
        }
    }

    /// `known_epoch u64 ++ ops_started u64 ++ incarnation u32`: op ids stay
    /// unique, and request ids increasing, across a restart too.
    fn persist(&self, fx: &mut Vec<Effect>) {
        let mut record = self.known_epoch.to_le_bytes().to_vec();
        record.extend_from_slice(&self.ops_started.to_le_bytes());
        record.extend_from_slice(&self.incarnation.to_le_bytes());
        fx.push(Effect::Persist {
            durability: Durability::Synced,
            record: record.into(),
        });
    }

    fn recover(&mut self, bytes: &[u8]) {
        assert_eq!(
            bytes.len(),
            20,
            "a pair node's record is two u64s and a u32"
        );
        let word = |b: &[u8]| u64::from_le_bytes(b.try_into().expect("8 bytes"));
        self.known_epoch = word(&bytes[..8]);
        self.ops_started = word(&bytes[8..16]);
        self.incarnation = u32::from_le_bytes(bytes[16..].try_into().expect("4 bytes"));
    }

    fn become_passive(&mut self, eligible: bool, fx: &mut Vec<Effect>) {
        for timer in [STEP, REQUEST, HEARTBEAT, FENCE] {
            fx.push(Effect::CancelTimer { timer });
        }
        self.stage = Stage::Idle;
        self.state = State::Passive { eligible };
        if eligible {
            Self::set(fx, DEAD, self.cfg.failover_after_ns);
        } else {
            fx.push(Effect::CancelTimer { timer: DEAD });
        }
    }

    fn step_down(&mut self, cause: StepDownCause, fx: &mut Vec<Effect>) {
        assert!(matches!(self.state, State::Active { .. }));
        fx.push(Effect::Observe(Observation::SteppedDown {
            key: self.cfg.key,
            cause,
        }));
    }

    /// The dead timer fired: fence the peer, then wait out the timeout.
    fn start_takeover(&mut self, fx: &mut Vec<Effect>) {
        let epoch = self.known_epoch + 1;
        self.state = State::Fencing { epoch };
        let key = self.cfg.key;
        self.send(fx, self.cfg.peer, Msg::Stonith { key, epoch });
        Self::set(fx, FENCE, self.cfg.fence_timeout_ns);
    }

    /// The fencing timeout passed: assume the peer is down and take over —
    /// with storage fencing, only once the storage took the reservation.
    fn promote(&mut self, epoch: u64, fx: &mut Vec<Effect>) {
        self.learn(epoch, fx);
        if self.cfg.storage_fence {
            self.reserve(epoch, fx);
        } else {
            self.become_active(epoch, fx);
        }
    }

    fn reserve(&mut self, epoch: u64, fx: &mut Vec<Effect>) {
        let req = self.req();
        self.state = State::Reserving { epoch, req };
        let key = self.cfg.key;
        self.send(fx, self.cfg.storage, Msg::Reserve { req, key, epoch });
        Self::set(fx, REQUEST, self.cfg.request_timeout_ns);
    }

    fn write(&self, req: ReqId, op: OpId, epoch: u64) -> Msg {
        Msg::Write {
            req,
            key: self.cfg.key,
            op,
            token: self.token(epoch),
            value: op,
        }
    }

    fn become_active(&mut self, epoch: u64, fx: &mut Vec<Effect>) {
        self.state = State::Active { epoch };
        self.stage = Stage::Idle;
        fx.push(Effect::Observe(Observation::BecameActive {
            key: self.cfg.key,
            epoch: Some(Token(epoch)),
        }));
        fx.push(Effect::CancelTimer { timer: DEAD });
        fx.push(Effect::CancelTimer { timer: REQUEST });
        self.heartbeat(epoch, fx);
        Self::set(fx, STEP, 0);
    }

    fn heartbeat(&self, epoch: u64, fx: &mut Vec<Effect>) {
        let key = self.cfg.key;
        self.send(fx, self.cfg.peer, Msg::PairHeartbeat { key, epoch });
        Self::set(fx, HEARTBEAT, self.cfg.heartbeat_ns);
    }

    fn on_heartbeat(&mut self, epoch: u64, fx: &mut Vec<Effect>) {
        self.learn(epoch, fx);
        match self.state {
            State::Booting | State::Off => {}
            State::Passive { .. } | State::Fencing { .. } | State::Reserving { .. } => {
                // The peer is alive: whatever we were about to do, don't.
                self.become_passive(true, fx);
            }
            State::Active { epoch: mine } => {
                // Equal epochs (two promotions that never heard of each
                // other): the second node of the pair yields.
                let newer = epoch > mine || (epoch == mine && self.cfg.index > 1);
                if newer {
                    self.step_down(StepDownCause::NewerActive, fx);
                    self.become_passive(true, fx);
                }
            }
        }
    }

    fn on_storage(&mut self, msg: Msg, fx: &mut Vec<Effect>) {
        let rejected_by = match msg {
            Msg::Reserved { req, ok, fence, .. } => match self.state {
                State::Reserving { epoch, req: r } if r == req && ok => {
                    return self.become_active(epoch, fx)
                }
                State::Reserving { req: r, .. } if r == req => fence,
                _ => return,
            },
            Msg::ReadRejected { req, fence, .. } | Msg::WriteRejected { req, fence, .. } => {
                let mine = matches!(
                    self.stage,
                    Stage::Reading { req: r, .. } | Stage::Writing { req: r, .. } if r == req
                );
                if !mine {
                    return;
                }
                fence.0
            }
            Msg::ReadOk { req, op, .. } => return self.on_read_ok(req, op, fx),
            Msg::WriteOk { req, .. } => return self.on_write_ok(req, fx),
            _ => return,
        };
        // A newer epoch holds the storage: we are (or would be) a stale active.
        self.learn(rejected_by, fx);
        if matches!(self.state, State::Active { .. }) {
            self.step_down(StepDownCause::FencedByStorage, fx);
        }
        self.become_passive(false, fx);
    }

    fn on_read_ok(&mut self, req: ReqId, op: OpId, fx: &mut Vec<Effect>) {
        if matches!(self.stage, Stage::Reading { req: r, op: o } if r == req && o == op) {
            fx.push(Effect::CancelTimer { timer: REQUEST });
            self.stage = Stage::Working { op };
            Self::set(fx, STEP, self.cfg.work_ns);
        }
    }

    fn on_write_ok(&mut self, req: ReqId, fx: &mut Vec<Effect>) {
        if matches!(self.stage, Stage::Writing { req: r, .. } if r == req) {
            fx.push(Effect::CancelTimer { timer: REQUEST });
            self.stage = Stage::Idle;
            Self::set(fx, STEP, self.cfg.think_ns);
        }
    }

    /// The write loop's timer: start the next op, or send the write.
    fn on_step(&mut self, fx: &mut Vec<Effect>) {
        let State::Active { epoch } = self.state else {
            return;
        };
        match self.stage {
            Stage::Idle => {
                let Some(op) = self.next_op() else { return };
                self.persist(fx);
                let req = self.req();
                self.stage = Stage::Reading { req, op };
                let read = Msg::Read {
                    req,
                    key: self.cfg.key,
                    op,
                    token: None,
                };
                self.send(fx, self.cfg.storage, read);
            }
            Stage::Working { op } => {
                let req = self.req();
                self.stage = Stage::Writing { req, op };
                let write = self.write(req, op, epoch);
                self.send(fx, self.cfg.storage, write);
            }
            Stage::Reading { .. } | Stage::Writing { .. } => return,
        }
        Self::set(fx, REQUEST, self.cfg.request_timeout_ns);
    }

    fn on_timer(&mut self, timer: TimerId, fx: &mut Vec<Effect>) {
        match (timer, self.state) {
            (BOOT, State::Booting) if self.cfg.starts_active && self.known_epoch == 0 => {
                self.promote(1, fx)
            }
            (BOOT, State::Booting) => self.become_passive(true, fx),
            (DEAD, State::Passive { eligible: true }) => self.start_takeover(fx),
            (FENCE, State::Fencing { epoch }) => self.promote(epoch, fx),
            (HEARTBEAT, State::Active { epoch }) => self.heartbeat(epoch, fx),
            (STEP, State::Active { .. }) => self.on_step(fx),
            // No answer: a retry takes a fresh epoch, since the lost reply may
            // have granted this one (reservations are strictly increasing).
            (REQUEST, State::Reserving { .. }) => {
                let epoch = self.known_epoch + 1;
                self.learn(epoch, fx);
                self.reserve(epoch, fx)
            }
            (REQUEST, State::Active { .. }) => {
                // The storage did not answer: give the op up (the abort the
                // ordered session stands for: it will not execute after the
                // next op's commands), start the next.
                self.stage = Stage::Idle;
                Self::set(fx, STEP, self.cfg.think_ns);
            }
            _ => {}
        }
    }
}

impl Node for PairNode {
    fn handle(&mut self, _clocks: Clocks, input: Input<'_>, fx: &mut Vec<Effect>) {
        if self.state == State::Off && !matches!(input, Input::Start { .. }) {
            return;
        }
        match input {
            Input::Start { recovered } => {
                // A restarted node boots passive: only a first boot is active.
                if let Some(bytes) = recovered {
                    self.recover(bytes);
                    self.incarnation += 1;
                }
                // A new session: its ids are above every id of the last one.
                self.next_req = first_req(self.incarnation);
                self.persist(fx);
                self.state = State::Booting;
                Self::set(fx, BOOT, self.cfg.start_ns);
            }
            Input::Message { from, msg } => match msg {
                Msg::PairHeartbeat { epoch, .. } if from == self.cfg.peer => {
                    self.on_heartbeat(epoch, fx)
                }
                Msg::Stonith { epoch, .. } if from == self.cfg.peer => {
                    self.learn(epoch, fx);
                    if matches!(self.state, State::Active { .. }) {
                        self.step_down(StepDownCause::Stonith, fx);
                    }
                    for timer in [STEP, REQUEST, HEARTBEAT, DEAD, FENCE, BOOT] {
                        fx.push(Effect::CancelTimer { timer });
                    }
                    self.state = State::Off;
                }
                _ if from == self.cfg.storage => self.on_storage(msg, fx),
                _ => {}
            },
            Input::Timer { timer } => self.on_timer(timer, fx),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::testkit;

    const MS: Nanos = 1_000_000;
    const A: NodeId = NodeId(0);
    const B: NodeId = NodeId(1);
    const STORAGE: NodeId = NodeId(2);

    fn cfg(index: u16, peer: NodeId, storage_fence: bool) -> PairConfig {
        PairConfig {
            peer,
            storage: STORAGE,
            key: Key(0),
            index,
            starts_active: index == 1,
            start_ns: 0,
            heartbeat_ns: 1_000 * MS,
            failover_after_ns: 10_000 * MS,
            fence_timeout_ns: 5_000 * MS,
            request_timeout_ns: 1_000 * MS,
            work_ns: 100 * MS,
            think_ns: 400 * MS,
            storage_fence,
        }
    }

    fn step(n: &mut PairNode, input: Input<'_>) -> Vec<Effect> {
        let mut fx = Vec::new();
        n.handle(
            Clocks {
                wall_ns: 0,
                mono_ns: 0,
            },
            input,
            &mut fx,
        );
        fx
    }

    fn observed(fx: &[Effect]) -> Vec<Observation> {
        fx.iter()
            .filter_map(|e| match e {
                Effect::Observe(o) => Some(*o),
                _ => None,
            })
            .collect()
    }

    fn sent(fx: &[Effect]) -> Vec<Msg> {
        testkit::sent(fx).into_iter().map(|(_, msg)| msg).collect()
    }

    fn timer(n: &mut PairNode, t: TimerId) -> Vec<Effect> {
        step(n, Input::Timer { timer: t })
    }

    fn storage_answer(n: &mut PairNode, write: Msg, fence: Option<u64>) -> Vec<Effect> {
        let Msg::Write { req, key, op, .. } = write else {
            panic!("expected a write, got {write:?}");
        };
        let msg = match fence {
            None => Msg::WriteOk { req, key, op },
            Some(f) => Msg::WriteRejected {
                req,
                key,
                op,
                fence: Token(f),
            },
        };
        step(n, Input::Message { from: STORAGE, msg })
    }

    #[test]
    fn the_passive_that_hears_nothing_fences_its_peer_then_assumes_it_worked() {
        let mut b = PairNode::new(cfg(2, A, false));
        step(&mut b, Input::Start { recovered: None });
        timer(&mut b, BOOT);
        step(
            &mut b,
            Input::Message {
                from: A,
                msg: Msg::PairHeartbeat {
                    key: Key(0),
                    epoch: 1,
                },
            },
        );
        let fx = timer(&mut b, DEAD);
        assert_eq!(
            sent(&fx),
            vec![Msg::Stonith {
                key: Key(0),
                epoch: 2
            }]
        );
        assert!(
            observed(&fx).is_empty(),
            "not active before the fence timeout"
        );
        let fx = timer(&mut b, FENCE);
        assert_eq!(
            observed(&fx),
            vec![Observation::BecameActive {
                key: Key(0),
                epoch: Some(Token(2))
            }]
        );
        assert!(
            !sent(&fx).iter().any(|m| matches!(m, Msg::Reserve { .. })),
            "GitHub's pair did not fence the storage"
        );
    }

    #[test]
    fn a_heartbeat_heard_while_fencing_cancels_the_takeover() {
        let mut b = PairNode::new(cfg(2, A, false));
        step(&mut b, Input::Start { recovered: None });
        timer(&mut b, BOOT);
        timer(&mut b, DEAD);
        let hb = Msg::PairHeartbeat {
            key: Key(0),
            epoch: 1,
        };
        step(&mut b, Input::Message { from: A, msg: hb });
        assert!(observed(&timer(&mut b, FENCE)).is_empty());
        assert_eq!(b.state, State::Passive { eligible: true });
    }

    #[test]
    fn a_node_that_receives_stonith_steps_down_and_stays_off() {
        let mut a = PairNode::new(cfg(1, B, false));
        step(&mut a, Input::Start { recovered: None });
        let fx = timer(&mut a, BOOT);
        assert_eq!(observed(&fx).len(), 1);
        let stonith = Msg::Stonith {
            key: Key(0),
            epoch: 2,
        };
        let fx = step(
            &mut a,
            Input::Message {
                from: B,
                msg: stonith,
            },
        );
        assert_eq!(
            observed(&fx),
            vec![Observation::SteppedDown {
                key: Key(0),
                cause: StepDownCause::Stonith
            }]
        );
        assert!(
            sent(&timer(&mut a, HEARTBEAT)).is_empty(),
            "off means silent"
        );
    }

    #[test]
    fn a_restarted_node_boots_passive_and_never_reuses_an_op_id() {
        let mut a = PairNode::new(cfg(1, B, false));
        step(&mut a, Input::Start { recovered: None });
        timer(&mut a, BOOT);
        let fx = timer(&mut a, STEP);
        let Some(Msg::Read { op, .. }) = sent(&fx).first().copied() else {
            panic!("the active reads");
        };
        assert_eq!(op, OpId(1001));
        let record = fx
            .iter()
            .rev()
            .find_map(|e| match e {
                Effect::Persist { record, .. } => Some(record.to_vec()),
                _ => None,
            })
            .expect("the op counter is synced");
        let mut again = PairNode::new(cfg(1, B, false));
        step(
            &mut again,
            Input::Start {
                recovered: Some(&record),
            },
        );
        let fx = timer(&mut again, BOOT);
        assert!(observed(&fx).is_empty(), "only a first boot is active");
        assert_eq!(again.state, State::Passive { eligible: true });
        timer(&mut again, DEAD);
        timer(&mut again, FENCE);
        let Some(Msg::Read { op, .. }) = sent(&timer(&mut again, STEP)).first().copied() else {
            panic!("the re-promoted node reads");
        };
        assert_eq!(op, OpId(1002));
        assert_eq!(again.known_epoch, 2);
    }

    #[test]
    fn with_storage_fencing_promotion_waits_for_the_reservation_and_a_rejection_steps_down() {
        let mut b = PairNode::new(cfg(2, A, true));
        step(&mut b, Input::Start { recovered: None });
        timer(&mut b, BOOT);
        timer(&mut b, DEAD);
        let fx = timer(&mut b, FENCE);
        assert!(
            observed(&fx).is_empty(),
            "active only once the storage agreed"
        );
        let Some(Msg::Reserve { req, key, epoch }) = sent(&fx).first().copied() else {
            panic!("promotion starts with a reservation");
        };
        assert_eq!(epoch, 1);
        let granted = Msg::Reserved {
            req,
            key,
            ok: true,
            fence: 1,
        };
        let fx = step(
            &mut b,
            Input::Message {
                from: STORAGE,
                msg: granted,
            },
        );
        assert_eq!(observed(&fx).len(), 1);
        let fx = timer(&mut b, STEP);
        let Some(Msg::Read { req, op, token, .. }) = sent(&fx).first().copied() else {
            panic!("the loop starts with a read");
        };
        assert_eq!(token, None, "reads are not fenced");
        let ok = Msg::ReadOk {
            req,
            key,
            op,
            value: OpId(0),
        };
        step(
            &mut b,
            Input::Message {
                from: STORAGE,
                msg: ok,
            },
        );
        let write = sent(&timer(&mut b, STEP))[0];
        assert!(matches!(
            write,
            Msg::Write {
                token: Some(Token(1)),
                ..
            }
        ));
        let fx = storage_answer(&mut b, write, Some(5));
        assert_eq!(
            observed(&fx),
            vec![Observation::SteppedDown {
                key: Key(0),
                cause: StepDownCause::FencedByStorage
            }]
        );
        assert_eq!(b.state, State::Passive { eligible: false });
        assert_eq!(b.known_epoch, 5, "the next promotion goes above the fence");
    }
}
