//! One live worker: a real process (`fencesim live-worker`, hidden) that
//! drives the simulator's own sans-IO worker ([`crate::protocol::worker::Worker`])
//! with real I/O — the same state machine, step for step, that every
//! simulated run uses.
//!
//! Why a driver and not a re-implementation: the live mode exists to check
//! the simulator's models against reality, so the worker side must be the
//! code the simulator runs, not a second copy of the discipline. The driver
//! is the machine's "network": an `Effect::Send` to the coordinator becomes
//! Redis calls (`SET key owner NX PX ttl` + `INCR` beside it → `Granted`,
//! nil → `Busy`; `DEL` or the Lua compare-and-delete → `Released`), one to
//! the resource becomes PostgreSQL statements (`SELECT` → `ReadOk`, the
//! scenario's `UPDATE` → `WriteOk`, or `WriteRejected` when 0 rows were
//! updated); timers run on CLOCK_MONOTONIC; `Persist` goes to a state file,
//! so a worker SIGKILLed and restarted boots with `Input::Start { recovered }`
//! exactly as a simulated crash does (op ids never repeat).
//!
//! Each server is reached through a *lane*: a thread that owns one
//! connection and executes one request at a time. A request that gets no
//! answer (a dropped or cut connection) is the machine's business: its
//! request timer fires and it retransmits, and the driver then opens a
//! fresh lane (a new connection) rather than queue behind the stuck one.
//! The fresh PostgreSQL connections are made at set-up, one per retry the
//! machine may send (a client's pool of idle connections): a new backend
//! costs a fork and an authentication, which on a loaded machine took
//! longer than the request timeout, so every retransmission was still
//! connecting when the next timer fired and the retried write never left
//! (the scenario is about the retransmission, not about connecting).
//!
//! Where the resource's semantics live in PostgreSQL, not in the worker:
//! `check-then-update` is the resource's non-atomic check (a `SELECT` of the
//! fence, then the plain `UPDATE`, two statements), and with
//! `select-for-update` the database is the lock — `Acquire` is granted by
//! the driver at once (no token) and the row lock is taken by the read's
//! `SELECT … FOR UPDATE`, committed with the write.
//!
//! Talking to the harness: every observation is one JSON line on stdout
//! with a CLOCK_MONOTONIC timestamp; the worker waits for `start` on stdin,
//! and at its gate step (the protocol point a scenario stops it at) prints
//! `{"gate": step}` and waits for a line on stdin. The harness freezes or
//! kills the process *before* answering, so the fault is in force exactly
//! after that step returned.

use std::collections::BTreeMap;
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context, Result};

mod args;
mod lanes;
mod pg;
mod setup;

pub use args::WorkerArgs;
use lanes::{spawn_lane, Conn, Lane, Reply, Req};
use setup::{wait_line, Setup};

use super::common::ops::op_id;
use super::emit::{emit, emit_line};
use super::record::{Line, Record};
use super::redis::lane::RedisConfig;
use super::{lock_key, monotonic_ns, token_key, LockKind};
use crate::protocol::client::LockKind as ClientLock;
use crate::protocol::msg::{Key, Msg};
use crate::protocol::node::{Clocks, Effect, Input, Node, NodeId, Observation, TimerId};
use crate::protocol::worker::{MoreLocks, Worker, WorkerConfig};

/// The machine's addresses for the two servers (only the driver reads them).
const COORD: NodeId = NodeId(1000);
const RESOURCE: NodeId = NodeId(1001);

/// How often the machine retransmits an unanswered request.
const MAX_RETRIES: u32 = 3;

/// The machine's configuration for a live worker: one op at a time on one
/// key, the token sent with reads and writes (the SQL decides whether the
/// fence is checked), no renewal, no client-side lease check.
fn machine_config(args: &WorkerArgs) -> WorkerConfig {
    WorkerConfig {
        id: NodeId(args.index - 1),
        index: args.index,
        key: Key(0),
        coordinator: COORD,
        resource: RESOURCE,
        start_ns: 0,
        ops: args.ops,
        work_ns: args.work_ms * 1_000_000,
        think_ns: 0,
        retry_ns: args.retry_ms * 1_000_000,
        request_timeout_ns: args.request_timeout_ms * 1_000_000,
        max_retries: MAX_RETRIES,
        send_token: true,
        token_on_reads: true,
        check_lease_before_write: false,
        renew_every_ns: None,
        write_if_match: false,
        lock: ClientLock::Lease,
        effect: None,
        more_locks: MoreLocks::NONE,
    }
}

fn clocks() -> Clocks {
    // A live worker's wall clock is the machine's, as a real client's is.
    let wall = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    Clocks {
        wall_ns: i64::try_from(wall.as_nanos()).unwrap_or(i64::MAX),
        mono_ns: monotonic_ns(),
    }
}

pub fn run(args: &WorkerArgs) -> Result<()> {
    if args.index == 0 {
        bail!("--index is 1-based");
    }
    let redis = RedisConfig {
        urls: args
            .redis
            .split(',')
            .filter(|u| !u.is_empty())
            .map(str::to_string)
            .collect(),
        owner_prefix: format!("{}:{}", args.name, std::process::id()),
        lock_key: format!("{}{}", args.key_prefix, lock_key(args.document)),
        token_key: format!("{}{}", args.key_prefix, token_key(args.document)),
        ttl_ms: args.ttl_ms,
        compare_and_delete: args.lock == LockKind::RedisSetNxCad,
    };
    let setup = Arc::new(Setup {
        args: args.clone(),
        redis: Arc::new(redis),
    });
    // Connections are made before `ready`: set-up is not part of the trial.
    let coord_conn = Conn::lock(&setup, true)?;
    let pg_conn = Conn::pg(&setup, true)?;
    let spare_pg = (0..MAX_RETRIES)
        .map(|_| Conn::pg(&setup, true))
        .collect::<Result<Vec<_>>>()?;
    let recovered = match &args.state_file {
        Some(p) if p.exists() => {
            let bytes = std::fs::read(p).with_context(|| format!("reading {}", p.display()))?;
            // The machine asserts its record's size; a file of another size
            // is a harness fault, said as one.
            if bytes.len() != 8 && bytes.len() != 12 {
                bail!(
                    "{} holds {} bytes, not a worker's 8- or 12-byte record",
                    p.display(),
                    bytes.len()
                );
            }
            Some(bytes)
        }
        _ => None,
    };
    let (reply_tx, reply_rx) = mpsc::channel::<Reply>();
    let mut d = Driver {
        args,
        setup,
        lanes: BTreeMap::new(),
        next_lane: 0,
        reply_tx,
        timers: BTreeMap::new(),
        op: 0,
        spare_pg,
    };
    d.open_lane(COORD, coord_conn);
    d.open_lane(RESOURCE, pg_conn);

    emit_line(&Line::Ready);
    wait_line()?;
    if recovered.is_some() {
        emit(Record::Restarted);
    }
    drive(&mut d, recovered.as_deref(), &reply_rx)
}

/// Replaces the state file in one step: the record goes to a file beside
/// it, which is then renamed over it. A `Persist` is atomic in the model
/// (the simulator's disk keeps a whole record or the previous one); a plain
/// truncate-and-write let a SIGKILL between the two leave an empty or short
/// file that the restarted worker could not read (the nemesis hit it).
fn persist_atomically(p: &std::path::Path, record: &[u8]) -> Result<()> {
    let mut tmp = p.as_os_str().to_owned();
    tmp.push(".writing");
    let tmp = std::path::PathBuf::from(tmp);
    std::fs::write(&tmp, record).with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, p)
        .with_context(|| format!("renaming {} over {}", tmp.display(), p.display()))
}

/// Runs the machine until its workload is done: its effects carried out,
/// its timers fired, its servers' answers delivered.
fn drive(d: &mut Driver, recovered: Option<&[u8]>, reply_rx: &mpsc::Receiver<Reply>) -> Result<()> {
    let args = d.args;
    let give_up = monotonic_ns() + args.give_up_ms * 1_000_000;
    let mut machine = Worker::new(machine_config(args));
    let mut fx = Vec::new();
    machine.handle(clocks(), Input::Start { recovered }, &mut fx);
    loop {
        let mut done = false;
        for effect in fx.drain(..) {
            done |= d.apply(effect)?;
        }
        if done {
            return Ok(());
        }
        let now = monotonic_ns();
        if now > give_up {
            bail!("worker {} not done after {} ms", args.name, args.give_up_ms);
        }
        let due = d
            .timers
            .iter()
            .min_by_key(|(_, at)| **at)
            .map(|(t, at)| (*t, *at));
        if let Some((timer, at)) = due.filter(|(_, at)| *at <= now) {
            let _ = at;
            d.timers.remove(&timer);
            machine.handle(clocks(), Input::Timer { timer }, &mut fx);
            continue;
        }
        let wait_ns = due.map_or(50_000_000, |(_, at)| at - now).min(50_000_000);
        match reply_rx.recv_timeout(Duration::from_nanos(wait_ns)) {
            Ok(Reply { from, lane, msg }) => {
                if let Some((current, l)) = d.lanes.get_mut(&from) {
                    if *current == lane {
                        l.busy = false;
                    }
                }
                // Late replies from an abandoned lane are delivered too, as a
                // network would; the machine ignores answers it no longer awaits.
                if let Some(msg) = msg {
                    machine.handle(clocks(), Input::Message { from, msg }, &mut fx);
                }
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => bail!("every lane is gone"),
        }
    }
}

/// What carries out the machine's effects with real I/O: a lane per server
/// it talks to, its timers on CLOCK_MONOTONIC, the op it is on.
struct Driver<'a> {
    args: &'a WorkerArgs,
    setup: Arc<Setup>,
    /// The current lane to each server, with its number.
    lanes: BTreeMap<NodeId, (u64, Lane)>,
    next_lane: u64,
    reply_tx: mpsc::Sender<Reply>,
    /// Each timer's deadline (monotonic ns).
    timers: BTreeMap<TimerId, u64>,
    op: u64,
    /// PostgreSQL connections made at set-up for retransmissions' fresh lanes.
    spare_pg: Vec<Conn>,
}

impl Driver<'_> {
    /// A new lane to `to` over `conn`, replacing the current one.
    fn open_lane(&mut self, to: NodeId, conn: Conn) {
        let lane = spawn_lane(&self.setup, to, self.next_lane, conn, &self.reply_tx);
        self.lanes.insert(to, (self.next_lane, lane));
        self.next_lane += 1;
    }

    /// Carries out one effect; true once the workload is done.
    fn apply(&mut self, effect: Effect) -> Result<bool> {
        let args = self.args;
        match effect {
            Effect::Send { to, msg } => self.send(to, msg)?,
            Effect::SetTimer { timer, after_ns } => {
                self.timers
                    .insert(timer, monotonic_ns().saturating_add(after_ns));
            }
            Effect::CancelTimer { timer } => {
                self.timers.remove(&timer);
            }
            Effect::Persist { record, .. } => {
                // The record's first word is ops_started: the op being begun.
                if record.len() >= 4 {
                    let started = u32::from_le_bytes([record[0], record[1], record[2], record[3]]);
                    self.op = op_id(usize::from(args.index) - 1, u64::from(started));
                }
                if let Some(p) = &args.state_file {
                    persist_atomically(p, &record)?;
                }
            }
            Effect::Observe(Observation::WorkloadDone) => {
                emit(Record::WorkloadDone);
                return Ok(true);
            }
            Effect::Observe(Observation::OpAbandoned { op }) => {
                emit(Record::OpAbandoned {
                    op: Some(op.0),
                    detail: None,
                });
            }
            Effect::Observe(_) => {}
        }
        Ok(false)
    }

    /// A request on `to`'s lane; while the previous request is stuck (a
    /// retransmission), on a fresh connection, as a real client reconnects.
    fn send(&mut self, to: NodeId, msg: Msg) -> Result<()> {
        let (_, lane) = self
            .lanes
            .get_mut(&to)
            .context("message to an unknown node")?;
        if lane.busy {
            let conn = match (to == COORD, self.spare_pg.pop()) {
                (true, _) => Conn::lock(&self.setup, false)?,
                (false, Some(spare)) => spare,
                (false, None) => Conn::pg(&self.setup, false)?,
            };
            self.open_lane(to, conn);
        }
        let (_, lane) = self.lanes.get_mut(&to).context("lane")?;
        lane.busy = true;
        lane.tx
            .send(Req { msg, op: self.op })
            .map_err(|_| anyhow::anyhow!("lane thread gone"))
    }
}
