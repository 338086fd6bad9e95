//! The stateright models (`src/model/`): bundled expectations, the CLI,
//! Ctrl-C, and agreement with the simulator.

mod bundled;
mod cli;
mod etcd;
mod interrupt;
mod queue;
mod quorum;
mod scenarios;

use fencesim::model::state::State;
use fencesim::model::{load, Action, Event, LockModel, ModelSpec};

/// The bundled spec `models/NAME.toml`.
fn bundled_spec(name: &str) -> ModelSpec {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("models")
        .join(format!("{name}.toml"));
    load(&path).unwrap_or_else(|err| panic!("{err}"))
}

/// The bundled model `NAME` without symmetry: a path's clients are the
/// ones it names.
fn unsymmetric_model(name: &str) -> LockModel {
    let mut bounds = bundled_spec(name).bounds;
    bounds.symmetry = false;
    LockModel::new(bounds)
}

/// Steps `actions` from the initial state, returning each step's event
/// and the state the last one leaves.
fn walk(model: &LockModel, actions: &[Action]) -> (Vec<Event>, State) {
    let mut state = State::initial();
    let mut events = Vec::new();
    for &action in actions {
        let (next, event) = model
            .step(&state, action)
            .unwrap_or_else(|| panic!("{action:?} is enabled in {state:?}"));
        state = next;
        events.push(event);
    }
    (events, state)
}
