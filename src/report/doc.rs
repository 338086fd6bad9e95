//! A report directory's content before it is rendered: the results plus
//! each scenario's timeline markup. Its own file, below the page and the
//! summary that render it ([`super::html`], [`super::markdown`]) and the
//! writer that decides what goes in ([`super::write`]), so none of them
//! imports another for it.

use super::results::Results;

/// A report's content: the results plus each scenario's timeline markup.
pub struct Doc {
    pub results: Results,
    /// Parallel to `results.scenarios`.
    pub svgs: Vec<Option<String>>,
}
