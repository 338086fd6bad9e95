//! Validation and resolution: a parsed [`ScenarioFile`] becomes simulator
//! [`Options`] and an [`Expectation`], or a [`ScenarioError`] that points at
//! the offending value.
//!
//! Node names are fixed by role: `worker/<name>` for each `[[worker]]` (ids
//! 0..n in file order), then `coord/0`, then `resource/0`.

use std::ops::Range;

use toml::Spanned;

use super::expect::{CmpOp, Expectation, MetricAssertion};
use super::limits::{Ms, FAULTS_MAX, JUMPS_MAX, NAME_MAX_CHARS, SEEDS_MAX};
use super::schema::{
    FaultSection, ProtocolSection, RandomSection, ScenarioFile, WorkerSection, WorkloadSection,
};
use super::{Scenario, ScenarioError};
use crate::check::{ViolationKind, METRIC_NAMES};
use crate::history::Kind;
use crate::protocol::client::LockKind;
use crate::protocol::redlock::MASTERS_MAX;
use crate::protocol::worker::{MoreLocks, WorkerConfig, MAX_LOCKS, OPS_PER_WORKER_MAX};
use crate::protocol::{alt_role, Key, NodeId, NodeLayout, ProtocolConfig, ProtocolKind, Role};
use crate::sim::{ClockSpec, Fault, NetworkOptions, NodeSpec, Options, RandomFaults, When};

const MS: u64 = 1_000_000;
/// Nodes per scenario (workers, lock servers, resource, helpers).
const NODES_MAX: usize = 64;
const WORKERS_MAX_TEXT: &str = "at most 62 workers are supported";

struct Ctx<'a> {
    file: &'a str,
    source: &'a str,
    names: Vec<String>,
}

impl Ctx<'_> {
    fn err(&self, span: Range<usize>, message: impl Into<String>) -> ScenarioError {
        ScenarioError::at(self.file, self.source, span, message)
    }

    fn node(&self, name: &Spanned<String>) -> Result<NodeId, ScenarioError> {
        self.names
            .iter()
            .position(|n| n == name.get_ref())
            .map(|i| NodeId(i as u16))
            .ok_or_else(|| {
                self.err(
                    name.span(),
                    format!(
                        "no node named {:?}; expected one of {}",
                        name.get_ref(),
                        self.names.join(", ")
                    ),
                )
            })
    }

    fn probability(&self, p: &Spanned<f64>) -> Result<f64, ScenarioError> {
        let v = *p.get_ref();
        if !(0.0..=1.0).contains(&v) {
            return Err(self.err(
                p.span(),
                format!("probability {v} is out of range; expected a number from 0.0 to 1.0"),
            ));
        }
        Ok(v)
    }
}

pub fn resolve(raw: ScenarioFile, source: &str, file: &str) -> Result<Scenario, ScenarioError> {
    let mut ctx = Ctx {
        file,
        source,
        names: Vec::new(),
    };
    let seeds = resolve_header(&ctx, &raw)?;
    let protocol = resolve_protocol(&ctx, &raw)?;
    let mut topology = resolve_topology(&mut ctx, &raw, &protocol)?;
    resolve_clocks(&ctx, &raw, &mut topology.nodes)?;
    let network = resolve_network(&ctx, &raw)?;
    let faults = raw
        .faults
        .iter()
        .map(|f| resolve_fault(&ctx, f, &protocol))
        .collect::<Result<Vec<_>, _>>()?;
    let random = match &raw.random {
        Some(r) => resolve_random(&ctx, r.get_ref(), &topology.nodes)?,
        None => RandomFaults::default(),
    };
    let expect = resolve_expect(&ctx, &raw)?;
    let seeds = raw.seed_start..raw.seed_start + seeds;
    let mut options = Options {
        protocol,
        nodes: topology.nodes,
        keys: topology.keys,
        coordinator_primary: topology.coord,
        network,
        faults,
        random,
        max_time_ns: raw.max_time_ms.into_inner().ns(),
    };
    options.set_protocol(protocol);
    Ok(Scenario {
        path: Default::default(),
        name: raw.name.into_inner(),
        description: raw.description,
        seeds,
        options,
        expect,
        source_hash: 0,
    })
}

/// The file's own fields: schema version, name, the seed range (returns
/// the seed count), the fault count and the run's time limit.
fn resolve_header(ctx: &Ctx, raw: &ScenarioFile) -> Result<u64, ScenarioError> {
    if *raw.schema_version.get_ref() != 1 {
        return Err(ctx.err(
            raw.schema_version.span(),
            format!(
                "schema_version {} is not supported; expected 1",
                raw.schema_version.get_ref()
            ),
        ));
    }
    if raw.name.get_ref().trim().is_empty() {
        return Err(ctx.err(raw.name.span(), "name must not be empty"));
    }
    if raw.name.get_ref().chars().count() > NAME_MAX_CHARS {
        return Err(ctx.err(
            raw.name.span(),
            format!("name is too long; expected at most {NAME_MAX_CHARS} characters"),
        ));
    }
    let seeds = *raw.seeds.get_ref();
    if seeds == 0 || seeds > SEEDS_MAX {
        return Err(ctx.err(
            raw.seeds.span(),
            format!("seeds must be from 1 to {SEEDS_MAX}"),
        ));
    }
    if raw.seed_start.checked_add(seeds).is_none() {
        return Err(ctx.err(
            raw.seeds.span(),
            format!(
                "seed_start + seeds passes 2^64; at most {} seeds fit after seed_start {}",
                u64::MAX - raw.seed_start,
                raw.seed_start
            ),
        ));
    }
    if let Some(f) = raw.faults.get(FAULTS_MAX) {
        return Err(ctx.err(
            f.span(),
            format!("at most {FAULTS_MAX} [[fault]]s are supported"),
        ));
    }
    if raw.max_time_ms.get_ref().get() == 0 {
        return Err(ctx.err(raw.max_time_ms.span(), "max_time_ms must be positive"));
    }
    Ok(seeds)
}

/// The nodes at their fixed addresses: the workers (`worker/<name>`, ids
/// in file order), the protocol's servers (`coord/<i>`), `resource/0` and
/// the layout's helpers; the lock names; `coord/0`'s id. Registers every
/// node name in `ctx` for the sections that name nodes.
struct Topology {
    nodes: Vec<NodeSpec>,
    keys: Vec<String>,
    coord: NodeId,
}

fn resolve_topology(
    ctx: &mut Ctx,
    raw: &ScenarioFile,
    protocol: &ProtocolConfig,
) -> Result<Topology, ScenarioError> {
    let workers = raw.workers.get_ref();
    if workers.is_empty() {
        return Err(ctx.err(raw.workers.span(), "at least one [[worker]] is required"));
    }
    // Limits before anything that scales with the count (the exact bound,
    // which depends on the protocol's other nodes, is checked below).
    if workers.len() > NODES_MAX {
        return Err(ctx.err(raw.workers.span(), WORKERS_MAX_TEXT));
    }
    name_workers(ctx, workers)?;
    let coord = NodeId(ctx.names.len() as u16);
    for i in 0..protocol.replicas {
        ctx.names.push(format!("coord/{i}"));
    }
    let resource = NodeId(ctx.names.len() as u16);
    ctx.names.push("resource/0".into());
    let layout = alt_role::layout(
        protocol,
        resource,
        raw.workload.request_timeout_ms.get_ref().ns(),
    );
    ctx.names
        .extend(layout.extra.iter().map(|(name, _)| name.clone()));
    if ctx.names.len() > NODES_MAX {
        return Err(ctx.err(raw.workers.span(), WORKERS_MAX_TEXT));
    }

    let wl = &raw.workload;
    if wl.request_timeout_ms.get_ref().get() == 0 {
        return Err(ctx.err(
            wl.request_timeout_ms.span(),
            "request_timeout_ms must be positive",
        ));
    }
    let Locks {
        keys,
        per_worker: worker_locks,
    } = resolve_locks(ctx, raw, protocol)?;
    let mut nodes = Vec::with_capacity(ctx.names.len());
    for (i, w) in workers.iter().enumerate() {
        let (key, more_locks) = worker_locks[i];
        let cfg = worker_config(i, w, wl, (key, more_locks), &layout, resource);
        nodes.push(NodeSpec {
            name: ctx.names[i].clone(),
            role: Role::Worker(cfg),
            clock: ClockSpec::default(),
        });
    }
    if protocol.kind.def().layout == NodeLayout::Pair {
        // The pair's two nodes stand at the workers' addresses.
        if workers.len() != 2 {
            return Err(ctx.err(
                raw.workers.span(),
                "github-2012-pair takes exactly two [[worker]]s: the pair's nodes (the first boots active)",
            ));
        }
        for (i, node) in nodes.iter_mut().enumerate() {
            if let Role::Worker(w) = node.role {
                node.role = alt_role::pair_node(protocol, &w, NodeId(1 - i as u16));
            }
        }
    }
    for i in 0..protocol.replicas {
        nodes.push(NodeSpec {
            name: format!("coord/{i}"),
            role: Role::server(protocol, coord, i),
            clock: ClockSpec::default(),
        });
    }
    nodes.push(NodeSpec {
        name: "resource/0".into(),
        role: layout
            .resource
            .unwrap_or(Role::Resource(protocol.resource())),
        clock: ClockSpec::default(),
    });
    for (name, role) in layout.extra {
        nodes.push(NodeSpec {
            name,
            role,
            clock: ClockSpec::default(),
        });
    }
    Ok(Topology { nodes, keys, coord })
}

/// Checks each worker's name and ops and names its node `worker/<name>`.
fn name_workers(ctx: &mut Ctx, workers: &[WorkerSection]) -> Result<(), ScenarioError> {
    let mut seen = std::collections::BTreeSet::new();
    for w in workers {
        let name = w.name.get_ref();
        let valid = !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        if !valid {
            return Err(ctx.err(
                w.name.span(),
                format!("worker name {name:?} must be non-empty letters, digits, '-' or '_'"),
            ));
        }
        let full = format!("worker/{name}");
        if !seen.insert(name.as_str()) {
            return Err(ctx.err(w.name.span(), format!("duplicate worker name {name:?}")));
        }
        let ops = *w.ops.get_ref();
        if ops == 0 || ops > OPS_PER_WORKER_MAX {
            return Err(ctx.err(
                w.ops.span(),
                format!("ops must be from 1 to {OPS_PER_WORKER_MAX}"),
            ));
        }
        ctx.names.push(full);
    }
    Ok(())
}

/// Worker `i`'s configuration from its section and the workload's
/// defaults; what the protocol decides is set by `Options::set_protocol`.
fn worker_config(
    i: usize,
    w: &WorkerSection,
    wl: &WorkloadSection,
    (key, more_locks): (Key, MoreLocks),
    layout: &alt_role::Layout,
    resource: NodeId,
) -> WorkerConfig {
    WorkerConfig {
        id: NodeId(i as u16),
        index: i as u16 + 1,
        key,
        coordinator: layout.worker_coordinator.unwrap_or(NodeId::COORD_GROUP),
        resource,
        start_ns: w.start_ms.ns(),
        ops: *w.ops.get_ref(),
        work_ns: w.work_ms.unwrap_or(wl.work_ms).ns(),
        think_ns: w.think_ms.unwrap_or(wl.think_ms).ns(),
        retry_ns: wl.retry_ms.get().max(1) * MS,
        request_timeout_ns: wl.request_timeout_ms.get_ref().ns(),
        max_retries: wl.max_retries,
        // Derived from the protocol by `Options::set_protocol` below.
        send_token: false,
        token_on_reads: false,
        check_lease_before_write: false,
        renew_every_ns: None,
        write_if_match: false,
        lock: LockKind::Lease,
        effect: layout.worker_effect,
        more_locks,
    }
}

/// `[clock."<node>"]`: offset, drift and jumps of the named nodes' clocks.
fn resolve_clocks(
    ctx: &Ctx,
    raw: &ScenarioFile,
    nodes: &mut [NodeSpec],
) -> Result<(), ScenarioError> {
    for (name, clock) in &raw.clock {
        let id = ctx.node(&Spanned::new(clock.span(), name.clone()))?;
        let c = clock.get_ref();
        if c.jumps.len() > JUMPS_MAX {
            return Err(ctx.err(
                clock.span(),
                format!("a clock takes at most {JUMPS_MAX} jumps"),
            ));
        }
        let mut jumps: Vec<(u64, i64)> = c
            .jumps
            .iter()
            .map(|j| (j.at_ms.ns(), j.by_ms.ns()))
            .collect();
        jumps.sort_by_key(|j| j.0);
        nodes[id.0 as usize].clock = ClockSpec {
            offset_ns: c.offset_ms.ns(),
            drift_ppm: c.drift_ppm.get_ref().get(),
            jumps,
        };
    }

    Ok(())
}

/// `[network]`: latency bounds and the loss, delay and duplication knobs.
fn resolve_network(ctx: &Ctx, raw: &ScenarioFile) -> Result<NetworkOptions, ScenarioError> {
    let n = &raw.network;
    if *n.latency_max_ms.get_ref() < n.latency_min_ms {
        return Err(ctx.err(
            n.latency_max_ms.span(),
            "latency_max_ms must be >= latency_min_ms",
        ));
    }
    Ok(NetworkOptions {
        latency_min_ns: n.latency_min_ms.ns(),
        latency_max_ns: n.latency_max_ms.get_ref().ns(),
        loss_probability: ctx.probability(&n.loss_probability)?,
        delay_probability: ctx.probability(&n.delay_probability)?,
        delay_max_ns: n.delay_max_ms.ns(),
        duplicate_probability: ctx.probability(&n.duplicate_probability)?,
        partition_hits_in_flight: n.partition_hits_in_flight,
        calm: None,
    })
}

/// Can a worker of protocol `p` take several locks per operation? Only
/// where the coordinator grants leases (one `acquire` per key) and the
/// resource is the plain keyed store: client-decided locks, effect sinks
/// and the alternatives' own nodes speak for one key.
fn supports_multi_lock(p: &ProtocolConfig) -> bool {
    let l = alt_role::layout(p, NodeId(0), 1);
    LockKind::for_protocol(p, NodeId(0)) == LockKind::Lease
        && l.extra.is_empty()
        && l.resource.is_none()
        && l.worker_effect.is_none()
        && l.worker_coordinator.is_none()
}

/// The scenario's keys (`workload.key` first, then every lock name in order
/// of appearance) and, per worker, its locks in the order it takes them
/// (`workload.lock_order = "sorted"`: lock names in sorted order).
struct Locks {
    keys: Vec<String>,
    per_worker: Vec<(Key, MoreLocks)>,
}

fn resolve_locks(
    ctx: &Ctx,
    raw: &ScenarioFile,
    protocol: &ProtocolConfig,
) -> Result<Locks, ScenarioError> {
    let workers = raw.workers.get_ref();
    let sorted = lock_order_sorted(ctx, raw)?;
    let mut keys = vec![raw.workload.key.clone()];
    let mut out = Vec::with_capacity(workers.len());
    for w in workers {
        let Some(list) = &w.locks else {
            out.push((Key(0), MoreLocks::NONE));
            continue;
        };
        let n = list.get_ref().len();
        if n == 0 || n > MAX_LOCKS {
            return Err(ctx.err(
                list.span(),
                format!("locks takes 1 to {MAX_LOCKS} lock names"),
            ));
        }
        if !supports_multi_lock(protocol) {
            let ids: Vec<&str> = ProtocolKind::ALL
                .iter()
                .filter(|k| supports_multi_lock(&ProtocolConfig::new(**k, protocol.lease_ttl_ns)))
                .map(|k| k.id())
                .collect();
            return Err(ctx.err(
                list.span(),
                format!(
                    "locks (multi-lock operations) needs a lease coordinator and a plain store; {} is not one (expected one of {})",
                    protocol.kind.id(),
                    ids.join(", ")
                ),
            ));
        }
        let ops = *w.ops.get_ref() as usize;
        if ops * n > OPS_PER_WORKER_MAX as usize {
            return Err(ctx.err(
                w.ops.span(),
                format!(
                    "an operation taking {n} locks is {n} ops in the history; ops must be at most {}",
                    OPS_PER_WORKER_MAX as usize / n
                ),
            ));
        }
        let mut names = lock_names(ctx, list.get_ref())?;
        if sorted {
            names.sort_by(|a, b| a.get_ref().cmp(b.get_ref()));
        }
        let mut ids = Vec::with_capacity(n);
        for name in names {
            let i = match keys.iter().position(|k| k == name.get_ref()) {
                Some(i) => i,
                None => {
                    keys.push(name.get_ref().clone());
                    keys.len() - 1
                }
            };
            ids.push(Key(i as u16));
        }
        out.push((ids[0], MoreLocks::new(&ids[1..])));
    }
    Ok(Locks {
        keys,
        per_worker: out,
    })
}

/// Whether a multi-lock worker takes its locks sorted by name (`lock_order`).
fn lock_order_sorted(ctx: &Ctx, raw: &ScenarioFile) -> Result<bool, ScenarioError> {
    let workers = raw.workers.get_ref();
    Ok(match &raw.workload.lock_order {
        None => false,
        Some(order) => {
            let sorted = match order.get_ref().as_str() {
                "as-listed" => false,
                "sorted" => true,
                other => {
                    return Err(ctx.err(
                        order.span(),
                        format!(
                            "unknown lock_order {other:?}; expected \"as-listed\" or \"sorted\""
                        ),
                    ))
                }
            };
            if workers.iter().all(|w| w.locks.is_none()) {
                return Err(ctx.err(
                    order.span(),
                    "lock_order applies to multi-lock workers; no [[worker]] lists `locks`",
                ));
            }
            sorted
        }
    })
}

/// A worker's lock names, each valid and listed once, in the order given.
fn lock_names<'a>(
    ctx: &Ctx,
    list: &'a [Spanned<String>],
) -> Result<Vec<&'a Spanned<String>>, ScenarioError> {
    let mut names: Vec<&Spanned<String>> = Vec::with_capacity(list.len());
    for name in list {
        let text = name.get_ref();
        let valid = !text.is_empty()
            && text
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.:/".contains(c));
        if !valid {
            return Err(ctx.err(
                name.span(),
                format!("lock name {text:?} must be non-empty letters, digits, '-', '_', '.', ':' or '/'"),
            ));
        }
        if names.iter().any(|seen| seen.get_ref() == text) {
            return Err(ctx.err(name.span(), format!("lock {text:?} is listed twice")));
        }
        names.push(name);
    }
    Ok(names)
}

fn resolve_protocol(ctx: &Ctx, raw: &ScenarioFile) -> Result<ProtocolConfig, ScenarioError> {
    let p = &raw.protocol;
    let kind = protocol_kind(ctx, p)?;
    let def = kind.def();
    for (flag, name) in [(&p.strict, "strict"), (&p.fence_reads, "fence_reads")] {
        if *flag.get_ref() && !def.accepts(name) {
            return Err(ctx.err(
                flag.span(),
                format!("{name} only applies to fenced protocols, not {}", kind.id()),
            ));
        }
    }
    let ttl = raw.lease.ttl_ms.get_ref().get();
    if ttl == 0 {
        return Err(ctx.err(raw.lease.ttl_ms.span(), "ttl_ms must be positive"));
    }
    let mut config = ProtocolConfig::new(kind, ttl * MS);
    config.strict = *p.strict.get_ref();
    config.fence_reads = *p.fence_reads.get_ref();
    config.volatile_fence = *p.volatile_fence.get_ref();
    resolve_lock_service(ctx, p, kind, &mut config)?;
    if config.volatile_fence && !def.accepts("volatile_fence") {
        return Err(ctx.err(
            p.volatile_fence.span(),
            format!(
                "volatile_fence only applies to fenced protocols, not {}",
                kind.id()
            ),
        ));
    }
    resolve_redlock(ctx, p, kind, &mut config)?;
    if let Some(r) = &p.replicas {
        let n = *r.get_ref();
        // Redlock (no range) refused `replicas` in `resolve_redlock`.
        let (low, high) = def.replicas_range.unwrap_or((0, 0));
        if !(low..=high).contains(&n) {
            return Err(ctx.err(
                r.span(),
                format!("{} takes replicas from {low} to {high}", kind.id()),
            ));
        }
        config.replicas = n;
    }
    if let Some(lag) = p.replication_lag_ms {
        config.replication_lag_ns = lag.ns();
    }
    if let Some(every) = &p.renew_every_ms {
        if every.get_ref().get() == 0 || every.get_ref().get() >= ttl {
            return Err(ctx.err(
                every.span(),
                "renew_every_ms must be positive and shorter than ttl_ms",
            ));
        }
        config.renew_every_ns = Some(every.get_ref().ns());
    }
    if let Some(step) = &p.check_to_write_ms {
        if !def.accepts("check_to_write_ms") {
            return Err(ctx.err(
                step.span(),
                "check_to_write_ms only applies to fenced-check-then-write",
            ));
        }
        config.check_to_write_ns = step.get_ref().ns();
    }
    Ok(config)
}

/// The protocol a `[protocol] kind` names.
fn protocol_kind(ctx: &Ctx, p: &ProtocolSection) -> Result<ProtocolKind, ScenarioError> {
    ProtocolKind::from_id(p.kind.get_ref()).ok_or_else(|| {
        let ids: Vec<&str> = ProtocolKind::ALL.iter().map(|k| k.id()).collect();
        ctx.err(
            p.kind.span(),
            format!(
                "unknown protocol {:?}; expected one of {}",
                p.kind.get_ref(),
                ids.join(", ")
            ),
        )
    })
}

/// The lock service's own options — `fence`, `herd`, `lock_delay_ms` —
/// each refused where the protocol's service has no such thing.
fn resolve_lock_service(
    ctx: &Ctx,
    p: &ProtocolSection,
    kind: ProtocolKind,
    config: &mut ProtocolConfig,
) -> Result<(), ScenarioError> {
    let def = kind.def();
    if let Some(fence) = &p.fence {
        if !def.accepts("fence") {
            return Err(ctx.err(
                fence.span(),
                format!(
                    "fence only applies to protocols whose lock service yields a token ({}, consensus-generation), not {}",
                    native_token_ids(),
                    kind.id()
                ),
            ));
        }
        config.fence = *fence.get_ref();
    }
    if let Some(herd) = &p.herd {
        if !def.accepts("herd") {
            return Err(ctx.err(herd.span(), "herd only applies to zk-sequential"));
        }
        config.herd = *herd.get_ref();
    }
    if let Some(delay) = &p.lock_delay_ms {
        if !def.accepts("lock_delay_ms") {
            return Err(ctx.err(
                delay.span(),
                format!(
                    "lock_delay_ms only applies to protocols with a lease server, not {}",
                    kind.id()
                ),
            ));
        }
        config.lock_delay_ns = delay.get_ref().ns();
    }
    Ok(())
}

/// Redlock's knobs: `masters`, `fsync`, `restart_delay_ms` (and not `replicas`).
fn resolve_redlock(
    ctx: &Ctx,
    p: &ProtocolSection,
    kind: ProtocolKind,
    config: &mut ProtocolConfig,
) -> Result<(), ScenarioError> {
    let def = kind.def();
    let only = |span: Range<usize>, name: &str| {
        Err(ctx.err(
            span,
            format!("{name} only applies to redlock, not {}", kind.id()),
        ))
    };
    if let (None, Some(r)) = (def.replicas_range, &p.replicas) {
        return Err(ctx.err(
            r.span(),
            "redlock has independent masters, not replicas: set `masters`",
        ));
    }
    if let Some(m) = &p.masters {
        if !def.accepts("masters") {
            return only(m.span(), "masters");
        }
        let n = *m.get_ref();
        if !(1..=MASTERS_MAX).contains(&n) {
            return Err(ctx.err(
                m.span(),
                format!("redlock takes masters from 1 to {MASTERS_MAX}"),
            ));
        }
        config.replicas = n;
    }
    if let Some(f) = &p.fsync {
        if !def.accepts("fsync") {
            return only(f.span(), "fsync");
        }
        config.fsync_always = match f.get_ref().as_str() {
            "always" => true,
            "never" => false,
            other => {
                return Err(ctx.err(
                    f.span(),
                    format!("unknown fsync policy {other:?}; expected \"always\" or \"never\""),
                ))
            }
        };
    }
    if let Some(d) = &p.restart_delay_ms {
        if !def.accepts("restart_delay_ms") {
            return only(d.span(), "restart_delay_ms");
        }
        config.restart_delay_ns = d.get_ref().ns();
    }
    Ok(())
}

const FAULT_KINDS: &str = "pause, crash, partition, delay, drop, duplicate, failover, clock_jump";

fn native_token_ids() -> String {
    let ids: Vec<&str> = ProtocolKind::ALL
        .iter()
        .filter(|k| k.has_native_token())
        .map(|k| k.id())
        .collect();
    ids.join(", ")
}

fn resolve_fault(
    ctx: &Ctx,
    f: &Spanned<FaultSection>,
    protocol: &ProtocolConfig,
) -> Result<Fault, ScenarioError> {
    let s = f.get_ref();
    let kind = s.kind.get_ref().as_str();
    fault_fields_apply(ctx, f, kind)?;
    let need = |v: Option<Ms>, name: &str| {
        v.ok_or_else(|| ctx.err(f.span(), format!("a {kind} fault needs `{name}`")))
    };
    let node = |v: &Option<Spanned<String>>, name: &str| match v {
        Some(n) => ctx.node(n),
        None => Err(ctx.err(f.span(), format!("a {kind} fault needs `{name}`"))),
    };
    let when = || resolve_when(ctx, f.span(), kind, s.at_ms, s.after.as_ref());
    let nth = || match s.nth {
        Some(0) => Err(ctx.err(f.span(), "nth counts from 1")),
        Some(n) => Ok(n),
        None => Err(ctx.err(
            f.span(),
            format!("a {kind} fault needs `nth` (1 = first message on that link)"),
        )),
    };
    Ok(match kind {
        "pause" => Fault::Pause {
            node: node(&s.node, "node")?,
            when: when()?,
            duration_ns: need(s.duration_ms, "duration_ms")?.ns(),
        },
        "clock_jump" => Fault::ClockJump {
            node: node(&s.node, "node")?,
            when: when()?,
            by_ns: s
                .by_ms
                .ok_or_else(|| ctx.err(f.span(), "a clock_jump fault needs `by_ms`"))?
                .ns(),
        },
        "crash" => Fault::Crash {
            node: node(&s.node, "node")?,
            when: when()?,
            restart_after_ns: s.restart_after_ms.map(Ms::ns),
        },
        "partition" => {
            let (a, b) = partition_sides(ctx, f)?;
            Fault::Partition {
                when: when()?,
                duration_ns: need(s.duration_ms, "duration_ms")?.ns(),
                side_a: a,
                side_b: b,
                one_way: s.one_way.unwrap_or(false),
            }
        }
        "delay" => Fault::Delay {
            from: node(&s.from, "from")?,
            to: node(&s.to, "to")?,
            nth: nth()?,
            delay_ns: need(s.delay_ms, "delay_ms")?.ns(),
        },
        "duplicate" => Fault::Duplicate {
            from: node(&s.from, "from")?,
            to: node(&s.to, "to")?,
            nth: nth()?,
            delay_ns: s.delay_ms.unwrap_or_default().ns(),
        },
        "failover" => {
            failover_possible(ctx, f, protocol)?;
            Fault::Failover {
                when: when()?,
                restart_after_ns: s.restart_after_ms.map(Ms::ns),
            }
        }
        _ => Fault::Drop {
            from: node(&s.from, "from")?,
            to: node(&s.to, "to")?,
            nth: nth()?,
        },
    })
}

/// Refuses a field the fault `kind` does not take (and an unknown kind).
fn fault_fields_apply(
    ctx: &Ctx,
    f: &Spanned<FaultSection>,
    kind: &str,
) -> Result<(), ScenarioError> {
    let s = f.get_ref();
    let allowed: &[&str] = match kind {
        "pause" => &["node", "at_ms", "after", "duration_ms"],
        "crash" => &["node", "at_ms", "after", "restart_after_ms"],
        "partition" => &["at_ms", "after", "duration_ms", "groups", "one_way"],
        "delay" => &["from", "to", "nth", "delay_ms"],
        "drop" => &["from", "to", "nth"],
        "duplicate" => &["from", "to", "nth", "delay_ms"],
        "failover" => &["at_ms", "after", "restart_after_ms"],
        "clock_jump" => &["node", "at_ms", "after", "by_ms"],
        other => {
            return Err(ctx.err(
                s.kind.span(),
                format!("unknown fault kind {other:?}; expected one of {FAULT_KINDS}"),
            ))
        }
    };
    let present = [
        ("node", s.node.is_some()),
        ("at_ms", s.at_ms.is_some()),
        ("after", s.after.is_some()),
        ("duration_ms", s.duration_ms.is_some()),
        ("restart_after_ms", s.restart_after_ms.is_some()),
        ("groups", s.groups.is_some()),
        ("one_way", s.one_way.is_some()),
        ("from", s.from.is_some()),
        ("to", s.to.is_some()),
        ("nth", s.nth.is_some()),
        ("delay_ms", s.delay_ms.is_some()),
        ("by_ms", s.by_ms.is_some()),
    ];
    if let Some((field, _)) = present
        .iter()
        .find(|(name, set)| *set && !allowed.contains(name))
    {
        return Err(ctx.err(
            f.span(),
            format!(
                "a {kind} fault takes {}; `{field}` does not apply",
                allowed.join(", ")
            ),
        ));
    }
    Ok(())
}

/// A partition's two sides, non-empty and disjoint.
fn partition_sides(
    ctx: &Ctx,
    f: &Spanned<FaultSection>,
) -> Result<(Vec<NodeId>, Vec<NodeId>), ScenarioError> {
    let s = f.get_ref();
    let groups = s.groups.as_ref().ok_or_else(|| {
        ctx.err(
            f.span(),
            "a partition fault needs `groups = [[...], [...]]`",
        )
    })?;
    if groups.get_ref().len() != 2 {
        return Err(ctx.err(
            groups.span(),
            "groups must be exactly two lists of node names",
        ));
    }
    let side = |names: &Vec<String>| {
        names
            .iter()
            .map(|n| ctx.node(&Spanned::new(groups.span(), n.clone())))
            .collect::<Result<Vec<_>, _>>()
    };
    let (a, b) = (side(&groups.get_ref()[0])?, side(&groups.get_ref()[1])?);
    if a.is_empty() || b.is_empty() || a.iter().any(|x| b.contains(x)) {
        return Err(ctx.err(
            groups.span(),
            "partition groups must be non-empty and disjoint",
        ));
    }
    Ok((a, b))
}

/// A failover needs a coordinator with a replica to promote.
fn failover_possible(
    ctx: &Ctx,
    f: &Spanned<FaultSection>,
    protocol: &ProtocolConfig,
) -> Result<(), ScenarioError> {
    if protocol.kind.is_client_decided() {
        return Err(ctx.err(
            f.span(),
            format!(
                "{} has no coordinator to fail over; crash its lock servers instead",
                protocol.kind.id()
            ),
        ));
    }
    if protocol.replicas < 2 {
        return Err(ctx.err(
            f.span(),
            "a failover needs a replica to promote: set [protocol] replicas >= 2",
        ));
    }
    Ok(())
}

fn resolve_when(
    ctx: &Ctx,
    span: Range<usize>,
    kind: &str,
    at_ms: Option<Ms>,
    after: Option<&Spanned<String>>,
) -> Result<When, ScenarioError> {
    match (at_ms, after) {
        (Some(_), Some(a)) => Err(ctx.err(
            a.span(),
            format!("a {kind} fault takes `at_ms` or `after`, not both"),
        )),
        (Some(t), None) => Ok(When::At(t.ns())),
        (None, None) => Err(ctx.err(
            span,
            format!("a {kind} fault needs `at_ms = <time>` or `after = \"node:kind\"`"),
        )),
        (None, Some(a)) => {
            let text = a.get_ref();
            let shape =
                "expected \"<node>:<history kind>\" or \"<node>:<history kind>#<n>\", e.g. \"worker/A:read_ok\"";
            let (node, rest) = text
                .rsplit_once(':')
                .ok_or_else(|| ctx.err(a.span(), shape))?;
            let (kind_name, nth) = match rest.split_once('#') {
                Some((k, n)) => (
                    k,
                    n.parse::<u32>()
                        .ok()
                        .filter(|&n| n > 0)
                        .ok_or_else(|| ctx.err(a.span(), shape))?,
                ),
                None => (rest, 1),
            };
            let kind = Kind::from_name(kind_name).ok_or_else(|| {
                let names: Vec<&str> = Kind::ALL.iter().map(|k| k.name()).collect();
                ctx.err(
                    a.span(),
                    format!(
                        "unknown history kind {kind_name:?}; expected one of {}",
                        names.join(", ")
                    ),
                )
            })?;
            Ok(When::After {
                node: ctx.node(&Spanned::new(a.span(), node.to_string()))?,
                kind,
                nth,
            })
        }
    }
}

fn resolve_random(
    ctx: &Ctx,
    r: &RandomSection,
    nodes: &[NodeSpec],
) -> Result<RandomFaults, ScenarioError> {
    let list = |names: &Option<Vec<Spanned<String>>>, default: Vec<NodeId>| match names {
        Some(names) => names
            .iter()
            .map(|n| ctx.node(n))
            .collect::<Result<Vec<_>, _>>(),
        None => Ok(default),
    };
    let workers: Vec<NodeId> = nodes
        .iter()
        .enumerate()
        .filter(|(_, n)| n.role.is_worker())
        .map(|(i, _)| NodeId(i as u16))
        .collect();
    let all: Vec<NodeId> = (0..nodes.len() as u16).map(NodeId).collect();
    Ok(RandomFaults {
        window_ns: r.window_ms.ns(),
        pause_probability: ctx.probability(&r.pause_probability)?,
        pause_min_ns: r.pause_min_ms.ns(),
        pause_max_ns: r.pause_max_ms.max(r.pause_min_ms).ns(),
        pause_nodes: list(&r.pause_nodes, workers)?,
        crash_probability: ctx.probability(&r.crash_probability)?,
        restart_min_ns: r.restart_min_ms.ns(),
        restart_max_ns: r.restart_max_ms.max(r.restart_min_ms).ns(),
        crash_nodes: list(&r.crash_nodes, all)?,
        partition_probability: ctx.probability(&r.partition_probability)?,
        partition_min_ns: r.partition_min_ms.ns(),
        partition_max_ns: r.partition_max_ms.max(r.partition_min_ms).ns(),
        failover_probability: ctx.probability(&r.failover_probability)?,
        anchored_probability: ctx.probability(&r.anchored_probability)?,
        anchored_max: r.anchored_max.unwrap_or(2),
        partition_one_way: false,
    })
}

fn violation_kind(ctx: &Ctx, name: &Spanned<String>) -> Result<ViolationKind, ScenarioError> {
    ViolationKind::from_name(name.get_ref()).ok_or_else(|| {
        let names: Vec<&str> = ViolationKind::ALL.iter().map(|k| k.name()).collect();
        ctx.err(
            name.span(),
            format!(
                "unknown violation kind {:?}; expected one of {}",
                name.get_ref(),
                names.join(", ")
            ),
        )
    })
}

fn resolve_expect(ctx: &Ctx, raw: &ScenarioFile) -> Result<Expectation, ScenarioError> {
    let e = &raw.expect;
    let mut out = Expectation::default();
    for m in &e.must_find {
        out.must_find
            .push((violation_kind(ctx, &m.kind)?, m.min_failing_seeds.max(1)));
    }
    for a in &e.allow {
        out.allow.push(violation_kind(ctx, a)?);
    }
    for m in &e.metrics {
        if !METRIC_NAMES.contains(&m.name.get_ref().as_str()) {
            return Err(ctx.err(
                m.name.span(),
                format!(
                    "unknown metric {:?}; expected one of {}",
                    m.name.get_ref(),
                    METRIC_NAMES.join(", ")
                ),
            ));
        }
        let op = CmpOp::parse(m.op.get_ref()).ok_or_else(|| {
            let ops: Vec<&str> = CmpOp::ALL.iter().map(|(n, _)| *n).collect();
            ctx.err(
                m.op.span(),
                format!(
                    "unknown comparison {:?}; expected one of {}",
                    m.op.get_ref(),
                    ops.join(" ")
                ),
            )
        })?;
        out.metrics.push(MetricAssertion {
            name: m.name.get_ref().clone(),
            op,
            value: m.value,
        });
    }
    Ok(out)
}
