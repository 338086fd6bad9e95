//! The determinism self-check (`--check-determinism`): a run must be a pure
//! function of (options, seed). The sweep runs each seed twice and compares
//! trace hashes — cheap, no trace kept. For the lowest seed that differed,
//! [`explain`] runs it twice more keeping both traces and names the first
//! event where they part, which is where to look for the hidden input (a
//! `HashMap` iteration, an ambient RNG, a wall-clock read).

use crate::history::History;
use crate::scenario::Scenario;
use crate::sim::trace::{self, TraceEvent, What};
use crate::sim::{Options, RunOutcome};

/// Re-runs `seed` twice with traces and describes the first difference.
pub fn explain(scenario: &Scenario, seed: u64, swarm: bool) -> String {
    let how = super::RunSeed {
        keep_trace: true,
        swarm,
        terse: false,
    };
    let (opts, _) = super::seed_options(scenario, seed, swarm);
    let a = super::seed::run(&scenario.options, seed, how).outcome;
    let b = super::seed::run(&scenario.options, seed, how).outcome;
    first_difference(&opts, &a, &b).unwrap_or_else(|| {
        "hashes differed in the sweep but two traced re-runs agree (nondeterminism that depends on the thread or on earlier runs)".to_string()
    })
}

/// Whether two trace events say the same thing (records compared by their
/// history content, not by their index).
fn same(ha: &History, a: &TraceEvent, hb: &History, b: &TraceEvent) -> bool {
    match (a.what, b.what) {
        (What::Record(i), What::Record(j)) => {
            (a.seq, a.t_ns, a.node) == (b.seq, b.t_ns, b.node) && ha.events[i] == hb.events[j]
        }
        _ => a == b,
    }
}

/// The first event where two traced runs of the same seed differ, rendered
/// as both runs saw it; `None` if the traces are identical.
pub fn first_difference(o: &Options, a: &RunOutcome, b: &RunOutcome) -> Option<String> {
    let name = |id| o.node_name(id).to_string();
    let line = |h: &History, ev: Option<&TraceEvent>| {
        ev.map_or("(trace ended)".to_string(), |e| {
            trace::render(e, h, &name).trim().to_string()
        })
    };
    let n = a.trace.len().max(b.trace.len());
    let i = (0..n).find(|&i| match (a.trace.get(i), b.trace.get(i)) {
        (Some(x), Some(y)) => !same(&a.history, x, &b.history, y),
        _ => true,
    })?;
    Some(format!(
        "first differing event is #{} — run 1: {} | run 2: {}",
        i + 1,
        line(&a.history, a.trace.get(i)),
        line(&b.history, b.trace.get(i))
    ))
}
