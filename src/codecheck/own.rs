//! A user's own node in the code-level search: the in-process validation
//! path (`fencesim::protocol::Node`, run by `suite::seed::run_with` under a
//! scenario's faults) checked exhaustively instead of seed by seed. The
//! search hashes and clones whole node structs, so every node of a harness
//! has one type: [`Own`] is a built-in node or the user's, and [`harness`]
//! lays out a catalogue protocol's topology with the user's node in the
//! roles the factory picks. The same search, judge and shortest-path
//! reconstruction run, and the refinement check when the user's node is
//! the resource and shows its row ([`StoreView`]); what stays out is a
//! user's coordinator in the refinement (the mapping reads the shipped
//! one's lease table) and the scenario and live emitters (their replays
//! run the built-in nodes, not the user's).

use super::abstraction::{Inspect, StoreView};
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

/// A user's store is refined as the resource it plays: the mapping reads
/// its row through [`StoreView`], the built-in nodes as they are.
impl<T: StoreView> Inspect for Own<T> {
    fn coordinator(&self) -> Option<&crate::protocol::coordinator::Coordinator> {
        match self {
            Own::Builtin(n) => n.coordinator(),
            Own::Mine(_) => None,
        }
    }
    fn resource(&self) -> Option<&crate::protocol::resource::Resource> {
        match self {
            Own::Builtin(n) => n.resource(),
            Own::Mine(_) => None,
        }
    }
    fn cache(&self) -> Option<&crate::protocol::cache_lease::CasCache> {
        match self {
            Own::Builtin(n) => n.cache(),
            Own::Mine(_) => None,
        }
    }
    fn lock_server(&self) -> Option<&crate::protocol::Server> {
        match self {
            Own::Builtin(n) => n.lock_server(),
            Own::Mine(_) => None,
        }
    }
    fn db(&self) -> Option<&crate::protocol::single_db::Db> {
        match self {
            Own::Builtin(n) => n.db(),
            Own::Mine(_) => None,
        }
    }
    fn store(&self) -> Option<&dyn StoreView> {
        match self {
            Own::Builtin(n) => n.store(),
            Own::Mine(t) => Some(t),
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
