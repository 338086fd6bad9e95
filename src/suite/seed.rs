//! The one home for running a seed: options in, simulator run, checker
//! report out.
//!
//! Every part of fencesim that runs a seed — `run`'s sweep, `replay`,
//! `shrink`, `search`, `tradeoff`, `validate`, the report's timeline, the
//! determinism self-check, the benches and examples — comes through
//! [`run`] or [`run_with`], and nothing outside `sim/` calls the simulator
//! directly. That is what makes "the run the report draws is the run the
//! sweep judged" true by construction: `--swarm` is applied here, once, from
//! the seed alone (see [`crate::suite::swarm`]), and the checker runs here,
//! once, on the history the run produced. A change to how a seed runs is a
//! change to this file.

use std::borrow::Cow;

use crate::check::{self, Report};
use crate::history::History;
use crate::protocol::{NodeId, Role};
use crate::sim::{self, NodeFactory, Options, RunOutcome};

use super::swarm::{self, Mix};

/// How to run one seed. Both flags are part of the run's identity only in
/// so far as `swarm` changes the options; `keep_trace` changes what is
/// returned, never the run (the trace hash is the same either way).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RunSeed {
    /// Keep the full event trace (timelines, replay text, search).
    pub keep_trace: bool,
    /// Run the seed's swarm mix (`--swarm`) instead of the options as written.
    pub swarm: bool,
}

/// What one seed produced: the simulator's outcome, the checker's report on
/// its history, and the swarm mix it ran under `--swarm`.
pub struct SeedRun {
    pub outcome: RunOutcome,
    pub report: Report,
    pub mix: Option<Mix>,
}

/// The options seed `seed` runs with (swarmed or as written), and the swarm
/// mix drawn.
pub fn options(base: &Options, seed: u64, swarm: bool) -> (Cow<'_, Options>, Option<Mix>) {
    if swarm {
        let (o, mix) = swarm::configure(base, seed);
        (Cow::Owned(o), Some(mix))
    } else {
        (Cow::Borrowed(base), None)
    }
}

/// Runs seed `seed` of `base` with the built-in protocol nodes and checks it.
pub fn run(base: &Options, seed: u64, how: RunSeed) -> SeedRun {
    let mut build = |_: NodeId, role: &Role| crate::protocol::build(role);
    run_with(base, seed, how, &mut build, &mut |_| {})
}

/// Runs seed `seed` of `base` with nodes from `factory` (implementations
/// under test, `validate`; in-process nodes, `examples/inprocess_node.rs`),
/// lets `settle` amend the history (e.g. mark writes the implementation
/// never acknowledged) and then checks it.
pub fn run_with<'f>(
    base: &Options,
    seed: u64,
    how: RunSeed,
    factory: &'f mut NodeFactory<'f>,
    settle: &mut dyn FnMut(&mut History),
) -> SeedRun {
    let (opts, mix) = options(base, seed, how.swarm);
    let mut outcome = sim::run_with(&opts, seed, how.keep_trace, factory);
    settle(&mut outcome.history);
    let report = check::check(&outcome.history);
    SeedRun {
        outcome,
        report,
        mix,
    }
}
