//! The lock domain as async Rust on madsim: a lease coordinator, workers
//! running the article's read-modify-write loop, and a (fenced or unfenced)
//! document store, written against madsim's `net::Endpoint` and `time`, run
//! under madsim with a seed — and judged by fencesim's checker.
//!
//! The scenario file decides everything: the protocol variant (fenced-cas:
//! tokens + a store that checks them; ttl-lease-del / redis-set-nx: no
//! fence), the workload, network latency and loss, and the faults — pause
//! (madsim `pause`/`resume` of the node), crash with restart (madsim
//! `kill`/`restart`; the node boots again from what it persisted) and
//! partitions (madsim `clog_link` between every pair across the cut).
//!
//! As in fencesim's own simulator, the history is recorded by the harness
//! in the transport (every send and every delivery passes through [`Net`]),
//! not reported by the nodes, with fencesim's `Recorder`, so it is the same
//! schema (`fencesim check-history` reads it). Unsupported scenario
//! features (message delay spikes, per-link delay/drop faults, clock skew)
//! are refused up front rather than silently ignored.
//!
//! Compile with `RUSTFLAGS="--cfg madsim"` (see `run.sh`).

#![cfg(madsim)]

use std::collections::BTreeMap;
use std::future::{poll_fn, Future};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Poll, Waker};

use fencesim::history::{Event, History, Kind};
use fencesim::protocol::coordinator::{CoordinatorConfig, ReleaseStyle};
use fencesim::protocol::resource::FenceCheck;
use fencesim::protocol::worker::WorkerConfig;
use fencesim::protocol::{Key, Msg, NodeId, Observation, OpId, Role, Token};
use fencesim::sim::faults::resolve_random;
use fencesim::sim::recorder::{lifecycle, Recorder};
use fencesim::sim::{ClockSpec, Fault, Options, When};
use madsim::net::{Endpoint, NetSim};
use madsim::runtime::{Handle, NodeHandle, Runtime};
use madsim::time::{sleep, timeout, Duration, Instant};

const TAG: u64 = 7;
const PORT: u16 = 7000;

fn addr(id: NodeId) -> SocketAddr {
    let [hi, lo] = (id.0 + 1).to_be_bytes();
    SocketAddr::new(IpAddr::V4(Ipv4Addr::new(10, 0, hi, lo)), PORT)
}

fn ns(d: u64) -> Duration {
    Duration::from_nanos(d)
}

/// What a scenario asks for that this runner cannot do faithfully.
pub fn unsupported(opts: &Options) -> Option<String> {
    let n = &opts.network;
    if n.delay_probability > 0.0 {
        return Some("network.delay_probability (delay spikes)".into());
    }
    let partitions = opts.random.partition_probability > 0.0
        || opts
            .faults
            .iter()
            .any(|f| matches!(f, Fault::Partition { .. }));
    if partitions && n.partition_hits_in_flight {
        // madsim checks a clogged link when a message is sent, never at delivery.
        return Some(
            "partitions with network.partition_hits_in_flight = true (set it false)".into(),
        );
    }
    if opts.nodes.iter().any(|n| n.clock != ClockSpec::default()) {
        return Some("[clock] skew, drift or jumps".into());
    }
    let is_pair = |r: &Role| matches!(r, Role::Alt(fencesim::protocol::alt_role::AltRole::Pair(_)));
    if opts.nodes.iter().any(|n| is_pair(&n.role)) {
        return Some("active/passive pairs (github-2012-pair)".into());
    }
    let coordinators = opts
        .nodes
        .iter()
        .filter(|n| matches!(n.role, Role::Coordinator(_)));
    if coordinators.count() != 1 {
        return Some("replicated coordinators (failover)".into());
    }
    for n in &opts.nodes {
        match n.role {
            Role::Worker(w) if w.renew_every_ns.is_some() => {
                return Some("lease renewal (workload.renew_every_ms)".into())
            }
            Role::Worker(w) if !w.more_locks.is_empty() => {
                return Some("multi-lock workers ([[worker]] locks)".into())
            }
            Role::Resource(r) if r.volatile_fence => return Some("a volatile fence".into()),
            Role::Server(_) => {
                return Some(
                    "client-decided lock servers (zk-sequential, dynamodb-heartbeat, redlock, etcd-mutex)"
                        .into(),
                )
            }
            Role::Alt(_) => {
                return Some("effect sinks, outboxes and the article's alternatives".into())
            }
            Role::Resource(r) if matches!(r.check, FenceCheck::GenerationMatch) => {
                return Some("the object store's conditional write (object-store-cas)".into())
            }
            Role::Resource(r) if matches!(r.check, FenceCheck::CheckThenWrite { .. }) => {
                return Some("the check-then-write store".into())
            }
            _ => {}
        }
    }
    opts.faults.iter().find_map(|f| match f {
        Fault::Delay { .. } | Fault::Drop { .. } | Fault::Duplicate { .. } => {
            Some("per-link delay/drop/duplicate faults".into())
        }
        Fault::Failover { .. } => Some("failover faults".into()),
        Fault::ClockJump { .. } => Some("clock_jump faults".into()),
        _ => None,
    })
}

/// What survives a crash: the node's synced record.
#[derive(Clone, Default)]
struct Durable {
    /// worker: [ops_started, attempts]; coordinator: [token counter].
    words: Vec<u64>,
    /// resource: key -> (value, write fence, read fence).
    rows: BTreeMap<Key, (u64, u64, u64)>,
}

struct Trigger {
    fault: usize,
    node: NodeId,
    kind: Kind,
    nth: u32,
    seen: u32,
}

/// The harness side: history, fault triggers, durable storage.
struct Shared {
    opts: Options,
    start: Instant,
    recorder: Recorder,
    history: History,
    seq: u64,
    script: Vec<Fault>,
    triggers: Vec<Trigger>,
    /// madsim's handle for each fencesim node, and the harness's own node.
    nodes: Vec<NodeHandle>,
    harness: Option<NodeHandle>,
    durable: BTreeMap<u16, Durable>,
    workers_left: usize,
    done: Vec<bool>,
    finished: Option<Waker>,
}

#[derive(Clone)]
struct Ctx(Arc<Mutex<Shared>>);

impl Ctx {
    fn lock(&self) -> MutexGuard<'_, Shared> {
        self.0.lock().expect("harness state")
    }

    fn record(&self, e: Event) {
        let fired = {
            let mut s = self.lock();
            s.record(e)
        };
        for i in fired {
            self.apply_fault(i);
        }
    }

    fn observe(&self, node: NodeId, obs: Observation) {
        let e = {
            let mut s = self.lock();
            let key = match s.opts.nodes[node.0 as usize].role {
                Role::Worker(w) => Some(w.key.0),
                _ => None,
            };
            if obs == Observation::WorkloadDone && !s.done[node.0 as usize] {
                s.done[node.0 as usize] = true;
                s.workers_left -= 1;
                if s.workers_left == 0 {
                    if let Some(w) = s.finished.take() {
                        w.wake();
                    }
                }
            }
            let mut records = Vec::new();
            s.recorder.on_observe(node, &obs, key, &mut records);
            records
        };
        for e in e {
            self.record(e);
        }
    }

    fn durable(&self, node: NodeId) -> Option<Durable> {
        self.lock().durable.get(&node.0).cloned()
    }

    fn persist(&self, node: NodeId, d: Durable) {
        self.lock().durable.insert(node.0, d);
    }

    /// Runs fault `i` on the harness node: pause/resume, kill/restart, clog/unclog.
    fn apply_fault(&self, i: usize) {
        let (fault, harness, target) = {
            let s = self.lock();
            let fault = s.script[i].clone();
            let target = match &fault {
                Fault::Pause { node, .. } | Fault::Crash { node, .. } => {
                    Some(s.nodes[node.0 as usize].id())
                }
                _ => None,
            };
            (fault, s.harness.clone().expect("harness node"), target)
        };
        let ctx = self.clone();
        harness.spawn(async move {
            let h = Handle::current();
            match fault {
                Fault::Pause {
                    node, duration_ns, ..
                } => {
                    let target = target.expect("pause target");
                    h.pause(target);
                    let detail = format!("for {}ms", duration_ns / 1_000_000);
                    ctx.record(lifecycle(node, Kind::Pause, Some(detail)));
                    sleep(ns(duration_ns)).await;
                    h.resume(target);
                    ctx.record(lifecycle(node, Kind::Resume, None));
                }
                Fault::Crash {
                    node,
                    restart_after_ns,
                    ..
                } => {
                    let target = target.expect("crash target");
                    h.kill(target);
                    ctx.record(lifecycle(node, Kind::Crash, None));
                    if let Some(after) = restart_after_ns {
                        sleep(ns(after)).await;
                        ctx.record(lifecycle(node, Kind::Restart, None));
                        h.restart(target);
                    }
                }
                Fault::Partition {
                    duration_ns,
                    side_a,
                    side_b,
                    one_way,
                    ..
                } => {
                    let ids: Vec<_> = ctx.lock().nodes.iter().map(|n| n.id()).collect();
                    let net = NetSim::current();
                    let links = |f: &dyn Fn(madsim::task::NodeId, madsim::task::NodeId)| {
                        for a in &side_a {
                            for b in &side_b {
                                f(ids[a.0 as usize], ids[b.0 as usize]);
                                if !one_way {
                                    f(ids[b.0 as usize], ids[a.0 as usize]);
                                }
                            }
                        }
                    };
                    links(&|a, b| net.clog_link(a, b));
                    let first = side_a.first().copied().unwrap_or(NodeId(0));
                    let detail = format!("{} links clogged", side_a.len() * side_b.len());
                    ctx.record(lifecycle(first, Kind::Partition, Some(detail)));
                    sleep(ns(duration_ns)).await;
                    links(&|a, b| net.unclog_link(a, b));
                    ctx.record(lifecycle(first, Kind::Heal, None));
                }
                Fault::Delay { .. }
                | Fault::Drop { .. }
                | Fault::Duplicate { .. }
                | Fault::Failover { .. }
                | Fault::ClockJump { .. } => unreachable!("refused up front"),
            }
        });
    }
}

impl Shared {
    fn now_ns(&self) -> u64 {
        Instant::now().duration_since(self.start).as_nanos() as u64
    }

    /// Appends a record; returns the faults it triggers.
    fn record(&mut self, mut e: Event) -> Vec<usize> {
        self.seq += 1;
        e.seq = self.seq;
        e.t_true_ns = self.now_ns();
        let mut fired = Vec::new();
        for t in &mut self.triggers {
            if t.seen < t.nth && t.node.0 == e.node && t.kind == e.kind {
                t.seen += 1;
                if t.seen == t.nth {
                    fired.push(t.fault);
                }
            }
        }
        self.history.events.push(e);
        fired
    }
}

/// A node's transport: every message in and out is recorded here.
struct Net {
    ctx: Ctx,
    me: NodeId,
    ep: Endpoint,
}

impl Net {
    async fn bind(ctx: Ctx, me: NodeId) -> Net {
        let ep = Endpoint::bind(addr(me)).await.expect("bind");
        Net { ctx, me, ep }
    }

    async fn send(&self, to: NodeId, msg: Msg) {
        let to = if to == NodeId::COORD_GROUP {
            self.ctx.lock().opts.coordinator_primary
        } else {
            to
        };
        let e = {
            let mut s = self.ctx.lock();
            let now = s.now_ns();
            let mut records = Vec::new();
            s.recorder.on_send(now, self.me, to, &msg, &mut records);
            records
        };
        for e in e {
            self.ctx.record(e);
        }
        let _ = self
            .ep
            .send_to_raw(addr(to), TAG, Box::new((self.me, msg)))
            .await;
    }

    async fn recv(&self) -> (NodeId, Msg) {
        loop {
            let Ok((payload, _)) = self.ep.recv_from_raw(TAG).await else {
                continue;
            };
            let Ok(m) = payload.downcast::<(NodeId, Msg)>() else {
                continue;
            };
            let (from, msg) = *m;
            let mut records = Vec::new();
            self.ctx
                .lock()
                .recorder
                .on_deliver(from, self.me, &msg, false, &mut records);
            for e in records {
                self.ctx.record(e);
            }
            return (from, msg);
        }
    }

    /// Sends `msg` and waits for the answer with its request id,
    /// retransmitting unchanged on timeout; `None` when retries run out.
    async fn request(&self, to: NodeId, msg: Msg, cfg: &WorkerConfig) -> Option<Msg> {
        let req = msg.words()[0];
        for _ in 0..=cfg.max_retries {
            self.send(to, msg).await;
            let deadline = Instant::now() + ns(cfg.request_timeout_ns);
            loop {
                let left = deadline.saturating_duration_since(Instant::now());
                match timeout(left, self.recv()).await {
                    Ok((_, reply)) if reply.words()[0] == req => return Some(reply),
                    Ok(_) => continue, // late answer to an earlier request
                    Err(_) => break,
                }
            }
        }
        None
    }
}

async fn worker(ctx: Ctx, me: NodeId, cfg: WorkerConfig) {
    let net = Net::bind(ctx.clone(), me).await;
    let recovered = ctx.durable(me);
    let first_boot = recovered.is_none();
    let mut d = recovered.unwrap_or(Durable {
        words: vec![0, 0],
        ..Durable::default()
    });
    if first_boot {
        sleep(ns(cfg.start_ns)).await;
    }
    let mut req: u32 = 0;
    let next = |r: &mut u32| {
        *r += 1;
        *r
    };
    while d.words[0] < cfg.ops as u64 {
        d.words[0] += 1;
        ctx.persist(me, d.clone());
        let op = OpId(cfg.index as u64 * 1000 + d.words[0]);
        let (owner, token) = loop {
            d.words[1] += 1;
            ctx.persist(me, d.clone());
            let owner = ((me.0 as u64) << 32) | d.words[1];
            let acquire = Msg::Acquire {
                req: next(&mut req),
                key: cfg.key,
                owner,
            };
            match net.request(cfg.coordinator, acquire, &cfg).await {
                Some(Msg::Granted { token, .. }) => break (owner, token),
                _ => sleep(ns(cfg.retry_ns)).await,
            }
        };
        let read = Msg::Read {
            req: next(&mut req),
            key: cfg.key,
            op,
            token: if cfg.token_on_reads { token } else { None },
        };
        let wrote = match net.request(cfg.resource, read, &cfg).await {
            Some(Msg::ReadOk { .. }) => {
                sleep(ns(cfg.work_ns)).await; // the update being computed
                let write = Msg::Write {
                    req: next(&mut req),
                    key: cfg.key,
                    op,
                    token: if cfg.send_token { token } else { None },
                    value: op,
                };
                matches!(
                    net.request(cfg.resource, write, &cfg).await,
                    Some(Msg::WriteOk { .. })
                )
            }
            _ => false,
        };
        if !wrote {
            ctx.observe(me, Observation::OpAbandoned { op });
        }
        let release = Msg::Release {
            req: next(&mut req),
            key: cfg.key,
            owner,
        };
        net.request(cfg.coordinator, release, &cfg).await;
        sleep(ns(cfg.think_ns)).await;
    }
    ctx.observe(me, Observation::WorkloadDone);
}

async fn coordinator(ctx: Ctx, me: NodeId, cfg: CoordinatorConfig) {
    let net = Net::bind(ctx.clone(), me).await;
    let mut counter = ctx.durable(me).map_or(0, |d| d.words[0]);
    // key -> (owner, token, expiry); volatile, as Redis without AOF fsync.
    let mut leases: BTreeMap<Key, (u64, Option<Token>, Instant)> = BTreeMap::new();
    loop {
        let next_expiry = leases.values().map(|l| l.2).min();
        let got = match next_expiry {
            Some(at) => timeout(at.saturating_duration_since(Instant::now()), net.recv())
                .await
                .ok(),
            None => Some(net.recv().await),
        };
        let now = Instant::now();
        let expired: Vec<(Key, u64)> = leases
            .iter()
            .filter(|(_, l)| l.2 <= now)
            .map(|(k, l)| (*k, l.0))
            .collect();
        for (key, owner) in expired {
            leases.remove(&key);
            ctx.observe(me, Observation::LeaseExpired { key, owner });
        }
        let Some((from, msg)) = got else { continue };
        let reply = match msg {
            Msg::Acquire { req, key, owner } => match leases.get(&key) {
                Some(&(held, token, expires)) if held == owner => Msg::Granted {
                    req,
                    key,
                    owner,
                    token,
                    ttl_ns: expires.saturating_duration_since(now).as_nanos() as u64,
                },
                Some(_) => Msg::Busy { req, key },
                None => {
                    let token = cfg.tokens.then(|| {
                        counter += 1;
                        // Durable before the grant leaves.
                        ctx.persist(
                            me,
                            Durable {
                                words: vec![counter],
                                ..Durable::default()
                            },
                        );
                        Token(counter)
                    });
                    leases.insert(key, (owner, token, now + ns(cfg.lease_ttl_ns)));
                    Msg::Granted {
                        req,
                        key,
                        owner,
                        token,
                        ttl_ns: cfg.lease_ttl_ns,
                    }
                }
            },
            Msg::Release { req, key, owner } => {
                let removed = match (cfg.release, leases.get(&key)) {
                    (ReleaseStyle::Del, Some(l)) => Some(l.0),
                    (ReleaseStyle::CompareAndDelete, Some(l)) if l.0 == owner => Some(l.0),
                    _ => None,
                };
                if removed.is_some() {
                    leases.remove(&key);
                }
                Msg::Released { req, key, removed }
            }
            _ => continue,
        };
        net.send(from, reply).await;
    }
}

async fn resource(ctx: Ctx, me: NodeId, check: FenceCheck) {
    let net = Net::bind(ctx.clone(), me).await;
    let mut d = ctx.durable(me).unwrap_or_default();
    loop {
        let (from, msg) = net.recv().await;
        let reply = match msg {
            Msg::Read {
                req,
                key,
                op,
                token,
            } => {
                let row = d.rows.entry(key).or_default();
                let fence = Token(row.1.max(row.2));
                match (check, token) {
                    (
                        FenceCheck::Cas {
                            fence_reads: true, ..
                        },
                        t,
                    ) if t.is_none_or(|t| t.0 < row.1 || t.0 < row.2) => Msg::ReadRejected {
                        req,
                        key,
                        op,
                        fence,
                    },
                    (
                        FenceCheck::Cas {
                            fence_reads: true, ..
                        },
                        Some(t),
                    ) => {
                        row.2 = row.2.max(t.0);
                        ctx.persist(me, d.clone());
                        Msg::ReadOk {
                            req,
                            key,
                            op,
                            value: OpId(d.rows[&key].0),
                        }
                    }
                    _ => Msg::ReadOk {
                        req,
                        key,
                        op,
                        value: OpId(row.0),
                    },
                }
            }
            Msg::Write {
                req,
                key,
                op,
                token,
                value,
            } => {
                let row = d.rows.entry(key).or_default();
                let fence = Token(row.1.max(row.2));
                let accept = match check {
                    FenceCheck::None => true,
                    FenceCheck::CheckThenWrite { .. } | FenceCheck::GenerationMatch => {
                        unreachable!("refused up front")
                    }
                    FenceCheck::Cas { strict, .. } => token.is_some_and(|t| {
                        let above = if strict { t.0 > row.1 } else { t.0 >= row.1 };
                        above && t.0 >= row.2
                    }),
                };
                if accept {
                    row.0 = value.0;
                    row.1 = row.1.max(token.map_or(0, |t| t.0));
                    // Fence and value durable in one step, before the answer.
                    ctx.persist(me, d.clone());
                    Msg::WriteOk { req, key, op }
                } else {
                    Msg::WriteRejected {
                        req,
                        key,
                        op,
                        fence,
                    }
                }
            }
            _ => continue,
        };
        net.send(from, reply).await;
    }
}

fn spawn_node(ctx: &Ctx, id: NodeId, role: Role) -> NodeHandle {
    let name = ctx.lock().opts.nodes[id.0 as usize].name.clone();
    let c = ctx.clone();
    let init = move || -> std::pin::Pin<Box<dyn Future<Output = ()>>> {
        let c = c.clone();
        match role {
            Role::Worker(cfg) => Box::pin(worker(c, id, cfg)),
            Role::Coordinator(cfg) => Box::pin(coordinator(c, id, cfg)),
            Role::Resource(cfg) => Box::pin(resource(c, id, cfg.check)),
            Role::Server(_) | Role::Alt(_) => unreachable!("refused up front by unsupported()"),
        }
    };
    Handle::current()
        .create_node()
        .name(name)
        .ip(addr(id).ip())
        .init(init)
        .build()
}

/// Runs one seed of `opts` under madsim and returns the history the
/// transport recorded. Panics on scenarios [`unsupported`] refuses.
pub fn run_seed(opts: &Options, seed: u64) -> History {
    if let Some(what) = unsupported(opts) {
        panic!("the madsim runner does not support {what}");
    }
    let mut config = madsim::Config::default();
    config.net.send_latency = ns(opts.network.latency_min_ns)..ns(opts.network.latency_max_ns + 1);
    config.net.packet_loss_rate = opts.network.loss_probability;
    let rt = Runtime::with_seed_and_config(seed, config);
    let opts = opts.clone();
    rt.block_on(async move {
        let mut script = opts.faults.clone();
        script.extend(resolve_random(&opts, seed));
        let mut triggers = Vec::new();
        let mut timed = Vec::new();
        for (i, f) in script.iter().enumerate() {
            let when = match f {
                Fault::Pause { when, .. }
                | Fault::Crash { when, .. }
                | Fault::Partition { when, .. } => when,
                Fault::Delay { .. }
                | Fault::Drop { .. }
                | Fault::Duplicate { .. }
                | Fault::Failover { .. }
                | Fault::ClockJump { .. } => continue,
            };
            match *when {
                When::At(t) => timed.push((t, i)),
                When::After { node, kind, nth } => triggers.push(Trigger {
                    fault: i,
                    node,
                    kind,
                    nth,
                    seen: 0,
                }),
            }
        }
        let workers = opts.workers().count();
        let ctx = Ctx(Arc::new(Mutex::new(Shared {
            history: History {
                nodes: opts.nodes.iter().map(|n| n.name.clone()).collect(),
                keys: opts.keys.clone(),
                events: Vec::new(),
            },
            done: vec![false; opts.nodes.len()],
            opts,
            start: Instant::now(),
            recorder: Recorder::default(),
            seq: 0,
            script,
            triggers,
            nodes: Vec::new(),
            harness: None,
            durable: BTreeMap::new(),
            workers_left: workers,
            finished: None,
        })));
        let harness = Handle::current().create_node().name("harness").build();
        ctx.lock().harness = Some(harness.clone());
        let specs: Vec<Role> = ctx.lock().opts.nodes.iter().map(|n| n.role).collect();
        for (i, role) in specs.into_iter().enumerate() {
            let node = spawn_node(&ctx, NodeId(i as u16), role);
            ctx.lock().nodes.push(node);
        }
        for (t, i) in timed {
            let c = ctx.clone();
            harness.spawn(async move {
                sleep(ns(t)).await;
                c.apply_fault(i);
            });
        }
        let max_time = ns(ctx.lock().opts.max_time_ns);
        let all_done = poll_fn(|cx| {
            let mut s = ctx.lock();
            if s.workers_left == 0 {
                Poll::Ready(())
            } else {
                s.finished = Some(cx.waker().clone());
                Poll::Pending
            }
        });
        let _ = timeout(max_time, all_done).await;
        let unfinished: Vec<NodeId> = {
            let s = ctx.lock();
            s.opts
                .workers()
                .map(|(id, _)| id)
                .filter(|id| !s.done[id.0 as usize])
                .collect()
        };
        for id in unfinished {
            ctx.record(lifecycle(id, Kind::Unfinished, None));
        }
        let mut s = ctx.lock();
        std::mem::take(&mut s.history)
    })
}
