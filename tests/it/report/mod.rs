//! What `--report` and `replay` draw: committed reports, SVG, HTML in a
//! browser, timeline snapshots.

mod browser;
mod committed;
mod svg;
mod sweeps;
mod timeline_snapshot;
