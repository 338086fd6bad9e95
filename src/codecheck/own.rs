//! A user's own node in the code-level search: the in-process validation
//! path (`fencesim::protocol::Node`, run by `suite::seed::run_with` under a
//! scenario's faults) checked exhaustively instead of seed by seed. The
//! search hashes and clones whole node structs, so every node of a harness
//! has one type: [`Own`] is a built-in node or the user's, and [`harness`]
//! lays out a catalogue protocol's topology with the user's node in the
//! roles the factory picks. The same search, judge and shortest-path
//! reconstruction run; what stays out is what reads the built-in structs
//! (the refinement mapping) or replays in the simulator's built-ins (the
//! scenario and live emitters), since neither would run the user's code.

use super::bounds::Bounds;
use super::harness::Harness;
use super::topology::{Builtin, Options, Topology};
use crate::protocol::{Clocks, Effect, Input, Node, ProtocolKind, Role};

/// A node of a harness that checks the user's `T` beside built-in nodes.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub enum Own<T> {
    Builtin(Builtin),
    Mine(T),
}

impl<T: Node> Node for Own<T> {
    fn handle(&mut self, clocks: Clocks, input: Input<'_>, effects: &mut Vec<Effect>) {
        match self {
            Own::Builtin(n) => n.handle(clocks, input, effects),
            Own::Mine(n) => n.handle(clocks, input, effects),
        }
    }

    fn records_own_replies(&self) -> bool {
        match self {
            Own::Builtin(n) => n.records_own_replies(),
            Own::Mine(n) => n.records_own_replies(),
        }
    }
}

/// The harness for `kind`'s topology (its catalogue defaults) within
/// `bounds`, its nodes built by `factory` at boot and after each crash.
pub fn harness<T: Node + Clone + std::hash::Hash + Eq>(
    kind: ProtocolKind,
    bounds: Bounds,
    factory: fn(&Role) -> Own<T>,
) -> Result<Harness<Own<T>>, String> {
    Ok(Harness {
        topology: Topology::new(kind, Options::default(), bounds.workers, bounds.timing)?,
        factory,
        bounds,
    })
}
