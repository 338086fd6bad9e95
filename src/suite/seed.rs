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
//!
//! It is also where speed comes from: each thread keeps one simulator's
//! buffers ([`sim::Scratch`]: event queue, slab, node slots, link table,
//! history vector) and one checker's tables ([`check::Checker`]) and
//! reuses them, cleared, for every seed it runs, instead of allocating
//! them per seed.

use std::borrow::Cow;
use std::cell::RefCell;

use crate::check::{self, Report};
use crate::history::History;
use crate::protocol::{NodeId, Role};
use crate::sim::{self, NodeFactory, Options, RunOutcome};

use super::swarm::{self, Mix};

/// How to run one seed. The flags are part of the run's identity only in
/// so far as `swarm` changes the options; `keep_trace` and `terse` change
/// what is returned, never the run (the trace hash is the same either way).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RunSeed {
    /// Keep the full event trace (timelines, replay text, search).
    pub keep_trace: bool,
    /// Run the seed's swarm mix (`--swarm`) instead of the options as written.
    pub swarm: bool,
    /// Leave violations' explanation text empty ([`check::Checker::terse`]):
    /// a sweep counts violations and shows none of them; whatever shows one
    /// (replay, the report's timeline) runs its seed explained.
    pub terse: bool,
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

thread_local! {
    /// The simulator buffers of the seeds this thread runs (see
    /// [`sim::Scratch`]): a sweep's thread reuses one set for all its seeds.
    static SCRATCH: RefCell<sim::Scratch> = RefCell::new(sim::Scratch::default());
    /// The checker's tables, likewise reused for every seed this thread checks.
    static CHECKER: RefCell<check::Checker> = RefCell::new(check::Checker::default());
}

/// Hands a finished run's history back to this thread's buffers, for the
/// next seed's history to grow into (a sweep does, once it has judged it).
pub fn recycle(history: History) {
    SCRATCH.with(|scratch| {
        if let Ok(mut scratch) = scratch.try_borrow_mut() {
            scratch.recycle(history);
        }
    });
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
    let mut outcome = SCRATCH.with(|scratch| match scratch.try_borrow_mut() {
        Ok(mut scratch) => sim::run_in(&opts, seed, how.keep_trace, factory, &mut scratch),
        // A run inside a run (a node factory that runs seeds): fresh buffers.
        Err(_) => sim::run_with(&opts, seed, how.keep_trace, factory),
    });
    settle(&mut outcome.history);
    let judge = |checker: &mut check::Checker| {
        checker.set_explain(!how.terse);
        checker.check(&outcome.history)
    };
    let report = CHECKER.with(|checker| match checker.try_borrow_mut() {
        Ok(mut checker) => judge(&mut checker),
        // A check inside a check (a node factory that runs seeds): fresh tables.
        Err(_) => judge(&mut check::Checker::default()),
    });
    SeedRun {
        outcome,
        report,
        mix,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(rel: &str) -> crate::scenario::Scenario {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(rel);
        crate::scenario::load(&path).expect("bundled scenario loads")
    }

    #[test]
    fn reused_buffers_give_every_seed_the_trace_fresh_buffers_give() {
        // Two topologies alternating, so a run inherits buffers sized and
        // filled by a different scenario.
        let big = load("scenarios/random/random-faults-redis-set-nx.toml");
        let small = load("scenarios/article/gc-pause-stale-write.toml");
        for seed in 0..30 {
            for s in [&big, &small] {
                let fresh = sim::run_with(&s.options, seed, false, &mut |_, role: &Role| {
                    crate::protocol::build(role)
                });
                let reused = run(&s.options, seed, RunSeed::default());
                assert_eq!(
                    (reused.outcome.trace_hash, reused.outcome.events),
                    (fresh.trace_hash, fresh.events),
                    "{} seed {seed}",
                    s.name
                );
                assert_eq!(reused.outcome.history.events, fresh.history.events);
                recycle(reused.outcome.history);
            }
        }
    }
}
