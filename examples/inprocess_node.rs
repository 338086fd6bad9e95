//! Your own node, in-process: a fenced document store written in your crate
//! against fencesim's public [`Node`] trait, run under a scenario's faults by
//! the simulator and judged by the checker.
//!
//! ```text
//! cargo run --example inprocess_node
//! ```
//!
//! The contract (see `fencesim::protocol::node`): `handle` gets one input —
//! boot with the record you last persisted as synced, a message, or a timer
//! you set — plus your clock readings, and pushes effects. No I/O, no clock,
//! no randomness inside: the simulator owns them, so every run replays from
//! its seed. `suite::seed::run_with` takes a factory that builds each node (at boot
//! and after every crash); here it builds `MyStore` for the resource and the
//! built-in protocol for everything else.
//!
//! The safe verdict means something only beside its unsafe twin: the same
//! store with its fence check switched off is run on the same scenario and
//! must be caught (`stale_write`).
//!
//! The same store is then checked exhaustively at the code level
//! (`fencesim::codecheck`): every interleaving of the fenced-cas topology
//! with `MyStore` as the resource, within the code checker's default
//! bounds — proved safe with the fence, a shortest stale write without —
//! and refined against the fenced-cas model: every step it takes is one
//! the model allows (the unfenced twin departs from it where it accepts
//! the stale write).

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::Path;

use fencesim::codecheck::{self, Bounds, Harness, Own, Refinement, StoreView};
use fencesim::protocol::{
    self, Clocks, Durability, Effect, Input, Msg, Node, NodeId, ProtocolKind, Role,
};
use fencesim::{scenario, suite};

/// A store that keeps, per key, the value and the greatest token that wrote it.
/// `Clone`, `Hash` and `Eq` are all the code-level search asks beyond `Node`.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct MyStore {
    check_fence: bool,
    rows: BTreeMap<u16, (u64, u64)>,
}

impl MyStore {
    pub fn new(check_fence: bool) -> MyStore {
        MyStore {
            check_fence,
            rows: BTreeMap::new(),
        }
    }

    /// (key u16, value u64, fence u64) little-endian, one row after another.
    fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.rows.len() * 18);
        for (key, (value, fence)) in &self.rows {
            out.extend_from_slice(&key.to_le_bytes());
            out.extend_from_slice(&value.to_le_bytes());
            out.extend_from_slice(&fence.to_le_bytes());
        }
        out
    }

    fn decode(bytes: &[u8]) -> BTreeMap<u16, (u64, u64)> {
        let word = |b: &[u8]| u64::from_le_bytes(b.try_into().expect("8 bytes"));
        bytes
            .chunks_exact(18)
            .map(|c| {
                (
                    u16::from_le_bytes([c[0], c[1]]),
                    (word(&c[2..10]), word(&c[10..18])),
                )
            })
            .collect()
    }
}

/// What the refinement check reads of the store: its row, as the model
/// has it (the op whose value it holds, the greatest token accepted).
impl StoreView for MyStore {
    fn row(&self, key: protocol::Key) -> (protocol::OpId, protocol::Token) {
        let (value, fence) = self.rows.get(&key.0).copied().unwrap_or_default();
        (protocol::OpId(value), protocol::Token(fence))
    }
}

impl Node for MyStore {
    fn handle(&mut self, _clocks: Clocks, input: Input<'_>, fx: &mut Vec<Effect>) {
        let (from, msg) = match input {
            Input::Start { recovered } => {
                self.rows = recovered.map(Self::decode).unwrap_or_default();
                return;
            }
            Input::Message { from, msg } => (from, msg),
            Input::Timer { .. } => return,
        };
        let reply = match msg {
            Msg::Read { req, key, op, .. } => {
                let (value, _) = self.rows.get(&key.0).copied().unwrap_or_default();
                Msg::ReadOk {
                    req,
                    key,
                    op,
                    value: protocol::OpId(value),
                }
            }
            Msg::Write {
                req,
                key,
                op,
                token,
                value,
            } => {
                let (_, fence) = self.rows.get(&key.0).copied().unwrap_or_default();
                let token = token.map_or(0, |t| t.0);
                if self.check_fence && token < fence {
                    // UPDATE … WHERE fencing_token <= $token updated zero rows.
                    Msg::WriteRejected {
                        req,
                        key,
                        op,
                        fence: protocol::Token(fence),
                    }
                } else {
                    self.rows.insert(key.0, (value.0, token.max(fence)));
                    // Durable before the answer leaves: a crash cannot undo an ack.
                    fx.push(Effect::Persist {
                        durability: Durability::Synced,
                        record: self.encode().into(),
                    });
                    Msg::WriteOk { req, key, op }
                }
            }
            _ => return, // not a store message
        };
        fx.push(Effect::Send {
            to: from,
            msg: reply,
        });
    }
}

/// What a scenario's seeds came to with `MyStore` as the resource.
pub struct Summary {
    pub seeds: u64,
    /// (seed, violation kinds) of every seed with a violation.
    pub failing: Vec<(u64, Vec<&'static str>)>,
    pub fence_rejections: u64,
}

pub fn run_with_my_store(path: &Path, check_fence: bool, seeds: Range<u64>) -> Summary {
    let scenario = scenario::load(path).unwrap_or_else(|e| panic!("{e}"));
    let mut summary = Summary {
        seeds: seeds.end - seeds.start,
        failing: Vec::new(),
        fence_rejections: 0,
    };
    for seed in seeds {
        let mut factory = |_id: NodeId, role: &Role| -> Box<dyn Node> {
            match role {
                Role::Resource(_) => Box::new(MyStore::new(check_fence)),
                other => protocol::build(other),
            }
        };
        let how = suite::RunSeed::default();
        let report =
            suite::seed::run_with(&scenario.options, seed, how, &mut factory, &mut |_| {}).report;
        summary.fence_rejections += report.info.fence_rejected_total;
        if !report.is_clean() {
            summary
                .failing
                .push((seed, report.kinds().map(|k| k.name()).collect()));
        }
    }
    summary
}

fn fenced_store(role: &Role) -> Own<MyStore> {
    match role {
        Role::Resource(_) => Own::Mine(MyStore::new(true)),
        other => Own::Builtin(codecheck::builtin(other)),
    }
}

fn unfenced_store(role: &Role) -> Own<MyStore> {
    match fenced_store(role) {
        Own::Mine(_) => Own::Mine(MyStore::new(false)),
        other => other,
    }
}

/// `MyStore` as fenced-cas's resource, within the code checker's bounds
/// for fenced-cas (2 workers, 2 grants, one pause, …).
pub fn my_store_harness(check_fence: bool) -> Harness<Own<MyStore>> {
    let kind = ProtocolKind::FencedCas;
    let factory = if check_fence {
        fenced_store
    } else {
        unfenced_store
    };
    codecheck::own::harness(kind, Bounds::for_protocol(kind), factory)
        .unwrap_or_else(|e| panic!("{e}"))
}

/// Every interleaving of that harness, judged.
pub fn code_check_my_store(check_fence: bool) -> (Harness<Own<MyStore>>, codecheck::Outcome) {
    let h = my_store_harness(check_fence);
    let out = codecheck::check(&h);
    (h, out)
}

/// The same harness's every step checked against the fenced-cas model.
pub fn refine_my_store(check_fence: bool) -> (Harness<Own<MyStore>>, Refinement) {
    let h = my_store_harness(check_fence);
    let r = codecheck::refine(&h).unwrap_or_else(|e| panic!("{e}"));
    (h, r)
}

fn main() {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/article/gc-pause-fenced-cas.toml");
    for check_fence in [true, false] {
        let s = run_with_my_store(&path, check_fence, 0..50);
        let kinds: Vec<&str> = s
            .failing
            .first()
            .map(|(_, k)| k.clone())
            .unwrap_or_default();
        println!(
            "MyStore (check_fence = {check_fence}) on {}: {}/{} seeds clean, {} stale writes fenced off{}",
            path.file_name().unwrap_or_default().to_string_lossy(),
            s.seeds - s.failing.len() as u64,
            s.seeds,
            s.fence_rejections,
            if kinds.is_empty() {
                String::new()
            } else {
                format!("; first failing seed {} found {}", s.failing[0].0, kinds.join(", "))
            }
        );
    }
    for check_fence in [true, false] {
        let (h, out) = code_check_my_store(check_fence);
        let id = format!("MyStore (check_fence = {check_fence})");
        print!("{}", fencesim::report::code_check::render(&id, &h, &out));
        let (h, r) = refine_my_store(check_fence);
        print!(
            "{}",
            fencesim::report::code_check::render_refinement(&id, &h, &r)
        );
    }
}
