//! What the benches share with the examples that profile them.

pub mod baseline;
