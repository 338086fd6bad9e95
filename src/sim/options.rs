//! Resolved simulation options: everything a run needs besides its seed.
//!
//! Scenario files are parsed and validated in `scenario/`; by the time they
//! reach here every name is a [`NodeId`], every duration is nanoseconds and
//! every knob has a value. No serde on purpose: this is the simulator's own
//! vocabulary, free to change without breaking file formats.

use std::fmt::{self, Write};

use super::clock::ClockSpec;
use crate::history::Kind;
use crate::protocol::client::LockKind;
use crate::protocol::{Nanos, NodeId, ProtocolConfig, Role};

#[derive(Clone, PartialEq, Debug)]
pub struct NodeSpec {
    pub name: String,
    pub role: Role,
    pub clock: ClockSpec,
}

#[derive(Clone, PartialEq, Debug)]
pub struct NetworkOptions {
    pub latency_min_ns: Nanos,
    pub latency_max_ns: Nanos,
    /// Per message: lost in the network.
    pub loss_probability: f64,
    /// Per message: held in a queue for an extra uniform `0..=delay_max_ns`.
    pub delay_probability: f64,
    pub delay_max_ns: Nanos,
    /// Per message: delivered twice (the copy up to `delay_max_ns` later).
    pub duplicate_probability: f64,
    /// Whether a partition also drops messages already in flight when it
    /// starts (checked at delivery) or only messages sent while it lasts.
    pub partition_hits_in_flight: bool,
    /// Other per-message rates for messages sent from a given time on
    /// (set by `--swarm` only; a scenario file cannot ask for it).
    pub calm: Option<CalmNetwork>,
}

/// The network after its chaos ends: `--swarm` scales loss, delay and
/// duplication up to 4x for its fault window only, then goes back to no
/// more than the scenario's own rates. Without that a swarm seed that drew
/// 40 % loss keeps it for the whole run, and a safe protocol that is merely
/// slow under it is cut off at `max_time_ms` and reported `liveness`: the
/// tool's fault load judged, not the protocol. With it, a worker still
/// unfinished at the end had a calm tail to recover in — a lock nobody
/// releases or a takeover that never comes is still found.
#[derive(Clone, Copy, PartialEq, Debug)]
pub struct CalmNetwork {
    pub after_ns: Nanos,
    pub loss_probability: f64,
    pub delay_probability: f64,
    pub duplicate_probability: f64,
}

impl CalmNetwork {
    /// (loss, delay, duplicate) probabilities.
    pub fn rates(&self) -> (f64, f64, f64) {
        (
            self.loss_probability,
            self.delay_probability,
            self.duplicate_probability,
        )
    }
}

impl NetworkOptions {
    /// (loss, delay, duplicate) probabilities as written, before any calm.
    pub fn rates(&self) -> (f64, f64, f64) {
        (
            self.loss_probability,
            self.delay_probability,
            self.duplicate_probability,
        )
    }

    /// The rates for a message sent at `now_ns`: the calm ones once they
    /// are in force.
    #[inline]
    pub fn rates_at(&self, now_ns: Nanos) -> (f64, f64, f64) {
        match &self.calm {
            Some(c) if now_ns >= c.after_ns => c.rates(),
            _ => self.rates(),
        }
    }
}

/// When a scripted fault starts.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum When {
    At(Nanos),
    /// Right after the `nth` (1-based) history record of `kind` at `node`,
    /// e.g. `worker/A:read_ok` — "pause A in the middle of its update".
    After {
        node: NodeId,
        kind: Kind,
        nth: u32,
    },
}

#[derive(Clone, PartialEq, Eq, Debug)]
pub enum Fault {
    /// GC pause / SIGSTOP: the node handles nothing; inputs and due timers
    /// wait and run, in order, at resume.
    Pause {
        node: NodeId,
        when: When,
        duration_ns: Nanos,
    },
    /// Volatile state and buffered writes are lost; with a restart, the node
    /// boots again from what it persisted as synced.
    Crash {
        node: NodeId,
        when: When,
        restart_after_ns: Option<Nanos>,
    },
    /// Messages from `side_a` to `side_b` (and back, unless `one_way`) are lost.
    Partition {
        when: When,
        duration_ns: Nanos,
        side_a: Vec<NodeId>,
        side_b: Vec<NodeId>,
        one_way: bool,
    },
    /// The `nth` (1-based) message sent on the link `from -> to` sits in the
    /// network for an extra `delay_ns`.
    Delay {
        from: NodeId,
        to: NodeId,
        nth: u32,
        delay_ns: Nanos,
    },
    /// The `nth` message on the link `from -> to` is lost.
    Drop { from: NodeId, to: NodeId, nth: u32 },
    /// The `nth` message on the link `from -> to` is delivered twice, the
    /// copy `delay_ns` after the original.
    Duplicate {
        from: NodeId,
        to: NodeId,
        nth: u32,
        delay_ns: Nanos,
    },
    /// The coordinator primary crashes and the next replica is promoted
    /// (Sentinel, an election). With a restart, the old primary rejoins as
    /// a replica.
    Failover {
        when: When,
        restart_after_ns: Option<Nanos>,
    },
    /// The node's wall clock steps by `by_ns` (an NTP step, an operator's
    /// `date -s`) when `when` fires; its monotonic clock does not move.
    /// Anchored at a grant, it is the lock server whose key expires early.
    ClockJump {
        node: NodeId,
        when: When,
        by_ns: i64,
    },
}

/// Random faults, resolved into scripted [`Fault`]s at the start of a run
/// from the `faults` stream (network ones per message, from `net.*`).
#[derive(Clone, PartialEq, Debug, Default)]
pub struct RandomFaults {
    /// Random faults start uniformly in `0..window_ns`.
    pub window_ns: Nanos,
    pub pause_probability: f64,
    pub pause_min_ns: Nanos,
    pub pause_max_ns: Nanos,
    pub pause_nodes: Vec<NodeId>,
    pub crash_probability: f64,
    pub restart_min_ns: Nanos,
    pub restart_max_ns: Nanos,
    pub crash_nodes: Vec<NodeId>,
    /// Probability of one partition isolating a random node from the rest.
    pub partition_probability: f64,
    pub partition_min_ns: Nanos,
    pub partition_max_ns: Nanos,
    /// The random partition cuts only `isolated -> rest` (set by `--swarm`).
    pub partition_one_way: bool,
    /// Probability of one coordinator failover (the old primary rejoins
    /// after `restart_min_ns..=restart_max_ns`).
    pub failover_probability: f64,
    /// Anchored (BUGGIFY-style) faults: each of `anchored_max` slots fires
    /// with this probability and places one fault from the vocabulary above
    /// right after a protocol event (see `faults::anchored_vocabulary`).
    /// Drawn from their own stream `anchored`, so 0 changes no other draw.
    pub anchored_probability: f64,
    pub anchored_max: u32,
}

#[derive(Clone, PartialEq, Debug)]
pub struct Options {
    pub protocol: ProtocolConfig,
    /// Index = `NodeId`.
    pub nodes: Vec<NodeSpec>,
    pub keys: Vec<String>,
    /// Where `NodeId::COORD_GROUP` is routed.
    pub coordinator_primary: NodeId,
    pub network: NetworkOptions,
    pub faults: Vec<Fault>,
    pub random: RandomFaults,
    pub max_time_ns: Nanos,
}

impl Options {
    pub fn node_name(&self, id: NodeId) -> &str {
        if id == NodeId::COORD_GROUP {
            return "coord";
        }
        self.nodes
            .get(id.0 as usize)
            .map_or("?", |n| n.name.as_str())
    }

    /// Switches protocol, re-deriving every node's role from it (what a
    /// scenario's `[protocol]` table does) — how a test runs the unfenced
    /// twin of a fenced scenario under identical faults.
    pub fn set_protocol(&mut self, p: ProtocolConfig) {
        let coords: Vec<usize> = self
            .nodes
            .iter()
            .enumerate()
            .filter(|(_, n)| matches!(n.role, Role::Coordinator(_) | Role::Server(_)))
            .map(|(i, _)| i)
            .collect();
        assert_eq!(
            coords.len(),
            p.replicas as usize,
            "set_protocol cannot change the replica count"
        );
        let first = NodeId(coords.first().copied().unwrap_or(0) as u16);
        self.protocol = p;
        for (i, n) in self.nodes.iter_mut().enumerate() {
            n.role = match n.role {
                Role::Worker(mut w) => {
                    w.send_token = p.worker_sends_token();
                    w.token_on_reads = p.worker_token_on_reads();
                    w.check_lease_before_write = p.worker_checks_lease();
                    w.write_if_match = p.worker_writes_if_match();
                    w.renew_every_ns = p.renew_every_ns;
                    w.lock = LockKind::for_protocol(&p, first);
                    Role::Worker(w)
                }
                Role::Coordinator(_) | Role::Server(_) => {
                    Role::server(&p, first, (i - first.0 as usize) as u8)
                }
                Role::Resource(_) => Role::Resource(p.resource()),
                Role::Alt(alt) => Role::Alt(alt.with_protocol(&p)),
            };
        }
    }

    pub fn workers(&self) -> impl Iterator<Item = (NodeId, &NodeSpec)> {
        self.nodes
            .iter()
            .enumerate()
            .filter(|(_, n)| n.role.is_worker())
            .map(|(i, n)| (NodeId(i as u16), n))
    }
}

fn ms(ns: Nanos) -> String {
    if ns % 1_000_000 == 0 {
        format!("{}ms", ns / 1_000_000)
    } else {
        format!("{:.3}ms", ns as f64 / 1e6)
    }
}

/// The "resolved options" block printed before a replay: one `key = value`
/// per line, so two replays can be diffed.
impl fmt::Display for Options {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let p = &self.protocol;
        let mut s = String::new();
        let _ = writeln!(
            s,
            "protocol        = {} (strict={}, fence_reads={}, replicas={}, replication_lag={}, renew_every={})",
            p.kind.id(),
            p.strict,
            p.fence_reads,
            p.replicas,
            ms(p.replication_lag_ns),
            p.renew_every_ns.map_or("off".to_string(), ms)
        );
        let _ = writeln!(s, "lease_ttl       = {}", ms(p.lease_ttl_ns));
        let _ = writeln!(s, "max_time        = {}", ms(self.max_time_ns));
        let n = &self.network;
        let _ = writeln!(
            s,
            "network         = latency {}..{}, loss {}, delay {} up to {}, duplicate {}, partition_hits_in_flight {}",
            ms(n.latency_min_ns),
            ms(n.latency_max_ns),
            n.loss_probability,
            n.delay_probability,
            ms(n.delay_max_ns),
            n.duplicate_probability,
            n.partition_hits_in_flight
        );
        if let Some(c) = &n.calm {
            let _ = writeln!(
                s,
                "network calm    = from {}: loss {}, delay {}, duplicate {}",
                ms(c.after_ns),
                c.loss_probability,
                c.delay_probability,
                c.duplicate_probability
            );
        }
        for node in &self.nodes {
            let role = self.describe_role(&node.role);
            let c = &node.clock;
            let clock = if *c == ClockSpec::default() {
                String::new()
            } else {
                format!(
                    ", clock offset {}ns drift {}ppm jumps {:?}",
                    c.offset_ns, c.drift_ppm, c.jumps
                )
            };
            let _ = writeln!(s, "node {:<10} = {role}{clock}", node.name);
        }
        for fault in &self.faults {
            let _ = writeln!(s, "fault           = {}", describe_fault(self, fault));
        }
        let r = &self.random;
        if r.pause_probability > 0.0
            || r.crash_probability > 0.0
            || r.partition_probability > 0.0
            || r.failover_probability > 0.0
        {
            let _ = writeln!(
                s,
                "random          = window {}, pause p={} {}..{}, crash p={} restart {}..{}, partition p={} {}..{}, failover p={}",
                ms(r.window_ns),
                r.pause_probability,
                ms(r.pause_min_ns),
                ms(r.pause_max_ns),
                r.crash_probability,
                ms(r.restart_min_ns),
                ms(r.restart_max_ns),
                r.partition_probability,
                ms(r.partition_min_ns),
                ms(r.partition_max_ns),
                r.failover_probability
            );
        }
        if r.anchored_probability > 0.0 {
            let _ = writeln!(
                s,
                "anchored        = p={} per slot, {} slots",
                r.anchored_probability, r.anchored_max
            );
        }
        f.write_str(s.trim_end())
    }
}

impl Options {
    /// One node's role as its `node` line shows it.
    fn describe_role(&self, role: &Role) -> String {
        match role {
            Role::Worker(w) => {
                let mut line = format!(
                    "worker start {} ops {} work {} think {} retry {} timeout {} x{}",
                    ms(w.start_ns),
                    w.ops,
                    ms(w.work_ns),
                    ms(w.think_ns),
                    ms(w.retry_ns),
                    ms(w.request_timeout_ns),
                    w.max_retries
                );
                if !w.more_locks.is_empty() {
                    let names: Vec<&str> = w
                        .locks()
                        .map(|k| self.keys.get(k.0 as usize).map_or("?", String::as_str))
                        .collect();
                    let _ = write!(line, " locks {}", names.join(","));
                }
                line
            }
            Role::Coordinator(c) => {
                format!("coordinator release {:?} tokens {}", c.release, c.tokens)
            }
            Role::Resource(r) => {
                use crate::protocol::resource::FenceCheck;
                let check = match r.check {
                    FenceCheck::None => "none".to_string(),
                    FenceCheck::Cas {
                        strict,
                        fence_reads,
                    } => {
                        format!("atomic fence (strict={strict}, fence_reads={fence_reads})")
                    }
                    FenceCheck::CheckThenWrite { step_ns } => {
                        format!("check, then write {} later", ms(step_ns))
                    }
                    FenceCheck::GenerationMatch => {
                        "conditional write (generation match)".to_string()
                    }
                };
                let fence = if r.volatile_fence {
                    ", fence in memory only"
                } else {
                    ""
                };
                format!("resource check {check}{fence}")
            }
            Role::Server(server) => format!("lock server {server:?}"),
            Role::Alt(alt) => alt.describe(),
        }
    }
}

pub fn describe_when(o: &Options, w: &When) -> String {
    match w {
        When::At(t) => format!("at {}", ms(*t)),
        When::After { node, kind, nth } => format!("after {}:{}#{}", o.node_name(*node), kind, nth),
    }
}

pub fn describe_fault(o: &Options, f: &Fault) -> String {
    let names = |ids: &[NodeId]| {
        ids.iter()
            .map(|&i| o.node_name(i))
            .collect::<Vec<_>>()
            .join(",")
    };
    match f {
        Fault::Pause {
            node,
            when,
            duration_ns,
        } => {
            format!(
                "pause {} {} for {}",
                o.node_name(*node),
                describe_when(o, when),
                ms(*duration_ns)
            )
        }
        Fault::Crash {
            node,
            when,
            restart_after_ns,
        } => format!(
            "crash {} {}{}",
            o.node_name(*node),
            describe_when(o, when),
            restart_after_ns.map_or(String::new(), |r| format!(", restart after {}", ms(r)))
        ),
        Fault::Partition {
            when,
            duration_ns,
            side_a,
            side_b,
            one_way,
        } => format!(
            "partition [{}] {} [{}] {} for {}",
            names(side_a),
            if *one_way { "-/->" } else { "<-/->" },
            names(side_b),
            describe_when(o, when),
            ms(*duration_ns)
        ),
        Fault::Delay {
            from,
            to,
            nth,
            delay_ns,
        } => format!(
            "delay {} by {}",
            message_nth(o, *nth, *from, *to),
            ms(*delay_ns)
        ),
        Fault::Drop { from, to, nth } => format!("drop {}", message_nth(o, *nth, *from, *to)),
        Fault::Duplicate {
            from,
            to,
            nth,
            delay_ns,
        } => format!(
            "duplicate {} (copy {} later)",
            message_nth(o, *nth, *from, *to),
            ms(*delay_ns)
        ),
        Fault::ClockJump { node, when, by_ns } => format!(
            "clock of {} jumps {}{} {}",
            o.node_name(*node),
            if *by_ns < 0 {
                "back by "
            } else {
                "forward by "
            },
            ms(by_ns.unsigned_abs()),
            describe_when(o, when)
        ),
        Fault::Failover {
            when,
            restart_after_ns,
        } => format!(
            "failover of the coordinator primary {}{}",
            describe_when(o, when),
            restart_after_ns.map_or(String::new(), |r| format!(
                ", old primary rejoins after {}",
                ms(r)
            ))
        ),
    }
}

/// `message #nth from -> to`: the message a message fault strikes.
fn message_nth(o: &Options, nth: impl fmt::Display, from: NodeId, to: NodeId) -> String {
    format!(
        "message #{nth} {} -> {}",
        o.node_name(from),
        o.node_name(to)
    )
}
